"""Kaggle's zip archives extracted safely: nested archives too, no member outside, a cap on size."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path, PurePosixPath

from mleaudit.grading.kaggle.errors import KaggleError


#: Largest total size an archive may expand to (a guard against zip bombs): 2 TiB is more than
#: any MLE-bench competition (the largest are a few hundred GB).
MAX_EXTRACTED_BYTES = 2 << 40


def extract_archive(archive: Path, directory: Path, *, max_bytes: int = MAX_EXTRACTED_BYTES) -> list[Path]:
    """Extract a zip archive, and the zip archives inside it, safely.

    Nested archives are extracted next to themselves (``train.csv.zip`` gives ``train.csv``,
    ``images.zip`` gives ``images/...``) and then removed, so the raw dir holds the files a
    competition's ``prepare`` reads.

    Parameters
    ----------
    archive : pathlib.Path
        The archive.
    directory : pathlib.Path
        Destination (created if needed).
    max_bytes : int
        Refuse archives whose members add up to more (uncompressed).

    Returns
    -------
    list of pathlib.Path
        Files extracted, sorted.

    Raises
    ------
    KaggleError
        If the file is not a zip archive, a member's path would leave ``directory`` (absolute,
        ``..``), or the archive is larger than ``max_bytes`` uncompressed.
    """
    directory.mkdir(parents=True, exist_ok=True)
    extracted: list[Path] = []
    pending = [(archive, directory, False)]
    root = directory.resolve()
    while pending:
        current, into, remove = pending.pop()
        try:
            zipped = zipfile.ZipFile(current)
        except (zipfile.BadZipFile, OSError) as exc:
            raise KaggleError(f"{current}: not a readable zip archive ({exc})") from None
        with zipped:
            members = zipped.infolist()
            total = sum(m.file_size for m in members)
            if total > max_bytes:
                raise KaggleError(f"{current}: expands to {total:,} bytes, more than the {max_bytes:,} allowed")
            for member in members:
                name = PurePosixPath(member.filename)
                if name.is_absolute() or ".." in name.parts or "\\" in member.filename:
                    raise KaggleError(f"{current}: member {member.filename!r} would be written outside {into}")
                target = (into / name).resolve()
                if root not in (target, *target.parents):
                    raise KaggleError(f"{current}: member {member.filename!r} would be written outside {directory}")
                if member.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with zipped.open(member) as source, open(target, "wb") as sink:
                    shutil.copyfileobj(source, sink)
                if target.suffix.lower() == ".zip":
                    pending.append((target, target.parent, True))
                else:
                    extracted.append(target)
        if remove:
            current.unlink()
    return sorted(extracted)
