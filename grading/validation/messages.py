"""How rejection messages quote column names, ids and rows (never answer values)."""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from mleaudit.grading.validation.keys import _KEY_SEPARATOR


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _quote_list(names: Sequence[str]) -> str:
    return ", ".join(repr(str(n)) for n in names)


def _plural(word: str, n: int) -> str:
    return word if n == 1 else word + "s"


#: Characters of an id quoted in a message; a longer id (a whole comment used as the id) is cut.
_SHOWN_ID_CHARS = 80


def _quote_id(text: str) -> str:
    """An id as messages quote it: ``repr``, cut after :data:`_SHOWN_ID_CHARS` characters."""
    if len(text) <= _SHOWN_ID_CHARS:
        return repr(text)
    return f"{text[:_SHOWN_ID_CHARS]!r}... ({len(text)} characters)"


def _show_key(key: str, n_parts: int) -> str:
    if n_parts == 1:
        return _quote_id(str(key))
    return "(" + ", ".join(_quote_id(part) for part in str(key).split(_KEY_SEPARATOR)) + ")"


def _id_name(ids: pd.Series | pd.DataFrame) -> str | None:
    """The (first) id column's name, for an error's ``column``."""
    if isinstance(ids, pd.DataFrame):
        return str(ids.columns[0]) if len(ids.columns) else None
    return None if ids.name is None else str(ids.name)


def _describe_row(row: int, ids: pd.Series | pd.DataFrame) -> str:
    if isinstance(ids, pd.DataFrame):
        parts = [_quote_id(str(ids[c].iloc[row])) for c in ids.columns]
        shown = parts[0] if len(parts) == 1 else "(" + ", ".join(parts) + ")"
    else:
        shown = _quote_id(str(ids.iloc[row]))
    return f"row {row + 1} (id {shown})"
