"""Helpers shared by the report formats that render a report's JSON form (markdown, SARIF, HTML).

These formats read ``AuditReport.to_dict()`` (the JSON contract of ``audit/schemas/report.schema.json``)
rather than the dataclasses, so a stored JSON report renders the same way as a fresh one and a batch
of stored reports can be rendered without re-auditing.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any, Iterable, Mapping

from mleaudit.audit.formatters.json import json_pure
from mleaudit.audit.report import AuditReport

__all__ = [
    "as_report_dict",
    "as_report_dicts",
    "medal_of",
    "grade_status",
    "span_location",
    "code_language",
    "flagged_pairs",
    "fragment_side_label",
    "pair_fragments",
    "carries_reviews",
    "review_line",
    "SEVERITY_ORDER",
    "TOO_SHORT",
    "pair_agent_label",
    "pair_origin_label",
    "pair_too_short",
    "cluster_side_label",
    "copied_share_line",
]

#: What a pair of files without one fingerprint each shows instead of figures of 0.
TOO_SHORT = "too short to compare"

#: Severity labels from the most to the least severe (the order findings are listed in).
SEVERITY_ORDER = ("critical", "high", "medium", "low", "info")

_LANGUAGES = {
    ".py": "python",
    ".ipynb": "python",
    ".sh": "bash",
    ".bash": "bash",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
    ".md": "markdown",
    ".csv": "csv",
}


def as_report_dict(report: AuditReport | Mapping[str, Any]) -> dict[str, Any]:
    """The report as JSON would hold it: lists for tuples, ``None`` for NaN and infinity.

    Parameters
    ----------
    report : AuditReport or mapping
        A report object, or a report dict already loaded from JSON.

    Returns
    -------
    dict
        A fresh, JSON-pure copy (:func:`mleaudit.audit.formatters.json.json_pure`).
    """
    data = report.to_dict() if isinstance(report, AuditReport) else report
    return json_pure(data)


def as_report_dicts(reports: AuditReport | Mapping[str, Any] | Iterable[AuditReport | Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One report or many, each through :func:`as_report_dict` (a single report becomes a list of one)."""
    if isinstance(reports, (AuditReport, Mapping)):
        return [as_report_dict(reports)]
    return [as_report_dict(r) for r in reports]


def medal_of(grade: Mapping[str, Any] | None) -> str:
    """``"gold"``, ``"silver"``, ``"bronze"`` or ``"none"`` from MLE-bench's medal booleans."""
    if not grade:
        return "none"
    return next((m for m in ("gold", "silver", "bronze") if grade.get(f"{m}_medal")), "none")


def grade_status(grade: Mapping[str, Any] | None, meta: Mapping[str, Any]) -> str | None:
    """Why there is no score to show (not graded, no submission, invalid submission, or a valid
    submission whose metric is undefined), else ``None``."""
    if grade is None:
        return f"not graded: {meta.get('grade_skipped') or 'no competition given'}"
    if not grade.get("submission_exists"):
        return "no submission.csv in the run"
    if not grade.get("valid_submission"):
        return f"invalid submission: {grade.get('error')}"
    if grade.get("score") is None:
        return f"valid submission without a score, no medal: {grade.get('error')}"
    return None


def span_location(path: str, start_line: int | None, end_line: int | None) -> str:
    """``path:12`` or ``path:12-14`` (``path`` alone when the line is unknown)."""
    if not start_line:
        return path
    if end_line and end_line != start_line:
        return f"{path}:{start_line}-{end_line}"
    return f"{path}:{start_line}"


def code_language(path: str) -> str:
    """A highlighter language name for ``path`` (``python``, ``bash``, ``json``, ... or ``text``)."""
    return _LANGUAGES.get(PurePosixPath(path).suffix.lower(), "text")


def flagged_pairs(similarity: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """The pairs whose copy score reached the plagiarism rule's bound, in report order."""
    if not similarity:
        return []
    return [p for p in similarity.get("pairs", []) if p.get("flagged")]


def pair_fragments(pair: Mapping[str, Any]) -> tuple[str, list[Mapping[str, Any]]]:
    """The fragments a reviewer should look at for ``pair``, and which list they come from.

    The copy detector's chain (``evidence_fragments``) is what flagged the pair, so it is shown
    when present; otherwise Dolos's fragments.

    Returns
    -------
    (str, list)
        ``("evidence", fragments)`` or ``("dolos", fragments)``.
    """
    evidence = list(pair.get("evidence_fragments") or [])
    if evidence:
        return "evidence", evidence
    return "dolos", list(pair.get("fragments") or [])


def carries_reviews(report: Mapping[str, Any]) -> bool:
    """Whether reviewer decisions were applied to the report (``meta.review``, set when the audit
    read a baseline file) or any finding carries one (``finding.review``)."""
    return "review" in report.get("meta", {}) or any("review" in f for f in report.get("findings", []))


def review_line(review: Mapping[str, Any]) -> str:
    """``"dismissed by alice on 2026-01-02: the file is starter code (all runs)"`` for people."""
    text = str(review.get("decision", "decided"))
    if review.get("decided_by"):
        text += f" by {review['decided_by']}"
    if review.get("decided_at"):
        text += f" on {str(review['decided_at'])[:10]}"
    if review.get("note"):
        text += f": {review['note']}"
    if review.get("scope"):
        text += f" ({review['scope']})"
    return text


def fragment_side_label(fragment: Mapping[str, Any], side: str) -> str:
    """Where one side of a fragment lies, for people.

    Notebook sides read ``"cell 2, line 1 (code lines 6–7)"`` (the code lines count in the joined
    code cells the spans point into); file sides read ``"lines 11–13"``.

    Parameters
    ----------
    fragment : mapping
        A fragment of a pair's JSON form (``agent``/``reference`` spans and ``*_location``).
    side : {"agent", "reference"}
    """
    span = fragment[side]
    lines = f"{span['start_line']}–{span['end_line']}" if span["end_line"] != span["start_line"] else f"{span['start_line']}"
    location = str(fragment.get(f"{side}_location") or "")
    if location.startswith("cell "):
        return f"{location} (code lines {lines})"
    return f"line {lines}" if span["end_line"] == span["start_line"] else f"lines {lines}"


def pair_origin_label(pair: Mapping[str, Any]) -> str:
    """Where in its log a pair's agent code lies, or ``""`` for code from a file of its own.

    ``"node 3 (step 3, id 5e0c…)"`` for an AIDE journal node, else the record's place and line
    (``"messages[2].content, line 40"``).
    """
    origin = pair.get("agent_origin")
    if not isinstance(origin, Mapping):
        return ""
    if origin.get("node") is not None:
        details = []
        if origin.get("step") is not None:
            details.append(f"step {origin['step']}")
        if origin.get("node_id"):
            # AIDE's ids are 32 hex digits: the first 8 tell the nodes of a journal apart (the
            # JSON report keeps the whole id)
            node_id = str(origin["node_id"])
            details.append(f"id {node_id[:8]}…" if len(node_id) > 12 else f"id {node_id}")
        return f"node {origin['node']}" + (f" ({', '.join(details)})" if details else "")
    where = str(origin.get("location") or "")
    line = origin.get("start_line")
    return ", ".join(x for x in (where, f"line {line}" if line else "") if x)


def pair_agent_label(pair: Mapping[str, Any]) -> str:
    """The agent side of a pair for a table: its path, and its log record when it has one
    (``"logs/journal.json · node 3 (step 3, id 5e0c)"``), so rows of one log are told apart."""
    origin = pair_origin_label(pair)
    return f"{pair.get('agent_path', '')} · {origin}" if origin else str(pair.get("agent_path", ""))


def cluster_side_label(edge: Mapping[str, Any], side: str) -> str:
    """One side (``"left"`` or ``"right"``) of a copy-cluster edge for a table: its file, or the
    run or notebook when none is known, and its log record when it has one
    (``"run-a/logs/journal.json · node 3 (step 3, id 5e0c)"``)."""
    name = str(edge.get(f"{side}_file") or edge.get(side) or "")
    run = str(edge.get(side) or "")
    if edge.get(f"{side}_kind") == "run" and run and name != run and not name.startswith(f"{run}/"):
        name = f"{run}/{name}"  # a run's file in a run-notebook edge: name the run, as run-run edges do
    origin = pair_origin_label({"agent_origin": edge.get(f"{side}_origin")})
    return f"{name} · {origin}" if origin else name


def pair_too_short(pair: Mapping[str, Any]) -> bool:
    """Whether a side of the pair has no fingerprint (fewer tokens than one k-gram), so that its
    figures (0 of 0) mean nothing."""
    return bool(pair.get("too_short")) or pair.get("agent_total") == 0 or pair.get("reference_total") == 0


def copied_share_line(similarity: Mapping[str, Any] | None) -> str | None:
    """The run-level figure in words, or ``None`` when the report has none.

    ``"12.3 % of the run's agent code found in public notebooks (168 of 1,364 lines, in 2 of 9
    code units, from 3 notebooks)"``.
    """
    share = (similarity or {}).get("copied_share")
    if not isinstance(share, Mapping):
        return None
    if share.get("share") is None:
        return "no agent code compared with public notebooks"
    units = share.get("agent_units")
    with_copies = share.get("units_with_copies")
    notebooks = share.get("notebooks")
    where = []
    if units is not None and with_copies is not None:
        where.append(f"in {with_copies} of {units} code unit{'s' if units != 1 else ''}")
    if notebooks is not None:
        where.append(f"from {notebooks} notebook{'s' if notebooks != 1 else ''}")
    return (f"{100 * float(share['share']):.1f} % of the run's agent code found in public notebooks "
            f"({share.get('copied_lines', 0):,} of {share.get('agent_lines', 0):,} lines"
            + (f", {', '.join(where)}" if where else "") + ")")
