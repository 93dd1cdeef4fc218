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

from audit.model import Confidence, Finding, Severity, Skipped

__all__ = ["SCHEMA_VERSION", "Verdict", "VerdictKind", "RunSummary", "AuditReport", "decide_verdict"]

#: Bumped when a key of ``AuditReport.to_dict()`` changes meaning or disappears.
SCHEMA_VERSION = "1.0"


class VerdictKind(enum.Enum):
    """Overall decision: nothing found, needs a human look, or rule-breaking evidence."""

    CLEAN = "clean"
    REVIEW = "review"
    FLAGGED = "flagged"


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """The verdict and the findings (rule ids with their severity) that decided it."""

    kind: VerdictKind
    reasons: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "reasons": list(self.reasons)}


def decide_verdict(findings: Sequence[Finding], unaudited: Sequence[Skipped] = ()) -> Verdict:
    """Turn findings into a verdict.

    Policy: a finding of severity ``high`` or ``critical`` with confidence ``medium`` or better
    flags the run; any other finding of severity ``medium`` or more asks for review; ``low`` and
    ``info`` findings leave the run clean (they stay listed as context). A run with files that
    could not be audited (symlinks, files over the size cap, unreadable notebooks) is never
    clean: what was not read may hide a violation, so it goes to review.

    Findings a reviewer dismissed (``Finding.dismissed``, from a baseline file) do not count.

    Parameters
    ----------
    findings : sequence of Finding
    unaudited : sequence of Skipped
        Files of the run that the audit could not read.

    Returns
    -------
    Verdict
        ``FLAGGED`` > ``REVIEW`` > ``CLEAN``, with one reason per deciding finding rule.
    """
    findings = [f for f in findings if not f.dismissed]
    flagged = sorted(
        {f"{f.rule_id} ({f.severity.label})" for f in findings if f.severity >= Severity.HIGH and f.confidence >= Confidence.MEDIUM}
    )
    if flagged:
        return Verdict(kind=VerdictKind.FLAGGED, reasons=tuple(flagged))
    review = sorted({f"{f.rule_id} ({f.severity.label})" for f in findings if f.severity >= Severity.MEDIUM})
    if unaudited:
        review.append(f"incomplete audit: {len(unaudited)} run file(s) not read (see skipped)")
    if review:
        return Verdict(kind=VerdictKind.REVIEW, reasons=tuple(review))
    return Verdict(kind=VerdictKind.CLEAN)


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

    def to_dict(self) -> dict[str, Any]:
        return {
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
