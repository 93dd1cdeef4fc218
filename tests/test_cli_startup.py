"""Start-up of the command line: commands that do not grade never load the graders' stack.

pandas, scikit-learn and SciPy take one to two seconds to import. Only grading needs them, so
``mleaudit --help``, ``similarity``, ``corpus`` and ``rules`` commands must start without them.
Each check runs in a fresh interpreter (this test process has long imported everything) and
reports which of the three ended up in ``sys.modules``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "tests" / "fixtures" / "kernels" / "invariance"
HEAVY = ("pandas", "sklearn", "scipy")


def _heavy_modules_after(code: str) -> list[str]:
    """Run ``code`` in a fresh interpreter; the heavy modules it left loaded."""
    script = code + textwrap.dedent(f"""
        import json as _json, sys as _sys
        print(_json.dumps(sorted(m for m in {HEAVY!r} if m in _sys.modules)))
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("MLEAUDIT_RULES", "MLEAUDIT_COMPETITIONS")}
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.splitlines()[-1])


def _command(*args: str) -> str:
    """Code that runs ``mleaudit ARGS`` in-process and fails unless it exits with 0."""
    return textwrap.dedent(f"""
        from click.testing import CliRunner
        from mleaudit.audit.cli import main
        result = CliRunner().invoke(main, {list(args)!r})
        assert result.exit_code == 0, (result.exit_code, result.output[-1500:])
    """)


@pytest.mark.parametrize("module", ["mleaudit.audit.cli", "mleaudit.audit.cli_options", "mleaudit.audit.similarity.cli",
                                    "mleaudit.audit.similarity.corpus_cli", "mleaudit.audit.rules.cli", "mleaudit.grading.cli", "grading"])
def test_importing_the_command_line_loads_no_grader_stack(module: str) -> None:
    assert _heavy_modules_after(f"import {module}") == []


@pytest.mark.parametrize("args", [
    ("--help",),
    ("similarity", "pairs", str(KERNELS)),
    ("similarity", "compare", str(KERNELS / "renamed.py"), "--reference", str(KERNELS)),
    ("rules", "list"),
    ("rules", "validate"),
    ("rules", "show", "leak-read-private-data"),
], ids=lambda args: " ".join(a for a in args if not a.startswith("/")))
def test_commands_that_do_not_grade_load_no_grader_stack(args: tuple[str, ...]) -> None:
    assert _heavy_modules_after(_command(*args)) == []


def test_corpus_commands_load_no_grader_stack(tmp_path: Path) -> None:
    index = tmp_path / "kernels.index"
    code = _command("corpus", "build", str(KERNELS), "-o", str(index)) + _command("corpus", "info", str(index))
    assert _heavy_modules_after(code) == []


def test_the_check_sees_a_grader_when_one_is_loaded() -> None:
    # the same probe on a module that does grade: it must report the stack, or the tests
    # above could not fail
    assert set(_heavy_modules_after("import mleaudit.grading.grade")) == set(HEAVY)
    assert "pandas" in _heavy_modules_after("from grading import grade_submission")


def test_grading_keeps_its_public_names() -> None:
    from mleaudit import grading

    for name in grading.__all__:
        assert getattr(grading, name) is not None, name
    from mleaudit.grading import CompetitionRegistry, InvalidSubmission, Medal, grade_submission

    assert grade_submission.__module__ == "mleaudit.grading.grade" and Medal.__module__ == "mleaudit.grading.medals"
    assert CompetitionRegistry.__module__ == "mleaudit.grading.registry" and issubclass(InvalidSubmission, Exception)

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        grading.nope  # noqa: B018
