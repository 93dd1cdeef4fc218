"""The command line: every command has help with an example; ``audit`` end to end on the examples."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from mleaudit.audit.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "runs"


def _walk(command: click.Command, path: tuple[str, ...] = ()):
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):
            yield from _walk(sub, path + (name,))


COMMANDS = list(_walk(main))


@pytest.mark.parametrize("path,command", COMMANDS, ids=[" ".join(p) or "mleaudit" for p, _ in COMMANDS])
def test_every_command_has_help_and_an_example(path, command):
    result = CliRunner().invoke(main, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Example:" in (command.help or ""), f"{' '.join(path)} has no Example: block"


@pytest.fixture
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("data")


def _audit(run: str, data_dir: Path, *extra: str):
    runner = CliRunner()
    report_path = data_dir.parent / f"{run}.json"
    result = runner.invoke(
        main, ["audit", str(EXAMPLES / run), "--data-dir", str(data_dir), "-o", str(report_path), *extra]
    )
    report = json.loads(report_path.read_text()) if report_path.exists() else None
    return result, report


def _rule_ids(report):
    return {f["rule_id"] for f in report["findings"]}


def test_audit_llm_example_flags_the_api_call(data_dir):
    result, report = _audit("llm-digits", data_dir)
    assert result.exit_code == 1, result.output
    assert "llm-external-api-call" in _rule_ids(report)
    finding = next(f for f in report["findings"] if f["rule_id"] == "llm-external-api-call")
    assert finding["evidence"][0]["path"] == "code/refine_with_llm.py"
    assert "chat.completions.create" in finding["evidence"][0]["excerpt"]
    assert report["verdict"]["kind"] == "flagged"
    grade = report["grade"]
    assert grade["competition_id"] == "sklearn-digits"
    assert grade["valid_submission"] is True
    assert grade["score"] == pytest.approx(0.975)
    assert grade["leaderboard_source"] == "reference-baselines"
    assert set(report) == {"schema_version", "meta", "run", "grade", "findings", "similarity", "verdict", "skipped", "rules"}
    assert "Verdict: FLAGGED" in result.output


def test_audit_honest_example_is_clean(data_dir):
    result, report = _audit("honest-digits", data_dir)
    assert result.exit_code == 0, result.output
    assert [f for f in report["findings"] if f["severity"] in ("medium", "high", "critical")] == []
    assert report["verdict"]["kind"] == "clean"
    assert report["grade"]["valid_submission"] is True
    assert report["similarity"]["reference_count"] == 3


def test_audit_handwritten_example_flags_the_literal_submission(data_dir):
    result, report = _audit("handwritten-digits", data_dir)
    assert result.exit_code == 1, result.output
    finding = next(f for f in report["findings"] if f["rule_id"] == "sub-handwritten-submission")
    assert finding["evidence"][0]["path"] == "code/write_submission.py"


def test_audit_copied_example_shows_the_source_notebook(data_dir):
    result, report = _audit("copied-digits", data_dir)
    top = report["similarity"]["pairs"][0]
    assert top["agent_path"] == "code/solution.py"
    assert top["reference_path"] == "digits-tree-ensembles-shape-features.ipynb"
    assert top["agent_containment"] > 0.6
    others = [p for p in report["similarity"]["pairs"] if p["reference_path"] != top["reference_path"]]
    assert all(p["agent_containment"] < 0.2 for p in others)
    assert "plag-kernel-containment" in _rule_ids(report)
    assert report["verdict"]["kind"] in ("review", "flagged")


def test_audit_missing_run_dir_is_an_input_error(tmp_path):
    result = CliRunner().invoke(main, ["audit", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert "nope" in result.output
    assert "Traceback" not in result.output


def test_audit_unknown_competition_is_audited_without_grading(tmp_path, data_dir):
    result = CliRunner().invoke(
        main, ["audit", str(EXAMPLES / "honest-digits"), "--competition", "no-such-comp", "--data-dir", str(data_dir)]
    )
    # Audited all the same; not graded, so incomplete (exit 3), and the reason names the id.
    assert result.exit_code == 3, result.output
    assert "No competition 'no-such-comp'" in result.output and "INCOMPLETE" in result.output


def test_audit_without_competition_reports_why_it_is_not_graded(tmp_path):
    (tmp_path / "train.py").write_text("import pandas as pd\nprint(pd.__version__)\n")
    result = CliRunner().invoke(main, ["audit", str(tmp_path), "--format", "json"])
    # Grading was asked for (the default) and could not run: the audit is incomplete (exit 3).
    assert result.exit_code == 3, result.output
    report = json.loads(result.stdout)
    assert report["grade"] is None
    assert "no competition id" in report["meta"]["grade_skipped"]
    assert report["verdict"]["kind"] == "incomplete"
    assert [g["kind"] for g in report["verdict"]["gaps"]] == ["not-graded"]
    result = CliRunner().invoke(main, ["audit", str(tmp_path), "--format", "json", "--no-grade"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["verdict"] == {"kind": "clean", "reasons": [], "gaps": []}
    # not graded because it was asked so, not for want of a competition id
    assert json.loads(result.stdout)["meta"]["grade_skipped"] == "grading disabled (--no-grade)"


def test_symlinked_submission_is_not_graded_and_not_clean(tmp_path, data_dir):
    # A submission that is a link (for instance to the answers) is not read by the audit, so it
    # must not be graded either, and the run cannot come out clean.
    _audit("honest-digits", data_dir)  # prepares the competition
    answers = data_dir / "sklearn-digits" / "prepared" / "private" / "test.csv"
    run = tmp_path / "run"
    (run / "submission").mkdir(parents=True)
    (run / "submission" / "submission.csv").symlink_to(answers)
    out = tmp_path / "r.json"
    result = CliRunner().invoke(
        main, ["audit", str(run), "-c", "sklearn-digits", "--data-dir", str(data_dir), "-o", str(out)]
    )
    report = json.loads(out.read_text())
    assert report["grade"] is None
    assert "submission/submission.csv not graded: symbolic link" in report["meta"]["grade_skipped"]
    assert report["verdict"]["kind"] == "incomplete"
    assert {g["kind"] for g in report["verdict"]["gaps"]} >= {"not-graded", "file-unread", "no-agent-input"}
    assert result.exit_code == 3


def test_pathological_code_is_reported_not_hung(tmp_path):
    (tmp_path / "u.py").write_text("v = " + "(" * 40000)
    result = CliRunner().invoke(main, ["audit", str(tmp_path), "--format", "json", "--no-grade"])
    report = json.loads(result.stdout)
    # Query rules fall back to their literals as text; what has no literal is a gap, never silence.
    assert report["verdict"]["kind"] == "incomplete" and result.exit_code == 3
    assert any("query rules ran as text matches" in s["reason"] for s in report["skipped"])
    assert all(g["kind"] == "rule-error" for g in report["verdict"]["gaps"])


def test_terminal_escapes_from_logs_are_shown_escaped(tmp_path):
    (tmp_path / "a.log").write_text("$ curl https://api.openai.com/v1/x \x1b[2J\x1b[31m RED\n")
    result = CliRunner().invoke(main, ["audit", str(tmp_path)])
    assert "\x1b" not in result.stdout
    assert "\\x1b[2J" in result.stdout


def test_report_to_a_missing_folder_is_an_input_error(tmp_path):
    result = CliRunner().invoke(main, ["audit", str(EXAMPLES / "honest-digits"), "-o", str(tmp_path / "no" / "r.json")])
    assert result.exit_code == 2
    assert "does not exist" in result.output


def test_a_closed_output_pipe_ends_quietly_with_sigpipe_s_code() -> None:
    import click
    from click.testing import CliRunner

    from mleaudit.audit.cli import EXIT_BROKEN_PIPE, _FailClosedGroup

    @click.group(cls=_FailClosedGroup)
    def group() -> None:
        pass

    @group.command()
    def out() -> None:
        raise BrokenPipeError(32, "Broken pipe")  # what `mleaudit ... | head -1` meets

    result = CliRunner().invoke(group, ["out"])
    assert result.exit_code == EXIT_BROKEN_PIPE == 141
    assert "internal error" not in result.output and "Traceback" not in result.output


def _commands(command, path=()):
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _commands(sub, (*path, name))


def test_help_texts_hold_no_markup_and_show_every_environment_variable():
    markup = re.compile(r"``|:(func|class|mod|data|meth|attr):`|^\s*\.\. |\*\*\w")
    for path, command in _commands(main):
        text = command.get_help(click.Context(command, info_name=" ".join(("mleaudit", *path))))
        assert not markup.search(text), f"mleaudit {' '.join(path)} --help shows markup"
        for param in command.params:
            if isinstance(param, click.Option) and param.envvar:
                assert param.show_envvar, f"mleaudit {' '.join(path)} {param.opts[0]} hides its environment variable"
                assert str(param.envvar) in text


#: Options the README names that belong to other tools: pytest's opt-in flags, docker's daemon and build
#: flags, and the benchmark scripts' flags (each described where the README shows its command line).
_OTHER_TOOLS_OPTIONS = {"--run-docker", "--run-gpu", "--bridge", "--iptables", "--network", "--build-arg",
                        "--brute-runs", "--cases", "--check", "--clean-runs", "--dolos-dir", "--files", "--no-deps",
                        # benchmarks/corpus_index.py
                        "--reuse", "--sample", "--skip-exact", "--tops", "--workdir"}


def test_the_readme_lists_every_command_and_names_only_options_that_exist():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    options: set[str] = set()
    for path, command in _commands(main):
        options.update(o for p in command.params if isinstance(p, click.Option) for o in (*p.opts, *p.secondary_opts))
        if isinstance(command, click.Group) or not path:
            continue
        group, name = " ".join(path[:-1]), path[-1]
        spelled = f"mleaudit {' '.join(path)}" in readme or f"`{' '.join(path)}" in readme
        near_group = group and any(re.search(rf"\b{re.escape(name)}\b", readme[m.start():m.start() + 400])
                                   for m in re.finditer(rf"mleaudit {re.escape(group)}\b", readme))
        assert spelled or near_group, f"README does not list mleaudit {' '.join(path)}"
    named = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)", readme))
    assert named - options - _OTHER_TOOLS_OPTIONS == set(), "README names options no command has"
