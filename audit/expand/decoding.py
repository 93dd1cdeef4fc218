"""How a code file's bytes become the text the expansion reads: the source encoding a Python file
declares (PEP 263), decoded as Python decodes it, and text too broken to audit (binary content)."""

from __future__ import annotations

import re

from mleaudit.audit.run import BINARY_INVALID_SHARE


# PEP 263: a comment in the first two lines naming the source encoding.
_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_UTF8_NAMES = frozenset({"utf-8", "utf8", "utf_8", "u8", "utf", "cp65001", "utf-8-sig", "utf_8_sig"})


def declared_source_encoding(data: bytes) -> str | None:
    """The source encoding a Python file declares (PEP 263), when it is not UTF-8."""
    for line in data.split(b"\n", 2)[:2]:
        m = _CODING.match(line)
        if m is not None:
            name = m.group(1).decode("ascii", errors="replace").lower()
            return None if name in _UTF8_NAMES else name
        if line.strip() and not line.lstrip().startswith(b"#"):
            return None  # the cookie must come before any code
    return None


def decode_as_declared(data: bytes, name: str) -> tuple[str | None, str]:
    """``data`` decoded as Python would decode it under the cookie ``name``, or why it cannot be."""
    import codecs

    try:
        info = codecs.lookup(name)
    except (LookupError, ValueError):
        return None, f"declares the unknown source encoding {name!r}: not read"
    if not getattr(info, "_is_text_encoding", True):
        return None, f"declares {name!r}, which is not a text encoding: not read"
    try:
        text = data.decode(info.name, errors="strict")
    except (UnicodeDecodeError, ValueError, TypeError) as exc:
        return None, f"not valid in its declared source encoding {name!r}: {exc}"[:300]
    return text.replace("\x00", "\ufffd"), ""


def is_binary_text(text: str) -> bool:
    """Whether decoded ``text`` is binary content rather than text to audit: a NUL character, or
    (64 characters and more) a share of U+FFFD above :data:`~mleaudit.audit.run.BINARY_INVALID_SHARE`."""
    if "\x00" in text:
        return True
    # Junk without NUL bytes decodes to mostly U+FFFD: not text worth auditing.
    return len(text) >= 64 and text.count("\ufffd") > BINARY_INVALID_SHARE * len(text)
