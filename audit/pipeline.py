"""``audit_run``: the orchestration from a loaded run to an :class:`~mleaudit.audit.report.AuditReport`.

Steps (DESIGN §4.5): expand the run into code units and log events; parse every code unit
(syntax errors are recorded, never fatal); grade the submission when the competition is known
and prepared; compare the code with the reference corpus; evaluate the rules over code, logs,
the run and the similarity pairs; decide the verdict.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from mleaudit.audit import __version__
from mleaudit.audit.attribution import attribute_units
from mleaudit.audit import checks  # noqa: F401  (importing the package registers the built-in checks)
from mleaudit.audit.checks.divergence import divergence_memo
from mleaudit.audit.expand import expand_run
from mleaudit.audit.model import Severity, Skipped
from mleaudit.audit.report import AuditReport, FileReading, Gap, GapKind, RunSummary, decide_verdict
from mleaudit.audit.report_similarity import copied_share, pair_origins, record_locations, similarity_agents
from mleaudit.audit.rules.engine import EvaluationError, evaluate_ruleset
from mleaudit.audit.rules.loader import Ruleset
from mleaudit.audit.parsing import LANGUAGES
from mleaudit.audit.rules.matchers import Subject, tree_shape
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.rules.policy import RulePolicy
from mleaudit.audit.run import ArtifactKind, Run, RunLayout
from mleaudit.audit.sandbox_record import is_sandbox_command
from mleaudit.audit.similarity import SimilarityOptions, compare, load_reference_corpus, score_threshold_from_rules
from mleaudit.audit.similarity.comparison import decodings_of_pairs, longest_fragments
from mleaudit.audit.units import CodeUnit

__all__ = ["AuditOptions", "audit_run"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditOptions:
    """What ``audit_run`` does beyond the rules.

    Parameters
    ----------
    corpus_dir : Path or None
        Folder of reference notebooks (``.py``/``.ipynb``) to compare the run's code with;
        ``None`` skips similarity.
    corpus_index : Path or None
        A corpus index (``mleaudit corpus build``) to compare the run's code with instead of a
        folder: :meth:`mleaudit.audit.similarity.corpus_index.CorpusIndex.compare` with its
        defaults (the 5 references of highest agent containment per file and every reference
        the copy detector flags). Opened once per process. The report then holds no reference
        texts (the index stores fingerprints, not the kernels).
    index_exhaustive : bool
        With ``corpus_index``: the copy detector's search checks every reference its bounds cannot
        exclude (``bound_budget=None``). Without it, a code unit with more such references than
        the default budget checks is a ``similarity-incomplete`` gap.
    boilerplate_dirs : tuple of Path
        Starter code whose fingerprints are ignored (copydetect's boilerplate); with
        ``corpus_index``, the index's own.
    similarity : SimilarityOptions
        k-gram length, window and thresholds. Unless set, ``max_pairs`` is ``top_pairs`` (only
        the listed pairs get fragments) and ``max_fragments_per_pair`` is
        :data:`REPORT_FRAGMENTS_PER_PAIR`; ``max_pairs_per_agent`` is raised to ``top_pairs``.
    top_pairs : int
        How many (agent file, reference) pairs the report lists, in report order (agent
        containment, descending); every flagged pair is listed as well.
    similarity_jobs : int
        Worker processes for the comparison (:func:`mleaudit.audit.similarity.compare`'s ``jobs``).
    include_experimental : bool
        Also run rules whose status is ``experimental``.
    no_similarity_reason : str
        Why similarity is off when ``corpus_dir`` is ``None`` (shown in the report's ``meta``).
    baseline : mleaudit.audit.review.Baseline or None
        Reviewer decisions to mark on the findings (dismissed ones stop counting for the verdict).
    fail_on : Severity
        The ``--fail-on`` threshold: a finding at or above it keeps the verdict from ``clean``.
    grade_requested : bool
        Grading was asked for: a run with no grade is then an incomplete audit (the reason is
        the ``grade_skipped`` given to :func:`audit_run`).
    """

    corpus_dir: Path | None = None
    corpus_index: Path | None = None
    index_exhaustive: bool = False
    boilerplate_dirs: tuple[Path, ...] = ()
    similarity: SimilarityOptions = field(default_factory=SimilarityOptions)
    top_pairs: int = 10
    similarity_jobs: int = 1
    include_experimental: bool = False
    no_similarity_reason: str = "no reference corpus"
    baseline: Any = None
    fail_on: Severity = Severity.HIGH
    grade_requested: bool = False


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
    from mleaudit.audit.similarity.corpus_index import load_corpus_index

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
        most = similarity_options.max_fragments_per_pair
        pairs = [longest_fragments(p, most) if most is not None else p for p in result.pairs]
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


def audit_run(
    run: Run,
    *,
    ruleset: Ruleset,
    options: AuditOptions | None = None,
    grade: dict[str, Any] | None = None,
    grade_skipped: str | None = None,
    answers: dict[str, Any] | None = None,
    policy: RulePolicy | None = None,
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

    Returns
    -------
    AuditReport
        Findings sorted by severity (desc), rule, path, line; ``verdict`` from
        :func:`mleaudit.audit.report.decide_verdict`.
    """
    options = options or AuditOptions()
    expanded = expand_run(run)
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


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditRequest:
    """Everything ``mleaudit audit RUN`` is asked to do, before any path is resolved.

    ``None`` roots fall back to the environment variables and the checkout (see
    :func:`grading.find_competitions_root`, :func:`grading.resolve_data_dir`,
    :func:`mleaudit.audit.rules.loader.find_rules_root`).
    """

    run_dir: Path
    competition_id: str | None = None
    corpus_dir: Path | None = None
    corpus_index: Path | None = None
    index_exhaustive: bool = False
    similarity: bool = True
    grade: bool = True
    include_experimental: bool = False
    competitions_root: Path | None = None
    data_dir: Path | None = None
    rules_root: Path | None = None
    baseline_path: Path | None = None
    fail_on: Severity = Severity.HIGH


def run_audit(request: AuditRequest, progress=None) -> AuditReport:
    """Resolve a request's paths, grade the run when possible, and audit it.

    The competition comes from ``request.competition_id`` or the run's metadata. Embedded
    competitions (no raw Kaggle files needed) are prepared on first use; others must have been
    prepared with ``mleaudit prepare``, else the report says why the run is not graded. The
    similarity corpus defaults to the competition's reference-notebook folder.

    Parameters
    ----------
    request : AuditRequest
    progress : callable, optional
        Called with one-line status messages (the CLI prints them on stderr).

    Returns
    -------
    AuditReport

    Raises
    ------
    mleaudit.audit.errors.AuditError, mleaudit.grading.errors.GradingError
        Unreadable run, unknown competition, invalid rules or configs.
    """
    from mleaudit.audit.rules.loader import find_rules_root, load_ruleset
    from mleaudit.audit.run import load_run

    say = progress or (lambda message: None)
    run = load_run(request.run_dir)
    ruleset = load_ruleset([find_rules_root(request.rules_root)])
    competition_id = request.competition_id or run.competition_id
    grade = None
    grade_skipped = None
    answers: dict[str, Any] = {}
    policy = None
    spec = None
    corpus = request.corpus_dir
    if competition_id is None:
        grade_skipped = ("grading disabled (--no-grade)" if not request.grade else
                         "no competition id (pass --competition or add competition_id to the run's metadata)")
    else:
        # Imported here: the graders load pandas and scikit-learn, which a run without a
        # competition never needs.
        from mleaudit.grading import (CompetitionRegistry, find_competitions_root, grade_submission, prepare_competition,
                             resolve_data_dir)

        from mleaudit.grading.errors import CompetitionNotFound, competition_not_found

        registry = CompetitionRegistry(find_competitions_root(request.competitions_root), resolve_data_dir(request.data_dir))
        try:
            spec = registry.get(competition_id)
        except CompetitionNotFound as exc:
            # The audit goes on without the grade and the competition's rule settings, and says so.
            grade_skipped = (f"{competition_not_found(exc)} The run is audited without grading and without the "
                             "competition's settings.")
            run = _with_competition(run, competition_id)
    if spec is not None:
        policy = RulePolicy.from_mapping(spec.audit, competition_id=spec.id)
        if corpus is None and request.corpus_index is None and spec.kernels_path.is_dir():
            corpus = spec.kernels_path
        if not registry.is_prepared(spec.id) and spec.is_embedded:
            say(f"preparing embedded competition {spec.id} in {registry.data_dir}")
            prepare_competition(spec, registry)
        if not request.grade:
            grade_skipped = "grading disabled (--no-grade)"
        elif not registry.is_prepared(spec.id):
            grade_skipped = f"competition {spec.id} is not prepared in {registry.data_dir} (run `mleaudit prepare -c {spec.id} --raw DIR`)"
        elif run.submission is None and (unread := _unread_submission(run)) is not None:
            # Grade only what the audit itself read: a symlinked or oversized submission could
            # point at the answers while hiding from the submission checks.
            grade_skipped = f"{unread.path} not graded: {unread.reason}"
        elif run.submission is None and any(os.path.lexists(run.root / c)
                                            for c in RunLayout.submission_candidates(run.layout)):
            # Something sits where a submission would, yet the run loader did not take it: only
            # what the audit itself read may be graded.
            grade_skipped = "a submission path exists but was not read by the audit; not graded"
        else:
            # No submission at all is graded as MLE-bench grades it (submission_exists: false).
            submission = run.submission.abs_path if run.submission is not None else run.root / "submission" / "submission.csv"
            grade = grade_submission(submission, spec, registry.data_dir).to_dict()
            answers = {
                "answers_path": registry.answers_path(spec.id),
                "sample_submission_path": registry.sample_submission_path(spec.id),
                "id_column": spec.id_column,
                "target_columns": spec.target_columns,
                **_answer_matching(spec),
            }
        run = _with_competition(run, spec.id)
    baseline = None
    if request.baseline_path is not None:
        from mleaudit.audit.review import load_baseline

        baseline = load_baseline(request.baseline_path)
    options = AuditOptions(
        baseline=baseline,
        corpus_dir=corpus if request.similarity and request.corpus_index is None else None,
        corpus_index=request.corpus_index if request.similarity else None,
        index_exhaustive=request.index_exhaustive,
        include_experimental=request.include_experimental,
        no_similarity_reason="disabled (--no-similarity)" if not request.similarity else "no reference corpus",
        fail_on=request.fail_on,
        grade_requested=request.grade,
    )
    if options.corpus_dir is not None:
        say(f"comparing code with the notebooks in {options.corpus_dir}")
    elif options.corpus_index is not None:
        say(f"comparing code with the corpus index {options.corpus_index}")
    return audit_run(run, ruleset=ruleset, options=options, grade=grade, grade_skipped=grade_skipped, answers=answers,
                     policy=policy)


def _answer_matching(spec: Any) -> dict[str, Any]:
    """How the competition's grader pairs submission columns and ids with the answers'.

    ``answer_columns`` and ``column_aliases`` (target -> other column name) and
    ``ids_by_number`` (ids matched by the number they spell), from the competition's scoring
    options; nothing for a competition graded by its own grader function.
    """
    metric = getattr(spec.metric, "metric", None)
    if metric is None:
        return {}
    from mleaudit.grading.validation import scoring_options

    options, _ = scoring_options(metric, id_column=spec.id_column, target_columns=spec.target_columns,
                                 params=spec.metric.params)
    return {"answer_columns": dict(options.answer_columns), "column_aliases": dict(options.column_aliases),
            "ids_by_number": options.id_match == "number"}


def _unread_submission(run: Run) -> Skipped | None:
    candidates = set(RunLayout.submission_candidates(run.layout))
    return next((item for item in run.skipped if item.path in candidates), None)


def _with_competition(run: Run, competition_id: str) -> Run:
    from dataclasses import replace

    return replace(run, competition_id=competition_id)
