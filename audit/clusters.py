"""Copy clusters across a batch: runs and public notebooks linked by flagged similarity pairs.

One run copying a notebook is in that run's report. What a batch adds is the pattern: several
seeds or agents copying the same notebook, or runs whose code is copied from one another. The
graph (networkx) has a node per run and per reference notebook and an edge per similarity pair
that reaches the policy threshold of ``rules/plagiarism/`` (``score >= threshold``, the same
decision as in the run reports):

- run — notebook edges come from each run's report (``similarity.pairs`` with ``flagged``);
- run — run edges come from comparing the runs' Python code with each other
  (:func:`mleaudit.audit.similarity.compare`, every run's distinct files against every other run's,
  with the score and threshold of the run reports: the detector's background model is the
  batch's own code plus the shipped background of ordinary ML code, so two runs that both
  write ``train_test_split(...)``, ``fit`` and ``roc_auc_score`` the usual way are not a copy).
  Pairs within one run are not measured, and the edge between two runs is their flagged pair
  of highest score (only that pair's fragments are built); the benchmark's starter code every run of a task
  begins with is ignored, when at least two runs declare it (:mod:`mleaudit.audit.starter`: not compared,
  its fingerprints boilerplate). The comparison is all-pairs, so above
  :data:`MAX_RUN_CODE_FILES` files it is skipped and the summary says so.

Every edge states its evidence (``summary``: "shares 41 lines in 3 fragments with …; copy
score 0.91", ``copied_lines``, ``copied_fragments``); only flagged pairs become edges. A side whose
code was read from a log names its record (``left_origin``/``right_origin``: an AIDE journal's
node, its step and id), so the edges of one journal's nodes are told apart.

A cluster is a connected component with at least two runs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import networkx as nx

from mleaudit.audit.units import CodeUnit

__all__ = ["MAX_RUN_CODE_FILES", "RunCode", "copy_clusters"]

#: Above this many distinct Python files over all runs, run-to-run comparison is skipped (it is
#: quadratic in the number of files).
MAX_RUN_CODE_FILES = 600


@dataclass(frozen=True, slots=True, kw_only=True)
class RunCode:
    """A run's identity and its code units, for run-to-run comparison.

    Attributes
    ----------
    run_id : str
    units : tuple of CodeUnit
    locations : mapping of (path, start offset) to str
        The place of each log record in its log (``nodes[3].code``), by the record's path and
        start, to name the record of a unit read from a log.
    host_text : callable, optional
        The text of a run file by path (an AIDE journal, for its nodes' ids and steps).
    starter : tuple of CodeUnit
        The benchmark's starter files among ``units`` (:func:`mleaudit.audit.starter.starter_units`).
    """

    run_id: str
    units: tuple[CodeUnit, ...]
    locations: Mapping[tuple[str, int], str] = field(default_factory=dict)
    host_text: Callable[[str], str | None] | None = None
    starter: tuple[CodeUnit, ...] = ()


def _distinct_python(runs: Sequence[RunCode], starter_texts: set[str]) -> list[tuple[str, CodeUnit]]:
    from mleaudit.audit.report_similarity import similarity_agents

    # as in the run reports: the scaffold's and the operator's code (a starter file the harness
    # shows in its prompt) is not the agent's, nor is the benchmark's starter of any run
    return [(run.run_id, unit) for run in runs for unit in similarity_agents(run.units)
            if unit.text not in starter_texts]


def _starter(runs: Sequence[RunCode]) -> list[CodeUnit]:
    """The starter code at least two runs declare, each text once: every run of a task starts
    from it, and what one run alone declares (from files its agent may write) clears nothing."""
    first: dict[str, CodeUnit] = {}
    declared: dict[str, set[str]] = {}
    for run in runs:
        for unit in run.starter:
            first.setdefault(unit.text, unit)
            declared.setdefault(unit.text, set()).add(run.run_id)
    return [unit for text, unit in first.items() if len(declared[text]) >= 2]


#: What the processes comparing groups of runs' files inherit (set in the parent before they fork).
_GROUPS_JOB: tuple[Sequence[CodeUnit], Sequence[CodeUnit], Any, Mapping[str, str]] | None = None
_GROUPS_LOCK = threading.Lock()


def _groups(units: Sequence[CodeUnit]) -> list[list[int]]:
    """The positions of ``units`` in groups that keep each file (a path) and each text in one group,
    in their order, largest groups (by text) first."""
    parent = list(range(len(units)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[tuple[str, str], int] = {}
    for i, unit in enumerate(units):
        for key in (("path", unit.path), ("text", unit.text)):
            j = first.setdefault(key, i)
            parent[root(i)] = root(j)
    members: dict[int, list[int]] = {}
    for i in range(len(units)):
        members.setdefault(root(i), []).append(i)
    return sorted(members.values(), key=lambda group: -sum(len(units[i].text) for i in group))


def _best_positions(pairs: Sequence[tuple[bool, float, float, str, str]], owner: Mapping[str, str]) -> list[int]:
    """Of ``(flagged, score, agent containment, agent path, reference path)`` pairs, the positions of
    those that may be the edge between their two runs: flagged, between two runs, with the best
    score and, among them, first in report order (agent containment descending, reference path,
    agent path) — all of them where that still ties, so that the best of several calls' best is
    the best of one call."""
    best: dict[tuple[str, str], tuple[tuple, list[int]]] = {}
    for i, (flagged, score, containment, agent_path, reference_path) in enumerate(pairs):
        left, right = owner.get(agent_path), owner.get(reference_path)
        if not flagged or left is None or right is None or left == right:
            continue
        key = (-score, -containment, reference_path, agent_path)
        runs = (min(left, right), max(left, right))
        known = best.get(runs)
        if known is None or key < known[0]:
            best[runs] = (key, [i])
        elif key == known[0]:
            known[1].append(i)
    return sorted(i for _, chosen in best.values() for i in chosen)


def _best_per_run_pair(owner: Mapping[str, str]) -> Callable[[Sequence[Any]], list[int]]:
    """A ``select`` for :func:`mleaudit.audit.similarity.compare` (:func:`_best_positions`): only
    the pairs that may be an edge become reports."""

    def select(measured: Sequence[Any]) -> list[int]:
        return _best_positions([(pair.flagged, pair.score, pair.agent_containment, pair.agent.path,
                                 pair.reference.path) for pair in measured], owner)

    return select


def _compare_group(group: Sequence[int]) -> list[Any]:
    from mleaudit.audit.similarity import compare

    if _GROUPS_JOB is None:  # set before the pool starts
        raise RuntimeError("run comparison worker started without its units")
    units, starter, options, owner = _GROUPS_JOB
    return list(compare([units[i] for i in group], units, options, boilerplate=starter, owners=owner,
                        select=_best_per_run_pair(owner), public_references=False).pairs)


def _compared(units: Sequence[CodeUnit], starter: Sequence[CodeUnit], options: Any, owner: Mapping[str, str],
              jobs: int) -> list[Any]:
    """For each pair of runs with a flagged pair between their files, the pairs of ``compare(units,
    units, options, boilerplate=starter)`` that may be its edge (:func:`_best_per_run_pair`), in
    report order; pairs within one run are not measured.

    With ``jobs > 1`` the files are compared group by group (:func:`_groups`) in forked processes,
    each against all of ``units``: a file's pairs depend only on the file and the references
    (the detector's background model is the references'), so the best of each group's best are
    the best of one call, and a stable sort on the report order puts them in its order (pairs
    that tie on it share an agent path, hence a group, in which they keep the call's order). A
    group holds every copy of a text, so the detector scores each text once, as in one process;
    the references are prepared here once and inherited
    (:func:`mleaudit.audit.similarity.reference_side.reference_side`).
    """
    import multiprocessing

    from mleaudit.audit.similarity import compare

    groups = _groups(units)
    workers = min(jobs, len(groups))
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods() or multiprocessing.current_process().daemon:
        return list(compare(units, units, options, boilerplate=starter, jobs=jobs, owners=owner,
                            select=_best_per_run_pair(owner), public_references=False).pairs)
    from mleaudit.audit.similarity.measuring import ignore_sigint
    from mleaudit.audit.similarity.reference_side import reference_side

    global _GROUPS_JOB
    side = reference_side(units, starter, options, keep=False)
    if side.detected:
        side.detector()
    with _GROUPS_LOCK:
        _GROUPS_JOB = (units, starter, options, owner)
        try:
            with multiprocessing.get_context("fork").Pool(workers, initializer=ignore_sigint) as pool:
                found = pool.map(_compare_group, groups, chunksize=1)
        finally:
            _GROUPS_JOB = None
    pairs = sorted((pair for pairs in found for pair in pairs), key=lambda pair: pair.sort_key())
    return [pairs[i] for i in _best_positions([(pair.flagged, pair.score, pair.agent_containment, pair.agent_path,
                                                 pair.reference_path) for pair in pairs], owner)]


def _comparison_options(score_threshold: float) -> Any:
    from mleaudit.audit.similarity import SimilarityOptions

    # Only flagged pairs become edges, and a report keeps every flagged pair whatever its caps:
    # no other pair is kept, so none is scored that cannot be flagged.
    return SimilarityOptions(score_threshold=score_threshold, display_threshold=1.0, max_pairs_per_agent=0, max_pairs=0)


def _run_pairs(runs: Sequence[RunCode], score_threshold: float, jobs: int = 1) -> tuple[list[dict[str, Any]], str | None]:
    from dataclasses import replace

    from mleaudit.audit.report_similarity import log_origin, unit_of_pair

    starter = _starter(runs)
    owned = _distinct_python(runs, {unit.text for unit in starter})
    if len(owned) > MAX_RUN_CODE_FILES:
        return [], f"{len(owned)} distinct Python files in the batch, over the {MAX_RUN_CODE_FILES}-file cap"
    if len({run_id for run_id, _ in owned}) < 2:
        return [], None
    # Paths are made unique per run, so a pair names both runs.
    units = [replace(unit, path=f"{run_id}/{unit.path}") for run_id, unit in owned]
    owner = {unit.path: run_id for unit, (run_id, _) in zip(units, owned)}
    by_path: dict[str, list[CodeUnit]] = {}
    original: dict[int, CodeUnit] = {}
    for unit, (_, own) in zip(units, owned):
        by_path.setdefault(unit.path, []).append(unit)
        original[id(unit)] = own
    code_of = {run.run_id: run for run in runs}
    journals: dict[str, dict] = {}

    def origin(pair: Any, side: str) -> dict[str, Any] | None:
        """The log record of one side of a pair (``None`` for a file of its own)."""
        if side == "agent":
            unit = unit_of_pair(pair, by_path)
        else:
            candidates = by_path.get(pair.reference_path) or []
            fragments = tuple(pair.evidence_fragments) or tuple(pair.fragments)
            start = fragments[0].reference.start_byte if fragments else None
            unit = candidates[0] if len(candidates) == 1 else next(
                (u for u in candidates if u.origin is not None and start is not None
                 and u.origin.start_byte <= start < max(u.origin.end_byte, u.origin.start_byte + 1)), None)
        if unit is None:
            return None
        run = code_of[owner[unit.path]]
        return log_origin(original[id(unit)], run.locations, run.host_text, journals.setdefault(run.run_id, {}))
    options = _comparison_options(score_threshold)
    # per pair of runs, its best pair: the highest score, then report order, then the places of
    # its two sides (a log's records share its path)
    best: dict[tuple[str, str], tuple[tuple, dict[str, Any]]] = {}
    for pair in _compared(units, starter, options, owner, jobs):
        left, right = owner.get(pair.agent_path), owner.get(pair.reference_path)
        if not pair.flagged or left is None or right is None or left == right:
            continue
        left_origin, right_origin = origin(pair, "agent"), origin(pair, "reference")
        key = (-pair.score, pair.sort_key(), repr([((o or {}).get("location"), (o or {}).get("start_line"))
                                                   for o in (left_origin, right_origin)]))
        runs = (min(left, right), max(left, right))
        if runs in best and best[runs][0] <= key:
            continue
        best[runs] = (key, {"left_run": left, "right_run": right, "left_path": pair.agent_path,
                            "right_path": pair.reference_path, "left_origin": left_origin,
                            "right_origin": right_origin, "score": pair.score,
                            "longest_fragment": pair.longest_fragment, "copied_lines": pair.copied_lines,
                            "copied_fragments": pair.copied_fragments, "summary": pair.summary})
    edges = [edge for _, edge in sorted(best.values(), key=lambda item: item[0])]
    return edges, None


def copy_clusters(reports: Mapping[str, Mapping[str, Any]], runs: Sequence[RunCode] = (),
                  score_threshold: float | None = None, jobs: int = 1) -> dict[str, Any]:
    """Connected components of runs and notebooks joined by flagged similarity pairs.

    Parameters
    ----------
    reports : mapping
        Run id → the run's audit report dict (its ``similarity.pairs`` give run — notebook edges).
    runs : sequence of RunCode
        The runs' code for run — run edges (empty: none are computed).
    score_threshold : float, optional
        The policy threshold on ``score``; defaults to the shipped plagiarism rule's.
    jobs : int, default 1
        Worker processes for the run — run comparison (:func:`mleaudit.audit.similarity.compare`'s
        ``jobs``; the same pairs and scores for any value).

    Returns
    -------
    dict
        ``clusters``: list of ``{"runs", "notebooks", "edges"}`` (components with at least two
        runs, largest first; edges as ``{"kind", "left", "left_kind", "left_file", "left_origin",
        "right", "right_kind", "right_file", "right_origin", "score", "longest_fragment", "copied_lines",
        "copied_fragments", "summary"}`` with ``kind`` ``run-notebook`` or ``run-run`` and each
        side's file; the evidence fields are ``None`` for a report written before they existed);
        ``run_pairs_skipped``: why run — run edges were not computed, or ``None``.
    """
    if score_threshold is None:
        from mleaudit.audit.score_threshold import load_score_threshold

        score_threshold = load_score_threshold()
    graph = nx.Graph()
    for run_id, report in reports.items():
        graph.add_node(("run", run_id))
        for pair in (report.get("similarity") or {}).get("pairs", []):
            if not pair.get("flagged"):
                continue
            notebook = ("notebook", str(pair.get("reference_path")))
            graph.add_edge(("run", run_id), notebook, kind="run-notebook", files={run_id: pair.get("agent_path")},
                           origins={run_id: pair.get("agent_origin")},
                           score=pair.get("score"), longest_fragment=pair.get("longest_fragment"),
                           copied_lines=pair.get("copied_lines"), copied_fragments=pair.get("copied_fragments"),
                           summary=pair.get("summary"))
    run_edges, skipped = _run_pairs(runs, score_threshold, jobs) if runs else ([], None)
    for edge in run_edges:
        a, b = ("run", edge["left_run"]), ("run", edge["right_run"])
        if graph.has_edge(a, b) and graph.edges[a, b]["score"] >= edge["score"]:
            continue
        graph.add_edge(a, b, kind="run-run", files={edge["left_run"]: edge["left_path"], edge["right_run"]: edge["right_path"]},
                       origins={edge["left_run"]: edge["left_origin"], edge["right_run"]: edge["right_origin"]},
                       score=edge["score"], longest_fragment=edge["longest_fragment"],
                       copied_lines=edge["copied_lines"], copied_fragments=edge["copied_fragments"],
                       summary=edge["summary"])
    clusters = []
    for component in nx.connected_components(graph):
        run_nodes = sorted(name for kind, name in component if kind == "run")
        if len(run_nodes) < 2:
            continue
        edges = []
        # by both ends in order: which end an edge view gives first follows the component's set order,
        # which changes with the process's string hashing
        for a, b, data in sorted(graph.subgraph(component).edges(data=True), key=lambda e: tuple(sorted(e[:2]))):
            left, right = sorted((a, b))
            files, origins = data["files"], data.get("origins", {})
            edges.append({
                "kind": data["kind"],
                "left": left[1], "left_kind": left[0], "left_file": files.get(left[1]),
                "left_origin": origins.get(left[1]),
                "right": right[1], "right_kind": right[0], "right_file": files.get(right[1], right[1]),
                "right_origin": origins.get(right[1]),
                "score": data["score"], "longest_fragment": data["longest_fragment"],
                "copied_lines": data.get("copied_lines"), "copied_fragments": data.get("copied_fragments"),
                "summary": data.get("summary"),
            })
        clusters.append({
            "runs": run_nodes,
            "notebooks": sorted(name for kind, name in component if kind == "notebook"),
            "edges": edges,
        })
    clusters.sort(key=lambda c: (-len(c["runs"]), c["runs"]))
    return {"score_threshold": score_threshold, "clusters": clusters, "run_pairs_skipped": skipped}
