"""Character tokens: the tokenizer for text in a language without a grammar (Dolos's ``CharTokenizer``)."""

from __future__ import annotations

from mleaudit.audit.similarity.tokenize.tokenized_file import TokenizedFile, line_starts

__all__ = ["tokenize_chars"]


def tokenize_chars(text: str, path: str) -> TokenizedFile:
    """One token per character, line breaks left out (Dolos's ``CharTokenizer``).

    The fallback for text in a language without a grammar. Spans cover one character each.

    Examples
    --------
    >>> tokenize_chars("ab\\nc", "x.txt").tokens
    ('a', 'b', 'c')
    """
    tokens: list[str] = []
    starts: list[int] = []
    for offset, char in enumerate(text):
        if char != "\n":
            tokens.append(char)
            starts.append(offset)
    return TokenizedFile(
        path=path,
        language="chars",
        text=text,
        tokens=tuple(tokens),
        starts=tuple(starts),
        ends=tuple(s + 1 for s in starts),
        _lines=line_starts(text),
        _ordered=True,
    )
