"""Text gates and grouped evaluation: a rule skips only units and events where it finds nothing."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mleaudit.audit.model import Span
from mleaudit.audit.rules.engine import evaluate, evaluate_ruleset
from mleaudit.audit.rules.loader import load_ruleset
from mleaudit.audit.rules.matchers import Subject
from mleaudit.audit.rules.matchers.gate import ALWAYS, NEVER, text_gate
from mleaudit.audit.rules.policy import RulePolicy
from mleaudit.audit.rules.prefilter import UNFOLDABLE, FoldedTexts
from mleaudit.audit.rules.spec import Target
from mleaudit.audit.units import Actor, CodeUnit, LogEvent, LogEventKind

from .conftest import make_rule

REPO = Path(__file__).resolve().parents[3]
LANGUAGES = (None, "python", "bash")


@pytest.fixture(scope="module")
def ruleset():
    return load_ruleset()


def _text_rules(ruleset):
    return [r for r in ruleset if any(t in (Target.CODE, Target.LOG, Target.FILE) for t in r.spec.targets)]


def _case_texts() -> list[str]:
    texts = []
    for path in sorted((REPO / "rules").rglob("*.test.yaml")):
        cases = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for key in ("invalid", "valid", "todo"):
            for case in cases.get(key) or []:
                if isinstance(case, str):
                    texts.append(case)
                elif isinstance(case, dict):
                    texts.extend(v for k, v in case.items() if k in ("code", "log", "file") and isinstance(v, str))
    return texts


CASES = _case_texts()


def _literals(ruleset) -> list[str]:
    found = set()
    for rule in _text_rules(ruleset):
        for language in LANGUAGES:
            for clause in text_gate(rule.matcher, language).clauses:
                found.update(clause.literals)
    return sorted(found)


RULES = load_ruleset()
_LITERALS = _literals(RULES)
_PIECES = st.one_of(
    st.sampled_from(CASES),
    st.sampled_from(_LITERALS).map(lambda s: s.upper() if len(s) % 2 else s),
    st.text(alphabet=st.sampled_from(list(" \n\t\"'()=.:/-_$;|&#" + "aeiksz" + UNFOLDABLE + "ΣéK")), max_size=12),
)
TEXTS = st.lists(_PIECES, min_size=1, max_size=6).map(" ".join)


def _check_sound(rule, language, text) -> None:
    gate = text_gate(rule.matcher, language)
    if gate.open(text, FoldedTexts()):
        return
    subject = Subject(text=text, language=language, path="x")
    assert rule.matcher.find(subject) == [], (rule.id, language, text[:300])
    assert subject.unevaluated == [], (rule.id, language, text[:300])


def test_a_closed_gate_means_the_matcher_finds_nothing_in_the_rule_cases(ruleset):
    for rule in _text_rules(ruleset):
        for language in LANGUAGES:
            for text in CASES:
                _check_sound(rule, language, text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TEXTS)
def test_a_closed_gate_means_the_matcher_finds_nothing(text):
    for rule in _text_rules(RULES):
        for language in LANGUAGES:
            _check_sound(rule, language, text)


def test_gates_are_useful(ruleset):
    by_id = {r.id: r for r in ruleset}
    report = by_id["leak-grader-report"].matcher
    assert not text_gate(report, None).open("epoch 3 loss 0.12", FoldedTexts())
    assert text_gate(report, None).open("gold_medal: true", FoldedTexts())
    assert text_gate(by_id["ext-kaggle-api-download"].matcher, None) is NEVER or \
        text_gate(by_id["ext-kaggle-api-download"].matcher, None).never
    assert text_gate(by_id["env-container-escape"].matcher, "bash") is not ALWAYS
    # A text with a character that case folding maps onto ASCII is always searched.
    assert text_gate(report, None).open("\u212a" + "epoch 3", FoldedTexts())


def _units_and_events(texts, rnd):
    units, events = [], []
    kinds, actors = list(LogEventKind), list(Actor)
    for i, text in enumerate(texts):
        language = rnd.choice(LANGUAGES)
        path = rnd.choice(["logs/run.log", "logs/grading_report.json", "code/a.py", "code/b.sh"])
        events.append(LogEvent(index=i, kind=rnd.choice(kinds), text=text, language=language,
                               span=Span.from_offsets(text, path, 0, len(text)), actor=rnd.choice(actors)))
        if language is not None:
            units.append(CodeUnit(path=path, language=language, text=text, actor=rnd.choice(actors)))
    # Repeated texts under other kinds and actors, as agent logs repeat them.
    for event in list(events[: len(events) // 2]):
        events.append(LogEvent(index=len(events), kind=rnd.choice(kinds), text=event.text, language=event.language,
                               span=event.span, actor=rnd.choice(actors)))
    return units, events


def _outcome(ruleset, units, events, policy):
    result = evaluate_ruleset(ruleset, code_units=units, log_events=events, run_id="r", policy=policy,
                              include_experimental=True)
    return ([f.to_dict() if hasattr(f, "to_dict") else repr(f) for f in result.findings],
            [repr(f) for f in result.allowlisted], [repr(e) for e in result.errors], result.evaluated_rules)


def _same_both_ways(ruleset, units, events, monkeypatch, policy=None):
    grouped = _outcome(ruleset, units, events, policy)
    with monkeypatch.context() as m:
        m.setattr(evaluate, "_GROUPED", False)
        plain = _outcome(ruleset, units, events, policy)
    assert grouped == plain
    return grouped


def test_grouped_evaluation_finds_what_every_rule_finds_on_every_event(ruleset, monkeypatch):
    rnd = random.Random(3)
    texts = CASES + [rnd.choice(CASES) + "\n" + rnd.choice(CASES) for _ in range(100)]
    units, events = _units_and_events(texts, rnd)
    findings, _, _, _ = _same_both_ways(ruleset, units, events, monkeypatch,
                                        policy=RulePolicy.from_mapping({"label_leak_columns": ["target", "label"], "allow_urls": ["https://github.com/"]}))
    assert len(findings) > 50  # the cases hold plenty of matches: the comparison means something


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.lists(TEXTS, min_size=1, max_size=12), st.randoms(use_true_random=False))
def test_grouped_evaluation_is_the_plain_one_on_generated_texts(ruleset, monkeypatch, texts, rnd):
    units, events = _units_and_events(texts, rnd)
    _same_both_ways(ruleset, units, events, monkeypatch)


def test_a_child_that_notes_what_it_could_not_run_keeps_later_children_running(monkeypatch):
    # The query has a pattern with no literal: on a tree too deep to query it notes so (an
    # evaluation error of the rule) even though the regex after it could never match.
    rule = make_rule({"match": {"all": [{"query": {"python": "(call function: (identifier) @x)"}},
                                        {"regex": r"zz_never_there_zz"}]}, "focus": None, "message": "m"})
    deep = "x = " + "(" * 1200 + "1" + ")" * 1200 + "\nprint(1)\n"
    units = [CodeUnit(path="code/deep.py", language="python", text=deep)]
    assert text_gate(rule.matcher, "python").clauses == ()  # nothing required: the query notes first
    _, _, errors, _ = _same_both_ways([rule], units, [], monkeypatch)
    assert errors and "NotEvaluated" in errors[0]
    quiet = make_rule({"id": "ext-quiet", "match": {"all": [{"regex": r"print"}, {"regex": r"zz_never_there_zz"}]},
                       "focus": None, "message": "m"})
    assert not text_gate(quiet.matcher, "python").open(deep, FoldedTexts())
