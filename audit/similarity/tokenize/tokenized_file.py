"""A code text as a token stream, each token tied to a region of the text: :class:`TokenizedFile`.

Offsets are characters of the decoded text; lines and columns are 1-based (see
:class:`mleaudit.audit.model.Span`).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from mleaudit.audit.model import Span
from mleaudit.audit.similarity.winnow.hashing import hash_token

__all__ = ["TokenizedFile", "line_starts", "offsets_spans"]


def line_starts(text: str) -> tuple[int, ...]:
    """Character offsets where each line of ``text`` starts (index 0 is line 1).

    Examples
    --------
    >>> line_starts("ab\\ncd\\n")
    (0, 3, 6)
    """
    starts = [0]
    find = text.find
    pos = find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = find("\n", pos + 1)
    return tuple(starts)


def offsets_spans(path: str, lines: Sequence[int], starts: Sequence[int], ends: Sequence[int]) -> list[Span]:
    """The :class:`Span` of each character range ``[starts[i], ends[i])`` of a text whose lines
    start at ``lines`` (:func:`line_starts`); equal to :meth:`TokenizedFile.offsets_span` of each,
    with the line numbers found by one ``numpy.searchsorted`` per side."""
    if not len(starts):
        return []
    line_array = np.asarray(lines, dtype=np.int64)
    start_array = np.asarray(starts, dtype=np.int64)
    end_array = np.asarray(ends, dtype=np.int64)
    start_lines = np.searchsorted(line_array, start_array, side="right")
    end_lines = np.searchsorted(line_array, end_array, side="right")
    start_cols = start_array - line_array[start_lines - 1] + 1
    end_cols = end_array - line_array[end_lines - 1] + 1
    return [
        Span(path=path, start_byte=start, end_byte=end, start_line=start_line, start_col=start_col,
             end_line=end_line, end_col=end_col)
        for start, end, start_line, start_col, end_line, end_col in zip(
            starts, ends, start_lines.tolist(), start_cols.tolist(), end_lines.tolist(), end_cols.tolist())
    ]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class TokenizedFile:
    """A code text as a token stream, each token tied to a region of the text.

    Attributes
    ----------
    path : str
        POSIX path of the unit the text came from.
    language : str
        Grammar name (``"python"``, ``"bash"``) or ``"chars"`` for :func:`tokenize_chars`.
    text : str
        The tokenized text.
    tokens : tuple of str
        The token stream.
    starts, ends : tuple of int
        Same length as ``tokens``: 0-based, half-open character offsets into ``text`` of the
        region each token stands for.
    has_error : bool
        True when the parser recovered from syntax errors (the tokens include ``ERROR`` nodes).

    Notes
    -----
    Tokenizers also record :func:`~mleaudit.audit.similarity.winnow.hash_token` of every token (an
    unsigned 32-bit array, private), which the fingerprint index uses instead of hashing the
    token strings again.
    """

    path: str
    language: str
    text: str
    tokens: tuple[str, ...]
    starts: tuple[int, ...]
    ends: tuple[int, ...]
    has_error: bool = False
    _lines: tuple[int, ...] = ()
    _ordered: bool = False
    _hashes: Any = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.tokens)

    def offsets_span(self, start: int, end: int) -> Span:
        """The :class:`Span` of the character range ``[start, end)`` of :attr:`text`."""
        lines = self._lines or line_starts(self.text)
        start_line = bisect_right(lines, start)
        end_line = bisect_right(lines, end)
        return Span(
            path=self.path,
            start_byte=start,
            end_byte=end,
            start_line=start_line,
            start_col=start - lines[start_line - 1] + 1,
            end_line=end_line,
            end_col=end - lines[end_line - 1] + 1,
        )

    def tokens_spans(self, firsts: Sequence[int], lasts: Sequence[int]) -> list[Span]:
        """:meth:`tokens_span` of each ``(first, last)``, line numbers looked up at once.

        Raises
        ------
        IndexError
            If a range is empty or outside the token stream.
        """
        n = len(self.tokens)
        if any(not 0 <= first <= last < n for first, last in zip(firsts, lasts)):
            raise IndexError(f"{self.path}: a token range outside 0..{n - 1}")
        if not self._ordered:
            return [self.tokens_span(first, last) for first, last in zip(firsts, lasts)]
        starts, ends = self.starts, self.ends
        return offsets_spans(self.path, self._lines or line_starts(self.text),
                             [starts[first] for first in firsts], [ends[last] for last in lasts])

    def token_span(self, index: int) -> Span:
        """The :class:`Span` of token ``index``."""
        return self.offsets_span(self.starts[index], self.ends[index])

    def tokens_span(self, first: int, last: int) -> Span:
        """The smallest :class:`Span` covering the regions of tokens ``first`` to ``last`` (inclusive).

        Raises
        ------
        IndexError
            If the range is empty or outside the token stream.
        """
        if not 0 <= first <= last < len(self.tokens):
            raise IndexError(f"{self.path}: token range [{first}, {last}] outside 0..{len(self.tokens) - 1}")
        if self._ordered:
            return self.offsets_span(self.starts[first], self.ends[last])
        return self.offsets_span(min(self.starts[first : last + 1]), max(self.ends[first : last + 1]))

    @property
    def spans(self) -> tuple[Span, ...]:
        """One :class:`Span` per token (built on demand: files have tens of thousands of tokens)."""
        return tuple(self.token_span(i) for i in range(len(self.tokens)))

    @property
    def line_offsets(self) -> tuple[int, ...]:
        """Character offsets where each line of :attr:`text` starts (:func:`line_starts`)."""
        return self._lines or line_starts(self.text)

    @property
    def ordered_regions(self) -> bool:
        """True when token regions never go backwards, so that the span of a token range runs
        from its first token's start to its last token's end."""
        if self._ordered or not self.tokens:
            return True
        return _non_decreasing(np.asarray(self.starts)) and _non_decreasing(np.asarray(self.ends))

    @property
    def token_hashes(self) -> np.ndarray:
        """:func:`~mleaudit.audit.similarity.winnow.hash_token` of every token, as an int64 array (the
        hashes the tokenizer recorded, else computed from :attr:`tokens`)."""
        hashes = self._hashes
        if hashes is not None and len(hashes) == len(self.tokens):
            return np.asarray(hashes, dtype=np.int64)
        return np.fromiter(map(hash_token, self.tokens), dtype=np.int64, count=len(self.tokens))

    @classmethod
    def from_arrays(
        cls,
        *,
        path: str,
        language: str,
        text: str,
        tokens: Sequence[str] = (),
        starts: Sequence[int] = (),
        ends: Sequence[int] = (),
        has_error: bool = False,
        line_offsets: Sequence[int] | None = None,
        token_hashes: np.ndarray | None = None,
    ) -> "TokenizedFile":
        """A :class:`TokenizedFile` from its parts (a stored token stream, a text-less stand-in).

        Parameters
        ----------
        path, language, text : str
            As the attributes. ``text`` may be ``""`` when only :meth:`offsets_span` is needed
            and ``line_offsets`` describes the original text.
        tokens : sequence of str
        starts, ends : sequence of int
            Character offsets of each token's region, as long as ``tokens``.
        has_error : bool
        line_offsets : sequence of int, optional
            Where each line of the original text starts (``line_starts(text)`` by default);
            must start with 0 and increase.
        token_hashes : ndarray, optional
            ``hash_token`` of each token, when already known.

        Returns
        -------
        TokenizedFile

        Raises
        ------
        ValueError
            If the lengths disagree or ``line_offsets`` does not start at 0 and increase.

        Examples
        --------
        >>> stand_in = TokenizedFile.from_arrays(path="k.py", language="python", text="", line_offsets=(0, 4))
        >>> stand_in.offsets_span(5, 7).start_line
        2
        """
        tokens, starts, ends = tuple(tokens), tuple(starts), tuple(ends)
        if not len(tokens) == len(starts) == len(ends):
            raise ValueError(f"{path}: {len(tokens)} tokens but {len(starts)} starts and {len(ends)} ends")
        if token_hashes is not None and len(token_hashes) != len(tokens):
            raise ValueError(f"{path}: {len(token_hashes)} token hashes for {len(tokens)} tokens")
        lines = tuple(int(x) for x in line_offsets) if line_offsets is not None else line_starts(text)
        if not lines or lines[0] != 0 or any(b <= a for a, b in zip(lines, lines[1:])):
            raise ValueError(f"{path}: line offsets must start at 0 and increase")
        ordered = not tokens or (_non_decreasing(np.asarray(starts)) and _non_decreasing(np.asarray(ends)))
        return cls(path=path, language=language, text=text, tokens=tokens, starts=starts, ends=ends,
                   has_error=has_error, _lines=lines, _ordered=ordered, _hashes=token_hashes)

def _non_decreasing(values: np.ndarray) -> bool:
    # Pre-order regions never go backwards in a well-formed tree, which lets a token range's
    # span be read off its first and last token; recovered trees are checked, not assumed.
    return bool(np.all(values[1:] >= values[:-1]))
