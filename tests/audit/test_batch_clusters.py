"""The batch's copy clusters from the code each run's audit hands back: the same clusters, edges and
scores as from reading and expanding every run again, and no run expanded a second time."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from mleaudit.audit.batch import BatchOptions, audit_batch, discover_runs
from tests.audit.test_batch import _OWN_SOLUTION

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "runs"

#: A solution with code of its own, copied by one journal's node into another's (renamed).
_SOLUTION = _OWN_SOLUTION


def _journal(folder: Path, run_id: str, texts: list[str]) -> None:
    folder.mkdir()
    nodes = [{"id": f"{run_id}-{n}", "step": n, "code": text} for n, text in enumerate(texts)]
    (folder / "journal.json").write_text(json.dumps({"nodes": nodes}), encoding="utf-8")


@pytest.fixture(scope="module")
def audited(tmp_path_factory):
    """A folder of runs (two copies of one run, other example runs, two AIDE journals sharing a
    node's code) audited with similarity in two worker processes."""
    folder = tmp_path_factory.mktemp("clusters") / "runs"
    folder.mkdir()
    for i, example in enumerate(["copied-digits", "copied-digits", "honest-digits", "llm-digits"]):
        shutil.copytree(EXAMPLES / example, folder / f"run-{i}")
    _journal(folder / "journal-a", "journal-a", ["print('hello')\n", _SOLUTION])
    _journal(folder / "journal-b", "journal-b", ["import os\nprint(os.listdir('./input'))\n", "x = 1\n",
                                                 _SOLUTION.replace("frame", "table").replace("heat", "warmth")])
    entries = discover_runs(folder, competition="sklearn-digits")
    return audit_batch(entries, BatchOptions(jobs=2, grade=False))


def test_each_audit_hands_back_the_code_the_batch_would_read_again(audited):
    from mleaudit.audit.batch_cli import _read_run_code

    assert [r.error for r in audited] == [None] * len(audited)
    for result in audited:
        read = _read_run_code(result)
        assert result.code is not None and result.code.host_text is None
        assert (result.code.run_id, result.code.units, dict(result.code.locations), result.code.starter) == (
            read.run_id, read.units, dict(read.locations), read.starter)


def test_clusters_from_the_handed_back_code_equal_those_from_reading_the_runs_again(audited, monkeypatch):
    from mleaudit.audit import batch_cli

    reread = batch_cli._clusters([replace(r, code=None) for r in audited])
    edges = [edge for cluster in reread["clusters"] for edge in cluster["edges"]]
    assert {e["kind"] for e in edges} == {"run-run", "run-notebook"}
    assert any((e["left_origin"] or {}).get("node_id") for e in edges)  # a journal's node, named from its file

    import mleaudit.audit.expand
    import mleaudit.audit.run

    def never(*args, **kwargs):
        raise AssertionError("a run was expanded again")

    loaded: list[Path] = []
    load_run = mleaudit.audit.run.load_run

    def counted(run_dir, *args, **kwargs):
        loaded.append(Path(run_dir))
        return load_run(run_dir, *args, **kwargs)

    monkeypatch.setattr(mleaudit.audit.expand, "expand_run", never)
    monkeypatch.setattr(mleaudit.audit.run, "load_run", counted)
    assert batch_cli._clusters(audited) == reread
    assert batch_cli._clusters(audited, jobs=2) == reread
    # only the runs whose flagged pairs name a journal's node are read again, once each per batch
    assert sorted({p.name for p in loaded}) == ["journal-a", "journal-b"]


def test_a_run_whose_audit_kept_no_code_is_read_again(audited):
    from mleaudit.audit import batch_cli

    mixed = [replace(r, code=None) if i % 2 else r for i, r in enumerate(audited)]
    assert batch_cli._clusters(mixed) == batch_cli._clusters([replace(r, code=None) for r in audited])


def test_without_similarity_no_code_is_kept(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    shutil.copytree(EXAMPLES / "honest-digits", folder / "run-0")
    (result,) = audit_batch(discover_runs(folder, competition="sklearn-digits"),
                            BatchOptions(jobs=1, grade=False, similarity=False))
    assert result.report is not None and result.code is None

