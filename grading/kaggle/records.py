"""What is fetched from Kaggle: a listed notebook, and the notebooks saved for a competition."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping


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
