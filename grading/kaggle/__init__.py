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

Routine Listings
----------------
errors
    :class:`KaggleUnavailable`, :class:`KaggleError`.
records
    :class:`KernelInfo`, :class:`FetchedKernels`.
leaderboard_csv
    :func:`leaderboard_from_kaggle_csv`: Kaggle's leaderboard CSV in MLE-bench's columns.
archives
    :data:`MAX_EXTRACTED_BYTES`, :func:`extract_archive`: zip archives extracted safely.
client
    :class:`KaggleClient`: the few Kaggle calls made, errors turned into :class:`KaggleError`.
kernels
    :func:`fetch_top_kernels`: the most voted notebooks saved as a reference corpus.

Connecting (:data:`KAGGLE_INSTALL_HINT`, :func:`find_kaggle_credentials`, :func:`connect_kaggle`)
lives here, in the package's ``__init__``, with the two hooks it calls (``_kaggle_installed``,
``_load_api_class``) looked up in this module, where tests replace them.

Notes
-----
Every public name is re-exported here, so callers import from ``mleaudit.grading.kaggle``.
Imports point down the listing above and out to ``mleaudit.grading.errors`` and
``mleaudit.grading.leaderboard``; no submodule imports this ``__init__``, and nothing here imports
``mleaudit.audit`` or ``mleaudit.sandbox``. The ``kaggle`` package itself is imported only in
``_load_api_class``. A new Kaggle call goes in ``client`` as a method of :class:`KaggleClient`;
what is done with its result goes in a module of its own, as ``kernels`` does.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from pathlib import Path
from typing import Mapping

from mleaudit.grading.kaggle import archives as _archives
from mleaudit.grading.kaggle.archives import extract_archive
from mleaudit.grading.kaggle.client import KaggleClient
from mleaudit.grading.kaggle.errors import KaggleError, KaggleUnavailable, _describe
from mleaudit.grading.kaggle.kernels import fetch_top_kernels
from mleaudit.grading.kaggle.leaderboard_csv import leaderboard_from_kaggle_csv
from mleaudit.grading.kaggle.records import FetchedKernels, KernelInfo

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


# Reached under this module's name though not in __all__.
MAX_EXTRACTED_BYTES = _archives.MAX_EXTRACTED_BYTES

# Examples of the functions re-exported here run with this module's (``doctest.testmod``).
__test__ = {"leaderboard_from_kaggle_csv": leaderboard_from_kaggle_csv}
