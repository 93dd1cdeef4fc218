"""Glue between a competition of the grading registry and a sandbox run.

For a competition id it prepares the data when needed, and returns the public folder (mounted
at ``/home/data``), the host paths that must stay out of the sandbox (the private answers and
the raw Kaggle files, which hold the held-out labels too) and the validator the host-side
endpoint calls. ``grading`` is imported inside the function, so the sandbox package keeps
depending only on ``audit.run`` at import time.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from sandbox.validation import Validator

__all__ = ["CompetitionSetup", "setup_competition"]

logger = logging.getLogger(__name__)


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
    validator : Validator
        ``(valid, message)`` for a submission file, from :func:`grading.grade.validate_submission`.
    prepared_now : bool
        Whether the data was prepared by this call.
    """

    competition_id: str
    public_dir: Path
    hidden: tuple[Path, ...]
    validator: Validator
    prepared_now: bool


def setup_competition(
    competition_id: str,
    *,
    competitions_root: str | os.PathLike[str] | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    prepare: bool = True,
    progress: Callable[[str], None] | None = None,
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

    Raises
    ------
    grading.errors.GradingError
        If the competition is unknown, its data cannot be prepared (raw files missing), or
        it is not prepared and ``prepare`` is false.
    """
    from grading import CompetitionRegistry, find_competitions_root, prepare_competition, resolve_data_dir
    from grading.errors import DatasetNotPrepared
    from grading.grade import validate_submission

    registry = CompetitionRegistry(find_competitions_root(competitions_root), resolve_data_dir(data_dir))
    spec = registry.get(competition_id)
    prepared_now = False
    if not registry.is_prepared(competition_id):
        if not prepare:
            raise DatasetNotPrepared(f"competition {competition_id!r} is not prepared in {registry.data_dir}; run mleaudit prepare")
        if progress is not None:
            progress(f"preparing {competition_id} in {registry.data_dir} ...")
        prepare_competition(spec, registry)
        prepared_now = True
    data = registry.data_dir

    def validator(path: Path) -> tuple[bool, str]:
        return validate_submission(path, spec, data)

    hidden = (registry.private_dir(competition_id), spec.answers_path(data), registry.raw_dir(competition_id))
    return CompetitionSetup(
        competition_id=competition_id,
        public_dir=registry.public_dir(competition_id),
        hidden=tuple(dict.fromkeys(Path(p) for p in hidden)),
        validator=validator,
        prepared_now=prepared_now,
    )
