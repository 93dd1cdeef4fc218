"""``similarity compare`` output written in batches, and files too short to compare."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mleaudit.audit.similarity.cli import compare as similarity_compare
from mleaudit.audit.similarity.cli import TOO_SHORT, similarity

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "similarity" / "detect"
KERNELS = FIXTURES / "kernels"


def _run(*args: str):
    return CliRunner().invoke(similarity, list(args))


def _agents(tmp_path: Path, n: int = 5) -> Path:
    """``n`` agent files: host code with a different slice of a kernel pasted into each."""
    host = (FIXTURES / "agent" / "host.py").read_text(encoding="utf-8").split("\n")
    kernels = sorted(KERNELS.glob("*.py"))
    folder = tmp_path / "agents"
    folder.mkdir()
    for i in range(n):
        kernel = kernels[i % len(kernels)].read_text(encoding="utf-8").split("\n")
        (folder / f"a{i}.py").write_text("\n".join(host[:8] + kernel[5 + i:25 + i] + host[8:]), encoding="utf-8")
    return folder


@pytest.mark.parametrize("extra", [(), ("--all",), ("--top", "2")])
def test_compare_json_in_batches_is_the_whole_document(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       extra: tuple[str, ...]) -> None:
    agents = _agents(tmp_path)
    monkeypatch.setattr(similarity_compare, "COMPARE_BATCH_FILES", 100)
    monkeypatch.setattr(similarity_compare, "COMPARE_BATCH_FILES_ALL", 100)
    whole = _run("compare", str(agents), "--reference", str(KERNELS), "--format", "json", *extra)
    assert whole.exit_code == 0, whole.output
    monkeypatch.setattr(similarity_compare, "COMPARE_BATCH_FILES", 2)
    monkeypatch.setattr(similarity_compare, "COMPARE_BATCH_FILES_ALL", 2)
    batched = _run("compare", str(agents), "--reference", str(KERNELS), "--format", "json", *extra)
    assert batched.exit_code == 0, batched.output
    # The same text, and the text json.dumps writes for the whole document at once.
    assert batched.stdout == whole.stdout
    data = json.loads(batched.stdout)
    assert batched.stdout == json.dumps(data, indent=2, sort_keys=True) + "\n"
    scores = [p["score"] for p in data["pairs"]]
    assert scores == sorted(scores, reverse=True)
    if extra == ("--all",):
        assert len(data["pairs"]) == 5 * len(list(KERNELS.glob("*.py")))
    if extra == ("--top", "2"):
        assert {p["agent"] for p in data["pairs"]} == {f"{agents}/a{i}.py" for i in range(5)}
        assert len(data["pairs"]) == 10


def test_compare_tsv_in_batches_is_the_same_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agents = _agents(tmp_path)
    monkeypatch.setattr(similarity_compare, "COMPARE_BATCH_FILES", 100)
    whole = _run("compare", str(agents), "--reference", str(KERNELS))
    monkeypatch.setattr(similarity_compare, "COMPARE_BATCH_FILES", 1)
    batched = _run("compare", str(agents), "--reference", str(KERNELS))
    assert whole.exit_code == batched.exit_code == 0
    assert batched.stdout == whole.stdout
    rows = list(csv.DictReader(io.StringIO(batched.stdout), delimiter="\t"))
    assert {"score", "flagged"} <= set(rows[0])


def test_compare_json_without_pairs(tmp_path: Path) -> None:
    agent = tmp_path / "a.py"
    agent.write_text("x = 1\n", encoding="utf-8")
    result = _run("compare", str(agent), "--reference", str(KERNELS), "--format", "json")
    assert result.exit_code == 0, result.output
    assert result.stdout == json.dumps(json.loads(result.stdout), indent=2, sort_keys=True) + "\n"


def _short_pair(tmp_path: Path) -> tuple[Path, Path]:
    text = "import os\n\nimport os\n"  # three lines, fewer tokens than one k-gram
    left, right = tmp_path / "left.py", tmp_path / "right.py"
    left.write_text(text, encoding="utf-8")
    right.write_text(text, encoding="utf-8")
    return left, right


def test_pairs_of_files_too_short_say_so(tmp_path: Path) -> None:
    left, right = _short_pair(tmp_path)
    result = _run("pairs", str(left), str(right))
    assert result.exit_code == 0, result.output
    row = list(csv.DictReader(io.StringIO(result.stdout), delimiter="\t"))[0]
    assert row["similarity"] == TOO_SHORT
    assert row["leftTotal"] == row["rightTotal"] == "0"
    data = json.loads(_run("pairs", str(left), str(right), "--format", "json").stdout)
    assert data["pairs"][0]["too_short"] is True
    assert data["pairs"][0]["similarity"] is None
    assert data["pairs"][0]["note"] == TOO_SHORT


def test_compare_of_a_file_too_short_says_so(tmp_path: Path) -> None:
    left, right = _short_pair(tmp_path)
    refs = tmp_path / "refs"
    refs.mkdir()
    right.rename(refs / "right.py")
    result = _run("compare", str(left), "--reference", str(refs))
    assert result.exit_code == 0, result.output
    row = list(csv.DictReader(io.StringIO(result.stdout), delimiter="\t"))[0]
    assert row["similarity"] == TOO_SHORT and row["agent_containment"] == "-"
    data = json.loads(_run("compare", str(left), "--reference", str(refs), "--format", "json").stdout)
    pair = data["pairs"][0]
    assert pair["too_short"] is True and pair["similarity"] is None and pair["agent_containment"] is None


def test_compare_with_an_index_in_batches_is_the_same_document(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mleaudit.audit.similarity.corpus_cli import corpus

    index = tmp_path / "kernels.index"
    built = CliRunner().invoke(corpus, ["build", str(KERNELS), "-o", str(index)])
    assert built.exit_code == 0, built.output
    agents = _agents(tmp_path)
    outputs = []
    for size in (100, 2):
        monkeypatch.setattr(similarity_compare, "COMPARE_BATCH_FILES", size)
        result = _run("compare", str(agents), "--index", str(index), "--format", "json")
        assert result.exit_code == 0, result.output
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1]
    data = json.loads(outputs[1])
    assert {p["agent"] for p in data["pairs"]} == {f"{agents}/a{i}.py" for i in range(5)}


def test_compare_holds_one_batch_of_agent_files_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import mleaudit.audit.similarity as similarity_package
    from mleaudit.audit.similarity.comparison import compare as real_compare

    calls: list[int] = []

    def counting_compare(agents, *args, **kwargs):
        calls.append(len(agents))
        return real_compare(agents, *args, **kwargs)

    monkeypatch.setattr(similarity_package, "compare", counting_compare, raising=False)
    agents = _agents(tmp_path, n=7)
    result = _run("compare", str(agents), "--reference", str(KERNELS), "--all", "--format", "json")
    assert result.exit_code == 0, result.output
    assert calls == [4, 3]  # COMPARE_BATCH_FILES_ALL files per call with --all
    assert len(json.loads(result.stdout)["pairs"]) == 7 * len(list(KERNELS.glob("*.py")))
