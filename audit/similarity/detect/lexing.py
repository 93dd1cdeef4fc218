"""Lexing code into the detector's tokens: identifiers as ``ID``, literal values kept, comments
and IPython lines dropped, one line at a time; token ids and their prior bits."""

from __future__ import annotations

import hashlib
import keyword
import math
import re
from dataclasses import dataclass

import numpy as np

_KEYWORDS = frozenset(keyword.kwlist) | {"print"}  # Python 2 notebooks use print statements
_LEXEME = re.compile(
    r"""
     (?P<str>[rRbBuUfF]{0,2}(?:'''|\"\"\"|'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"))
    |(?P<num>(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][-+]?\d+)?[jJ]?)
    |(?P<name>[^\W\d]\w*)
    |(?P<comment>\#.*)
    |(?P<op>\*\*=?|//=?|>>=?|<<=?|->|:=|[-+*/%&|^@=!<>]=|[()\[\]{}.,:;@=+\-*/%&|^~<>])
    |(?P<space>\s+|\\)
    |(?P<other>.)
    """,
    re.VERBOSE,
)


_FIELD = re.compile(r"\{[^{}]*\}")
#: A string literal's content that reads as a name (a column of the data, a dict key): at most
#: 40 letters, digits and ``_``, with at least one letter (``'2ndFlrSF'`` is a column, ``'2020'`` not).
_NAME_LITERAL = re.compile(r"(?=[0-9_]*[A-Za-z])[A-Za-z0-9_]{1,40}")


@dataclass(frozen=True, slots=True, kw_only=True)
class LexedCode:
    """A code text as the detector's lexical tokens.

    Attributes
    ----------
    tokens : tuple of str
        ``ID`` for identifiers; keywords and operators as written; ``S<text>`` for a string
        literal's content; numbers as written; ``\"\"\"`` for a triple-quote delimiter.
    starts, ends : tuple of int
        Character offsets ``[start, end)`` of each token in the text (same length as ``tokens``).
    """

    tokens: tuple[str, ...]
    starts: tuple[int, ...]
    ends: tuple[int, ...]


def _literal(text: str) -> str:
    body = text.lstrip("rRbBuUfF")
    prefix = text[: len(text) - len(body)].lower()
    if body in ("'''", '"""'):
        return '"""'
    content = body[1:-1]
    if "f" in prefix:
        # Names inside f-string fields are identifiers: renaming must not change the token.
        content = _FIELD.sub("{}", content)
    return "S" + content


def lex_code(text: str) -> LexedCode:
    """Lex Python code line by line into the detector's tokens.

    Parameters
    ----------
    text : str
        Python source, or the joined code cells of a notebook. Never executed.

    Returns
    -------
    LexedCode
        Tokens with their character offsets. Lines whose first non-blank character is ``%`` or
        ``!`` (IPython magics and shell escapes) and comments yield no token.

    Examples
    --------
    >>> lex_code("total = f(x, 'a.csv')  # note\\n%time g()\\n").tokens
    ('ID', '=', 'ID', '(', 'ID', ',', 'Sa.csv', ')')
    >>> lex_code('print(f"acc {value:.2f}")').tokens == lex_code("print(f'acc {score:.2f}')").tokens
    True
    """
    tokens: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    offset = 0
    for line in text.split("\n"):
        stripped = line.lstrip()
        if stripped[:1] not in ("%", "!"):
            for match in _LEXEME.finditer(line):
                kind = match.lastgroup
                if kind in ("space", "comment"):
                    continue
                value = match.group()
                if kind == "str":
                    value = _literal(value)
                elif kind == "name" and value not in _KEYWORDS:
                    value = "ID"
                tokens.append(value)
                starts.append(offset + match.start())
                ends.append(offset + match.end())
        offset += len(line) + 1
    return LexedCode(tokens=tuple(tokens), starts=tuple(starts), ends=tuple(ends))


_TOKEN_IDS: dict[str, int] = {}


def _token_id(token: str) -> int:
    # A stable id (not Python's salted str hash), so profiles mean the same in every process.
    value = _TOKEN_IDS.get(token)
    if value is None:
        digest = hashlib.blake2b(token.encode("utf-8", errors="surrogatepass"), digest_size=8).digest()
        value = int.from_bytes(digest, "big") >> 1
        if len(_TOKEN_IDS) < 1_000_000:
            _TOKEN_IDS[token] = value
    return value


_COMMA_ID = np.uint64(_token_id(","))


#: Keywords, operators and punctuation the lexer keeps, plus ``ID`` and the triple quote: the
#: closed part of its vocabulary.
_CLOSED_VOCABULARY = len(_KEYWORDS) + 45 + 2
#: Prior bits of a token of the closed vocabulary: uniform over it (about 6.4 bits).
_CLOSED_BITS = math.log2(_CLOSED_VOCABULARY)


def _prior_bits(token: str) -> float:
    """Bits charged to a token the background has never seen: literals by length (about 2 bits
    per character of a string, 3.3 per digit, plus 4), anything else uniform over the closed
    vocabulary (so syntax alone never looks rare, even with no background at all)."""
    if token.startswith("S"):
        return 4.0 + 2.0 * (len(token) - 1)
    if token[:1].isdigit() or (token[:1] == "." and len(token) > 1):
        return 4.0 + 3.3 * len(token)
    return _CLOSED_BITS
