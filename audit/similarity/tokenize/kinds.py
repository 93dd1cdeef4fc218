"""A grammar's node kinds as Dolos's tokens: strings, hashes, and whether a kind writes any.

Every named node writes ``"("``, its type and ``")"``; nodes whose type contains ``comment``
write nothing (Dolos drops comments unless asked to keep them). :class:`_KindTable` holds these
per tree-sitter kind id, once per grammar (:func:`_kind_table`).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import tree_sitter

from mleaudit.audit.parsing import get_language
from mleaudit.audit.similarity.winnow.hashing import hash_token

OPEN = "("
CLOSE = ")"

_OPEN_CODE = 0
_CLOSE_CODE = 1
#: tree-sitter's kind id of ``ERROR`` nodes (``ts_builtin_sym_error``).
_ERROR_KIND_ID = 0xFFFF


class _KindTable:
    """Token strings, hashes and the comment flag of a grammar's node kinds, by compact code.

    Code 0 is ``"("``, code 1 is ``")"``, and the grammar's node kinds follow (tree-sitter kind
    ids run up to the grammar's kind count, plus 65535 for ``ERROR``).
    """

    def __init__(self, language: tree_sitter.Language) -> None:
        kind_ids = [*range(language.node_kind_count), _ERROR_KIND_ID]
        names = [OPEN, CLOSE]
        self.code_of = np.full(1 << 16, -1, dtype=np.int64)
        for kind_id in kind_ids:
            name = language.node_kind_for_id(kind_id)
            if name is not None:
                self.code_of[kind_id] = len(names)
                names.append(name)
        self.names = np.array(names, dtype=object)
        # Dolos drops comment nodes (but not their named children) unless asked not to.
        self.writes = np.array(["comment" not in name for name in names], dtype=bool)
        self.hashes = np.array([hash_token(name) for name in names], dtype=np.uint32)
        self._converted: dict[Any, Any] = {}

    def stream_table(self) -> np.ndarray:
        """Per tree-sitter kind id plus one: the hash of the kind's type token (int64), ``-2``
        for kinds that write no tokens (comments), ``-3`` for ids that are not kinds of the
        grammar; entry 0 (a closing event, ``-1 + 1``) is ``-1``. Rebuilt when :attr:`writes`
        is replaced."""
        built = self._converted.get("stream")
        if built is None or built[0] is not self.writes:
            table = np.full((1 << 16) + 1, -3, dtype=np.int64)
            table[0] = -1
            known = np.flatnonzero(self.code_of >= 0)
            codes = self.code_of[known]
            table[known + 1] = np.where(self.writes[codes], self.hashes[codes].astype(np.int64), -2)
            built = self._converted["stream"] = (self.writes, table)
        return built[1]

    def codes(self, kind_ids: np.ndarray) -> np.ndarray:
        """Codes of tree-sitter kind ids.

        Raises
        ------
        ValueError
            If an id is not a kind of the grammar (a parse never yields one).
        """
        codes = self.code_of[kind_ids]
        if len(codes) and codes.min() < 0:
            unknown = sorted(set(kind_ids[codes < 0].tolist()))
            raise ValueError(f"tree-sitter kind ids {unknown} are not kinds of this grammar")
        return codes


@functools.cache
def _kind_table(language: str) -> _KindTable:
    return _KindTable(get_language(language))
