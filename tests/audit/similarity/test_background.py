"""The copy detector's background of ordinary ML code: the shipped file, its errors, and what it
changes: generic idioms shared with a kernel are not a copy, a real partial copy still is, and the
clean real agent runs are never flagged."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from mleaudit.audit.clusters import RunCode, copy_clusters
from mleaudit.audit.errors import ConfigError
from mleaudit.audit.similarity import SimilarityOptions, compare
from mleaudit.audit.similarity.detect import (
    BACKGROUND_FORMAT,
    BACKGROUND_PATH,
    DEFAULT_SCORE_THRESHOLD,
    PROFILE_SCHEME,
    Background,
    DetectionCorpus,
    NgramTable,
    bits_from_score,
    default_background,
    load_background,
    profile_code,
    save_background,
    token_bits,
)
from mleaudit.audit.units import CodeUnit
from tests.conftest import shared_path

REPO_ROOT = Path(__file__).resolve().parents[3]


def _load_script(name: str, relative: str):
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / relative)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return sys.modules[spec.name]


# -- the shipped file -------------------------------------------------------------------------------


def test_shipped_background_loads_and_is_versioned() -> None:
    background = load_background()
    assert background.path == str(BACKGROUND_PATH)
    assert background.documents >= 500
    assert "scripts/build_background.py" in background.source
    assert background.table.keys.size > 1000 and background.idioms is not None and background.idioms.keys.size > 1000
    assert np.all(np.diff(background.table.keys) > 0) and np.all(np.diff(background.idioms.keys) > 0)
    with np.load(BACKGROUND_PATH, allow_pickle=False) as data:
        meta = json.loads(str(data["meta"]))
    assert meta["format"] == BACKGROUND_FORMAT and meta["scheme"] == PROFILE_SCHEME
    assert default_background() is default_background()  # read once per process


def test_build_script_reproduces_the_shipped_background(tmp_path, monkeypatch) -> None:
    build = _load_script("build_background", "scripts/build_background.py")
    assert build.corpus(count=5) == build.corpus(count=5)
    scripts = build.corpus(count=40)
    profiles = [profile_code(text, f"s{n}.py") for n, text in enumerate(scripts)]
    assert all(len(p) > 50 for p in profiles)
    out = tmp_path / "background.npz"
    monkeypatch.setattr(sys, "argv", ["build_background.py", "-o", str(out)])
    build.main()
    rebuilt, shipped = load_background(out), load_background()
    for name in ("keys", "counts", "context_keys", "totals", "kinds"):
        assert np.array_equal(getattr(rebuilt.table, name), getattr(shipped.table, name)), name
        assert np.array_equal(getattr(rebuilt.idioms, name), getattr(shipped.idioms, name)), name
    assert rebuilt.documents == shipped.documents and rebuilt.source == shipped.source


def test_missing_background_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"background .*nowhere\.npz: no such file; rebuild it with "
                                          r"`python scripts/build_background.py`"):
        load_background(tmp_path / "nowhere.npz")


def test_corrupt_background_is_a_clear_error(tmp_path) -> None:
    damaged = tmp_path / "damaged.npz"
    damaged.write_bytes(b"PK\x03\x04 not really a zip file")
    with pytest.raises(ConfigError, match=r"damaged\.npz: unreadable \(.*\); rebuild it"):
        load_background(damaged)
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(BACKGROUND_PATH.read_bytes()[:2000])
    with pytest.raises(ConfigError, match=r"truncated\.npz: unreadable"):
        load_background(truncated)
    other = tmp_path / "other.npz"
    np.savez(other, numbers=np.arange(3))
    with pytest.raises(ConfigError, match=r"other\.npz: not a background file \(missing meta, keys"):
        load_background(other)


def _write(path: Path, table: NgramTable, **meta_changes) -> None:
    save_background(path, table, idioms=table, documents=3, source="test")
    with np.load(path, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    meta = json.loads(str(arrays["meta"]))
    meta.update(meta_changes)
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez(path, **arrays)


def test_background_of_another_version_or_scheme_is_refused(tmp_path) -> None:
    table = NgramTable.from_profiles([profile_code("x = f(a, 'k')\n"), profile_code("y = g(b)\n")])
    good = tmp_path / "good.npz"
    save_background(good, table, idioms=table, documents=2, source="test")
    assert load_background(good).documents == 2
    _write(tmp_path / "v2.npz", table, format=BACKGROUND_FORMAT + 1)
    with pytest.raises(ConfigError, match=rf"format {BACKGROUND_FORMAT + 1}, this version reads format "
                                          rf"{BACKGROUND_FORMAT}; rebuild it"):
        load_background(tmp_path / "v2.npz")
    _write(tmp_path / "scheme.npz", table, scheme="lexical-tokens-0")
    with pytest.raises(ConfigError, match=r"built under token scheme 'lexical-tokens-0'"):
        load_background(tmp_path / "scheme.npz")
    _write(tmp_path / "count.npz", table, documents=-1)
    with pytest.raises(ConfigError, match=r"documents must be a count, got -1"):
        load_background(tmp_path / "count.npz")


def test_inconsistent_background_arrays_are_refused(tmp_path) -> None:
    table = NgramTable.from_profiles([profile_code("x = f(a, 'k')\n"), profile_code("y = g(b)\n")])
    shuffled = NgramTable(table.keys[::-1].copy(), table.counts, table.context_keys, table.totals, table.kinds)
    path = tmp_path / "unsorted.npz"
    save_background(path, shuffled, idioms=table, documents=2, source="test")
    with pytest.raises(ConfigError, match=r"keys must be sorted and distinct"):
        load_background(path)
    short = NgramTable(table.keys, table.counts[:-1], table.context_keys, table.totals, table.kinds)
    save_background(path, short, idioms=table, documents=2, source="test")
    with pytest.raises(ConfigError, match=r"keys and counts differ in length"):
        load_background(path)


def test_a_missing_shipped_background_stops_the_detector(tmp_path, monkeypatch) -> None:
    from mleaudit.audit.similarity.detect import background

    monkeypatch.setattr(background, "BACKGROUND_PATH", tmp_path / "gone.npz")
    monkeypatch.setattr(background, "_DEFAULT_BACKGROUND", [])
    with pytest.raises(ConfigError, match="no such file"):
        DetectionCorpus([profile_code("x = 1\n")])
    # an explicit background, or none, does not need the file
    assert DetectionCorpus([profile_code("x = 1\n")], background=None).background is None
    assert DetectionCorpus([profile_code("x = 1\n")], background=Background.empty()).background.documents == 0


# -- what it changes --------------------------------------------------------------------------------

#: A kernel that holds the idioms every tabular solution writes, and code of its own.
KERNEL = '''import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split
from sklearn.metrics import roc_auc_score, mean_squared_error
from lightgbm import LGBMClassifier

train = pd.read_csv("./input/train.csv")
test = pd.read_csv("./input/test.csv")

def harmonic_tenure(frame, pivot=13.75):
    span = frame["tenure_days"].clip(lower=1)
    return (frame["visits"] + 0.5) / np.log1p(span / pivot)

train["heat"] = harmonic_tenure(train)
test["heat"] = harmonic_tenure(test, pivot=9.125)
bins = [0, 3, 11, 29, 61, 999]
train["heat_band"] = pd.cut(train["heat"], bins=bins, labels=["ice", "cold", "mild", "warm", "hot"])

X = train.drop(["id", "target"], axis=1)
y = train["target"]

X_train, X_val, y_train, y_val = train_test_split(X, y, test_size=0.2, random_state=42)

model = LGBMClassifier()
model.fit(X_train, y_train)

val_probs = model.predict_proba(X_val)[:, 1]
val_auc = roc_auc_score(y_val, val_probs)
print(f"Validation ROC AUC Score: {val_auc}")

preds = model.predict_proba(test.drop(["id"], axis=1))[:, 1]
submission = pd.DataFrame({"id": test["id"], "target": preds})
submission.to_csv("./working/submission.csv", index=False)
'''

#: Agent code written independently, in the same idioms (as the AIDE solutions that were flagged).
GENERIC_AGENT = '''import pandas as pd
import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.metrics import roc_auc_score
from lightgbm import LGBMClassifier

train_data = pd.read_csv("./input/train.csv")
test_data = pd.read_csv("./input/test.csv")

X = train_data.drop(["id", "target"], axis=1)
y = train_data["target"]

# Split the data into training and validation sets
X_train, X_val, y_train, y_val = train_test_split(X, y, test_size=0.2, random_state=42)

# Initialize and train the model
model = LGBMClassifier()
model.fit(X_train, y_train)

# Predict probabilities for the validation set
val_probs = model.predict_proba(X_val)[:, 1]
val_auc = roc_auc_score(y_val, val_probs)
print(f"Validation ROC AUC Score: {val_auc}")

test_probs = model.predict_proba(test_data.drop(["id"], axis=1))[:, 1]
submission = pd.DataFrame({"id": test_data["id"], "target": test_probs})
submission.to_csv("./working/submission.csv", index=False)
'''

#: The same task solved independently, in the same idioms but in its own order and choices.
INDEPENDENT_AGENT = '''import os
import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split
from sklearn.metrics import roc_auc_score
import xgboost as xgb

DATA_DIR = "./input"
train_df = pd.read_csv(os.path.join(DATA_DIR, "train.csv"))
test_df = pd.read_csv(os.path.join(DATA_DIR, "test.csv"))

features = [c for c in train_df.columns if c not in ["id", "target"]]
X = train_df[features]
y = train_df["target"]
X_train, X_valid, y_train, y_valid = train_test_split(X, y, test_size=0.2, random_state=42, stratify=y)

model = xgb.XGBClassifier(n_estimators=500, learning_rate=0.05, max_depth=6, random_state=42)
model.fit(X_train, y_train, eval_set=[(X_valid, y_valid)], verbose=False)
preds = model.predict_proba(X_valid)[:, 1]
print("Validation AUC:", roc_auc_score(y_valid, preds))

os.makedirs("./working", exist_ok=True)
submission = pd.DataFrame({"id": test_df["id"], "target": model.predict_proba(test_df[features])[:, 1]})
submission.to_csv("./working/submission.csv", index=False)
'''

#: Other kernels of the competition, so that the corpus is not the kernel alone (a handful: the
#: fewer kernels a corpus holds, the rarer common idioms look; see the plagiarism rule's rationale).
OTHERS = [
    '''import pandas as pd\nfrom sklearn.ensemble import RandomForestClassifier\n
df = pd.read_csv("../input/train.csv")\nfeatures = [c for c in df.columns if c not in ("id", "target")]
clf = RandomForestClassifier(n_estimators=300, min_samples_leaf=3, random_state=7)
clf.fit(df[features], df["target"])\nprint(clf.score(df[features], df["target"]))\n''',
    '''import pandas as pd\nimport xgboost as xgb\n
train = pd.read_csv("../input/train.csv")\nparams = {"eta": 0.07, "max_depth": 5, "objective": "binary:logistic"}
dtrain = xgb.DMatrix(train.drop(columns=["target"]), label=train["target"])
booster = xgb.train(params, dtrain, num_boost_round=650)\n''',
    '''import pandas as pd\nfrom sklearn.model_selection import train_test_split\nfrom catboost import CatBoostClassifier\n
train = pd.read_csv("../input/train.csv")\ntest = pd.read_csv("../input/test.csv")
X = train.drop(["id", "target"], axis=1)\ny = train["target"]
X_tr, X_va, y_tr, y_va = train_test_split(X, y, test_size=0.15, random_state=2021)
cb = CatBoostClassifier(iterations=1200, depth=7, verbose=200)\ncb.fit(X_tr, y_tr, eval_set=(X_va, y_va))
pd.DataFrame({"id": test["id"], "target": cb.predict_proba(test.drop(["id"], axis=1))[:, 1]}).to_csv("sub.csv", index=False)\n''',
    '''import numpy as np\nimport pandas as pd\nfrom sklearn.metrics import roc_auc_score\nfrom sklearn.model_selection import StratifiedKFold\n
df = pd.read_csv("/kaggle/input/train.csv")\nfeats = [c for c in df.columns if c.startswith("f_")]
oof = np.zeros(len(df))\nfor tr, va in StratifiedKFold(5, shuffle=True, random_state=1).split(df, df["target"]):
    oof[va] = df.loc[va, feats].mean(axis=1)\nprint("OOF AUC", roc_auc_score(df["target"], oof))\n''',
]


def _compare(agent_text: str, **options):
    references = [CodeUnit(path="author/heat-bands.py", language="python", text=KERNEL)] + [
        CodeUnit(path=f"other/k{n}.py", language="python", text=text) for n, text in enumerate(OTHERS)]
    report = compare([CodeUnit(path="code/solution.py", language="python", text=agent_text)], references,
                     SimilarityOptions(max_pairs_per_agent=None, **options))
    return next(p for p in report.pairs if p.reference_path == "author/heat-bands.py")


def test_generic_idioms_shared_with_a_kernel_are_not_a_copy() -> None:
    # the same task solved independently in the same idioms: not a copy, and not called one
    pair = _compare(INDEPENDENT_AGENT)
    assert not pair.flagged and pair.score < DEFAULT_SCORE_THRESHOLD
    assert pair.summary.startswith("shares ") and "copied" not in pair.summary
    # 20 lines of the agent file equal 20 lines of the kernel, token for token (identifiers aside,
    # the printed messages too): each line of such idioms carries a few bits, a fourth of what a
    # line pasted from the kernel's own code carries. Twenty of them in a row, in a corpus of a
    # handful of kernels, come near the threshold; against a real corpus no clean real run's
    # code reaches it (test_every_clean_real_run_is_never_flagged)
    generic = _compare(GENERIC_AGENT)
    assert generic.copied_lines >= 15
    assert bits_from_score(generic.score) / generic.copied_lines < 7.0
    # without the background the same code reads as rare: a sure copy
    agent = profile_code(GENERIC_AGENT)
    profiles = [profile_code(KERNEL)] + [profile_code(text) for text in OTHERS]
    alone = DetectionCorpus(profiles, background=None).evidence(agent, 0)
    with_background = DetectionCorpus(profiles).evidence(agent, 0)
    assert alone.score > 0.9 and alone.bits > 3 * with_background.bits


def test_a_real_partial_copy_is_still_flagged_and_says_so() -> None:
    pasted = KERNEL[KERNEL.index("def harmonic_tenure"): KERNEL.index("X = train.drop")]
    pasted = pasted.replace("frame", "df").replace("span", "days")  # renamed, as agents do
    agent = GENERIC_AGENT.replace("X = train_data.drop", pasted.replace("train[", "train_data[")
                                  .replace("test[", "test_data[").replace("(train)", "(train_data)")
                                  .replace("(test,", "(test_data,") + "\nX = train_data.drop")
    pair = _compare(agent)
    assert pair.flagged and pair.score >= DEFAULT_SCORE_THRESHOLD
    assert pair.copied_lines >= 5 and pair.copied_fragments >= 1
    assert bits_from_score(pair.score) / pair.copied_lines > 14.0  # the kernel's own code weighs
    assert pair.summary == (f"copied: shares {pair.copied_lines} lines in {pair.copied_fragments} "
                            f"fragment{'s' if pair.copied_fragments != 1 else ''} with author/heat-bands; "
                            f"copy score {pair.score:.2f}")
    record = pair.to_dict()
    assert record["summary"] == pair.summary and record["copied_lines"] == pair.copied_lines


def test_column_lists_and_docstrings_carry_little_evidence() -> None:
    kernel = profile_code('cols = ["BsmtFinSF1", "BsmtFinSF2", "BsmtUnfSF", "TotalBsmtSF", "BsmtFullBath"]\n'
                          'def f():\n    """\n    input_paths: a list of two or more paths to the csv files\n    """\n')
    agent = profile_code('keep = ["BsmtFinSF1", "BsmtFinSF2", "BsmtUnfSF", "TotalBsmtSF", "BsmtFullBath"]\n'
                         '"""\ninput_paths: a list of two or more paths to the csv files\n"""\n')
    table = NgramTable.from_profiles([kernel])
    bits = token_bits(agent, table, [kernel], background=None)
    names = agent.name_array()
    assert names.sum() == 5 and bits[names].max() <= 6.5
    assert agent.prose and bits[sorted(agent.prose)].sum() == 0.0
    # a lone surrogate (undecodable bytes read with surrogateescape) does not stop the lexer
    assert profile_code('x = "\udc80"\n"""\na list of two or more things\n"""\n').prose


def test_two_runs_in_the_same_idioms_make_no_copy_cluster() -> None:
    first = RunCode(run_id="run-a", units=(CodeUnit(path="code/main.py", language="python", text=GENERIC_AGENT),))
    other = INDEPENDENT_AGENT
    second = RunCode(run_id="run-b", units=(CodeUnit(path="code/main.py", language="python", text=other),))
    result = copy_clusters({"run-a": {}, "run-b": {}}, [first, second], score_threshold=DEFAULT_SCORE_THRESHOLD)
    assert result["clusters"] == []


def test_a_run_copying_another_run_is_a_cluster_with_its_evidence() -> None:
    first = RunCode(run_id="run-a", units=(CodeUnit(path="code/main.py", language="python", text=KERNEL),))
    copied = KERNEL.replace("frame", "table").replace("X_train", "Xtr")
    second = RunCode(run_id="run-b", units=(CodeUnit(path="code/train.py", language="python", text=copied),))
    result = copy_clusters({"run-a": {}, "run-b": {}}, [first, second], score_threshold=DEFAULT_SCORE_THRESHOLD)
    (cluster,) = result["clusters"]
    (edge,) = cluster["edges"]
    assert cluster["runs"] == ["run-a", "run-b"] and edge["kind"] == "run-run"
    assert edge["summary"].startswith("copied: shares ") and edge["copied_lines"] >= 10


# -- the clean real runs ----------------------------------------------------------------------------


def _clean_pairs(sources):
    data = shared_path("runs")
    shared_path("notebooks")
    bench = _load_script("detection_quality", "benchmarks/detection_quality.py")
    return bench.score_clean_runs(data.parent, DEFAULT_SCORE_THRESHOLD, sources, top=1)


def test_clean_aide_and_autokaggle_runs_are_never_flagged() -> None:
    pairs = _clean_pairs(("aide", "autokaggle"))
    assert len({p.agent_path.split("::")[0] for p in pairs}) == 18  # 14 AIDE solutions, 4 AutoKaggle runs
    assert [p.summary for p in pairs if p.flagged] == []
    assert all(not p.summary.startswith("copied") for p in pairs)


@pytest.mark.slow
def test_every_clean_real_run_is_never_flagged() -> None:
    pairs = _clean_pairs(("aide", "aide-journal", "autokaggle", "mlagentbench"))
    assert len({p.agent_path.split("::")[0] for p in pairs}) >= 35
    assert [(p.agent_path, p.reference_id, round(p.score, 3)) for p in pairs if p.flagged] == []


#: The columns of a House Prices-like table, in the data's order.
_COLUMNS = ["MSZoning", "Street", "Alley", "LotShape", "LandContour", "Utilities", "LotConfig", "LandSlope",
            "Neighborhood", "Condition1", "Condition2", "BldgType", "HouseStyle", "RoofStyle", "RoofMatl",
            "Exterior1st", "Exterior2nd", "MasVnrType", "ExterQual", "ExterCond", "Foundation", "BsmtQual",
            "BsmtCond", "BsmtExposure", "BsmtFinType1", "BsmtFinType2", "Heating", "HeatingQC", "CentralAir",
            "Electrical", "KitchenQual", "Functional", "FireplaceQu", "GarageType", "GarageFinish"]


def test_a_list_of_the_datas_columns_is_read_off_its_header_not_copied() -> None:
    listed = ", ".join(f"'{name}'" for name in _COLUMNS)
    agent = profile_code(f"categorical_features = [\n    {listed}\n]\nfor c in categorical_features:\n    print(c)\n")
    bits = token_bits(agent, NgramTable.from_profiles([]))
    names = np.flatnonzero(agent.name_array())
    assert len(names) == len(_COLUMNS)
    # the first name costs a closed-vocabulary token at most, each further one (and its comma) at most a bit
    assert bits[names[0]] > 1.0 and np.all(bits[names[1:]] <= 1.0)
    # two runs that list the same columns in the data's order make no copy cluster
    runs = [RunCode(run_id=f"run-{n}", units=(CodeUnit(path="code/eda.py", language="python", text=text),))
            for n, text in enumerate([
                f"import pandas as pd\ntrain = pd.read_csv('./input/train.csv')\ncats = [{listed}]\n"
                "for col in cats:\n    train[col] = train[col].astype('category')\n",
                f"import seaborn as sns\ncategorical_features = [\n    {listed}\n]\n"
                "for feature in categorical_features:\n    sns.countplot(x=train_df[feature])\n"])]
    assert copy_clusters({"run-0": {}, "run-1": {}}, runs, score_threshold=DEFAULT_SCORE_THRESHOLD)["clusters"] == []
