"""Kaggle access: competition archives, leaderboards and the top public notebooks.

Everything that talks to Kaggle goes through :class:`KaggleClient`, a thin wrapper over the
official ``kaggle`` package (the optional extra ``mleaudit[kaggle]``). The package is imported
only when a client is made, because importing it reads credentials and may print or exit; the
client checks that credentials exist *before* that import, so a machine without them fails at
once with :class:`KaggleUnavailable` and a message that says what to set, never with a
traceback or a prompt. Calls that fail on the network or at Kaggle raise :class:`KaggleError`
naming the call and the competition.

What is fetched keeps MLE-bench's forms: a competition's files arrive as Kaggle's zip archive
(``<id>.zip``, whose MD5 MLE-bench records as ``zip`` in checksums.yaml) and are extracted into
the raw dir, nested archives included; a leaderboard is written with MLE-bench's columns
``scoreNullable, teamId, hasTeamName, submissionDate, score, hasScore``; notebooks are saved as
``<dir>/<owner>/<slug>.<ext>`` (the layout whose reference ids are Kaggle's ``owner/slug``)
with a ``kernels.txt`` manifest, most voted first.

References
----------
Kaggle public API, ``kaggle.api.kaggle_api_extended.KaggleApi`` (``competition_download_files``,
``competition_leaderboard_download``, ``kernels_list``, ``kernels_pull``).
"""

from __future__ import annotations

import importlib.util

import io
import logging
import os
import re
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Mapping

import pandas as pd

from mleaudit.grading.errors import GradingError
from mleaudit.grading.leaderboard import LEADERBOARD_COLUMNS

__all__ = [
    "KAGGLE_INSTALL_HINT",
    "KaggleUnavailable",
    "KaggleError",
    "KernelInfo",
    "FetchedKernels",
    "KaggleClient",
    "find_kaggle_credentials",
    "connect_kaggle",
    "extract_archive",
    "leaderboard_from_kaggle_csv",
    "fetch_top_kernels",
]

logger = logging.getLogger(__name__)

#: How to install the optional dependency.
KAGGLE_INSTALL_HINT = "pip install 'mleaudit[kaggle]'"
#: Largest total size an archive may expand to (a guard against zip bombs): 2 TiB is more than
#: any MLE-bench competition (the largest are a few hundred GB).
MAX_EXTRACTED_BYTES = 2 << 40
#: Kaggle's page size limit for ``kernels_list``.
_KERNELS_PAGE = 100
_KERNEL_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*/[A-Za-z0-9][A-Za-z0-9_.\-]*$")
_NOTEBOOK_SUFFIXES = (".ipynb", ".py", ".r", ".rmd", ".R", ".Rmd")


class KaggleUnavailable(GradingError):
    """The ``kaggle`` package or Kaggle credentials are missing: nothing was sent."""


class KaggleError(GradingError):
    """A call to Kaggle failed (network, permission, unknown competition or notebook)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelInfo:
    """One public notebook as Kaggle lists it.

    Attributes
    ----------
    ref : str
        ``owner/slug``.
    title : str
        The notebook's title.
    votes : int
        Up-votes when listed (higher first in :func:`fetch_top_kernels`).
    language : str
        Kaggle's language name (``python``, ``r`` ...), empty when not given.
    """

    ref: str
    title: str = ""
    votes: int = 0
    language: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchedKernels:
    """What :func:`fetch_top_kernels` saved.

    Attributes
    ----------
    competition_id : str
        The competition.
    directory : pathlib.Path
        The corpus folder.
    saved : tuple of str
        Corpus-relative paths of the notebooks saved, in vote order.
    refs : tuple of str
        ``owner/slug`` of the saved notebooks, as written to ``kernels.txt``.
    failed : mapping
        ``owner/slug`` → why the notebook could not be pulled.
    """

    competition_id: str
    directory: Path
    saved: tuple[str, ...]
    refs: tuple[str, ...]
    failed: Mapping[str, str]


def find_kaggle_credentials(environ: Mapping[str, str] | None = None, home: Path | None = None) -> str | None:
    """Where Kaggle credentials would be read from, without reading them.

    Parameters
    ----------
    environ : mapping, optional
        Environment (default ``os.environ``).
    home : pathlib.Path, optional
        Home folder (default ``Path.home()``).

    Returns
    -------
    str or None
        A description of the first source found (``KAGGLE_USERNAME/KAGGLE_KEY``,
        ``KAGGLE_API_TOKEN``, a ``kaggle.json`` or ``access_token`` file), or ``None``.
    """
    env = os.environ if environ is None else environ
    if env.get("KAGGLE_USERNAME") and env.get("KAGGLE_KEY"):
        return "environment variables KAGGLE_USERNAME and KAGGLE_KEY"
    if env.get("KAGGLE_API_TOKEN"):
        return "environment variable KAGGLE_API_TOKEN"
    home = Path.home() if home is None else home
    folders = []
    if env.get("KAGGLE_CONFIG_DIR"):
        folders.append(Path(env["KAGGLE_CONFIG_DIR"]).expanduser())
    xdg = Path(env["XDG_CONFIG_HOME"]).expanduser() if env.get("XDG_CONFIG_HOME") else home / ".config"
    folders += [home / ".kaggle", xdg / "kaggle"]
    for folder in folders:
        for name in ("kaggle.json", "access_token"):
            if (folder / name).is_file():
                return str(folder / name)
    return None


def _load_api_class() -> type:
    """Import the official client class (the package's import runs its own authentication)."""
    from kaggle.api.kaggle_api_extended import KaggleApi

    return KaggleApi


def _kaggle_installed() -> bool:
    """Whether the ``kaggle`` package can be imported (found, not imported)."""
    return importlib.util.find_spec("kaggle") is not None


def connect_kaggle(environ: Mapping[str, str] | None = None, home: Path | None = None) -> "KaggleClient":
    """Make an authenticated Kaggle client, or fail fast saying what is missing.

    Parameters
    ----------
    environ, home
        Passed to :func:`find_kaggle_credentials` (tests give their own).

    Returns
    -------
    KaggleClient

    Raises
    ------
    KaggleUnavailable
        If the ``kaggle`` package is not installed (checked first, without importing it), no
        credentials are found (checked before anything is imported or sent), or Kaggle refuses
        the credentials.
    """
    # The package is looked for first (without importing it: its import already authenticates),
    # so that a user missing both learns of the install before the credentials.
    if not _kaggle_installed():
        raise KaggleUnavailable(f"The 'kaggle' package is not installed; install it with: {KAGGLE_INSTALL_HINT}")
    source = find_kaggle_credentials(environ, home)
    if source is None:
        raise KaggleUnavailable(
            "No Kaggle credentials: set KAGGLE_USERNAME and KAGGLE_KEY (or KAGGLE_API_TOKEN), or put "
            "kaggle.json in ~/.kaggle (https://www.kaggle.com/settings, 'Create New Token'). "
            "Nothing was downloaded."
        )
    try:
        api_class = _load_api_class()
    except ImportError:
        raise KaggleUnavailable(
            f"The 'kaggle' package is not installed; install it with: {KAGGLE_INSTALL_HINT}"
        ) from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the package may exit on bad credentials
        raise KaggleUnavailable(f"The 'kaggle' package could not start ({_describe(exc)}); credentials: {source}") from None
    api = api_class()
    try:
        api.authenticate()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - authenticate() calls exit(1) on failure
        raise KaggleUnavailable(f"Kaggle refused the credentials from {source} ({_describe(exc)})") from None
    return KaggleClient(api)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"it exited with status {exc.code}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class KaggleClient:
    """The few Kaggle calls mleaudit makes, with errors turned into :class:`KaggleError`.

    Parameters
    ----------
    api : object
        An authenticated ``kaggle.api.kaggle_api_extended.KaggleApi`` (or an object with the
        same methods; tests pass a fake).
    """

    def __init__(self, api: Any) -> None:
        self.api = api

    def _call(self, what: str, func: Callable[[], Any]) -> Any:
        try:
            return func()
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - network, HTTP and API errors alike
            hint = ""
            if "accept" in str(exc).lower() and "rules" in str(exc).lower():
                hint = " Accept the competition's rules on its Kaggle page first."
            raise KaggleError(f"Kaggle {what} failed: {_describe(exc)}.{hint}") from None

    def download_competition(self, competition_id: str, directory: Path) -> Path:
        """Download a competition's files as Kaggle's zip archive.

        Parameters
        ----------
        competition_id : str
            Kaggle slug.
        directory : pathlib.Path
            Folder that receives ``<id>.zip`` (created if needed).

        Returns
        -------
        pathlib.Path
            The archive.

        Raises
        ------
        KaggleError
            If the download fails or leaves no single archive.
        """
        directory.mkdir(parents=True, exist_ok=True)
        self._call(
            f"download of the files of {competition_id!r}",
            lambda: self.api.competition_download_files(competition_id, path=str(directory), quiet=True),
        )
        archives = sorted(directory.glob("*.zip"))
        if len(archives) != 1:
            raise KaggleError(
                f"Kaggle download of {competition_id!r} left {len(archives)} zip archives in {directory}; expected one"
            )
        return archives[0]

    def leaderboard(self, competition_id: str) -> pd.DataFrame:
        """A competition's leaderboard in MLE-bench's columns, best team first.

        Raises
        ------
        KaggleError
            If the download fails or the archive holds no leaderboard CSV.
        """
        with tempfile.TemporaryDirectory(prefix="mleaudit-leaderboard-") as tmp:
            self._call(
                f"leaderboard download of {competition_id!r}",
                lambda: self.api.competition_leaderboard_download(competition_id, path=tmp, quiet=True),
            )
            tables = sorted(Path(tmp).glob("*.csv"))
            for archive in sorted(Path(tmp).glob("*.zip")):
                with zipfile.ZipFile(archive) as zipped:
                    for name in zipped.namelist():
                        if name.lower().endswith(".csv"):
                            tables.append(Path(tmp) / PurePosixPath(name).name)
                            tables[-1].write_bytes(zipped.read(name))
            if not tables:
                raise KaggleError(f"Kaggle leaderboard download of {competition_id!r} holds no CSV file")
            # A finished competition may offer both boards; medals come from the private one.
            private = [t for t in tables if "private" in t.name.lower()]
            return leaderboard_from_kaggle_csv((private or tables)[0].read_bytes(), source=f"{competition_id} leaderboard")

    def top_kernels(self, competition_id: str, count: int) -> list[KernelInfo]:
        """The ``count`` most voted public notebooks of a competition.

        Raises
        ------
        KaggleError
            If listing fails.
        """
        found: list[KernelInfo] = []
        page = 1
        while len(found) < count:
            size = min(_KERNELS_PAGE, count - len(found)) if page == 1 else _KERNELS_PAGE
            batch = self._call(
                f"notebook listing of {competition_id!r}",
                lambda: self.api.kernels_list(competition=competition_id, sort_by="voteCount", page=page, page_size=size),
            )
            batch = list(batch or [])
            for item in batch:
                info = _kernel_info(item)
                if info is not None and info.ref not in {k.ref for k in found}:
                    found.append(info)
            if len(batch) < size:
                break
            page += 1
        return found[:count]

    def pull_kernel(self, ref: str, directory: Path) -> Path:
        """Download one notebook's source into ``directory/<owner>/<slug>.<ext>``.

        Raises
        ------
        KaggleError
            If the pull fails or yields no notebook file.
        """
        owner, slug = ref.split("/", 1)
        target_dir = directory / owner
        target_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="mleaudit-kernel-") as tmp:
            self._call(f"pull of notebook {ref!r}", lambda: self.api.kernels_pull(ref, path=tmp, metadata=False, quiet=True))
            files = sorted(p for p in Path(tmp).iterdir() if p.is_file() and p.suffix in _NOTEBOOK_SUFFIXES)
            if not files:
                raise KaggleError(f"Kaggle pull of notebook {ref!r} gave no notebook or script file")
            target = target_dir / f"{slug}{files[0].suffix.lower()}"
            shutil.move(str(files[0]), target)
        return target


def _kernel_info(item: Any) -> KernelInfo | None:
    ref = getattr(item, "ref", None) or (item.get("ref") if isinstance(item, Mapping) else None)
    if not isinstance(ref, str) or not _KERNEL_REF.match(ref.strip("/")):
        return None

    def field(*names: str) -> Any:
        for name in names:
            value = item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)
            if value is not None:
                return value
        return None

    votes = field("total_votes", "totalVotes")
    return KernelInfo(
        ref=ref.strip("/"),
        title=str(field("title") or ""),
        votes=int(votes) if isinstance(votes, (int, float)) else 0,
        language=str(field("language") or ""),
    )


def leaderboard_from_kaggle_csv(data: bytes, *, source: str = "leaderboard") -> pd.DataFrame:
    """Convert a leaderboard CSV as Kaggle serves it to MLE-bench's columns.

    Parameters
    ----------
    data : bytes
        Kaggle's CSV: ``TeamId``, ``TeamName``, ``SubmissionDate`` or ``LastSubmissionDate``,
        ``Score`` (and columns that are dropped), one row per team, best first.
    source : str
        Name for error messages.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`mleaudit.grading.leaderboard.LEADERBOARD_COLUMNS`, in Kaggle's row order.

    Raises
    ------
    KaggleError
        If a needed column is missing.

    Examples
    --------
    >>> csv = b"Rank,TeamId,TeamName,LastSubmissionDate,Score\\n1,7,a,2020-01-02 03:04:05,0.9\\n"
    >>> print(leaderboard_from_kaggle_csv(csv).to_csv(index=False), end="")
    scoreNullable,teamId,hasTeamName,submissionDate,score,hasScore
    0.9,7,True,2020-01-02 03:04:05,0.9,True
    """
    frame = pd.read_csv(io.BytesIO(data), dtype={"TeamName": str})
    date_column = next((c for c in ("SubmissionDate", "LastSubmissionDate") if c in frame.columns), None)
    missing = [c for c in ("TeamId", "Score") if c not in frame.columns] + ([] if date_column else ["SubmissionDate"])
    if missing:
        raise KaggleError(f"{source}: no column(s) {', '.join(missing)} (columns: {', '.join(map(str, frame.columns))})")
    score = pd.to_numeric(frame["Score"], errors="coerce")
    names = frame["TeamName"] if "TeamName" in frame.columns else pd.Series([""] * len(frame))
    table = pd.DataFrame(
        {
            "scoreNullable": score,
            "teamId": frame["TeamId"],
            "hasTeamName": names.fillna("").astype(str).str.len() > 0,
            "submissionDate": frame[date_column].astype(str),
            "score": score,
            "hasScore": score.notna(),
        }
    )
    return table[list(LEADERBOARD_COLUMNS)]


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
