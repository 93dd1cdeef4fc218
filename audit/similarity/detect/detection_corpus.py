"""Reference kernels prepared for the detector: profiles, the n-gram table and each kernel's
near-duplicates (forks), left out of its background."""

from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict
from typing import Callable, Mapping, Sequence

import numpy as np

from mleaudit.audit.similarity.detect.background import Background, _resolve_background
from mleaudit.audit.similarity.detect.constants import (
    MAX_NEAR_DUPLICATES,
    MAX_SAMPLE_HOLDERS,
    NEAR_DUPLICATE_CONTAINMENT,
)
from mleaudit.audit.similarity.detect.evidence import Evidence, boilerplate_mask, reference_evidence
from mleaudit.audit.similarity.detect.ngrams import NgramTable
from mleaudit.audit.similarity.detect.profiles import Profile
from mleaudit.audit.similarity.detect.tiles import RunFinder
from mleaudit.audit.similarity.detect.token_model import AgentQuery, ShareIndex, token_bits_rows

#: Cells (references x agent tokens) of the share matrices made at once by :meth:`DetectionCorpus.evidence_all`.
_SHARE_CELLS = 1 << 20
#: Agent files whose evidence against the whole corpus is kept (:meth:`DetectionCorpus.evidence_all`).
_EVIDENCE_MEMO = 256
_NO_RUNS = (np.zeros(0, np.int64),) * 4


def near_duplicate_members(index: int, sample: np.ndarray, holders: Callable[[np.ndarray], Mapping[int, np.ndarray]],
                           sample_sizes: Callable[[np.ndarray], np.ndarray]) -> tuple[int, ...]:
    """A file and the files that are near-duplicates (forks) of it.

    Parameters
    ----------
    index : int
        The file's id.
    sample : ndarray of int64
        Its sorted distinct sampled 8-gram values (:meth:`Profile.sample`).
    holders : callable
        ``holders(values) -> {value: ids of the files whose sample holds it}``, over the whole
        corpus (values no file holds may be left out).
    sample_sizes : callable
        ``sample_sizes(ids)``: how many values each of these files' samples has (an array).

    Returns
    -------
    tuple of int
        Sorted ids: ``index`` and every file ``o`` sharing at least
        :data:`NEAR_DUPLICATE_CONTAINMENT` of either file's sample, counting only values held by
        2 to :data:`MAX_SAMPLE_HOLDERS` files (values in very many files say nothing about forks);
        at most the :data:`MAX_NEAR_DUPLICATES` files sharing the most values (then the lower id).
    """
    if not sample.size:
        return (index,)
    held = [files for files in holders(sample).values() if 2 <= len(files) <= MAX_SAMPLE_HOLDERS]
    if not held:
        return (index,)
    others, common = np.unique(np.concatenate(held), return_counts=True)
    keep = others != index
    others, common = others[keep], common[keep]
    theirs = np.asarray(sample_sizes(others), dtype=np.int64)
    near = (common >= NEAR_DUPLICATE_CONTAINMENT * sample.size) | (
        (theirs > 0) & (common >= NEAR_DUPLICATE_CONTAINMENT * theirs))
    others, common = others[near], common[near]
    if others.size > MAX_NEAR_DUPLICATES:
        # the closest forks: most shared sample values, then the lower id
        order = np.lexsort((others, -common))[:MAX_NEAR_DUPLICATES]
        others = others[order]
    return tuple(sorted([index, *others.tolist()]))



class DetectionCorpus:
    """Reference kernels prepared for the detector: profiles, n-gram table, near-duplicates.

    Parameters
    ----------
    references : sequence of Profile
        One per reference file (see :func:`profile_code`).
    boilerplate : sequence of Profile, optional
        Starter code: agent tokens inside a tile shared with a boilerplate file carry no bits.
    background : Background, None or "default", default "default"
        Ordinary ML code added to every pair's background model (:func:`default_background`,
        read when the corpus is made; ``None`` for the corpus alone).

    Raises
    ------
    ConfigError
        When the shipped background is asked for and cannot be read.

    Examples
    --------
    >>> from mleaudit.audit.similarity.detect.profiles import profile_code
    >>> kernel = "df = read('train.csv')\\nmodel = Forest(trees=317, depth=9, seed=2024)\\n"
    >>> corpus = DetectionCorpus([profile_code(kernel, "k.py")])
    >>> agent = profile_code("import x\\nmodel = Forest(trees=317, depth=9, seed=2024)\\n", "a.py")
    >>> corpus.evidence(agent, 0).copied_tokens
    16
    """

    def __init__(self, references: Sequence[Profile], boilerplate: Sequence[Profile] = (),
                 background: Background | None | str = "default") -> None:
        self.references = list(references)
        self.boilerplate = list(boilerplate)
        self.background = _resolve_background(background)
        self.table = NgramTable.from_profiles(self.references)
        self._shares: ShareIndex | None = None
        self._runs: RunFinder | None = None
        self._memo: OrderedDict[tuple, tuple[Evidence | None, ...]] = OrderedDict()
        self._memo_lock = threading.Lock()
        self._clusters = self._near_duplicates()
        self._classes: list[int] | None = None

    def _near_duplicates(self) -> list[tuple[int, ...]]:
        samples = [p.sample() for p in self.references]
        holders: dict[int, list[int]] = defaultdict(list)
        for index, sample in enumerate(samples):
            for value in sample.tolist():
                holders[value].append(index)
        arrays = {value: np.array(files, dtype=np.int64) for value, files in holders.items()}

        def lookup(values: np.ndarray) -> dict[int, np.ndarray]:
            return {v: arrays[v] for v in values.tolist() if v in arrays}

        sizes = np.array([sample.size for sample in samples], dtype=np.int64)

        def size(ids: np.ndarray) -> np.ndarray:
            return sizes[ids]

        return [near_duplicate_members(i, samples[i], lookup, size) for i in range(len(samples))]

    def near_duplicates(self, index: int) -> tuple[int, ...]:
        """Indices of reference ``index`` and its near-duplicates (left out of its background)."""
        return self._clusters[index]

    def boilerplate_mask(self, agent: Profile) -> bytearray:
        """Agent tokens inside a tile shared with a boilerplate file (1) or not (0)."""
        return boilerplate_mask(agent, self.boilerplate)

    def evidence(self, agent: Profile, index: int, *, mask: bytearray | None = None,
                 query: AgentQuery | None = None) -> Evidence:
        """Evidence that ``agent`` copied code from reference ``index``.

        Parameters
        ----------
        agent : Profile
        index : int
            Position of the reference in ``references``.
        mask : bytearray, optional
            Agent tokens to ignore (1 = boilerplate); computed from ``boilerplate`` when omitted.
        query : AgentQuery, optional
            The agent's lookups, shared between references (:meth:`evidence_all` passes one).

        Returns
        -------
        Evidence
            ``bits`` = information of the best chain of tiles (0 when nothing is shared).
        """
        if mask is None:
            mask = self.boilerplate_mask(agent) if self.boilerplate else None
        members = [self.references[i] for i in self.near_duplicates(index)]
        return reference_evidence(agent, self.references[index], self.table, members, mask=mask, query=query,
                                  background=self.background)

    def evidence_all(self, agent: Profile, wanted: Sequence[bool] | None = None) -> list[Evidence | None]:
        """:meth:`evidence` against every reference, in reference order.

        Parameters
        ----------
        agent : Profile
        wanted : sequence of bool, optional
            Per reference, whether to score it (``None`` in its place otherwise); all by default.

        Returns
        -------
        list of Evidence or None

        Notes
        -----
        The result depends only on the agent's tokens and what is known of them
        (:meth:`Profile.content_key`) and on ``wanted``: the last :data:`_EVIDENCE_MEMO` results
        are kept with the corpus, so code that comes back (a benchmark's starter file in every
        run of a task, the seeds of one agent) is scored once per corpus.
        """
        key = (agent.content_key(), None if wanted is None else np.asarray(wanted, dtype=bool).tobytes())
        with self._memo_lock:
            known = self._memo.get(key)
            if known is not None:
                self._memo.move_to_end(key)
                return list(known)
        found = self._evidence_all(agent, wanted)
        with self._memo_lock:
            self._memo[key] = tuple(found)
            while len(self._memo) > _EVIDENCE_MEMO:
                self._memo.popitem(last=False)
        return found

    def _same_evidence(self) -> list[int]:
        """Per reference, the first reference whose evidence against any agent is the same: the
        same tokens and knowledge (:meth:`Profile.content_key`), and near-duplicates left out of
        its background that are the same, in the same order (a batch's runs hold copies of one
        file; the sums then add up in the same order, so the bits are equal to the last digit)."""
        if self._classes is None:
            keys: dict[tuple, int] = {}
            content = [keys.setdefault(r.content_key(), i) for i, r in enumerate(self.references)]
            first: dict[tuple, int] = {}
            self._classes = [first.setdefault((content[i], tuple(content[m] for m in self.near_duplicates(i))), i)
                             for i in range(len(self.references))]
        return self._classes

    def _evidence_all(self, agent: Profile, wanted: Sequence[bool] | None) -> list[Evidence | None]:
        mask = self.boilerplate_mask(agent) if self.boilerplate else None
        query = AgentQuery(agent)
        same = self._same_evidence()
        wanted_rows = [i for i in range(len(self.references)) if wanted is None or wanted[i]]
        # each reference scored once per class (:meth:`_same_evidence`), its copies get its evidence
        chosen = list(dict.fromkeys(same[i] for i in wanted_rows))
        found: list[Evidence | None] = [None] * len(self.references)
        # the shares of a block of references (each with its near-duplicates) from one lookup
        block = max(1, _SHARE_CELLS // max(1, len(agent.ids)))
        for start in range(0, len(chosen), block):
            part = chosen[start : start + block]
            query.preload_shares(self.references, self._share_index(),
                                 sorted({m for i in part for m in self.near_duplicates(i)}))
            left_outs = [[self.references[m] for m in self.near_duplicates(i)] for i in part]
            bits = token_bits_rows(agent, self.table, left_outs, query=query, background=self.background)
            runs = self._run_finder().columns(agent, part)
            for row, i in enumerate(part):
                found[i] = reference_evidence(agent, self.references[i], self.table, left_outs[row], mask=mask,
                                              query=query, background=self.background, bits=bits[row],
                                              runs=runs[row] if runs[row] is not None else _NO_RUNS)
            query.forget_shares()
        for i in wanted_rows:
            found[i] = found[same[i]]
        return found

    def _run_finder(self) -> RunFinder:
        if self._runs is None:
            self._runs = RunFinder(self.references)
        return self._runs

    def _share_index(self) -> ShareIndex:
        if self._shares is None:
            self._shares = ShareIndex(self.references)
        return self._shares
