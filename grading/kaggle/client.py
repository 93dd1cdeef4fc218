"""The Kaggle client: competition archives, leaderboards, notebook listings and pulls."""

from __future__ import annotations

import re
import shutil
import tempfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Mapping

import pandas as pd

from mleaudit.grading.kaggle.errors import KaggleError, _describe
from mleaudit.grading.kaggle.leaderboard_csv import leaderboard_from_kaggle_csv
from mleaudit.grading.kaggle.records import KernelInfo


#: Kaggle's page size limit for ``kernels_list``.
_KERNELS_PAGE = 100
_KERNEL_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*/[A-Za-z0-9][A-Za-z0-9_.\-]*$")
_NOTEBOOK_SUFFIXES = (".ipynb", ".py", ".r", ".rmd", ".R", ".Rmd")


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
