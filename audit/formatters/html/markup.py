"""Untrusted text made safe for the page: escaped, controls made visible; numbers; links allowed."""

from __future__ import annotations

import html
import re
from typing import Any

from mleaudit.audit.formatters.terminal import HIDDEN_FORMAT_CHARS

__all__ = ["SAFE_URL", "esc", "fmt_num"]

# Controls and the format characters that reorder or hide text (a right-to-left override).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f" + HIDDEN_FORMAT_CHARS + "]")
SAFE_URL = re.compile(r"^https://[A-Za-z0-9._~:/?#@!$&'()*+,;=%-]+$")


def esc(value: Any) -> str:
    """Escape untrusted text for HTML text or a quoted attribute; controls become visible."""
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(value))
    return html.escape(text, quote=True)


def fmt_num(value: Any, digits: int = 4) -> str:
    """A figure for a table cell: a float to ``digits`` places, ``–`` for none, else escaped text."""
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return esc(value)
