"""The reference side of a comparison is prepared once per process and reused: reuse changes no figure.

A batch worker compares run after run with the same corpus; the kernels' tokens, fingerprints and
detector profiles are kept between calls (keyed by the digest of every reference text and the
options that shape fingerprints), and each run's agent files go into a fork of the prepared index.
"""

from __future__ import annotations

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
