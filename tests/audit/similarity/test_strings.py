"""Code kept in string literals is compared as code: one literal, literals side by side, a list of
lines, ``+=`` chains, bytes and escapes; data and prose in strings are not code."""

from __future__ import annotations

from pathlib import Path

import pytest

from mleaudit.audit.similarity.strings import MAX_STRING_UNITS, string_code_units
from mleaudit.audit.units import CodeUnit
from tests.audit.invented_kernels import LANTERN_KERNEL, audit_against

KERNEL = LANTERN_KERNEL
LINES = KERNEL.splitlines()


def _wrappers() -> dict[str, str]:
    return {
        "triple-quoted": 'exec("""' + KERNEL + '""")\n',
        "one-escaped-literal": f"exec({KERNEL!r})\n",
        "list-joined": "parts = [\n" + "".join(f"    {line!r},\n" for line in LINES) + "]\nexec('\\n'.join(parts))\n",
        "tuple-of-lines": "parts = (\n" + "".join(f"    {line + chr(10)!r},\n" for line in LINES) + ")\nexec(''.join(parts))\n",
        "side-by-side": "src = (\n" + "".join(f"    {line + chr(10)!r}\n" for line in LINES) + ")\nexec(src)\n",
        "plus-equals": "src = ''\n" + "".join(f"src += {line + chr(10)!r}\n" for line in LINES) + "exec(src)\n",
        "bytes": f"exec({KERNEL.encode()!r}.decode())\n",
        "compile": f"code = compile({KERNEL!r}, '<k>', 'exec')\nexec(code)\n",
        "inside-a-function": "def run():\n    src = ''\n" + "".join(f"    src += {line + chr(10)!r}\n" for line in LINES)
                             + "    exec(src)\n",
        "shebang-first": f"src = {'#!/bin/bash' + chr(10) + KERNEL!r}\nexec(src)\n",
        "shell-word-first": f"src = {'tail : int = 0' + chr(10) + KERNEL!r}\nexec(src)\n",
        "appended": "lines = []\n" + "".join(f"lines.append({line!r})\n" for line in LINES) + "exec('\\n'.join(lines))\n",
        "plus-rebound": "src = ''\n" + "".join(f"src = src + {line + chr(10)!r}\n" for line in LINES) + "exec(src)\n",
        "chain-interleaved": "src = ''\n" + "".join(f"step = {i}\nsrc += {line + chr(10)!r}\n" for i, line in enumerate(LINES))
                             + "exec(src)\n",
        "dict-values": "parts = {\n" + "".join(f"    {i}: {line!r},\n" for i, line in enumerate(LINES)) + "}\n"
                       "exec('\\n'.join(parts.values()))\n",
        "mixed-list": "parts = [None,\n" + "".join(f"    {line!r},\n" for line in LINES) + "]\nexec('\\n'.join(parts[1:]))\n",
        "tuple-pairs": "parts = [\n" + "".join(f"    ({i}, {line!r}),\n" for i, line in enumerate(LINES)) + "]\n"
                       "exec('\\n'.join(p for _, p in parts))\n",
    }


def _normal(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if line.strip())


#: Forms reassembled from every literal in source order: the numbers or names between the lines stay.
_ALL_LITERALS_FORMS = ("appended", "plus-rebound", "chain-interleaved", "dict-values", "mixed-list", "tuple-pairs")


@pytest.mark.parametrize("name", list(_wrappers()))
def test_code_in_strings_is_reassembled(name: str) -> None:
    units = string_code_units(CodeUnit(path="run.py", language="python", text=_wrappers()[name]))
    if name in _ALL_LITERALS_FORMS:
        assert len(units) == 1 and all(line in units[0].text for line in LINES)
        return
    if name in ("shebang-first", "shell-word-first"):
        assert len(units) == 1 and units[0].text.endswith(KERNEL)
        return
    assert [_normal(u.text) for u in units] == [_normal(KERNEL)]
    unit = units[0]
    assert unit.path == "run.py" and unit.language == "python" and unit.origin is not None
    assert unit.origin.start_line <= 2 and unit.origin.end_line >= len(LINES) - 2 or name in (
        "one-escaped-literal", "bytes", "compile", "shebang-first", "shell-word-first")


@pytest.mark.parametrize("text", [
    "cols = ['MSZoning', 'Street', 'Alley', 'LotShape', 'LandContour']\n",
    "msg = 'The model was trained for three epochs.\\nValidation loss went down.\\nDone.'\n",
    "query = '''SELECT id, label\nFROM train\nWHERE fold = 3\nORDER BY id'''\n",
    "x = 1\nprint('a = 1')\n",
    "labels = ('cat', 'dog', 'bird', 'fish')\n",
    "",
])
def test_data_and_prose_in_strings_are_not_code(text: str) -> None:
    assert string_code_units(CodeUnit(path="run.py", language="python", text=text)) == []


def test_other_languages_and_units_without_strings_give_nothing() -> None:
    assert string_code_units(CodeUnit(path="run.sh", language="bash", text=f"echo {KERNEL!r}")) == []
    assert string_code_units(CodeUnit(path="run.py", language="python", text="x = 1\n")) == []


def test_units_taken_from_one_host_are_bounded_and_distinct() -> None:
    blocks = [f"s{i} = '''import os\nvalue_{i} = os.getcwd()\nprint(value_{i})\n'''\n" for i in range(80)]
    text = "".join(blocks) + "again = '''import os\nvalue_0 = os.getcwd()\nprint(value_0)\n'''\n"
    units = string_code_units(CodeUnit(path="run.py", language="python", text=text))
    # the 32 largest one by one, then one unit holding the others: decoys cannot push a copy out
    assert len(units) == MAX_STRING_UNITS + 1
    assert len({u.text for u in units}) == len(units)
    assert all(f"value_{i} = os.getcwd()" in "".join(u.text for u in units) for i in range(80))


def test_a_huge_literal_is_read_whole() -> None:
    text = f"src = {KERNEL + chr(10) + '#' * 4_100_000 + chr(10)!r}\nexec(src)\n"
    units = string_code_units(CodeUnit(path="run.py", language="python", text=text))
    assert len(units) == 1 and units[0].text.startswith(KERNEL)


def test_broken_and_hostile_literals_do_not_stop_the_reading() -> None:
    text = ("a = 'unterminated\nb = f'{x}' 'y'\nc = ['\\N{NO SUCH NAME}', 'x']\n"
            + "d = [" + ", ".join("'x'" for _ in range(50_000)) + "]\n")
    assert string_code_units(CodeUnit(path="run.py", language="python", text=text)) == []


@pytest.mark.parametrize("name", ["list-joined", "side-by-side", "plus-equals", "shebang-first", "appended"])
def test_a_kernel_split_into_literals_is_flagged_in_the_audit(tmp_path: Path, name: str) -> None:
    report = audit_against(tmp_path, {"lantern.py": KERNEL}, {"solution.py": _wrappers()[name]})
    flagged = [p for p in report["similarity"]["pairs"] if p["flagged"]]
    assert flagged and flagged[0]["agent_containment"] > 0.9 and flagged[0]["longest_fragment"] > 20
    assert any(f["rule_id"] == "plag-kernel-containment" for f in report["findings"])
