"""One competition prepared: its ``prepare`` run into a staging folder, checked, moved into place."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from mleaudit.grading import paths
from mleaudit.grading.errors import ChecksumMismatch, ConfigError, GradingError, RawDataMissing
from mleaudit.grading.prepare.checksums import compute_checksums, verify_checksums
from mleaudit.grading.registry import CompetitionRegistry
from mleaudit.grading.spec import CompetitionSpec

# The package's logger, under the package's name.
logger = logging.getLogger(__package__)


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedData:
    """Where a competition's prepared data is and how it was checked.

    Attributes
    ----------
    competition_id : str
        The competition.
    public_dir, private_dir : pathlib.Path
        The prepared dirs.
    checksums : dict
        ``{"public": {file: md5}, "private": {file: md5}}`` of the prepared files.
    verified : bool
        True when the competition has a checksums.yaml and every file matched it.
    reused : bool
        True when the data was already prepared and was left as it was.
    """

    competition_id: str
    public_dir: Path
    private_dir: Path
    checksums: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    verified: bool = False
    reused: bool = False


def _check_raw(spec: CompetitionSpec, raw: Path, *, verify: bool = True) -> None:
    missing = [name for name in spec.raw_files if not (raw / name).is_file()]
    if missing:
        raise RawDataMissing(
            f"Competition {spec.id!r} needs the Kaggle {'file' if len(missing) == 1 else 'files'} "
            f"{', '.join(missing)} in {raw}; download the competition data from Kaggle and pass --raw DIR."
        )
    if verify and spec.checksums is not None and "raw" in spec.checksums:
        verify_checksums(spec.checksums, {"raw": raw}, label=spec.id)


def prepare_competition(
    spec: CompetitionSpec,
    registry: CompetitionRegistry,
    raw: str | os.PathLike[str] | None = None,
    force: bool = False,
    verify: bool = True,
) -> PreparedData:
    """Create ``<data>/<id>/prepared/{public,private}`` for a competition.

    Parameters
    ----------
    spec : CompetitionSpec
        The competition; it must have a ``prepare`` function.
    registry : CompetitionRegistry
        Gives the data dir.
    raw : path-like, optional
        Folder with the original Kaggle files (``spec.raw_files``); defaults to
        ``<data>/<id>/raw``. Competitions whose data ships in a package need none.
    force : bool
        Rebuild even if prepared data exists (it is replaced only after the new data is
        complete and verified).
    verify : bool
        Compare raw and prepared files with checksums.yaml (MLE-bench's default). With
        ``False`` the checksums are computed and returned but not enforced, for raw files that
        differ from Kaggle's originals; the result then has ``verified`` false.

    Returns
    -------
    PreparedData
        Dirs and checksums; ``reused`` when existing data was kept.

    Raises
    ------
    ConfigError
        If the competition has no prepare function, or its prepare writes no answers or
        sample submission where the config says.
    RawDataMissing
        If a needed raw file is absent.
    ChecksumMismatch
        If raw files, freshly prepared files, or (without ``force``) already prepared files
        differ from checksums.yaml; the message names each file.
    GradingError
        If the prepare function itself fails (the message names it and the cause).
    """
    if spec.prepare is None:
        raise ConfigError(not_preparable_reason(spec, registry))
    public = registry.public_dir(spec.id)
    private = registry.private_dir(spec.id)
    if not force and registry.is_prepared(spec.id):
        sums = {"public": compute_checksums(public), "private": compute_checksums(private)}
        verified = False
        if spec.checksums is not None and verify:
            try:
                sums = verify_checksums(spec.checksums, {"public": public, "private": private}, label=spec.id)
            except ChecksumMismatch as exc:
                raise ChecksumMismatch(f"{exc}\nThe prepared data in {public.parent} is stale; rerun with --force.") from None
            verified = True
        logger.info("%s is already prepared in %s", spec.id, public.parent)
        return PreparedData(
            competition_id=spec.id, public_dir=public, private_dir=private, checksums=sums, verified=verified, reused=True
        )

    raw_path: Path | None = Path(raw) if raw is not None else None
    if spec.raw_files:
        raw_path = raw_path or registry.raw_dir(spec.id)
        _check_raw(spec, raw_path, verify=verify)

    target = paths.prepared_dir(registry.data_dir, spec.id)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".prepared-", dir=target.parent))
    try:
        stage_public, stage_private = staging / "public", staging / "private"
        stage_public.mkdir()
        stage_private.mkdir()
        logger.info("preparing %s into %s", spec.id, staging)
        try:
            spec.prepare(raw=raw_path, public=stage_public, private=stage_private)
        except GradingError:
            raise
        except Exception as exc:  # noqa: BLE001 - report which competition's prepare failed and why
            raise GradingError(f"prepare function of {spec.id!r} ({spec.root / 'prepare.py'}) failed: {exc!r}") from exc
        if spec.description:
            (stage_public / "description.md").write_text(spec.description.rstrip() + "\n", encoding="utf-8")
        _check_outputs(spec, staging)
        if spec.checksums is not None and verify:
            sums = verify_checksums(spec.checksums, {"public": stage_public, "private": stage_private}, label=spec.id)
        else:
            sums = {"public": compute_checksums(stage_public), "private": compute_checksums(stage_private)}
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    logger.info("prepared %s in %s", spec.id, target)
    return PreparedData(
        competition_id=spec.id,
        public_dir=public,
        private_dir=private,
        checksums=sums,
        verified=spec.checksums is not None and verify,
        reused=False,
    )


def _check_outputs(spec: CompetitionSpec, staging: Path) -> None:
    prefix = f"{spec.id}/prepared/"
    for field_name, rel in (("dataset.answers", spec.answers), ("dataset.sample_submission", spec.sample_submission)):
        if not rel.startswith(prefix):
            continue  # not inside this competition's prepared dir: checked when grading
        if not (staging / rel[len(prefix) :]).is_file():
            raise ConfigError(f"{spec.config_path}: field '{field_name}': prepare did not write {rel}")
    for side in ("public", "private"):
        if not any((staging / side).iterdir()):
            raise ConfigError(f"{spec.config_path}: field 'prepare': prepare wrote nothing to the {side} dir")


def verification_text(spec: CompetitionSpec, result: PreparedData) -> str:
    """``checksums verified``, ``no checksums recorded`` or ``checksums not verified`` (``verify=False``)."""
    if result.verified:
        return "checksums verified"
    return "no checksums recorded" if spec.checksums is None else "checksums not verified"


def not_preparable_reason(spec: CompetitionSpec, registry: CompetitionRegistry) -> str:
    """Why a competition without a prepare function cannot be prepared, and what to do instead."""
    return (
        f"{spec.id}: no prepare function in {spec.config_path} (this checkout does not reproduce "
        f"MLE-bench's preparation of it); to grade it, put MLE-bench's prepared public/ and private/ "
        f"folders in {paths.prepared_dir(registry.data_dir, spec.id)}"
    )
