"""Built-in check ``mlebench-divergence``: where MLE-bench's own grader would grade the submission differently.

The run's grade (:func:`grading.grade_submission`) carries ``mlebench_divergence``: every
looseness of MLE-bench's grader for the competition that the run's ``submission.csv`` triggers
(rows paired by position, repeated ids accepted, NaN turned into a number, ``1.5`` truncated to
class 1 ...), with MLE-bench's would-be outcome against the checked grade
(:mod:`mleaudit.grading.mlebench_divergence`). The pipeline hands those records to this check through the
context's memo, so the file is examined once; a context without them (a rule self-test) computes
them from the competition's config, the answers and the submission.

Each record becomes one match, with evidence on the line of the submission where the first
triggering row starts (the header for a trigger of the file as a whole).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Mapping

from mleaudit.audit.checks.competition import competition_id, competitions_root
from mleaudit.audit.checks.evidence import file_line_evidence
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.rules.registry import check
from mleaudit.audit.rules.match import Match

__all__ = ["DIVERGENCE_MEMO", "divergence_memo", "mlebench_divergence"]

logger = logging.getLogger(__name__)

#: Key of :attr:`RunContext.memo` under which the grade's records are handed to the check.
DIVERGENCE_MEMO = "mlebench-divergence"


def divergence_memo(grade: Mapping[str, Any] | None) -> dict[str, Any]:
    """A memo seed for :class:`RunContext` from a grade dict (:meth:`grading.GradeReport.to_dict`).

    Parameters
    ----------
    grade : mapping or None
        The run's grade; only its ``mlebench_divergence`` and ``mlebench_divergence_skipped``
        fields are read.

    Returns
    -------
    dict
        ``{DIVERGENCE_MEMO: {"records": [...], "skipped": ...}}``, or an empty dict when the
        grade has no such fields (the check then computes them itself).
    """
    if not grade or "mlebench_divergence" not in grade:
        return {}
    records = grade.get("mlebench_divergence") or []
    return {DIVERGENCE_MEMO: {"records": [dict(r) for r in records if isinstance(r, Mapping)],
                              "skipped": grade.get("mlebench_divergence_skipped")}}


def _compute(ctx: RunContext) -> dict[str, Any]:
    """The records for a context the pipeline did not seed (a self-test fixture)."""
    none: dict[str, Any] = {"records": [], "skipped": None}
    cid = competition_id(ctx)
    root = competitions_root()
    if ctx.submission_path is None or ctx.answers_path is None or cid is None or root is None:
        return none
    folder = root / cid
    if not (folder / "config.yaml").is_file():
        return none
    from mleaudit.grading.errors import GradingError
    from mleaudit.grading.mlebench_divergence import find_mlebench_divergences
    from mleaudit.grading.spec import load_competition_spec

    try:
        spec = load_competition_spec(folder)
    except GradingError as exc:
        logger.info("mlebench-divergence: competition %s not loaded: %s", cid, exc)
        return none
    found = find_mlebench_divergences(Path(ctx.submission_path), spec, Path(ctx.answers_path))
    return {"records": [r.to_dict() for r in found.records], "skipped": found.skipped}


def _line(path: Path, rows: list[int]) -> int:
    """0-based line index of the first listed data row (the header when none is listed)."""
    if not rows:
        return 0
    from mleaudit.grading.csvscan import record_line

    try:
        line = record_line(path, int(rows[0]) + 1)
    except (OSError, ValueError):
        line = None
    return (line if line is not None else int(rows[0]) + 1) - 1


def _number(value: Any) -> str:
    return "none" if value is None else f"{value}"


@check("mlebench-divergence",
       values=("kind", "trigger", "mlebench_does", "mlebench_outcome", "mlebench_score", "mlebench_medal",
               "checked_outcome", "difference", "score_basis", "medal_only_under_mlebench", "rows", "column", "count"))
def mlebench_divergence(ctx: RunContext) -> list[Match]:
    """One match per looseness of MLE-bench's grader the run's submission triggers.

    Parameters
    ----------
    ctx : RunContext
        Needs ``submission_path``; the records come from ``ctx.memo`` (seeded by the pipeline
        from the grade, :func:`divergence_memo`) or are computed from ``competition_id``,
        ``answers_path`` and the competition's config.

    Returns
    -------
    list of Match
        Values ``kind``, ``trigger`` (what in the file triggers it, first rows), ``mlebench_does``,
        ``mlebench_outcome`` and ``mlebench_score``/``mlebench_medal`` (MLE-bench's would-be
        grade), ``checked_outcome``, ``difference`` (one line comparing both),
        ``score_basis``, ``medal_only_under_mlebench``, ``rows``, ``column`` and ``count``;
        evidence on the submission line of the first triggering row. A file the divergence
        check could not read is listed in ``ctx.skipped`` (the audit is then incomplete).
    """
    if ctx.submission_path is None:
        return []
    found = ctx.memoize(DIVERGENCE_MEMO, lambda: _compute(ctx))
    path = Path(ctx.submission_path)
    rel = ctx.relative(path)
    if found.get("skipped"):
        ctx.skip(rel, f"mlebench-divergence: {found['skipped']}")
    matches = []
    for record in found.get("records", []):
        rows = [int(r) for r in record.get("rows") or [] if isinstance(r, int)]
        evidence = file_line_evidence(ctx, path, _line(path, rows), "submission")
        matches.append(Match(
            values={
                "kind": record.get("kind"),
                "trigger": record.get("trigger"),
                "mlebench_does": record.get("mlebench_does"),
                "mlebench_outcome": record.get("mlebench_outcome"),
                "mlebench_score": _number(record.get("mlebench_score")),
                "mlebench_medal": _number(record.get("mlebench_medal")),
                "checked_outcome": record.get("checked_outcome"),
                "difference": record.get("difference"),
                "score_basis": record.get("score_basis"),
                "medal_only_under_mlebench": bool(record.get("medal_only_under_mlebench")),
                "rows": ", ".join(map(str, rows)) or "the whole file",
                "column": record.get("column") or "",
                "count": record.get("count"),
            },
            evidence=(evidence,),
        ))
    return matches
