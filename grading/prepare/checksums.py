"""MLE-bench's checksums: MD5 of prepared, raw and archived files, compared with ``checksums.yaml``."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Mapping

from mleaudit.grading.errors import ChecksumMismatch, ConfigError
from mleaudit.grading.spec import CHECKSUMS_FILE, CompetitionSpec


#: File extensions covered by checksums (MLE-bench's ``generate_checksums`` defaults).
CHECKSUM_EXTENSIONS = ("csv", "json", "jsonl", "parquet", "bson")
_CHUNK = 1 << 20


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
