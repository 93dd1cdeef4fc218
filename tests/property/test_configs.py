"""Configuration files: competition configs, sandbox specs, reviewer baselines, hostile YAML.

Each loader is documented to raise one named error on any bad file:

- ``mleaudit.grading.spec.load_competition_spec``: ``mleaudit.grading.errors.ConfigError``;
- ``mleaudit.sandbox.spec.load_sandbox_spec``: ``mleaudit.sandbox.errors.SpecError`` ("the file cannot be read or
  parsed, or the spec is invalid");
- ``mleaudit.audit.review.load_baseline``: ``mleaudit.audit.review.BaselineError`` (an ``AuditError``);
- ``mleaudit.audit.rules.loader.load_ruleset``: ``RuleError`` or ``ConfigError``.

The hostile-YAML property feeds the three YAML loaders the same files: nesting deeper than the
YAML parser recurses, alias chains, odd tags, junk and bytes that are not UTF-8. No file written
here is Python: a competition config that names a ``prepare``/``grader`` file names one that does
not exist, so nothing is ever executed.
"""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from mleaudit.audit.errors import AuditError
from mleaudit.audit.errors import ConfigError as AuditConfigError
from mleaudit.audit.errors import RuleError
from mleaudit.audit.review import Baseline, BaselineError, load_baseline
from mleaudit.audit.rules.loader import load_ruleset
from mleaudit.grading.errors import ConfigError, GradingError
from mleaudit.grading.metrics import METRICS
from mleaudit.grading.spec import CompetitionSpec, load_competition_spec
from mleaudit.sandbox.errors import SandboxError, SpecError
from mleaudit.sandbox.spec import SandboxSpec, load_sandbox_spec
from tests.property import strategies as S
from tests.property.support import budget, call

REPO = Path(__file__).resolve().parents[2]
DIGITS_CONFIG = yaml.safe_load((REPO / "competitions" / "sklearn-digits" / "config.yaml").read_text(encoding="utf-8"))
safe_text = S.short_text.map(S.no_surrogates)
yaml_any = st.one_of(S.yaml_value, safe_text)

# ------------------------------------------------------------------ hostile YAML, every YAML loader


def _load_rules(folder: Path, data: bytes):
    (folder / "llm-api").mkdir()
    (folder / "llm-api" / "llm-x.yaml").write_bytes(data)
    return load_ruleset([folder])


def _load_competition(folder: Path, data: bytes):
    competition = folder / "sklearn-digits"
    competition.mkdir()
    (competition / "config.yaml").write_bytes(data)
    return load_competition_spec(competition)


def _load_sandbox(folder: Path, data: bytes):
    (folder / "spec.yaml").write_bytes(data)
    return load_sandbox_spec(folder / "spec.yaml")


YAML_LOADERS = {
    "load_ruleset": (_load_rules, (RuleError, AuditConfigError)),
    "load_competition_spec": (_load_competition, (ConfigError,)),
    "load_sandbox_spec": (_load_sandbox, (SpecError,)),
}


@pytest.mark.parametrize("loader", sorted(YAML_LOADERS))
@budget(25)
@given(data=S.hostile_yaml)
def test_yaml_loaders_raise_only_their_named_error_on_hostile_yaml(loader, data):
    load, allowed = YAML_LOADERS[loader]
    with tempfile.TemporaryDirectory() as folder:
        call(load, Path(folder), S.yaml_case_bytes(data), allowed=allowed, what=loader)


# ------------------------------------------------------------------ competition configs

METRIC_NAMES = tuple(sorted(METRICS))
#: Scoring parameters and values of every shape (keys that are not strings included: YAML allows them).
metric_params = st.dictionaries(
    st.one_of(st.sampled_from(["extra_columns", "column_order", "id_match", "missing_values", "row_mask", "value_range",
                               "row_sum_tolerance", "unscored_columns", "answer_columns", "id_columns", "repeated_ids",
                               "extra_ids", "as_text", "k", "nope"]), st.integers(), st.booleans(), st.none()),
    st.one_of(st.sampled_from(["error", "ignore", "any", "id_first", "as_listed", "number", "exact", "nan_text",
                               "in_order"]), yaml_any,
              st.builds(lambda c, e: {"column": c, "equals": e}, yaml_any, yaml_any),
              st.lists(st.one_of(st.integers(), st.floats(), safe_text), max_size=3)),
    max_size=3,
)


ASPECTS = ("metric", "params", "fields", "paths", "optional", "checksums", "kernels")


@st.composite
def competition_folder(draw, aspect: str) -> tuple[str, bytes, bytes | None, bytes | None]:
    """(folder name, config.yaml, checksums.yaml or None, kernels.txt or None): the embedded
    ``sklearn-digits`` config with one ``aspect`` changed (each aspect is reached often)."""
    config = copy.deepcopy(DIGITS_CONFIG)
    config.pop("prepare")
    metric = config["metric"]
    checksums = kernels = None
    name = "sklearn-digits"
    if aspect == "metric":
        metric["name"] = draw(st.one_of(st.sampled_from(METRIC_NAMES), safe_text))
        metric["higher_is_better"] = draw(st.one_of(st.just(METRICS[metric["name"]].higher_is_better)
                                                    if metric["name"] in METRICS else st.booleans(), yaml_any))
        name = draw(st.sampled_from(["sklearn-digits", "other-id"]))
    elif aspect == "params":
        metric["name"] = draw(st.sampled_from(METRIC_NAMES))
        metric["higher_is_better"] = METRICS[metric["name"]].higher_is_better
        metric["params"] = draw(metric_params)
    elif aspect == "fields":
        for _ in range(draw(st.integers(1, 2))):
            field = draw(st.sampled_from(["id", "name", "metric", "id_column", "target_columns", "dataset",
                                          "leaderboard", "kernels", "description", "nope"]))
            config[field] = draw(yaml_any)
    elif aspect == "paths":
        for section, field in draw(st.lists(st.sampled_from([("dataset", "answers"), ("dataset", "sample_submission"),
                                                             ("dataset", "raw_files"), ("leaderboard", "path"),
                                                             ("leaderboard", "source")]), min_size=1, max_size=2)):
            config[section][field] = draw(st.one_of(yaml_any, st.sampled_from(["../x.csv", "/abs.csv", "a\\b.csv", "a\x00b"])))
        config["kernels"] = draw(st.one_of(st.just("kernels"), st.sampled_from(["../k", "/k", "k\x00"]), yaml_any))
    elif aspect == "optional":
        config.update(draw(S._obj(
            prepare=st.sampled_from(["prepare.py:prepare", "missing.py:f", "a.py:b:c", "x"]),
            awards_medals=yaml_any, competition_type=st.sampled_from(["simple", "code", "other"]) | yaml_any,
            splits=st.lists(st.sampled_from(["low", "Lite", "dev", ""]), max_size=2) | yaml_any,
            audit=S._obj(allow_urls=st.lists(st.sampled_from(["download.pytorch.org", "x", "https://a.b/c", "*.b"]), max_size=2),
                         label_leak_columns=st.lists(safe_text, max_size=2) | yaml_any,
                         public_data_dirs=st.lists(safe_text, max_size=2) | yaml_any, nope=yaml_any) | yaml_any,
        )))
    elif aspect == "checksums":
        checksums = draw(st.one_of(S.yaml_bytes(st.one_of(
            st.fixed_dictionaries({"public": st.dictionaries(st.one_of(safe_text, st.integers()), st.sampled_from(["0" * 32, "x", 5]), max_size=2),
                                   "private": st.dictionaries(safe_text, yaml_any, max_size=2)},
                                  optional={"raw": yaml_any, "zip": yaml_any, "nope": yaml_any}),
            yaml_any))))
    else:
        config["kernels_list"] = draw(st.sampled_from(["kernels.txt", "kernels.txt", "../kernels.txt", "none.txt"]))
        kernels = draw(st.one_of(
            st.lists(st.sampled_from(["owner/slug", "owner/slug", "# c", "", "https://x/y", "a/b/c", "o/s\u2028x"]) | safe_text,
                     max_size=4).map(lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass")),
            st.binary(max_size=32)))
    return name, draw(S.yaml_bytes(st.just(config))), checksums, kernels


@pytest.mark.parametrize("aspect", ASPECTS)
@budget(40)
@given(data=st.data())
def test_load_competition_spec_raises_only_config_error(aspect, data):
    name, config, checksums, kernels = data.draw(competition_folder(aspect), label="competition folder")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / name
        root.mkdir()
        (root / "config.yaml").write_bytes(config)
        if checksums is not None:
            (root / "checksums.yaml").write_bytes(checksums)
        if kernels is not None:
            (root / "kernels.txt").write_bytes(kernels)
        spec, error = call(load_competition_spec, root, allowed=(ConfigError,), what="load_competition_spec")
    if error is not None:
        assert isinstance(error, GradingError)
        return
    assert isinstance(spec, CompetitionSpec) and spec.id == name


# ------------------------------------------------------------------ sandbox specs

host_path = st.one_of(st.sampled_from(["data", "/data/public", "~", "~/agent", "~nosuchuser8/x", "../up", "a\x00b", "",
                                       "/", "~root"]), safe_text, yaml_any)
sizes = st.one_of(st.sampled_from(["512m", "4g", "1.5GiB", "0", "-1", "1e3", "9" * 400, "²", "١٢", "inf"]),
                  st.integers(), st.integers(min_value=10**300, max_value=10**400), st.floats(), yaml_any)
gpus = st.one_of(st.sampled_from(["all", "2", "²", "٣", "0,1", "device=0,1", "device=", ",", "none", ""]), st.integers(),
                 st.lists(yaml_any, max_size=3), st.dictionaries(st.one_of(st.sampled_from(["count", "device_ids"]),
                                                                           st.integers()), yaml_any, max_size=2), yaml_any)
#: One strategy per sandbox spec key (``sandbox/spec/``), each leaning on the values its
#: converter has to refuse.
SANDBOX_FIELDS = {
    "command": st.one_of(st.sampled_from(["python3 /home/agent/solve.py", "", " "]), st.lists(safe_text, max_size=3), yaml_any),
    "image": yaml_any, "competition": yaml_any, "agent": yaml_any, "data": host_path, "agent_dir": host_path,
    "mounts": st.one_of(st.lists(st.one_of(S._obj(source=host_path,
                                                  target=st.sampled_from(["/mnt/x", "x", "/home", "/..", "/mnt/../etc"]) | yaml_any,
                                                  read_only=yaml_any), yaml_any), max_size=2), yaml_any),
    "hide": st.one_of(st.lists(host_path, max_size=2), yaml_any),
    "env": st.one_of(st.dictionaries(st.one_of(st.sampled_from(["PATH", "1X", "A B"]), st.integers()), yaml_any, max_size=2),
                     yaml_any),
    "gpus": gpus,
    "resources": st.one_of(S._obj(cpus=st.one_of(st.floats(), st.integers(min_value=10**300, max_value=10**400), yaml_any),
                                  memory=sizes, shm=sizes, pids=st.one_of(st.integers(), yaml_any)), yaml_any),
    "network": st.one_of(st.sampled_from(["none", "host"]),
                         S._obj(allow=st.lists(st.sampled_from(["pypi.org", "*.a.b", "h:99999", "h:٣", "a:1:2"]) | safe_text,
                                               max_size=2),
                                mode=st.sampled_from(["none", "allowlist", "open"]) | yaml_any), yaml_any),
    "time_limit": st.one_of(st.sampled_from(["2h", "90s", "0", "1.5d", "x"]), sizes),
    "user": st.one_of(st.sampled_from(["1000", "1000:1000", "٣", "root"]), yaml_any),
    "workdir": st.one_of(st.sampled_from(["/home", "home", ""]), yaml_any),
    "nope": yaml_any,
}


def _spec_with(field: str) -> st.SearchStrategy[dict]:
    """A spec with a valid command and ``field`` drawn from its strategy."""
    return st.builds(lambda value: {"command": "python3 /home/agent/solve.py", field: value}, SANDBOX_FIELDS[field])


@pytest.mark.parametrize("field", sorted(SANDBOX_FIELDS))
@budget(60)
@given(data=st.data())
def test_load_sandbox_spec_raises_only_spec_error(field, data):
    """One key at a time, so that each key's converter is reached often and each bug on its own."""
    document = data.draw(st.one_of(S.yaml_bytes(_spec_with(field)), S.yaml_bytes(yaml_any)) if field == "nope"
                         else S.yaml_bytes(_spec_with(field)), label="spec.yaml")
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "spec.yaml").write_bytes(document)
        spec, error = call(load_sandbox_spec, Path(folder) / "spec.yaml", allowed=(SpecError,), what="load_sandbox_spec")
    if error is not None:
        assert isinstance(error, SandboxError)
        return
    assert isinstance(spec, SandboxSpec) and spec.command


# ------------------------------------------------------------------ reviewer baselines

decision = S._obj(
    fingerprint=st.one_of(st.sampled_from(["a" * 64, "A" * 64, "a" * 63, "a" * 64 + "\n"]), S.json_leaf),
    decision=st.one_of(st.sampled_from(["confirmed", "dismissed", "maybe"]), S.json_leaf, st.lists(S.json_leaf, max_size=2)),
    note=st.one_of(S.nasty_text, S.json_leaf), rule_id=S.json_leaf, run_id=S.json_leaf, location=S.json_leaf,
    decided_by=S.json_leaf, decided_at=S.json_leaf, extra=S.json_leaf,
)
baseline_document = st.one_of(
    st.builds(lambda version, decisions: {"version": version, "decisions": decisions},
              st.one_of(st.just(1), S.json_leaf), st.one_of(st.lists(st.one_of(decision, S.json_leaf), max_size=3), S.json_leaf)),
    S.json_value,
)


@budget(80)
@given(st.one_of(S.json_text(baseline_document).map(lambda t: t.encode("utf-8", "surrogatepass")), st.binary(max_size=64)))
def test_load_baseline_raises_only_baseline_error(data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "baseline.json"
        path.write_bytes(data)
        baseline, error = call(load_baseline, path, allowed=(BaselineError,), what="load_baseline")
    if error is not None:
        assert isinstance(error, AuditError)
        return
    assert isinstance(baseline, Baseline)
    for item in baseline.decisions:
        assert item.decision in ("confirmed", "dismissed") and len(item.fingerprint) == 64
    json.dumps(baseline.to_dict())
