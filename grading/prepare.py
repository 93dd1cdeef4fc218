"""Prepare a competition's public/private split and verify it by checksum.

Preparation follows MLE-bench: the competition's ``prepare(raw, public, private)`` turns the
original Kaggle files (or data shipped inside a package) into a public dir (what an agent
sees) and a private dir (the held-out answers). It writes into a temporary folder next to the
target and moves it into place only when it is complete and, if the competition has a
``checksums.yaml``, when every prepared file has the recorded MD5 — so an interrupted or
non-reproducible preparation never leaves a half-written or different dataset behind.

Checksums are MLE-bench's: MD5 hex digests of the files directly inside each dir whose
extension is one of csv, json, jsonl, parquet, bson (``description.md`` is not covered).

:func:`prepare_competitions` prepares several competitions and reports each outcome instead of
stopping at the first that cannot be prepared; :func:`download_raw` fetches a competition's
Kaggle archive (see :mod:`mleaudit.grading.kaggle`), checks it against the ``zip`` MD5 MLE-bench
recorded, and extracts it into the raw dir. :func:`one_hot_labels` and
:func:`write_prepared_csv` are the helpers competitions' ``prepare.py`` files use to write
MLE-bench's formats byte for byte.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

import numpy as np
import pandas as pd

from mleaudit.grading import paths
from mleaudit.grading.errors import ChecksumMismatch, ConfigError, GradingError, RawDataMissing
from mleaudit.grading.registry import CompetitionRegistry
from mleaudit.grading.spec import CHECKSUMS_FILE, CompetitionSpec

if TYPE_CHECKING:
    from mleaudit.grading.kaggle import KaggleClient

__all__ = [
    "CHECKSUM_EXTENSIONS",
    "PreparedData",
    "one_hot_labels",
    "write_prepared_csv",
    "md5_file",
    "compute_checksums",
    "verify_checksums",
    "prepare_competition",
    "not_preparable_reason",
    "verification_text",
    "archive_checksum",
    "download_raw",
    "PrepareOutcome",
    "prepare_competitions",
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


def write_prepared_csv(frame: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write a prepared table as MLE-bench does: no index, pandas' default number formatting.

    The line terminator is fixed to ``\\n`` (pandas would use ``os.linesep``), so the bytes,
    and with them the checksums, are the same on every platform.
    """
    frame.to_csv(path, index=False, lineterminator="\n")


def one_hot_labels(frame: pd.DataFrame, id_column: str, target_column: str, classes: list[str]) -> pd.DataFrame:
    """Turn one label per row into MLE-bench's one-hot answer table.

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns ``[id_column, target_column, ...]``, one row per example.
    id_column, target_column : str
        The id and the class-label columns.
    classes : list of str
        Every class, in the column order of the competition's sample submission.

    Returns
    -------
    pandas.DataFrame
        Columns ``[id_column, *classes]`` with integer 0/1 values, one 1 per row, and the
        index of ``frame`` (MLE-bench's ``df_to_one_hot`` layout).

    Raises
    ------
    ValueError
        If a label is not one of ``classes``.

    Examples
    --------
    >>> import pandas as pd
    >>> one_hot_labels(pd.DataFrame({"id": [7, 9], "y": ["b", "a"]}), "id", "y", ["a", "b"]).values.tolist()
    [[7, 0, 1], [9, 1, 0]]
    """
    position = {name: j for j, name in enumerate(classes)}
    labels = frame[target_column].tolist()
    unknown = sorted({str(label) for label in labels if label not in position})
    if unknown:
        raise ValueError(f"labels not among the {len(classes)} classes: {', '.join(unknown[:5])}")
    matrix = np.zeros((len(frame), len(classes)), dtype=np.int64)
    matrix[np.arange(len(frame)), [position[label] for label in labels]] = 1
    table = pd.DataFrame(matrix, index=frame.index, columns=list(classes))
    table.insert(0, id_column, frame[id_column])
    return table


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


def archive_checksum(spec: CompetitionSpec) -> str | None:
    """MD5 of the Kaggle archive recorded as ``zip`` in checksums.yaml, or ``None``."""
    path = spec.root / CHECKSUMS_FILE
    if not path.is_file():
        return None
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot be read: {exc}") from None
    digest = data.get("zip") if isinstance(data, dict) else None
    if digest is not None and (not isinstance(digest, str) or len(digest) != 32):
        raise ConfigError(f"{path}: field 'zip': expected a 32-digit MD5")
    return digest


def download_raw(spec: CompetitionSpec, registry: CompetitionRegistry, client: "KaggleClient", *, verify: bool = True) -> Path:
    """Download a competition's Kaggle archive and extract it into ``<data>/<id>/raw``.

    Parameters
    ----------
    spec : CompetitionSpec
        The competition.
    registry : CompetitionRegistry
        Gives the data dir.
    client : mleaudit.grading.kaggle.KaggleClient
        A connected Kaggle client.
    verify : bool
        Compare the archive with the ``zip`` MD5 of checksums.yaml when one is recorded.

    Returns
    -------
    pathlib.Path
        The raw dir.

    Raises
    ------
    mleaudit.grading.kaggle.KaggleError
        If the download or the extraction fails.
    ChecksumMismatch
        If the archive differs from the one MLE-bench recorded.
    """
    from mleaudit.grading.kaggle import extract_archive

    archive = client.download_competition(spec.id, paths.competition_data_dir(registry.data_dir, spec.id))
    expected = archive_checksum(spec) if verify else None
    if expected is not None:
        actual = md5_file(archive)
        if actual != expected:
            raise ChecksumMismatch(
                f"Checksums do not match for {spec.id}:\nzip/{archive.name}: MD5 {actual}, expected {expected}"
            )
    raw = registry.raw_dir(spec.id)
    extract_archive(archive, raw)
    return raw


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
