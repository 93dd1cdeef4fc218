"""The copy detector over an index: backgrounds, near-duplicates and evidence bounds for one query.

The copy detector (:mod:`mleaudit.audit.similarity.detect`) runs on the same candidates and gives the
same ``score``, ``flagged`` and ``evidence_fragments`` as brute force over the same files. Its
background model is an n-gram model of the *whole* corpus with each pair's reference and its
near-duplicates left out, and every figure it needs is a sum over files, so the index stores
(since format version 2):

- per Python reference, its detector *profile* (lexical token ids, their offsets and prior
  bits; :func:`~mleaudit.audit.similarity.index.blobs._encode_profile`);
- the corpus's n-gram table: each token n-gram's document frequency and each context's total
  and number of distinct continuations (tables ``ngrams`` and ``contexts``), kept exact by
  ``add`` (new files added, replaced and removed files subtracted);
- each reference's sampled 8-grams as postings under their own code, so a reference's
  near-duplicates are found from the postings at query time (and so always match the corpus as
  it is now); each segment's statistics keep the sample sizes.

A query fetches the table rows its agent files read, then subtracts the reference's and its
near-duplicates' profiles (:class:`mleaudit.audit.similarity.detect.AgentQuery`), exactly as
:class:`mleaudit.audit.similarity.detect.DetectionCorpus` does over the same files. A version-1 index has
none of this and is refused with a message to rebuild it.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Mapping, Sequence

import numpy as np

from mleaudit.audit.similarity import detect as _detect
from mleaudit.audit.similarity.bounds import SeedLocations, evidence_bounds, seed_table, upper_token_bits, window_bounds
from mleaudit.audit.similarity.detect import (
    MAX_SAMPLE_HOLDERS,
    NEAR_DUPLICATE_CONTAINMENT,
    AgentQuery,
    Evidence,
    NgramTable,
    Profile,
    Tile,
    find_tiles,
    near_duplicate_members,
    reference_evidence,
    token_bits,
)
from mleaudit.audit.similarity.index.blobs import _decode_profile
from mleaudit.audit.similarity.index.format import _KEY_STRIDE, _SAMPLE_CODE, _SEED_CODE, CorpusIndexError
from mleaudit.audit.similarity.index.postings import _count_ids, _first_id, _Posting
from mleaudit.audit.similarity.index.state import _OpenIndex

#: Seed locations (:class:`SeedLocations`, 16 bytes each) kept between the agent units of one
#: :meth:`CorpusIndex.compare` for the window bound: about the seeds of 1,000 notebooks.
_SEED_LOCATIONS = 4_000_000
#: References whose profiles are read at once when the evidence bound asks for scoring.
_BOUND_BATCH = 256
#: Seed values held by more references than this are not listed at query time: their tokens
#: count in every reference's bound (see :func:`_evidence_bounds`).
_SEED_HOLDERS = 4096
#: Token-only profiles kept between queries of one open index (about 50 kB each with their
#: n-gram sets).
_TOKEN_PROFILE_CACHE = 1024
#: Families (a reference and its forks, :meth:`_DetectorQuery.family`) kept between queries of
#: one open index, and the most ids they may hold together (int64: 32 MB).
_FAMILY_CACHE = 4096
_FAMILY_IDS = 4_000_000
#: Sampled 8-gram postings kept between queries of one open index, and the most bytes their
#: ids may take together (80 MB).
_SAMPLE_HOLDER_CACHE = 65536
_SAMPLE_HOLDER_BYTES = 80_000_000
#: Sampled values held by up to this share of the corpus count in the test for a reference's
#: forks when further sources are chosen (values of common code say nothing about forks).
_FAMILY_HOLDERS = 0.1


class _DetectorQuery:
    """The copy detector over an index, for one :meth:`CorpusIndex.compare` call.

    The background of a pair is the whole indexed corpus with the reference and its
    near-duplicates subtracted, as :class:`mleaudit.audit.similarity.detect.DetectionCorpus` makes it over
    the same files: the n-gram table rows the agent files read are fetched once, the
    near-duplicates of a reference are found from the sampled 8-grams' postings, and every
    profile is read once.
    """

    def __init__(self, index: _OpenIndex, agents: Sequence[Profile], sample_sizes: np.ndarray) -> None:
        self._index = index
        self._backend = index._open_backend()
        self._sample_sizes = sample_sizes
        self.queries = [AgentQuery(agent) for agent in agents]
        gram_parts = [q.keys()[0] for q in self.queries]
        context_parts = [q.keys()[1] for q in self.queries]
        gram_keys = np.unique(np.concatenate(gram_parts)) if gram_parts else np.zeros(0, np.int64)
        context_keys = np.unique(np.concatenate(context_parts)) if context_parts else np.zeros(0, np.int64)
        found, counts = self._backend.gram_rows(gram_keys)
        context_found, totals, kinds = self._backend.context_rows(context_keys)
        # a document frequency past the references ever indexed would make copied code look
        # common and score nothing: a damaged table, never a clean comparison
        most = int(sample_sizes.size)
        if (counts.size and (int(counts.min()) < 0 or int(counts.max()) > most)) or (
                totals.size and (int(totals.min()) < 0 or int(kinds.min()) < 0)):
            raise CorpusIndexError(f"{index.path}: corrupt n-gram table (a document frequency outside 0..{most} "
                                   f"or a negative context count); rebuild the index")
        self.table = NgramTable(found, counts, context_found, totals, kinds)
        self.boilerplate = index._boilerplate_profiles()
        self._profiles: dict[int, tuple[Profile, int] | None] = {}
        self._holders: dict[int, tuple[int, tuple[_Posting, ...] | None]] = {}
        self._members: dict[int, tuple[int, ...]] = {}
        self._holder_ids: dict[int, np.ndarray | None] = {}
        self._families = index._families
        self._plain: dict[int, tuple[Profile, NgramTable, np.ndarray]] = {}
        self._seed_tables: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        # references (by id, their slot) whose seed locations are kept, see window_bounds
        self._locations: tuple[dict[int, int], SeedLocations] = ({}, SeedLocations([]))
        self._kept_seeds: list[tuple[np.ndarray, int]] = []  # the kept references' seeds, by slot
        self._windows: dict[int, dict[int, float]] = {}  # per agent unit: window bound per reference
        # per (agent unit, reference): the pair's tiles, found for the tile bound and used again
        # by the evidence (they depend on the two token streams only)
        self._tiles: dict[tuple[int, int], list[Tile]] = {}

    def profiles(self, docs: Iterable[int], paths: Mapping[int, str] | None = None) -> dict[int, tuple[Profile, int]]:
        """Profile and text length of each doc the detector reads (decoded once)."""
        wanted = [doc for doc in docs if doc not in self._profiles]
        if wanted:
            blobs = self._backend.profiles(wanted)
            names = dict(paths or {})
            missing = [doc for doc in blobs if doc not in names]
            if missing:
                names.update(self._backend.paths(missing))
            for doc in wanted:
                blob = blobs.get(doc)
                if blob is None:
                    self._profiles[doc] = None
                    continue
                path = names.get(doc, str(doc))
                self._profiles[doc] = _decode_profile(blob, path, f"{self._index.path}: {path}")
        return {doc: self._profiles[doc] for doc in docs if self._profiles.get(doc) is not None}  # type: ignore[misc]

    def token_profiles(self, docs: Sequence[int]) -> dict[int, Profile]:
        """Token-only profiles of ``docs`` (full ones when read; docs without a profile are
        left out). They are kept in the open index's cache of the last
        :data:`_TOKEN_PROFILE_CACHE` only: an exhaustive search reads every reference once, and
        keeping them all for the query would hold the whole corpus in memory."""
        cache = self._index._token_profiles
        found: dict[int, Profile] = {}
        wanted = []
        for doc in docs:
            full = self._profiles.get(doc)
            if full is not None:
                found[doc] = full[0]
            elif doc in cache:
                found[doc] = cache[doc]
                cache.move_to_end(doc)
            else:
                wanted.append(doc)
        if wanted:
            blobs = self._backend.profiles(wanted)
            for doc, blob in blobs.items():
                # a token-only profile is never shown: its path is read only to name a bad record
                try:
                    profile = _decode_profile(blob, f"#{doc}", "", tokens_only=True)[0]
                except CorpusIndexError:
                    path = self._backend.paths([doc]).get(doc, str(doc))
                    _decode_profile(blob, path, f"{self._index.path}: {path}", tokens_only=True)
                    raise
                found[doc] = cache[doc] = profile
            while len(cache) > _TOKEN_PROFILE_CACHE:
                cache.popitem(last=False)
        return {doc: found[doc] for doc in docs if doc in found}

    def left_out(self, docs: Sequence[int]) -> list[Profile]:
        """Token-only profiles of the files left out of a background (full ones when read)."""
        found = self.token_profiles(docs)
        return [found[doc] for doc in docs if doc in found]

    def distinct_sources(self, chosen: Sequence[int], more: Sequence[int], limit: int) -> list[int]:
        """Up to ``limit`` of ``more`` (in their order) that are near-duplicates neither of a
        chosen reference nor of each other: the next best reference of each further source."""
        if limit <= 0 or not more:
            return []
        excluded = np.zeros(self._sample_sizes.size, dtype=bool)
        for doc in chosen:
            # forks of a chosen reference are mostly forks of the one before it too
            if not excluded[doc]:
                excluded[self.family(doc)] = True
        found: list[int] = []
        for doc in more:
            if excluded[doc]:
                continue
            family = self.family(doc)
            if not family.size:
                continue
            found.append(doc)
            excluded[family] = True
            if len(found) == limit:
                break
        return found

    def family(self, doc: int) -> np.ndarray:
        """``doc`` and every reference that is a near-duplicate of it, as ids: one holds at least
        :data:`~mleaudit.audit.similarity.detect.NEAR_DUPLICATE_CONTAINMENT` of the other's sampled
        8-grams (the detector's test for forks, here over the values held by up to 10 % of the
        corpus rather than 512 references, the other file's share scaled to the counted
        values, and without the detector's cap on the number of forks, so that the forks of a
        popular kernel are found). Empty for a reference without a sample (a few tokens: no
        source of its own)."""
        found = self._families.get(doc)
        if found is not None:
            self._families.move_to_end(doc)
        if found is None:
            profile = self.token_profiles([doc]).get(doc)
            sample = profile.sample() if profile is not None else np.zeros(0, np.int64)
            cap = max(MAX_SAMPLE_HOLDERS, int(_FAMILY_HOLDERS * self._sample_sizes.size))
            size = self._sample_sizes.size
            # the values held by at least one reference live in this query's statistics
            held = [entries for entries in self._sample_postings(sample, cap).values()
                    if any(_first_id(posting) < size for posting in entries)] if sample.size else []
            found = np.array([doc] if sample.size else [], dtype=np.int64)
            if held:
                # counting by id (ids are below the statistics' size), bitmaps without listing
                # their ids: faster than sorting the holders of common values, which run to a
                # large share of the corpus
                counts = _count_ids([(entries, 1) for entries in held], size,
                                    f"{self._index.path}: postings of a sampled value")
                others = np.flatnonzero(counts)
                common = counts[others]
                # only the counted share of each sample can be held in common
                counted = len(held) / sample.size
                theirs = self._sample_size(others) * counted
                near = (common >= NEAR_DUPLICATE_CONTAINMENT * len(held)) | (
                    (theirs > 0) & (common >= NEAR_DUPLICATE_CONTAINMENT * theirs))
                found = np.union1d(found, others[near])
            # a family depends on the corpus only: kept for later queries, the oldest dropped
            self._families[doc] = found
            self._index._family_ids += found.size
            while len(self._families) > _FAMILY_CACHE or self._index._family_ids > _FAMILY_IDS:
                self._index._family_ids -= self._families.popitem(last=False)[1].size
        return found

    def _holders_of(self, values: np.ndarray, cap: int = MAX_SAMPLE_HOLDERS) -> dict[int, np.ndarray]:
        """``{value: ids of the references whose sample holds it}`` for the sampled 8-gram
        ``values`` held by 1 to ``cap`` references (ids live in this query's statistics; values
        with none are left out). Values held by more are left out without reading their postings
        (the detector's near-duplicate test ignores values held by more than MAX_SAMPLE_HOLDERS
        references; common code is held by much of the corpus)."""
        size = self._sample_sizes.size
        # the forks of one kernel hold mostly the same values: each value's ids are decoded
        # once per query (None: held by none or by more than the cap)
        known = self._holder_ids if cap == MAX_SAMPLE_HOLDERS else {}
        listed = values.tolist()
        missing = [value for value in listed if value not in known]
        if missing:
            known.update(dict.fromkeys(missing))
            for value, entries in self._sample_postings(np.asarray(missing, dtype=np.int64), cap).items():
                where = f"{self._index.path}: postings of sample {value}"
                held = np.concatenate([posting.ids(where) for posting in entries])
                # ids past the statistics read for this query were added since; not live here
                held = held[held < size]
                if held.size:
                    known[value] = held
        return {value: known[value] for value in listed if known[value] is not None}

    def _sample_postings(self, values: np.ndarray, cap: int) -> dict[int, tuple[_Posting, ...]]:
        """``{value: its postings entries (ids only)}`` for the sampled 8-gram ``values`` held by 1
        to ``cap`` references, in the order of ``values``; the entries of the others are not read.
        Kept between queries (up to :data:`_SAMPLE_HOLDER_CACHE` values and
        :data:`_SAMPLE_HOLDER_BYTES` of ids)."""
        cache = self._index._sample_holders
        wanted: list[int] = []
        for value in values.tolist():
            known = self._holders.get(value)
            if known is None and value in cache:
                known = self._holders[value] = cache[value]
                cache.move_to_end(value)
            if known is None or (known[1] is None and known[0] <= cap):
                wanted.append(value)
        if wanted:
            code = _SAMPLE_CODE * _KEY_STRIDE
            # one read gives each value's holder count and, when within the cap, its entries
            fetched = self._backend.postings_within([v + code for v in wanted], cap)
            for value in wanted:
                df, entries = fetched.get(value + code, (0, ()))
                if entries is not None:
                    entries = tuple(entries)
                    self._index._sample_holder_bytes += sum(len(posting.docs) for posting in entries)
                self._holders[value] = cache[value] = (df, entries)
                cache.move_to_end(value)
            # a value of common code is held by a large share of the corpus: bound the ids kept
            while cache and (len(cache) > _SAMPLE_HOLDER_CACHE
                             or self._index._sample_holder_bytes > _SAMPLE_HOLDER_BYTES):
                _, dropped = cache.popitem(last=False)[1]
                self._index._sample_holder_bytes -= sum(len(posting.docs) for posting in dropped or ())
        found = {}
        for value in values.tolist():
            df, entries = self._holders[value]
            if entries and df <= cap:
                found[value] = entries
        return found

    def _sample_size(self, docs: np.ndarray) -> np.ndarray:
        inside = (docs >= 0) & (docs < self._sample_sizes.size)
        return np.where(inside, self._sample_sizes[np.where(inside, docs, 0)], 0)

    def members(self, doc: int, profile: Profile) -> tuple[int, ...]:
        """The reference and its near-duplicates in the index."""
        found = self._members.get(doc)
        if found is None:
            found = near_duplicate_members(doc, profile.sample(), self._holders_of, self._sample_size)
            self._members[doc] = found
        return found

    def bounds(self, agent: int, live: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Upper bounds of the evidence of agent file number ``agent`` against every reference
        (:func:`evidence_bounds` over :func:`upper_token_bits` and the seed postings).

        Parameters
        ----------
        agent : int
        live : ndarray of bool
            Per reference id, whether it is indexed and read by the detector.

        Returns
        -------
        common : float
            The bound of every live reference not in ``docs``.
        docs, bounds : ndarray
            Live references holding a seed of the agent file that few references hold, and their
            bounds.
        """
        query = self.queries[agent]
        upper = upper_token_bits(query.agent, self.table)
        keys = query.agent.seed_keys()
        if not keys.size:
            return 0.0, np.zeros(0, np.int64), np.zeros(0)
        values = (keys.view(np.uint64) >> np.uint64(64 - 25)).astype(np.int64)
        code = _SEED_CODE * _KEY_STRIDE
        unique = np.unique(values).tolist()
        fetched = self._backend.postings_within([value + code for value in unique], _SEED_HOLDERS)
        holders: dict[int, np.ndarray | None] = {}
        size = live.size
        for value in unique:
            df, entries = fetched.get(value + code, (0, []))
            if entries is None:
                holders[value] = None
                continue
            if not entries:
                continue
            where = f"{self._index.path}: postings of seed {value}"
            ids = np.concatenate([posting.ids(where) for posting in entries]).astype(np.int64)
            ids = ids[(ids >= 0) & (ids < size)]
            holders[value] = ids[live[ids]]
        return evidence_bounds(upper, values, holders)

    def tile_bounds(self, agent: int, docs: Sequence[int], needed: float = 0.0) -> dict[int, float]:
        """Tighter upper bounds of the evidence of agent file number ``agent`` against ``docs``:
        the detector's own evidence (:func:`~mleaudit.audit.similarity.detect.reference_evidence`: the
        tiles of the pair and their best chain) with nothing left out, on the table and agent
        profile of :func:`upper_token_bits`. The chain's value only grows with its tokens' bits,
        so it bounds the evidence under any leave-out set. A reference whose
        :func:`window_bound` (cheaper, looser) stays below ``needed`` bits gets that one instead.
        References without a profile are left out."""
        plain = self._plain.get(agent)
        if plain is None:
            agent_profile = self.queries[agent].agent
            stripped = dataclasses.replace(agent_profile, literals=frozenset(), _cache={})
            table = self.table
            most = int(getattr(_detect, "MAX_NEAR_DUPLICATES", 32)) + 1
            lowered = NgramTable(table.keys, np.maximum(table.counts - most, 0), table.context_keys, table.totals,
                                 table.kinds)
            query = AgentQuery(stripped)
            # nothing is left out, so the agent's bits are the same against every reference
            plain = self._plain[agent] = (stripped, lowered, np.asarray(token_bits(stripped, lowered, (), query=query)))
        stripped, lowered, bits = plain
        # the cheap bound first: most references that share only common code stop here
        coarse = self.window_bounds(agent, docs)
        found = self.token_profiles([doc for doc in docs if coarse.get(doc, 0.0) >= needed])
        out = {}
        for doc, window in coarse.items():
            if window < needed:
                out[doc] = window
                continue
            tiles = find_tiles(stripped, found[doc])
            out[doc] = reference_evidence(stripped, found[doc], lowered, (), bits=bits, tiles=tiles).bits
            if out[doc] >= needed:  # kept for the evidence of the references the search scores
                self._tiles[(agent, doc)] = tiles
        return out

    def window_bounds(self, agent: int, docs: Sequence[int]) -> dict[int, float]:
        """:func:`window_bounds` of agent file number ``agent`` against ``docs`` (references
        without a profile are left out).

        The references' seed locations are kept for the next agent file while they hold up to
        ``_SEED_LOCATIONS`` seeds (the agent units of one run mostly meet the same references);
        past that, they are made per batch of ``_BOUND_BATCH`` references."""
        known = self._windows.setdefault(agent, {})
        out = {doc: known[doc] for doc in docs if doc in known}
        docs = [doc for doc in docs if doc not in known]
        if docs:
            fresh = self._window_bounds(agent, docs)
            known.update(fresh)
            out.update(fresh)
        return out

    def _window_bounds(self, agent: int, docs: list[int]) -> dict[int, float]:
        seeds = self.seed_table(agent)
        kept = self._locations
        missing = [doc for doc in docs if doc not in kept[0]]
        # Profiles are read a batch at a time (never the whole corpus at once): while the
        # references met so far fit in the kept seed locations, theirs are kept for the next
        # agent unit; past that, each batch gets its own.
        out: dict[int, float] = {}
        adding: list[tuple[int, np.ndarray, int]] = []
        room = _SEED_LOCATIONS - kept[1].size
        for start in range(0, len(missing), _BOUND_BATCH):
            batch = missing[start : start + _BOUND_BATCH]
            found = self.token_profiles(batch)
            read = [(doc, found[doc].seed_keys(), len(found[doc].ids)) for doc in batch if doc in found]
            if room >= 0:
                room -= sum(keys.size for _, keys, _ in read)
                adding.extend(read)
                if room >= 0:
                    continue
                read, adding = adding, []  # they do not fit: bounded batch by batch
            values = window_bounds(seeds, SeedLocations([(keys, n) for _, keys, n in read], many_lookups=False))
            out.update(zip((doc for doc, _, _ in read), values.tolist()))
        if adding:
            self._kept_seeds.extend((keys, n) for _, keys, n in adding)
            order = {**kept[0], **{doc: len(kept[0]) + i for i, (doc, _, _) in enumerate(adding)}}
            kept = self._locations = (order, SeedLocations(self._kept_seeds, many_lookups=False))
        inside = [doc for doc in docs if doc in kept[0] and doc not in out]
        if inside:
            wanted = np.zeros(len(kept[0]), dtype=bool)
            wanted[[kept[0][doc] for doc in inside]] = True
            values = window_bounds(seeds, kept[1], wanted)
            out.update((doc, float(values[kept[0][doc]])) for doc in inside)
        return out

    def seed_table(self, agent: int) -> tuple[np.ndarray, np.ndarray]:
        seeds = self._seed_tables.get(agent)
        if seeds is None:
            profile = self.queries[agent].agent
            seeds = self._seed_tables[agent] = seed_table(upper_token_bits(profile, self.table), profile.seed_keys())
        return seeds

    def evidence(self, agent: int, doc: int, mask: bytearray | None) -> tuple[Evidence, Profile, int] | None:
        """Evidence that agent file number ``agent`` copied from reference ``doc`` (None when the
        detector does not read the reference)."""
        loaded = self.profiles([doc]).get(doc)
        if loaded is None:
            return None
        profile, chars = loaded
        left_out = self.left_out(self.members(doc, profile))
        query = self.queries[agent]
        result = reference_evidence(query.agent, profile, self.table, left_out, mask=mask, query=query,
                                    tiles=self._tiles.get((agent, doc)))
        return result, profile, chars
