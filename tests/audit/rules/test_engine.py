"""Engine: target filters, host-file evidence, templating, dedupe, sorting, robustness."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.model import Confidence, Severity, Span
from mleaudit.audit.rules.engine import EvaluationError, evaluate_rules, evaluate_ruleset, finding_order, render_message
from mleaudit.audit.units import CellRange, CodeUnit, LogEvent, LogEventKind

from .conftest import make_rule

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "rule_runs"

KAGGLE = {"match": {"regex": r"(?P<x>kaggle competitions download)"}, "focus": "x"}


def _unit(text, path="code/a.py", language="python", **kwargs):
    return CodeUnit(path=path, language=language, text=text, **kwargs)


def test_render_message_truncates_escapes_and_tolerates_gaps():
    assert render_message("`{x}`", {"x": "a\nb\r\nc"}) == "`a\\nb\\nc`"
    long = render_message("{x}", {"x": "y" * 500})
    assert len(long) == 200 and long.endswith("…")
    assert render_message("{x} {missing}", {"x": 1}) == "1 ?"
    assert render_message("{share:.0%} of {n} k-grams", {"share": 0.456, "n": 40}) == "46% of 40 k-grams"
    assert render_message("{x:.0%}", {"x": "text"}) == "text"
    assert render_message("{x.attr}", {"x": "a"}) == "{x.attr}"


def test_code_finding_fields_and_message():
    rule = make_rule({**KAGGLE, "metadata": {"rationale": "r", "references": ["https://example.org/k"]}})
    [finding] = evaluate_rules([rule], code_units=[_unit('import os\nos.system("kaggle competitions download -c t")\n')],
                               run_id="run-1")
    assert finding.rule_id == "ext-test" and finding.title == "Test rule"
    assert finding.category == "external-resource"
    assert finding.severity is Severity.HIGH and finding.confidence is Confidence.MEDIUM
    assert finding.message == "found kaggle competitions download"
    assert finding.run_id == "run-1"
    assert finding.metadata == {"references": ["https://example.org/k"]}
    [evidence] = finding.evidence
    assert evidence.label == "x"
    assert (evidence.span.path, evidence.span.start_line, evidence.span.start_col) == ("code/a.py", 2, 12)
    assert evidence.excerpt == 'import os\nos.system("kaggle competitions download -c t")\n'
    assert len(finding.fingerprint) == 64


def test_fingerprint_ignores_line_shifts_and_neighbours():
    rule = make_rule(KAGGLE)
    [a] = evaluate_rules([rule], code_units=[_unit('x = 1\n!kaggle competitions download\ny = 2\n')])
    [b] = evaluate_rules([rule], code_units=[_unit('\n\nz = 3\n!kaggle competitions download\nw = 4\n')])
    assert a.evidence[0].span.start_line != b.evidence[0].span.start_line
    assert a.fingerprint == b.fingerprint


def test_shipped_rules_fingerprints_survive_shifted_lines_in_code_and_logs():
    from mleaudit.audit.logs.text import read_events
    from mleaudit.audit.rules.loader import load_ruleset

    ruleset = load_ruleset(Path(__file__).resolve().parents[3] / "rules")
    code = ('import requests\nurl = "https://api." + "openai.com/v1/chat/completions"\n'
            'r = requests.post(url, json=payload)\nsub.loc[17, "target"] = 1\n')
    log = "$ kaggle competitions download -c titanic\n$ sudo -n ls /root\n"

    def fingerprints(prefix):
        units = [_unit(prefix + code, path="code/a.py")]
        events = read_events("logs/agent.log", prefix.replace("x = 0", "$ ls") + log)
        found = evaluate_rules(ruleset, code_units=units, log_events=events)
        return {(f.rule_id, f.fingerprint) for f in found}, {f.evidence[0].span.start_line for f in found}

    before, lines_before = fingerprints("")
    after, lines_after = fingerprints("x = 0\n" * 7)
    assert {rule for rule, _ in before} >= {"llm-assembled-endpoint", "sub-edit-sample-submission",
                                             "ext-kaggle-cli-download", "env-sudo-command"}
    assert before == after
    assert lines_before.isdisjoint(lines_after)


def test_findings_are_deterministic_whatever_the_input_order():
    rules = [make_rule({**KAGGLE, "id": f"ext-{name}", "severity": severity})
             for name, severity in (("b", "high"), ("a", "high"), ("c", "critical"))]
    units = [_unit("!kaggle competitions download\n!kaggle competitions download\n", path=f"code/{n}.py")
             for n in ("z", "a", "m")]
    first = evaluate_rules(rules, code_units=units)
    second = evaluate_rules(list(reversed(rules)), code_units=list(reversed(units)))
    assert first == second
    assert [f.rule_id for f in first][:2] == ["ext-c", "ext-c"]
    assert first == sorted(first, key=finding_order)
    keys = [(f.rule_id, f.evidence[0].span.path, f.evidence[0].span.start_byte) for f in first]
    assert len(keys) == len(set(keys)) == 3 * 3 * 2


def test_evaluate_ruleset_without_policy_has_nothing_allowlisted():
    result = evaluate_ruleset([make_rule(KAGGLE)], code_units=[_unit("!kaggle competitions download\n")])
    assert len(result.findings) == 1 and result.allowlisted == ()


def test_embedded_unit_maps_to_host_file():
    log = "step 1\n$ kaggle competitions download -c t\n"
    origin = Span.from_offsets(log, "logs/agent.log", 9, len(log) - 1)
    unit = _unit(log[9:-1], path="logs/agent.log", language="bash", origin=origin, source="log")
    rule = make_rule({**KAGGLE, "languages": ["bash"]})
    [finding] = evaluate_rules([rule], code_units=[unit])
    span = finding.evidence[0].span
    assert log[span.start_byte:span.end_byte] == "kaggle competitions download"
    assert (span.start_line, span.start_col) == (2, 3)


def test_unit_decoded_from_json_points_at_whole_origin():
    origin = Span.from_offsets('["a\\nkaggle competitions download"]', "logs/events.json", 1, 35)
    unit = _unit("a\nkaggle competitions download", path="logs/events.json", origin=origin, source="log")
    [finding] = evaluate_rules([make_rule(KAGGLE)], code_units=[unit])
    assert finding.evidence[0].span == origin


def test_notebook_cell_in_label():
    text = "import os\n\n!kaggle competitions download -c t\n"
    unit = _unit(text, path="code/nb.ipynb", source="notebook",
                 cells=(CellRange(cell_index=0, start_line=1, end_line=1), CellRange(cell_index=3, start_line=3, end_line=3)))
    [finding] = evaluate_rules([make_rule(KAGGLE)], code_units=[unit])
    assert finding.evidence[0].label == "x (cell 3, line 1)"


def _event(text, kind=LogEventKind.COMMAND, index=0, span=None, path="logs/t.log"):
    return LogEvent(index=index, kind=kind, text=text, span=span or Span.from_offsets(text, path, 0, len(text)),
                    language="bash" if kind is LogEventKind.COMMAND else None)


def test_log_events_filter_kinds_and_map_spans():
    rule = make_rule({**KAGGLE, "target": "log"})
    host = "prefix\nkaggle competitions download -c t"
    exact = _event(host[7:], span=Span.from_offsets(host, "logs/t.log", 7, len(host)), index=4)
    output = _event("kaggle competitions download", kind=LogEventKind.OUTPUT, index=5)
    [finding] = evaluate_rules([rule], log_events=[exact, output])
    evidence = finding.evidence[0]
    assert (evidence.span.start_line, evidence.span.start_byte) == (2, 7)
    assert evidence.label == "x (command event 4)"
    with_output = make_rule({**KAGGLE, "target": "log", "events": ["output"]})
    assert len(evaluate_rules([with_output], log_events=[exact, output])) == 1


def test_log_event_with_escaped_text_points_at_event():
    span = Span.from_offsets('{"c": "x\\nkaggle competitions download"}', "logs/e.json", 6, 39)
    event = _event("x\nkaggle competitions download", span=span)
    [finding] = evaluate_rules([make_rule({**KAGGLE, "target": "log"})], log_events=[event])
    assert finding.evidence[0].span == span


def test_paths_and_languages_filter():
    rule = make_rule({**KAGGLE, "paths": {"include": ["code/*"], "exclude": ["*_test.py"]}})
    units = [
        _unit("!kaggle competitions download", path="code/a.py"),
        _unit("!kaggle competitions download", path="code/a_test.py"),
        _unit("!kaggle competitions download", path="logs/a.py"),
        _unit("kaggle competitions download", path="code/a.sh", language="bash"),
    ]
    assert [f.evidence[0].span.path for f in evaluate_rules([rule], code_units=units)] == ["code/a.py"]


def test_file_target_uses_path_language():
    rule = make_rule({**KAGGLE, "target": "file", "paths": {"include": ["*.log"]}})
    findings = evaluate_rules([rule], files=[("run.log", "x kaggle competitions download"), ("a.txt", "kaggle competitions download")])
    assert [f.evidence[0].span.path for f in findings] == ["run.log"]


def test_one_finding_per_focus_span():
    rule = make_rule({"match": {"any": [{"regex": "(?P<x>kaggle)"}, {"regex": "(?P<x>kag)gle"}, {"regex": "(?P<x>kaggle)"}]},
                      "focus": "x"})
    findings = evaluate_rules([rule], code_units=[_unit("kaggle\nkaggle\n")])
    # exact duplicates collapse; nested spans (kag inside kaggle) keep the narrowest
    assert [(f.evidence[0].span.start_line, f.message) for f in findings] == [(1, "found kag"), (2, "found kag")]


def test_same_command_as_event_and_unit_gives_one_finding():
    log = 'x\n["kaggle competitions download -c t"]\n'
    origin = Span.from_offsets(log, "logs/e.json", 3, 37)
    event = _event("kaggle competitions download -c t", span=origin)
    unit = _unit("kaggle competitions download -c t", path="logs/e.json", language="bash", origin=origin, source="log")
    rule = make_rule({**KAGGLE, "target": ["code", "log"], "languages": ["bash"]})
    findings = evaluate_rules([rule], code_units=[unit], log_events=[event])
    assert len(findings) == 1


def test_experimental_rules_only_on_request():
    rule = make_rule({**KAGGLE, "status": "experimental"})
    units = [_unit("!kaggle competitions download")]
    assert evaluate_rules([rule], code_units=units) == []
    assert len(evaluate_rules([rule], code_units=units, include_experimental=True)) == 1


def test_a_failing_rule_does_not_stop_the_others(caplog):
    good = make_rule(KAGGLE)

    class Exploding:
        capture_names = frozenset({"x"})

        def find(self, subject):
            raise RuntimeError("boom")

    broken = dataclasses.replace(make_rule({**KAGGLE, "id": "ext-broken"}), matcher=Exploding())
    evaluation = evaluate_ruleset([broken, good], code_units=[_unit("!kaggle competitions download")])
    assert [f.rule_id for f in evaluation.findings] == ["ext-test"]
    # The failure is an evaluation error of (rule, unit), never a silent skip.
    assert evaluation.errors == (EvaluationError(rule_id="ext-broken", where="code/a.py", path="code/a.py",
                                                 error="RuntimeError", message="boom"),)
    assert evaluation.evaluated_rules == ("ext-broken", "ext-test")


def test_findings_sorted_by_severity_then_rule_then_place():
    low = make_rule({**KAGGLE, "id": "ext-a-low", "severity": "low"})
    high = make_rule({**KAGGLE, "id": "ext-z-high", "severity": "critical"})
    units = [_unit("!kaggle competitions download", path="code/b.py"), _unit("!kaggle competitions download", path="code/a.py")]
    order = [(f.rule_id, f.evidence[0].span.path) for f in evaluate_rules([low, high], code_units=units)]
    assert order == [("ext-z-high", "code/a.py"), ("ext-z-high", "code/b.py"), ("ext-a-low", "code/a.py"), ("ext-a-low", "code/b.py")]


def _fragment(agent_lines, ref_lines, length, text):
    lines = text.splitlines(keepends=True)
    start = sum(len(l) for l in lines[: agent_lines[0] - 1])
    end = sum(len(l) for l in lines[: agent_lines[1]]) - 1
    return SimpleNamespace(
        agent=Span.from_offsets(text, "code/solution.py", start, end),
        reference=Span.from_lines("kernels/nb-1.py", *ref_lines),
        length=length,
    )


def test_similarity_rule_uses_pair_fields_and_fragments():
    rule = make_rule({
        "id": "plag-test", "category": "plagiarism", "target": "similarity", "languages": None,
        "message": "{agent_containment:.0%} of {agent_path} matches {reference_id} ({longest_fragment} k-grams)",
        "when": {"agent_containment": {"gte": 0.5}, "longest_fragment": {"gte": 20}},
    })
    text = "".join(f"line{i} = {i}\n" for i in range(1, 21))
    fragments = [_fragment((i, i + 1), (10 * i, 10 * i + 1), length, text) for i, length in
                 [(1, 21), (3, 50), (5, 22), (7, 40), (9, 30), (11, 25)]]
    pair = SimpleNamespace(agent_path="code/solution.py", reference_path="kernels/nb-1.py", reference_id="someone/nb-1",
                           similarity=0.6, agent_containment=0.734, reference_containment=0.3, longest_fragment=50,
                           total_overlap=190, fragments=fragments)
    weak = SimpleNamespace(**{**vars(pair), "agent_containment": 0.2})
    [finding] = evaluate_rules([rule], pairs=[pair, weak], code_units=[_unit(text, path="code/solution.py")])
    assert finding.message == "73% of code/solution.py matches someone/nb-1 (50 k-grams)"
    assert [e.label for e in finding.evidence] == [
        "kernel fragment: kernels/nb-1.py lines 30–31",
        "kernel fragment: kernels/nb-1.py lines 70–71",
        "kernel fragment: kernels/nb-1.py lines 90–91",
        "kernel fragment: kernels/nb-1.py lines 110–111",
        "kernel fragment: kernels/nb-1.py lines 50–51",
    ]
    assert finding.evidence[0].excerpt == "line3 = 3\nline4 = 4"
    moved = SimpleNamespace(**{**vars(pair), "fragments": fragments[:2]})
    [again] = evaluate_rules([rule], pairs=[moved])
    assert again.fingerprint == finding.fingerprint
    assert again.evidence[0].excerpt == ""  # no text for the agent file: evidence without excerpt


def test_run_rules_need_a_context():
    rule = make_rule({"id": "sub-test", "category": "answers-access", "target": "run", "languages": None,
                      "message": "{match_fraction:.1%} of {total}", "match": {"builtin": "submission-equals-answers"}})
    assert evaluate_rules([rule]) == []
    root = FIXTURES / "equals-answers"
    context = RunContext(root=root, submission_path=root / "submission" / "submission.csv",
                         answers_path=root / "private" / "answers.csv", id_column="PassengerId",
                         target_columns=("Transported",))
    [finding] = evaluate_rules([rule], run_context=context)
    assert finding.message == "100.0% of 12"
    assert finding.evidence[0].span.path == "submission/submission.csv"
    assert finding.evidence[0].excerpt == "PassengerId,Transported"


def adversarial_texts(n: int) -> dict[str, str]:
    """Inputs on which a non-linear regex or query takes minutes; ``n`` scales their length."""
    return {
        "long literal with a bad tail": "x = [" + ", ".join(["1234567890"] * n) + ", y]\nf = 'submission.csv'\n",
        "long string": 'x = "' + "a" * (5 * n) + '"\n',
        "echo with many commas": "echo " + ",".join(["a"] * n),
        "sed without target": "sed " + "x " * n,
        "long token": "cat " + "a" * (5 * n) + "answer",
        "many rows": "X = [" + ", ".join(["(1, 2)"] * n) + " y]\nopen('submission.csv', 'w')\n",
        "whitespace runs": "X = [" + (" " * n + ",") * 20 + "]\n",
        "comma rows in a string": 's = "' + "\\n" + "a,b" * n + '"\n',
        "loops without done": "for i in x; do echo; " * (n // 10),
        "many urls": "wget " + "https://example.org/" * n,
        "big literal dict": "X = {" + ", ".join(f"{i}: {i}" for i in range(n)) + ", z}\nopen('submission.csv', 'w')\n",
        "long concatenation": "u = " + " + ".join(['"ab"'] * (n // 10)) + "\n",
        "many assembled names": "".join(f'H{i} = "a{i}." + H{i - 1}\n' for i in range(1, n // 5)),
        "many shell variables": "".join(f"V{i}=x$V{i - 1}; " for i in range(1, n // 5)),
        "many finds": "find / " + "-name x " * n,
    }


ADVERSARIAL = adversarial_texts(5_000)


def _slow_rules(texts: dict[str, str], limit: float) -> list[str]:
    import time

    from mleaudit.audit.parsing import parse
    from mleaudit.audit.rules.loader import load_ruleset

    ruleset = load_ruleset(Path(__file__).resolve().parents[3] / "rules")
    slow = []
    for name, text in texts.items():
        for language in ("python", "bash"):
            # The audit parses every unit before the rules run (tree-sitter's error recovery
            # alone takes seconds on some of these); the rules reuse the cached tree.
            parse(text, language)
            event = LogEvent(index=0, kind=LogEventKind.COMMAND, text=text,
                             span=Span.from_offsets(text, "logs/t.log", 0, len(text)), language=language)
            unit = _unit(text, language=language)
            for rule in ruleset:
                elapsed = 0.0
                # The best of up to three timings: a busy machine slows one run, not the rule.
                for _ in range(3):
                    start = time.perf_counter()
                    evaluate_rules([rule], code_units=[unit], log_events=[event])
                    elapsed = time.perf_counter() - start
                    if elapsed <= limit:
                        break
                if elapsed > limit:
                    slow.append(f"{rule.id} on {name} ({language}): {elapsed:.1f}s")
    return slow


def test_shipped_rules_stay_linear_on_adversarial_text():
    # Audited text is untrusted: a regex with nested repetition, a loop-body scan that restarts
    # for every keyword, or a query over non-adjacent siblings turns these inputs into minutes
    # of backtracking. Each rule is timed on its own, so the bound does not shrink as rules are
    # added; here on inputs a fifth of full size (a quadratic rule already takes seconds).
    assert _slow_rules(adversarial_texts(1_000), limit=1.0) == []


@pytest.mark.slow
def test_shipped_rules_stay_linear_on_full_size_adversarial_text():
    assert _slow_rules(ADVERSARIAL, limit=2.0) == []


def test_a_text_repeated_in_many_units_and_events_is_matched_once_and_found_at_each_place():
    # agent logs show the same script at every step: one matcher call per distinct text, one
    # finding per place
    calls = []
    real = make_rule({**KAGGLE, "target": ["code", "log"]})

    class Counting:
        capture_names = real.matcher.capture_names

        def find(self, subject):
            calls.append((subject.language, subject.text))
            return real.matcher.find(subject)

    rule = dataclasses.replace(real, matcher=Counting())
    script = 'os.system("kaggle competitions download -c t")\n'
    units = [_unit(script, path=f"code/step{i}.py") for i in range(5)] + [_unit("print(1)\n", path="code/other.py")]
    events = [_event("kaggle competitions download", index=i, path=f"logs/{i}.log") for i in range(4)]
    found = evaluate_rules([rule], code_units=units, log_events=events)
    assert sorted(f.evidence[0].span.path for f in found) == sorted(
        [f"code/step{i}.py" for i in range(5)] + [f"logs/{i}.log" for i in range(4)])
    assert sorted(calls) == sorted([("python", script), ("python", "print(1)\n"),
                                    ("bash", "kaggle competitions download")])


def test_a_matcher_failing_on_a_repeated_text_is_an_error_at_each_place_and_runs_once():
    calls = []

    class Slow:
        capture_names = frozenset({"x"})

        def find(self, subject):
            calls.append(subject.path)
            subject.unevaluated.append("pattern not run")
            raise TimeoutError("regex over its time bound")

    rule = dataclasses.replace(make_rule(KAGGLE), matcher=Slow())
    units = [_unit("x = 1\n", path=f"code/{i}.py") for i in range(3)]
    evaluation = evaluate_ruleset([rule], code_units=units)
    assert len(calls) == 1
    assert sorted(e.path for e in evaluation.errors if e.error == "TimeoutError") == ["code/0.py", "code/1.py", "code/2.py"]
    assert evaluation.findings == ()


def test_what_a_matcher_could_not_evaluate_is_said_for_every_copy_of_the_text():
    class Partial:
        capture_names = frozenset({"x"})

        def find(self, subject):
            subject.unevaluated.append("query pattern(s) without a literal not run")
            return []

    rule = dataclasses.replace(make_rule(KAGGLE), matcher=Partial())
    units = [_unit("x = 1\n", path=f"code/{i}.py") for i in range(3)]
    evaluation = evaluate_ruleset([rule], code_units=units)
    assert sorted(e.path for e in evaluation.errors if e.error == "NotEvaluated") == ["code/0.py", "code/1.py", "code/2.py"]
