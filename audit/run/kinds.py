"""What a run file is by its name: :class:`ArtifactKind` and :func:`classify_path`.

A file whose name says nothing (``ArtifactKind.OTHER``) is told by its content instead
(:mod:`mleaudit.audit.run.sniffing`); :func:`_sniffed_by_content` says which files those are and
:func:`_partly_readable` which files over the size cap are read in part.
"""

from __future__ import annotations

import enum
import functools
from pathlib import PurePosixPath

from mleaudit.audit.parsing import language_for_path
from mleaudit.audit.run.layout import RunLayout


class ArtifactKind(enum.Enum):
    """What a file of the run is."""

    CODE = "code"
    NOTEBOOK = "notebook"
    LOG = "log"
    SUBMISSION = "submission"
    DATA = "data"
    OTHER = "other"


#: Extensions read as agent logs or transcripts (``.eval``: Inspect eval-log archives).
_LOG_SUFFIXES = frozenset({".log", ".txt", ".json", ".jsonl", ".ndjson", ".md", ".out", ".err", ".eval"})
#: Logs that are archives, not text: never read in part.
_ARCHIVE_SUFFIXES = frozenset({".eval"})
#: Extensions of tabular or binary data files (inputs, predictions, model dumps).
_DATA_SUFFIXES = frozenset(
    {
        ".csv", ".tsv", ".parquet", ".feather", ".arrow", ".npy", ".npz", ".pkl", ".pickle",
        ".joblib", ".h5", ".hdf5", ".zip", ".gz", ".tar", ".bz2", ".xz", ".7z",
    }
)  # fmt: skip


@functools.lru_cache(maxsize=8192)
def classify_path(path: str) -> tuple[ArtifactKind, str | None]:
    """The artifact kind and grammar name of a run file, from its name alone.

    Parameters
    ----------
    path : str
        POSIX path relative to the run root.

    Returns
    -------
    (ArtifactKind, str or None)
        ``CODE`` with ``"python"``/``"bash"`` for ``.py``/``.sh`` files, ``NOTEBOOK`` for
        ``.ipynb``, ``LOG`` for ``.log``/``.txt``/``.json``/``.jsonl``/``.md``, ``DATA`` for
        tables and binary dumps, else ``OTHER``; the language is ``None`` except for code.
        The submission is recognised by :func:`load_run`, not here.

    Examples
    --------
    >>> classify_path("code/train.py")
    (<ArtifactKind.CODE: 'code'>, 'python')
    >>> classify_path("logs/agent.log")
    (<ArtifactKind.LOG: 'log'>, None)

    Notes
    -----
    A function of the name alone, asked several times per file (walk, load, read): the answers
    are cached.
    """
    pure = PurePosixPath(path)
    suffix = pure.suffix.lower()
    language = language_for_path(path)
    if language is not None:
        return ArtifactKind.CODE, language
    if suffix == ".ipynb":
        return ArtifactKind.NOTEBOOK, None
    if len(pure.parts) == 1 and pure.name in RunLayout.RUN_META:
        # Run metadata describes the run; it is not something the agent logged.
        return ArtifactKind.OTHER, None
    if suffix in _LOG_SUFFIXES:
        return ArtifactKind.LOG, None
    if suffix in _DATA_SUFFIXES:
        return ArtifactKind.DATA, None
    return ArtifactKind.OTHER, None


@functools.lru_cache(maxsize=8192)
def _partly_readable(rel: str) -> bool:
    """Whether a file over the size cap is read in part: text logs are, archives are not."""
    kind, _ = classify_path(rel)
    return kind is ArtifactKind.LOG and PurePosixPath(rel).suffix.lower() not in _ARCHIVE_SUFFIXES


def _sniffed_by_content(rel: str) -> bool:
    """Whether a file's kind comes from its content: its name says nothing (``ArtifactKind.OTHER``)
    and it is not the run metadata at the top of the run."""
    if "/" not in rel and rel in RunLayout.RUN_META:
        return False
    return classify_path(rel)[0] is ArtifactKind.OTHER
