"""The competition registry: competition folders on one side, prepared data on the other.

A :class:`CompetitionRegistry` pairs a competitions root (``competitions/<id>/config.yaml``)
with a prepared-data dir (``<data>/<id>/prepared/{public,private}``), loads specs lazily and
caches them, says whether a competition's data has been prepared, and selects competitions by
MLE-bench split (each config lists its splits; ``lite`` is another name for ``low``, the
22 low-complexity competitions of MLE-bench Lite).
"""

from __future__ import annotations

import difflib
import logging
from pathlib import Path

from mleaudit.grading import paths
from mleaudit.grading.errors import CompetitionNotFound
from mleaudit.grading.spec import CONFIG_FILE, CompetitionSpec, load_competition_spec

__all__ = ["SPLIT_ALIASES", "canonical_split", "CompetitionRegistry"]

logger = logging.getLogger(__name__)

#: Other names of MLE-bench splits: MLE-bench Lite is the low-complexity split.
SPLIT_ALIASES = {"lite": "low"}


def canonical_split(name: str) -> str:
    """The split name configs use for ``name`` (``lite`` → ``low``; others unchanged).

    Examples
    --------
    >>> canonical_split("lite"), canonical_split("split75")
    ('low', 'split75')
    """
    return SPLIT_ALIASES.get(name, name)


class CompetitionRegistry:
    """Competitions found under a root folder, with their prepared data under a data dir.

    Parameters
    ----------
    root : path-like
        Folder holding one sub-folder per competition (see :func:`mleaudit.grading.paths.find_competitions_root`).
    data_dir : path-like
        Prepared-data dir (see :func:`mleaudit.grading.paths.resolve_data_dir`).

    Examples
    --------
    >>> from grading import CompetitionRegistry, find_competitions_root, resolve_data_dir
    >>> registry = CompetitionRegistry(find_competitions_root(), resolve_data_dir())
    >>> "spaceship-titanic" in registry.ids()
    True
    """

    def __init__(self, root: str | Path, data_dir: str | Path) -> None:
        self.root = Path(root)
        self.data_dir = Path(data_dir)
        self._specs: dict[str, CompetitionSpec] = {}

    def __repr__(self) -> str:
        return f"CompetitionRegistry(root={str(self.root)!r}, data_dir={str(self.data_dir)!r})"

    def ids(self) -> list[str]:
        """Ids of every folder under the root that has a config.yaml, sorted."""
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and (p / CONFIG_FILE).is_file())

    def __contains__(self, competition_id: object) -> bool:
        return isinstance(competition_id, str) and competition_id in self.ids()

    def get(self, competition_id: str) -> CompetitionSpec:
        """Load (once) and return the spec of ``competition_id``.

        Raises
        ------
        CompetitionNotFound
            If no folder has that id; the message suggests close matches.
        ConfigError
            If the folder's config is invalid.
        """
        spec = self._specs.get(competition_id)
        if spec is not None:
            return spec
        known = self.ids()
        if competition_id not in known:
            close = difflib.get_close_matches(competition_id, known, n=3, cutoff=0.6)
            hint = f" Did you mean: {', '.join(close)}?" if close else f" Known competitions: {', '.join(known) or 'none'}."
            raise CompetitionNotFound(f"No competition {competition_id!r} in {self.root}.{hint}")
        spec = load_competition_spec(self.root / competition_id)
        self._specs[competition_id] = spec
        return spec

    def specs(self) -> list[CompetitionSpec]:
        """Every competition's spec, sorted by id."""
        return [self.get(cid) for cid in self.ids()]

    def split_names(self) -> list[str]:
        """Every split some competition's config names, sorted."""
        return sorted({split for spec in self.specs() for split in spec.splits})

    def ids_in_split(self, split: str) -> list[str]:
        """Ids of the competitions whose config lists ``split`` (or its alias), sorted.

        Raises
        ------
        CompetitionNotFound
            If no competition belongs to that split; the message lists the known splits.
        """
        name = canonical_split(split)
        ids = [spec.id for spec in self.specs() if name in spec.splits]
        if not ids:
            known = self.split_names()
            aliases = ", ".join(f"{alias} (= {target})" for alias, target in SPLIT_ALIASES.items())
            raise CompetitionNotFound(
                f"No competition in split {split!r}. Known splits: {', '.join(known) or 'none'}; also {aliases}."
            )
        return ids

    def public_dir(self, competition_id: str) -> Path:
        """``<data>/<id>/prepared/public``."""
        return paths.public_dir(self.data_dir, competition_id)

    def private_dir(self, competition_id: str) -> Path:
        """``<data>/<id>/prepared/private``."""
        return paths.private_dir(self.data_dir, competition_id)

    def raw_dir(self, competition_id: str) -> Path:
        """``<data>/<id>/raw``, the default place ``prepare`` looks for Kaggle files."""
        return paths.raw_dir(self.data_dir, competition_id)

    def answers_path(self, competition_id: str) -> Path:
        """The private answers file of a competition."""
        return self.get(competition_id).answers_path(self.data_dir)

    def sample_submission_path(self, competition_id: str) -> Path:
        """The public sample submission of a competition."""
        return self.get(competition_id).sample_submission_path(self.data_dir)

    def is_prepared(self, competition_id: str, *, grading_only: bool = False) -> bool:
        """Whether the prepared data exists.

        Parameters
        ----------
        competition_id : str
            The competition.
        grading_only : bool
            Only require the private answers (what grading needs); otherwise the public dir
            must be non-empty and hold the sample submission too (MLE-bench's rule).
        """
        spec = self.get(competition_id)
        private = self.private_dir(competition_id)
        if not private.is_dir() or not any(private.iterdir()):
            return False
        if not spec.answers_path(self.data_dir).is_file():
            return False
        if grading_only:
            return True
        public = self.public_dir(competition_id)
        if not public.is_dir() or not any(public.iterdir()):
            return False
        return spec.sample_submission_path(self.data_dir).is_file()
