"""Comparing agent code with the indexed corpus: :meth:`CorpusIndex.compare`.

A query answers in two steps: candidate retrieval from the postings
(:mod:`~mleaudit.audit.similarity.index.retrieval`), then **exact scoring** of the candidates with
the pair code of :func:`mleaudit.audit.similarity.compare`
(:func:`mleaudit.audit.similarity.pairs.pair_report`) on the stored fingerprints, so every Dolos
figure (similarity, containments, longest fragment, total overlap, fragments and their spans)
equals what brute force reports for that pair. The copy detector scores the same pairs and the
references its bounded search finds (:mod:`~mleaudit.audit.similarity.index.search`), with the
background of :mod:`~mleaudit.audit.similarity.index.detector_query`.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from mleaudit.audit.model import Skipped
from mleaudit.audit.similarity import SimilarityOptions, SimilarityReport
from mleaudit.audit.similarity.comparison import decodings_of_pairs
from mleaudit.audit.similarity.corpus import TextDecoding, reference_id
from mleaudit.audit.similarity.detect import Evidence, Profile, boilerplate_mask, profile_code
from mleaudit.audit.similarity.fingerprint_index import FingerprintIndex, IndexedFile, Role
from mleaudit.audit.similarity.index.blobs import _decode_record
from mleaudit.audit.similarity.index.detector_query import _DetectorQuery
from mleaudit.audit.similarity.index.format import _KEY_STRIDE, CorpusIndexError
from mleaudit.audit.similarity.index.retrieval import DEFAULT_MIN_CONTAINMENT, _check_fraction, _Retrieving
from mleaudit.audit.similarity.index.search import DEFAULT_BOUND_BUDGET, _bound_search, _score_candidates
from mleaudit.audit.similarity.index.storage import _guarded
from mleaudit.audit.similarity.index.stored_tokens import _StoredTokens
from mleaudit.audit.similarity.pairs import PairReport, pair_report
from mleaudit.audit.units import CodeUnit

#: Pairs scored exactly per agent unit by :meth:`CorpusIndex.compare` unless told otherwise:
#: structural fingerprints are generic, so on a large corpus tens of thousands of references pass
#: any containment threshold that partial copies also pass, and scoring all of them takes minutes.
#: Five keeps one agent run of a few files under a second on a quarter of a million notebooks
#: (``benchmarks/corpus_index.py``); the further sources below keep the flagged copies that a
#: larger ``top`` finds.
DEFAULT_TOP = 5
#: Further sources the copy detector scores per agent unit, past the first ``top`` candidates
#: (:meth:`CorpusIndex.compare`).
DEFAULT_SOURCES = 3
#: Candidates past ``top`` looked at for further sources (the forks of one popular kernel can
#: fill hundreds of places).
_SOURCE_WINDOW = 1000


class _Comparing(_Retrieving):
    """:meth:`compare`: retrieval, the copy detector's search, exact scoring."""

    @_guarded
    def compare(
        self,
        agents: Sequence[CodeUnit],
        options: SimilarityOptions | None = None,
        *,
        min_containment: float = DEFAULT_MIN_CONTAINMENT,
        top: int | None = DEFAULT_TOP,
        sources: int = DEFAULT_SOURCES,
        bound_budget: int | None = DEFAULT_BOUND_BUDGET,
        include_corpus_skipped: bool = True,
    ) -> SimilarityReport:
        """Compare agent code with the indexed corpus: :func:`mleaudit.audit.similarity.compare` on the candidates.

        Parameters
        ----------
        agents : sequence of CodeUnit
            Audited code.
        options : SimilarityOptions, optional
            Defaults to :attr:`options`. ``kgram_length`` and ``kgrams_in_window`` must be the
            index's; ``max_doc_fraction``, ``min_fragment_kgrams``, ``display_threshold`` and
            ``max_fragments_per_pair`` apply as in :func:`mleaudit.audit.similarity.compare`
            (document frequencies count the whole corpus).
        min_containment : float, default DEFAULT_MIN_CONTAINMENT
            Candidate threshold on ``max(agent_containment, reference_containment)``; the
            effective threshold is the larger of this and ``options.display_threshold``.
        top : int or None, default DEFAULT_TOP
            Score only the first ``top`` candidates per agent unit in report order (agent
            containment is known exactly before scoring), which bounds the time on a large
            corpus: the pairs are then exactly brute force's first ``top`` pairs of that unit
            (among those above the threshold). ``None`` scores every candidate (minutes on a
            corpus of 10**5 notebooks). Each scored pair costs about 10-30 ms, most of it the copy
            detector's background and the fragments; the default 5 keeps a run of a few files
            under a second on a quarter of a million notebooks.
        sources : int, default DEFAULT_SOURCES
            Only for an index written before tile seeds were stored (no ``seed_postings`` in its
            meta; rebuild it for the exact search below). With ``top``, also look at the next candidates (up to 1,000 more) for references
            that are not forks of those already scored (the detector's near-duplicate test on
            sampled 8-grams), take the first ``sources`` of them, one per further source, and
            add each pair the copy detector flags. Forks of one popular kernel often fill the first
            ``top`` places while the kernel a partial copy came from ranks just below; ``0``
            scores the first ``top`` candidates only.
        bound_budget : int or None, default DEFAULT_BOUND_BUDGET
            The copy detector's search (an index with tile seeds): per Python agent unit, every
            reference whose evidence bound from the seed postings (:func:`evidence_bounds`)
            reaches the threshold's bits is checked again with the window bound
            (:func:`window_bounds`), those that pass with the bound from the pair's tiles
            (:meth:`_DetectorQuery.tile_bounds`), best window first, and scored exactly when that
            one reaches it too; each flagged pair is kept. All are upper bounds of the evidence,
            so every reference brute force flags is found, with its score. With ``top``, a unit's
            search is exhaustive when it needs at most ``bound_budget`` tile bounds and four times
            as many window bounds; otherwise it is cut to a best effort of at most 48 tile bounds
            (:attr:`last_bound_scored` says for which units), whose candidates are scored best
            bound first until the best evidence is above every bound left (the same flagged
            files and best kernels as scoring them all; fewer of a copied kernel's forks
            listed); ``top=None`` or ``bound_budget=None`` checks them all.
        include_corpus_skipped : bool, default True
            List the index's skipped files in the report, as :func:`mleaudit.audit.similarity.compare`
            does for a :class:`ReferenceCorpus`.

        Returns
        -------
        SimilarityReport
            Pairs from :func:`mleaudit.audit.similarity.pairs.pair_report` on the stored fingerprints:
            every Dolos figure and fragment equals the brute-force pair, and so do the copy
            detector's ``score``, ``flagged`` (``score >= options.score_threshold``) and
            ``evidence_fragments`` for Python pairs, whose background is the whole indexed
            corpus (see the module docstring). A pair the detector flags is kept below
            ``display_threshold`` when it is a candidate (brute force keeps every flagged pair;
            the index only scores candidates). With ``top``, the pairs are the first ``top``
            candidates' in report order plus the flagged pairs of further sources.
            ``corpus_digest`` is the index's.

        Raises
        ------
        CorpusIndexError
            If the options' k-gram length or window differ from the index's, or a stored record
            or detector profile is corrupt.
        """
        options = self._check_options(options)
        _check_fraction("min_containment", min_containment)
        if top is not None and top < 1:
            raise CorpusIndexError(f"top must be >= 1, got {top}")
        if isinstance(sources, bool) or not isinstance(sources, int) or sources < 0:
            raise CorpusIndexError(f"sources must be an integer >= 0, got {sources!r}")
        if bound_budget is not None and (isinstance(bound_budget, bool) or not isinstance(bound_budget, int)
                                         or bound_budget < 0):
            raise CorpusIndexError(f"bound_budget must be an integer >= 0 or None, got {bound_budget!r}")
        threshold = max(float(min_containment), float(options.display_threshold))
        agent_index = FingerprintIndex(self._k, self._w)
        stats = self._stats()
        skipped: list[Skipped] = list(self.skipped()) if include_corpus_skipped else []
        chosen: list[tuple[CodeUnit, IndexedFile, list[int], frozenset[int]]] = []
        further: list[list[int]] = []  # per unit: the next candidates, for further sources
        paths: dict[int, str] = {}
        window = 0 if top is None or not sources else _SOURCE_WINDOW
        for unit in agents:
            entry = self._agent_entry(unit, agent_index)
            if isinstance(entry, Skipped):
                skipped.append(entry)
                continue
            # every candidate's reference containment is needed without ``top``
            retrieval = self._retrieve(entry, unit.language, options, stats, counts=top is None)
            ranked = self._ranked(retrieval, threshold, None if top is None else top + window)
            paths.update((doc, path) for _, path, doc in ranked)
            chosen.append((unit, entry, [doc for _, _, doc in ranked[:top]], retrieval.ignored))
            further.append([doc for _, _, doc in ranked[top:]] if top is not None else [])
        # The copy detector reads Python: one profile per Python agent unit.
        python = [i for i, (unit, _, _, _) in enumerate(chosen) if unit.language == "python"]
        agent_profiles = {i: profile_code(chosen[i][0].text, chosen[i][0].path) for i in python}
        detector = _DetectorQuery(self, [agent_profiles[i] for i in python], stats[2]) if python else None
        position = {i: n for n, i in enumerate(python)}
        masks: dict[int, bytearray | None] = {}
        # Further sources: past the first `top` candidates, the best reference of each of up to
        # `sources` other sources (not a fork of a reference already chosen), kept when the
        # detector flags it. The first `top` candidates are often forks of one popular kernel
        # while the kernel a partial copy came from ranks a little lower.
        found_further: dict[tuple[int, int], tuple[Evidence, Profile, int]] = {}
        exact = bool(self._meta.get("seed_postings"))
        self.last_bound_scored = []
        if detector is not None and not exact:
            # without tile seeds the detector's search is a heuristic (the first candidates and a
            # few further sources), never exhaustive
            for i in python:
                unit = chosen[i][0]
                self.last_bound_scored.append({
                    "path": unit.path, "start_line": unit.origin.start_line if unit.origin is not None else None,
                    "seed_bound": False, "exhaustive": False})
        for i, docs in enumerate(further):
            if detector is None or i not in position or not (docs or exact):
                continue
            if detector.boilerplate:
                masks[i] = boilerplate_mask(agent_profiles[i], detector.boilerplate)
            bounds = None
            if exact:
                candidates, bounds, searched = _bound_search(detector, position[i], chosen[i][0], chosen[i][2],
                                                             stats[0] >= 0, docs, options.score_threshold,
                                                             None if top is None else bound_budget, self.path)
                self.last_bound_scored.append(searched)
                if searched["exhaustive"]:
                    bounds = None  # every candidate is scored: every flagged pair is listed
            else:
                candidates = detector.distinct_sources(chosen[i][2], docs, sources)
            flagged, count = _score_candidates(detector, position[i], candidates, paths, masks.get(i),
                                               options.score_threshold, bounds)
            found_further.update(((i, doc), found) for doc, found in flagged.items())
            if exact:
                searched["scored"] = count
        references = self._references(sorted({doc for _, _, docs, _ in chosen for doc in docs}
                                             | {doc for _, doc in found_further}))
        extra_ignored = self._common_hashes(references, options, stats[1])
        pairs: list[PairReport] = []
        for i, (unit, entry, docs, ignored) in enumerate(chosen):
            ignored = ignored | extra_ignored
            if detector is not None and i in position and i not in masks:
                masks[i] = boilerplate_mask(agent_profiles[i], detector.boilerplate) if detector.boilerplate else None
            if detector is not None and i in position:
                detector.profiles([doc for doc in docs if references[doc][1].file.language == "python"],
                                  {doc: references[doc][0].path for doc in docs})
            flagged_further = [doc for (j, doc) in found_further if j == i]
            for doc in [*docs, *flagged_further]:
                reference_unit, reference_entry = references[doc]
                if reference_entry.file.language != unit.language:
                    continue
                if (i, doc) in found_further:
                    found = found_further[(i, doc)]
                else:
                    found = detector.evidence(position[i], doc, masks[i]) if detector is not None and i in position else None
                evidence = reference_profile = None
                if found is not None:
                    evidence, reference_profile, chars = found
                    reference_entry.file.chars = chars
                report = pair_report(
                    entry,
                    reference_entry,
                    ignored,
                    reference_id=reference_id(reference_unit.path),
                    min_fragment_kgrams=options.min_fragment_kgrams,
                    agent_unit=unit,
                    reference_unit=reference_unit,
                    evidence=evidence,
                    agent_profile=agent_profiles.get(i),
                    reference_profile=reference_profile,
                    score_threshold=options.score_threshold,
                    max_fragments=options.max_fragments_per_pair,
                )
                # as in brute force, a flagged pair is kept whatever its containment
                if report.flagged or max(report.agent_containment, report.reference_containment) >= options.display_threshold:
                    pairs.append(report)
        pairs.sort(key=PairReport.sort_key)
        decodings = [TextDecoding(unit.path, *entry.file.decoding)  # type: ignore[attr-defined]
                     for unit, entry in references.values() if entry.file.decoding is not None]
        return SimilarityReport(
            options=options,
            pairs=tuple(pairs),
            skipped=tuple(skipped),
            corpus_digest=str(self._meta.get("corpus_digest", "")),
            decodings=decodings_of_pairs(pairs, decodings),
        )

    def _references(self, ids: list[int]) -> dict[int, tuple[CodeUnit, IndexedFile]]:
        loaded = {}
        for doc, (path, blob) in self._open_backend().records(ids).items():
            record = _decode_record(blob, f"{self.path}: {path}", self._k)
            entry = IndexedFile.from_hashes(
                id=doc,
                role=Role.REFERENCE,
                file=_StoredTokens(path, record, self._k),  # type: ignore[arg-type]
                hashes=record.hashes,
                kgram_starts=record.kgram_starts,
                kgram_length=self._k,
            )
            unit = CodeUnit(path=path, language=record.language, text="", cells=record.cells, source=record.source)
            loaded[doc] = (unit, entry)
        lost = sorted(set(ids) - set(loaded))
        if lost:
            # the postings or profiles name a reference whose record is gone
            raise CorpusIndexError(f"{self.path}: corrupt index: reference id {lost[0]} is in the postings or "
                                   f"profiles but has no record ({len(lost)} such id(s)); rebuild the index")
        return loaded

    def _common_hashes(self, references: Mapping[int, tuple[CodeUnit, IndexedFile]], options: SimilarityOptions,
                       n_references: int) -> frozenset[int]:
        """Hashes of the candidates found in more than ``max_doc_fraction`` of the references."""
        if options.max_doc_fraction is None or not references:
            return frozenset()
        keys: dict[int, int] = {}
        for _, entry in references.values():
            code = self._languages.index(entry.file.language) * _KEY_STRIDE
            for value in entry.occurrences:
                keys[value + code] = value
        limit = options.max_doc_fraction * n_references
        frequencies = self._open_backend().frequencies(sorted(keys))
        return frozenset(keys[key] for key, count in frequencies.items() if count > limit)
