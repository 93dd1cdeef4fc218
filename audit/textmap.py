"""Text assembled from pieces of a host file, with every character's place in that file.

Readers of JSON files (notebook outputs, tool-call arguments) audit the *decoded* strings, whose
characters do not sit at the same offsets as in the file: ``\\n`` is two characters in the file
and one in the text, a list of lines (nbformat's ``["a\\n", "b\\n"]``) has quotes and commas
between its pieces, and ANSI colour codes are removed. :class:`TextMap` keeps, for an assembled
text, a sorted list of breakpoints ``(text offset, file offset)``; between two breakpoints the
characters are verbatim, so any offset of the text maps to its file offset in ``O(log n)``.
Spans built from it cover the right region of the file, with exact lines, even though the text
differs from the file's bytes there (evidence then shows the whole region).

Nothing here parses untrusted input beyond what the caller located: :meth:`TextMap.add_literal`
only reads the escapes of a JSON string literal the JSON decoder already accepted.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right

__all__ = ["TextMap", "ANSI_ESCAPE"]

# A surrogate pair spelled as two escapes decodes to one character; any other escape to one.
_JSON_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\.", re.DOTALL
)

#: Terminal control sequences (colours, cursor moves, hyperlinks) that programs print: CSI
#: (``ESC [ ... final``), OSC (``ESC ] ... BEL`` or ``ESC \\``) and two-character escapes.
ANSI_ESCAPE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]"
)


class TextMap:
    """A text built piece by piece, mapping each offset of it to an offset of the host text.

    Pieces are added in host order (offsets never go back). Fillers (separators the reader
    adds, such as a newline between two outputs) map to the end of the piece before them.

    Examples
    --------
    >>> host = '{"text": ["a\\\\n", "b"]}'
    >>> m = TextMap()
    >>> m.add_literal(host, 11, 14, "a\\n") and m.add_literal(host, 18, 19, "b")
    True
    >>> m.text, m.host_offset(2), m.host_end(2), m.host_offset(3)
    ('a\\nb', 18, 14, 19)
    """

    __slots__ = ("_parts", "_text", "_v", "_r", "length", "_raw_end")

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._text: str | None = ""
        self._v = array("q")
        self._r = array("q")
        self.length = 0
        self._raw_end = 0

    @property
    def text(self) -> str:
        """The assembled text."""
        if self._text is None:
            self._text = "".join(self._parts)
            self._parts = [self._text]
        return self._text

    def _point(self, virtual: int, raw: int) -> None:
        """Add a breakpoint. Two may share a text offset: the end of one piece, then the start
        of the next (:meth:`host_end` takes the first, :meth:`host_offset` the last)."""
        if self._v and self._v[-1] == virtual and self._r[-1] == raw:
            return
        if len(self._v) >= 2 and self._v[-1] == virtual and self._v[-2] == virtual:
            self._r[-1] = raw  # keep at most the end of one piece and the start of the next
            return
        self._v.append(virtual)
        self._r.append(raw)

    def _append(self, piece: str) -> None:
        if piece:
            self._parts.append(piece)
            self._text = None
            self.length += len(piece)

    def add_verbatim(self, piece: str, raw_start: int) -> None:
        """Add ``piece``, which is the host's text from ``raw_start`` on, character for character."""
        raw_start = max(raw_start, self._raw_end)
        self._point(self.length, raw_start)
        self._append(piece)
        self._raw_end = raw_start + len(piece)
        self._point(self.length, self._raw_end)

    def add_filler(self, piece: str) -> None:
        """Add characters that have no place in the host (they map to the end of the last piece)."""
        if not piece:
            return
        self._point(self.length, self._raw_end)
        self._append(piece)
        self._point(self.length, self._raw_end)

    def add_literal(self, host: str, start: int, end: int, decoded: str) -> bool:
        """Add the decoded value of the JSON string whose content (inside the quotes) is ``host[start:end]``.

        Parameters
        ----------
        host : str
            The host text.
        start, end : int
            The literal's content, quotes excluded.
        decoded : str
            The string the JSON decoder gave for it.

        Returns
        -------
        bool
            ``True`` when the escapes account for the decoded length (the map is exact);
            ``False`` when they do not, in which case ``decoded`` is added with its first
            character at ``start`` and the rest mapped proportionally to no place in particular
            (offsets are clamped to ``end``).
        """
        base = self.length
        self._point(base, start)
        pos, done = start, 0
        for match in _JSON_ESCAPE.finditer(host, start, end):
            done += match.start() - pos + 1
            pos = match.end()
            self._point(base + done, pos)
        done += end - pos
        self._append(decoded)
        exact = done == len(decoded)
        if not exact:
            # Keep offsets monotonic and inside the literal whatever the escapes said.
            while self._v and self._v[-1] > base:
                self._v.pop()
                self._r.pop()
        self._point(base + len(decoded), end)
        self._raw_end = end
        return exact

    def add_map(self, other: "TextMap", start: int = 0, end: int | None = None) -> None:
        """Add ``other.text[start:end]`` with the host offsets ``other`` gives it."""
        end = other.length if end is None else min(end, other.length)
        if end <= start:
            return
        base = self.length - start
        self._point(self.length, other.host_offset(start))
        k = bisect_right(other._v, start)
        v, r = other._v, other._r
        while k < len(v) and v[k] < end:
            self._point(base + v[k], r[k])
            k += 1
        self._append(other.text[start:end])
        self._raw_end = max(self._raw_end, other.host_end(end))
        self._point(self.length, other.host_end(end))

    def host_offset(self, offset: int) -> int:
        """The host offset of ``offset`` in the text (an end offset maps to the end of its piece)."""
        v, r = self._v, self._r
        if not v:
            return self._raw_end
        k = bisect_right(v, offset) - 1
        if k < 0:
            return r[0]
        raw = r[k] + (offset - v[k])
        if k + 1 < len(r):
            raw = min(raw, r[k + 1])
        return raw

    def host_end(self, offset: int) -> int:
        """The host offset where the text's ``[..., offset)`` ends (the end of the piece
        ``offset`` closes, not the start of the next one)."""
        v, r = self._v, self._r
        if not v:
            return self._raw_end
        k = bisect_left(v, offset)
        if k < len(v) and v[k] == offset:
            return r[k]
        return self.host_offset(offset)

    def host_range(self, start: int, end: int) -> tuple[int, int]:
        """Host offsets of the text's ``[start, end)``, never inverted."""
        lo = self.host_offset(start)
        hi = self.host_end(end) if end > start else lo
        return lo, max(lo, hi)

    def cleaned(self, *, ansi: bool = True, carriage_returns: bool = True) -> "TextMap":
        """A copy without terminal escapes and with lone carriage returns as newlines.

        A terminal shows neither the escapes nor what a carriage return overwrote as separate
        text; rules read the text a person would. Removing escapes keeps the map exact; a lone
        CR becomes ``\\n`` one for one.
        """
        text = self.text
        if ansi and ("\x1b" in text or "\x9b" in text):
            out = TextMap()
            pos = 0
            for match in ANSI_ESCAPE.finditer(text):
                out.add_map(self, pos, match.start())
                pos = match.end()
            out.add_map(self, pos, self.length)
            if not out._v:
                out._raw_end = self.host_offset(self.length)
        else:
            out = self
        if carriage_returns and "\r" in out.text:
            fixed = re.sub(r"\r(?!\n)", "\n", out.text)
            if fixed != out.text:
                if out is self:
                    out = self.copy()
                out._parts = [fixed]
                out._text = fixed
        return out

    def copy(self) -> "TextMap":
        """An independent copy."""
        twin = TextMap()
        twin._parts = [self.text]
        twin._text = self.text
        twin._v = array("q", self._v)
        twin._r = array("q", self._r)
        twin.length = self.length
        twin._raw_end = self._raw_end
        return twin
