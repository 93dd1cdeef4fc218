"""The reference side of a comparison is prepared once per process and reused: reuse changes no figure.

A batch worker compares run after run with the same corpus; the kernels' tokens, fingerprints and
detector profiles are kept between calls (keyed by the digest of every reference text and the
options that shape fingerprints), and each run's agent files go into a fork of the prepared index.
"""

from __future__ import annotations

import os
from pathlib import Path

from mleaudit.audit.similarity import SimilarityOptions, compare, load_reference_corpus
from mleaudit.audit.similarity import corpus as corpus_module
from mleaudit.audit.similarity import reference_side as side_module
from mleaudit.audit.units import CodeUnit

KERNEL_A = """import pandas as pd
train = pd.read_csv('../input/train.csv')
features = ['GrLivArea', 'OverallQual', 'TotalBsmtSF', 'GarageCars', 'YearBuilt']
model = GradientBoostingRegressor(n_estimators=731, learning_rate=0.0137, max_depth=5, subsample=0.83)
model.fit(train[features], train['SalePrice'])
"""
KERNEL_B = """import numpy as np
def rmsle(y, p):
    return np.sqrt(np.mean((np.log1p(p) - np.log1p(y)) ** 2))
weights = {'lgb': 0.41, 'xgb': 0.37, 'ridge': 0.22}
blend = sum(w * preds[name] for name, w in weights.items())
"""


def _unit(path: str, text: str) -> CodeUnit:
    return CodeUnit(path=path, language="python", text=text)


def _report(agents, references, **options):
    report = compare(agents, references, SimilarityOptions(**options))
    return [p.to_dict() for p in report.pairs], [s.to_dict() for s in report.skipped], report.corpus_digest


def test_a_second_run_against_the_same_corpus_gets_the_figures_of_a_fresh_process() -> None:
    references = [_unit("k/a.py", KERNEL_A), _unit("k/b.py", KERNEL_B), CodeUnit(path="k/c.R", language="r", text="x <- 1\n")]
    first = [_unit("code/one.py", KERNEL_A.replace("0.83", "0.8"))]
    second = [_unit("code/two.py", "x = 1\n" + KERNEL_B), _unit("code/three.py", KERNEL_A)]
    side_module.clear_prepared()
    _report(first, references)
    prepared = next(iter(side_module._PREPARED.values()))
    files_before = len(prepared.index.files())
    reused = _report(second, references)
    assert next(iter(side_module._PREPARED.values())) is prepared, "the prepared side was not reused"
    assert len(prepared.index.files()) == files_before, "agent files were added to the prepared index"
    side_module.clear_prepared()
    fresh = _report(second, references)
    assert reused == fresh
    assert any(pair["flagged"] for pair in fresh[0]) and fresh[1], "the case must hold a copy and a skipped unit"


def test_other_options_or_other_texts_prepare_another_side() -> None:
    references = [_unit("k/a.py", KERNEL_A), _unit("k/b.py", KERNEL_B)]
    agents = [_unit("code/one.py", KERNEL_A)]
    side_module.clear_prepared()
    _report(agents, references)
    shorter = _report(agents, references, kgram_length=5, kgrams_in_window=4)
    side_module.clear_prepared()
    assert shorter == _report(agents, references, kgram_length=5, kgrams_in_window=4)
    edited = [_unit("k/a.py", KERNEL_A.replace("731", "732")), references[1]]
    _report(agents, references)
    after_edit = _report(agents, edited)
    side_module.clear_prepared()
    assert after_edit == _report(agents, edited)


def test_a_kernel_changed_on_disk_is_read_again(tmp_path) -> None:
    folder = tmp_path / "kernels"
    folder.mkdir()
    (folder / "a.py").write_text(KERNEL_A)
    (folder / "b.py").write_text(KERNEL_B)
    first = load_reference_corpus(folder)
    assert [u.text for u in first.units] == [KERNEL_A, KERNEL_B]
    (folder / "a.py").write_text(KERNEL_B)  # new bytes under an old name
    (folder / "c.py").write_text(KERNEL_A)  # old bytes under a new name
    second = load_reference_corpus(folder)
    assert [(u.path, u.text) for u in second.units] == [("a.py", KERNEL_B), ("b.py", KERNEL_B), ("c.py", KERNEL_A)]
    assert set(corpus_module._DECODED) == {key for key in corpus_module._DECODED if key[0] in {"a.py", "b.py", "c.py"}}


def _locations(report) -> list:
    return [[(f["reference_location"], f["reference"]) for f in p.to_dict().get("fragments", [])] for p in report.pairs]


def test_a_reused_side_reports_the_cells_and_origins_of_the_callers_own_units() -> None:
    """Equal texts may lie in other cells of a notebook or elsewhere in a log: the key is the text,
    what the report shows of a reference comes from the units of the call."""
    from mleaudit.audit.model import Span
    from mleaudit.audit.units import CellRange

    text = KERNEL_A + KERNEL_B
    agents = [_unit("code/train.py", "x = 1\n" + KERNEL_B)]
    lines = text.count("\n")
    one_cell = CodeUnit(path="k/nb.ipynb", language="python", text=text, source="notebook",
                        cells=(CellRange(cell_index=0, start_line=1, end_line=lines),))
    two_cells = CodeUnit(path="k/nb.ipynb", language="python", text=text, source="notebook",
                         cells=(CellRange(cell_index=0, start_line=1, end_line=5),
                                CellRange(cell_index=2, start_line=6, end_line=lines)))
    size = len(text.encode())
    early = CodeUnit(path="logs/j.json", language="python", text=text, source="log",
                     origin=Span(path="logs/j.json", start_byte=100, end_byte=100 + size, start_line=10, start_col=0,
                                 end_line=10 + lines, end_col=0))
    late = CodeUnit(path="logs/j.json", language="python", text=text, source="log",
                    origin=Span(path="logs/j.json", start_byte=9000, end_byte=9000 + size, start_line=300, start_col=0,
                                end_line=300 + lines, end_col=0))
    for first, second in ((one_cell, two_cells), (early, late)):
        side_module.clear_prepared()
        compare(agents, [first])
        reused = _locations(compare(agents, [second]))
        side_module.clear_prepared()
        fresh = _locations(compare(agents, [second]))
        assert reused == fresh and reused != [[]], (reused, fresh)


def test_fields_that_run_into_each_other_do_not_share_a_side() -> None:
    agents = [_unit("code/train.py", KERNEL_B)]
    side_module.clear_prepared()
    compare(agents, [CodeUnit(path="k\0python", language="python", text=KERNEL_B)])
    reused = _report(agents, [CodeUnit(path="k", language="python\0python", text=KERNEL_B)])
    side_module.clear_prepared()
    assert reused == _report(agents, [CodeUnit(path="k", language="python\0python", text=KERNEL_B)])
    assert reused[0] == [] and reused[1], "a unit in a language without a grammar is skipped, never compared"


def test_threads_comparing_with_worker_processes_each_get_their_own_figures() -> None:
    import threading

    cases = [([_unit(f"code/{i}.py", KERNEL_A if i % 2 else KERNEL_B), _unit(f"code/x{i}.py", "y = 2\n" + KERNEL_A)],
              [_unit("k/a.py", KERNEL_A)] if i % 3 else [_unit("k/b.py", KERNEL_B), _unit("k/a.py", KERNEL_A)])
             for i in range(6)]
    expected = [[p.to_dict() for p in compare(agents, references).pairs] for agents, references in cases]
    got: dict[int, object] = {}

    def work(i: int) -> None:
        agents, references = cases[i]
        try:
            got[i] = [p.to_dict() for p in compare(agents, references, jobs=2).pairs]
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            got[i] = repr(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(cases))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [got[i] for i in range(len(cases))] == expected


def test_an_unchanged_kernel_is_not_read_again_and_an_edited_one_is_even_with_its_times_set_back(tmp_path, monkeypatch) -> None:
    from mleaudit.audit.similarity import kernel_files

    # files written now are settled only SETTLED_NS later (see the next test): the clock is moved on
    monkeypatch.setattr(kernel_files, "_now_ns", lambda: 2**62)
    folder = tmp_path / "kernels"
    folder.mkdir()
    (folder / "a.py").write_text(KERNEL_A)
    (folder / "b.py").write_text(KERNEL_B)
    first = load_reference_corpus(folder)
    read = []
    real = corpus_module.read_reference_bytes
    monkeypatch.setattr(corpus_module, "read_reference_bytes", lambda path, *a, **k: read.append(Path(path).name) or real(path, *a, **k))
    assert load_reference_corpus(folder) == first and read == []
    # same size, same modification time: the change time still moves
    status = (folder / "a.py").stat()
    edited = KERNEL_A.replace("731", "732")
    assert len(edited) == len(KERNEL_A)
    (folder / "a.py").write_text(edited)
    os.utime(folder / "a.py", ns=(status.st_atime_ns, status.st_mtime_ns))
    second = load_reference_corpus(folder)
    assert read == ["a.py"] and [u.text for u in second.units] == [edited, KERNEL_B]
    # a file replaced by a symbolic link to the same text is not a kernel any more
    (folder / "b.py").unlink()
    (folder / "b.py").symlink_to(folder / "a.py")
    third = load_reference_corpus(folder)
    assert [u.path for u in third.units] == ["a.py"] and [s.path for s in third.skipped] == ["b.py"]



def _status_with_times(status: os.stat_result, ns: int) -> os.stat_result:
    fields = list(status)
    fields[7:10] = [ns // 10**9] * 3
    return os.stat_result(fields, {"st_atime_ns": ns, "st_mtime_ns": ns, "st_ctime_ns": ns})


def test_a_kernel_edited_within_its_file_systems_time_step_after_a_load_is_read_again(tmp_path, monkeypatch) -> None:
    # A file system keeps times to its clock's step (a second, FAT two): two writes within one
    # step leave size and times as they were, so a signature taken then says nothing (git's
    # "racily clean" entries).
    from mleaudit.audit.similarity import kernel_files

    step = kernel_files._now_ns() // 10**9 * 10**9
    real_fstat, real_lstat = os.fstat, os.lstat
    monkeypatch.setattr(kernel_files.os, "fstat", lambda fd: _status_with_times(real_fstat(fd), step))
    monkeypatch.setattr(kernel_files.os, "lstat", lambda path: _status_with_times(real_lstat(path), step))
    folder = tmp_path / "kernels"
    folder.mkdir()
    (folder / "a.py").write_text(KERNEL_A)
    assert [u.text for u in load_reference_corpus(folder).units] == [KERNEL_A]
    edited = KERNEL_A.replace("731", "732")
    (folder / "a.py").write_text(edited)
    assert [u.text for u in load_reference_corpus(folder).units] == [edited]
    # once the step is long past, the same file is known again without a read
    monkeypatch.setattr(kernel_files, "_now_ns", lambda: step + 2 * kernel_files.SETTLED_NS)
    read = []
    real = corpus_module.read_reference_bytes
    monkeypatch.setattr(corpus_module, "read_reference_bytes",
                        lambda path, *a, **k: read.append(Path(path).name) or real(path, *a, **k))
    assert [u.text for u in load_reference_corpus(folder).units] == [edited] and read == ["a.py"]
    assert [u.text for u in load_reference_corpus(folder).units] == [edited] and read == ["a.py"]


def test_a_kernel_is_known_by_the_times_of_the_opened_file_not_by_cached_attributes(tmp_path, monkeypatch) -> None:
    # A network file system may answer lstat from attributes cached for up to a minute, and
    # revalidates them when the file is opened: the old attributes must not vouch for new bytes.
    from mleaudit.audit.similarity import kernel_files

    monkeypatch.setattr(kernel_files, "_now_ns", lambda: 2**62)
    cached: dict = {}
    real_lstat = os.lstat
    monkeypatch.setattr(kernel_files.os, "lstat", lambda path, *a, **k: cached.setdefault(str(path), real_lstat(path)))
    folder = tmp_path / "kernels"
    folder.mkdir()
    (folder / "a.py").write_text(KERNEL_A)
    assert [u.text for u in load_reference_corpus(folder).units] == [KERNEL_A]
    edited = KERNEL_A.replace("731", "7319")
    (folder / "a.py").write_text(edited)
    assert [u.text for u in load_reference_corpus(folder).units] == [edited]
