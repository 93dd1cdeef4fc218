"""Turn code into the token streams that the similarity engine fingerprints.

The tokens are Dolos's: a pre-order walk of the tree-sitter syntax tree that writes, for every
named node, ``"("``, the node's type, the tokens of its named children, and ``")"``. Identifiers,
literals and layout never reach the stream, only the shape of the tree, so renaming variables
or reformatting code leaves the tokens unchanged. Nodes whose type contains ``comment`` write no
tokens of their own (Dolos drops comments unless asked to keep them); their named children, if a
grammar had any, are still walked. Anonymous nodes (keywords, punctuation) are skipped.

Every token keeps the region of source it stands for, so a matching k-gram can be shown to a
reviewer:

- ``"("`` and the type token cover the node from its start up to the start of its first named
  child (the whole node when it has none), as Dolos's ``CodeTokenizer`` maps them;
- ``")"`` is an empty region at the node's end. Dolos maps it to the node's start, which makes a
  fragment that ends inside a long function stretch back to the ``def`` line; the end is where
  the closing token belongs, and the choice has no effect on any similarity figure.

Offsets are characters of the decoded text; lines and columns are 1-based (see
:class:`mleaudit.audit.model.Span`).

Code is parsed from UTF-16 text, as Dolos (on Node.js) parses it: tree-sitter's error recovery
weighs skipped input by its size in bytes, so the tree recovered from code with syntax errors
depends on the encoding (see :func:`tokenize_tree_utf16`). Valid code gets the same tree from
either encoding, so one parse serves both.

The recovered tree depends on the tree-sitter runtime too, not only on the grammar: the project
runs the 0.25 runtime, as Dolos 3.5.1 does (node ``tree-sitter`` 0.25). The 0.26 runtime recovers
differently from some IPython lines of notebook exports (``! mkdir train`` after ``%matplotlib
inline``, magics inside blocks or brackets, a lone ``%`` or ``!``), which costs or adds
fingerprints; ``tests/audit/similarity/test_ipython_parity.py`` holds Dolos's figures for magics
and shell escapes written every way.

The walk over the tree is the only per-node Python work: it records each named node's kind,
byte range and parent, and the order in which nodes open and close; the token stream, the
regions and the token hashes are then assembled with numpy. :func:`tokenize_hashes` walks
without the byte ranges, the parents or even a stack of open nodes (it records only which kind
opens and that a node closes) and returns the token hashes only, for pair figures that need
nothing else (``mleaudit similarity pairs``).

Routine Listings
----------------
tokenized_file
    :class:`TokenizedFile`, :func:`line_starts`, :func:`offsets_spans`: a token stream and its regions.
kinds
    ``_KindTable``: a grammar's node kinds as token strings and hashes.
chars
    :func:`tokenize_chars`: one token per character (text without a grammar).
trees
    :func:`tokenize_tree`, :func:`tokenize_tree_utf16`, :func:`tokenize_text`: Dolos's tokens of a
    syntax tree, and the entry point for a text in any language.
hashes
    :func:`tokenize_hashes`: the token hashes alone, straight from the tree.

Notes
-----
Every public name is re-exported here, so callers import from
``mleaudit.audit.similarity.tokenize``. Imports point down the listing above, plus
:mod:`mleaudit.audit.parsing` (grammars, parsers) and :mod:`mleaudit.audit.similarity.winnow`
(``hash_token``, the shared int pool). A language with a tree-sitter grammar is added to
:data:`mleaudit.audit.parsing.LANGUAGES` and needs nothing here. A tokenizer of another kind (as
``chars`` is) gets a module of its own beside ``chars``, a branch in :func:`tokenize_text` and
one in ``hashes._token_hash_array``, so that both give the same token hashes.

References
----------
Maertens, R. et al. (2022). Dolos: Language-agnostic plagiarism detection in source code.
*Journal of Computer Assisted Learning*, 38(4), 1046-1061. Dolos 3.5.1,
``lib/src/lib/tokenizer/codeTokenizer.ts``.
"""

from __future__ import annotations

from mleaudit.audit.similarity.tokenize.chars import tokenize_chars
from mleaudit.audit.similarity.tokenize.hashes import tokenize_hashes
from mleaudit.audit.similarity.tokenize.tokenized_file import TokenizedFile, line_starts, offsets_spans
from mleaudit.audit.similarity.tokenize.trees import tokenize_text, tokenize_tree, tokenize_tree_utf16

__all__ = [
    "TokenizedFile",
    "line_starts",
    "offsets_spans",
    "tokenize_chars",
    "tokenize_hashes",
    "tokenize_text",
    "tokenize_tree",
    "tokenize_tree_utf16",
]

# Examples of the functions re-exported here run with this module's (``doctest.testmod``).
__test__ = {name: globals()[name] for name in ("TokenizedFile", "line_starts", "tokenize_chars", "tokenize_hashes",
                                               "tokenize_tree")}
