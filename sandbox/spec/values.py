"""Values of a spec given as text: sizes (``4g``), durations (``2h``), and values quoted in messages."""

from __future__ import annotations

import math
import re
import reprlib

from mleaudit.sandbox.errors import SpecError

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$", re.IGNORECASE)
_DURATION_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}

_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxstring, _SHOWN.maxother = 3, 80, 80
_SHOWN.maxlist = _SHOWN.maxtuple = _SHOWN.maxdict = _SHOWN.maxset = 8


def show_value(value: object) -> str:
    """``repr(value)`` for a message, cut short for long or deeply nested values."""
    try:
        return _SHOWN.repr(value)
    except Exception:  # noqa: BLE001 - a value that cannot be shown is named by its type
        return f"<{type(value).__name__}>"


def parse_size(value: object, *, field_name: str = "size") -> int:
    """Bytes from an integer or a string such as ``"512m"``, ``"4g"``, ``"1.5GiB"``.

    Parameters
    ----------
    value : int or str
        A byte count, or a number with a binary unit (k, m, g, t; powers of 1024).
    field_name : str
        Named in the error message.

    Returns
    -------
    int
        The size in bytes (> 0).

    Raises
    ------
    SpecError
        If the value is not a positive size.

    Examples
    --------
    >>> parse_size("512m")
    536870912
    >>> parse_size(1024)
    1024
    """
    if isinstance(value, bool):
        raise SpecError(f"{field_name}: expected a size such as 512m or 4g, got {show_value(value)}")
    try:
        if isinstance(value, int):
            number = float(value)
        elif isinstance(value, str) and (match := _SIZE.match(value)):
            number = float(match.group(1)) * _SIZE_UNITS[match.group(2).lower()]
        else:
            raise SpecError(f"{field_name}: expected a size such as 512m or 4g, got {show_value(value)}")
    except OverflowError:
        number = math.inf
    if number <= 0 or not math.isfinite(number):
        raise SpecError(f"{field_name}: must be positive and finite, got {show_value(value)}")
    return int(number)


def parse_duration(value: object, *, field_name: str = "time_limit") -> float:
    """Seconds from a number or a string such as ``"90s"``, ``"30m"``, ``"2h"``.

    Raises
    ------
    SpecError
        If the value is not a positive duration.

    Examples
    --------
    >>> parse_duration("2h")
    7200.0
    >>> parse_duration(1.5)
    1.5
    """
    if isinstance(value, bool):
        raise SpecError(f"{field_name}: expected seconds or a duration such as 30m, got {show_value(value)}")
    try:
        if isinstance(value, (int, float)):
            seconds = float(value)
        elif isinstance(value, str) and (match := _DURATION.match(value)):
            seconds = float(match.group(1)) * _DURATION_UNITS[match.group(2).lower()]
        else:
            raise SpecError(f"{field_name}: expected seconds or a duration such as 30m, got {show_value(value)}")
    except OverflowError:
        seconds = math.inf
    if seconds <= 0 or not math.isfinite(seconds):
        raise SpecError(f"{field_name}: must be positive and finite, got {show_value(value)}")
    return seconds
