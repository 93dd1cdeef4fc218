"""``audit_run``: the orchestration from a loaded run to an :class:`~mleaudit.audit.report.AuditReport`
(expand, attribute, parse, compare, evaluate the rules, decide the verdict)."""

from __future__ import annotations

import datetime as _dt
import logging
from collections import Counter
from dataclasses import replace
from typing import Any, Callable

from mleaudit.audit import __version__
from mleaudit.audit import checks  # noqa: F401  (importing the package registers the built-in checks)
from mleaudit.audit.attribution import attribute_units
from mleaudit.audit.checks.divergence import divergence_memo
from mleaudit.audit.expand import RunUnits, expand_run
from mleaudit.audit.model import Skipped
from mleaudit.audit.parsing import LANGUAGES
from mleaudit.audit.pipeline.coverage import _audit_gaps, _file_readings, _unread_data_files
from mleaudit.audit.pipeline.options import AuditOptions
from mleaudit.audit.pipeline.similarity_stage import _run_similarity
from mleaudit.audit.report import AuditReport, Gap, GapKind, RunSummary, decide_verdict
from mleaudit.audit.report_similarity import record_locations
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.rules.engine import evaluate_ruleset
from mleaudit.audit.rules.loader import Ruleset
from mleaudit.audit.rules.matchers import Subject, tree_shape
from mleaudit.audit.rules.policy import RulePolicy
from mleaudit.audit.run import Run
from mleaudit.audit.similarity import score_threshold_from_rules

logger = logging.getLogger(__name__)


def audit_run(
    run: Run,
    *,
    ruleset: Ruleset,
    options: AuditOptions | None = None,
    grade: dict[str, Any] | None = None,
    grade_skipped: str | None = None,
    answers: dict[str, Any] | None = None,
    policy: RulePolicy | None = None,
    on_expanded: Callable[[Run, RunUnits], None] | None = None,
) -> AuditReport:
    """Audit one run.

    Parameters
    ----------
    run : Run
        From :func:`mleaudit.audit.run.load_run`.
    ruleset : Ruleset
        From :func:`mleaudit.audit.rules.loader.load_ruleset`.
    options : AuditOptions, optional
        Similarity corpus and thresholds; defaults run rules only.
    grade : dict, optional
        The run's grading report (MLE-bench fields), computed by the caller with
        :func:`grading.grade_submission` so that ``audit`` stays independent of data dirs.
    grade_skipped : str, optional
        Why there is no grade (shown in the report's ``meta``).
    answers : dict, optional
        Held-out answers for run-level checks: keys ``answers_path``, ``sample_submission_path``,
        ``id_column``, ``target_columns``. They are read on the host, never given to the agent.
    policy : RulePolicy, optional
        The competition's audit policy (``audit:`` of its config): label-leak columns for the
        rules' ``terms`` filters and ``allow_urls``; allowlisted matches go to
        ``meta["allowlisted"]`` instead of the findings.
    on_expanded : callable, optional
        Called with the run and its expansion before attribution (a batch keeps the code it
        compares across runs without expanding the run a second time).

    Returns
    -------
    AuditReport
        Findings sorted by severity (desc), rule, path, line; ``verdict`` from
        :func:`mleaudit.audit.report.decide_verdict`.
    """
    options = options or AuditOptions()
    expanded = expand_run(run)
    if on_expanded is not None:
        on_expanded(run, expanded)
    code_units, log_events = attribute_units(expanded.code_units, expanded.log_events, run.layout)
    expanded = replace(expanded, code_units=code_units, log_events=log_events)
    run_skipped = list(run.skipped) + list(expanded.skipped)

    parse_errors = []
    text_fallback_notes: list[Skipped] = []
    for unit in expanded.code_units:
        if unit.language not in LANGUAGES:
            continue
        parsed, shape = tree_shape(Subject(text=unit.text, language=unit.language))
        where = unit.path if unit.origin is None else f"{unit.path}:{unit.origin.start_line}"
        if parsed.has_error:
            parse_errors.append(where)
        if shape is not None:
            # The query rules search their literals in the text instead (marked on their
            # findings); what cannot be searched as text is an evaluation error of the rule.
            text_fallback_notes.append(Skipped(path=where, reason=f"syntax tree has {shape}: query rules ran as text matches"))

    similarity, pairs, sim_skipped = _run_similarity(expanded.code_units, options, score_threshold_from_rules(ruleset),
                                                     host_text=lambda path: artifact_text(run, path),
                                                     locations=record_locations(expanded.log_events))
    # Notes (no submission file, text that was not valid UTF-8) are listed, not counted against the verdict.
    unread_data = _unread_data_files(run)
    skipped: list[Skipped] = (run_skipped + unread_data + list(sim_skipped) + list(run.notes) + list(expanded.notes)
                              + text_fallback_notes)

    answers = answers or {}
    context = RunContext(
        root=run.root,
        submission_path=run.submission.abs_path if run.submission is not None else None,
        answers_path=answers.get("answers_path"),
        sample_submission_path=answers.get("sample_submission_path"),
        id_column=answers.get("id_column"),
        target_columns=tuple(answers.get("target_columns", ())),
        answer_columns=answers.get("answer_columns", {}),
        column_aliases=answers.get("column_aliases", {}),
        ids_by_number=answers.get("ids_by_number", False),
        code_units=expanded.code_units,
        log_events=expanded.log_events,
        competition_id=run.competition_id,
        # The grade already holds where MLE-bench's grader would differ: the check reads it there.
        memo=divergence_memo(grade),
    )
    files = []
    for artifact in run.artifacts:
        try:
            files.append((artifact.path, artifact.read_text()))
        except OSError as exc:
            logger.info("not scanning %s: %s", artifact.path, exc)
    evaluation = evaluate_ruleset(
        ruleset,
        code_units=expanded.code_units,
        log_events=expanded.log_events,
        files=files,
        run_context=context,
        pairs=pairs,
        run_id=run.run_id,
        include_experimental=options.include_experimental,
        policy=policy,
    )
    findings = list(evaluation.findings)
    # Inputs the run-level checks could not read: those checks did not judge them (gaps, below).
    skipped.extend(item for item in context.skipped if item not in skipped)
    if options.baseline is not None:
        from mleaudit.audit.review import apply_baseline

        findings = apply_baseline(findings, options.baseline, run.run_id)

    counts = Counter(a.kind.value for a in run.artifacts)
    summary = RunSummary(
        run_id=run.run_id,
        root=str(run.root),
        competition_id=run.competition_id,
        agent_id=run.agent_id,
        artifact_counts=dict(counts),
        code_units=len(expanded.code_units),
        log_events=len(expanded.log_events),
        parse_errors=tuple(sorted(set(parse_errors))),
        files=_file_readings(run, expanded, run_skipped + unread_data + list(context.skipped)),
    )
    meta: dict[str, Any] = {
        "tool": "mleaudit",
        "version": __version__,
        "created_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "ruleset_digest": ruleset.digest,
        "rules": len(ruleset.rules),
    }
    if grade is None and grade_skipped:
        meta["grade_skipped"] = grade_skipped
    if options.corpus_dir is None and options.corpus_index is None:
        meta["similarity_skipped"] = options.no_similarity_reason
    if evaluation.allowlisted:
        # Dropped by the competition's allow_urls, listed so that a reviewer still sees them.
        meta["allowlisted"] = [
            {"rule_id": f.rule_id, "path": f.evidence[0].span.path, "line": f.evidence[0].span.start_line,
             "message": f.message, "allowed_by": f.metadata.get("allowlisted_by"), "fingerprint": f.fingerprint}
            for f in evaluation.allowlisted
        ]
    if options.baseline is not None:
        decided = Counter(f.review["decision"] for f in findings if f.review is not None)
        meta["review"] = {"decisions_in_baseline": len(options.baseline.decisions), **{k: decided[k] for k in ("confirmed", "dismissed")}}
    gaps = _audit_gaps(run, expanded, run_skipped + list(context.skipped), evaluation.errors, evaluation.evaluated_rules,
                       grade=grade, grade_skipped=grade_skipped, grade_requested=options.grade_requested)
    for stage in (similarity or {}).get("search_incomplete", ()):
        gaps.append(Gap(kind=GapKind.SIMILARITY_INCOMPLETE, path=stage["path"], reason=stage["reason"]))
    return AuditReport(
        run=summary,
        findings=tuple(sorted(findings, key=lambda f: f.sort_key())),
        verdict=decide_verdict(findings, gaps, fail_on=options.fail_on),
        grade=grade,
        similarity=similarity,
        skipped=tuple(sorted(skipped, key=lambda s: (s.path, s.reason))),
        meta=meta,
        rules=_rule_descriptors(ruleset, findings),
    )


def artifact_text(run: Run, path: str) -> str | None:
    """The decoded text of the run file at ``path`` (run-relative), or ``None`` when the run has
    no such file or it cannot be read."""
    artifact = next((a for a in run.artifacts if a.path == path), None)
    if artifact is None:
        return None
    try:
        return artifact.read_text()
    except OSError:
        return None


def _rule_descriptors(ruleset: Ruleset, findings) -> dict[str, dict[str, Any]]:
    """What the report says about each rule that has a finding (SARIF's reporting descriptors)."""
    fired = {f.rule_id for f in findings}
    out = {}
    for rule in ruleset:
        spec = rule.spec
        if spec.id not in fired:
            continue
        out[spec.id] = {
            "title": spec.title,
            "category": spec.category,
            "severity": spec.severity.label,
            "confidence": spec.confidence.label,
            "rationale": spec.metadata.rationale,
            "references": list(spec.metadata.references),
            "since": spec.metadata.since,
            "status": spec.status.value,
            "targets": [t.value for t in spec.targets],
        }
    return out
