"""Reading one competition folder: ``config.yaml`` validated against the schema, then typed."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any, Mapping

import jsonschema

from mleaudit.grading.errors import ConfigError
from mleaudit.grading.spec.callables import _check_parameters, _load_callable
from mleaudit.grading.spec.records import CompetitionSpec, Looseness, MetricSpec
from mleaudit.grading.spec.schema import _LOOSENESS_OPTIONS, AUDIT_POLICY_KEYS, CHECKSUMS_FILE, CONFIG_FILE, CONFIG_SCHEMA
from mleaudit.grading.spec.side_files import _read_yaml, load_checksums, load_kernel_refs


def _field_name(path: Any) -> str:
    parts = [str(p) for p in path]
    return ".".join(parts) if parts else "(top level)"


def _check_relative(value: str, *, config: Path, field_name: str) -> str:
    posix = PurePosixPath(value)
    if posix.is_absolute() or "\\" in value or ".." in posix.parts:
        raise ConfigError(f"{config}: field '{field_name}': {value!r} must be a relative path without '..'")
    return posix.as_posix()


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
