"""Reference corpora: folders of public kernels (``.py`` scripts and ``.ipynb`` notebooks) as code units.

Kernels are read as text and never executed. Notebooks become their joined code cells
(:func:`audit.notebooks.read_notebook`), with the cell/line map kept on the unit so fragments can
say "cell 3, line 2". Files that cannot be used (too large, symlinks, not UTF-8, broken notebook
JSON, a kernel language without a grammar such as R) are listed in ``skipped`` with the reason,
and the rest of the corpus still loads.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import NamedTuple

from audit.errors import ConfigError
from audit.model import Skipped
from audit.parsing import LANGUAGES
from audit.units import CodeUnit

__all__ = ["MAX_REFERENCE_BYTES", "REFERENCE_SUFFIXES", "ReferenceCorpus", "load_reference_corpus", "reference_id"]

logger = logging.getLogger(__name__)

#: Files above this size are skipped (notebooks with embedded outputs reach several MB).
MAX_REFERENCE_BYTES = 32 * 1024 * 1024
#: File suffixes read as kernels.
REFERENCE_SUFFIXES = (".py", ".ipynb")


def reference_id(path: str) -> str:
    """The id of a reference file: its corpus-relative path without the suffix.

    A corpus laid out as ``<owner>/<slug>.ipynb`` gets Kaggle's ``owner/slug`` ids.

    Examples
    --------
    >>> reference_id("author/titanic-eda.ipynb")
    'author/titanic-eda'
    """
    stem, dot, suffix = path.rpartition(".")
    return stem if dot and "/" not in suffix else path


class ReferenceCorpus(NamedTuple):
    """The readable kernels of a folder, in path order, and the files that were skipped.

    A named pair, so ``units, skipped = load_reference_corpus(folder)`` works as well as
    ``corpus.units``; :func:`audit.similarity.compare` accepts it as its ``references`` and
    carries ``skipped`` into its report.

    Attributes
    ----------
    units : tuple of CodeUnit
        One per readable kernel; ``path`` is relative to the corpus folder (POSIX), ``source``
        is ``"file"`` or ``"notebook"``.
    skipped : tuple of Skipped
        Files left out, with the reason.
    """

    units: tuple[CodeUnit, ...]
    skipped: tuple[Skipped, ...] = ()


def _read_unit(path: Path, relative: str, max_bytes: int) -> CodeUnit | Skipped:
    if path.is_symlink():
        return Skipped(path=relative, reason="symbolic link (not followed)")
    size = path.stat().st_size
    if size > max_bytes:
        return Skipped(path=relative, reason=f"file too large ({size} bytes > {max_bytes})")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        return Skipped(path=relative, reason=f"not UTF-8 text ({exc.reason} at byte {exc.start})")
    if path.suffix.lower() == ".py":
        return CodeUnit(path=relative, language="python", text=text, source="file")
    # Imported here: the notebook reader pulls in nbformat, which plain .py corpora never need.
    from audit.notebooks import NotebookError, read_notebook

    try:
        notebook = read_notebook(text, relative)
    except NotebookError as exc:
        return Skipped(path=relative, reason=str(exc))
    if notebook.language not in LANGUAGES:
        return Skipped(path=relative, reason=f"kernel language {notebook.language!r} has no grammar")
    return CodeUnit(
        path=relative,
        language=notebook.language,
        text=notebook.text,
        cells=notebook.cells,
        source="notebook",
    )


def load_reference_corpus(directory: str | Path, *, max_bytes: int = MAX_REFERENCE_BYTES) -> ReferenceCorpus:
    """Read every ``.py`` and ``.ipynb`` file under ``directory`` (recursively) as a reference kernel.

    Parameters
    ----------
    directory : str or Path
        The corpus folder. Hidden files and folders (``.git``, ``.ipynb_checkpoints``) are left out.
    max_bytes : int, optional
        Files larger than this are skipped.

    Returns
    -------
    ReferenceCorpus
        Units sorted by relative path, plus the skipped files with reasons.

    Raises
    ------
    ConfigError
        If ``directory`` does not exist or is not a folder.
    """
    root = Path(directory)
    if not root.is_dir():
        raise ConfigError(f"reference corpus {str(directory)!r} is not a folder")
    units: list[CodeUnit] = []
    skipped: list[Skipped] = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if any(part.startswith(".") for part in path.relative_to(root).parts):
            continue
        if path.suffix.lower() not in REFERENCE_SUFFIXES or not (path.is_file() or path.is_symlink()):
            continue
        result = _read_unit(path, relative, max_bytes)
        if isinstance(result, Skipped):
            logger.info("skipping reference %s: %s", relative, result.reason)
            skipped.append(result)
        else:
            units.append(result)
    return ReferenceCorpus(units=tuple(units), skipped=tuple(skipped))
