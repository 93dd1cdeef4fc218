"""A competition's Kaggle archive downloaded, checked against MLE-bench's MD5 and extracted."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mleaudit.grading import paths
from mleaudit.grading.errors import ChecksumMismatch
from mleaudit.grading.prepare.checksums import archive_checksum, md5_file
from mleaudit.grading.registry import CompetitionRegistry
from mleaudit.grading.spec import CompetitionSpec

if TYPE_CHECKING:
    from mleaudit.grading.kaggle import KaggleClient


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
