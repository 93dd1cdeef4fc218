"""``run_audit``: what ``mleaudit audit RUN`` is asked (:class:`AuditRequest`) resolved into a loaded
run, its ruleset, its grade and the competition's settings, then audited by ``audit_run``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mleaudit.audit.model import Severity, Skipped
from mleaudit.audit.pipeline.options import AuditOptions
from mleaudit.audit.pipeline.orchestration import audit_run
from mleaudit.audit.report import AuditReport
from mleaudit.audit.rules.policy import RulePolicy
from mleaudit.audit.run import Run, RunLayout


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


def run_audit(request: AuditRequest, progress=None, *, on_expanded=None) -> AuditReport:
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
    on_expanded : callable, optional
        Passed to :func:`audit_run`: called with the loaded run and its expansion.

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
                     policy=policy, on_expanded=on_expanded)


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
