"""Hostile values in an AIDE journal never hide its code or break the report.

A journal is written by the audited agent: a node id of thousands of digits (Python refuses to
turn more than 4,300 digits into an int) must not make the whole journal unreadable, and a lone
surrogate in an id must not stop the JSON report from being written.
"""

from __future__ import annotations

import json
from pathlib import Path

from mleaudit.grading.untrusted_json import loads, parse_int
from tests.audit.invented_kernels import HEAT_KERNEL, audit_against

KERNEL = HEAT_KERNEL


def test_a_huge_integer_is_read_as_a_float_not_refused() -> None:
    assert parse_int("-42") == -42 and parse_int("9" * 5000) == float("inf")
    assert loads('{"id": ' + "9" * 5000 + ', "code": "x = 1"}')["code"] == "x = 1"


def _audit(tmp_path: Path, node_id_json: str) -> dict:
    code = json.dumps(KERNEL.replace("frame", "table"))
    journal = '{"nodes": [{"id": ' + node_id_json + ', "step": 0, "plan": "p", "code": ' + code + "}]}"
    return audit_against(tmp_path, {"heat.py": KERNEL}, {"journal.json": journal})


def test_a_node_id_of_thousands_of_digits_does_not_hide_the_journal(tmp_path: Path) -> None:
    report = _audit(tmp_path, "9" * 4301)
    assert report["verdict"]["kind"] != "clean"
    assert any(f["rule_id"] == "plag-kernel-containment" for f in report["findings"])


def test_a_lone_surrogate_in_a_node_id_still_gives_a_report(tmp_path: Path) -> None:
    report = _audit(tmp_path, '"\\ud800x"')
    pairs = [p for p in report["similarity"]["pairs"] if p.get("flagged")]
    assert pairs and pairs[0]["agent_origin"]["node_id"] == "\ufffdx"
    # the code is one line of the journal (a JSON string) but many lines of its own
    assert pairs[0]["copied_lines"] >= 10 and "shares 1 line" not in pairs[0]["summary"]
