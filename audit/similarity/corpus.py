"""Reference corpora: folders of public kernels (``.py`` scripts and ``.ipynb`` notebooks) as code units.

Kernels are read as text and never executed. Notebooks become their joined code cells
(:func:`audit.notebooks.read_notebook`), with the cell/line map kept on the unit so fragments can
say "cell 3, line 2". Files that cannot be used are listed in ``skipped`` with the reason, and the
rest of the corpus still loads: symbolic links, files over the size cap, binary files (a NUL byte
in the first 8 kB, git's test), text that is not UTF-8, broken notebook JSON, kernels in a
language without a grammar (R, Julia), and files with no code at all (empty files, notebooks
without code cells). A kernel in another language that has a grammar (a bash kernel) is read
with that grammar.

:func:`load_reference_corpus` reads a folder in one go for :func:`audit.similarity.compare`;
:func:`iter_reference_files`, :func:`read_reference_bytes` and :func:`decode_reference` are the
same steps one file at a time, for the corpus index (:mod:`audit.similarity.corpus_index`), which
reads files in worker processes and hashes each file's bytes before decoding them.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Iterator, NamedTuple

from audit.errors import ConfigError
from audit.model import Skipped
from audit.parsing import LANGUAGES
from audit.units import CodeUnit
from grading import untrusted_json

__all__ = [
    "MAX_REFERENCE_BYTES",
    "REFERENCE_SUFFIXES",
    "ReferenceCorpus",
    "decode_reference",
    "iter_reference_files",
    "load_reference_corpus",
    "read_reference",
    "read_reference_bytes",
    "reference_id",
    "reference_sort_key",
]

logger = logging.getLogger(__name__)

#: Files above this size are skipped (notebooks with embedded outputs reach several MB).
MAX_REFERENCE_BYTES = 32 * 1024 * 1024
#: File suffixes read as kernels.
REFERENCE_SUFFIXES = (".py", ".ipynb")
#: How much of a file is searched for a NUL byte to call it binary (git's heuristic).
_BINARY_PROBE_BYTES = 8192


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


def reference_sort_key(path: str) -> tuple[str, ...]:
    """Corpus order of a relative POSIX path: folder by folder (``a/b.py`` before ``a-c.py``).

    Examples
    --------
    >>> sorted(["a-c.py", "a/b.py"], key=reference_sort_key)
    ['a/b.py', 'a-c.py']
    """
    return tuple(path.split("/"))


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


def _without_outputs(text: str) -> str:
    """The notebook JSON with cell outputs and attachments emptied, or ``text`` unchanged.

    Public kernels keep their outputs (plots, tables: megabytes); nbformat turns every output
    into nested Python objects before the code cells can be read, which costs more than the
    code itself. The code, the cells and the metadata are left as they are, and anything that is
    not a well-formed notebook is returned untouched so the reader reports it.
    """
    if '"outputs"' not in text and '"attachments"' not in text:
        return text
    try:
        data = untrusted_json.loads(text)
    except ValueError:
        return text
    if not isinstance(data, dict):
        return text
    cells: list = []
    if isinstance(data.get("cells"), list):
        cells.extend(data["cells"])
    worksheets = data.get("worksheets")
    if isinstance(worksheets, list):  # nbformat 3
        for sheet in worksheets:
            if isinstance(sheet, dict) and isinstance(sheet.get("cells"), list):
                cells.extend(sheet["cells"])
    changed = False
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        if isinstance(cell.get("outputs"), list) and cell["outputs"]:
            cell["outputs"] = []
            changed = True
        if isinstance(cell.get("attachments"), dict) and cell["attachments"]:
            cell["attachments"] = {}
            changed = True
    return json.dumps(data) if changed else text


def decode_reference(data: bytes, relative: str) -> CodeUnit | Skipped:
    """Turn the bytes of a kernel file into a code unit, or say why it cannot be used.

    Parameters
    ----------
    data : bytes
        The file's content (untrusted; never executed).
    relative : str
        The file's POSIX path relative to the corpus root; its suffix (``.ipynb`` or anything
        else, read as a Python script) decides how the bytes are read.

    Returns
    -------
    CodeUnit or Skipped
        A unit whose ``path`` is ``relative``; or the reason the file was left out (binary, not
        UTF-8, broken notebook, kernel language without a grammar, no code).

    Examples
    --------
    >>> decode_reference(b"import os\\n", "a/k.py").language
    'python'
    >>> decode_reference(b"\\x00\\x01", "a/k.py").reason
    'binary file (NUL byte in the first 8 kB)'
    """
    if b"\x00" in data[:_BINARY_PROBE_BYTES]:
        return Skipped(path=relative, reason="binary file (NUL byte in the first 8 kB)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Skipped(path=relative, reason=f"not UTF-8 text ({exc.reason} at byte {exc.start})")
    if not relative.lower().endswith(".ipynb"):
        if not text.strip():
            return Skipped(path=relative, reason="empty file (no code)")
        return CodeUnit(path=relative, language="python", text=text, source="file")
    # Imported here: the notebook reader pulls in nbformat, which plain .py corpora never need.
    from audit.notebooks import NotebookError, read_notebook

    depth = untrusted_json.json_depth(text) if text.count("[") + text.count("{") > untrusted_json.MAX_JSON_DEPTH else 0
    if depth > untrusted_json.MAX_JSON_DEPTH:
        return Skipped(path=relative, reason=f"{relative}: not a readable notebook (JSON nested {depth} levels deep, "
                                             f"deeper than the {untrusted_json.MAX_JSON_DEPTH} accepted)")

    try:
        notebook = read_notebook(_without_outputs(text), relative)
    except NotebookError as exc:
        return Skipped(path=relative, reason=str(exc))
    except RecursionError:
        # json's decoder recurses once per nesting level; hostile JSON can go deeper than the
        # interpreter allows.
        return Skipped(path=relative, reason=f"{relative}: not a readable notebook (JSON nested too deeply)")
    if notebook.language not in LANGUAGES:
        return Skipped(path=relative, reason=f"kernel language {notebook.language!r} has no grammar")
    if not notebook.text.strip():
        return Skipped(path=relative, reason="notebook has no code (no code cells, or only empty ones)")
    return CodeUnit(
        path=relative,
        language=notebook.language,
        text=notebook.text,
        cells=notebook.cells,
        source="notebook",
    )


def read_reference_bytes(path: str | Path, relative: str, *, max_bytes: int = MAX_REFERENCE_BYTES) -> bytes | Skipped:
    """The bytes of one kernel file, or why it was not read (symbolic link, not a regular file, over the cap).

    Parameters
    ----------
    path : str or Path
        The file on disk.
    relative : str
        Its POSIX path relative to the corpus root (recorded on a :class:`Skipped`).
    max_bytes : int, optional
        Files larger than this are not read.

    Returns
    -------
    bytes or Skipped
    """
    path = Path(path)
    try:
        relative.encode("utf-8")
    except UnicodeEncodeError:
        # os.walk hands undecodable name bytes over as lone surrogates, which no report or
        # index can store; the escaped name still tells a person which file it is.
        escaped = relative.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="backslashreplace")
        return Skipped(path=escaped, reason="file name is not valid UTF-8")
    try:
        if path.is_symlink():
            return Skipped(path=relative, reason="symbolic link (not followed)")
        if not path.is_file():
            return Skipped(path=relative, reason="not a regular file")
        size = path.stat().st_size
        if size > max_bytes:
            return Skipped(path=relative, reason=f"file too large ({size} bytes > {max_bytes})")
        with path.open("rb") as stream:
            # Read one byte past the cap: the file may have grown since stat().
            data = stream.read(max_bytes + 1)
    except OSError as exc:
        return Skipped(path=relative, reason=f"cannot read ({exc.strerror or type(exc).__name__})")
    if len(data) > max_bytes:
        return Skipped(path=relative, reason=f"file too large (more than {max_bytes} bytes)")
    return data


def read_reference(path: str | Path, relative: str, *, max_bytes: int = MAX_REFERENCE_BYTES) -> CodeUnit | Skipped:
    """Read one kernel file with the corpus's checks (:func:`read_reference_bytes`, then :func:`decode_reference`).

    Parameters
    ----------
    path : str or Path
        The file on disk.
    relative : str
        Its POSIX path relative to the corpus root (recorded on the result).
    max_bytes : int, optional
        Files larger than this are skipped without being read.

    Returns
    -------
    CodeUnit or Skipped
    """
    data = read_reference_bytes(path, relative, max_bytes=max_bytes)
    if isinstance(data, Skipped):
        return data
    return decode_reference(data, relative)


def iter_reference_files(directory: str | Path) -> Iterator[tuple[Path, str]]:
    """The kernel files under ``directory`` (recursively), in path order.

    Hidden files and folders (``.git``, ``.ipynb_checkpoints``) are left out, and so are files
    whose suffix is not in :data:`REFERENCE_SUFFIXES`. Symbolic links are yielded (so that
    :func:`read_reference` can list them as skipped) but never followed into folders.

    Yields
    ------
    (Path, str)
        The file and its POSIX path relative to ``directory``.

    Raises
    ------
    ConfigError
        If ``directory`` does not exist or is not a folder.
    """
    root = Path(directory)
    if not root.is_dir():
        raise ConfigError(f"reference corpus {str(directory)!r} is not a folder")
    found: list[tuple[str, Path]] = []
    for current, folders, files in os.walk(root):
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        base = Path(current)
        for name in files:
            if name.startswith(".") or not name.lower().endswith(REFERENCE_SUFFIXES):
                continue
            path = base / name
            found.append((path.relative_to(root).as_posix(), path))
    for relative, path in sorted(found, key=lambda item: reference_sort_key(item[0])):
        yield path, relative


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
    units: list[CodeUnit] = []
    skipped: list[Skipped] = []
    for path, relative in iter_reference_files(directory):
        result = read_reference(path, relative, max_bytes=max_bytes)
        if isinstance(result, Skipped):
            logger.info("skipping reference %s: %s", relative, result.reason)
            skipped.append(result)
        else:
            units.append(result)
    return ReferenceCorpus(units=tuple(units), skipped=tuple(skipped))
