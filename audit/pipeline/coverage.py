"""What an audit read and what it did not check: each run file's reading (the report's ``run.files``)
and the gaps that keep a verdict from clean."""

from __future__ import annotations

from collections import Counter
from typing import Any

from mleaudit.audit.model import Skipped
from mleaudit.audit.report import FileReading, Gap, GapKind
from mleaudit.audit.rules.engine import EvaluationError
from mleaudit.audit.run import ArtifactKind, Run, RunLayout
from mleaudit.audit.sandbox_record import is_sandbox_command


#: Reason given to data files the audit does not read (README "What CLEAN means"): tables, arrays,
#: model dumps and archives are not code or logs, and no rule reads them; the submission is
#: read by the grader and the run-level checks.
DATA_FILE_NOT_READ = "data file, not read: tables and binary dumps are neither code nor logs (no rule reads them)"


#: Reader names of files that no log adapter reads.
_READERS = {ArtifactKind.NOTEBOOK: "notebook", ArtifactKind.SUBMISSION: "grader"}


def _file_readings(run: Run, expanded, skipped: list[Skipped]) -> tuple[FileReading, ...]:
    """What was read of each file of the run (the report's ``run.files``), in path order.

    A file's ``unread`` parts are the skipped entries naming it (or a member of it); its
    notes the notes naming it. Units and events count under the file they point into.
    """
    formats = dict(expanded.log_formats)
    units: dict[str, Counter] = {}
    events: dict[str, Counter] = {}
    for unit in expanded.code_units:
        units.setdefault(unit.path.split("!/", 1)[0], Counter())[unit.actor.value] += 1
    for event in expanded.log_events:
        events.setdefault(event.span.path.split("!/", 1)[0], Counter())[event.actor.value] += 1
    unread: dict[str, list[str]] = {}
    for item in skipped:
        if item.reason != DATA_FILE_NOT_READ:
            unread.setdefault(item.path.split("!/", 1)[0], []).append(item.reason)
    noted: dict[str, list[str]] = {}
    for item in list(run.notes) + list(expanded.notes):
        noted.setdefault(item.path, []).append(item.reason)
    readings = []
    for artifact in run.artifacts:
        path = artifact.path
        of_units, of_events = units.get(path, Counter()), events.get(path, Counter())
        if path in formats:
            reader = formats[path]
        elif artifact.kind is ArtifactKind.CODE and (of_units or path not in unread):
            reader = artifact.language or "python"
        elif artifact.kind in _READERS and (of_units or of_events or path not in unread):
            reader = _READERS[artifact.kind]
        elif artifact.kind is ArtifactKind.LOG and path not in unread:
            reader = "text"  # read, but empty: no events came out
        else:
            reader = "none"
        readings.append(FileReading(
            path=path, kind=artifact.kind.value, reader=reader, events=sum(of_events.values()),
            code_units=sum(of_units.values()), actors=dict(of_units + of_events),
            unread=tuple(dict.fromkeys(unread.get(path, ()))), notes=tuple(dict.fromkeys(noted.get(path, ()))),
        ))
    return tuple(readings)


def _unread_data_files(run: Run) -> list[Skipped]:
    """The run's data files, listed as not read by a documented rule (they are not gaps)."""
    submission = run.submission.path if run.submission is not None else None
    return [Skipped(path=a.path, reason=DATA_FILE_NOT_READ) for a in run.artifacts
            if a.kind is ArtifactKind.DATA and a.path != submission]


def _data_over_cap(item: Skipped, layout: str | None = None) -> bool:
    from mleaudit.audit.run import classify_path

    kind, _ = classify_path(item.path)
    return (kind is ArtifactKind.DATA and "-byte cap" in item.reason
            and item.path not in RunLayout.submission_candidates(layout))


def _audit_gaps(run: Run, expanded, run_skipped: list[Skipped], errors: tuple[EvaluationError, ...],
                evaluated_rules: tuple[str, ...], *, grade: dict[str, Any] | None,
                grade_skipped: str | None, grade_requested: bool) -> list[Gap]:
    """Everything the audit did not check (:class:`mleaudit.audit.report.Gap`), in a stable order.

    A data file over the size cap is not a gap (see :data:`DATA_FILE_NOT_READ`); a file of
    unknown type is, because it may hold code or a log that no reader looked at.
    """
    gaps: list[Gap] = []
    if not evaluated_rules:
        gaps.append(Gap(kind=GapKind.NO_RULES, reason="no enabled rule was loaded (is the rules folder empty?)"))
    # The sandbox's recorded agent command says how the run was launched, not what the agent did.
    has_code = any(u.text.strip() for u in expanded.code_units if not is_sandbox_command(u))
    if not has_code and not any(not is_sandbox_command(e) for e in expanded.log_events):
        gaps.append(Gap(kind=GapKind.NO_AGENT_INPUT,
                        reason="the run holds no agent code and no log to check (an empty folder, a mistyped path, "
                               "or a bare submission)"))
    for item in run_skipped:
        if not _data_over_cap(item, run.layout):
            gaps.append(Gap(kind=GapKind.FILE_UNREAD, path=item.path, reason=item.reason))
    for artifact in run.artifacts:
        if artifact.kind is ArtifactKind.OTHER and artifact.path not in RunLayout.RUN_META:
            gaps.append(Gap(kind=GapKind.FILE_UNREAD, path=artifact.path,
                            reason="file of unknown type, not read (neither code, notebook, log nor data by its name)"))
    for error in errors:
        gaps.append(Gap(kind=GapKind.RULE_ERROR, path=error.path, rule_id=error.rule_id, error=error.error,
                        reason=f"not evaluated on {error.where}: {error.error}: {error.message}"))
    if grade is None and grade_requested:
        gaps.append(Gap(kind=GapKind.NOT_GRADED, path=RunLayout.SUBMISSION_CANDIDATES[0],
                        reason=f"grading was asked for but did not run: {grade_skipped or 'no reason given'}"))
    return list(dict.fromkeys(gaps))
