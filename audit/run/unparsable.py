"""Text that tree-sitter's Python grammar cannot parse without an error, told from its first lines.

Telling whether a file whose name says nothing is Python (:mod:`mleaudit.audit.run.sniffing`)
parses it with tree-sitter, and a log of prose costs tree-sitter far more than code of the same
size (its error recovery tries many repairs). Most such logs give themselves away in their first
lines (``Enabled Tools in Prompt:[...]``, ``===== prompt =====``, ``<!doctype html>``,
``name: Nomad2018 Predicting``). :func:`surely_a_syntax_error` says so only when every
error-free parse is ruled out, so skipping the parse changes no answer:

- the text's first token cannot start with ``=``, ``<``, ``>``, ``,``, ``)``, ``]``, ``}``, ``:``,
  ``;``, ``|``, ``&``, ``^``, ``%``, ``/`` or ``!``: no expression or statement starts so;
- two names in a row (``Enabled Tools``), neither a keyword of the grammar nor a soft keyword
  (``print x``, ``match x:`` and ``type X = int`` are statements), are an error wherever they
  stand: no rule of the grammar puts a name right after a name, an attribute or a number;
- the lines are read token by token only as far as their tokens are read the same whatever
  follows (names, numbers, operators, brackets, comments, and strings closed on their line without
  a prefix or a backslash); at anything else the look ends without an answer, so that two names
  are never looked for inside a string or a comment.
"""

from __future__ import annotations

import functools
import keyword
import re

__all__ = ["surely_a_syntax_error"]

#: Lines looked at, and characters: past them no answer is given (the file is parsed).
_MAX_LINES = 400
_MAX_CHARS = 64 * 1024
#: First characters of tokens that no expression or statement starts with.
_NO_STATEMENT_START = frozenset("=<>,)]}:;|&^%/!")
#: Two names in a row: each a whole token (no name character, ``.`` or number before the first, no
#: name character or quote after the second: ``b'x'`` is a string).
_TWO_NAMES = re.compile(r"(?<![\w.])([A-Za-z_][A-Za-z0-9_]*)[ \t]+([A-Za-z_][A-Za-z0-9_]*)(?![\w'\"`])")
#: Characters outside strings and comments whose tokens do not depend on what follows.
_PLAIN = re.compile(r"[A-Za-z0-9_ \t.,:;=+\-*/%<>!&|^~@()\[\]{}]*")
_NAME_CHAR = re.compile(r"\w")


@functools.cache
def _keywords() -> frozenset[str]:
    """Python's keywords and soft keywords, and every word token of the tree-sitter grammar."""
    from mleaudit.audit.parsing import get_language

    language = get_language("python")
    words = {language.node_kind_for_id(i) for i in range(language.node_kind_count)
             if not language.node_kind_is_named(i)}
    words = {word for word in words if word and re.fullmatch(r"\w+", word)}
    return frozenset(words | set(keyword.kwlist) | set(keyword.softkwlist) | {"print", "exec"})


def _two_names(line: str, start: int, end: int) -> bool:
    """Whether two names that are no keywords stand in a row in ``line[start:end]`` (plain tokens)."""
    words = _keywords()
    pos = start
    while True:
        names = _TWO_NAMES.search(line, pos)
        if names is None or names.end() > end:
            return False
        if names.group(1) not in words and names.group(2) not in words:
            return True
        pos = names.start(2)


def _line_error(line: str) -> bool | None:
    """``True`` when ``line`` holds two names in a row, ``False`` when its tokens were all read and
    none do, ``None`` when a token of it is not read the same whatever follows."""
    pos, size = 0, len(line)
    while True:
        end = _PLAIN.match(line, pos).end()
        if end > pos and _two_names(line, pos, end):
            return True
        if end >= size:
            return False
        char = line[end]
        if char == "#":
            return False  # a comment, to the end of the line
        if char not in "'\"" or (end and _NAME_CHAR.match(line, end - 1)) or line.startswith(char * 3, end):
            return None  # a backslash, a backtick, a string prefix or three quotes, any other character
        close = line.find(char, end + 1)
        if close == -1 or "\\" in line[end + 1 : close]:
            return None
        pos = close + 1


def surely_a_syntax_error(text: str) -> bool:
    """Whether tree-sitter's Python grammar surely parses ``text`` with a syntax error.

    Parameters
    ----------
    text : str
        The text about to be parsed (lone carriage returns already read as line ends).

    Returns
    -------
    bool
        ``True`` only when no error-free parse exists (see the module docstring); ``False``
        when that cannot be told from the first lines: the text must then be parsed.

    Examples
    --------
    >>> surely_a_syntax_error("Enabled Tools in Prompt:['List Files']\\nStep 0:\\n")
    True
    >>> surely_a_syntax_error("\\n=== prompt ===\\n")
    True
    >>> surely_a_syntax_error("import os\\nprint(os.getcwd())\\n")
    False
    """
    first = text.lstrip(" \t\n")[:1]
    if first and first in _NO_STATEMENT_START:
        return True
    pos = 0
    for _ in range(_MAX_LINES):
        if pos >= len(text) or pos > _MAX_CHARS:
            return False
        end = text.find("\n", pos)
        end = len(text) if end == -1 else end
        found = _line_error(text[pos:end])
        if found is not None:
            if found:
                return True
        else:
            return False
        pos = end + 1
    return False
