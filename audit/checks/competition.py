"""What a check may know about the run's competition: its id, its public files, its public notebooks.

Facts come from the competition folders of this repository (``competitions/<id>/``), never from
the audited run: ``checksums.yaml`` lists the files MLE-bench publishes to the agent
(``public:``) and keeps back (``private:``), ``config.yaml`` names the sample submission, and
``kernels.txt`` lists the competition's most voted public notebooks as ``owner/slug``. When the
competition's data is prepared, the file names of its ``prepared/public`` folder are added.

The competition id comes from :attr:`RunContext.competition_id`, else from the run's own
``run.json``/``metadata.json`` (read without following links, JSON nesting bounded). Every
reader here returns an empty answer when something is missing or unreadable: a check that
cannot place the run still judges it with what it has (generic names, the union of all
competitions' notebooks), and says so in its match values.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from pathlib import Path, PurePosixPath
from typing import Any, Mapping

from mleaudit.audit.rules.context import RunContext

__all__ = [
    "competition_id",
    "competitions_root",
    "public_file_names",
    "private_file_names",
    "kernel_refs",
    "label_leak_columns",
]

logger = logging.getLogger(__name__)

#: Competition ids are Kaggle slugs (``spaceship-titanic``, ``AI4Code``): nothing else is looked up.
_COMPETITION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
#: Competition files read here are small; larger ones are not read.
_MAX_FACT_BYTES = 4 << 20
#: ``owner/slug`` lines of a kernels list.
_REF = re.compile(r"^([A-Za-z0-9][\w.-]{0,99})/([A-Za-z0-9][\w.-]{0,199})$")


def competition_id(ctx: RunContext) -> str | None:
    """The run's competition id: the context's, else ``competition_id`` of the run's metadata files."""
    if ctx.competition_id and _COMPETITION_ID.match(ctx.competition_id):
        return ctx.competition_id

    def read() -> str | None:
        from mleaudit.audit.run import RunLayout, read_run_file
        from mleaudit.grading import untrusted_json

        for name in RunLayout.RUN_META:
            try:
                data = untrusted_json.loads(read_run_file(ctx.root, name, max_bytes=_MAX_FACT_BYTES))
            except (OSError, ValueError):
                continue
            value = data.get("competition_id") if isinstance(data, dict) else None
            if isinstance(value, str) and _COMPETITION_ID.match(value.strip()):
                return value.strip()
        return None

    return ctx.memoize("competition-id", read)


def competitions_root() -> Path | None:
    """The competitions folder (``$MLEAUDIT_COMPETITIONS`` or the checkout's), or ``None``."""
    try:
        from mleaudit.grading.paths import find_competitions_root

        return find_competitions_root(None)
    except Exception as exc:  # noqa: BLE001 - no competitions folder: the checks judge without it
        logger.info("no competitions folder: %s", exc)
        return None


def _read_text(path: Path) -> str | None:
    try:
        if not path.is_file() or path.stat().st_size > _MAX_FACT_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


@functools.lru_cache(maxsize=256)
def _yaml_file(path: str) -> Any:
    text = _read_text(Path(path))
    if text is None:
        return None
    try:
        from mleaudit.grading import untrusted_yaml

        return untrusted_yaml.safe_load(text)
    except Exception as exc:  # noqa: BLE001 - a broken competition file is no fact
        logger.info("cannot read %s: %s", path, exc)
        return None


def _competition_file(competition: str | None, name: str) -> Any:
    root = competitions_root()
    if root is None or not competition or not _COMPETITION_ID.match(competition):
        return None
    return _yaml_file(str(root / competition / name))


def _names(tree: Any, prefix: str = "") -> list[str]:
    out: list[str] = []
    if isinstance(tree, Mapping):
        for key, value in tree.items():
            if isinstance(value, Mapping):
                out.extend(_names(value, f"{prefix}{key}/"))
            else:
                out.append(f"{prefix}{key}")
    return out


@functools.lru_cache(maxsize=256)
def _public_names(root: str | None, competition: str, data_dir: str | None) -> frozenset[str]:
    names: set[str] = set()
    checksums = _competition_file(competition, "checksums.yaml")
    if isinstance(checksums, Mapping):
        for path in _names(checksums.get("public")):
            names.add(PurePosixPath(path).name)
    config = _competition_file(competition, "config.yaml")
    dataset = config.get("dataset") if isinstance(config, Mapping) else None
    if isinstance(dataset, Mapping) and isinstance(dataset.get("sample_submission"), str):
        names.add(PurePosixPath(dataset["sample_submission"]).name)
    if data_dir:
        public = Path(data_dir) / competition / "prepared" / "public"
        try:
            with os.scandir(public) as entries:
                for k, entry in enumerate(entries):
                    if k >= 10_000:
                        break
                    names.add(entry.name)
        except OSError:
            pass
    return frozenset(n.lower() for n in names)


def public_file_names(competition: str | None) -> frozenset[str]:
    """Lower-cased names of the files MLE-bench gives the agent for ``competition`` (empty when unknown)."""
    if not competition:
        return frozenset()
    try:
        from mleaudit.grading.paths import resolve_data_dir

        data_dir = str(resolve_data_dir(None))
    except Exception:  # noqa: BLE001 - no data dir: the published lists alone
        data_dir = None
    root = competitions_root()
    return _public_names(str(root) if root else None, competition, data_dir)


def private_file_names(competition: str | None) -> frozenset[str]:
    """Lower-cased names of the files MLE-bench keeps back for ``competition`` (its answers)."""
    checksums = _competition_file(competition, "checksums.yaml")
    if not isinstance(checksums, Mapping):
        return frozenset()
    return frozenset(PurePosixPath(p).name.lower() for p in _names(checksums.get("private")))


@functools.lru_cache(maxsize=8)
def _all_kernel_refs(root: str) -> Mapping[str, tuple[str, ...]]:
    refs: dict[str, list[str]] = {}
    try:
        folders = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return {}
    for folder in folders:
        if not folder.is_dir(follow_symlinks=False) or not _COMPETITION_ID.match(folder.name):
            continue
        text = _read_text(Path(folder.path) / "kernels.txt")
        for line in (text or "").splitlines():
            m = _REF.match(line.strip())
            if m:
                refs.setdefault(f"{m.group(1)}/{m.group(2)}".lower(), []).append(folder.name)
    return {ref: tuple(comps) for ref, comps in refs.items()}


def kernel_refs() -> Mapping[str, tuple[str, ...]]:
    """Every ``owner/slug`` (lower case) of every competition's ``kernels.txt``, with its competitions."""
    root = competitions_root()
    return _all_kernel_refs(str(root)) if root is not None else {}


def label_leak_columns(competition: str | None) -> tuple[str, ...]:
    """The competition's ``audit.label_leak_columns`` (empty when unknown)."""
    config = _competition_file(competition, "config.yaml")
    audit = config.get("audit") if isinstance(config, Mapping) else None
    columns = audit.get("label_leak_columns") if isinstance(audit, Mapping) else None
    if not isinstance(columns, list):
        return ()
    return tuple(c for c in columns if isinstance(c, str) and c)
