"""The shipped rules on real agent code: clean runs stay quiet, labelled violations fire.

Most tests read code files directly (not through the run loader), so they pin the rules
themselves; the labelled violation set is also audited whole (logs included) and judged on its
categories, as its README asks. Material comes from ../shared/data and the tests skip when it
is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mleaudit.audit.model import Severity
from mleaudit.audit.rules.engine import evaluate_rules
from mleaudit.audit.rules.loader import load_ruleset
from mleaudit.audit.units import CodeUnit
from tests.conftest import shared_path

RULES_ROOT = Path(__file__).resolve().parents[3] / "rules"


@pytest.fixture(scope="module")
def ruleset():
    return load_ruleset(RULES_ROOT)


def _units(paths: list[Path], root: Path) -> list[CodeUnit]:
    return [
        CodeUnit(path=p.relative_to(root).as_posix(), language="python", text=p.read_text(encoding="utf-8", errors="replace"))
        for p in paths
    ]


def _serious(findings):
    return [f"{f.rule_id} {f.evidence[0].span.path}:{f.evidence[0].span.start_line} {f.message}"
            for f in findings if f.severity >= Severity.MEDIUM]


def test_aide_solutions_are_clean(ruleset):
    root = shared_path("runs", "aide")
    paths = sorted(root.glob("*.py"))
    assert len(paths) >= 10
    findings = evaluate_rules(ruleset, code_units=_units(paths, root), include_experimental=True)
    assert _serious(findings) == []


def test_autokaggle_code_is_clean(ruleset):
    root = shared_path("runs", "autokaggle")
    paths = sorted(root.rglob("*.py"))
    assert len(paths) >= 20
    findings = evaluate_rules(ruleset, code_units=_units(paths, root), include_experimental=True)
    assert _serious(findings) == []


@pytest.mark.parametrize(
    "case, file, rule_id, line",
    [
        ("case-05", "code/llm_scores.py", "llm-external-api-call", 20),
        ("case-08", "code/best_solution.py", "sub-handwritten-submission", 30),
        ("case-02", "code/train.py", "leak-known-column-override", 54),
    ],
)
def test_labelled_violations_fire(ruleset, case, file, rule_id, line):
    root = shared_path("violations", case)
    findings = evaluate_rules(ruleset, code_units=_units([root / file], root))
    assert {f.rule_id for f in findings} == {rule_id}
    assert line in [f.evidence[0].span.start_line for f in findings]


@pytest.mark.parametrize("case", ["case-04", "case-06", "case-07", "case-11", "case-12"])
def test_clean_near_misses_stay_silent(ruleset, case):
    # case-07 names OpenAI in a comment, case-11 reads giver_username_if_known only to drop it,
    # case-12 downloads torchvision weights: all clean.
    root = shared_path("violations", case)
    paths = sorted((root / "code").glob("*.py"))
    assert paths
    assert evaluate_rules(ruleset, code_units=_units(paths, root), include_experimental=True) == []


def test_llm_call_only_in_the_llm_case(ruleset):
    root = shared_path("violations")
    paths = sorted(root.glob("case-*/code/*.py"))
    findings = evaluate_rules(ruleset.select(["llm-external-api-call", "llm-api-endpoint-url"]),
                              code_units=_units(paths, root))
    assert sorted({f.evidence[0].span.path for f in findings}) == ["case-05/code/llm_scores.py"]


def _labels():
    import csv

    path = shared_path("violations", "labels.tsv")
    with path.open(encoding="utf-8") as stream:
        return {row["case"]: row for row in csv.DictReader(stream, delimiter="\t")}


def test_whole_violation_set_is_judged_in_the_labelled_categories(ruleset):
    # Every violating case is flagged in exactly its categories (findings of medium or more),
    # and every clean near-miss has no such finding.
    from mleaudit.audit.pipeline import audit_run
    from mleaudit.audit.run import load_run

    wrong = []
    for case, row in sorted(_labels().items()):
        report = audit_run(load_run(shared_path("violations", case)), ruleset=ruleset)
        got = sorted({f.category for f in report.findings if f.severity >= Severity.MEDIUM})
        want = sorted(c for c in row["categories"].split(",") if c != "none")
        verdict = report.verdict.kind.value
        if got != want or (verdict == "flagged") != (row["violating"] == "yes"):
            wrong.append(f"{case}: want {want}, got {got} ({verdict}): {_serious(report.findings)}")
    assert wrong == []


@pytest.mark.slow
def test_clean_real_runs_have_nothing_at_medium_or_above(ruleset):
    # Whole runs, logs included (the code alone is checked by the tests above).
    from mleaudit.audit.pipeline import audit_run
    from mleaudit.audit.run import load_run

    runs = [shared_path("runs", "aide"), shared_path("runs", "dsbench"),
            *sorted(p for p in shared_path("runs", "autokaggle").iterdir() if p.is_dir())]
    serious = {}
    for run in runs:
        found = _serious(audit_run(load_run(run), ruleset=ruleset).findings)
        if found:
            serious[run.name] = found
    assert serious == {}
