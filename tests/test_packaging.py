"""The built wheel holds one import package, ``mleaudit``, with the code, the rules and the competitions.

The repository keeps ``audit/``, ``grading/``, ``sandbox/``, ``rules/`` and ``competitions/`` at its top;
``setup.py`` maps them under ``mleaudit``. A wheel that left a folder out, or put a generic ``audit``
package at the top of site-packages, would install a tool that cannot run or that shadows another
distribution. (``.ci/run`` also installs the wheel into an empty environment and runs the quickstart.)
"""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAPPED = ("audit", "grading", "sandbox", "rules", "competitions", "mleaudit")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    pytest.importorskip("wheel", reason="building a wheel without network needs the wheel package (test extra)")
    out = tmp_path_factory.mktemp("wheel")
    # a copy of the mapped folders and the build files: building writes build/ and *.egg-info
    source = out / "source"
    source.mkdir()
    for name in (*MAPPED, "setup.py", "setup.cfg", "pyproject.toml", "README.md"):
        if (ROOT / name).is_dir():
            subprocess.run(["cp", "-r", str(ROOT / name), str(source / name)], check=True)
        else:
            subprocess.run(["cp", str(ROOT / name), str(source / name)], check=True)
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                             "--no-index", "-w", str(out / "dist"), str(source)],
                            capture_output=True, text=True, timeout=300, env={**os.environ, "PIP_NO_INPUT": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    (built,) = (out / "dist").glob("mleaudit-*.whl")
    return zipfile.ZipFile(built)


def _tracked(folder: str) -> list[str]:
    found = []
    for path in sorted((ROOT / folder).rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and not path.name.endswith((".pyc", ".pyo")):
            found.append(path.relative_to(ROOT).as_posix())
    return found


def test_the_wheel_installs_one_import_package(wheel: zipfile.ZipFile) -> None:
    tops = {name.split("/")[0] for name in wheel.namelist()}
    assert {top for top in tops if not top.endswith(".dist-info")} == {"mleaudit"}


@pytest.mark.parametrize("folder", ["audit", "grading", "sandbox", "rules", "competitions"])
def test_every_file_of_a_mapped_folder_ships_under_mleaudit(wheel: zipfile.ZipFile, folder: str) -> None:
    names = set(wheel.namelist())
    missing = [path for path in _tracked(folder) if f"mleaudit/{path}" not in names]
    assert not missing, f"left out of the wheel: {missing[:10]}"


def test_the_console_script_starts_at_the_path_cleaning_entry(wheel: zipfile.ZipFile) -> None:
    (entry_points,) = [name for name in wheel.namelist() if name.endswith(".dist-info/entry_points.txt")]
    config = configparser.ConfigParser()
    config.read_string(wheel.read(entry_points).decode("utf-8"))
    assert config["console_scripts"]["mleaudit"] == "mleaudit._entry:main"


def test_the_data_folders_are_found_where_the_wheel_puts_them(monkeypatch) -> None:
    # installed, rules/ and competitions/ sit beside the audit and grading packages inside
    # mleaudit/; in the checkout, beside the mapped folders: the same relative place for both
    from mleaudit import audit, grading
    from mleaudit.audit.rules.loader import find_rules_root
    from mleaudit.grading.paths import find_competitions_root

    monkeypatch.delenv("MLEAUDIT_RULES", raising=False)
    monkeypatch.delenv("MLEAUDIT_COMPETITIONS", raising=False)
    assert find_rules_root() == Path(audit.__file__).resolve().parents[1] / "rules"
    assert find_competitions_root() == Path(grading.__file__).resolve().parents[1] / "competitions"
