"""The audit report: one record that answers score, medal, rule violations and copying for a run.

``AuditReport.to_dict()`` is the JSON contract (top-level keys ``schema_version, meta, run, grade,
findings, similarity, verdict, skipped, rules``), described by ``audit/schemas/report.schema.json``.
Everything that changes between two audits of the same run with the same rules (timestamps, tool
version) lives in ``meta`` only.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from mleaudit.audit.model import Confidence, Finding, Severity, Skipped

__all__ = ["FileReading", "SCHEMA_VERSION", "EXIT_CLEAN", "EXIT_FINDINGS", "EXIT_USAGE", "EXIT_INCOMPLETE", "EXIT_INTERNAL_ERROR",
           "exit_code", "Gap", "GapKind", "Verdict", "VerdictKind", "RunSummary", "AuditReport", "decide_verdict"]

#: Bumped when a key of ``AuditReport.to_dict()`` changes meaning or disappears (2.0: the
#: ``incomplete`` verdict and ``verdict.gaps``; ``clean`` now requires a gap-free audit).
SCHEMA_VERSION = "2.1"


#: Exit codes of ``mleaudit audit`` (and ``mleaudit run --audit``), documented in the README.
EXIT_CLEAN = 0
#: At least one finding (not dismissed) at or above ``--fail-on``.
EXIT_FINDINGS = 1
#: Usage, configuration or input error: nothing was audited.
EXIT_USAGE = 2
#: No finding at or above ``--fail-on``, but the audit is incomplete (verdict ``incomplete``).
EXIT_INCOMPLETE = 3
#: The tool itself failed unexpectedly (a bug): nothing may be concluded from the run.
EXIT_INTERNAL_ERROR = 4


class VerdictKind(enum.Enum):
    """Overall decision, worst first: rule-breaking evidence, not fully audited, needs a human look, nothing found.

    ``CLEAN`` is the only verdict a medal may be certified on: every file of the run was read,
    every enabled rule ran on every unit it applies to, grading ran (or was not asked for) and
    no finding reached the decision threshold. ``INCOMPLETE`` says the audit itself has gaps
    (:class:`Gap`), whatever it found in the part it could check.
    """

    CLEAN = "clean"
    REVIEW = "review"
    INCOMPLETE = "incomplete"
    FLAGGED = "flagged"


class GapKind(enum.Enum):
    """Why an audit is incomplete."""

    #: The run holds no agent code and no log to check (an empty or mistyped folder, a bare submission).
    NO_AGENT_INPUT = "no-agent-input"
    #: A file of the run, or part of one, was not read (symlink, size cap, damaged archive ...).
    FILE_UNREAD = "file-unread"
    #: A rule raised (or timed out) on a unit it applies to, so that unit was not checked by it.
    RULE_ERROR = "rule-error"
    #: Grading was asked for but did not run (no competition id, competition not prepared ...).
    NOT_GRADED = "not-graded"
    #: No enabled rule was loaded (an empty ``--rules`` folder).
    NO_RULES = "no-rules"
    #: The copy search through a corpus index checked only the references of highest bound for a
    #: code unit: others could still reach the copy threshold (``--index-exhaustive`` checks all).
    SIMILARITY_INCOMPLETE = "similarity-incomplete"


@dataclass(frozen=True, slots=True, kw_only=True)
class Gap:
    """One thing the audit did not check, so the run cannot be called clean.

    Attributes
    ----------
    kind : GapKind
    reason : str
        What was not checked and why, for a reviewer.
    path : str or None
        The run file (relative to the run root) or unit the gap is about, when there is one.
    rule_id : str or None
        For ``rule-error`` gaps: the rule that did not run.
    error : str or None
        For ``rule-error`` gaps: the exception class name (``TimeoutError`` for a regex that
        ran past its time bound).
    """

    kind: GapKind
    reason: str
    path: str | None = None
    rule_id: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "reason": self.reason, "path": self.path, "rule_id": self.rule_id,
                "error": self.error}

    def describe(self) -> str:
        """One line: the gap's kind, where, and why."""
        where = " ".join(x for x in (self.rule_id, self.path) if x)
        return f"{self.kind.value}: {where + ': ' if where else ''}{self.reason}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """The verdict, the findings (rule ids with their severity) that decided it, and the audit's gaps.

    ``gaps`` is listed whatever the verdict: a flagged run may also have parts that were not read.
    """

    kind: VerdictKind
    reasons: tuple[str, ...] = ()
    gaps: tuple[Gap, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "reasons": list(self.reasons), "gaps": [g.to_dict() for g in self.gaps]}


def decide_verdict(findings: Sequence[Finding], gaps: Sequence[Gap] = (), *,
                   fail_on: Severity = Severity.HIGH) -> Verdict:
    """Turn findings and the audit's gaps into a verdict.

    Policy, worst first:

    - ``FLAGGED``: a finding of severity ``high`` or ``critical`` with confidence ``medium`` or
      better;
    - ``INCOMPLETE``: the audit has gaps (files not read, rules that raised, no agent code or
      logs, grading asked for but not run, no rules): what was not checked may hide a
      violation, so the run is not clean, whatever was (not) found elsewhere;
    - ``REVIEW``: any other finding of severity ``medium`` or more, or at or above ``fail_on``;
    - ``CLEAN``: none of the above. ``low`` and ``info`` findings below ``fail_on`` stay listed
      as context.

    Findings a reviewer dismissed (``Finding.dismissed``, from a baseline file) do not count;
    gaps never come from findings, so no dismissal turns an incomplete audit into a clean one.

    Parameters
    ----------
    findings : sequence of Finding
    gaps : sequence of Gap
        What the audit could not check (:class:`Gap`).
    fail_on : Severity
        The ``--fail-on`` threshold: a finding at or above it is never clean.

    Returns
    -------
    Verdict
        With one reason per deciding finding rule (``rule-id (severity)``) or, for an
        incomplete audit, one per gap kind with its count; ``gaps`` lists every gap.
    """
    findings = [f for f in findings if not f.dismissed]
    gaps = tuple(gaps)
    flagged = sorted(
        {f"{f.rule_id} ({f.severity.label})" for f in findings if f.severity >= Severity.HIGH and f.confidence >= Confidence.MEDIUM}
    )
    if flagged:
        return Verdict(kind=VerdictKind.FLAGGED, reasons=tuple(flagged), gaps=gaps)
    review = sorted({f"{f.rule_id} ({f.severity.label})" for f in findings
                     if f.severity >= Severity.MEDIUM or f.severity >= fail_on})
    if gaps:
        counts: dict[GapKind, int] = {}
        for gap in gaps:
            counts[gap.kind] = counts.get(gap.kind, 0) + 1
        reasons = [f"incomplete audit: {_GAP_SUMMARY[kind](n)}" for kind, n in counts.items()]
        return Verdict(kind=VerdictKind.INCOMPLETE, reasons=tuple(reasons + review), gaps=gaps)
    if review:
        return Verdict(kind=VerdictKind.REVIEW, reasons=tuple(review))
    return Verdict(kind=VerdictKind.CLEAN)


_GAP_SUMMARY = {
    GapKind.NO_AGENT_INPUT: lambda n: "no agent code or logs to check",
    GapKind.FILE_UNREAD: lambda n: f"{n} run file(s) or part(s) not read",
    GapKind.RULE_ERROR: lambda n: f"{n} rule evaluation(s) failed",
    GapKind.NOT_GRADED: lambda n: "submission not graded",
    GapKind.NO_RULES: lambda n: "no rules loaded",
    GapKind.SIMILARITY_INCOMPLETE: lambda n: f"copy search through the corpus index cut short for {n} code unit(s)",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class FileReading:
    """How one file of a run was read, so that a reviewer sees what the audit looked at.

    Attributes
    ----------
    path : str
        POSIX path relative to the run root (``<archive>!/<member>`` for archive members).
    kind : str
        The artifact kind (``code``, ``notebook``, ``log``, ``submission``, ``data``, ``other``).
    reader : str
        What read it: a log adapter's name (``aide``, ``mlagentbench-main``, ``text`` ...),
        ``python``/``bash`` for source files, ``notebook``, ``grader`` for the submission, or
        ``none`` when nothing read it (see ``unread``).
    events, code_units : int
        Log events and code units that came out of it.
    actors : Mapping[str, int]
        Units and events per actor (``agent``, ``scaffold``, ``operator``, ``unknown``).
    unread : tuple of str
        Parts that were not read, one reason each (they are gaps of the verdict unless the
        file is a data file).
    notes : tuple of str
        Caveats of the reading that are no sign of anything missing (the decoding used).
    """

    path: str
    kind: str
    reader: str
    events: int = 0
    code_units: int = 0
    actors: Mapping[str, int] = field(default_factory=dict)
    unread: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "reader": self.reader,
            "events": self.events,
            "code_units": self.code_units,
            "actors": dict(sorted(self.actors.items())),
            "unread": list(self.unread),
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSummary:
    """What was audited: the run's identity and how many artifacts of each kind it had."""

    run_id: str
    root: str
    competition_id: str | None
    agent_id: str | None
    artifact_counts: Mapping[str, int]
    code_units: int
    log_events: int
    parse_errors: tuple[str, ...] = ()
    #: What was read of each file of the run, in path order (:class:`FileReading`).
    files: tuple["FileReading", ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": [f.to_dict() for f in self.files],
            "run_id": self.run_id,
            "root": self.root,
            "competition_id": self.competition_id,
            "agent_id": self.agent_id,
            "artifact_counts": dict(sorted(self.artifact_counts.items())),
            "code_units": self.code_units,
            "log_events": self.log_events,
            "parse_errors": list(self.parse_errors),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditReport:
    """A graded, rule-checked, similarity-checked report of one run.

    ``grade`` is MLE-bench's competition report (plus ``error`` and ``leaderboard_source``) or
    ``None`` when the run could not be graded (the reason is in ``meta.grade_skipped``).
    ``similarity`` lists the reference notebooks most similar to the run's code, best first.
    ``rules`` describes each rule that has a finding (``rule_id -> {title, category, severity,
    confidence, rationale, references, since, status}``), so a report explains its findings
    without the rules folder (SARIF ``tool.driver.rules`` is built from it).
    """

    run: RunSummary
    findings: tuple[Finding, ...]
    verdict: Verdict
    grade: Mapping[str, Any] | None = None
    similarity: Mapping[str, Any] | None = None
    skipped: tuple[Skipped, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)
    rules: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    schema_version: str = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "meta": dict(self.meta),
            "run": self.run.to_dict(),
            "grade": dict(self.grade) if self.grade is not None else None,
            "findings": [f.to_dict() for f in self.findings],
            "similarity": dict(self.similarity) if self.similarity is not None else None,
            "verdict": self.verdict.to_dict(),
            "skipped": [s.to_dict() for s in self.skipped],
            "rules": {rule_id: dict(info) for rule_id, info in sorted(self.rules.items())},
        }

    def max_severity(self) -> Severity | None:
        """The highest severity among the findings not dismissed by a reviewer, or ``None``."""
        return max((f.severity for f in self.findings if not f.dismissed), default=None)


def exit_code(report: AuditReport, fail_on: Severity) -> int:
    """The exit code for one audited run.

    Parameters
    ----------
    report : AuditReport
    fail_on : Severity
        The ``--fail-on`` threshold.

    Returns
    -------
    int
        :data:`EXIT_FINDINGS` when a finding not dismissed is at or above ``fail_on``; else
        :data:`EXIT_INCOMPLETE` when the verdict is ``incomplete`` (or the report has gaps);
        else :data:`EXIT_CLEAN`.
    """
    worst = report.max_severity()
    if worst is not None and worst >= fail_on:
        return EXIT_FINDINGS
    if report.verdict.kind is VerdictKind.INCOMPLETE or report.verdict.gaps:
        return EXIT_INCOMPLETE
    return EXIT_CLEAN
