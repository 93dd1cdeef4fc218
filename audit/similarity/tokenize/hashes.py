"""Token hashes straight from the syntax tree, for pair figures that need nothing else.

:func:`tokenize_hashes` walks without the byte ranges, the parents or even a stack of open nodes
(it records only which kind opens and that a node closes) and returns the token hashes only
(``mleaudit similarity pairs``, the all-pairs figures).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tree_sitter

from mleaudit.audit.parsing import LANGUAGES, get_parser, parser_safe
from mleaudit.audit.similarity.tokenize.kinds import _CLOSE_CODE, _OPEN_CODE, _kind_table, _KindTable
from mleaudit.audit.similarity.winnow.hashing import hash_token

__all__ = ["tokenize_hashes"]


def _walk_kinds(root: tree_sitter.Node) -> list[int]:
    """The walk of :func:`_walk` reduced to what hashing the tokens needs (:func:`tokenize_hashes`):
    per event, the node's kind id when a named node opens and ``-1`` when one closes (kind ids
    are non-negative). No regions, no parents and no stack of open nodes: which node a ``-1``
    closes is worked out afterwards, where it matters (:func:`_stream_hashes`)."""
    events: list[int] = []
    add = events.append
    cursor = root.walk()
    first_child, next_sibling, up = cursor.goto_first_child, cursor.goto_next_sibling, cursor.goto_parent
    while True:
        node = cursor.node
        if node.is_named:
            add(node.kind_id)
            if first_child():
                continue
            add(-1)
        # only named nodes are descended into, so every step up closes a named node
        while not next_sibling():
            if not up():
                return events
            add(-1)


def _closing_events(event: np.ndarray, opening: np.ndarray) -> np.ndarray:
    """Indices of the ``-1`` events that close the nodes opened at indices ``opening``.

    A leaf closes at the very next event, which settles comments (leaves in every grammar
    used so far); otherwise the events are grouped by nesting depth, where each opening is
    followed by its own closing."""
    after = opening + 1
    if (event[after] < 0).all():
        return after
    opens = event >= 0
    after_event = np.cumsum(np.where(opens, 1, -1))
    depth = np.where(opens, after_event, after_event + 1)  # an opening's depth, or the depth it closes
    by_depth = np.argsort(depth, kind="stable")
    rank = np.empty(len(event), dtype=np.int64)
    rank[by_depth] = np.arange(len(event))
    return by_depth[rank[opening] + 1]


def tokenize_hashes(text: str, language: str) -> np.ndarray:
    """:func:`~mleaudit.audit.similarity.winnow.hash_token` of every token :func:`tokenize_text` yields.

    The same parse and the same token stream, without the token strings and regions: the
    input of fingerprinting when only pair figures are wanted (all-pairs comparisons), at
    about half the cost of :func:`tokenize_text`.

    Parameters
    ----------
    text : str
        Source code (untrusted: parsed, never run).
    language : str
        A grammar name from :data:`mleaudit.audit.parsing.LANGUAGES`, or ``"chars"``.

    Returns
    -------
    numpy.ndarray
        One unsigned 32-bit hash per token, in stream order (values below ``HASH_MOD``).

    Raises
    ------
    KeyError
        If ``language`` is neither a known grammar nor ``"chars"``.

    Examples
    --------
    >>> import numpy as np
    >>> from mleaudit.audit.similarity.tokenize import tokenize_text
    >>> text = "x = [i for i in range(3)]\\n"
    >>> bool(np.array_equal(tokenize_hashes(text, "python"), tokenize_text(text, "python", "a.py")._hashes))
    True
    """
    return _token_hash_array(text, language, np.uint32)


def _token_hash_array(text: str, language: str, dtype: Any = np.int64) -> np.ndarray:
    """:func:`tokenize_hashes` as ``dtype`` (int64 by default: the dtype of the k-gram arithmetic)."""
    if language == "chars":
        return np.fromiter(map(hash_token, text.replace("\n", "")), dtype=dtype)
    if language not in LANGUAGES:
        raise KeyError(f"unknown language {language!r}; known: chars, {', '.join(sorted(LANGUAGES))}")
    # UTF-16, as tokenize_text parses (the tree Dolos gets, also for broken code)
    tree = get_parser(language).parse(parser_safe(text, language).encode("utf-16-le", errors="surrogatepass"),
                                      encoding="utf16le")
    hashes = _stream_hashes(_walk_kinds(tree.root_node), _kind_table(language))
    return hashes if dtype == np.int64 else hashes.astype(dtype)


def _stream_hashes(events: list[int], table: _KindTable) -> np.ndarray:
    """The token hashes (int64) of a :func:`_walk_kinds` event list: ``"("`` and the type when a
    node opens, ``")"`` when it closes, nothing for comments (the tokens :func:`_assemble` builds,
    as hashes, straight from the kind ids).

    Raises
    ------
    ValueError
        If an event names an id that is not a kind of the grammar (a parse never yields one).
    """
    event = np.fromiter(events, dtype=np.int64, count=len(events))  # a quarter fewer steps than np.array
    typed = table.stream_table()[event + 1]  # type hash when opening, -1 when closing
    if len(typed) and typed.min() < -1:
        unknown = np.flatnonzero(typed == -3)
        if len(unknown):
            raise ValueError(f"tree-sitter kind ids {sorted(set(event[unknown].tolist()))} are not kinds of this grammar")
        silent = np.flatnonzero(typed == -2)  # comment nodes: they and their closing events write nothing
        keep = np.ones(len(event), dtype=bool)
        keep[silent] = False
        keep[_closing_events(event, silent)] = False
        typed = typed[keep]
    # two slots per event: "(" and the type, or ")" and a -1 that is dropped
    slots = np.empty((len(typed), 2), dtype=np.int64)
    slots[:, 0] = np.where(typed >= 0, int(table.hashes[_OPEN_CODE]), int(table.hashes[_CLOSE_CODE]))
    slots[:, 1] = typed
    flat = slots.reshape(-1)
    return flat[flat >= 0]
