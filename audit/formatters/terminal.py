"""Text that is safe to print on a terminal: audited names and texts never drive the terminal.

Run files are named and written by the audited agent, so a file name, an excerpt or a grader
message may hold escape sequences (``\\x1b[2J`` clears the screen, ``\\x1b]8;;`` makes links),
bidirectional overrides (U+202E shows ``exe.txt`` as ``txt.exe``) or line breaks that forge
report lines. :func:`terminal_safe` shows every such character as a visible escape.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["terminal_safe", "HIDDEN_FORMAT_CHARS"]

#: Unicode format and separator characters that reorder, hide or break text (bidi embeddings,
#: overrides and isolates, zero-width joiners, U+2028/U+2029), as a regex character-class body.
HIDDEN_FORMAT_CHARS = "\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb"
# C0 controls, DEL, C1 controls and those format characters.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f" + HIDDEN_FORMAT_CHARS + "]")
_CONTROL_KEEP_LINES = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f" + HIDDEN_FORMAT_CHARS + "]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_safe(text: object, *, keep_newlines: bool = False) -> str:
    """``str(text)`` with every control, format and line-separator character shown as an escape.

    Parameters
    ----------
    text : object
        Anything; it is converted with ``str``.
    keep_newlines : bool
        Keep ``\\n`` and tab (multi-line excerpts printed line by line keep their layout);
        otherwise they are escaped too, so a name or message stays on one line.

    Returns
    -------
    str
        Printable text: ``"\\x1b"`` for ESC, ``"\\u202e"`` for a right-to-left override.
        Lone surrogates become U+FFFD, so the result always encodes as UTF-8.

    Examples
    --------
    >>> terminal_safe("a\\x1b[2Jb\\nc")
    'a\\\\x1b[2Jb\\\\x0ac'
    >>> terminal_safe("x\\ny", keep_newlines=True)
    'x\\ny'
    """
    value = str(text)
    value = "".join("\ufffd" if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in value) if _has_surrogate(value) else value
    pattern = _CONTROL_KEEP_LINES if keep_newlines else _CONTROL
    value = pattern.sub(_escape, value)
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in value if ord(ch) > 0x9F):
        value = "".join(f"\\u{ord(ch):04x}" if ord(ch) > 0x9F and unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")
                        else ch for ch in value)
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def _has_surrogate(value: str) -> bool:
    return _SURROGATE.search(value) is not None
