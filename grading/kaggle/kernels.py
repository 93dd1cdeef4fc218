"""A competition's most voted public notebooks saved as a reference corpus."""

from __future__ import annotations

import logging
from pathlib import Path

from mleaudit.grading.kaggle.client import KaggleClient
from mleaudit.grading.kaggle.errors import KaggleError
from mleaudit.grading.kaggle.records import FetchedKernels

# The package's logger, under the package's name.
logger = logging.getLogger(__package__)


def fetch_top_kernels(
    client: KaggleClient, competition_id: str, directory: Path, *, top: int = 50
) -> FetchedKernels:
    """Save the ``top`` most voted public notebooks of a competition as a reference corpus.

    Parameters
    ----------
    client : KaggleClient
        A connected client.
    competition_id : str
        Kaggle slug.
    directory : pathlib.Path
        Corpus folder; receives ``<owner>/<slug>.<ext>`` files and ``kernels.txt`` (the saved
        references, one a line, most voted first).
    top : int
        How many notebooks to list (>= 1).

    Returns
    -------
    FetchedKernels
        Saved paths and references; notebooks that could not be pulled are listed in
        ``failed`` and left out of ``kernels.txt``.

    Raises
    ------
    ValueError
        If ``top`` < 1.
    KaggleError
        If listing the notebooks fails.
    """
    if top < 1:
        raise ValueError(f"top must be at least 1, got {top}")
    listed = client.top_kernels(competition_id, top)
    directory.mkdir(parents=True, exist_ok=True)
    saved: list[str] = []
    refs: list[str] = []
    failed: dict[str, str] = {}
    for info in listed:
        try:
            path = client.pull_kernel(info.ref, directory)
        except KaggleError as exc:
            failed[info.ref] = str(exc)
            logger.warning("%s", exc)
            continue
        saved.append(path.relative_to(directory).as_posix())
        refs.append(info.ref)
    (directory / "kernels.txt").write_text("".join(f"{ref}\n" for ref in refs), encoding="utf-8")
    return FetchedKernels(
        competition_id=competition_id, directory=directory, saved=tuple(saved), refs=tuple(refs), failed=failed
    )
