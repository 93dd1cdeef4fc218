"""Competition specs: one ``competitions/<id>/config.yaml`` read, validated and typed.

A competition folder is data, not a package: it holds ``config.yaml``, ``leaderboard.csv``,
optionally ``prepare.py`` (``prepare(raw, public, private)``), ``grade.py`` (a custom grader,
only when no built-in metric fits), ``checksums.yaml`` (MD5 of the prepared files, as in
MLE-bench) and a folder of reference kernels. The Python files are the project's own and are
loaded by file path, because competition ids contain hyphens and cannot be imported as
modules. Paths to data (``dataset.answers``, ``dataset.sample_submission``) are relative to
the prepared-data dir, exactly as in MLE-bench configs (``<id>/prepared/private/test.csv``).

``config.yaml`` layout::

    id: spaceship-titanic                 # must equal the folder name
    name: Spaceship Titanic
    description: ...                      # optional
    metric: {name: accuracy_score, higher_is_better: true, params: {}}   # or grader: grade.py:grade
    id_column: PassengerId
    target_columns: [Transported]
    dataset:
      answers: spaceship-titanic/prepared/private/test.csv
      sample_submission: spaceship-titanic/prepared/public/sample_submission.csv
      raw_files: [train.csv]              # Kaggle files prepare needs; [] when none
    leaderboard: {path: leaderboard.csv, source: kaggle, note: ...}
    prepare: prepare.py:prepare
    kernels: kernels                      # reference-notebook folder, relative to the folder
    kernels_list: kernels.txt             # optional: top public notebooks, one owner/slug a line
    awards_medals: true                   # optional: whether Kaggle awarded medals (default true)
    competition_type: simple              # optional: simple, or code (Kaggle's notebook-only entries)
    splits: [low, split75]                # optional: MLE-bench splits the competition belongs to
    audit:                                # audit policy (see rules/README.md, "Competition policy")
      allow_urls: [download.pytorch.org]  # hosts or host/path prefixes whose downloads are allowed
      label_leak_columns: []              # test-data columns known to leak the label
      public_data_dirs: [/home/data]
      boilerplate: []
    mlebench_looseness:                   # where MLE-bench's grader accepts what this one rejects
      - kind: positional_rows             # one of MLEBENCH_LOOSENESS_KINDS; [] where it is strict
        note: pairs submission rows with answer rows by file position; ids are never read
"""

from __future__ import annotations

import importlib.util
import inspect
import logging
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Callable, Mapping

import jsonschema
import yaml

from mleaudit.grading import untrusted_yaml
from mleaudit.grading.errors import ConfigError

# The metrics load scikit-learn, SciPy and pandas: imported where a metric is looked up, so that
# the spec's constants (AUDIT_POLICY_KEYS, file names) come without them.
if TYPE_CHECKING:
    from mleaudit.grading.metrics import Metric, TargetKind

__all__ = [
    "CONFIG_FILE",
    "CHECKSUMS_FILE",
    "CONFIG_SCHEMA",
    "LEADERBOARD_SOURCES",
    "COMPETITION_TYPES",
    "AUDIT_POLICY_KEYS",
    "MLEBENCH_LOOSENESS_KINDS",
    "CELL_KINDS",
    "Looseness",
    "MetricSpec",
    "CompetitionSpec",
    "load_competition_spec",
    "load_checksums",
    "load_kernel_refs",
]

logger = logging.getLogger(__name__)

CONFIG_FILE = "config.yaml"
CHECKSUMS_FILE = "checksums.yaml"
#: Where a leaderboard's scores come from: Kaggle's final private leaderboard, baselines trained
#: by ``scripts/make_reference_leaderboard.py`` for competitions that never ran on Kaggle, or
#: ``unavailable`` when no snapshot could be had (the note says why; no medals can be awarded).
LEADERBOARD_SOURCES = ("kaggle", "reference-baselines", "unavailable")
#: Kaggle's kinds of competition: ``simple`` (upload a CSV) or ``code`` (entries are notebooks
#: run by Kaggle, often with limits on run time and internet access).
COMPETITION_TYPES = ("simple", "code")
#: Keys of a competition's audit policy (lists of strings, default empty): ``allow_urls``
#: (hosts or ``host/path`` prefixes, optionally with a scheme, whose downloads the external-resource
#: and llm-api rules accept), ``public_data_dirs``, ``boilerplate`` (starter code for similarity)
#: and ``label_leak_columns`` (test-data columns known to leak the label, read by the generic
#: label-leak rules).
AUDIT_POLICY_KEYS = ("allow_urls", "public_data_dirs", "boilerplate", "label_leak_columns")
#: An ``allow_urls`` entry: a host with a dot (and an optional port and path), optionally with a
#: scheme. A bare word cannot be an entry: it would allow nothing, or everything.
_ALLOW_URL = {
    "type": "string",
    "pattern": r"^(?:[A-Za-z][A-Za-z0-9+.-]*://)?[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+(?::[0-9]{1,5})?(?:/[^\s]*)?$",
}
#: A column name: no blanks around it, one line.
_COLUMN = {"type": "string", "pattern": r"^\S(?:[^\n]*\S)?$"}

_STRING_LIST = {"type": "array", "items": {"type": "string", "minLength": 1}}

#: The vocabulary of ``mlebench_looseness``: what MLE-bench's grader for a competition accepts, or
#: how it pairs rows, where this project's grading checks strictly. Each kind, its definition
#: and the keys an entry of that kind may carry besides ``kind``, ``note`` and ``score``
#: (detection: :mod:`mleaudit.grading.mlebench_divergence`).
MLEBENCH_LOOSENESS_KINDS: Mapping[str, str] = {
    "positional_rows": "submission rows are paired with answer rows by their position in the file (within each value of "
                       "the column `within` when given); the ids are not compared, and may be wrong or absent",
    "sorted_rows": "each file is sorted by its own id column and rows are paired by sorted position; the ids are never "
                   "compared, so unknown or repeated ids pass (`mask_by_position`: the answers' row mask column is "
                   "applied to the submission by file position)",
    "row_order_required": "rows are paired by position and each pair's ids must be equal: a file holding every test id "
                          "once, but not in the answers' order, is invalid under MLE-bench",
    "positional_columns": "the prediction columns are read by their position in the file, not by their names",
    "duplicate_ids_accepted": "a test id on several rows is accepted (`pairing`: `merge` scores every copy against its "
                              "answer row; `sorted` pairs rows by position after sorting, so copies take the place of "
                              "other ids; `pool` joins the copies' predictions into one row)",
    "missing_rows_accepted": "a submission without some test ids is scored on the rows it has",
    "header_only_valid": "a file with a header and no rows is a valid submission, with an undefined (NaN) score",
    "nan_inf_coerced": "missing, NaN or infinite cells of `columns` are accepted: `fill` says what value each kind of "
                       "cell becomes (null: accepted, but what it becomes is not emulated), `whole_score` which kinds "
                       "of cell set MLE-bench's whole score",
    "labels_truncated": "fractional class labels of `columns` are truncated to integers (int(1.5) is 1)",
    "odd_rle_accepted": "run-length masks of `columns` with an odd count of numbers are accepted: one number is an "
                        "empty mask, three give the dangling start the first run's length",
}
#: Kinds of cell ``nan_inf_coerced`` entries speak of: missing or NaN, +inf, -inf.
CELL_KINDS = ("nan", "posinf", "neginf")
#: Keys an entry may carry beyond ``kind``, ``note`` and ``score``, by kind.
_LOOSENESS_OPTIONS: Mapping[str, tuple[str, ...]] = {
    "positional_rows": ("within",),
    "sorted_rows": ("mask_by_position",),
    "duplicate_ids_accepted": ("pairing",),
    "nan_inf_coerced": ("columns", "fill", "whole_score"),
    "labels_truncated": ("columns",),
    "odd_rle_accepted": ("columns",),
}
#: How far detection can reproduce MLE-bench's score for an entry: ``exact`` (default),
#: ``approximate`` (the note says what differs) or ``none`` (its outcome is described only).
LOOSENESS_SCORES = ("exact", "approximate", "none")
_CALLABLE_REF = {"type": "string", "pattern": r"^[A-Za-z0-9_.\-]+\.py:[A-Za-z_][A-Za-z0-9_]*$"}

#: JSON Schema (draft 2020-12) of ``config.yaml``.
CONFIG_SCHEMA: Mapping[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["id", "name", "metric", "id_column", "target_columns", "dataset", "leaderboard", "kernels"],
    "properties": {
        # Kaggle slugs are lower-case except a few early ones (AI4Code).
        "id": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9\-]*$"},
        "name": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
        "metric": {
            "type": "object",
            "additionalProperties": False,
            "required": ["name", "higher_is_better"],
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "higher_is_better": {"type": "boolean"},
                "params": {"type": "object"},
                "grader": _CALLABLE_REF,
            },
        },
        "id_column": {"type": "string", "minLength": 1},
        "target_columns": {**_STRING_LIST, "minItems": 1, "uniqueItems": True},
        "dataset": {
            "type": "object",
            "additionalProperties": False,
            "required": ["answers", "sample_submission"],
            "properties": {
                "answers": {"type": "string", "minLength": 1},
                "sample_submission": {"type": "string", "minLength": 1},
                "raw_files": _STRING_LIST,
            },
        },
        "leaderboard": {
            "type": "object",
            "additionalProperties": False,
            "required": ["path", "source"],
            "properties": {
                "path": {"type": "string", "minLength": 1},
                "source": {"enum": list(LEADERBOARD_SOURCES)},
                "note": {"type": "string"},
            },
        },
        "prepare": _CALLABLE_REF,
        "kernels": {"type": "string", "minLength": 1},
        "kernels_list": {"type": "string", "minLength": 1},
        "awards_medals": {"type": "boolean"},
        "competition_type": {"enum": list(COMPETITION_TYPES)},
        "splits": {
            "type": "array",
            "items": {"type": "string", "pattern": r"^[a-z0-9][a-z0-9\-]*$"},
            "uniqueItems": True,
        },
        "audit": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                **{key: _STRING_LIST for key in AUDIT_POLICY_KEYS},
                "allow_urls": {"type": "array", "items": _ALLOW_URL, "uniqueItems": True},
                "label_leak_columns": {"type": "array", "items": _COLUMN, "uniqueItems": True},
            },
        },
        "mlebench_looseness": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["kind", "note"],
                "properties": {
                    "kind": {"enum": list(MLEBENCH_LOOSENESS_KINDS)},
                    "note": {"type": "string", "pattern": r"^\S[^\n]*$"},
                    "score": {"enum": list(LOOSENESS_SCORES)},
                    "within": _COLUMN,
                    "mask_by_position": _COLUMN,
                    "pairing": {"enum": ["merge", "sorted", "pool"]},
                    "columns": {"type": "array", "items": _COLUMN, "minItems": 1, "uniqueItems": True},
                    "fill": {
                        "type": "object",
                        "propertyNames": {"enum": list(CELL_KINDS)},
                        "additionalProperties": {"type": ["number", "string", "null"]},
                    },
                    "whole_score": {
                        "type": "object",
                        "propertyNames": {"enum": list(CELL_KINDS)},
                        "additionalProperties": {"type": "number"},
                    },
                },
            },
        },
    },
}

_MD5 = re.compile(r"^[0-9a-f]{32}$")
#: A Kaggle notebook reference, ``owner/slug``.
_KERNEL_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*/[A-Za-z0-9][A-Za-z0-9_.\-]*$")


@dataclass(frozen=True, slots=True, kw_only=True)
class Looseness:
    """One way MLE-bench's grader for a competition is looser than this project's grading.

    An entry of ``mlebench_looseness`` in ``config.yaml``; :mod:`mleaudit.grading.mlebench_divergence`
    finds submissions that trigger it.

    Attributes
    ----------
    kind : str
        A key of :data:`MLEBENCH_LOOSENESS_KINDS`.
    note : str
        One line naming what the grader does, for a reviewer.
    score : str
        ``exact``, ``approximate`` or ``none``: how far MLE-bench's score for a triggering file
        can be reproduced with this project's metric (:data:`LOOSENESS_SCORES`).
    within : str or None
        ``positional_rows``: rows are paired by position within each value of this column.
    mask_by_position : str or None
        ``sorted_rows``: the answers' boolean column MLE-bench applies to the submission by
        file position.
    pairing : str or None
        ``duplicate_ids_accepted``: ``merge``, ``sorted`` or ``pool``.
    columns : tuple of str
        ``nan_inf_coerced``, ``labels_truncated``, ``odd_rle_accepted``: the submission columns
        it applies to (empty: every target column).
    fill : mapping
        ``nan_inf_coerced``: cell kind (:data:`CELL_KINDS`) to the value MLE-bench turns it into
        (``None``: accepted, not emulated).
    whole_score : mapping
        ``nan_inf_coerced``: cell kind to the score MLE-bench then gives the whole file (NaN:
        valid, no score).
    """

    kind: str
    note: str
    score: str = "exact"
    within: str | None = None
    mask_by_position: str | None = None
    pairing: str | None = None
    columns: tuple[str, ...] = ()
    fill: Mapping[str, float | str | None] = field(default_factory=dict)
    whole_score: Mapping[str, float] = field(default_factory=dict)

    @property
    def cell_kinds(self) -> tuple[str, ...]:
        """``nan_inf_coerced``: the kinds of cell MLE-bench accepts, in :data:`CELL_KINDS` order."""
        return tuple(k for k in CELL_KINDS if k in self.fill or k in self.whole_score)

    def to_dict(self) -> dict[str, Any]:
        """The entry as in ``config.yaml`` (options that are not set left out)."""
        out: dict[str, Any] = {"kind": self.kind, "note": self.note, "score": self.score}
        for key in ("within", "mask_by_position", "pairing"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.columns:
            out["columns"] = list(self.columns)
        if self.fill:
            out["fill"] = dict(self.fill)
        if self.whole_score:
            out["whole_score"] = {k: _json_number(v) for k, v in self.whole_score.items()}
        return out


def _json_number(value: float) -> float | str:
    """A float for JSON: NaN and infinities as the strings ``nan``, ``inf``, ``-inf``."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricSpec:
    """How a competition is scored.

    Attributes
    ----------
    name : str
        A key of :data:`mleaudit.grading.metrics.METRICS`, or a label for a custom grader.
    higher_is_better : bool
        Declared direction (the leaderboard is only used to cross-check it).
    params : dict
        Keyword parameters passed to the built-in metric.
    grader : callable, optional
        ``grade(submission: DataFrame, answers: DataFrame) -> float`` from the competition's
        ``grade.py``, used instead of a built-in metric when set.
    """

    name: str
    higher_is_better: bool
    params: Mapping[str, Any] = field(default_factory=dict)
    grader: Callable[..., float] | None = None

    @property
    def metric(self) -> Metric | None:
        """The built-in metric, or ``None`` when a custom grader scores this competition."""
        from mleaudit.grading.metrics import METRICS

        return None if self.grader is not None else METRICS[self.name]

    @property
    def target_kind(self) -> TargetKind:
        """What validation must ensure about predictions (labels for custom graders)."""
        from mleaudit.grading.metrics import TargetKind

        metric = self.metric
        return metric.target_kind if metric is not None else TargetKind.LABEL


@dataclass(frozen=True, slots=True, kw_only=True)
class CompetitionSpec:
    """A competition: its metric, data layout, leaderboard, preparation and audit policy.

    Attributes
    ----------
    id : str
        Kaggle slug, equal to the folder name.
    name : str
        Human-readable title.
    root : pathlib.Path
        The competition folder.
    metric : MetricSpec
        How submissions are scored.
    id_column : str
        Column that identifies a test row in answers and submissions.
    target_columns : tuple of str
        Predicted columns.
    answers, sample_submission : str
        POSIX paths relative to the prepared-data dir (MLE-bench's form).
    raw_files : tuple of str
        Kaggle files ``prepare`` reads from the raw dir (empty when the data ships in a package).
    leaderboard_path : pathlib.Path
        The leaderboard CSV.
    leaderboard_source : str
        One of :data:`LEADERBOARD_SOURCES`.
    kernels_dir : str
        Reference-notebook folder, relative to ``root``.
    kernel_refs : tuple of str
        Top public notebooks of the competition as ``owner/slug``, from ``kernels_list``
        (empty when the config names no list).
    awards_medals : bool
        Whether Kaggle awarded medals in this competition (MLE-bench's flag; grades still
        report the medal a score would have earned).
    competition_type : str
        One of :data:`COMPETITION_TYPES`, or empty when not declared.
    splits : tuple of str
        MLE-bench splits the competition belongs to (``low``, ``medium``, ``high``, ``dev``,
        ``split75`` ...).
    prepare : callable, optional
        ``prepare(raw, public, private)`` from ``prepare.py``.
    checksums : dict, optional
        ``{"public": {file: md5}, "private": {...}, "raw": {...}}`` from checksums.yaml.
    audit : dict
        Audit policy: ``allow_urls``, ``public_data_dirs``, ``boilerplate``,
        ``label_leak_columns`` (tuples of str; every key of :data:`AUDIT_POLICY_KEYS` is present).
    description : str
        Optional free text.
    leaderboard_note : str
        Where the leaderboard comes from, in words.
    mlebench_looseness : tuple of Looseness, optional
        Where MLE-bench's grader for this competition is looser than this project's grading
        (``()`` where it is strict); ``None`` when the config does not say (competitions that
        are not MLE-bench's).
    """

    id: str
    name: str
    root: Path
    metric: MetricSpec
    id_column: str
    target_columns: tuple[str, ...]
    answers: str
    sample_submission: str
    raw_files: tuple[str, ...] = ()
    leaderboard_path: Path
    leaderboard_source: str
    kernels_dir: str
    kernel_refs: tuple[str, ...] = ()
    awards_medals: bool = True
    competition_type: str = ""
    splits: tuple[str, ...] = ()
    prepare: Callable[..., None] | None = None
    checksums: Mapping[str, Mapping[str, str]] | None = None
    audit: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    description: str = ""
    leaderboard_note: str = ""
    mlebench_looseness: tuple[Looseness, ...] | None = None

    @property
    def config_path(self) -> Path:
        """The competition's config.yaml."""
        return self.root / CONFIG_FILE

    @property
    def kernels_path(self) -> Path:
        """Absolute reference-notebook folder (it may not exist)."""
        return self.root / self.kernels_dir

    @property
    def is_embedded(self) -> bool:
        """Whether ``prepare`` needs no Kaggle files (its data ships inside a package)."""
        return self.prepare is not None and not self.raw_files

    @property
    def has_leaderboard(self) -> bool:
        """Whether a leaderboard snapshot is declared available (medals can be awarded)."""
        return self.leaderboard_source != "unavailable"

    def answers_path(self, data_dir: Path) -> Path:
        """Where the private answers live under ``data_dir``."""
        return Path(data_dir) / self.answers

    def sample_submission_path(self, data_dir: Path) -> Path:
        """Where the public sample submission lives under ``data_dir``."""
        return Path(data_dir) / self.sample_submission

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (callables shown by reference, paths as strings)."""
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "root": str(self.root),
            "metric": {
                "name": self.metric.name,
                "higher_is_better": self.metric.higher_is_better,
                "params": dict(self.metric.params),
                "custom_grader": self.metric.grader is not None,
            },
            "id_column": self.id_column,
            "target_columns": list(self.target_columns),
            "answers": self.answers,
            "sample_submission": self.sample_submission,
            "raw_files": list(self.raw_files),
            "leaderboard_path": str(self.leaderboard_path),
            "leaderboard_source": self.leaderboard_source,
            "leaderboard_note": self.leaderboard_note,
            "kernels_dir": self.kernels_dir,
            "kernel_refs": list(self.kernel_refs),
            "awards_medals": self.awards_medals,
            "competition_type": self.competition_type,
            "splits": list(self.splits),
            "has_prepare": self.prepare is not None,
            "has_checksums": self.checksums is not None,
            "audit": {key: list(value) for key, value in self.audit.items()},
            "mlebench_looseness": (None if self.mlebench_looseness is None
                                   else [entry.to_dict() for entry in self.mlebench_looseness]),
        }


def _field_name(path: Any) -> str:
    parts = [str(p) for p in path]
    return ".".join(parts) if parts else "(top level)"


def _read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        return untrusted_yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None


def _check_relative(value: str, *, config: Path, field_name: str) -> str:
    posix = PurePosixPath(value)
    if posix.is_absolute() or "\\" in value or ".." in posix.parts:
        raise ConfigError(f"{config}: field '{field_name}': {value!r} must be a relative path without '..'")
    return posix.as_posix()


def _load_callable(root: Path, ref: str, *, config: Path, field_name: str, competition_id: str) -> Callable[..., Any]:
    file_name, func_name = ref.split(":")
    file_path = root / file_name
    if not file_path.is_file():
        raise ConfigError(f"{config}: field '{field_name}': {file_path} does not exist")
    module_name = f"_mleaudit_competition_{re.sub(r'[^0-9A-Za-z_]', '_', competition_id)}_{file_path.stem}"
    module_spec = importlib.util.spec_from_file_location(module_name, file_path)
    if module_spec is None or module_spec.loader is None:
        raise ConfigError(f"{config}: field '{field_name}': cannot load {file_path}")
    module = importlib.util.module_from_spec(module_spec)
    # Registered under a private name because dataclasses and pickling look a class's
    # module up in sys.modules.
    sys.modules[module_name] = module
    try:
        # The competition folders are this project's own files, never audited input.
        module_spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - any failure in the file is a config problem
        sys.modules.pop(module_name, None)
        raise ConfigError(f"{config}: field '{field_name}': {file_path} failed to load: {exc!r}") from exc
    func = getattr(module, func_name, None)
    if not callable(func):
        raise ConfigError(f"{config}: field '{field_name}': {file_path} has no function {func_name!r}")
    return func


def _check_parameters(func: Callable[..., Any], expected: list[str], *, config: Path, field_name: str) -> None:
    actual = list(inspect.signature(func).parameters)
    if actual != expected:
        raise ConfigError(
            f"{config}: field '{field_name}': function takes ({', '.join(actual)}); expected ({', '.join(expected)})"
        )


def _check_looseness(entries: list[Mapping[str, Any]], *, config: Path, target_columns: tuple[str, ...],
                     ) -> tuple[Looseness, ...]:
    """Build the ``mlebench_looseness`` entries (the schema has checked their shape).

    Raises
    ------
    ConfigError
        For a key the entry's kind does not take, a ``pairing`` missing, a column that is not
        a target column, a cell kind both in ``fill`` and ``whole_score``, a ``nan_inf_coerced``
        entry that names no cell kind, or a kind listed twice (``nan_inf_coerced`` twice only on
        different columns); the message names the file and the field.
    """
    built: list[Looseness] = []
    seen: dict[str, list[set[str]]] = {}
    for index, entry in enumerate(entries):
        where = f"mlebench_looseness.{index}"
        kind = entry["kind"]
        allowed = _LOOSENESS_OPTIONS.get(kind, ())
        for key in entry:
            if key not in ("kind", "note", "score") and key not in allowed:
                takes = ", ".join(allowed) or "no other key"
                raise ConfigError(f"{config}: field '{where}.{key}': a {kind} entry takes {takes}")
        if kind == "duplicate_ids_accepted" and "pairing" not in entry:
            raise ConfigError(f"{config}: field '{where}.pairing': required for duplicate_ids_accepted "
                              "(merge, sorted or pool)")
        columns = tuple(entry.get("columns", ()))
        unknown = [c for c in columns if c not in target_columns]
        if unknown:
            raise ConfigError(f"{config}: field '{where}.columns': {unknown[0]!r} is not a target column "
                              f"({', '.join(target_columns)})")
        fill = dict(entry.get("fill", {}))
        whole = {k: float(v) for k, v in entry.get("whole_score", {}).items()}
        both = sorted(set(fill) & set(whole))
        if both:
            raise ConfigError(f"{config}: field '{where}.whole_score': {both[0]!r} is in fill too")
        if kind == "nan_inf_coerced" and not fill and not whole:
            raise ConfigError(f"{config}: field '{where}.fill': a nan_inf_coerced entry names the cells MLE-bench "
                              "accepts in fill or whole_score")
        applies = set(columns or target_columns)
        for earlier in seen.get(kind, []):
            if kind != "nan_inf_coerced" or earlier & applies:
                raise ConfigError(f"{config}: field '{where}.kind': {kind} is listed twice"
                                  + (" for the same columns" if kind == "nan_inf_coerced" else ""))
        seen.setdefault(kind, []).append(applies)
        built.append(Looseness(kind=kind, note=entry["note"], score=entry.get("score", "exact"),
                               within=entry.get("within"), mask_by_position=entry.get("mask_by_position"),
                               pairing=entry.get("pairing"), columns=columns, fill=fill, whole_score=whole))
    return tuple(built)


def load_checksums(path: Path) -> dict[str, dict[str, str]]:
    """Read a ``checksums.yaml``: MD5 hex digests of prepared (and raw) files.

    Parameters
    ----------
    path : pathlib.Path
        A YAML mapping with sections ``public`` and ``private`` (required) and ``raw``
        (optional), each mapping a file name to its MD5. MLE-bench's ``zip`` entry (the
        checksum of the downloaded Kaggle archive) is accepted and ignored.

    Returns
    -------
    dict
        ``{section: {file name: md5}}``.

    Raises
    ------
    ConfigError
        Naming the file and the entry at fault.
    """
    data = _read_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping with 'public' and 'private' sections")
    result: dict[str, dict[str, str]] = {}
    for section, entries in data.items():
        if section == "zip":
            continue
        if section not in ("public", "private", "raw"):
            raise ConfigError(f"{path}: field '{section}': unknown section (expected public, private, raw)")
        if not isinstance(entries, dict):
            raise ConfigError(f"{path}: field '{section}': expected a mapping of file name to MD5")
        for name, digest in entries.items():
            if not isinstance(name, str) or "/" in name or not isinstance(digest, str) or not _MD5.match(digest):
                raise ConfigError(f"{path}: field '{section}.{name}': expected a file name mapped to a 32-digit MD5")
        result[section] = dict(entries)
    for section in ("public", "private"):
        if section not in result:
            raise ConfigError(f"{path}: field '{section}': missing section")
    return result


def load_kernel_refs(path: Path) -> tuple[str, ...]:
    """Read a kernels list: one Kaggle notebook ``owner/slug`` a line.

    Parameters
    ----------
    path : pathlib.Path
        A text file; blank lines and lines starting with ``#`` are skipped. A full notebook URL
        is not accepted: the list holds references, as ``kaggle kernels pull`` takes them.

    Returns
    -------
    tuple of str
        The references in file order (most voted first in the shipped lists).

    Raises
    ------
    ConfigError
        If the file cannot be read, or a line is not ``owner/slug`` or repeats an earlier one
        (the message names the file and the 1-based line).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    refs: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        ref = line.strip()
        if not ref or ref.startswith("#"):
            continue
        if not _KERNEL_REF.match(ref):
            raise ConfigError(f"{path}: line {number}: {ref[:80]!r} is not a notebook reference 'owner/slug'")
        if ref in refs:
            raise ConfigError(f"{path}: line {number}: {ref!r} is listed twice")
        refs.append(ref)
    return tuple(refs)


def load_competition_spec(directory: str | Path) -> CompetitionSpec:
    """Read and validate one competition folder.

    Parameters
    ----------
    directory : path-like
        ``competitions/<id>``, holding ``config.yaml``.

    Returns
    -------
    CompetitionSpec
        With ``prepare`` and any custom grader loaded by file path.

    Raises
    ------
    ConfigError
        If config.yaml is missing, not YAML, or invalid. Schema errors are all reported at
        once, one per line, each as ``<file>: field '<dotted.path>': <problem>``; meaning
        errors (id differs from the folder, unknown metric, direction contradicting the
        metric, unknown metric params, a missing leaderboard/prepare file, a prepare function
        without ``(raw, public, private)``, bad checksums) name the file and field too.
    """
    root = Path(directory).resolve()
    config = root / CONFIG_FILE
    if not config.is_file():
        raise ConfigError(f"{config}: no config.yaml in competition folder {root}")
    data = _read_yaml(config)
    validator = jsonschema.Draft202012Validator(CONFIG_SCHEMA)
    errors = sorted(validator.iter_errors(data), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    if errors:
        lines = [f"{config}: field '{_field_name(e.absolute_path)}': {e.message}" for e in errors]
        raise ConfigError("\n".join(lines))

    competition_id = data["id"]
    if competition_id != root.name:
        raise ConfigError(f"{config}: field 'id': {competition_id!r} differs from the folder name {root.name!r}")

    metric_data = data["metric"]
    grader = None
    if "grader" in metric_data:
        grader = _load_callable(
            root, metric_data["grader"], config=config, field_name="metric.grader", competition_id=competition_id
        )
        _check_parameters(grader, ["submission", "answers"], config=config, field_name="metric.grader")
    else:
        from mleaudit.grading.metrics import METRICS

        metric = METRICS.get(metric_data["name"])
        if metric is None:
            raise ConfigError(
                f"{config}: field 'metric.name': unknown metric {metric_data['name']!r} "
                f"(built-in: {', '.join(sorted(METRICS))}; or set metric.grader)"
            )
        if metric.higher_is_better != metric_data["higher_is_better"]:
            raise ConfigError(
                f"{config}: field 'metric.higher_is_better': {metric.name} is "
                f"{'higher' if metric.higher_is_better else 'lower'}-is-better"
            )
        unknown = sorted(map(str, set(metric_data.get("params", {})) - set(metric.param_names)))
        if unknown:
            raise ConfigError(
                f"{config}: field 'metric.params': {metric.name} takes no parameter {', '.join(map(repr, unknown))}"
                f" (it takes: {', '.join(metric.param_names) or 'none'})"
            )
        from mleaudit.grading.validation import scoring_options

        # The scoring parameters' values too, so a bad one is caught here and not at grading time.
        try:
            scoring_options(metric, id_column=data["id_column"], target_columns=data["target_columns"],
                            params=metric_data.get("params", {}))
        except ConfigError as exc:
            raise ConfigError(f"{config}: field 'metric.params': {exc}") from None
    metric_spec = MetricSpec(
        name=metric_data["name"],
        higher_is_better=metric_data["higher_is_better"],
        params=dict(metric_data.get("params", {})),
        grader=grader,
    )

    dataset = data["dataset"]
    answers = _check_relative(dataset["answers"], config=config, field_name="dataset.answers")
    sample = _check_relative(dataset["sample_submission"], config=config, field_name="dataset.sample_submission")
    raw_files = tuple(
        _check_relative(name, config=config, field_name="dataset.raw_files") for name in dataset.get("raw_files", [])
    )

    board = data["leaderboard"]
    board_rel = _check_relative(board["path"], config=config, field_name="leaderboard.path")
    # Existence is checked when the leaderboard is read (load_leaderboard names the file), so
    # a competition whose reference leaderboard is still to be generated can be loaded.
    leaderboard_path = root / board_rel

    prepare = None
    if "prepare" in data:
        prepare = _load_callable(root, data["prepare"], config=config, field_name="prepare", competition_id=competition_id)
        _check_parameters(prepare, ["raw", "public", "private"], config=config, field_name="prepare")

    kernels_dir = _check_relative(data["kernels"], config=config, field_name="kernels")
    kernel_refs: tuple[str, ...] = ()
    if "kernels_list" in data:
        kernels_list = root / _check_relative(data["kernels_list"], config=config, field_name="kernels_list")
        if not kernels_list.is_file():
            raise ConfigError(f"{config}: field 'kernels_list': {kernels_list} does not exist")
        kernel_refs = load_kernel_refs(kernels_list)
    checksums_path = root / CHECKSUMS_FILE
    checksums = load_checksums(checksums_path) if checksums_path.is_file() else None
    audit_data = data.get("audit", {})
    audit = {key: tuple(audit_data.get(key, [])) for key in AUDIT_POLICY_KEYS}
    looseness = None
    if "mlebench_looseness" in data:
        looseness = _check_looseness(data["mlebench_looseness"], config=config,
                                     target_columns=tuple(data["target_columns"]))

    return CompetitionSpec(
        id=competition_id,
        name=data["name"],
        root=root,
        metric=metric_spec,
        id_column=data["id_column"],
        target_columns=tuple(data["target_columns"]),
        answers=answers,
        sample_submission=sample,
        raw_files=raw_files,
        leaderboard_path=leaderboard_path,
        leaderboard_source=board["source"],
        kernels_dir=kernels_dir,
        kernel_refs=kernel_refs,
        awards_medals=data.get("awards_medals", True),
        competition_type=data.get("competition_type", ""),
        splits=tuple(data.get("splits", [])),
        prepare=prepare,
        checksums=checksums,
        audit=audit,
        description=data.get("description", ""),
        leaderboard_note=board.get("note", ""),
        mlebench_looseness=looseness,
    )
