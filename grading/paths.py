"""Where competition folders and prepared data live.

Two roots matter to grading. The *competitions root* holds one data folder per Kaggle slug
(``competitions/<id>/config.yaml`` ...), found from an explicit option, the
``MLEAUDIT_COMPETITIONS`` environment variable, or the checkout next to this package. The
*data dir* holds prepared datasets in MLE-bench's layout::

    <data>/<id>/raw/                 original Kaggle files (optional default for ``--raw``)
    <data>/<id>/prepared/public/     what an agent may see (train.csv, test.csv, sample_submission.csv)
    <data>/<id>/prepared/private/    held-out answers used only by the grader

It comes from an explicit option, ``MLEAUDIT_DATA_DIR``, or the user cache dir.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import platformdirs

from mleaudit.grading.errors import ConfigError

__all__ = [
    "COMPETITIONS_ENV",
    "DATA_DIR_ENV",
    "find_competitions_root",
    "default_data_dir",
    "resolve_data_dir",
    "competition_data_dir",
    "prepared_dir",
    "public_dir",
    "private_dir",
    "raw_dir",
]

logger = logging.getLogger(__name__)

#: Environment variable naming the competitions root.
COMPETITIONS_ENV = "MLEAUDIT_COMPETITIONS"
#: Environment variable naming the prepared-data dir.
DATA_DIR_ENV = "MLEAUDIT_DATA_DIR"


def _checkout_competitions() -> Path:
    from mleaudit import grading

    return Path(grading.__file__).resolve().parents[1] / "competitions"


def find_competitions_root(option: str | os.PathLike[str] | None = None) -> Path:
    """Return the folder that holds one sub-folder per competition.

    Parameters
    ----------
    option : path-like, optional
        An explicit folder (the ``--competitions`` option). Used as is when given.

    Returns
    -------
    pathlib.Path
        The first of: ``option``, ``$MLEAUDIT_COMPETITIONS``, the ``competitions/`` folder of
        the checkout this package was imported from.

    Raises
    ------
    ConfigError
        If an explicit choice (option or environment variable) is not a directory, or if
        neither is given and the checkout has no ``competitions/`` folder; the message names
        all three places.
    """
    if option is not None:
        path = Path(option).expanduser()
        if not path.is_dir():
            raise ConfigError(f"--competitions {path}: not a directory")
        return path
    env = os.environ.get(COMPETITIONS_ENV)
    if env:
        path = Path(env).expanduser()
        if not path.is_dir():
            raise ConfigError(f"{COMPETITIONS_ENV}={env}: not a directory")
        return path
    checkout = _checkout_competitions()
    if checkout.is_dir():
        return checkout
    raise ConfigError(
        "no competitions folder found: pass --competitions DIR, set "
        f"{COMPETITIONS_ENV}, or run from a checkout that has {checkout}"
    )


def default_data_dir() -> Path:
    """Return the default prepared-data dir, ``<user cache dir>/mleaudit/data``.

    Returns
    -------
    pathlib.Path
        A path under the platform's user cache directory (it may not exist yet).
    """
    return Path(platformdirs.user_cache_dir("mleaudit")) / "data"


def resolve_data_dir(option: str | os.PathLike[str] | None = None) -> Path:
    """Return the prepared-data dir.

    Parameters
    ----------
    option : path-like, optional
        An explicit folder (the ``--data-dir`` option).

    Returns
    -------
    pathlib.Path
        The first of: ``option``, ``$MLEAUDIT_DATA_DIR``, :func:`default_data_dir`. The folder
        need not exist yet (``prepare`` creates it).
    """
    if option is not None:
        return Path(option).expanduser()
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env).expanduser()
    return default_data_dir()


def competition_data_dir(data_dir: Path, competition_id: str) -> Path:
    """``<data>/<id>``: everything stored for one competition."""
    return Path(data_dir) / competition_id


def prepared_dir(data_dir: Path, competition_id: str) -> Path:
    """``<data>/<id>/prepared``: the parent of the public and private dirs."""
    return competition_data_dir(data_dir, competition_id) / "prepared"


def public_dir(data_dir: Path, competition_id: str) -> Path:
    """``<data>/<id>/prepared/public``: files an agent may read."""
    return prepared_dir(data_dir, competition_id) / "public"


def private_dir(data_dir: Path, competition_id: str) -> Path:
    """``<data>/<id>/prepared/private``: held-out answers, read only by the grader."""
    return prepared_dir(data_dir, competition_id) / "private"


def raw_dir(data_dir: Path, competition_id: str) -> Path:
    """``<data>/<id>/raw``: where ``prepare`` looks for Kaggle files when no ``--raw`` is given."""
    return competition_data_dir(data_dir, competition_id) / "raw"
