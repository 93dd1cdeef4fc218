"""config.yaml validation, the registry, and where folders are found."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

import mleaudit.grading.metrics
import mleaudit.grading.paths
from mleaudit.grading.errors import CompetitionNotFound, ConfigError
from mleaudit.grading.metrics import TargetKind
from mleaudit.grading.paths import default_data_dir, find_competitions_root, resolve_data_dir
from mleaudit.grading.registry import CompetitionRegistry
from mleaudit.grading.spec import load_checksums, load_competition_spec

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "grading"

BASE: dict[str, Any] = {
    "id": "demo",
    "name": "Demo",
    "metric": {"name": "rmse_error", "higher_is_better": False},
    "id_column": "id",
    "target_columns": ["y"],
    "dataset": {"answers": "demo/prepared/private/test.csv", "sample_submission": "demo/prepared/public/sample.csv"},
    "leaderboard": {"path": "leaderboard.csv", "source": "reference-baselines"},
    "kernels": "kernels",
}

PREPARE_OK = "def prepare(raw, public, private):\n    (public / 'a.csv').write_text('id\\n')\n"


def make_competition(root: Path, config: dict[str, Any] | str, *, name: str = "demo", files: dict[str, str] | None = None) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    text = config if isinstance(config, str) else yaml.safe_dump(config)
    (folder / "config.yaml").write_text(text, encoding="utf-8")
    (folder / "leaderboard.csv").write_text("score\n1.0\n2.0\n", encoding="utf-8")
    for rel, content in (files or {}).items():
        (folder / rel).write_text(content, encoding="utf-8")
    return folder


def config_error(folder: Path) -> str:
    with pytest.raises(ConfigError) as excinfo:
        load_competition_spec(folder)
    return str(excinfo.value)


def with_changes(**changes: Any) -> dict[str, Any]:
    config = copy.deepcopy(BASE)
    for dotted, value in changes.items():
        target = config
        *parents, last = dotted.split("__")
        for key in parents:
            target = target[key]
        if value is None:
            del target[last]
        else:
            target[last] = value
    return config


def test_minimal_config_loads(tmp_path: Path) -> None:
    spec = load_competition_spec(make_competition(tmp_path, BASE))
    assert spec.id == "demo"
    assert spec.metric.metric is mleaudit.grading.metrics.METRICS["rmse_error"]
    assert spec.metric.target_kind is TargetKind.NUMERIC
    assert spec.target_columns == ("y",)
    assert spec.prepare is None and spec.checksums is None
    assert spec.audit == {"allow_urls": (), "public_data_dirs": (), "boilerplate": (), "label_leak_columns": ()}
    assert spec.kernels_path == tmp_path.resolve() / "demo" / "kernels"
    assert spec.answers_path(Path("/data")) == Path("/data/demo/prepared/private/test.csv")


def test_fixture_competition_loads_every_field() -> None:
    spec = load_competition_spec(FIXTURES / "competitions" / "toy-auc")
    assert spec.metric.params == {"average": "macro"}
    assert spec.raw_files == ("labels.csv",)
    assert spec.audit["allow_urls"] == ("huggingface.co",)
    assert spec.leaderboard_note == "Hand-written scores for tests."
    assert callable(spec.prepare)
    assert spec.to_dict()["has_prepare"] is True


def test_missing_config(tmp_path: Path) -> None:
    (tmp_path / "demo").mkdir()
    config = tmp_path.resolve() / "demo" / "config.yaml"
    assert config_error(tmp_path / "demo") == f"{config}: no config.yaml in competition folder {config.parent}"


def test_invalid_yaml(tmp_path: Path) -> None:
    folder = make_competition(tmp_path, "id: [unclosed\n")
    assert config_error(folder).startswith(f"{folder.resolve() / 'config.yaml'}: not valid YAML:")


def test_schema_errors_are_all_reported_with_file_and_field(tmp_path: Path) -> None:
    config = with_changes(metric__higher_is_better="yes", kernels=None, extra_field=1)
    folder = make_competition(tmp_path, config)
    path = folder.resolve() / "config.yaml"
    assert config_error(folder) == "\n".join(
        [
            f"{path}: field '(top level)': 'kernels' is a required property",
            f"{path}: field '(top level)': Additional properties are not allowed ('extra_field' was unexpected)",
            f"{path}: field 'metric.higher_is_better': 'yes' is not of type 'boolean'",
        ]
    )


def test_unknown_leaderboard_source(tmp_path: Path) -> None:
    folder = make_competition(tmp_path, with_changes(leaderboard__source="made-up"))
    assert config_error(folder) == (
        f"{folder.resolve() / 'config.yaml'}: field 'leaderboard.source': 'made-up' is not one of "
        "['kaggle', 'reference-baselines', 'unavailable']"
    )


def test_id_must_match_folder(tmp_path: Path) -> None:
    folder = make_competition(tmp_path, BASE, name="other")
    assert config_error(folder) == (
        f"{folder.resolve() / 'config.yaml'}: field 'id': 'demo' differs from the folder name 'other'"
    )


def test_unknown_metric(tmp_path: Path) -> None:
    folder = make_competition(tmp_path, with_changes(metric__name="f1"))
    assert config_error(folder) == (
        f"{folder.resolve() / 'config.yaml'}: field 'metric.name': unknown metric 'f1' (built-in: "
        f"{', '.join(sorted(mleaudit.grading.metrics.METRICS))}; or set metric.grader)"
    )


def test_direction_must_match_builtin_metric(tmp_path: Path) -> None:
    folder = make_competition(tmp_path, with_changes(metric__higher_is_better=True))
    assert config_error(folder) == (
        f"{folder.resolve() / 'config.yaml'}: field 'metric.higher_is_better': rmse_error is lower-is-better"
    )


def test_unknown_metric_param(tmp_path: Path) -> None:
    folder = make_competition(tmp_path, with_changes(metric__params={"squared": True}))
    assert config_error(folder) == (
        f"{folder.resolve() / 'config.yaml'}: field 'metric.params': rmse_error takes no parameter 'squared' "
        "(it takes: answer_columns, column_aliases, column_order, extra_columns, extra_ids, id_columns, id_match, missing_values, repeated_ids, row_mask, row_sum_tolerance, "
        "unscored_columns, value_range)"
    )


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({"repeated_ids": "sorted"}, "metric parameter 'repeated_ids' must be 'error' or 'in_order', not 'sorted'"),
        ({"value_range": [1, 0]}, "metric parameter 'value_range' must be [low, high] with low <= high"),
    ],
)
def test_scoring_param_values_are_checked_on_load(tmp_path: Path, params: dict, problem: str) -> None:
    folder = make_competition(tmp_path, with_changes(metric__params=params))
    assert config_error(folder) == f"{folder.resolve() / 'config.yaml'}: field 'metric.params': metric 'rmse_error': {problem}"


def test_data_paths_must_stay_relative(tmp_path: Path) -> None:
    folder = make_competition(tmp_path, with_changes(dataset__answers="../secret/test.csv"))
    assert config_error(folder) == (
        f"{folder.resolve() / 'config.yaml'}: field 'dataset.answers': '../secret/test.csv' must be a relative path "
        "without '..'"
    )


def test_prepare_file_must_exist(tmp_path: Path) -> None:
    folder = make_competition(tmp_path, with_changes(prepare="prepare.py:prepare"))
    assert config_error(folder) == (
        f"{folder.resolve() / 'config.yaml'}: field 'prepare': {folder.resolve() / 'prepare.py'} does not exist"
    )


def test_prepare_signature(tmp_path: Path) -> None:
    folder = make_competition(
        tmp_path, with_changes(prepare="prepare.py:prepare"), files={"prepare.py": "def prepare(public, private):\n    pass\n"}
    )
    assert config_error(folder) == (
        f"{folder.resolve() / 'config.yaml'}: field 'prepare': function takes (public, private); "
        "expected (raw, public, private)"
    )


def test_prepare_function_missing(tmp_path: Path) -> None:
    folder = make_competition(tmp_path, with_changes(prepare="prepare.py:build"), files={"prepare.py": PREPARE_OK})
    assert config_error(folder) == (
        f"{folder.resolve() / 'config.yaml'}: field 'prepare': {folder.resolve() / 'prepare.py'} has no function 'build'"
    )


def test_custom_grader_signature(tmp_path: Path) -> None:
    config = with_changes(metric__name="custom", metric__grader="grade.py:grade")
    folder = make_competition(tmp_path, config, files={"grade.py": "def grade(sub):\n    return 1.0\n"})
    assert config_error(folder) == (
        f"{folder.resolve() / 'config.yaml'}: field 'metric.grader': function takes (sub); expected (submission, answers)"
    )


def test_checksums_file(tmp_path: Path) -> None:
    path = tmp_path / "checksums.yaml"
    path.write_text("public: {a.csv: " + "0a" * 16 + "}\nprivate: {}\nzip: whatever\n", encoding="utf-8")
    assert load_checksums(path) == {"public": {"a.csv": "0a" * 16}, "private": {}}
    path.write_text("public: {a.csv: abc}\nprivate: {}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as excinfo:
        load_checksums(path)
    assert str(excinfo.value) == f"{path}: field 'public.a.csv': expected a file name mapped to a 32-digit MD5"
    path.write_text("public: {}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as excinfo:
        load_checksums(path)
    assert str(excinfo.value) == f"{path}: field 'private': missing section"


def test_registry_ids_get_and_suggestions(tmp_path: Path) -> None:
    make_competition(tmp_path, BASE)
    (tmp_path / "not-a-competition").mkdir()
    registry = CompetitionRegistry(tmp_path, tmp_path / "data")
    assert registry.ids() == ["demo"]
    assert "demo" in registry and "nope" not in registry
    assert registry.get("demo") is registry.get("demo")
    with pytest.raises(CompetitionNotFound) as excinfo:
        registry.get("dem")
    assert str(excinfo.value) == f"No competition 'dem' in {tmp_path}. Did you mean: demo?"
    with pytest.raises(CompetitionNotFound) as excinfo:
        registry.get("zzzzzz")
    assert str(excinfo.value) == f"No competition 'zzzzzz' in {tmp_path}. Known competitions: demo."


def test_registry_dirs_and_prepared_state(tmp_path: Path) -> None:
    make_competition(tmp_path / "comps", BASE)
    registry = CompetitionRegistry(tmp_path / "comps", tmp_path / "data")
    assert registry.public_dir("demo") == tmp_path / "data" / "demo" / "prepared" / "public"
    assert registry.private_dir("demo") == tmp_path / "data" / "demo" / "prepared" / "private"
    assert not registry.is_prepared("demo")
    registry.private_dir("demo").mkdir(parents=True)
    (registry.private_dir("demo") / "test.csv").write_text("id,y\n1,2\n", encoding="utf-8")
    assert registry.is_prepared("demo", grading_only=True)
    assert not registry.is_prepared("demo")
    registry.public_dir("demo").mkdir(parents=True)
    (registry.public_dir("demo") / "sample.csv").write_text("id,y\n1,0\n", encoding="utf-8")
    assert registry.is_prepared("demo")


def test_find_competitions_root_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLEAUDIT_COMPETITIONS", raising=False)
    checkout = Path(mleaudit.grading.__file__).resolve().parents[1] / "competitions"
    assert find_competitions_root() == checkout
    monkeypatch.setenv("MLEAUDIT_COMPETITIONS", str(tmp_path))
    assert find_competitions_root() == tmp_path
    other = tmp_path / "other"
    other.mkdir()
    assert find_competitions_root(other) == other
    with pytest.raises(ConfigError, match=r"--competitions .*missing: not a directory"):
        find_competitions_root(tmp_path / "missing")
    monkeypatch.setenv("MLEAUDIT_COMPETITIONS", str(tmp_path / "gone"))
    with pytest.raises(ConfigError, match=r"MLEAUDIT_COMPETITIONS=.*gone: not a directory"):
        find_competitions_root()


def test_find_competitions_root_names_all_three_places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLEAUDIT_COMPETITIONS", raising=False)
    monkeypatch.setattr(mleaudit.grading.paths, "_checkout_competitions", lambda: tmp_path / "competitions")
    with pytest.raises(ConfigError) as excinfo:
        find_competitions_root()
    assert str(excinfo.value) == (
        "no competitions folder found: pass --competitions DIR, set MLEAUDIT_COMPETITIONS, or run from a checkout "
        f"that has {tmp_path / 'competitions'}"
    )


def test_resolve_data_dir_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLEAUDIT_DATA_DIR", raising=False)
    assert resolve_data_dir() == default_data_dir()
    assert default_data_dir().parts[-2:] == ("mleaudit", "data")
    monkeypatch.setenv("MLEAUDIT_DATA_DIR", str(tmp_path / "env"))
    assert resolve_data_dir() == tmp_path / "env"
    assert resolve_data_dir(tmp_path / "opt") == tmp_path / "opt"
