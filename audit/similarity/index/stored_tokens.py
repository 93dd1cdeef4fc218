"""A stored reference as the pair code reads it: k-gram spans from stored offsets, no source text."""

from __future__ import annotations

from typing import Sequence

from mleaudit.audit.similarity.index.blobs import _Record
from mleaudit.audit.similarity.index.format import CorpusIndexError
from mleaudit.audit.similarity.tokenize import TokenizedFile, offsets_spans

def _line_skeleton(lines: Sequence[int], chars: int) -> str:
    """A text of ``chars`` spaces with a newline before each line start: offsets into it give
    the same lines and columns as offsets into the real text (which the index does not keep)."""
    skeleton = bytearray(b" " * chars)
    for start in lines[1:]:
        if 0 < start <= chars:
            skeleton[start - 1] = 10
    return skeleton.decode("ascii")


class _StoredTokens:
    """Stands in for a reference's :class:`TokenizedFile` in the pair code: it answers
    ``tokens_span`` for the k-gram bounds of stored fingerprints, from stored offsets."""

    __slots__ = ("path", "language", "_spans", "_start_at", "_end_at", "_token_starts", "_token_ends", "_lines",
                 "chars", "_text", "decoding")

    def __init__(self, path: str, record: _Record, kgram_length: int) -> None:
        self.path = path
        self.language = record.language
        self.decoding = record.decoding  # (encoding, note) of a file that was not plain UTF-8
        self._lines = record.lines
        self.chars: int | None = None  # the text's length, known once the detector profile is read
        self._text: str | None = None
        # offsets_span only needs the path and the line starts.
        self._spans = TokenizedFile.from_arrays(path=path, language=record.language, text="", line_offsets=record.lines)
        starts = record.kgram_starts.tolist()
        self._start_at = dict(zip(starts, record.span_starts.tolist()))
        self._end_at = dict(zip((s + kgram_length - 1 for s in starts), record.span_ends.tolist()))
        self._token_starts = record.token_starts
        self._token_ends = record.token_ends

    def tokens_span(self, first: int, last: int):
        """The span from the start of token ``first`` to the end of token ``last`` (k-gram bounds)."""
        if self._token_starts is not None:
            start = min(self._token_starts[first : last + 1])
            end = max(self._token_ends[first : last + 1])
        else:
            try:
                start, end = self._start_at[first], self._end_at[last]
            except KeyError as exc:
                raise CorpusIndexError(f"{self.path}: token {exc} is not a stored k-gram bound") from exc
        return self._spans.offsets_span(start, end)

    def tokens_spans(self, firsts: Sequence[int], lasts: Sequence[int]) -> list:
        """:meth:`tokens_span` of each ``(first, last)``, line numbers looked up at once."""
        if self._token_starts is not None:
            return [self.tokens_span(first, last) for first, last in zip(firsts, lasts)]
        try:
            starts = [self._start_at[first] for first in firsts]
            ends = [self._end_at[last] for last in lasts]
        except KeyError as exc:
            raise CorpusIndexError(f"{self.path}: token {exc} is not a stored k-gram bound") from exc
        return offsets_spans(self.path, self._lines, starts, ends)

    @property
    def text(self) -> str:
        """A stand-in for the text with its newlines where they are (:func:`_line_skeleton`), for
        spans made from character offsets (the detector's evidence fragments)."""
        if self._text is None:
            self._text = _line_skeleton(self._lines, self.chars if self.chars is not None else self._lines[-1])
        return self._text
