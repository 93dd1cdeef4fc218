"""Several competitions prepared in turn; one that cannot be prepared is reported, not fatal."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mleaudit.grading.errors import GradingError, RawDataMissing
from mleaudit.grading.prepare.download import download_raw
from mleaudit.grading.prepare.preparing import PreparedData, not_preparable_reason, prepare_competition, verification_text
from mleaudit.grading.registry import CompetitionRegistry
from mleaudit.grading.spec import CompetitionSpec

if TYPE_CHECKING:
    from mleaudit.grading.kaggle import KaggleClient

# The package's logger, under the package's name.
logger = logging.getLogger(__package__)


@dataclass(frozen=True, slots=True, kw_only=True)
class PrepareOutcome:
    """What happened to one competition of a batch preparation.

    Attributes
    ----------
    competition_id : str
        The competition.
    status : str
        ``prepared``, ``reused`` (already prepared and verified), ``skipped`` (no prepare
        function, or its raw files are not there: nothing was written) or ``failed`` (the
        preparation ran and failed, e.g. a checksum mismatch).
    message : str
        The reason for ``skipped`` and ``failed``; a one-line summary otherwise.
    result : PreparedData, optional
        For ``prepared`` and ``reused``.
    """

    competition_id: str
    status: str
    message: str
    result: PreparedData | None = None


def prepare_competitions(
    specs: list[CompetitionSpec],
    registry: CompetitionRegistry,
    *,
    raw: str | os.PathLike[str] | None = None,
    raw_root: str | os.PathLike[str] | None = None,
    force: bool = False,
    verify: bool = True,
    client: "KaggleClient | None" = None,
) -> list[PrepareOutcome]:
    """Prepare several competitions; one that cannot be prepared is reported, not fatal.

    Parameters
    ----------
    specs : list of CompetitionSpec
        The competitions, in the order to prepare them.
    registry : CompetitionRegistry
        Gives the data dir.
    raw : path-like, optional
        The raw dir of a single competition (only with one spec).
    raw_root : path-like, optional
        A folder of per-competition raw dirs, ``<raw_root>/<id>/`` (MLE-bench's layout of
        downloaded data); competitions without a folder there use ``<data>/<id>/raw``.
    force, verify
        As in :func:`prepare_competition`.
    client : mleaudit.grading.kaggle.KaggleClient, optional
        When given, competitions that are not prepared and have a prepare function are first
        downloaded from Kaggle (:func:`download_raw`).

    Returns
    -------
    list of PrepareOutcome
        One per spec, in order.

    Raises
    ------
    ValueError
        If ``raw`` is given with more than one competition.
    """
    if raw is not None and len(specs) != 1:
        raise ValueError("a single raw dir can only be given for one competition; use raw_root for several")
    outcomes = []
    for spec in specs:
        if spec.prepare is None:
            outcomes.append(PrepareOutcome(competition_id=spec.id, status="skipped", message=not_preparable_reason(spec, registry)))
            continue
        raw_dir: Path | None = Path(raw) if raw is not None else None
        if raw_dir is None and raw_root is not None and (Path(raw_root) / spec.id).is_dir():
            raw_dir = Path(raw_root) / spec.id
        try:
            if client is not None and spec.raw_files and raw_dir is None and (force or not registry.is_prepared(spec.id)):
                raw_dir = download_raw(spec, registry, client, verify=verify)
            result = prepare_competition(spec, registry, raw=raw_dir, force=force, verify=verify)
        except RawDataMissing as exc:
            outcomes.append(PrepareOutcome(competition_id=spec.id, status="skipped", message=str(exc)))
            continue
        except GradingError as exc:
            logger.info("preparing %s failed: %s", spec.id, exc)
            outcomes.append(PrepareOutcome(competition_id=spec.id, status="failed", message=str(exc)))
            continue
        check = verification_text(spec, result)
        where = result.public_dir.parent
        if result.reused:
            outcomes.append(PrepareOutcome(competition_id=spec.id, status="reused", message=f"already prepared in {where} ({check})", result=result))
        else:
            outcomes.append(PrepareOutcome(competition_id=spec.id, status="prepared", message=f"prepared in {where} ({check})", result=result))
    return outcomes
