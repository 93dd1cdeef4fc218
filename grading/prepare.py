"""Prepare a competition's public/private split and verify it by checksum.

Preparation follows MLE-bench: the competition's ``prepare(raw, public, private)`` turns the
original Kaggle files (or data shipped inside a package) into a public dir (what an agent
sees) and a private dir (the held-out answers). It writes into a temporary folder next to the
target and moves it into place only when it is complete and, if the competition has a
``checksums.yaml``, when every prepared file has the recorded MD5 — so an interrupted or
non-reproducible preparation never leaves a half-written or different dataset behind.

Checksums are MLE-bench's: MD5 hex digests of the files directly inside each dir whose
extension is one of csv, json, jsonl, parquet, bson (``description.md`` is not covered).
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from grading import paths
from grading.errors import ChecksumMismatch, ConfigError, GradingError, RawDataMissing
from grading.registry import CompetitionRegistry
from grading.spec import CHECKSUMS_FILE, CompetitionSpec

__all__ = [
    "CHECKSUM_EXTENSIONS",
    "PreparedData",
    "md5_file",
    "compute_checksums",
    "verify_checksums",
    "prepare_competition",
]

logger = logging.getLogger(__name__)

#: File extensions covered by checksums (MLE-bench's ``generate_checksums`` defaults).
CHECKSUM_EXTENSIONS = ("csv", "json", "jsonl", "parquet", "bson")
_CHUNK = 1 << 20


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


def md5_file(path: str | os.PathLike[str]) -> str:
    """MD5 hex digest of a file's bytes."""
    digest = hashlib.md5()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def compute_checksums(directory: str | os.PathLike[str], names: list[str] | None = None) -> dict[str, str]:
    """MD5 of the data files directly inside ``directory``.

    Parameters
    ----------
    directory : path-like
        A public, private or raw dir.
    names : list of str, optional
        Only these files (those that exist); by default every file with an extension in
        :data:`CHECKSUM_EXTENSIONS`.

    Returns
    -------
    dict
        File name → MD5 hex digest, sorted by name.
    """
    directory = Path(directory)
    if names is not None:
        files = [directory / name for name in names if (directory / name).is_file()]
    else:
        files = [p for p in directory.iterdir() if p.is_file() and p.suffix.lstrip(".") in CHECKSUM_EXTENSIONS]
    return {p.name: md5_file(p) for p in sorted(files, key=lambda p: p.name)}


def verify_checksums(
    expected: Mapping[str, Mapping[str, str]], dirs: Mapping[str, str | os.PathLike[str]], *, label: str = ""
) -> dict[str, dict[str, str]]:
    """Compare files against recorded checksums.

    Parameters
    ----------
    expected : mapping
        ``{section: {file name: md5}}``, as in checksums.yaml.
    dirs : mapping
        ``{section: dir}`` for the sections to check (e.g. ``public``, ``private``). For the
        ``raw`` section only the recorded files are checked, since a raw dir may hold other
        Kaggle files; for the others the set of data files must match exactly.
    label : str
        Competition id, for the message.

    Returns
    -------
    dict
        The actual checksums of the checked sections.

    Raises
    ------
    ChecksumMismatch
        Listing every file that differs, is missing, or is not recorded, as
        ``<section>/<file>: ...``, one per line.
    """
    actual: dict[str, dict[str, str]] = {}
    problems: list[str] = []
    for section, directory in dirs.items():
        recorded = dict(expected.get(section, {}))
        names = sorted(recorded) if section == "raw" else None
        found = compute_checksums(directory, names)
        actual[section] = found
        for name in sorted(set(recorded) | set(found)):
            if name not in found:
                problems.append(f"{section}/{name}: missing (expected MD5 {recorded[name]})")
            elif name not in recorded:
                problems.append(f"{section}/{name}: not recorded in {CHECKSUMS_FILE} (MD5 {found[name]})")
            elif found[name] != recorded[name]:
                problems.append(f"{section}/{name}: MD5 {found[name]}, expected {recorded[name]}")
    if problems:
        subject = f" for {label}" if label else ""
        raise ChecksumMismatch(f"Checksums do not match{subject}:\n" + "\n".join(problems))
    return actual


def _check_raw(spec: CompetitionSpec, raw: Path) -> None:
    missing = [name for name in spec.raw_files if not (raw / name).is_file()]
    if missing:
        raise RawDataMissing(
            f"Competition {spec.id!r} needs the Kaggle {'file' if len(missing) == 1 else 'files'} "
            f"{', '.join(missing)} in {raw}; download the competition data from Kaggle and pass --raw DIR."
        )
    if spec.checksums is not None and "raw" in spec.checksums:
        verify_checksums(spec.checksums, {"raw": raw}, label=spec.id)


def prepare_competition(
    spec: CompetitionSpec,
    registry: CompetitionRegistry,
    raw: str | os.PathLike[str] | None = None,
    force: bool = False,
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
        raise ConfigError(f"{spec.config_path}: field 'prepare': competition {spec.id!r} has no prepare function")
    public = registry.public_dir(spec.id)
    private = registry.private_dir(spec.id)
    if not force and registry.is_prepared(spec.id):
        sums = {"public": compute_checksums(public), "private": compute_checksums(private)}
        verified = False
        if spec.checksums is not None:
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
        _check_raw(spec, raw_path)

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
        if spec.checksums is not None:
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
        verified=spec.checksums is not None,
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
