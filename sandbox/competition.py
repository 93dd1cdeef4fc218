"""Glue between a competition of the grading registry and a sandbox run.

For a competition id it prepares the data when needed, and returns the public folder (mounted
at ``/home/data``), the host paths that must stay out of the sandbox (the private answers and
the raw Kaggle files, which hold the held-out labels too) and the validator the host-side
endpoint calls. ``grading`` is imported inside the functions, so the sandbox package keeps
depending only on ``mleaudit.audit.run`` at import time.

The validator is a :class:`CompetitionValidator`: a small picklable object (the competition id
and two folders) that the endpoint's worker process unpickles and that loads the competition's
spec there, once; it returns :class:`mleaudit.grading.grade.SubmissionCheck` verdicts whose reason codes
the endpoint turns into templated replies. It also carries the competition's public facts those
replies may state (:class:`mleaudit.sandbox.feedback.PublicFacts`: the sample submission's row count and
what the metric needs), read from the config and the public folder, never from the answers.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from typing import Any

from mleaudit.sandbox.feedback import PublicFacts, read_shape
from mleaudit.sandbox.validation import Validator

__all__ = ["CompetitionSetup", "CompetitionValidator", "public_facts", "setup_competition", "submission_size_limit"]

logger = logging.getLogger(__name__)

#: The endpoint accepts bodies up to this many times the public sample submission's size ...
DEFAULT_SIZE_MULTIPLE = 10
#: ... and never less than this many bytes.
MIN_SUBMISSION_BYTES = 1 << 20


def submission_size_limit(sample_bytes: int, multiple: float = DEFAULT_SIZE_MULTIPLE) -> int:
    """The largest submission the endpoint accepts, from the sample submission's size.

    Parameters
    ----------
    sample_bytes : int
        Size of the public ``sample_submission.csv`` in bytes (a real submission has the same
        rows; longer numbers or labels make it a few times larger at most).
    multiple : float
        How many times the sample's size is accepted (:data:`DEFAULT_SIZE_MULTIPLE`).

    Returns
    -------
    int
        ``max(multiple * sample_bytes, MIN_SUBMISSION_BYTES)`` in bytes.

    Raises
    ------
    ValueError
        If ``multiple`` is not positive or ``sample_bytes`` is negative.
    """
    if not multiple > 0:
        raise ValueError(f"the submission size multiple must be positive, not {multiple!r}")
    if sample_bytes < 0:
        raise ValueError(f"a sample submission size cannot be negative ({sample_bytes})")
    return max(int(multiple * sample_bytes), MIN_SUBMISSION_BYTES)


class CompetitionValidator:
    """Check a submission file for one competition: ``path -> mleaudit.grading.grade.SubmissionCheck``.

    Picklable (it holds only the competition id and two folders): the validation endpoint runs
    it in its worker process, where :meth:`warm` loads the spec once.

    Parameters
    ----------
    competition_id : str
        The competition.
    competitions_root, data_dir : pathlib.Path
        Resolved folders of the competitions and the prepared data.
    expected_columns : tuple of str
        The public columns (id and targets), which endpoint replies may name.
    max_submission_bytes : int
        The endpoint's body size limit for this competition (:func:`submission_size_limit`).
    public_facts : PublicFacts, optional
        Public facts endpoint replies may state (:func:`public_facts`); none by default.
    """

    def __init__(self, competition_id: str, competitions_root: Path, data_dir: Path, *,
                 expected_columns: tuple[str, ...] = (), max_submission_bytes: int = MIN_SUBMISSION_BYTES,
                 public_facts: PublicFacts | None = None) -> None:
        self.competition_id = competition_id
        self.competitions_root = Path(competitions_root)
        self.data_dir = Path(data_dir)
        self.expected_columns = tuple(expected_columns)
        self.max_submission_bytes = int(max_submission_bytes)
        self.public_facts = public_facts if public_facts is not None else PublicFacts()
        self._spec: Any = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_spec"] = None  # loaded again where it runs
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        return f"CompetitionValidator({self.competition_id!r})"

    def warm(self) -> None:
        """Load the competition's spec (imports grading; done once per process)."""
        if self._spec is None:
            import mleaudit.grading.grade  # noqa: F401 - the scoring path, imported once per process
            from mleaudit.grading import CompetitionRegistry

            self._spec = CompetitionRegistry(self.competitions_root, self.data_dir).get(self.competition_id)

    def __call__(self, path: Path) -> Any:
        """Check one file.

        Parameters
        ----------
        path : pathlib.Path
            The submission file.

        Returns
        -------
        mleaudit.grading.grade.SubmissionCheck
            The verdict, reason code, column and submission row (its ``message`` is host-side).
        """
        from mleaudit.grading.grade import check_submission

        self.warm()
        return check_submission(path, self._spec, self.data_dir)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompetitionSetup:
    """What a sandbox run needs from a competition.

    Attributes
    ----------
    competition_id : str
        The competition.
    public_dir : pathlib.Path
        ``<data>/<id>/prepared/public``, mounted read-only at ``/home/data``.
    hidden : tuple of pathlib.Path
        The private folder, the answers file and the raw folder: never reachable in the sandbox.
    validator : CompetitionValidator
        A :data:`mleaudit.sandbox.validation.Validator`: ``path -> SubmissionCheck`` from
        :func:`mleaudit.grading.grade.check_submission`, picklable for the endpoint's worker process.
    prepared_now : bool
        Whether the data was prepared by this call.
    expected_columns : tuple of str
        The public columns of a submission: the id column(s), then the target columns.
    max_submission_bytes : int
        The validation endpoint's body size limit for this competition, in bytes: a multiple
        (``size_multiple``, default :data:`DEFAULT_SIZE_MULTIPLE`) of the public sample
        submission's size, at least :data:`MIN_SUBMISSION_BYTES`.
    public_facts : PublicFacts
        What endpoint replies may state about the competition (:func:`public_facts`).
    """

    competition_id: str
    public_dir: Path
    hidden: tuple[Path, ...]
    validator: Validator
    prepared_now: bool
    expected_columns: tuple[str, ...] = ()
    max_submission_bytes: int = MIN_SUBMISSION_BYTES
    public_facts: PublicFacts = PublicFacts()


def public_facts(spec: Any, data_dir: Path) -> PublicFacts:
    """The public facts of a competition that validation replies may state.

    Read from the competition's config and metric (what the target columns must hold, the
    config's value range) and from the public sample submission (its data rows); never from the
    answers.

    Parameters
    ----------
    spec : mleaudit.grading.spec.CompetitionSpec
        The competition.
    data_dir : pathlib.Path
        The prepared-data dir.

    Returns
    -------
    PublicFacts
        ``target_kind`` is ``None`` for a competition scored by its own grader, and
        ``sample_rows`` ``None`` when the sample submission cannot be read through.
    """
    from mleaudit.grading.errors import ConfigError
    from mleaudit.grading.validation import scoring_options

    metric = spec.metric.metric
    kind: str | None = None
    value_range: tuple[float, float] | None = None
    if metric is not None:
        kind = str(metric.target_kind.value)
        try:
            options, _ = scoring_options(metric, id_column=spec.id_column, target_columns=spec.target_columns,
                                         params=spec.metric.params)
            value_range = options.value_range
        except ConfigError:
            value_range = None
    sample_rows = read_shape(spec.sample_submission_path(Path(data_dir))).n_rows
    return PublicFacts(sample_rows=sample_rows, target_kind=kind, value_range=value_range)


def setup_competition(
    competition_id: str,
    *,
    competitions_root: str | os.PathLike[str] | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    prepare: bool = True,
    progress: Callable[[str], None] | None = None,
    size_multiple: float = DEFAULT_SIZE_MULTIPLE,
) -> CompetitionSetup:
    """Look up a competition, prepare its data if needed, and describe it for a sandbox run.

    Parameters
    ----------
    competition_id : str
        Competition id (a folder of the competitions root).
    competitions_root, data_dir : path-like, optional
        As for ``mleaudit prepare`` (``--competitions``, ``--data-dir``).
    prepare : bool
        Prepare the data when it is missing (otherwise a missing dataset is an error).
    progress : callable, optional
        Receives one-line progress messages.
    size_multiple : float
        The endpoint accepts submissions up to this many times the size of the public sample
        submission (at least :data:`MIN_SUBMISSION_BYTES`).

    Returns
    -------
    CompetitionSetup
        The folders, the validator and the endpoint's bounds for this competition.

    Raises
    ------
    mleaudit.grading.errors.GradingError
        If the competition is unknown, its data cannot be prepared (raw files missing), or
        it is not prepared and ``prepare`` is false.
    """
    from mleaudit.grading import CompetitionRegistry, find_competitions_root, prepare_competition, resolve_data_dir
    from mleaudit.grading.errors import DatasetNotPrepared

    root = find_competitions_root(competitions_root)
    registry = CompetitionRegistry(root, resolve_data_dir(data_dir))
    spec = registry.get(competition_id)
    prepared_now = False
    if not registry.is_prepared(competition_id):
        if not prepare:
            raise DatasetNotPrepared(f"competition {competition_id!r} is not prepared in {registry.data_dir}; run mleaudit prepare")
        if progress is not None:
            progress(f"preparing {competition_id} in {registry.data_dir} ...")
        prepare_competition(spec, registry)
        prepared_now = True
    data = Path(registry.data_dir)
    id_columns = (spec.id_column,) if isinstance(spec.id_column, str) else tuple(spec.id_column)
    expected = tuple(dict.fromkeys(str(c) for c in (*id_columns, *spec.target_columns)))
    try:
        sample_bytes = spec.sample_submission_path(data).stat().st_size
    except OSError as exc:
        raise DatasetNotPrepared(
            f"competition {competition_id!r}: sample submission {spec.sample_submission_path(data)} "
            f"cannot be read ({exc.strerror or exc}); run mleaudit prepare"
        ) from None
    max_bytes = submission_size_limit(sample_bytes, size_multiple)
    facts = public_facts(spec, data)
    validator = CompetitionValidator(competition_id, Path(root), data, expected_columns=expected,
                                     max_submission_bytes=max_bytes, public_facts=facts)
    hidden = (registry.private_dir(competition_id), spec.answers_path(data), registry.raw_dir(competition_id))
    return CompetitionSetup(
        competition_id=competition_id,
        public_dir=registry.public_dir(competition_id),
        hidden=tuple(dict.fromkeys(Path(p) for p in hidden)),
        validator=validator,
        prepared_now=prepared_now,
        expected_columns=expected,
        max_submission_bytes=max_bytes,
        public_facts=facts,
    )
