"""config.yaml fields for MLE-bench competitions: splits, kernels list, medals flag, unavailable boards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from mleaudit.grading.errors import CompetitionNotFound, ConfigError
from mleaudit.grading.registry import CompetitionRegistry, canonical_split
from mleaudit.grading.spec import load_competition_spec, load_kernel_refs

BASE: dict[str, Any] = {
    "id": "demo",
    "name": "Demo",
    "metric": {"name": "rmse_error", "higher_is_better": False},
    "id_column": "id",
    "target_columns": ["y"],
    "dataset": {"answers": "demo/prepared/private/test.csv", "sample_submission": "demo/prepared/public/sample.csv"},
    "leaderboard": {"path": "leaderboard.csv", "source": "kaggle", "note": "snapshot"},
    "kernels": "kernels",
}


def write(root: Path, name: str = "demo", kernels: str | None = None, **changes: Any) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    config = {**BASE, "id": name, **changes}
    (folder / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    if kernels is not None:
        (folder / "kernels.txt").write_text(kernels, encoding="utf-8")
    return folder


def test_new_fields_load_with_defaults(tmp_path: Path) -> None:
    spec = load_competition_spec(write(tmp_path))
    assert (spec.splits, spec.kernel_refs, spec.awards_medals, spec.competition_type) == ((), (), True, "")
    assert spec.has_leaderboard and not spec.is_embedded
    folder = write(tmp_path, "AI4Code", kernels="# most voted first\nowner/one\n\nother/two-2\n",
                   splits=["medium", "split75"], kernels_list="kernels.txt", awards_medals=False, competition_type="code")
    spec = load_competition_spec(folder)
    assert spec.id == "AI4Code"  # Kaggle slugs may have capitals
    assert spec.splits == ("medium", "split75") and spec.kernel_refs == ("owner/one", "other/two-2")
    assert spec.awards_medals is False and spec.competition_type == "code"
    info = spec.to_dict()
    assert info["splits"] == ["medium", "split75"] and info["kernel_refs"] == ["owner/one", "other/two-2"]


def test_kernels_list_errors_name_file_and_line(tmp_path: Path) -> None:
    folder = write(tmp_path, kernels="owner/one\nhttps://www.kaggle.com/code/owner/two\n", kernels_list="kernels.txt")
    with pytest.raises(ConfigError) as excinfo:
        load_competition_spec(folder)
    assert str(excinfo.value) == (
        f"{folder.resolve() / 'kernels.txt'}: line 2: 'https://www.kaggle.com/code/owner/two' is not a notebook "
        "reference 'owner/slug'"
    )
    (folder / "kernels.txt").write_text("a/b\na/b\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"kernels.txt: line 2: 'a/b' is listed twice"):
        load_kernel_refs(folder / "kernels.txt")
    (folder / "kernels.txt").unlink()
    with pytest.raises(ConfigError, match=r"field 'kernels_list': .*kernels.txt does not exist"):
        load_competition_spec(folder)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"splits": ["Low"]}, "field 'splits.0': 'Low' does not match"),
        ({"splits": ["low", "low"]}, "field 'splits': ['low', 'low'] has non-unique elements"),
        ({"competition_type": "kernels"}, "field 'competition_type': 'kernels' is not one of ['simple', 'code']"),
        ({"awards_medals": "yes"}, "field 'awards_medals': 'yes' is not of type 'boolean'"),
    ],
)
def test_new_fields_are_validated(tmp_path: Path, changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        load_competition_spec(write(tmp_path, **changes))
    assert message in str(excinfo.value)


def test_unavailable_leaderboard(tmp_path: Path) -> None:
    spec = load_competition_spec(write(tmp_path, leaderboard={"path": "leaderboard.csv", "source": "unavailable", "note": "n"}))
    assert not spec.has_leaderboard


def test_registry_splits(tmp_path: Path) -> None:
    write(tmp_path, "a", splits=["low", "split75"])
    write(tmp_path, "b", splits=["medium", "split75"])
    write(tmp_path, "c")
    registry = CompetitionRegistry(tmp_path, tmp_path / "data")
    assert registry.split_names() == ["low", "medium", "split75"]
    assert registry.ids_in_split("split75") == ["a", "b"]
    assert registry.ids_in_split("lite") == registry.ids_in_split("low") == ["a"]
    assert canonical_split("lite") == "low"
    with pytest.raises(CompetitionNotFound, match=r"No competition in split 'high'. Known splits: low, medium, split75"):
        registry.ids_in_split("high")
