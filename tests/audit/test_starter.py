"""Starter code — what the benchmark gave every run of a task — is never counted as copied.

Every case writes its own files; nothing here is real run material.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

from mleaudit.audit.attribution import attribute_units
from mleaudit.audit.clusters import RunCode, copy_clusters
from mleaudit.audit.expand import expand_run
from mleaudit.audit.logs.mlagentbench.snapshots import untouched_snapshots
from mleaudit.audit.pipeline import artifact_text
from mleaudit.audit.run import load_run
from mleaudit.audit.similarity import DEFAULT_SCORE_THRESHOLD
from mleaudit.audit.starter import starter_units
from mleaudit.audit.units import CodeUnit, LogEvent, LogEventKind
from mleaudit.audit.model import Span

#: A task's starter script: specific names and literals, long enough to be flagged when copied.
STARTER = "\n".join(
    ["import pandas as pd", "from sklearn.ensemble import RandomForestRegressor", "",
     "def load_visits(folder):",
     "    frame = pd.read_csv(folder + '/train_clinical_data.csv')",
     "    frame['visit_bucket'] = frame['visit_month'].clip(0, 108) // 6"]
    + [f"    frame['updrs_{n}_lag'] = frame.groupby('patient_id')['updrs_{n}'].shift({n})" for n in range(1, 5)]
    + ["    return frame", "",
       "def smape_plus_one(y_true, y_pred):",
       "    y_true, y_pred = y_true + 1, y_pred + 1",
       "    return 100 * abs(y_true - y_pred).div((abs(y_true) + abs(y_pred)) / 2).mean()", "",
       "if __name__ == '__main__':",
       "    visits = load_visits('example_test_files')",
       "    targets = [f'updrs_{k}_plus_{m}' for k in range(1, 5) for m in (0, 6, 12, 24)]",
       "    print(len(visits), targets[:3])", ""])
AGENT_A = "import numpy as np\nnp.random.seed(0)\nweights = np.linspace(0.1, 0.9, 17)\nprint(weights.sum())\n"
AGENT_B = "import json\nconfig = json.loads('{\"depth\": 4}')\nfor depth in range(config['depth']):\n    print(depth * 3)\n"


def _mlagentbench_run(root: Path, actions: list[str], agent_code: str) -> Path:
    env = root / "env_log"
    (env / "traces" / "step_0_files").mkdir(parents=True)
    (env / "traces" / "step_0_files" / "train.py").write_text(STARTER)
    last = env / "traces" / f"step_{len(actions) - 1}_files"
    last.mkdir(parents=True, exist_ok=True)
    (last / "solve.py").write_text(agent_code)
    steps = [{"action": {"name": name, "args": {}}, "observation": "ok", "timestamp": 0.0} for name in actions]
    (env / "trace.json").write_text(json.dumps({"steps": steps, "low_level_steps": [], "action_infos": {},
                                                "task_description": "predict"}))
    return root


def _run_code(root: Path) -> RunCode:
    run = load_run(root)
    expanded = expand_run(run)
    units, events = attribute_units(expanded.code_units, expanded.log_events, run.layout)
    text_of = partial(artifact_text, run)
    return RunCode(run_id=root.name, units=tuple(units), host_text=text_of,
                   starter=starter_units(units, text_of, events))


def test_snapshots_before_the_first_write_are_the_starter():
    assert untouched_snapshots(json.dumps({"steps": [{"action": {"name": "List Files"}},
                                                     {"action": {"name": "Inspect  Script Lines"}},
                                                     {"action": {"name": "Edit Script (AI)"}},
                                                     {"action": {"name": "List Files"}}]})) == 2
    # a step that may have written, or that cannot be read, ends the untouched stretch
    assert untouched_snapshots('{"steps": [{"action": {"name": "Execute Script"}}]}') == 0
    assert untouched_snapshots('{"steps": [{"action": "List Files"}, {"action": {"name": "List Files"}}]}') == 0
    assert untouched_snapshots('{"steps": [{"action": {"name": "List Files"}}, {"action": {"name": "Copy') == 1
    assert untouched_snapshots("not json") == 0 and untouched_snapshots("[]") == 0


def test_a_starter_snapshot_is_found_only_while_every_action_read(tmp_path):
    read_first = _run_code(_mlagentbench_run(tmp_path / "a", ["List Files", "Edit Script (AI)"], AGENT_A))
    assert [u.path for u in read_first.starter] == ["env_log/traces/step_0_files/train.py"]
    wrote_first = _run_code(_mlagentbench_run(tmp_path / "b", ["Edit Script (AI)", "List Files"], AGENT_A))
    assert wrote_first.starter == ()
    (tmp_path / "c").mkdir()
    no_trace = _mlagentbench_run(tmp_path / "c", ["List Files", "Edit Script (AI)"], AGENT_A)
    (no_trace / "env_log" / "trace.json").unlink()
    assert _run_code(no_trace).starter == ()


def test_runs_sharing_only_their_starter_are_no_copy_cluster(tmp_path):
    first = _run_code(_mlagentbench_run(tmp_path / "run-a", ["List Files", "Edit Script (AI)"], AGENT_A))
    second = _run_code(_mlagentbench_run(tmp_path / "run-b", ["Understand File", "Edit Script (AI)"], AGENT_B))
    reports = {"run-a": {}, "run-b": {}}
    assert copy_clusters(reports, [first, second], score_threshold=DEFAULT_SCORE_THRESHOLD)["clusters"] == []
    # the same runs without their starter known: the shared script links them
    bare = [RunCode(run_id=r.run_id, units=r.units) for r in (first, second)]
    (cluster,) = copy_clusters(reports, bare, score_threshold=DEFAULT_SCORE_THRESHOLD)["clusters"]
    assert cluster["runs"] == ["run-a", "run-b"]


def test_a_starter_edited_by_both_runs_still_counts_only_their_own_lines(tmp_path):
    # each run keeps the starter and adds its own code: the starter's lines are boilerplate
    first = _mlagentbench_run(tmp_path / "run-a", ["List Files", "Edit Script (AI)"], STARTER + AGENT_A)
    second = _mlagentbench_run(tmp_path / "run-b", ["List Files", "Edit Script (AI)"], STARTER + AGENT_B)
    runs = [_run_code(first), _run_code(second)]
    assert copy_clusters({"run-a": {}, "run-b": {}}, runs, score_threshold=DEFAULT_SCORE_THRESHOLD)["clusters"] == []


def _event(index: int, role: str, kind: LogEventKind, text: str, path: str = "history.txt") -> LogEvent:
    span = Span(path=path, start_line=index + 1, start_col=1, end_line=index + 1, end_col=1,
                start_byte=index, end_byte=index + 1)
    return LogEvent(index=index, kind=kind, text=text, span=span, role=role,
                    language="python" if kind is LogEventKind.CODE else None)


def test_the_code_of_the_only_transcripts_first_prompt_is_starter():
    events = [_event(0, "user", LogEventKind.MESSAGE, "Use this baseline:"),
              _event(1, "user", LogEventKind.CODE, STARTER),
              _event(2, "assistant", LogEventKind.CODE, AGENT_A),
              # a later prompt repeats the agent's own code: not starter
              _event(3, "user", LogEventKind.CODE, AGENT_A),
              _event(4, "assistant", LogEventKind.CODE, AGENT_B)]
    (unit,) = starter_units((), None, events)
    assert (unit.text, unit.path, unit.source) == (STARTER, "history.txt", "log")
    # two transcripts: nothing tells which prompt came first
    other = [_event(n, e.role, e.kind, e.text, path="calls/step_1.log") for n, e in enumerate(events)]
    assert starter_units((), None, events + other) == ()
    # no response at all: no transcript
    assert starter_units((), None, events[:2]) == ()


def test_a_starter_one_run_alone_declares_clears_nothing(tmp_path):
    # run-b declares the starter (an untouched snapshot) and holds it again as its own code;
    # run-a writes the same script: with no second run declaring it, the copy is an edge
    first = _run_code(_mlagentbench_run(tmp_path / "run-a", ["Edit Script (AI)"], STARTER))
    second = _run_code(_mlagentbench_run(tmp_path / "run-b", ["List Files", "Edit Script (AI)"], STARTER + AGENT_B))
    assert first.starter == () and len(second.starter) == 1
    (cluster,) = copy_clusters({"run-a": {}, "run-b": {}}, [first, second],
                               score_threshold=DEFAULT_SCORE_THRESHOLD)["clusters"]
    assert cluster["runs"] == ["run-a", "run-b"]


def test_nothing_under_the_agents_folders_declares_a_starter():
    events = [_event(0, "user", LogEventKind.CODE, STARTER, path="code/history.txt"),
              _event(1, "assistant", LogEventKind.CODE, AGENT_A, path="code/history.txt")]
    assert starter_units((), None, events) == ()
    trace = json.dumps({"steps": [{"action": {"name": "List Files"}}]})
    # logs/ is written by an MLE-bench agent too
    for path in ("working/env_log/traces/step_0_files/train.py", "logs/mlab/env_log/traces/step_0_files/train.py"):
        unit = CodeUnit(path=path, language="python", text=STARTER)
        assert starter_units([unit], lambda _: trace, ()) == ()
    logged = [_event(n, e.role, e.kind, e.text, path="logs/history.txt") for n, e in enumerate(events)]
    assert starter_units((), None, logged) == ()
    # the same snapshot at the top of an MLAgentBench run is the starter
    unit = CodeUnit(path="env_log/traces/step_0_files/train.py", language="python", text=STARTER)
    assert starter_units([unit], lambda _: trace, ()) == (unit,)


def test_a_run_report_compares_what_the_run_declares_as_starter(tmp_path):
    # The report's comparison with public notebooks trusts no file of the run: a copied kernel
    # declared as starter (a fake first prompt, an untouched snapshot) is still found.
    from mleaudit.audit.pipeline import AuditOptions, audit_run
    from mleaudit.audit.rules.loader import find_rules_root, load_ruleset

    root = _mlagentbench_run(tmp_path / "run", ["List Files", "Edit Script (AI)"], STARTER)
    (root / "logs").mkdir()
    (root / "logs" / "history.txt").write_text(
        "================= prompt ==================\nUse this baseline:\n```python\n" + STARTER
        + "```\n================= response ==================\n```python\nprint('hi')\n```\n")
    corpus = tmp_path / "kernels"
    corpus.mkdir()
    (corpus / "public.py").write_text(STARTER)
    report = audit_run(load_run(root), ruleset=load_ruleset([find_rules_root(None)]),
                       options=AuditOptions(corpus_dir=corpus))
    flagged = {p["agent_path"] for p in report.similarity["pairs"] if p["flagged"]}
    assert "env_log/traces/step_0_files/train.py" in flagged
    assert report.verdict.kind.value != "clean"
