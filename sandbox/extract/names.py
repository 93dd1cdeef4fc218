"""Names and messages from the agent's folders, shown as printable text whatever bytes they hold."""

from __future__ import annotations

_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def printable(raw: bytes | str) -> str:
    """Show a name or link target as printable text.

    Parameters
    ----------
    raw : bytes or str
        The name as the file system holds it (any bytes).

    Returns
    -------
    str
        The name with backslashes, control and other non-printable characters and bytes that
        are not UTF-8 escaped (``\\n``, ``\\xff``, ``\\u202e``).
    """
    text = raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else raw
    if text.isprintable() and "\\" not in text:
        return text
    out = []
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8
            out.append(f"\\x{code - 0xDC00:02x}")
        elif ch in _NAMED_ESCAPES:
            out.append(_NAMED_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return "".join(out)


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}...[{len(text) - limit} more characters]"


def strerror(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__
