"""The command line never imports a module from the current directory (often the audited run).

``python -m mleaudit`` puts the current directory first on ``sys.path``, and a relative
``PYTHONPATH`` entry does the same for the ``mleaudit`` script; an agent that leaves ``numpy.py``
or ``yaml.py`` in its run folder would then have its code run by the audit started from there.
Each test plants, in the folder a command starts in, a module for every top-level module the
command line imports (found by a probe run in a clean folder) plus the ones ``multiprocessing``
workers import; each planted module records that it was imported. No record may appear, and the
command must still work.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "runs"
#: Never planted: the package itself (``python -m mleaudit`` runs whatever ``mleaudit`` the current
#: directory holds, before any of its code can act: use ``python -P`` or the ``mleaudit`` script)
#: and the hooks ``site`` imports before the current directory is on the path.
NOT_PLANTED = {"mleaudit", "__main__", "sitecustomize", "usercustomize"}
#: Imported by spawned batch workers before they receive the parent's path.
WORKER_MODULES = {"multiprocessing", "concurrent", "pickle", "threading", "struct", "socket", "selectors",
                  "signal", "runpy", "json", "typing", "__future__", "numpy", "yaml", "click", "pandas",
                  "tree_sitter"}


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("MLEAUDIT_RULES", "MLEAUDIT_COMPETITIONS", "PYTHONPATH", "PYTHONSAFEPATH")}
    env.update(extra)
    return env


def _package_imports(cwd: Path) -> set[str]:
    """Top-level modules that ``import mleaudit`` loads in a fresh interpreter (mleaudit/__init__.py's
    imports and theirs), which happens before any of the command line's code can clean the path."""
    probe = ("import json, sys; before = set(sys.modules); import mleaudit; "
             "print(json.dumps(sorted({m.split('.')[0] for m in set(sys.modules) - before} - {'mleaudit'})))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=cwd, env=_env(), capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    return set(json.loads(result.stdout))


@pytest.fixture(scope="module")
def setting(tmp_path_factory) -> dict:
    """Module names to plant (from a probe in a clean folder) and a prepared data folder."""
    base = tmp_path_factory.mktemp("no-cwd-import")
    data_dir = base / "data"
    clean = base / "clean"
    clean.mkdir()
    probe = textwrap.dedent(f"""
        import json, sys
        from click.testing import CliRunner
        from mleaudit.audit.cli import main
        for args in (["--help"], ["audit", {str(EXAMPLES / "honest-digits")!r}, "--no-similarity",
                                  "--data-dir", {str(data_dir)!r}, "-o", {str(base / "probe.json")!r}]):
            result = CliRunner().invoke(main, args)
            assert result.exit_code in (0, 1), result.output
        import multiprocessing.spawn, concurrent.futures.process
        print(json.dumps(sorted({{name.split(".")[0] for name in sys.modules}})))
    """)
    result = subprocess.run([sys.executable, "-c", probe], cwd=clean, env=_env(), capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    imported = set(json.loads(result.stdout.splitlines()[-1]))
    names = sorted(name for name in (imported | WORKER_MODULES) - NOT_PLANTED
                   if name.isidentifier() and name not in sys.builtin_module_names)
    # what mleaudit/__init__.py imports is imported before any of the command line's code runs: it
    # has its own test below
    package = _package_imports(clean)
    # loaded while the interpreter starts (site, .pth files), before any code of ours: with a
    # relative PYTHONPATH entry they come from the current directory whatever the command does
    result = subprocess.run([sys.executable, "-c", "import json, sys; print(json.dumps(sorted(sys.modules)))"],
                            cwd=clean, env=_env(), capture_output=True, text=True, timeout=60)
    startup = {name.split(".")[0] for name in json.loads(result.stdout)}
    return {"names": [name for name in names if name not in package], "package": sorted(package),
            "after_startup": [name for name in names if name not in package | startup], "data_dir": data_dir,
            "base": base}


def _plant(folder: Path, names: list[str], markers: Path) -> None:
    markers.mkdir(parents=True, exist_ok=True)
    for name in names:
        # builtins only: the planted module must not need an import to leave its record
        (folder / f"{name}.py").write_text(
            f"open({str(markers / name)!r}, 'w').close()\nraise SystemExit('imported the planted {name}.py')\n",
            encoding="utf-8")


def _check(markers: Path) -> None:
    found = sorted(p.name for p in markers.iterdir())
    assert found == [], f"modules imported from the current directory: {found}"


def _mleaudit() -> list[str]:
    script = Path(sys.executable).with_name("mleaudit")
    if not script.is_file():
        pytest.skip("the mleaudit console script is not installed next to this interpreter")
    return [str(script)]


def test_python_m_mleaudit_started_in_a_run_imports_nothing_from_it(setting: dict, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(EXAMPLES / "honest-digits", run)
    markers = tmp_path / "markers"
    _plant(run, setting["names"], markers)
    result = subprocess.run([sys.executable, "-m", "mleaudit", "--help"], cwd=run, env=_env(), capture_output=True,
                            text=True, timeout=60)
    _check(markers)
    assert result.returncode == 0 and "Usage:" in result.stdout, result.stderr[-3000:]
    report = tmp_path / "report.json"
    result = subprocess.run([sys.executable, "-m", "mleaudit", "audit", ".", "--no-similarity", "--data-dir",
                             str(setting["data_dir"]), "--format", "json", "-o", str(report)],
                            cwd=run, env=_env(), capture_output=True, text=True, timeout=120)
    _check(markers)
    assert result.returncode in (0, 1), result.stderr[-3000:]
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["grade"]["valid_submission"] is True and data["run"]["root"]


def test_mleaudit_script_with_a_relative_pythonpath_imports_nothing_from_the_run(setting: dict, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(EXAMPLES / "honest-digits", run)
    markers = tmp_path / "markers"
    _plant(run, setting["after_startup"], markers)
    report = tmp_path / "report.json"
    # '' and '.' in PYTHONPATH both mean the current directory
    result = subprocess.run([*_mleaudit(), "audit", ".", "--no-similarity", "--data-dir", str(setting["data_dir"]),
                             "--format", "json", "-o", str(report)],
                            cwd=run, env=_env(PYTHONPATH=os.pathsep.join([".", "", "code"])), capture_output=True,
                            text=True, timeout=120)
    _check(markers)
    assert result.returncode in (0, 1), result.stderr[-3000:]
    assert json.loads(report.read_text(encoding="utf-8"))["grade"]["valid_submission"] is True
    _plant(run, setting["names"], markers)
    result = subprocess.run([*_mleaudit(), "--help"], cwd=run, env=_env(), capture_output=True, text=True, timeout=60)
    _check(markers)
    assert result.returncode == 0 and "Usage:" in result.stdout, result.stderr[-3000:]


def test_batch_workers_started_in_a_run_group_import_nothing_from_it(setting: dict, tmp_path: Path) -> None:
    group = tmp_path / "group"
    group.mkdir()
    for i in range(2):
        shutil.copytree(EXAMPLES / "honest-digits", group / f"sklearn-digits_{i:08x}-aaaa-bbbb-cccc-dddddddddddd")
    markers = tmp_path / "markers"
    _plant(group, setting["names"], markers)
    out = tmp_path / "out"
    # -j 2: spawned workers start as `python -c`, which puts the current directory first on their path
    result = subprocess.run([*_mleaudit(), "audit", "batch", ".", "-j", "2", "--no-similarity", "--no-grade",
                             "-o", str(out)], cwd=group, env=_env(), capture_output=True, text=True, timeout=120)
    _check(markers)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["verdicts"]["clean"] == 2


def test_the_package_imports_nothing_the_current_directory_could_shadow(setting: dict, tmp_path: Path) -> None:
    # `python -m mleaudit` imports mleaudit/__init__.py before mleaudit/__main__.py can clean the path, so
    # whatever the package module imports at its top comes from the current directory first
    markers = tmp_path / "markers"
    _plant(tmp_path, setting["package"], markers)
    result = subprocess.run([sys.executable, "-m", "mleaudit", "--help"], cwd=tmp_path, env=_env(), capture_output=True,
                            text=True, timeout=60)
    found = sorted(p.name for p in markers.iterdir())
    assert not found, (f"mleaudit/__init__.py imports {', '.join(found)} at module level; from a folder holding "
                       f"{found[0]}.py, `python -m mleaudit` runs that file (the package module must import nothing)")
    assert result.returncode == 0, result.stderr[-3000:]


def test_clean_sys_path_removes_every_entry_meaning_the_current_directory(tmp_path: Path, monkeypatch) -> None:
    from mleaudit import _entry

    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    link = tmp_path.parent / f"{tmp_path.name}-link"
    link.symlink_to(tmp_path, target_is_directory=True)
    try:
        kept = [p for p in sys.path if p and os.path.isabs(p) and os.path.realpath(p) != str(tmp_path.resolve())]
        monkeypatch.setattr(sys, "path", ["", ".", "sub", "./x", str(tmp_path), str(link), *kept])
        removed = _entry.clean_sys_path()
        assert removed == ["", ".", "sub", "./x", str(tmp_path), str(link)]
        assert sys.path == kept
    finally:
        link.unlink()


def test_console_script_entry_point_cleans_the_path() -> None:
    import configparser

    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    assert config["options.entry_points"]["console_scripts"].split("=")[1].strip() == "mleaudit._entry:main"
