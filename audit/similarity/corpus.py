"""Reference corpora: folders of public kernels (``.py`` scripts and ``.ipynb`` notebooks) as code units.

Kernels are read as text and never executed. Notebooks become their joined code cells
(:func:`mleaudit.audit.notebooks.read_notebook`), with the cell/line map kept on the unit so fragments can
say "cell 3, line 2". Files that cannot be used are listed in ``skipped`` with the reason, and the
rest of the corpus still loads: symbolic links, files over the size cap, binary files (a NUL byte
in the first 8 kB, git's test, or bytes that decode to no text in any encoding), broken notebook
JSON, kernels in a language without a grammar (R, Julia), and files with no code at all (empty
files, notebooks without code cells). A kernel in another language that has a grammar (a bash
kernel) is read with that grammar.

Text is read in whatever encoding it was saved in (:func:`decode_kernel_bytes`): UTF-8 exactly as
Dolos reads it (a byte-order mark and ``"\\r\\n"`` kept, so that the figures stay Dolos's), any
other encoding as the audit reads run files (:func:`mleaudit.audit.run.decode_text`: UTF-16 and UTF-32 by
their byte-order mark, legacy code pages such as cp1252 and GBK detected with charset-normalizer,
a Python file's PEP 263 declaration honoured). Each file's encoding is recorded
(:class:`TextDecoding`, ``ReferenceCorpus.decodings``).

:func:`load_reference_corpus` reads a folder in one go for :func:`mleaudit.audit.similarity.compare`;
:func:`iter_reference_files`, :func:`read_reference_bytes` and :func:`decode_reference` are the
same steps one file at a time, for the corpus index (:mod:`mleaudit.audit.similarity.index`), which
reads files in worker processes and hashes each file's bytes before decoding them.
"""

from __future__ import annotations

import hashlib
import logging
import re
from pathlib import Path
from typing import NamedTuple

from mleaudit.audit.model import Skipped
from mleaudit.audit.parsing import LANGUAGES
from mleaudit.audit.similarity.kernel_files import (
    MAX_REFERENCE_BYTES,
    REFERENCE_SUFFIXES,
    file_signature,
    iter_reference_files,
    read_reference_bytes,
    reference_sort_key,
)
from mleaudit.audit.units import CodeUnit
from mleaudit.grading import untrusted_json

__all__ = [
    "MAX_REFERENCE_BYTES",
    "REFERENCE_SUFFIXES",
    "ReferenceCorpus",
    "TextDecoding",
    "decode_kernel_bytes",
    "decode_reference",
    "decode_reference_recorded",
    "iter_reference_files",
    "load_reference_corpus",
    "read_reference",
    "read_reference_bytes",
    "read_reference_recorded",
    "reference_id",
    "reference_sort_key",
]

logger = logging.getLogger(__name__)

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


class TextDecoding(NamedTuple):
    """How a kernel file's bytes became text.

    Attributes
    ----------
    path : str
        The file, as listed (corpus-relative, or as given on the command line).
    encoding : str
        Python's name of the encoding it was read in: ``"utf-8"``, ``"utf-8-sig"`` (UTF-8 with a
        byte-order mark, which is kept in the text as Dolos keeps it), ``"utf-16"`` / ``"utf-32"``
        (by their byte-order mark), ``"utf-16-le"`` / ``"utf-16-be"`` (a notebook in UTF-16 without
        one), a detected code page (``"cp1252"``, ``"gb18030"``), or a Python file's declared
        source encoding.
    note : str or None
        How the audit's decoder put it (``"not valid UTF-8: decoded as cp1252 (detected)"``, or
        how many undecodable bytes became U+FFFD and where the first was); ``None`` for UTF-8.
    """

    path: str
    encoding: str
    note: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        return {"path": self.path, "encoding": self.encoding, "note": self.note}


class _CorpusFields(NamedTuple):
    units: tuple[CodeUnit, ...]
    skipped: tuple[Skipped, ...] = ()


class ReferenceCorpus(_CorpusFields):
    """The readable kernels of a folder, in path order, and the files that were skipped.

    A named pair, so ``units, skipped = load_reference_corpus(folder)`` works as well as
    ``corpus.units``; :func:`mleaudit.audit.similarity.compare` accepts it as its ``references`` and
    carries ``skipped`` into its report.

    Attributes
    ----------
    units : tuple of CodeUnit
        One per readable kernel; ``path`` is relative to the corpus folder (POSIX), ``source``
        is ``"file"`` or ``"notebook"``.
    skipped : tuple of Skipped
        Files left out, with the reason.
    decodings : tuple of TextDecoding
        For every unit, in the same order, the encoding its file was read in (not part of the
        pair: an attribute, empty unless given).
    """

    decodings: tuple[TextDecoding, ...] = ()

    def __new__(cls, units: tuple[CodeUnit, ...], skipped: tuple[Skipped, ...] = (),
                decodings: tuple[TextDecoding, ...] = ()) -> "ReferenceCorpus":
        corpus = super().__new__(cls, tuple(units), tuple(skipped))
        if decodings:
            corpus.decodings = tuple(decodings)
        return corpus

    @property
    def encodings(self) -> dict[str, str]:
        """Unit path to the encoding its file was read in (:attr:`decodings` as a mapping)."""
        return {d.path: d.encoding for d in self.decodings}


_UTF8_BOM = b"\xef\xbb\xbf"
_WIDE_BOMS = (b"\xff\xfe", b"\xfe\xff")  # UTF-16, and the start of UTF-32's
_NOTE_ENCODING = re.compile(r"decoded as ([\w.-]+)")


def _encoding_named(note: str) -> str:
    """The encoding a :func:`mleaudit.audit.run.decode_text` note names (``"utf-8"`` when it names none:
    UTF-8 with undecodable bytes replaced)."""
    if note.startswith("UTF-32 text"):
        return "utf-32"
    if note.startswith("UTF-16 text (decoded as such)"):
        return "utf-16"
    found = _NOTE_ENCODING.search(note)
    return found.group(1) if found else "utf-8"


def decode_kernel_bytes(data: bytes, path: str, *, notebook: bool = False) -> tuple[str, TextDecoding] | Skipped:
    """The text of a kernel file's bytes, in whatever encoding it was saved, and how it was read.

    UTF-8 is read exactly as Dolos reads it (Node's ``Buffer.toString()``): a byte-order mark and
    ``"\\r\\n"`` stay in the text, so that the similarity figures of UTF-8 files are Dolos's. Bytes
    that are not UTF-8 are read as the audit reads run files (:func:`mleaudit.audit.run.decode_text`):
    UTF-16 and UTF-32 by their byte-order mark (a notebook, which is JSON, also without one), a
    code page detected by charset-normalizer (cp1252, GBK as gb18030, ...), else UTF-8 with the
    undecodable bytes replaced by U+FFFD and counted in the note; a Python file whose bytes are
    not UTF-8 and that declares its source encoding (PEP 263) is read in that encoding, as Python
    reads it. Dolos itself reads such files as UTF-8, replacing every byte it cannot decode.

    Parameters
    ----------
    data : bytes
        The file's content (untrusted; never executed).
    path : str
        Recorded on the result.
    notebook : bool
        The bytes are a notebook (JSON): UTF-16 without a byte-order mark is recognised, as the
        audit recognises it in notebooks and logs but not in code.

    Returns
    -------
    (str, TextDecoding) or Skipped
        The text and its :class:`TextDecoding`; or why the bytes are not text: a NUL byte in the
        first 8 kB of a file that is not UTF-16 or UTF-32 (git's test for binary files), bytes
        of which more than a tenth decode to nothing, a declared encoding that is unknown or
        does not decode them.

    Examples
    --------
    >>> text, how = decode_kernel_bytes("s = 'caf\\u00e9 cr\\u00e8me br\\u00fbl\\u00e9e'\\n".encode("cp1252"), "k.py")
    >>> text, how.encoding
    ("s = 'café crème brûlée'\\n", 'cp1252')
    >>> decode_kernel_bytes(b"x = 1\\x00", "b.py").reason
    'binary file (NUL byte in the first 8 kB)'
    """
    wide = data.startswith(_WIDE_BOMS) or data.startswith(b"\x00\x00\xfe\xff")
    if not wide and not notebook and b"\x00" in data[:_BINARY_PROBE_BYTES]:
        return Skipped(path=path, reason="binary file (NUL byte in the first 8 kB)")
    if not wide and b"\x00" not in data[:_BINARY_PROBE_BYTES]:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            return text, TextDecoding(path, "utf-8-sig" if data.startswith(_UTF8_BOM) else "utf-8")
    # Imported here: the audit's readers are only needed for bytes that are not plain UTF-8.
    from mleaudit.audit.expand.decoding import decode_as_declared, declared_source_encoding, is_binary_text
    from mleaudit.audit.run import decode_text

    text, note = decode_text(data, code=not notebook)
    if is_binary_text(text):
        if "\x00" in text:
            return Skipped(path=path, reason="binary content (NUL characters in the decoded text)")
        detail = (note or "").removeprefix("not valid UTF-8: ")
        return Skipped(path=path, reason=f"not text in any encoding (no encoding detected; as UTF-8, {detail})")
    encoding = _encoding_named(note) if note else "utf-8"
    if not notebook and not wide:
        declared = declared_source_encoding(data)
        if declared is not None:
            decoded, problem = decode_as_declared(data, declared)
            if decoded is None:
                return Skipped(path=path, reason=problem)
            return decoded, TextDecoding(path, declared, f"read in its declared source encoding {declared!r}, "
                                                         "as Python reads it")
    return text, TextDecoding(path, encoding, note)


def decode_reference_recorded(data: bytes, relative: str) -> tuple[CodeUnit | Skipped, TextDecoding | None]:
    """:func:`decode_reference`, with the :class:`TextDecoding` of the file when it was read as text.

    Returns
    -------
    (CodeUnit or Skipped, TextDecoding or None)
        The unit or the reason it was left out, and how the bytes became text (``None`` when they
        did not: binary, not decodable). A file skipped after decoding (broken notebook JSON, no
        code) still has its decoding.
    """
    decoded = decode_kernel_bytes(data, relative, notebook=relative.lower().endswith(".ipynb"))
    if isinstance(decoded, Skipped):
        return decoded, None
    text, decoding = decoded
    return _unit_of_text(text, relative), decoding


def decode_reference(data: bytes, relative: str) -> CodeUnit | Skipped:
    """Turn the bytes of a kernel file into a code unit, or say why it cannot be used.

    Parameters
    ----------
    data : bytes
        The file's content (untrusted; never executed), in any text encoding
        (:func:`decode_kernel_bytes`).
    relative : str
        The file's POSIX path relative to the corpus root; its suffix (``.ipynb`` or anything
        else, read as a Python script) decides how the bytes are read.

    Returns
    -------
    CodeUnit or Skipped
        A unit whose ``path`` is ``relative``; or the reason the file was left out (binary, not
        text in any encoding, broken notebook, kernel language without a grammar, no code).
        :func:`decode_reference_recorded` also says which encoding the text was in.

    Examples
    --------
    >>> decode_reference(b"import os\\n", "a/k.py").language
    'python'
    >>> decode_reference(b"\\x00\\x01", "a/k.py").reason
    'binary file (NUL byte in the first 8 kB)'
    """
    return decode_reference_recorded(data, relative)[0]


def _unit_of_text(text: str, relative: str) -> CodeUnit | Skipped:
    """The code unit of a kernel file's decoded text (a script, or a notebook's code cells)."""
    if not relative.lower().endswith(".ipynb"):
        if not text.strip():
            return Skipped(path=relative, reason="empty file (no code)")
        return CodeUnit(path=relative, language="python", text=text, source="file")
    # Imported here: the notebook reader pulls in nbformat, which plain .py corpora never need.
    from mleaudit.audit.notebooks import NotebookError, read_notebook

    # The reader decodes the JSON once (bounded) and never converts outputs, so a kernel's
    # megabytes of plots cost one decode.
    try:
        notebook = read_notebook(text, relative)
    except NotebookError as exc:
        depth = untrusted_json.json_depth(text) if text.count("[") + text.count("{") > untrusted_json.MAX_JSON_DEPTH else 0
        if depth > untrusted_json.MAX_JSON_DEPTH:
            return Skipped(path=relative, reason=f"{relative}: not a readable notebook (JSON nested {depth} levels "
                                                 f"deep, deeper than the {untrusted_json.MAX_JSON_DEPTH} accepted)")
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
    return read_reference_recorded(path, relative, max_bytes=max_bytes)[0]


def read_reference_recorded(path: str | Path, relative: str, *,
                            max_bytes: int = MAX_REFERENCE_BYTES) -> tuple[CodeUnit | Skipped, TextDecoding | None]:
    """:func:`read_reference`, with the file's :class:`TextDecoding` (see :func:`decode_reference_recorded`)."""
    data = read_reference_bytes(path, relative, max_bytes=max_bytes)
    if isinstance(data, Skipped):
        return data, None
    return decode_reference_recorded(data, relative)


#: Decoded kernels of the last corpus read, by relative path and digest of their bytes.
_DECODED: dict[tuple[str, bytes], tuple[CodeUnit | Skipped, TextDecoding | None]] = {}


#: Of the last corpus read, the key in :data:`_DECODED` of each file by its signature.
_SEEN: dict[tuple, tuple[str, bytes]] = {}


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
        Units sorted by relative path, plus the skipped files with reasons; its ``decodings``
        say which encoding each unit's file was read in.

    Raises
    ------
    ConfigError
        If ``directory`` does not exist or is not a folder.
    """
    units: list[CodeUnit] = []
    skipped: list[Skipped] = []
    decodings: list[TextDecoding] = []
    decoded: dict[tuple[str, bytes], tuple[CodeUnit | Skipped, TextDecoding | None]] = {}
    seen: dict[tuple, tuple[str, bytes]] = {}
    for path, relative in iter_reference_files(directory):
        signature = file_signature(path, relative, max_bytes)
        key = _SEEN.get(signature) if signature is not None else None
        found = _DECODED.get(key) if key is not None else None
        if found is not None and key is not None and signature is not None:
            # Not read again: the same file, unchanged since it was read (see file_signature).
            result, decoding = decoded[key] = found
            seen[signature] = key
        elif isinstance(data := read_reference_bytes(path, relative, max_bytes=max_bytes), Skipped):
            result, decoding = data, None
        else:
            # The same bytes under the same name decode the same: a batch worker reads its corpus
            # once per run, and decoding notebooks costs far more than reading and hashing them.
            key = (relative, hashlib.blake2b(data, digest_size=32).digest())
            found = _DECODED.get(key)
            if found is None:
                found = decode_reference_recorded(data, relative)
            result, decoding = decoded[key] = found
            if signature is not None:
                seen[signature] = key
        if isinstance(result, Skipped):
            logger.info("skipping reference %s: %s", relative, result.reason)
            skipped.append(result)
        else:
            if decoding is not None and decoding.note is not None:
                logger.info("reference %s: %s", relative, decoding.note)
            units.append(result)
            decodings.append(decoding or TextDecoding(relative, "utf-8"))
    # Only the latest corpus is kept (a batch compares every run with one corpus).
    _DECODED.clear()
    _DECODED.update(decoded)
    _SEEN.clear()
    _SEEN.update(seen)
    return ReferenceCorpus(units=tuple(units), skipped=tuple(skipped), decodings=tuple(decodings))
