"""The similarity step of an audit: the run's code compared with a reference corpus (a folder of
kernels or a corpus index), and what the report keeps of it (the listed pairs, their sources, what
the comparison could not check)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Mapping

from mleaudit.audit.model import Skipped
from mleaudit.audit.pipeline.options import AuditOptions
from mleaudit.audit.report_similarity import copied_share, pair_origins, similarity_agents
from mleaudit.audit.similarity import compare, load_reference_corpus
from mleaudit.audit.similarity.comparison import decodings_of_pairs
from mleaudit.audit.units import CodeUnit


#: A source text longer than this is left out of ``similarity.sources`` (the HTML view then lists
#: the fragments without the code); 300 000 characters is about 6 000 lines of code.
MAX_SOURCE_CHARS = 300_000


def _source_record(text: str | None, cells: tuple = (), kind: str = "file") -> dict[str, Any]:
    if text is None or len(text) > MAX_SOURCE_CHARS:
        why = "unreadable" if text is None else f"{len(text)} characters, over the {MAX_SOURCE_CHARS}-character cap"
        return {"kind": kind, "text": None, "cells": [], "omitted": why}
    return {
        "kind": kind,
        "text": text,
        "cells": [{"cell_index": c.cell_index, "start_line": c.start_line, "end_line": c.end_line} for c in cells],
    }


def _similarity_sources(shown: list, agents: list[CodeUnit], references: list[CodeUnit],
                        host_text: Callable[[str], str | None] | None) -> dict[str, Any]:
    """The texts that the fragment spans of the flagged pairs point into, for side-by-side views.

    Spans of a whole file or notebook are offsets into the unit's text (a notebook's joined code
    cells), so that text is stored with its cell map; spans of code embedded in a log point into
    the log file, so the log's text is stored. Only flagged pairs are covered, to keep reports of
    clean runs small.
    """
    by_agent = {u.path: u for u in agents}
    by_reference = {u.path: u for u in references}
    out: dict[str, dict[str, Any]] = {"agent": {}, "reference": {}}
    for pair in shown:
        if not pair.flagged:
            continue
        unit = by_agent.get(pair.agent_path)
        if pair.agent_path not in out["agent"] and unit is not None:
            if unit.origin is None:
                out["agent"][pair.agent_path] = _source_record(unit.text, unit.cells, unit.source)
            else:
                text = host_text(pair.agent_path) if host_text is not None else None
                out["agent"][pair.agent_path] = _source_record(text, (), "log")
        ref = by_reference.get(pair.reference_path)
        if pair.reference_path not in out["reference"] and ref is not None:
            out["reference"][pair.reference_path] = _source_record(ref.text, ref.cells, ref.source)
    return out


#: Dolos fragments listed per pair in a report (the longest; the figures count them all). Kernels
#: of one competition share hundreds of one-k-gram fragments per pair, which would otherwise make
#: up most of a report; the rules show the five longest as evidence.
REPORT_FRAGMENTS_PER_PAIR = 50


#: Corpus indexes opened by this process, by resolved path: a batch worker audits many runs
#: against one index and keeps its caches (detector profiles, postings) warm between them.
_OPEN_INDEXES: dict[str, Any] = {}


def _open_index(path: Path) -> Any:
    """The corpus index at ``path``, opened once per process (:class:`CorpusIndexError` if unreadable)."""
    from mleaudit.audit.similarity.index import load_corpus_index

    key = str(Path(path).resolve())
    index = _OPEN_INDEXES.get(key)
    if index is None:
        index = load_corpus_index(path)
        index.check_usable()
        _OPEN_INDEXES[key] = index
    return index


def _run_similarity(units: tuple[CodeUnit, ...], options: AuditOptions,
                    score_threshold: float | None = None,
                    host_text: Callable[[str], str | None] | None = None,
                    locations: Mapping[tuple[str, int], str] | None = None,
                    ) -> tuple[dict[str, Any] | None, list, list[Skipped]]:
    if options.corpus_dir is None and options.corpus_index is None:
        return None, [], []
    agents = similarity_agents(units)
    similarity_options = options.similarity
    if score_threshold is not None:
        # `flagged` must mean what the similarity rule decides: the rule's own `score` bound.
        similarity_options = replace(similarity_options, score_threshold=score_threshold)
    # Only the pairs the report lists get full pair reports: the top `top_pairs` in report order
    # and every flagged pair. Each agent file keeps its top pairs by containment first, so the
    # run's top `top_pairs` are exact when max_pairs_per_agent >= top_pairs.
    cap = similarity_options.max_pairs_per_agent
    similarity_options = replace(
        similarity_options,
        max_pairs=options.top_pairs if similarity_options.max_pairs is None else similarity_options.max_pairs,
        max_pairs_per_agent=None if cap is None else max(cap, options.top_pairs),
        max_fragments_per_pair=(REPORT_FRAGMENTS_PER_PAIR if similarity_options.max_fragments_per_pair is None
                                else similarity_options.max_fragments_per_pair),
    )
    if options.corpus_index is not None:
        index = _open_index(options.corpus_index)
        budget: dict[str, Any] = {"bound_budget": None} if options.index_exhaustive else {}
        result = index.compare(agents, replace(similarity_options, kgram_length=index.options.kgram_length,
                                               kgrams_in_window=index.options.kgrams_in_window), **budget)
        # units for which the copy search stopped at its budget: the verdict cannot be clean
        unchecked = [stage for stage in getattr(index, "last_bound_scored", []) if not stage.get("exhaustive", True)]
        # the index also lists its own skipped kernels; the agent files' go to the run's gaps
        ref_skipped = tuple(s for s in result.skipped if s.path not in {u.path for u in agents})
        references: list[CodeUnit] = []
        reference_count = index.info().references
        corpus_label, decodings = str(options.corpus_index), list(result.decodings)
        pairs = list(result.pairs)
    else:
        corpus = load_reference_corpus(options.corpus_dir)
        references, ref_skipped = list(corpus[0]), tuple(corpus[1])
        boilerplate: list[CodeUnit] = []
        for folder in options.boilerplate_dirs:
            units_bp, _ = load_reference_corpus(folder)
            boilerplate.extend(units_bp)
        if not references and agents:
            reason = "no readable reference notebook (.py/.ipynb): code not compared with public kernels"
            ref_skipped = (*ref_skipped, Skipped(path=str(options.corpus_dir), reason=reason))
        result = compare(agents, references, similarity_options, boilerplate=boilerplate, jobs=options.similarity_jobs)
        reference_count, corpus_label, decodings = len(references), str(options.corpus_dir), list(corpus.decodings)
        # The similarity rules see the pairs the comparison keeps (the listed ones).
        pairs = list(result.pairs)
    # The report lists the top pairs in report order, plus every flagged pair past them.
    shown = pairs[: options.top_pairs] + [p for p in pairs[options.top_pairs:] if p.flagged]
    summary = {
        "corpus": corpus_label,
        "reference_count": reference_count,
        "agent_files": sorted({u.path for u in agents}),
        "options": result.options.to_dict(),
        "pairs": [p.to_dict() for p in shown],
        "skipped": [s.to_dict() for s in ref_skipped],
        "sources": _similarity_sources(shown, agents, references, host_text),
        "copied_share": copied_share(pairs, agents),
        # the listed kernels whose bytes were not plain UTF-8 (cp1252, GBK ...), and how each was read
        "decodings": [d.to_dict() for d in decodings_of_pairs(shown, decodings)],
    }
    if options.corpus_index is not None:
        summary["index"] = True
        summary["index_exhaustive"] = options.index_exhaustive  # --index-exhaustive: no budget asked
        summary["search_incomplete"] = [_search_incomplete(stage) for stage in unchecked]
        # code the index was built to ignore is not compared: the report says which
        summary["boilerplate"] = list(index.info().boilerplate)
    # Pairs of code read from a log (an AIDE journal's nodes) name the record they come from.
    origins = pair_origins(shown, agents, locations or {}, host_text)
    for pair, data in zip(shown, summary["pairs"]):
        if id(pair) in origins:
            data["agent_origin"] = origins[id(pair)]
        if pair.agent_total == 0 or pair.reference_total == 0:
            data["too_short"] = True  # no fingerprint on a side: its figures (0 of 0) mean nothing
    return summary, pairs, list(ref_skipped)


def _search_incomplete(stage: Mapping[str, Any]) -> dict[str, Any]:
    """What the report says of a code unit whose copy search through the index was not exhaustive
    (an entry of :attr:`CorpusIndex.last_bound_scored`)."""
    # the gap names the file; the reason names the record of a log it was read from
    where = "" if stage.get("start_line") is None else f" (the code from line {stage['start_line']})"
    if not stage.get("seed_bound"):
        return {"path": stage["path"], "start_line": stage.get("start_line"), "bounded": None, "unchecked": None,
                "reason": f"copy search{where}: the corpus index holds no tile seeds (built before they were stored), "
                          "so only its first candidates and a few further sources were scored; rebuild the index "
                          "(mleaudit corpus build) for the exhaustive search"}
    unchecked = stage["bounded"] - stage["windowed"] + stage["window"] - stage["checked"]
    return {"path": stage["path"], "start_line": stage.get("start_line"), "bounded": stage["bounded"],
            "unchecked": unchecked,
            "reason": f"copy search{where} through the corpus index stopped at its budget: {unchecked} of the "
                      f"{stage['bounded']} references its seed bound could not exclude were neither excluded by a "
                      "tighter bound nor scored (--index-exhaustive checks every one)"}
