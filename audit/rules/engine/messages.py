"""Rule messages: :func:`render_message` fills a rule's ``{placeholder}`` template with a finding's values.

A missing value renders as ``{name}`` and a malformed template as itself: a message is never
an error. Long values are cut to :data:`MAX_TEMPLATE_VALUE_CHARS` characters.
"""

from __future__ import annotations

import logging
import string
from typing import Any, Mapping, Sequence

logger = logging.getLogger(__name__)

#: Captured text longer than this is cut (with "…") before it goes into a message.
MAX_TEMPLATE_VALUE_CHARS = 200


class _Missing:
    """Stands in for a placeholder a particular match does not provide (an ``any`` branch)."""

    def __format__(self, spec: str) -> str:
        return "?"


class _SafeFormatter(string.Formatter):
    def get_value(self, key: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        if isinstance(key, str):
            return kwargs.get(key, _Missing())
        return _Missing()

    def format_field(self, value: Any, format_spec: str) -> str:
        try:
            return super().format_field(value, format_spec)
        except (TypeError, ValueError):
            # A text capture under a numeric spec ("{x:.0%}"): show the text as is.
            return str(value)


_FORMATTER = _SafeFormatter()


def _template_text(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
    if len(text) > MAX_TEMPLATE_VALUE_CHARS:
        text = text[: MAX_TEMPLATE_VALUE_CHARS - 1] + "…"
    return text


def render_message(template: str, values: Mapping[str, Any]) -> str:
    """Fill a rule message with ``str.format`` semantics over named ``values``.

    Strings are cut to :data:`MAX_TEMPLATE_VALUE_CHARS` characters and newlines are escaped, so
    a message stays one line; placeholders without a value render as ``?`` and a format spec
    that does not fit the value falls back to the plain value, so a message never fails.

    Parameters
    ----------
    template : str
        The rule's ``message``.
    values : Mapping[str, Any]
        Captured texts, built-in values or pair report fields by name.

    Returns
    -------
    str

    Examples
    --------
    >>> render_message("{x} at {share:.0%}", {"x": "a\\nb", "share": 0.5})
    'a\\\\nb at 50%'
    >>> render_message("{missing}", {})
    '?'
    """
    cleaned = {k: _template_text(v) if isinstance(v, str) else v for k, v in values.items()}
    try:
        return _FORMATTER.vformat(template, (), cleaned)
    except (IndexError, KeyError, ValueError, AttributeError):
        logger.warning("cannot render message template %r; using it as is", template)
        return template
