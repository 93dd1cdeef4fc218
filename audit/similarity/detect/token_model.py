"""The background model: information of each agent token, in bits, under a Witten-Bell
interpolated trigram model with the reference and its near-duplicates left out."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from mleaudit.audit.similarity.detect.background import Background, IDIOM_ORDER, _resolve_background
from mleaudit.audit.similarity.detect.constants import (
    EMPTY_CONTEXT,
    LISTED_NAME_BITS,
    MAX_TOKEN_BITS,
    MODEL_ORDER,
    NAME_LITERAL_BITS,
)
from mleaudit.audit.similarity.detect.lexing import _COMMA_ID
from mleaudit.audit.similarity.detect.ngrams import NgramTable
from mleaudit.audit.similarity.detect.profiles import Profile, gram_keys


class AgentQuery:
    """An agent file's n-gram lookups, shared by every reference it is compared with.

    :func:`token_bits` reads, at each agent position and for each order, the table row of the
    n-gram ending there and of its context, minus the left-out files' share of those rows. Both
    are cached here: the table's rows once per table, each left-out file's share once per file.

    Parameters
    ----------
    agent : Profile

    Attributes
    ----------
    grams, contexts : tuple of ndarray of int64
        ``grams[n - 1][i]``: key of the n-gram ending at position ``i``; ``contexts[n - 1][i]``:
        key of its context (positions ``i < n - 1`` hold none).
    """

    def __init__(self, agent: Profile) -> None:
        self.agent = agent
        keys = agent.keys()
        contexts = [np.full(len(agent.ids), EMPTY_CONTEXT, dtype=np.int64)]
        for n in range(2, MODEL_ORDER + 1):
            context = np.empty(len(agent.ids), dtype=np.int64)
            if len(agent.ids):
                context[0] = EMPTY_CONTEXT
                context[1:] = keys[n - 2][:-1]
            contexts.append(context)
        self.grams: tuple[np.ndarray, ...] = tuple(keys)
        self.contexts: tuple[np.ndarray, ...] = tuple(contexts)
        self._shares: dict[int, tuple[Profile, tuple[np.ndarray, ...], tuple[np.ndarray, ...]]] = {}
        self._rows: tuple[NgramTable, list[np.ndarray], list[np.ndarray], list[np.ndarray]] | None = None
        self._background_rows: tuple[NgramTable, list[np.ndarray], list[np.ndarray], list[np.ndarray]] | None = None
        self._idiom_rows: tuple[NgramTable, np.ndarray, np.ndarray, np.ndarray] | None = None

    def keys(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct n-gram keys and context keys whose table rows the agent file reads (a
        corpus index fetches exactly these)."""
        if not len(self.agent.ids):
            return np.zeros(0, np.int64), np.array([EMPTY_CONTEXT], np.int64)
        return np.unique(np.concatenate(self.grams)), np.unique(np.concatenate(self.contexts))

    def rows(self, table: NgramTable) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
        """The table's counts, context totals and kinds at every agent position, by order."""
        if self._rows is None or self._rows[0] is not table:
            counts = [table.count(g) for g in self.grams]
            contexts = [table.context(c) for c in self.contexts]
            self._rows = (table, counts, [t for t, _ in contexts], [k for _, k in contexts])
        return self._rows[1], self._rows[2], self._rows[3]

    def idiom_keys(self) -> tuple[np.ndarray, np.ndarray]:
        """Per agent position, the key of the :data:`IDIOM_ORDER`-gram ending there and of its
        context (positions before ``IDIOM_ORDER - 1`` hold none)."""
        found = self.agent._cache.get("idiom_query")
        if found is None:
            n = len(self.agent.ids)
            keys = gram_keys(self.agent.id_array(), IDIOM_ORDER)
            context = np.empty(n, dtype=np.int64)
            if n:
                context[0] = EMPTY_CONTEXT
                context[1:] = keys[IDIOM_ORDER - 2][:-1]
            found = (keys[IDIOM_ORDER - 1], context)
            self.agent._cache["idiom_query"] = found
        return found

    def idiom_rows(self, idioms: NgramTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Counts, context totals and kinds of the background's idiom table at every agent
        position (:meth:`idiom_keys`); no file is ever left out of it, so they are read once."""
        found = self._idiom_rows
        if found is None or found[0] is not idioms:
            grams, contexts = self.idiom_keys()
            totals, kinds = idioms.context(contexts)
            found = self._idiom_rows = (idioms, idioms.count(grams), totals, kinds)
        return found[1], found[2], found[3]

    def preload_shares(self, profiles: Sequence[Profile], shares: "ShareIndex", ids: Sequence[int]) -> None:
        """Fill the :meth:`share` of ``profiles[i]`` for every ``i`` in ``ids`` from one lookup of
        the agent's keys in ``shares`` (the same values as one search per file)."""
        wanted = [i for i in ids if id(profiles[i]) not in self._shares]
        if not wanted:
            return
        grams, contexts = shares.rows(self.grams, self.contexts, wanted)
        for row, i in enumerate(wanted):
            self._shares[id(profiles[i])] = (profiles[i], tuple(g[row] for g in grams),
                                             tuple(c[row] for c in contexts))

    def forget_shares(self) -> None:
        """Drop the cached shares (a long agent file against many references holds many)."""
        self._shares.clear()

    def background_rows(self, table: NgramTable) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
        """:meth:`rows` of the background's table (cached apart from the corpus's rows)."""
        if self._background_rows is None or self._background_rows[0] is not table:
            counts = [table.count(g) for g in self.grams]
            contexts = [table.context(c) for c in self.contexts]
            self._background_rows = (table, counts, [t for t, _ in contexts], [k for _, k in contexts])
        return self._background_rows[1], self._background_rows[2], self._background_rows[3]

    def share(self, profile: Profile) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
        """What one corpus file adds to the rows the agent reads: per order, 1 where it holds
        the agent's n-gram, and its number of n-grams in the agent's context."""
        found = self._shares.get(id(profile))
        if found is None:
            keys, _ = profile.grams()
            context_keys, context_counts = profile.context_counts()
            ones = np.ones(keys.size, np.int64)
            grams = tuple(NgramTable._lookup(g, keys, ones)[0] for g in self.grams)
            contexts = tuple(NgramTable._lookup(c, context_keys, context_counts)[0] for c in self.contexts)
            found = (profile, grams, contexts)  # the profile is kept so its id stays its own
            self._shares[id(profile)] = found
        return found[1], found[2]

    def left_out(self, members: Sequence[Profile]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The summed :meth:`share` of ``members`` (arrays to read, not to write)."""
        if len(members) == 1:
            member_grams, member_contexts = self.share(members[0])
            return list(member_grams), list(member_contexts)
        n = len(self.agent.ids)
        grams = [np.zeros(n, np.int64) for _ in range(MODEL_ORDER)]
        contexts = [np.zeros(n, np.int64) for _ in range(MODEL_ORDER)]
        for member in members:
            member_grams, member_contexts = self.share(member)
            for k in range(MODEL_ORDER):
                grams[k] += member_grams[k]
                contexts[k] += member_contexts[k]
        return grams, contexts


class ShareIndex:
    """Every corpus file's distinct n-grams and context counts in two sorted arrays, so that an
    agent file's :meth:`AgentQuery.share` with many files comes from one search.

    Parameters
    ----------
    profiles : sequence of Profile
        The corpus files; ids are positions in it.
    """

    def __init__(self, profiles: Sequence[Profile]) -> None:
        self._files = len(profiles)
        grams = [p.grams()[0] for p in profiles]
        contexts = [p.context_counts() for p in profiles]
        self._gram_keys, self._gram_files, _ = self._sorted([(g, np.ones(g.size, np.int64)) for g in grams])
        self._context_keys, self._context_files, self._context_counts = self._sorted(contexts)

    @staticmethod
    def _sorted(parts: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not parts:
            empty = np.zeros(0, np.int64)
            return empty, empty, empty
        keys = np.concatenate([np.asarray(k, dtype=np.int64) for k, _ in parts])
        values = np.concatenate([np.asarray(v, dtype=np.int64) for _, v in parts])
        files = np.repeat(np.arange(len(parts), dtype=np.int64), [len(k) for k, _ in parts])
        order = np.argsort(keys, kind="stable")
        return keys[order], files[order], values[order]

    @staticmethod
    def _matrix(queries: np.ndarray, keys: np.ndarray, files: np.ndarray, values: np.ndarray,
                rows: np.ndarray) -> np.ndarray:
        """``out[r, i]``: the value file ``rows^-1[f]`` holds for key ``queries[i]`` (0 when none)."""
        out = np.zeros((int((rows >= 0).sum()), queries.size), dtype=np.int64)
        low = np.searchsorted(keys, queries, side="left")
        found = np.searchsorted(keys, queries, side="right") - low
        if not found.any():
            return out
        positions = np.repeat(np.arange(queries.size), found)
        at = np.repeat(low, found) + (np.arange(int(found.sum())) - np.repeat(np.cumsum(found) - found, found))
        row = rows[files[at]]
        kept = row >= 0
        # each file holds a key at most once: no two entries land on one cell
        out[row[kept], positions[kept]] = values[at[kept]]
        return out

    def rows(self, grams: Sequence[np.ndarray], contexts: Sequence[np.ndarray], ids: Sequence[int]
             ) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Per order, a matrix with a row per file of ``ids`` (in that order): 1 where the file
        holds the agent's n-gram; its number of n-grams with the agent's context."""
        rows = np.full(self._files, -1, dtype=np.int64)
        rows[np.asarray(ids, dtype=np.int64)] = np.arange(len(ids))
        return ([self._matrix(g, self._gram_keys, self._gram_files, np.ones(self._gram_keys.size, np.int64), rows)
                 for g in grams],
                [self._matrix(c, self._context_keys, self._context_files, self._context_counts, rows)
                 for c in contexts])


def token_bits(agent: Profile, table: NgramTable, left_out: Sequence[Profile] = (), *,
               query: AgentQuery | None = None, background: Background | None | str = "default") -> np.ndarray:
    """Information of each agent token under the background model, in bits.

    Parameters
    ----------
    agent : Profile
    table : NgramTable
        The corpus's table (or only its rows for this agent's keys, see :meth:`AgentQuery.keys`).
    left_out : sequence of Profile
        Files of the corpus whose contribution is subtracted (the reference and its
        near-duplicates): their n-grams no longer count.
    query : AgentQuery, optional
        The agent's lookups, to share between references (made here when omitted).
    background : Background, None or "default", default "default"
        Ordinary ML code written independently of any reference (:func:`default_background`,
        the shipped one, by default; ``None`` for none): its documents count as documents of the
        corpus that are never left out. A context's number of distinct continuations is then
        the sum of the corpus's and the background's (an upper bound: a continuation found in
        both counts twice, which gives the lower orders slightly more weight).

    Returns
    -------
    ndarray of float64
        ``bits[i] = -log2 P(token i | the two tokens before it)`` in ``(0, MAX_TOKEN_BITS]``, by
        Witten-Bell interpolation of the trigram, bigram and unigram estimates, the unigram
        backed off to the prior of :func:`profile_code` (a literal's length) with the weight
        Witten-Bell gives unseen tokens. A context's number of distinct continuations is the
        corpus's (leaving files out would remove only those continuations found in no other
        file; the difference is small and it keeps the subtraction to sums).

    References
    ----------
    Witten & Bell (1991), see the module docstring.
    """
    return token_bits_rows(agent, table, [left_out], query=query, background=background)[0]


def token_bits_rows(agent: Profile, table: NgramTable, left_outs: Sequence[Sequence[Profile]], *,
                    query: AgentQuery | None = None, background: Background | None | str = "default") -> np.ndarray:
    """:func:`token_bits` under several leave-out sets at once, a row each.

    Every step is element by element (or a maximum along a row), so each row holds exactly the
    floats :func:`token_bits` gives for its leave-out set; the logarithm is taken row by row on
    a contiguous array, as for one file.

    Parameters
    ----------
    agent : Profile
    table : NgramTable
    left_outs : sequence of sequence of Profile
        One leave-out set per row (see :func:`token_bits`).
    query : AgentQuery, optional
    background : Background, None or "default", default "default"

    Returns
    -------
    ndarray of float64, shape (len(left_outs), len(agent.ids))
    """
    n = len(agent.ids)
    rows = len(left_outs)
    if not n or not rows:
        return np.zeros((rows, n))
    query = query if query is not None else AgentQuery(agent)
    own = [query.left_out(left_out) for left_out in left_outs]
    own_grams = [np.stack([grams[k] for grams, _ in own]) for k in range(MODEL_ORDER)]
    own_contexts = [np.stack([contexts[k] for _, contexts in own]) for k in range(MODEL_ORDER)]
    counts, totals, all_kinds = query.rows(table)
    extra = _resolve_background(background)
    if extra is not None and extra.table.keys.size:
        more_counts, more_totals, more_kinds = query.background_rows(extra.table)
        counts = [a + b for a, b in zip(counts, more_counts)]
        totals = [a + b for a, b in zip(totals, more_totals)]
        all_kinds = [a + b for a, b in zip(all_kinds, more_kinds)]
    positions = np.arange(n)
    prior = np.exp2(-agent.prior_array())
    probability = np.broadcast_to(prior, (rows, n))
    documents = np.zeros((rows, 1), dtype=np.int64)
    for k in range(MODEL_ORDER):
        count = counts[k] - own_grams[k]
        total = totals[k] - own_contexts[k]
        kinds = all_kinds[k]
        if k == 0:
            # Unigrams: Witten-Bell with the prior as the distribution of unseen tokens.
            usable = (total + kinds) > 0
            probability = np.where(usable, (count + kinds * prior) / np.maximum(total + kinds, 1), prior)
            unigram_df = count
            # Every code file holds `=` or `(`: the agent's most widespread token is in about
            # every document of the background, a lower bound of their number.
            documents = np.maximum(count.max(axis=1, keepdims=True), 0)
            continue
        usable = (positions >= k) & (total > 0) & (kinds > 0)
        mixed = (count + kinds * probability) / np.maximum(total + kinds, 1)
        probability = np.where(usable, mixed, probability)
    if extra is not None and extra.idioms is not None and extra.idioms.keys.size and n >= IDIOM_ORDER:
        # The background's idiom model explains what it can (Witten-Bell over the trigram
        # estimate, one order of n-grams as long as a statement); it never makes a token rarer.
        idiom_counts, idiom_totals, idiom_kinds = query.idiom_rows(extra.idioms)
        usable = (positions >= IDIOM_ORDER - 1) & (idiom_totals > 0)
        explained = (idiom_counts + idiom_kinds * probability) / np.maximum(idiom_totals + idiom_kinds, 1)
        probability = np.where(usable, np.maximum(probability, explained), probability)
    literal = agent.literal_array()
    if literal.any() and bool((documents > 0).any()):
        # A string found in other files (a column name of the competition's data, a metric's
        # name) says little about *which* file was copied, in whatever order it comes: it costs
        # at most the information of "a file holds it", -log2(df / documents).
        held = literal & (unigram_df > 0) & (documents > 0)
        divisor = np.maximum(documents, 1)
        bag = np.where(held, np.minimum(unigram_df, divisor) / divisor, 0.0)
        probability = np.where(held, np.maximum(probability, bag), probability)
    probability = np.ascontiguousarray(probability, dtype=np.float64)
    bits = np.empty((rows, n))
    with np.errstate(divide="ignore"):
        for row in range(rows):
            bits[row] = -np.log2(probability[row].copy())
    bits = np.minimum(np.where(probability > 0, bits, MAX_TOKEN_BITS), MAX_TOKEN_BITS)
    # A name in quotes (a column of the competition's data) is dictated by the data, as an
    # identifier's spelling is chosen by its writer: it costs at most what any token of the
    # closed vocabulary costs, so that listing the data's columns is not taken for a copy.
    names = agent.name_array()
    bits = np.where(names, np.minimum(bits, NAME_LITERAL_BITS), bits)
    if n > 2 and names.any():
        # A name that follows a name and a comma continues a list of names; from three names on
        # (two are a call's arguments as often, ``.replace('Mlle', 'Miss')``) it is a list of the
        # data's columns, and the comma before each further name is the list's layout.
        follows = np.zeros(n + 2, dtype=bool)
        follows[2:n] = names[2:] & names[:-2] & (agent.id_array()[1:-1] == _COMMA_ID)
        listed = follows[:n] & (np.concatenate(([False, False], follows[: n - 2])) | follows[2 : n + 2])
        listed[1:-1] |= listed[2:]
        bits = np.where(listed, np.minimum(bits, LISTED_NAME_BITS), bits)
    if agent.prose:
        # Shared prose (a docstring's sentences) is documentation, not copied code.
        bits[:, np.fromiter(agent.prose, dtype=np.int64, count=len(agent.prose))] = 0.0
    return bits
