"""The run model: what an agent run directory holds, and ``load_run`` to read one.

Layout contract (MLE-bench's): ``submission/submission.csv``, ``logs/``, ``code/``, ``run.log``
and an optional ``run.json``/``metadata.json``. A bare folder of ``.py``/``.ipynb``/``.log``/
``.txt``/``.json`` files (AutoKaggle phase folders, an AIDE output dir) and an MLAgentBench log
folder (``agent_log/``, ``env_log/``) are read too, and the layout found is recorded
(:data:`RunLayout.LAYOUTS`).

A file is classified by its name (:func:`classify_path`); a file whose name says nothing
(no extension, or an unknown one: ``main_log``, ``train.py_2024-02-04_14-26-56``,
``config.yaml``) is classified by its content (:func:`classify_content`: binary, archive,
Python, shell script or text) and the way it was told is noted.

Run contents are untrusted. Size caps (:class:`RunLayout`): a file over ``MAX_FILE_BYTES`` is
not read, except a log, of which the first ``MAX_LOG_BYTES`` are read (to the last line end)
and the rest is reported; nothing is ever read whole into memory past those caps. Text is
decoded by :func:`decode_text` (UTF-8, BOMs honoured, other encodings detected, and invalid
bytes replaced and counted when no encoding fits).
"""

from __future__ import annotations

import enum
import errno
import functools
import hashlib
import logging
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Mapping, Sequence

from mleaudit.audit.errors import RunLayoutError
from mleaudit.audit.model import Skipped
from mleaudit.audit.parsing import language_for_path
from mleaudit.grading import untrusted_json

__all__ = [
    "RunLayout",
    "ArtifactKind",
    "Artifact",
    "Run",
    "load_run",
    "classify_content",
    "classify_path",
    "decode_text",
    "detect_layout",
    "display_name",
    "printable_share",
    "read_run_file",
]

logger = logging.getLogger(__name__)


class RunLayout:
    """Names of the run-dir contract shared by the sandbox (which writes runs) and the audit."""

    SUBMISSION_DIR = "submission"
    SUBMISSION_FILE = "submission.csv"
    LOGS_DIR = "logs"
    CODE_DIR = "code"
    RUN_LOG = "run.log"
    RUN_META = ("run.json", "metadata.json")
    #: Where the submission may sit, first match wins: the MLE-bench layout, a bare folder
    #: (AutoKaggle writes it at the top), AIDE's working directory.
    SUBMISSION_CANDIDATES = ("submission/submission.csv", "submission.csv", "working/submission.csv")
    #: Files larger than this are listed under ``skipped`` instead of read (text logs excepted).
    MAX_FILE_BYTES = 20 * 1024 * 1024
    #: How much of a text log is read: a larger log is read up to here (cut back to the last
    #: line end) and the rest is listed under ``skipped``. 20 MB of text reads in seconds.
    MAX_LOG_BYTES = 20 * 1024 * 1024
    #: Folders nested deeper than this below the run root are not entered (listed under
    #: ``skipped``): real runs nest a few levels, and every level costs each file below it.
    MAX_FOLDER_DEPTH = 64
    #: AutoKaggle's phase folders (``<phase>/<phase>_code.py``, ``_output.txt``, ``review.json``).
    AUTOKAGGLE_PHASES = (
        "understand_background", "pre_eda", "data_cleaning", "deep_eda", "feature_engineering", "model_build_predict",
    )  # fmt: skip
    #: Layout names :func:`detect_layout` returns.
    LAYOUTS = ("mlebench", "aide", "autokaggle", "mlagentbench", "folder", "file")
    #: Files that mark an MLAgentBench log folder: the agent's transcript and the environment's trace.
    MLAGENTBENCH_MARKERS = frozenset({"agent_log/main_log", "env_log/trace.json"})
    #: Submission paths particular to a layout, looked for after :data:`SUBMISSION_CANDIDATES`:
    #: MLAgentBench snapshots the agent's workspace after every step (``env_log/traces/step_N_files/``);
    #: the final snapshot's ``submission.csv`` is the run's submission, earlier ones are data files.
    LAYOUT_SUBMISSION_CANDIDATES = {
        "mlagentbench": ("env_log/traces/step_final_files/submission.csv",),
    }

    @classmethod
    def submission_candidates(cls, layout: str | None = None) -> tuple[str, ...]:
        """Where a run of ``layout`` may hold its submission, first match first.

        Parameters
        ----------
        layout : str, optional
            One of :data:`LAYOUTS`; ``None`` gives the candidates every layout shares.

        Returns
        -------
        tuple of str
            :data:`SUBMISSION_CANDIDATES`, then the layout's own (:data:`LAYOUT_SUBMISSION_CANDIDATES`).

        Examples
        --------
        >>> RunLayout.submission_candidates("mlagentbench")[-1]
        'env_log/traces/step_final_files/submission.csv'
        """
        return cls.SUBMISSION_CANDIDATES + cls.LAYOUT_SUBMISSION_CANDIDATES.get(layout or "", ())


class ArtifactKind(enum.Enum):
    """What a file of the run is."""

    CODE = "code"
    NOTEBOOK = "notebook"
    LOG = "log"
    SUBMISSION = "submission"
    DATA = "data"
    OTHER = "other"


@dataclass(frozen=True, slots=True, kw_only=True)
class Artifact:
    """One file of a run.

    ``path`` is POSIX relative to the run root, printable: a name that is not valid UTF-8 is
    written with ``\\xNN`` escapes (:func:`display_name`); ``abs_path`` is where the file lies
    on disk. ``language`` is the grammar name for code files, else ``None``. ``size`` is the
    file's size in bytes on disk. ``truncated`` marks a log larger than
    ``RunLayout.MAX_LOG_BYTES``, of which only the first part is read (``read_size`` bytes,
    ending at a line end); ``sha256`` is then the digest of that part. ``root`` is the run root
    the file was found under (set by :func:`load_run`): reads then open every folder between
    the root and the file without following symbolic links. ``sniffed`` says how the kind was
    told from the file's content when its name says nothing (:func:`classify_content`), else
    ``None``.
    """

    path: str
    abs_path: Path
    kind: ArtifactKind
    language: str | None
    size: int
    sha256: str
    truncated: bool = False
    read_size: int | None = None
    root: Path | None = None
    sniffed: str | None = None

    def read_bytes(self) -> bytes:
        """The file's bytes (for a truncated log: its first ``read_size`` bytes).

        Raises
        ------
        OSError
            If the file cannot be read, is a symlink, lies under a symlinked folder (when
            ``root`` is set), or is over the caps.
        """
        if self.truncated or (self.kind is ArtifactKind.LOG
                              and (self.sniffed is not None or _partly_readable(self.path))):
            return _read_prefix(self.abs_path, self.path, RunLayout.MAX_LOG_BYTES, root=self.root)
        if self.size > RunLayout.MAX_FILE_BYTES:
            raise OSError(f"{self.path}: {self.size} bytes is over the {RunLayout.MAX_FILE_BYTES}-byte cap")
        return _read_capped(self.abs_path, self.path, root=self.root)

    def read_text(self) -> str:
        """The file decoded by :func:`decode_text` (UTF-8, invalid bytes replaced).

        Raises
        ------
        OSError
            If the file cannot be read, or is larger than the caps (see :meth:`read_bytes`).
        """
        return decode_text(self.read_bytes(), code=self.kind is ArtifactKind.CODE)[0]


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    """An agent run as read from disk (artifacts sorted by path).

    ``skipped`` lists what could not be read (it keeps a run from a clean verdict); ``notes``
    lists what the audit could not do but that is no sign of anything (no submission file);
    ``layout`` is one of :data:`RunLayout.LAYOUTS` (:func:`detect_layout`).
    """

    run_id: str
    root: Path
    competition_id: str | None
    agent_id: str | None
    artifacts: tuple[Artifact, ...]
    submission: Artifact | None
    meta: Mapping[str, Any] = field(default_factory=dict)
    skipped: tuple[Skipped, ...] = ()
    notes: tuple[Skipped, ...] = ()
    layout: str = "folder"


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
#: Folders never entered, with why: caches, version-control stores and installed packages
#: (listed as notes, not gaps, unless they hold files named as code: :func:`_code_names_in`).
#: Any other folder, hidden ones and notebook autosaves included, is read, so that code an
#: agent hides in ``.x/`` is audited like any other.
_SKIP_DIRS = {
    "__pycache__": "Python bytecode cache",
    ".git": "git store", ".hg": "Mercurial store", ".svn": "Subversion store",
    "node_modules": "installed JavaScript packages",
}
#: Entries of a folder not entered that are looked at (names only) for files named as code.
_MAX_SKIPPED_ENTRIES = 100_000
_CODE_SUFFIXES = frozenset({".py", ".pyw", ".sh", ".bash", ".ipynb"})


def _code_names_in(folder: str) -> str | None:
    """What in ``folder`` (not entered, names only, links not followed) is named as code, or ``None``."""
    seen = 0
    stack = [folder]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError as exc:
            return f"entries that cannot be listed ({exc.strerror or exc})"
        for entry in entries:
            seen += 1
            if seen > _MAX_SKIPPED_ENTRIES:
                return f"more than {_MAX_SKIPPED_ENTRIES:,} entries (not all looked at)"
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            elif os.path.splitext(entry.name)[1].lower() in _CODE_SUFFIXES:
                return f"a file named as code: {display_name(entry.name)}"
    return None
#: ``O_NOFOLLOW`` makes ``open`` fail on a symlink swapped in after the walk saw a regular file;
#: ``O_NONBLOCK`` keeps a FIFO swapped in from blocking the open (``fstat`` then refuses it).
_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
               | getattr(os, "O_CLOEXEC", 0))
#: Folders are opened one at a time, relative to their parent, refusing symlinks at every level.
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_DIR_FD = (
    os.open in os.supports_dir_fd and os.scandir in os.supports_fd
    and hasattr(os, "O_DIRECTORY") and hasattr(os, "O_NOFOLLOW")
)


def display_name(name: str) -> str:
    """A file name as printable text: bytes that are not UTF-8 become ``\\xNN`` escapes.

    ``os`` hands undecodable name bytes over as lone surrogates (``surrogateescape``), which
    no report can encode; the escaped name still tells a person which file it is.

    Examples
    --------
    >>> display_name("train.py")
    'train.py'
    >>> display_name(b"bad\\xff.py".decode("utf-8", "surrogateescape"))
    'bad\\\\xff.py'
    """
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="backslashreplace")
    return name


def _inside(root_real: str, path: str) -> bool:
    real = os.path.realpath(path)
    return real == root_real or real.startswith(root_real.rstrip(os.sep) + os.sep)


def _relative_parts(root: Path, path: Path | str) -> tuple[str, ...]:
    """The components of ``path`` below ``root`` (``path`` absolute under it, or relative to it).

    Raises
    ------
    OSError
        If ``path`` is not below ``root`` or has ``..``/``.`` components.
    """
    candidate = Path(path)
    if candidate.is_absolute():
        try:
            candidate = candidate.relative_to(root)
        except ValueError:
            raise OSError(errno.EACCES, "not under the run root") from None
    parts = candidate.parts
    if not parts or any(part in ("", ".", "..") for part in parts):
        raise OSError(errno.EACCES, "not a plain path under the run root")
    return parts


def _refused_component(root: Path, parts: Sequence[str]) -> str | None:
    """Why a path under ``root`` may not be opened: a symlinked or special folder on the way."""
    current = root
    for number, part in enumerate(parts):
        current = current / part
        try:
            info = os.lstat(current)
        except OSError:
            return None
        shown = "/".join(display_name(p) for p in parts[: number + 1])
        last = number == len(parts) - 1
        if stat.S_ISLNK(info.st_mode):
            return "symbolic link (not followed)" if last else f"its folder {shown} is a symbolic link (not followed)"
        if not last and not stat.S_ISDIR(info.st_mode):
            return f"{shown} is not a folder"
    return None


def _open_in_root(root: Path, parts: Sequence[str]) -> int:
    """Open the regular file ``root/parts...`` for reading, following no symlink on the way.

    Each folder is opened relative to its parent with ``O_NOFOLLOW | O_DIRECTORY`` where the
    platform allows it (so a folder swapped for a symlink after the walk is refused too);
    elsewhere every component is checked with ``lstat`` first. The real path must also lie
    inside the real run root.

    Raises
    ------
    OSError
        With a message naming the refused component.
    """
    if not _DIR_FD:
        target = os.path.join(root, *parts)
        refused = _refused_component(root, parts)
        if refused is not None:
            raise OSError(errno.ELOOP, refused)
        if not _inside(os.path.realpath(root), target):
            raise OSError(errno.EACCES, "resolves outside the run root")
        return os.open(target, _OPEN_FLAGS)
    # Every component is opened relative to its parent without following a link, and the
    # parts hold no "..": the file is under the root by construction, and a refused
    # component is named when an open fails.
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        for part in parts[:-1]:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                    reason = _refused_component(root, parts) or "a folder on the way is not a folder"
                    raise OSError(exc.errno, reason) from None
                raise
            os.close(fd)
            fd = child
        try:
            return os.open(parts[-1], _OPEN_FLAGS, dir_fd=fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise OSError(exc.errno, "symbolic link (not followed)") from None
            raise
    finally:
        os.close(fd)


def _open_nofollow(abs_path: Path, root: Path | None) -> int:
    if root is None:
        return os.open(abs_path, _OPEN_FLAGS)
    return _open_in_root(root, _relative_parts(root, abs_path))


def _read_fd(fd: int, rel_path: str, limit: int) -> bytes:
    """Up to ``limit + 1`` bytes of an open regular file; the descriptor is closed."""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, f"{rel_path}: not a regular file")
        with os.fdopen(fd, "rb", closefd=True) as handle:
            fd = -1
            return handle.read(limit + 1)
    finally:
        if fd >= 0:
            os.close(fd)


def _read_capped(abs_path: Path, rel_path: str, *, root: Path | None = None) -> bytes:
    """Read a regular file without following symlinks, at most ``MAX_FILE_BYTES`` bytes.

    With ``root``, no folder between ``root`` and the file may be a symlink either.

    Raises
    ------
    OSError
        If the file is a symlink, not a regular file, unreadable, or grew past the cap.
    """
    data = _read_fd(_open_nofollow(abs_path, root), rel_path, RunLayout.MAX_FILE_BYTES)
    if len(data) > RunLayout.MAX_FILE_BYTES:
        raise OSError(errno.EFBIG, f"{rel_path}: over the {RunLayout.MAX_FILE_BYTES}-byte cap")
    return data


def _read_prefix(abs_path: Path, rel_path: str, limit: int, *, root: Path | None = None) -> bytes:
    """The first ``limit`` bytes of a regular file (not following symlinks), cut back to the
    last line end when the file is longer, so no record or UTF-8 character is split.

    Raises
    ------
    OSError
        If the file is a symlink, not a regular file or unreadable.
    """
    data = _read_fd(_open_nofollow(abs_path, root), rel_path, limit)
    if len(data) <= limit:
        return data
    data = data[:limit]
    line_end = data.rfind(b"\n")
    return data[: line_end + 1] if line_end >= 0 else data


def read_run_file(root: str | os.PathLike[str], path: str | os.PathLike[str], *,
                  max_bytes: int = RunLayout.MAX_FILE_BYTES) -> bytes:
    """Read a file of a run without following symbolic links anywhere below the run root.

    Parameters
    ----------
    root : str or path-like
        The run root (:attr:`Run.root`).
    path : str or path-like
        The file, relative to ``root`` (POSIX) or absolute under it.
    max_bytes : int, optional
        Files larger than this are refused (checked on the bytes read, not only the size the
        file system reports).

    Returns
    -------
    bytes
        The whole file.

    Raises
    ------
    OSError
        If the file or a folder between it and ``root`` is a symbolic link, the real path
        leaves ``root``, the file is not a regular file, unreadable, or over ``max_bytes``;
        ``strerror`` says which in words.
    """
    root_path = Path(root)
    parts = _relative_parts(root_path, path)
    rel = "/".join(display_name(p) for p in parts)
    data = _read_fd(_open_in_root(root_path, parts), rel, max_bytes)
    if len(data) > max_bytes:
        raise OSError(errno.EFBIG, f"over the {max_bytes}-byte cap")
    return data


#: Share of undecodable bytes above which a file counts as binary rather than mis-encoded text.
BINARY_INVALID_SHARE = 0.10
_UTF8_REPLACEMENT = "\ufffd".encode("utf-8")
#: Share of characters that must be printable (or whitespace) for bytes that are not UTF-8 to be
#: taken as text in a detected encoding: binary data decodes in some 8-bit code page too, but
#: leaves control characters all over it.
MIN_PRINTABLE_SHARE = 0.97
#: Bytes looked at to detect an encoding (the whole text is then decoded in it).
_DETECT_SAMPLE = 512 * 1024
#: Detected encodings above this mess ratio (charset-normalizer's ``chaos``) are refused.
_MAX_CHAOS = 0.15
#: Among detected encodings that decode the text equally well, the one used: the code pages
#: text files are most often written in, supersets first (cp1252 over latin-1, gb18030 over
#: gbk and gb2312, cp932 over shift_jis).
_PREFERRED_ENCODINGS = (
    "cp1252", "gb18030", "cp932", "shift_jis", "euc_jp", "cp949", "euc_kr", "big5", "cp950", "cp1251",
    "koi8_r", "cp1250", "cp1253", "cp1254", "cp1255", "cp1256", "cp1257", "cp1258", "cp874", "iso8859_15",
    "latin_1",
)  # fmt: skip
_WHITESPACE_CONTROLS = frozenset("\t\n\r\f\v")
#: ASCII characters that are neither printable nor whitespace (what :func:`printable_share` counts).
_ASCII_UNPRINTABLE = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_DROP_WHITESPACE_CONTROLS = dict.fromkeys(map(ord, _WHITESPACE_CONTROLS))


def printable_share(text: str) -> float:
    """The share of ``text``'s characters that are printable or whitespace, in [0, 1].

    Examples
    --------
    >>> printable_share("abc\\n")
    1.0
    >>> printable_share("a\\x00\\x01b")
    0.5
    """
    if not text:
        return 1.0
    if text.isascii():
        return 1.0 - sum(1 for _ in _ASCII_UNPRINTABLE.finditer(text)) / len(text)
    if text.translate(_DROP_WHITESPACE_CONTROLS).isprintable():
        return 1.0
    bad = sum(1 for ch in text if not ch.isprintable() and ch not in _WHITESPACE_CONTROLS)
    return 1.0 - bad / len(text)


def _utf16_without_bom(data: bytes) -> str | None:
    """``"utf-16-le"``/``"utf-16-be"`` when ``data`` looks like UTF-16 text without a byte-order
    mark (NUL in every other byte, as ASCII-range text gives), else ``None``.

    The whole of ``data`` is looked at, and its first two bytes must fit the pattern too: a file
    that starts as ASCII (a shebang, a comment) is read by its interpreter as bytes, whatever
    NUL-padded bytes follow."""
    if len(data) < 8:
        return None
    sample = data[: len(data) // 2 * 2]
    even, odd = sample[0::2], sample[1::2]
    half = len(sample) // 2
    if odd.count(0) >= 0.9 * half and even.count(0) <= 0.1 * half and data[0] != 0 and data[1] == 0:
        return "utf-16-le"
    if even.count(0) >= 0.9 * half and odd.count(0) <= 0.1 * half and data[0] == 0 and data[1] != 0:
        return "utf-16-be"
    return None


def _mostly_utf8(text: str, invalid: int) -> bool:
    """Whether bytes that fail as UTF-8 are still UTF-8 text with a few damaged bytes: more
    characters of ``text`` (the bytes decoded as UTF-8 with replacement) are valid multi-byte
    UTF-8 than bytes fail; a text in a legacy code page has next to no valid multi-byte
    sequences."""
    valid = sum(1 for ch in text if ch > "\x7f" and ch != "\ufffd")
    return valid > invalid


#: Added to the mess ratio of a code page outside :data:`_PREFERRED_ENCODINGS`: a rare code page
#: (johab, cp1006, mac_roman) decodes many texts with no visible mess, but is seldom the one used.
_RARE_ENCODING_PENALTY = 0.2
#: Half-width katakana (U+FF61 to U+FF9F) are the classic sign of text read in the wrong Japanese
#: code page: their share of the non-ASCII characters, times this, is added to the mess ratio.
_HALFWIDTH_KANA_PENALTY = 0.5
#: Mess ratios closer than this to the least one are equal (finer differences are noise).
_MESS_STEP = 0.01
#: Equal mess ratios are told apart by charset-normalizer's language fit (``coherence``, in [0, 1],
#: 0 when no language is recognised) in steps of this size: finer differences are noise.
_COHERENCE_STEP = 0.1


def _encoding_score(match) -> tuple[float, int, str]:
    """How unlikely a charset-normalizer match is (mess, lower is likelier), how well it fits a
    language (in steps of :data:`_COHERENCE_STEP`, higher is likelier) and the name to use for it."""
    names = (match.encoding, *match.could_be_from_charset)
    preferred = [name for name in names if name in _PREFERRED_ENCODINGS]
    name = min(preferred, key=_PREFERRED_ENCODINGS.index) if preferred else match.encoding
    score = match.chaos + (0.0 if preferred else _RARE_ENCODING_PENALTY)
    text = str(match)
    wide = [ch for ch in text if ch > "\x7f"]
    if wide:
        kana = sum(1 for ch in wide if "\uff61" <= ch <= "\uff9f")
        score += _HALFWIDTH_KANA_PENALTY * kana / len(wide)
    return score, int(match.coherence / _COHERENCE_STEP), name


def _detect_encoding(data: bytes) -> str | None:
    """The encoding of text that is not UTF-8, by charset-normalizer, or ``None`` when no
    encoding decodes it coherently (binary data, or too little text to tell).

    Among the encodings charset-normalizer accepts, the one with the least mess wins, a rare code
    page and half-width katakana counting as mess (:func:`_encoding_score`); ties (within
    :data:`_MESS_STEP`) go to the
    clearly better language fit, then to the code page text files are most often written in
    (:data:`_PREFERRED_ENCODINGS`). When only
    rare code pages fit, the common ones are tried on their own too.
    """
    try:
        from charset_normalizer import from_bytes
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    sample = data[:_DETECT_SAMPLE]
    cut = sample.rfind(b"\n")
    if len(data) > _DETECT_SAMPLE and cut > 0:
        sample = sample[: cut + 1]
    has_nul = b"\x00" in sample

    def candidates(**options) -> list[tuple[float, int, str]]:
        try:
            matches = [m for m in from_bytes(sample, **options) if m.chaos <= _MAX_CHAOS]
        except Exception:  # noqa: BLE001 - a detector failure must not stop the audit
            logger.info("encoding detection failed", exc_info=True)
            return []
        return [_encoding_score(m) for m in matches if has_nul or not m.encoding.startswith(("utf_16", "utf_32"))]

    def rank(item: tuple[float, int, str]) -> tuple[float, int, int]:
        score, fit, name = item
        order = _PREFERRED_ENCODINGS.index(name) if name in _PREFERRED_ENCODINGS else len(_PREFERRED_ENCODINGS)
        return round(score, 6), -fit, order

    found = candidates()
    if not found or min(found, key=rank)[0] >= _RARE_ENCODING_PENALTY:
        # Only rare code pages or mojibake fit: the common ones are tried on their own (the
        # detector's first pass does not always try them all, e.g. koi8_r).
        found += candidates(cp_isolation=list(_PREFERRED_ENCODINGS))
    if not found:
        return None
    # Mess ratios within a step of the least are a tie (French in cp1257 reads 0.004, in cp1252
    # 0.006): the language fit, then the common code page decides.
    least = min(score for score, _, _ in found)
    tied = [item for item in found if item[0] <= least + _MESS_STEP]
    return min(tied, key=lambda item: rank(item)[1:])[2]


def decode_text(data: bytes, *, code: bool = False) -> tuple[str, str | None]:
    """Decode a run file's bytes, in whatever text encoding they are, saying how.

    Parameters
    ----------
    data : bytes
        The file's bytes (untrusted).
    code : bool
        The file is code: it is decoded as its interpreter reads it, never as UTF-16 or UTF-32
        without a byte-order mark (NUL bytes then stay, and make it binary content).

    Returns
    -------
    (str, str or None)
        The text and a note, ``None`` for clean UTF-8. A UTF-8 byte-order mark is dropped; a
        UTF-16 one selects UTF-16 (note ``"UTF-16 text"``), as does a NUL in every other
        byte. Bytes that are not UTF-8 are decoded in the encoding charset-normalizer detects
        (note ``"decoded as gb18030 (detected)"``) when that gives coherent text of which at
        least :data:`MIN_PRINTABLE_SHARE` is printable; otherwise (binary data, UTF-8 with a
        few damaged bytes, too little text to tell) invalid bytes become U+FFFD and the note
        counts them and gives the first one's byte offset.

    Examples
    --------
    >>> decode_text(b"ok")
    ('ok', None)
    >>> decode_text("caf\\u00e9 au lait, cr\\u00e8me br\\u00fbl\\u00e9e".encode("cp1252"))
    ('café au lait, crème brûlée', 'not valid UTF-8: decoded as cp1252 (detected)')
    >>> decode_text(b"\\x00\\x01\\xff\\xfe\\xfd")[1]
    'not valid UTF-8: 3 byte(s) replaced with U+FFFD, the first at byte 2'
    """
    if data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return data.decode("utf-32", errors="replace"), "UTF-32 text (decoded as such)"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace"), "UTF-16 text (decoded as such)"
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    # ASCII-range UTF-16 is valid UTF-8 too (NUL is a character): its pattern is looked for first.
    wide = None if code or b"\x00" not in data else _utf16_without_bom(data)
    if wide is not None:
        text = data.decode(wide, errors="replace")
        if printable_share(text) >= MIN_PRINTABLE_SHARE:
            return text, f"UTF-16 text without a byte-order mark (decoded as {wide})"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        first = exc.start
    text = data.decode("utf-8", errors="replace")
    invalid = text.count("\ufffd") - data.count(_UTF8_REPLACEMENT)
    if b"\x00" not in data and not _mostly_utf8(text, invalid):
        encoding = _detect_encoding(data)
        if encoding is not None:
            decoded = data.decode(encoding, errors="replace")
            replaced = decoded.count("\ufffd")
            if replaced <= len(decoded) // 1000 and printable_share(decoded) >= MIN_PRINTABLE_SHARE:
                note = f"not valid UTF-8: decoded as {encoding} (detected)"
                if replaced:
                    note += f", {replaced} byte sequence(s) not valid in it replaced with U+FFFD"
                return decoded, note
    return text, f"not valid UTF-8: {invalid} byte(s) replaced with U+FFFD, the first at byte {first}"


def detect_layout(paths: set[str] | frozenset[str], single_file: bool = False) -> str:
    """Which run layout a set of run paths follows.

    Parameters
    ----------
    paths : set of str
        The run's file paths, POSIX, relative to the run root.
    single_file : bool
        Whether the run is one file given on its own.

    Returns
    -------
    str
        ``"autokaggle"`` (two or more of AutoKaggle's phase folders), ``"mlagentbench"``
        (``agent_log/main_log`` or ``env_log/trace.json``), ``"mlebench"``
        (``submission/``, ``logs/`` or ``code/`` folders, or ``run.log``), ``"aide"``
        (``journal.json`` at the top or ``best_solution.py`` with ``working/``), ``"file"`` for
        a single file, else ``"folder"``.

    Examples
    --------
    >>> detect_layout({"pre_eda/pre_eda_code.py", "data_cleaning/report.txt", "submission.csv"})
    'autokaggle'
    >>> detect_layout({"logs/agent.log", "submission/submission.csv"})
    'mlebench'
    >>> detect_layout({"agent_log/main_log", "env_log/trace.json", "log"})
    'mlagentbench'
    """
    if single_file:
        return "file"
    folders = {p.split("/", 1)[0] for p in paths if "/" in p}
    if len(folders & set(RunLayout.AUTOKAGGLE_PHASES)) >= 2:
        return "autokaggle"
    if RunLayout.MLAGENTBENCH_MARKERS & set(paths):
        return "mlagentbench"
    if folders & {RunLayout.SUBMISSION_DIR, RunLayout.LOGS_DIR, RunLayout.CODE_DIR} or RunLayout.RUN_LOG in paths:
        return "mlebench"
    if "journal.json" in paths or ("best_solution.py" in paths and "working" in folders):
        return "aide"
    return "folder"


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


#: Bytes of a file looked at to tell its kind from its content.
SNIFF_BYTES = 64 * 1024
#: Files this large or smaller are parsed as Python to tell whether text without a telling name
#: or shebang is Python source (larger ones are read as logs).
_PARSE_SNIFF_BYTES = 1024 * 1024
#: Archive and compressed formats by their leading bytes: ``(offset, magic, name)``.
_ARCHIVE_MAGIC = (
    (0, b"PK\x03\x04", "zip"), (0, b"PK\x05\x06", "zip"), (0, b"PK\x07\x08", "zip"),
    (0, b"\x1f\x8b", "gzip"), (0, b"\xfd7zXZ\x00", "xz"), (0, b"7z\xbc\xaf\x27\x1c", "7z"),
    (0, b"\x28\xb5\x2f\xfd", "zstd"), (0, b"Rar!\x1a\x07", "rar"), (257, b"ustar", "tar"),
)  # fmt: skip
_BZIP2 = re.compile(rb"BZh[1-9]1AY&SY")
#: Backups and editor copies of a code file: ``train.py_2024-02-04_14-26-56``, ``x.py.bak``,
#: ``x.py~``, ``x.py.orig``, ``run.sh.1``.
_BACKUP_NAME = re.compile(r"\.(py|pyw|sh|bash|ipynb)(?:[_.~-][^/]*|~)$", re.IGNORECASE)
_BACKUP_LANGUAGE = {"py": "python", "pyw": "python", "sh": "bash", "bash": "bash", "ipynb": None}
_SHEBANG = re.compile(r"#![ \t]*(?:\S*/)?(?:env[ \t]+(?:-\S+[ \t]+)*)?([A-Za-z]+)")
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash"})
#: Statements that make parsed text Python source rather than text that happens to parse
#: (``key: value`` lines parse as annotations), at any depth (an import inside ``if``).
_PYTHON_STATEMENTS = frozenset({
    "import_statement", "import_from_statement", "future_import_statement", "function_definition",
    "class_definition", "decorated_definition",
})
#: A line only Python source has: an import or a definition. In a folder the agent writes, text
#: with one is read as Python even when tree-sitter finds a syntax error in it (a script whose
#: grammar tree-sitter lacks, or one broken on purpose), so that its code is not let through as a
#: log the code rules never see.
_PYTHON_LINE = re.compile(
    r"^[ \t\f]*(?:import[ \t]+[A-Za-z_][\w.]*|from[ \t]+\.*[\w.]*[ \t]+import\b|(?:async[ \t]+)?def[ \t]+\w+[ \t]*\(|"
    r"class[ \t]+\w+[ \t]*[:(])", re.MULTILINE)
#: Lone carriage returns, which Python and a terminal read as line ends and tree-sitter does not.
LONE_CR = re.compile(r"\r(?!\n)")


#: Data formats by their leading bytes: ``(magic, name)``. A file under a folder the agent writes
#: is taken as data, unread, only when it is one of these (or an archive, which is a gap).
_DATA_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "PNG"), (b"\xff\xd8\xff", "JPEG"), (b"\x93NUMPY", "npy"),
    (b"PAR1", "parquet"), (b"\x89HDF\r\n\x1a\n", "HDF5"),
)  # fmt: skip
_PICKLE = re.compile(rb"\x80[\x02-\x05]")
#: The folders a run layout gives the agent to write in.
_AGENT_FOLDERS = frozenset({"code", "working", "workspace", "submission"})
_UNKNOWN_BINARY = "neither text nor a known data format, in a folder the agent writes (by content); not read"
#: A PEP 263 coding cookie, on one of a file's first two lines.
_CODING_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


def _data_format(head: bytes) -> str | None:
    """The data format ``head`` starts with (:data:`_DATA_MAGIC`, a pickle protocol header)."""
    for magic, name in _DATA_MAGIC:
        if head.startswith(magic):
            return name
    return "pickle" if _PICKLE.match(head) else None


def in_agent_folder(path: str) -> bool:
    """Whether ``path`` lies under a folder the agent writes (:data:`_AGENT_FOLDERS`)."""
    return any(part in _AGENT_FOLDERS for part in PurePosixPath(path).parts[:-1])


def _script_by_header(head: bytes) -> tuple[ArtifactKind, str | None, str] | None:
    """``CODE`` when ``head`` starts with a shell or Python shebang, or declares a Python source
    encoding in its first two lines (PEP 263), looked at as bytes, before any test for binary
    content; else ``None``."""
    lines = head.split(b"\n", 2)[:2]
    if head.startswith(b"#!"):
        shebang = _SHEBANG.match(lines[0].decode("latin-1").strip())
        if shebang is not None:
            program = shebang.group(1).lower()
            if program.startswith("python"):
                return ArtifactKind.CODE, "python", "read as python by content (python shebang)"
            if program in _SHELLS:
                return ArtifactKind.CODE, "bash", f"read as bash by content ({program} shebang)"
    for line in lines:
        if _CODING_COOKIE.match(line):
            return ArtifactKind.CODE, "python", "read as python by content (coding declaration)"
        if line.strip() and not line.lstrip().startswith(b"#"):
            break
    return None


def _archive_format(head: bytes) -> str | None:
    for offset, magic, name in _ARCHIVE_MAGIC:
        if head[offset : offset + len(magic)] == magic:
            return name
    return "bzip2" if _BZIP2.match(head) else None


#: Where an import or a definition can start: at the start of the text or of a line, or after
#: ``;`` or ``:``, past blanks, tree-sitter's other blanks (BOM, zero-width space, word joiner)
#: and line continuations (a backslash before a line end or a NUL). A text without one cannot
#: pass :func:`_parses_as_python`, which spares parsing a long log that has none.
_MODULE_STATEMENT_START = re.compile(
    "(?:\\A|[;:\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029])[ \t\r\n\x0b\x0c\x00\ufeff\u2060\u200b\\\\]*"
    "(?:import|from|def|class|async|@)")
_STATEMENT_QUERY = "[" + " ".join(f"({name})" for name in sorted(_PYTHON_STATEMENTS)) + "] @statement (call) @call"


def _python_tree(text: str):
    """tree-sitter's Python tree of ``text``, lone carriage returns read as line ends as Python
    reads them (one character for one)."""
    from mleaudit.audit.parsing import get_parser

    if "\r" in text:
        text = LONE_CR.sub("\n", text)
    return get_parser("python").parse(text.encode("utf-8", errors="replace"))


@functools.cache
def _statement_query():
    import tree_sitter

    from mleaudit.audit.parsing import get_language

    return tree_sitter.Query(get_language("python"), _STATEMENT_QUERY)


def _python_nodes(root) -> dict:
    """The nodes of :data:`_PYTHON_STATEMENTS` (``"statement"``) and the calls (``"call"``) in
    the tree under ``root``, at any depth."""
    import tree_sitter

    return tree_sitter.QueryCursor(_statement_query()).captures(root)


def _parses_as_python(text: str) -> bool:
    """Whether ``text`` parses as Python without a syntax error and holds an import or a
    definition (at any depth; tree-sitter, the text is only parsed)."""
    if _MODULE_STATEMENT_START.search(text) is None:
        return False
    root = _python_tree(text).root_node
    return not root.has_error and "statement" in _python_nodes(root)


def python_by_content(text: str, agent_folder: bool, top: bool = False) -> str | None:
    """Why ``text``, in a file whose name says nothing, is Python source, or ``None`` if it is not.

    Anywhere: it parses without a syntax error and holds an import or a definition. In a folder
    the agent writes, where a script may be saved without its extension, fail closed: it is
    Python also when it parses and calls something, or when a line imports or defines something
    (:data:`_PYTHON_LINE`) though tree-sitter finds a syntax error or the text is too large to
    parse here. At the top of the run (``top``; a bare folder of files is the agent's too) it is
    Python when it parses and calls something; a scaffold's log there may echo a script, so a
    telling line alone is not enough. Text longer than :data:`_PARSE_SNIFF_BYTES` characters is
    not parsed.
    """
    if "\r" in text:
        text = LONE_CR.sub("\n", text)
    small = len(text) <= _PARSE_SNIFF_BYTES
    calls = agent_folder or top
    if small and (calls or _MODULE_STATEMENT_START.search(text) is not None):
        root = _python_tree(text).root_node
        if not root.has_error:
            nodes = _python_nodes(root)
            if "statement" in nodes:
                return "parses as Python source"
            if calls and "call" in nodes:
                where = _IN_AGENT_FOLDER if agent_folder else ", at the top of the run"
                return f"parses as Python source with calls{where}"
            return None
    if agent_folder and _PYTHON_LINE.search(text) is not None:
        why = "with syntax errors" if small else "too large to parse when telling its kind"
        return f"Python imports or definitions, {why}{_IN_AGENT_FOLDER}"
    return None


_IN_AGENT_FOLDER = ", in a folder the agent writes"


def classify_content(path: str, data: bytes) -> tuple[ArtifactKind, str | None, str]:
    """The kind of a run file whose name says nothing, from its content.

    Parameters
    ----------
    path : str
        POSIX path relative to the run root (a backup name such as ``train.py_2024-02-04`` is
        a hint).
    data : bytes
        The file's first bytes (untrusted; only :data:`SNIFF_BYTES` are looked at for binary
        content, all of it up to 1 MiB is parsed to tell Python from other text).

    Returns
    -------
    (ArtifactKind, str or None, str)
        The kind, the grammar name for code and a note saying how the kind was found:

        - an archive (zip, gzip, tar, bzip2, xz, 7z, zstd, rar by its leading bytes):
          ``OTHER`` (not read: it may hold code or logs, so it stays a gap);
        - binary content (a NUL byte, or text that decodes to under
          :data:`MIN_PRINTABLE_SHARE` printable characters in any encoding): ``DATA``;
        - a notebook backup (``x.ipynb~`` holding JSON): ``NOTEBOOK``;
        - Python: a backup of a ``.py`` file (``train.py_<timestamp>``, ``x.py.bak``, ``x.py~``),
          a Python shebang, text that parses as Python with an import or a definition (lone
          carriage returns read as line ends), or, in a folder the agent writes or at the top
          of the run, text that parses and calls something or has a line that imports or
          defines something (:func:`python_by_content`): ``CODE`` ``"python"``;
        - a shell script (a ``sh``/``bash`` shebang, a backup of a ``.sh`` file): ``CODE``
          ``"bash"``;
        - any other text (JSON, JSONL, YAML, HTML, Markdown, transcripts): ``LOG``.

    Examples
    --------
    >>> classify_content("backup/train.py_2024-02-04_14-26-56", b"import os\\n")[:2]
    (<ArtifactKind.CODE: 'code'>, 'python')
    >>> classify_content("agent_log/main_log", b"Step 0:\\nAction: List Files\\n")
    (<ArtifactKind.LOG: 'log'>, None, 'read as a log by content (text)')
    >>> classify_content("blob", b"\\x89PNG\\r\\n\\x1a\\n\\x00\\x00")
    (<ArtifactKind.DATA: 'data'>, None, 'binary file, not read (by content: NUL bytes)')
    """
    head = data[:SNIFF_BYTES]
    archive = _archive_format(head)
    if archive is not None:
        return ArtifactKind.OTHER, None, f"{archive} archive (by content), not read: it may hold code or logs"
    # A shebang or a coding cookie makes the file a script whatever follows: it is read as code,
    # so that NUL bytes or control characters in it are a gap when it is expanded, never "data".
    script = _script_by_header(head)
    if script is not None:
        return script
    # Under a folder the agent writes, binary content is data only in a known data format.
    data_format = _data_format(head)
    agents = in_agent_folder(path) and data_format is None
    if not head.startswith((b"\xff\xfe", b"\xfe\xff")) and b"\x00" in head and _utf16_without_bom(data) is None:
        if agents:
            return ArtifactKind.OTHER, None, _UNKNOWN_BINARY + " (NUL bytes)"
        return ArtifactKind.DATA, None, "binary file, not read (by content: NUL bytes)"
    if len(data) > len(head):
        # Decode whole lines only, so a character cut at the sample's end is not counted as junk.
        line_end = head.rfind(b"\n")
        head = head[: line_end + 1] if line_end > 0 else head
    sample, _ = decode_text(head)
    if len(sample) >= 64 and sample.count("\ufffd") > BINARY_INVALID_SHARE * len(sample):
        if agents:
            return ArtifactKind.OTHER, None, _UNKNOWN_BINARY + " (not text in any encoding)"
        return ArtifactKind.DATA, None, "binary file, not read (by content: not text in any encoding)"
    if printable_share(sample) < MIN_PRINTABLE_SHARE:
        # Control characters in a comment or a string do not stop Python from running the file
        # (nor does a leading data magic such as ``PAR1``): Python among them is a gap wherever
        # it lies, as any such file in a folder the agent writes is.
        text = sample if len(data) == len(head) else decode_text(data)[0]
        if agents or python_by_content(text, agent_folder=True) is not None:
            what = _UNKNOWN_BINARY if agents else "Python source among control characters (by content); not read"
            return ArtifactKind.OTHER, None, what + " (control characters)"
        return ArtifactKind.DATA, None, "binary file, not read (by content: control characters)"
    stripped = sample.lstrip()
    backup = _BACKUP_NAME.search(PurePosixPath(path).name)
    if backup is not None:
        extension = backup.group(1).lower()
        if extension == "ipynb":
            if stripped.startswith("{"):
                return ArtifactKind.NOTEBOOK, None, "read as a notebook by content (a copy of a .ipynb file)"
        else:
            language = _BACKUP_LANGUAGE[extension]
            return ArtifactKind.CODE, language, f"read as {language} by content (a copy of a .{extension} file)"
    first_line = sample.split("\n", 1)[0].strip()
    shebang = _SHEBANG.match(first_line)
    if shebang is not None:
        program = shebang.group(1).lower()
        if program.startswith("python"):
            return ArtifactKind.CODE, "python", "read as python by content (python shebang)"
        if program in _SHELLS:
            return ArtifactKind.CODE, "bash", f"read as bash by content ({program} shebang)"
    # JSON parses as Python (a dict, a list) with no call or import in it, and Python may start
    # with a bracket too: the Python test comes first.
    agent_folder, top = in_agent_folder(path), "/" not in path
    json_like = stripped[:1] in ("{", "[")
    if len(data) <= _PARSE_SNIFF_BYTES or agent_folder:
        text = sample if len(data) == len(head) else decode_text(data)[0]
        why = python_by_content(text, agent_folder, top)
        if why is not None:
            return ArtifactKind.CODE, "python", f"read as python by content ({why})"
    if json_like:
        return ArtifactKind.LOG, None, "read as a log by content (JSON)"
    return ArtifactKind.LOG, None, "read as a log by content (text)"


@dataclass(slots=True)
class _Walk:
    """What :func:`_walk` found: files, refused paths (with reasons) and notes on names."""

    files: list[tuple[str, Path, int]] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[Skipped] = field(default_factory=list)
    folders: set[str] = field(default_factory=set)


def _list_folder(root: Path, parts: tuple[str, ...]) -> list[tuple[str, os.stat_result | OSError]]:
    """``(name, lstat result or the error)`` of each entry of the folder ``root/parts``.

    The folder is reached by opening each component without following symlinks (see
    :func:`_open_in_root`), so a folder swapped for a symlink after its parent was listed is
    refused rather than entered.

    Raises
    ------
    OSError
        If the folder cannot be opened or listed.
    """
    if not _DIR_FD:
        folder = os.path.join(root, *parts)
        refused = _refused_component(root, parts) if parts else None
        if refused is not None:
            raise OSError(errno.ELOOP, refused)
        with os.scandir(folder) as handle:
            return _entries(handle)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        for part in parts:
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = child
        with os.scandir(fd) as handle:
            return _entries(handle)
    finally:
        os.close(fd)


def _entries(handle) -> list[tuple[str, os.stat_result | OSError]]:
    """``(name, lstat result or the error)`` of each entry of an open ``os.scandir``."""
    entries: list[tuple[str, os.stat_result | OSError]] = []
    for entry in handle:
        try:
            entries.append((entry.name, entry.stat(follow_symlinks=False)))
        except OSError as exc:
            entries.append((entry.name, exc))
    return entries


def _shown(name: str, siblings: set[str], walk: _Walk, prefix: str) -> str | None:
    """The printable form of an entry name (:func:`display_name`), noting escaped names.

    ``None`` when the escaped form is the name of another entry of the same folder (the entry
    is then listed as skipped: two files must never share a path in the report).
    """
    shown = display_name(name)
    if shown == name:
        return shown
    if shown in siblings:
        walk.skipped.append(Skipped(path=prefix + shown, reason=(
            "file name is not valid UTF-8 and its escaped form names another entry of the folder; not read")))
        return None
    walk.notes.append(Skipped(path=prefix + shown,
                              reason="file name is not valid UTF-8 (bytes shown as \\xNN escapes)"))
    return shown


def _walk(root: Path, names: list[str] | None) -> _Walk:
    """Regular files under ``root`` as ``(relative POSIX path, absolute path, size)``, sorted.

    ``names`` restricts the top level to those entries (a single-file run). Symlinks (to files
    or folders), special files, hidden and cache directories, files over the size cap and
    anything whose real path leaves ``root`` are not returned; all but the hidden and cache
    directories are recorded in ``skipped``. Relative paths are printable (:func:`display_name`);
    absolute paths keep the names as on disk.
    """
    walk = _Walk()
    root_real = os.path.realpath(root)
    stack: list[tuple[tuple[str, ...], str]] = [((), "")]
    while stack:
        parts, prefix = stack.pop()
        try:
            entries = sorted(_list_folder(root, parts), key=lambda item: item[0])
        except OSError as exc:
            folder = prefix.rstrip("/") or "."
            reason = exc.strerror or str(exc)
            if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                # Swapped for a symlink (or a file) after its parent was listed.
                reason = _refused_component(root, parts) or "symbolic link (not followed)"
                walk.skipped.append(Skipped(path=folder, reason=reason))
            else:
                walk.skipped.append(Skipped(path=folder, reason=f"cannot list folder: {reason}"))
            continue
        siblings = {name for name, _ in entries}
        subdirs: list[tuple[tuple[str, ...], str]] = []
        for name, info in entries:
            if names is not None and not prefix and name not in names:
                continue
            shown = _shown(name, siblings, walk, prefix)
            if shown is None:
                continue
            rel = prefix + shown
            path = os.path.join(root, *parts, name)
            if isinstance(info, OSError):
                walk.skipped.append(Skipped(path=rel, reason=f"cannot stat: {info.strerror or info}"))
                continue
            if stat.S_ISLNK(info.st_mode):
                walk.skipped.append(Skipped(path=rel, reason="symbolic link (not followed)"))
                continue
            if stat.S_ISDIR(info.st_mode):
                walk.folders.add(rel)
                if name in _SKIP_DIRS:
                    # Caches, version-control stores and installed packages: nothing in them runs
                    # as it is, so they are listed, not read, and not a gap -- unless they hold
                    # files named as code, which an agent could have hidden there to run.
                    hidden = _code_names_in(path)
                    if hidden is None:
                        walk.notes.append(Skipped(path=rel, reason=f"folder not entered: {_SKIP_DIRS[name]}"))
                    else:
                        walk.skipped.append(Skipped(path=rel, reason=(
                            f"folder not entered ({_SKIP_DIRS[name]}) but it holds {hidden}")))
                    continue
                if not _inside(root_real, path):
                    walk.skipped.append(Skipped(path=rel, reason="directory resolves outside the run root"))
                    continue
                if len(parts) + 1 > RunLayout.MAX_FOLDER_DEPTH:
                    walk.skipped.append(Skipped(path=rel, reason=(
                        f"folder nested deeper than {RunLayout.MAX_FOLDER_DEPTH} levels below the run root; "
                        "not entered")))
                    continue
                subdirs.append(((*parts, name), rel + "/"))
                continue
            if not stat.S_ISREG(info.st_mode):
                walk.skipped.append(Skipped(path=rel, reason="not a regular file"))
                continue
            if not _inside(root_real, path):
                walk.skipped.append(Skipped(path=rel, reason="file resolves outside the run root"))
                continue
            if info.st_size > RunLayout.MAX_FILE_BYTES and not (_partly_readable(rel) or _sniffed_by_content(rel)):
                walk.skipped.append(
                    Skipped(path=rel, reason=f"{info.st_size} bytes is over the {RunLayout.MAX_FILE_BYTES}-byte cap")
                )
                continue
            walk.files.append((rel, Path(path), info.st_size))
        # Depth-first in name order; reversed because the stack pops from the end.
        stack.extend(reversed(subdirs))
    walk.files.sort(key=lambda item: item[0])
    return walk


def _read_meta(root: Path, paths: set[str], skipped: list[Skipped]) -> dict[str, Any]:
    """Merge ``run.json`` then ``metadata.json`` (earlier names win) from the run root.

    The files are read without following links and decoded with bounded nesting
    (:func:`mleaudit.grading.untrusted_json.loads`); what cannot be read is listed in ``skipped``.
    """
    meta: dict[str, Any] = {}
    for name in reversed(RunLayout.RUN_META):
        if name not in paths:
            continue
        try:
            data = untrusted_json.loads_unique(read_run_file(root, name))
        except OSError as exc:
            skipped.append(Skipped(path=name, reason=f"run metadata not read: {exc.strerror or exc}"))
            continue
        except ValueError as exc:
            skipped.append(Skipped(path=name, reason=f"run metadata not read: {exc}"))
            continue
        if not isinstance(data, dict):
            skipped.append(Skipped(path=name, reason=f"run metadata is a JSON {type(data).__name__}, not an object"))
            continue
        if name == "run.json":
            skipped.extend(_sandbox_cuts(data))
        meta.update(data)
    return meta


#: ``log-truncated`` events of ``run.json`` turned into unread parts (more are not listed one by one).
_MAX_SANDBOX_CUTS = 100
_SAFE_RUN_PATH = re.compile(r"[A-Za-z0-9._+-]+(/[A-Za-z0-9._+-]+)*")


def _sandbox_cuts(record: Mapping[str, Any]) -> list[Skipped]:
    """The parts of run files the sandbox dropped before the audit saw them.

    ``mleaudit run`` caps what it keeps of the agent's output and records each cut in
    ``run.json`` as an event ``{"kind": "log-truncated", "path", "kept_bytes", "dropped_bytes"}``.
    The dropped bytes were never on disk for the audit to read, so each cut is listed as an
    unread part of its file (a gap of the audit). A ``path`` that is not a plain relative path
    is reported as ``run.log``.
    """
    events = record.get("events")
    if not isinstance(events, list):
        return []
    cuts: list[Skipped] = []
    for event in events:
        if not isinstance(event, dict) or event.get("kind") != "log-truncated":
            continue
        if len(cuts) == _MAX_SANDBOX_CUTS:
            cuts.append(Skipped(path=RunLayout.RUN_LOG, reason=(
                f"more than {_MAX_SANDBOX_CUTS} outputs capped by the sandbox; the rest are not listed one by one")))
            break
        path = event.get("path")
        if not (isinstance(path, str) and len(path) <= 255 and _SAFE_RUN_PATH.fullmatch(path)
                and ".." not in path.split("/")):
            path = RunLayout.RUN_LOG
        kept, dropped = (event.get(key) for key in ("kept_bytes", "dropped_bytes"))
        kept_text = f"{kept} bytes" if type(kept) is int else "an unrecorded size"
        dropped_text = f"{dropped} bytes were" if type(dropped) is int else "the rest was"
        cuts.append(Skipped(path=path, reason=(
            f"capped by the sandbox at {kept_text}; {dropped_text} dropped and never read")))
    return cuts


def _submission_choice(
    paths: set[str], skipped: list[Skipped], folders: set[str],
    candidates: Sequence[str] = RunLayout.SUBMISSION_CANDIDATES,
) -> tuple[str | None, Skipped | None]:
    """The submission path, or the refused candidate that stands in its way.

    Candidates are taken in order (:meth:`RunLayout.submission_candidates`). A candidate that
    was refused, itself or through a folder on its path (a symlink, a folder that could not be
    listed, a file over the cap), or that is a folder, ends the search: a later candidate is
    not taken in its place, since the refused one is the file the layout names.

    Returns
    -------
    (str or None, Skipped or None)
        The chosen path, else ``None`` and, when a candidate was refused, a
        :class:`Skipped` entry for the candidate's own path (``None`` when ``skipped``
        already names it).
    """
    refused = {item.path: item for item in skipped}
    for candidate in candidates:
        if candidate in paths:
            return candidate, None
        if candidate in folders:
            return None, Skipped(path=candidate, reason="a folder, not a file: not read as the submission")
        pieces = candidate.split("/")
        for depth in range(1, len(pieces) + 1):
            blocker = refused.get("/".join(pieces[:depth]))
            if blocker is None:
                continue
            if blocker.path == candidate:
                return None, None
            return None, Skipped(path=candidate, reason=f"its folder {blocker.path} was not read: {blocker.reason}")
    return None, None


def _meta_str(meta: Mapping[str, Any], key: str) -> str | None:
    value = meta.get(key)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _cut_log(rel: str, size: int, data: bytes) -> Skipped:
    """The entry that says only the first part of a log over the cap was read."""
    lines = data.count(b"\n")
    return Skipped(path=rel, reason=(
        f"log of {size} bytes: only the first {len(data)} bytes ({lines} lines) were read, the "
        f"{RunLayout.MAX_LOG_BYTES}-byte log cap; the rest was not audited"))


def _read_by_content(root: Path, rel: str, abs_path: Path, size: int, skipped: list[Skipped],
                     notes: list[Skipped]) -> Artifact | None:
    """Read a file whose name says nothing and tell its kind from its content (:func:`classify_content`).

    How it was told goes to ``notes``. Text is read like a log (up to ``MAX_LOG_BYTES``, the rest
    listed in ``skipped``) unless it is code, which the file cap applies to as for ``.py``
    files. Binary files are data (no artifact when over the cap: nothing reads them); archives
    are listed in ``skipped``, since they may hold code or logs that nothing read.
    """
    try:
        data = _read_prefix(abs_path, rel, RunLayout.MAX_LOG_BYTES, root=root)
    except OSError as exc:
        skipped.append(Skipped(path=rel, reason=f"cannot read: {exc.strerror or exc}"))
        return None
    kind, language, how = classify_content(rel, data)
    if kind is ArtifactKind.OTHER:
        skipped.append(Skipped(path=rel, reason=how))
        return None
    whole = len(data) >= size
    if kind is ArtifactKind.DATA and size > RunLayout.MAX_FILE_BYTES:
        notes.append(Skipped(path=rel, reason=f"{how}; {size} bytes, over the {RunLayout.MAX_FILE_BYTES}-byte cap"))
        return None
    notes.append(Skipped(path=rel, reason=how))
    truncated = False
    if kind is ArtifactKind.LOG:
        truncated = size > RunLayout.MAX_LOG_BYTES and not whole
        if truncated:
            skipped.append(_cut_log(rel, size, data))
    elif not whole:
        if size > RunLayout.MAX_FILE_BYTES:
            skipped.append(Skipped(path=rel, reason=(
                f"{size} bytes is over the {RunLayout.MAX_FILE_BYTES}-byte cap ({how})")))
            return None
        try:
            data = _read_capped(abs_path, rel, root=root)
        except OSError as exc:
            skipped.append(Skipped(path=rel, reason=f"cannot read: {exc.strerror or exc}"))
            return None
    return _artifact(rel, abs_path, kind, language, size, data, truncated, root, sniffed=how)


def _artifact(rel: str, abs_path: Path, kind: ArtifactKind, language: str | None, size: int, data: bytes,
              truncated: bool, root: Path, *, sniffed: str | None = None) -> Artifact:
    """The artifact of a file whose bytes (its first part, for a log over the cap) were read."""
    return Artifact(
        path=rel,
        abs_path=abs_path,
        kind=kind,
        language=language,
        size=size if truncated else len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        truncated=truncated,
        read_size=len(data) if truncated else None,
        root=root,
        sniffed=sniffed,
    )


def load_run(path: str | os.PathLike[str]) -> Run:
    """Read an agent run from disk.

    Parameters
    ----------
    path : str or path-like
        An MLE-bench run directory (``submission/submission.csv``, ``logs/``, ``code/``,
        ``run.log``, optional ``run.json``/``metadata.json``), a bare folder of code, notebooks
        and logs (AutoKaggle phase folders, an AIDE output dir), or a single file (a run of one
        artifact, rooted at the file's folder).

    Returns
    -------
    Run
        Artifacts sorted by path, each with its kind, language, size (bytes) and sha256.
        ``run_id``, ``competition_id`` and ``agent_id`` come from the run metadata; ``run_id``
        falls back to the folder name (the file stem for a single file) and ``competition_id``
        is ``None`` when the metadata does not say it (no guess is made from names).
        ``submission`` is the first of ``RunLayout.SUBMISSION_CANDIDATES`` that exists; when
        there is none, ``notes`` says so (a run may end without one), unless a candidate was
        refused, which ``skipped`` then lists. ``skipped`` lists
        symlinks, special files, files over ``RunLayout.MAX_FILE_BYTES``, the unread rest of
        logs over ``RunLayout.MAX_LOG_BYTES``, unreadable files and unreadable metadata, and
        what the sandbox dropped before the run was written (``log-truncated`` events of
        ``run.json``, :func:`_sandbox_cuts`). ``layout`` comes from :func:`detect_layout`.

    Raises
    ------
    RunLayoutError
        If ``path`` does not exist or is neither a directory nor a regular file.

    Notes
    -----
    Run contents are untrusted: symlinks (to files or folders) are never followed and are
    listed in ``skipped``; nothing outside the run root is read; every folder and file is
    opened relative to its parent with ``O_NOFOLLOW`` and files are read up to the size cap;
    dot-directories (``.git``) and ``__pycache__`` are not entered. A submission candidate
    that is refused (itself, or a folder on its path such as a symlinked ``submission/``)
    is listed in ``skipped`` under the candidate's path and no later candidate is taken in
    its place. Names that are not valid UTF-8 are read, with ``\\xNN`` escapes in their
    printed path and a note.
    """
    given = Path(path)
    if not os.path.lexists(given):
        raise RunLayoutError(f"run path does not exist: {given}")
    names: list[str] | None = None
    if given.is_dir():
        root = given.resolve()
        run_name = display_name(root.name)
    elif given.is_file() or given.is_symlink():
        root = given.parent.resolve()
        names = [given.name]
        run_name = display_name(given.stem)
    else:
        raise RunLayoutError(f"run path is neither a directory nor a regular file: {given}")

    walk = _walk(root, names)
    skipped = walk.skipped
    files = walk.files
    paths = {rel for rel, _, _ in files}
    meta = _read_meta(root, paths, skipped) if names is None else {}
    layout = detect_layout(paths, single_file=names is not None)
    candidates = RunLayout.submission_candidates(layout)
    submission_path, blocked = _submission_choice(paths, skipped, walk.folders, candidates)
    if blocked is not None:
        skipped.append(blocked)

    notes: list[Skipped] = list(walk.notes)
    artifacts: list[Artifact] = []
    for rel, abs_path, size in files:
        if rel != submission_path and _sniffed_by_content(rel):
            artifact = _read_by_content(root, rel, abs_path, size, skipped, notes)
            if artifact is not None:
                artifacts.append(artifact)
            continue
        kind, language = classify_path(rel)
        if rel == submission_path:
            kind, language = ArtifactKind.SUBMISSION, None
        text_log = kind is ArtifactKind.LOG and _partly_readable(rel)
        truncated = text_log and size > RunLayout.MAX_LOG_BYTES
        try:
            if text_log:
                data = _read_prefix(abs_path, rel, RunLayout.MAX_LOG_BYTES, root=root)
            else:
                data = _read_capped(abs_path, rel, root=root)
        except OSError as exc:
            skipped.append(Skipped(path=rel, reason=f"cannot read: {exc.strerror or exc}"))
            continue
        if truncated:
            skipped.append(_cut_log(rel, size, data))
        artifacts.append(_artifact(rel, abs_path, kind, language, size, data, truncated, root))
    submission = next((a for a in artifacts if a.kind is ArtifactKind.SUBMISSION), None)
    if names is None and submission is None and submission_path is None and not any(
        s.path in candidates for s in skipped
    ):
        looked = ", ".join(candidates)
        notes.append(Skipped(path=RunLayout.SUBMISSION_CANDIDATES[0],
                             reason=f"no submission file (looked for {looked}): submission checks and grading not run"))
    return Run(
        run_id=_meta_str(meta, "run_id") or run_name,
        root=root,
        competition_id=_meta_str(meta, "competition_id"),
        agent_id=_meta_str(meta, "agent_id"),
        artifacts=tuple(artifacts),
        submission=submission,
        meta=meta,
        skipped=tuple(sorted(skipped, key=lambda s: s.path)),
        notes=tuple(notes),
        layout=layout,
    )
