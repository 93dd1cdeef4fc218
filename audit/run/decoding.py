"""Decoding a run file's bytes into text, in whatever encoding they are: :func:`decode_text`.

UTF-8 first (byte-order marks honoured, UTF-16 without one recognised by its NUL pattern), then
the encoding charset-normalizer detects when it gives coherent, printable text; otherwise invalid
bytes are replaced with U+FFFD and counted. :func:`printable_share` tells text from binary data.
"""

from __future__ import annotations

import logging
import re

logger = logging.getLogger(__name__)


#: Share of undecodable bytes above which a file counts as binary rather than mis-encoded text.
BINARY_INVALID_SHARE = 0.10
_UTF8_REPLACEMENT = "\ufffd".encode("utf-8")
#: Share of characters that must be printable (or whitespace) for bytes that are not UTF-8 to be
#: taken as text in a detected encoding: binary data decodes in some 8-bit code page too, but
#: leaves control characters all over it.
MIN_PRINTABLE_SHARE = 0.97
#: Bytes looked at to detect an encoding (the whole text is then decoded in it).
_DETECT_SAMPLE = 512 * 1024
#: Detected encodings above this mess ratio (charset-normalizer's ``chaos``) are refused.
_MAX_CHAOS = 0.15
#: Among detected encodings that decode the text equally well, the one used: the code pages
#: text files are most often written in, supersets first (cp1252 over latin-1, gb18030 over
#: gbk and gb2312, cp932 over shift_jis).
_PREFERRED_ENCODINGS = (
    "cp1252", "gb18030", "cp932", "shift_jis", "euc_jp", "cp949", "euc_kr", "big5", "cp950", "cp1251",
    "koi8_r", "cp1250", "cp1253", "cp1254", "cp1255", "cp1256", "cp1257", "cp1258", "cp874", "iso8859_15",
    "latin_1",
)  # fmt: skip
_WHITESPACE_CONTROLS = frozenset("\t\n\r\f\v")
#: ASCII characters that are neither printable nor whitespace (what :func:`printable_share` counts).
_ASCII_UNPRINTABLE = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_DROP_WHITESPACE_CONTROLS = dict.fromkeys(map(ord, _WHITESPACE_CONTROLS))


def printable_share(text: str) -> float:
    """The share of ``text``'s characters that are printable or whitespace, in [0, 1].

    Examples
    --------
    >>> printable_share("abc\\n")
    1.0
    >>> printable_share("a\\x00\\x01b")
    0.5
    """
    if not text:
        return 1.0
    if text.isascii():
        return 1.0 - sum(1 for _ in _ASCII_UNPRINTABLE.finditer(text)) / len(text)
    if text.translate(_DROP_WHITESPACE_CONTROLS).isprintable():
        return 1.0
    bad = sum(1 for ch in text if not ch.isprintable() and ch not in _WHITESPACE_CONTROLS)
    return 1.0 - bad / len(text)


def _utf16_without_bom(data: bytes) -> str | None:
    """``"utf-16-le"``/``"utf-16-be"`` when ``data`` looks like UTF-16 text without a byte-order
    mark (NUL in every other byte, as ASCII-range text gives), else ``None``.

    The whole of ``data`` is looked at, and its first two bytes must fit the pattern too: a file
    that starts as ASCII (a shebang, a comment) is read by its interpreter as bytes, whatever
    NUL-padded bytes follow."""
    if len(data) < 8:
        return None
    sample = data[: len(data) // 2 * 2]
    even, odd = sample[0::2], sample[1::2]
    half = len(sample) // 2
    if odd.count(0) >= 0.9 * half and even.count(0) <= 0.1 * half and data[0] != 0 and data[1] == 0:
        return "utf-16-le"
    if even.count(0) >= 0.9 * half and odd.count(0) <= 0.1 * half and data[0] == 0 and data[1] != 0:
        return "utf-16-be"
    return None


def _mostly_utf8(text: str, invalid: int) -> bool:
    """Whether bytes that fail as UTF-8 are still UTF-8 text with a few damaged bytes: more
    characters of ``text`` (the bytes decoded as UTF-8 with replacement) are valid multi-byte
    UTF-8 than bytes fail; a text in a legacy code page has next to no valid multi-byte
    sequences."""
    valid = sum(1 for ch in text if ch > "\x7f" and ch != "\ufffd")
    return valid > invalid


#: Added to the mess ratio of a code page outside :data:`_PREFERRED_ENCODINGS`: a rare code page
#: (johab, cp1006, mac_roman) decodes many texts with no visible mess, but is seldom the one used.
_RARE_ENCODING_PENALTY = 0.2
#: Half-width katakana (U+FF61 to U+FF9F) are the classic sign of text read in the wrong Japanese
#: code page: their share of the non-ASCII characters, times this, is added to the mess ratio.
_HALFWIDTH_KANA_PENALTY = 0.5
#: Mess ratios closer than this to the least one are equal (finer differences are noise).
_MESS_STEP = 0.01
#: Equal mess ratios are told apart by charset-normalizer's language fit (``coherence``, in [0, 1],
#: 0 when no language is recognised) in steps of this size: finer differences are noise.
_COHERENCE_STEP = 0.1


def _encoding_score(match) -> tuple[float, int, str]:
    """How unlikely a charset-normalizer match is (mess, lower is likelier), how well it fits a
    language (in steps of :data:`_COHERENCE_STEP`, higher is likelier) and the name to use for it."""
    names = (match.encoding, *match.could_be_from_charset)
    preferred = [name for name in names if name in _PREFERRED_ENCODINGS]
    name = min(preferred, key=_PREFERRED_ENCODINGS.index) if preferred else match.encoding
    score = match.chaos + (0.0 if preferred else _RARE_ENCODING_PENALTY)
    text = str(match)
    wide = [ch for ch in text if ch > "\x7f"]
    if wide:
        kana = sum(1 for ch in wide if "\uff61" <= ch <= "\uff9f")
        score += _HALFWIDTH_KANA_PENALTY * kana / len(wide)
    return score, int(match.coherence / _COHERENCE_STEP), name


def _detect_encoding(data: bytes) -> str | None:
    """The encoding of text that is not UTF-8, by charset-normalizer, or ``None`` when no
    encoding decodes it coherently (binary data, or too little text to tell).

    Among the encodings charset-normalizer accepts, the one with the least mess wins, a rare code
    page and half-width katakana counting as mess (:func:`_encoding_score`); ties (within
    :data:`_MESS_STEP`) go to the
    clearly better language fit, then to the code page text files are most often written in
    (:data:`_PREFERRED_ENCODINGS`). When only
    rare code pages fit, the common ones are tried on their own too.
    """
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    sample = data[:_DETECT_SAMPLE]
    cut = sample.rfind(b"\n")
    if len(data) > _DETECT_SAMPLE and cut > 0:
        sample = sample[: cut + 1]
    has_nul = b"\x00" in sample

    def candidates(**options) -> list[tuple[float, int, str]]:
        try:
            matches = [m for m in from_bytes(sample, **options) if m.chaos <= _MAX_CHAOS]
        except Exception:  # noqa: BLE001 - a detector failure must not stop the audit
            logger.info("encoding detection failed", exc_info=True)
            return []
        return [_encoding_score(m) for m in matches if has_nul or not m.encoding.startswith(("utf_16", "utf_32"))]

    def rank(item: tuple[float, int, str]) -> tuple[float, int, int]:
        score, fit, name = item
        order = _PREFERRED_ENCODINGS.index(name) if name in _PREFERRED_ENCODINGS else len(_PREFERRED_ENCODINGS)
        return round(score, 6), -fit, order

    found = candidates()
    if not found or min(found, key=rank)[0] >= _RARE_ENCODING_PENALTY:
        # Only rare code pages or mojibake fit: the common ones are tried on their own (the
        # detector's first pass does not always try them all, e.g. koi8_r).
        found += candidates(cp_isolation=list(_PREFERRED_ENCODINGS))
    if not found:
        return None
    # Mess ratios within a step of the least are a tie (French in cp1257 reads 0.004, in cp1252
    # 0.006): the language fit, then the common code page decides.
    least = min(score for score, _, _ in found)
    tied = [item for item in found if item[0] <= least + _MESS_STEP]
    return min(tied, key=lambda item: rank(item)[1:])[2]


def decode_text(data: bytes, *, code: bool = False) -> tuple[str, str | None]:
    """Decode a run file's bytes, in whatever text encoding they are, saying how.

    Parameters
    ----------
    data : bytes
        The file's bytes (untrusted).
    code : bool
        The file is code: it is decoded as its interpreter reads it, never as UTF-16 or UTF-32
        without a byte-order mark (NUL bytes then stay, and make it binary content).

    Returns
    -------
    (str, str or None)
        The text and a note, ``None`` for clean UTF-8. A UTF-8 byte-order mark is dropped; a
        UTF-16 one selects UTF-16 (note ``"UTF-16 text"``), as does a NUL in every other
        byte. Bytes that are not UTF-8 are decoded in the encoding charset-normalizer detects
        (note ``"decoded as gb18030 (detected)"``) when that gives coherent text of which at
        least :data:`MIN_PRINTABLE_SHARE` is printable; otherwise (binary data, UTF-8 with a
        few damaged bytes, too little text to tell) invalid bytes become U+FFFD and the note
        counts them and gives the first one's byte offset.

    Examples
    --------
    >>> decode_text(b"ok")
    ('ok', None)
    >>> decode_text("caf\\u00e9 au lait, cr\\u00e8me br\\u00fbl\\u00e9e".encode("cp1252"))
    ('café au lait, crème brûlée', 'not valid UTF-8: decoded as cp1252 (detected)')
    >>> decode_text(b"\\x00\\x01\\xff\\xfe\\xfd")[1]
    'not valid UTF-8: 3 byte(s) replaced with U+FFFD, the first at byte 2'
    """
    if data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return data.decode("utf-32", errors="replace"), "UTF-32 text (decoded as such)"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace"), "UTF-16 text (decoded as such)"
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    # ASCII-range UTF-16 is valid UTF-8 too (NUL is a character): its pattern is looked for first.
    wide = None if code or b"\x00" not in data else _utf16_without_bom(data)
    if wide is not None:
        text = data.decode(wide, errors="replace")
        if printable_share(text) >= MIN_PRINTABLE_SHARE:
            return text, f"UTF-16 text without a byte-order mark (decoded as {wide})"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        first = exc.start
    text = data.decode("utf-8", errors="replace")
    invalid = text.count("\ufffd") - data.count(_UTF8_REPLACEMENT)
    if b"\x00" not in data and not _mostly_utf8(text, invalid):
        encoding = _detect_encoding(data)
        if encoding is not None:
            decoded = data.decode(encoding, errors="replace")
            replaced = decoded.count("\ufffd")
            if replaced <= len(decoded) // 1000 and printable_share(decoded) >= MIN_PRINTABLE_SHARE:
                note = f"not valid UTF-8: decoded as {encoding} (detected)"
                if replaced:
                    note += f", {replaced} byte sequence(s) not valid in it replaced with U+FFFD"
                return decoded, note
    return text, f"not valid UTF-8: {invalid} byte(s) replaced with U+FFFD, the first at byte {first}"
