"""Preparation: staging, raw files, checksums (MD5, MLE-bench's format), reuse and force."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mleaudit.grading import CompetitionRegistry, prepare_competition
from mleaudit.grading.errors import ChecksumMismatch, GradingError, RawDataMissing
from mleaudit.grading.prepare import compute_checksums, md5_file, verify_checksums

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "grading"
RAW = FIXTURES / "raw" / "toy-auc"


@pytest.fixture
def toy(tmp_path: Path) -> CompetitionRegistry:
    """A writable copy of the toy-auc competition and an empty data dir."""
    shutil.copytree(FIXTURES / "competitions" / "toy-auc", tmp_path / "competitions" / "toy-auc")
    return CompetitionRegistry(tmp_path / "competitions", tmp_path / "data")


def leftovers(registry: CompetitionRegistry) -> list[str]:
    folder = registry.data_dir / "toy-auc"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_prepare_writes_public_and_private(toy: CompetitionRegistry) -> None:
    result = prepare_competition(toy.get("toy-auc"), toy, raw=RAW)
    assert not result.reused and not result.verified
    assert sorted(p.name for p in result.public_dir.iterdir()) == [
        "description.md", "sample_submission.csv", "test.csv", "train.csv"
    ]
    assert [p.name for p in result.private_dir.iterdir()] == ["answers.csv"]
    assert result.checksums["private"] == {"answers.csv": md5_file(result.private_dir / "answers.csv")}
    assert "description.md" not in result.checksums["public"]
    assert (result.private_dir / "answers.csv").read_text() == "id,target\nb01,0\nb02,1\nb03,1\nb04,0\n"
    assert leftovers(toy) == ["prepared"]
    assert toy.is_prepared("toy-auc")


def test_second_prepare_reuses_and_force_rebuilds_identically(toy: CompetitionRegistry) -> None:
    spec = toy.get("toy-auc")
    first = prepare_competition(spec, toy, raw=RAW)
    again = prepare_competition(spec, toy, raw=RAW)
    assert again.reused and again.checksums == first.checksums
    rebuilt = prepare_competition(spec, toy, raw=RAW, force=True)
    assert not rebuilt.reused and rebuilt.checksums == first.checksums
    assert leftovers(toy) == ["prepared"]


def test_default_raw_dir_is_under_the_data_dir(toy: CompetitionRegistry) -> None:
    shutil.copytree(RAW, toy.raw_dir("toy-auc"))
    assert not prepare_competition(toy.get("toy-auc"), toy).reused


def test_missing_raw_file(toy: CompetitionRegistry, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RawDataMissing) as excinfo:
        prepare_competition(toy.get("toy-auc"), toy, raw=empty)
    assert str(excinfo.value) == (
        f"Competition 'toy-auc' needs the Kaggle file labels.csv in {empty}; "
        "download the competition data from Kaggle and pass --raw DIR."
    )


def write_checksums(registry: CompetitionRegistry, text: str) -> None:
    (registry.root / "toy-auc" / "checksums.yaml").write_text(text, encoding="utf-8")


def real_checksums(tmp_path: Path) -> dict[str, dict[str, str]]:
    registry = CompetitionRegistry(FIXTURES / "competitions", tmp_path / "reference-data")
    result = prepare_competition(registry.get("toy-auc"), registry, raw=RAW)
    return {k: dict(v) for k, v in result.checksums.items()}


def test_matching_checksums_are_verified(toy: CompetitionRegistry, tmp_path: Path) -> None:
    sums = real_checksums(tmp_path)
    lines = [f"{section}:\n" + "".join(f"  {n}: {d}\n" for n, d in files.items()) for section, files in sums.items()]
    lines.append(f"raw:\n  labels.csv: {md5_file(RAW / 'labels.csv')}\n")
    write_checksums(toy, "".join(lines))
    result = prepare_competition(toy.get("toy-auc"), toy, raw=RAW)
    assert result.verified and result.checksums == sums
    assert prepare_competition(toy.get("toy-auc"), toy).verified  # reuse also checks


def test_mismatch_names_the_file_and_keeps_nothing(toy: CompetitionRegistry, tmp_path: Path) -> None:
    sums = real_checksums(tmp_path)
    sums["public"]["train.csv"] = "0" * 31 + "1"
    text = "".join(f"{section}:\n" + "".join(f"  {n}: '{d}'\n" for n, d in files.items()) for section, files in sums.items())
    write_checksums(toy, text)
    with pytest.raises(ChecksumMismatch) as excinfo:
        prepare_competition(toy.get("toy-auc"), toy, raw=RAW)
    actual = md5_file(tmp_path / "reference-data" / "toy-auc" / "prepared" / "public" / "train.csv")
    assert str(excinfo.value) == (
        f"Checksums do not match for toy-auc:\npublic/train.csv: MD5 {actual}, expected {'0' * 31 + '1'}"
    )
    assert leftovers(toy) == []  # the staging dir is removed and nothing is moved into place


def test_raw_checksum_mismatch(toy: CompetitionRegistry) -> None:
    write_checksums(toy, "public: {}\nprivate: {}\nraw:\n  labels.csv: '" + "f" * 32 + "'\n")
    with pytest.raises(ChecksumMismatch) as excinfo:
        prepare_competition(toy.get("toy-auc"), toy, raw=RAW)
    assert str(excinfo.value) == (
        f"Checksums do not match for toy-auc:\nraw/labels.csv: MD5 {md5_file(RAW / 'labels.csv')}, expected {'f' * 32}"
    )


def test_stale_prepared_data_is_reported(toy: CompetitionRegistry, tmp_path: Path) -> None:
    sums = real_checksums(tmp_path)
    text = "".join(f"{section}:\n" + "".join(f"  {n}: '{d}'\n" for n, d in files.items()) for section, files in sums.items())
    write_checksums(toy, text)
    prepare_competition(toy.get("toy-auc"), toy, raw=RAW)
    (toy.private_dir("toy-auc") / "answers.csv").write_text("id,target\nb01,1\n", encoding="utf-8")
    with pytest.raises(ChecksumMismatch, match=r"private/answers.csv: MD5 .*\nThe prepared data in .* is stale; rerun with --force\.$"):
        prepare_competition(toy.get("toy-auc"), toy, raw=RAW)
    assert prepare_competition(toy.get("toy-auc"), toy, raw=RAW, force=True).verified


def test_failing_prepare_is_named_and_cleaned_up(toy: CompetitionRegistry, tmp_path: Path) -> None:
    bad_raw = tmp_path / "bad-raw"
    bad_raw.mkdir()
    (bad_raw / "labels.csv").write_text("id,x\na,1\n", encoding="utf-8")  # no target column
    with pytest.raises(GradingError) as excinfo:
        prepare_competition(toy.get("toy-auc"), toy, raw=bad_raw)
    assert str(excinfo.value).startswith(f"prepare function of 'toy-auc' ({toy.root.resolve() / 'toy-auc' / 'prepare.py'}) failed: KeyError(")
    assert leftovers(toy) == []


def test_verify_reports_missing_and_unrecorded_files(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("x\n", encoding="utf-8")
    (tmp_path / "notes.md").write_text("not a data file\n", encoding="utf-8")
    assert list(compute_checksums(tmp_path)) == ["a.csv"]
    with pytest.raises(ChecksumMismatch) as excinfo:
        verify_checksums({"public": {"b.csv": "c" * 32}}, {"public": tmp_path})
    assert str(excinfo.value) == (
        "Checksums do not match:\n"
        f"public/a.csv: not recorded in checksums.yaml (MD5 {md5_file(tmp_path / 'a.csv')})\n"
        f"public/b.csv: missing (expected MD5 {'c' * 32})"
    )
