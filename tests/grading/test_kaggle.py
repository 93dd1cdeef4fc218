"""Kaggle access, offline: the official client is replaced by a fake at its API boundary."""

from __future__ import annotations

import doctest
import importlib
import io
import json
import shutil
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import click
import pytest
from click.testing import CliRunner

from mleaudit.grading import CompetitionRegistry
from mleaudit.grading import kaggle as kaggle_module
from mleaudit.grading.cli import kernels, prepare
from mleaudit.grading.errors import ChecksumMismatch
from mleaudit.grading.kaggle import (
    KAGGLE_INSTALL_HINT,
    KaggleClient,
    KaggleError,
    KaggleUnavailable,
    connect_kaggle,
    extract_archive,
    fetch_top_kernels,
    find_kaggle_credentials,
    leaderboard_from_kaggle_csv,
)
from mleaudit.grading.leaderboard import LEADERBOARD_COLUMNS
from mleaudit.grading.prepare import download_raw, md5_file, prepare_competition

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "grading"
CREDENTIALS = {"KAGGLE_USERNAME": "someone", "KAGGLE_KEY": "0123456789abcdef"}


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


class FakeApi:
    """Records calls and answers like ``KaggleApi`` (same method names and keyword arguments)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        labels = (FIXTURES / "raw" / "toy-auc" / "labels.csv").read_bytes()
        # Kaggle serves one archive; files inside may be archives themselves.
        self.archive = zip_bytes({"labels.csv.zip": zip_bytes({"labels.csv": labels}), "notes/readme.txt": b"hi\n"})
        self.board = zip_bytes({
            "toy-publicleaderboard.csv": b"TeamId,TeamName,SubmissionDate,Score\n9,x,2020-01-01 00:00:00,0.5\n",
            "toy-privateleaderboard.csv": (
                b"Rank,TeamId,TeamName,LastSubmissionDate,Score,SubmissionCount\n"
                b"1,7,Alpha,2020-02-01 10:00:00,0.91,3\n2,8,,2020-02-02 11:00:00,0.85,1\n"
            ),
        })
        self.kernel_list = [
            SimpleNamespace(ref=f"owner{i}/notebook-{i}", title=f"Notebook {i}", total_votes=100 - i, language="python")
            for i in range(5)
        ]
        self.broken_pulls = {"owner1/notebook-1"}
        self.fail_with: BaseException | None = None

    def authenticate(self) -> None:
        self.calls.append(("authenticate", None))

    def _maybe_fail(self) -> None:
        if self.fail_with is not None:
            raise self.fail_with

    def competition_download_files(self, competition: str, path: str | None = None, force: bool = False,
                                   quiet: bool = True) -> None:
        self.calls.append(("competition_download_files", competition))
        self._maybe_fail()
        (Path(path) / f"{competition}.zip").write_bytes(self.archive)

    def competition_leaderboard_download(self, competition: str, path: str, quiet: bool = True) -> None:
        self.calls.append(("competition_leaderboard_download", competition))
        self._maybe_fail()
        (Path(path) / f"{competition}.zip").write_bytes(self.board)

    def kernels_list(self, competition: str | None = None, sort_by: str | None = None, page: int = 1,
                     page_size: int = 20, **_: Any) -> list[Any]:
        self.calls.append(("kernels_list", (competition, sort_by, page, page_size)))
        self._maybe_fail()
        ranked = sorted(self.kernel_list, key=lambda k: -k.total_votes)
        return ranked[(page - 1) * page_size: page * page_size]

    def kernels_pull(self, kernel: str, path: str | None = None, metadata: bool = False, quiet: bool = True) -> None:
        self.calls.append(("kernels_pull", kernel))
        if kernel in self.broken_pulls:
            raise RuntimeError("404 Not Found")
        slug = kernel.split("/")[1]
        (Path(path) / f"{slug}.ipynb").write_text(json.dumps({"cells": [], "nbformat": 4}), encoding="utf-8")


@pytest.fixture
def fake_api(monkeypatch: pytest.MonkeyPatch) -> FakeApi:
    api = FakeApi()
    monkeypatch.setattr(kaggle_module, "_load_api_class", lambda: (lambda: api))
    monkeypatch.setattr(kaggle_module, "_kaggle_installed", lambda: True)
    return api


@pytest.fixture
def toy(tmp_path: Path) -> CompetitionRegistry:
    shutil.copytree(FIXTURES / "competitions" / "toy-auc", tmp_path / "competitions" / "toy-auc")
    return CompetitionRegistry(tmp_path / "competitions", tmp_path / "data")


def test_credentials_are_found_without_being_read(tmp_path: Path) -> None:
    assert find_kaggle_credentials({}, tmp_path) is None
    assert find_kaggle_credentials({"KAGGLE_USERNAME": "a"}, tmp_path) is None
    assert find_kaggle_credentials(CREDENTIALS, tmp_path) == "environment variables KAGGLE_USERNAME and KAGGLE_KEY"
    assert find_kaggle_credentials({"KAGGLE_API_TOKEN": "t"}, tmp_path) == "environment variable KAGGLE_API_TOKEN"
    (tmp_path / ".kaggle").mkdir()
    (tmp_path / ".kaggle" / "kaggle.json").write_text("{}")
    assert find_kaggle_credentials({}, tmp_path) == str(tmp_path / ".kaggle" / "kaggle.json")
    config_dir = tmp_path / "elsewhere"
    config_dir.mkdir()
    (config_dir / "access_token").write_text("t")
    assert find_kaggle_credentials({"KAGGLE_CONFIG_DIR": str(config_dir)}, tmp_path) == str(config_dir / "access_token")


def test_no_credentials_fails_before_the_package_is_imported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def must_not_import() -> type:
        raise AssertionError("the kaggle package was imported")

    monkeypatch.setattr(kaggle_module, "_kaggle_installed", lambda: True)
    monkeypatch.setattr(kaggle_module, "_load_api_class", must_not_import)
    with pytest.raises(KaggleUnavailable, match=r"^No Kaggle credentials: set KAGGLE_USERNAME and KAGGLE_KEY"):
        connect_kaggle({}, tmp_path)


def test_missing_package_and_refused_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def not_installed() -> type:
        raise ImportError("No module named 'kaggle'")

    monkeypatch.setattr(kaggle_module, "_load_api_class", not_installed)
    monkeypatch.setattr(kaggle_module, "_kaggle_installed", lambda: True)
    with pytest.raises(KaggleUnavailable) as excinfo:
        connect_kaggle(CREDENTIALS, tmp_path)
    assert str(excinfo.value) == f"The 'kaggle' package is not installed; install it with: {KAGGLE_INSTALL_HINT}"
    # Not installed and no credentials either: the package is named first.
    monkeypatch.setattr(kaggle_module, "_kaggle_installed", lambda: False)
    with pytest.raises(KaggleUnavailable, match=r"^The 'kaggle' package is not installed"):
        connect_kaggle({}, tmp_path)
    monkeypatch.setattr(kaggle_module, "_kaggle_installed", lambda: True)

    class Refusing:
        def authenticate(self) -> None:
            raise SystemExit(1)  # what KaggleApi.authenticate does without usable credentials

    monkeypatch.setattr(kaggle_module, "_load_api_class", lambda: Refusing)
    with pytest.raises(KaggleUnavailable, match=r"Kaggle refused the credentials from environment variables .* \(it exited with status 1\)"):
        connect_kaggle(CREDENTIALS, tmp_path)


def test_network_failures_name_the_call(fake_api: FakeApi, tmp_path: Path) -> None:
    client = connect_kaggle(CREDENTIALS, tmp_path)
    fake_api.fail_with = ConnectionError("Failed to resolve 'www.kaggle.com'")
    with pytest.raises(KaggleError) as excinfo:
        client.download_competition("toy-auc", tmp_path / "dl")
    assert str(excinfo.value) == (
        "Kaggle download of the files of 'toy-auc' failed: ConnectionError: Failed to resolve 'www.kaggle.com'."
    )
    fake_api.fail_with = RuntimeError("403: You must accept this competition's rules before you'll be able to download files")
    with pytest.raises(KaggleError, match="Accept the competition's rules on its Kaggle page first."):
        client.leaderboard("toy-auc")


def test_download_extracts_nested_archives_then_prepares(fake_api: FakeApi, toy: CompetitionRegistry, tmp_path: Path) -> None:
    client = connect_kaggle(CREDENTIALS, tmp_path)
    spec = toy.get("toy-auc")
    raw = download_raw(spec, toy, client)
    assert raw == toy.raw_dir("toy-auc")
    assert sorted(p.relative_to(raw).as_posix() for p in raw.rglob("*") if p.is_file()) == ["labels.csv", "notes/readme.txt"]
    assert md5_file(raw / "labels.csv") == md5_file(FIXTURES / "raw" / "toy-auc" / "labels.csv")
    assert prepare_competition(spec, toy).public_dir.is_dir()
    assert ("competition_download_files", "toy-auc") in fake_api.calls


def test_archive_md5_is_checked_against_checksums_zip(fake_api: FakeApi, toy: CompetitionRegistry, tmp_path: Path) -> None:
    client = connect_kaggle(CREDENTIALS, tmp_path)
    spec = toy.get("toy-auc")
    (spec.root / "checksums.yaml").write_text(
        "public: {}\nprivate: {}\nzip: d41d8cd98f00b204e9800998ecf8427e\n", encoding="utf-8"
    )
    with pytest.raises(ChecksumMismatch) as excinfo:
        download_raw(spec, toy, client)
    actual = md5_file(toy.data_dir / "toy-auc" / "toy-auc.zip")
    assert str(excinfo.value) == (
        f"Checksums do not match for toy-auc:\nzip/toy-auc.zip: MD5 {actual}, expected d41d8cd98f00b204e9800998ecf8427e"
    )
    assert not toy.raw_dir("toy-auc").exists()
    download_raw(spec, toy, client, verify=False)
    assert (toy.raw_dir("toy-auc") / "labels.csv").is_file()


@pytest.mark.parametrize("member", ["../escape.txt", "/abs.txt", "a/../../escape.txt"])
def test_archives_cannot_write_outside_the_target(tmp_path: Path, member: str) -> None:
    archive = tmp_path / "bad.zip"
    archive.write_bytes(zip_bytes({member: b"x"}))
    with pytest.raises(KaggleError, match="would be written outside"):
        extract_archive(archive, tmp_path / "out")
    assert not (tmp_path / "escape.txt").exists()


def test_archive_size_limit_and_bad_archive(tmp_path: Path) -> None:
    archive = tmp_path / "big.zip"
    archive.write_bytes(zip_bytes({"a.csv": b"0" * 1000}))
    with pytest.raises(KaggleError, match=r"expands to 1,000 bytes, more than the 999 allowed"):
        extract_archive(archive, tmp_path / "out", max_bytes=999)
    (tmp_path / "not.zip").write_text("plain text")
    with pytest.raises(KaggleError, match="not a readable zip archive"):
        extract_archive(tmp_path / "not.zip", tmp_path / "out")


def test_leaderboard_uses_the_private_board_in_mlebench_columns(fake_api: FakeApi, tmp_path: Path) -> None:
    board = connect_kaggle(CREDENTIALS, tmp_path).leaderboard("toy")
    assert tuple(board.columns) == LEADERBOARD_COLUMNS
    assert board.to_csv(index=False, lineterminator="\n") == (
        "scoreNullable,teamId,hasTeamName,submissionDate,score,hasScore\n"
        "0.91,7,True,2020-02-01 10:00:00,0.91,True\n"
        "0.85,8,False,2020-02-02 11:00:00,0.85,True\n"
    )
    with pytest.raises(KaggleError, match=r"board: no column\(s\) Score"):
        leaderboard_from_kaggle_csv(b"TeamId,SubmissionDate\n1,2020\n", source="board")


def test_fetch_top_kernels_saves_a_corpus_with_its_manifest(fake_api: FakeApi, tmp_path: Path) -> None:
    client = connect_kaggle(CREDENTIALS, tmp_path)
    fetched = fetch_top_kernels(client, "toy-auc", tmp_path / "corpus", top=3)
    assert fetched.refs == ("owner0/notebook-0", "owner2/notebook-2")
    assert fetched.saved == ("owner0/notebook-0.ipynb", "owner2/notebook-2.ipynb")
    assert list(fetched.failed) == ["owner1/notebook-1"] and "404 Not Found" in fetched.failed["owner1/notebook-1"]
    assert (tmp_path / "corpus" / "kernels.txt").read_text() == "owner0/notebook-0\nowner2/notebook-2\n"
    assert ("kernels_list", ("toy-auc", "voteCount", 1, 3)) in fake_api.calls
    # More than one page: Kaggle lists at most 100 a page.
    fake_api.kernel_list = [SimpleNamespace(ref=f"o/k{i}", total_votes=1000 - i) for i in range(150)]
    assert len(client.top_kernels("toy-auc", 120)) == 120
    assert [c[1][2:] for c in fake_api.calls if c[0] == "kernels_list"][-2:] == [(1, 100), (2, 100)]
    with pytest.raises(ValueError, match="top must be at least 1"):
        fetch_top_kernels(client, "toy-auc", tmp_path / "corpus", top=0)


# -- commands -------------------------------------------------------------------------------------


@click.group()
def root() -> None:
    """Test root."""


root.add_command(prepare)
root.add_command(kernels)


def run(args: list[str], env: dict[str, str]) -> click.testing.Result:
    return CliRunner().invoke(root, args, env=env, catch_exceptions=False)


@pytest.fixture
def env(toy: CompetitionRegistry, tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {"MLEAUDIT_COMPETITIONS": str(toy.root), "MLEAUDIT_DATA_DIR": str(toy.data_dir), "HOME": str(home),
            "KAGGLE_USERNAME": "", "KAGGLE_KEY": "", "KAGGLE_API_TOKEN": "", "KAGGLE_CONFIG_DIR": "",
            "XDG_CONFIG_HOME": str(home / ".config")}


def test_commands_without_credentials_fail_fast(env: dict[str, str], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kaggle_module, "_kaggle_installed", lambda: True)
    for args in (["kernels", "fetch", "toy-auc", "-o", str(tmp_path / "k")], ["prepare", "-c", "toy-auc", "--download"]):
        result = run(args, env)
        assert result.exit_code == 2, result.output
        assert result.output.startswith("Error: No Kaggle credentials: set KAGGLE_USERNAME and KAGGLE_KEY")
        assert "Traceback" not in result.output
    assert not (tmp_path / "k").exists()


def test_kernels_fetch_command(fake_api: FakeApi, env: dict[str, str], tmp_path: Path) -> None:
    result = run(["kernels", "fetch", "toy-auc", "--top", "2", "-o", str(tmp_path / "k")], {**env, **CREDENTIALS})
    assert result.exit_code == 0, result.output
    assert "owner1/notebook-1: not saved: Kaggle pull of notebook 'owner1/notebook-1' failed" in result.output
    assert result.output.endswith(f"toy-auc: 1 notebook(s) saved in {tmp_path / 'k'} (kernels.txt lists them)\n")
    assert (tmp_path / "k" / "owner0" / "notebook-0.ipynb").is_file()


def test_prepare_download_command(fake_api: FakeApi, env: dict[str, str], toy: CompetitionRegistry) -> None:
    result = run(["prepare", "-c", "toy-auc", "--download"], {**env, **CREDENTIALS})
    assert result.exit_code == 0, result.output
    assert result.output.endswith(f"toy-auc: prepared in {toy.data_dir / 'toy-auc' / 'prepared'} (no checksums recorded)\n")
    # Prepared already: nothing is downloaded again.
    calls = len(fake_api.calls)
    assert "already prepared" in run(["prepare", "-c", "toy-auc", "--download"], {**env, **CREDENTIALS}).output
    assert [c for c in fake_api.calls[calls:] if c[0] == "competition_download_files"] == []


@pytest.mark.parametrize("name", ["mleaudit.grading.kaggle", "mleaudit.grading.batch", "mleaudit.grading.prepare"])
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
