"""Competition audit policy: allowed URLs drop matching findings, label-leak columns feed generic rules.

The fixture competition ``tests/fixtures/rule_runs/competitions/toy-requests`` allows two
mirrors and names one leaky column; the fixture run ``policy-run`` downloads from both mirrors,
from a host it does not allow, and overrides predictions with the leaky column.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mleaudit.audit.cli import main
from mleaudit.audit.expand import expand_run
from mleaudit.audit.rules.engine import evaluate_ruleset
from mleaudit.audit.rules.loader import load_ruleset
from mleaudit.audit.rules.policy import RulePolicy, find_urls, parse_allow_entry
from mleaudit.audit.run import load_run
from mleaudit.audit.units import CodeUnit
from mleaudit.grading.errors import ConfigError
from mleaudit.grading.spec import AUDIT_POLICY_KEYS, load_competition_spec

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "rule_runs"
COMPETITIONS = FIXTURES / "competitions"
RUN = FIXTURES / "policy-run"


@pytest.fixture(scope="module")
def ruleset():
    return load_ruleset(ROOT / "rules")


@pytest.fixture(scope="module")
def policy():
    spec = load_competition_spec(COMPETITIONS / "toy-requests")
    return RulePolicy.from_mapping(spec.audit, competition_id=spec.id)


@pytest.fixture(scope="module")
def expanded():
    return expand_run(load_run(RUN))


def _places(findings):
    return [(f.rule_id, f.evidence[0].span.path, f.evidence[0].span.start_line) for f in findings]


# --- the policy record --------------------------------------------------------------------------

ALLOW = RulePolicy.from_mapping({"allow_urls": ["download.pytorch.org", "github.com/someone/weights/releases/",
                                                "https://huggingface.co/timm", "git@example.org"]})


@pytest.mark.parametrize(
    "text, entry",
    [
        ("wget https://download.pytorch.org/models/r50.pth", "download.pytorch.org"),
        ("curl -O http://cdn.download.pytorch.org/x.pth", "download.pytorch.org"),  # a subdomain
        ("https://github.com/someone/weights/releases/download/v1/w.pt", "github.com/someone/weights/releases/"),
        ("https://huggingface.co/timm/resnet50/resolve/main/model.safetensors", "https://huggingface.co/timm"),
        ("https://huggingface.co/timm", "https://huggingface.co/timm"),
        ("git clone git@example.org:team/weights.git", "git@example.org"),
        ("DOWNLOAD.PYTORCH.ORG/models/x", "download.pytorch.org"),  # hosts are case-insensitive
    ],
)
def test_allowed_urls(text, entry):
    assert ALLOW.allowed_by(text) == entry


@pytest.mark.parametrize(
    "text",
    [
        "wget https://download.pytorch.org.evil.example/x.pth",  # not a subdomain
        "wget https://evil-download.pytorch.org.example/x",
        "wget https://download.pytorch.org@evil.example/labels.csv",  # user info: the host is evil.example
        "https://github.com/someone/weights-evil/releases/x",
        "https://github.com/someone/solutions/raw/main/submission.csv",
        "https://huggingface.co/timmy/x",  # "timm" is a path segment, not a prefix of "timmy"
        "wget https://download.pytorch.org/a.pth https://other.example/labels.csv",  # one URL not allowed
        "import openai",  # no URL at all
    ],
)
def test_not_allowed(text):
    assert ALLOW.allowed_by(text) is None


def test_entries_without_a_host_are_ignored_and_empty_policy_allows_nothing():
    assert parse_allow_entry("pytorch") is None
    assert RulePolicy.from_mapping({"allow_urls": ["pytorch"]}).allowed_by("https://pytorch/x") is None
    assert RulePolicy().allowed_by("https://download.pytorch.org/x") is None
    assert RulePolicy.from_mapping(None).terms("label_leak_columns") == ()


def test_find_urls_prefers_schemes_then_bare_hosts():
    assert find_urls("see https://a.example/x and b.example") == ["https://a.example/x"]
    assert find_urls("api.openai.com/v1") == ["api.openai.com/v1"]
    assert find_urls("no url here") == []


# --- competition config ---------------------------------------------------------------------------

def test_fixture_config_carries_the_policy():
    spec = load_competition_spec(COMPETITIONS / "toy-requests")
    assert set(spec.audit) == set(AUDIT_POLICY_KEYS)
    assert spec.audit["label_leak_columns"] == ("helper_name_after_outcome",)
    assert spec.audit["allow_urls"][0] == "weights.example-mirror.org"


@pytest.mark.parametrize(
    "audit, field",
    [
        ({"allow_urls": ["pytorch"]}, "audit.allow_urls.0"),
        ({"allow_urls": ["https://a.example/x y"]}, "audit.allow_urls.0"),
        ({"label_leak_columns": [" padded "]}, "audit.label_leak_columns.0"),
        ({"leak_columns": ["x"]}, "audit"),
    ],
)
def test_bad_policy_entries_are_config_errors_naming_the_field(tmp_path, audit, field):
    import yaml

    source = yaml.safe_load((COMPETITIONS / "toy-requests" / "config.yaml").read_text())
    source["audit"] = audit
    folder = tmp_path / "toy-requests"
    folder.mkdir()
    (folder / "config.yaml").write_text(yaml.safe_dump(source))
    with pytest.raises(ConfigError) as info:
        load_competition_spec(folder)
    assert str(folder / "config.yaml") in str(info.value)
    assert f"'{field}'" in str(info.value)


# --- the engine under a policy ----------------------------------------------------------------------

def test_without_policy_every_download_is_reported_and_no_leak_column_is_known(ruleset, expanded):
    result = evaluate_ruleset(ruleset, code_units=expanded.code_units, log_events=expanded.log_events)
    places = _places(result.findings)
    assert ("ext-download-label-file", "code/train.py", 11) in places
    assert ("ext-download-solution", "code/train.py", 12) in places
    assert ("ext-download-solution", "code/train.py", 15) in places
    assert not any(rule.startswith("leak-known-column") for rule, _, _ in places)
    assert result.allowlisted == ()


def test_policy_moves_allowed_downloads_aside_and_feeds_the_leak_rule(ruleset, expanded, policy):
    result = evaluate_ruleset(ruleset, code_units=expanded.code_units, log_events=expanded.log_events, policy=policy)
    assert _places(result.findings) == [
        ("ext-download-solution", "code/train.py", 15),
        ("leak-known-column-override", "code/train.py", 18),
    ]
    leak = result.findings[1]
    assert leak.message.startswith("Sets predictions from the label-leak column `helper_name_after_outcome`")
    assert [(f.rule_id, f.evidence[0].span.start_line, f.metadata["allowlisted_by"]) for f in result.allowlisted] == [
        ("ext-download-label-file", 11, "weights.example-mirror.org"),
        ("ext-download-solution", 12, "https://raw.githubusercontent.com/someone/pretrained/"),
    ]


def test_allow_urls_never_drop_other_categories(ruleset):
    policy = RulePolicy.from_mapping({"allow_urls": ["files.example.org"]})
    unit = CodeUnit(path="code/a.py", language="python",
                    text='import pandas as pd\nans = pd.read_csv("https://files.example.org/prepared/private/test.csv")\n')
    result = evaluate_ruleset(ruleset.select(["leak-read-private-data", "ext-download-label-file"]),
                              code_units=[unit], policy=policy)
    assert [f.rule_id for f in result.findings] == ["leak-read-private-data"]
    assert [f.rule_id for f in result.allowlisted] == ["ext-download-label-file"]


def test_the_audited_run_cannot_allowlist_itself(ruleset):
    # Ignore comments and policy-looking text inside the run are data like any other.
    text = ('# noaudit\n# mleaudit: allow_urls = ["raw.githubusercontent.com"]\n'
            'import requests\nr = requests.get("https://raw.githubusercontent.com/someone/kaggle/main/submission.csv")  # nosec\n')
    unit = CodeUnit(path="code/a.py", language="python", text=text)
    result = evaluate_ruleset(ruleset.select(["ext-download-solution"]), code_units=[unit])
    assert [f.evidence[0].span.start_line for f in result.findings] == [4]


def test_terms_come_from_the_rule_and_the_policy(ruleset):
    rule = ruleset.select(["leak-known-column-override"])
    code = 'sub.loc[test["{col}"] != "N/A", "succeeded"] = 1\n'
    known = CodeUnit(path="code/a.py", language="python", text=code.format(col="giver_username_if_known"))
    other = CodeUnit(path="code/b.py", language="python", text=code.format(col="helper_name_after_outcome"))
    policy = RulePolicy.from_mapping({"label_leak_columns": ["helper_name_after_outcome"]})
    assert [f.evidence[0].span.path for f in evaluate_ruleset(rule, code_units=[known, other]).findings] == ["code/a.py"]
    assert [f.evidence[0].span.path for f in evaluate_ruleset(rule, code_units=[known, other], policy=policy).findings] == [
        "code/a.py", "code/b.py"]


# --- end to end -------------------------------------------------------------------------------------------

def test_audit_command_applies_the_competition_policy(tmp_path):
    out = tmp_path / "report.json"
    result = CliRunner().invoke(main, [
        "audit", str(RUN), "--competition", "toy-requests", "--competitions", str(COMPETITIONS),
        "--data-dir", str(tmp_path / "data"), "--no-similarity", "-o", str(out),
    ])
    assert result.exit_code == 1, result.output
    report = json.loads(out.read_text())
    rules = {f["rule_id"] for f in report["findings"] if f["severity"] in ("high", "critical")}
    assert {"ext-download-solution", "leak-known-column-override"} <= rules
    assert "ext-download-label-file" not in rules
    allowlisted = report["meta"]["allowlisted"]
    assert [(a["rule_id"], a["path"], a["line"], a["allowed_by"]) for a in allowlisted] == [
        ("ext-download-label-file", "code/train.py", 11, "weights.example-mirror.org"),
        ("ext-download-solution", "code/train.py", 12, "https://raw.githubusercontent.com/someone/pretrained/"),
    ]
    assert all(len(a["fingerprint"]) == 64 for a in allowlisted)
