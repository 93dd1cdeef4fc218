"""The HTML report as a reviewer sees it: opened in real headless Chromium, with its script run.

The page holds two runs: the copied example (a flagged pair against a reference notebook) and an
invented report whose audited text tries to inject a script. ``--dump-dom`` gives the document
after the page's script ran (it draws the side-by-side views from the page's data block);
``--screenshot`` keeps a picture of the side-by-side view under the test's temporary folder. A
large invented page (hundreds of flagged pairs, its data block compressed) checks that a big
report stays small, opens, and draws a pair when its link is followed. Skipped when no Chromium
is installed (Debian package ``chromium``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from mleaudit.audit.formatters.common import as_report_dict
from mleaudit.audit.formatters.html import render_html
from tests.audit.test_formatters import (
    AGENT_TEXT,
    FRAGMENTS,
    INJECTION,
    REFERENCE_TEXT,
    _page,
    hostile_report,
    report_data,
)

ROOT = Path(__file__).resolve().parents[1]
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--virtual-time-budget=5000")


def _browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no headless browser: install the Debian package `chromium` (.ci/run does when apt-get works)")


class _Dom(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=False)
        self.ids: list[str] = []
        self.links: list[str] = []
        self.scripts = 0
        self.html_attrs: dict[str, str] = {}
        self.active: list[tuple[str, str]] = []  # (tag, data-frags) of activated elements
        self.frag_links: dict[str, int] = {}  # pair id -> number of highlighted stretches
        self._pair = ""

    def handle_starttag(self, tag, attrs):
        attrs = {k: v or "" for k, v in attrs}
        if tag == "html":
            self.html_attrs = attrs
        if tag == "script":
            self.scripts += 1
        if "id" in attrs:
            self.ids.append(attrs["id"])
        classes = attrs.get("class", "").split()
        if tag == "details" and "pair" in classes:
            self._pair = attrs["id"]
        if tag == "a" and attrs.get("href", "").startswith("#"):
            self.links.append(attrs["href"][1:])
        if tag == "a" and "frag" in classes:
            self.frag_links[self._pair] = self.frag_links.get(self._pair, 0) + 1
        if "active" in classes:
            self.active.append((tag, attrs.get("data-frags", "")))


def _run_browser(args: list[str], home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(home)}
    return subprocess.run([_browser(), *FLAGS, f"--user-data-dir={home / 'profile'}", *args],
                          capture_output=True, text=True, timeout=90, env=env)


@pytest.fixture(scope="module")
def page_path(tmp_path_factory) -> Path:
    _browser()
    from mleaudit.audit.pipeline import AuditOptions, audit_run
    from mleaudit.audit.rules.loader import find_rules_root, load_ruleset
    from mleaudit.audit.run import load_run

    copied = audit_run(
        load_run(ROOT / "examples" / "runs" / "copied-digits"),
        ruleset=load_ruleset([find_rules_root(None)]),
        options=AuditOptions(corpus_dir=ROOT / "competitions" / "sklearn-digits" / "kernels"),
    )
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(render_html([copied, hostile_report()]), encoding="utf-8")
    return path


def test_chromium_runs_the_page_script_and_every_link_resolves(page_path):
    counts = {pid: len(pair["f"]) for run in report_data(page_path.read_text(encoding="utf-8")).values()
              for pid, pair in run["pairs"].items()}
    last = counts["r1-p1"]  # the copied example's last fragment
    result = _run_browser(["--dump-dom", page_path.as_uri() + f"#r1-p1-b{last}"], page_path.parent)
    assert result.returncode == 0, result.stderr[-2000:]
    dom = _Dom()
    dom.feed(result.stdout)
    dom.close()
    assert dom.html_attrs.get("data-ready") == "1", "the page script did not run"
    assert dom.scripts == 1, "audited text created a script element"
    assert "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in result.stdout
    assert INJECTION not in result.stdout
    assert len(dom.ids) == len(set(dom.ids))
    missing = sorted(set(dom.links) - set(dom.ids))
    assert missing == [], f"links without a target: {missing[:10]}"
    # Both flagged pairs of the invented run and the copied example's pair show fragments both ways.
    assert counts["r2-p1"] == 3
    for pair, count in (("r1-p1", counts["r1-p1"]), ("r2-p1", 3)):
        for i in range(1, count + 1):
            assert f"{pair}-a{i}" in dom.ids and f"{pair}-b{i}" in dom.ids
        assert dom.frag_links.get(pair, 0) >= 2 * count
    assert {"r2-p2-a1", "r2-p2-b1"} <= set(dom.ids)  # reference text not in the report: placeholder target
    # Opening the page at the copied pair's last fragment activates it on both sides and in the table.
    assert dom.active, "no fragment was activated"
    assert all(str(last) in frags.split() for _, frags in dom.active)
    assert {tag for tag, _ in dom.active} == {"a", "tr"}


def test_chromium_screenshot_of_the_side_by_side_view(page_path):
    shot = page_path.parent / "side-by-side.png"
    # Headless screenshots of a page scrolled to an anchor can come out blank: take the top, tall.
    result = _run_browser(["--window-size=1400,2600", f"--screenshot={shot}", page_path.as_uri()], page_path.parent)
    assert result.returncode == 0, result.stderr[-2000:]
    print(f"screenshot of the HTML report: {shot}")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000  # a blank page compresses to a few kB


def _dom(path: Path, fragment: str = "") -> str:
    result = _run_browser(["--dump-dom", path.as_uri() + fragment], path.parent)
    assert result.returncode == 0, result.stderr[-2000:]
    assert 'data-ready="1"' in result.stdout, "the page script did not run"
    return result.stdout


@pytest.fixture(scope="module")
def hostile_page(tmp_path_factory) -> Path:
    _browser()
    path = tmp_path_factory.mktemp("hostile") / "report.html"
    path.write_text(render_html(hostile_report()), encoding="utf-8")
    return path


def test_chromium_highlights_exactly_the_fragment_text(hostile_page):
    page = _page(_dom(hostile_page))
    for number, fragment in enumerate(FRAGMENTS, start=1):
        for pane, side, text in (("pane-agent", fragment.agent, AGENT_TEXT),
                                 ("pane-reference", fragment.reference, REFERENCE_TEXT)):
            expected = text[side.start_byte:side.end_byte].replace("\n", "")
            assert "".join(page.pieces[("r1-p1", pane, str(number))]) == expected, (pane, number)


def test_chromium_shows_notebook_cells_as_cells(hostile_page):
    import re

    dom = _dom(hostile_page)
    assert [int(m) for m in re.findall(r'<div class="cell-in">cell (\d+)</div>', dom)] == [1, 3, 4]
    # Line numbers restart in each cell; the joined-code line is in the title.
    assert '<span class="line hl" title="code line 5"><span class="ln">2</span>' in dom


def test_chromium_falls_back_to_whole_lines_when_offsets_disagree(tmp_path):
    _browser()
    data = as_report_dict(hostile_report())
    fragment = data["similarity"]["pairs"][0]["evidence_fragments"][0]
    fragment["agent"]["start_byte"] += 5  # still on the span's start line: the offsets are used
    fragment["reference"]["start_byte"] = 10_000  # past the end: the span's whole lines are used
    path = tmp_path / "report.html"
    path.write_text(render_html(data), encoding="utf-8")
    page = _page(_dom(path))
    assert "".join(page.pieces[("r1-p1", "pane-agent", "1")]) == "t pandas as pd"
    assert "".join(page.pieces[("r1-p1", "pane-reference", "1")]) == "import pandas as pd"


def large_report(files: int = 150, pairs_per_file: int = 8) -> dict:
    """An invented report of ``files`` agent files, each flagged against ``pairs_per_file`` of a
    corpus of notebooks: the shape of an audit of many partial copies against a shared corpus."""
    base = as_report_dict(hostile_report())
    template = base["similarity"]["pairs"][0]
    notebook_lines = [f"feature_{i} = frame['col_{i}'].fillna(frame['col_{i}'].median()) * {i}" for i in range(300)]
    notebooks = {f"kernels/nb-{k:03d}.py": "\n".join(notebook_lines[k % 50:] + notebook_lines[:k % 50]) + "\n"
                 for k in range(60)}
    agents = {f"code/case{n:03d}.py": "import pandas as pd\n" + "\n".join(notebook_lines[n % 100:n % 100 + 120]) + "\n"
              for n in range(files)}
    pairs, findings = [], []
    names = sorted(notebooks)
    for n, agent in enumerate(sorted(agents)):
        for j in range(pairs_per_file):
            reference = names[(n + j * 7) % len(names)]
            pair = dict(template, agent_path=agent, reference_path=reference, reference_id=reference[:-3], flagged=True)
            fragments = []
            for f in range(10):
                line = 2 + f * 10
                start = agents[agent].index(notebook_lines[(n % 100) + f * 10])
                span = {"path": agent, "start_byte": start, "end_byte": start + 40, "start_line": line,
                        "end_line": line + 5, "start_col": 1, "end_col": 1}
                fragments.append({**template["evidence_fragments"][0], "agent": span,
                                  "reference": dict(span, path=reference), "length": 60})
            pair["evidence_fragments"] = fragments
            pair["fragments"] = fragments
            pairs.append(pair)
            finding = dict(base["findings"][0], rule_id="plag-kernel-containment", evidence=[
                {"path": agent, "start_line": 2, "end_line": 60, "label": f"kernel fragment: {reference} lines 2–60",
                 "excerpt": agents[agent][:2000]} for _ in range(5)])
            findings.append(finding)
    base["findings"] = findings
    base["similarity"]["pairs"] = pairs
    base["similarity"]["sources"] = {
        "agent": {path: {"kind": "file", "text": text, "cells": []} for path, text in agents.items()},
        "reference": {path: {"kind": "file", "text": text, "cells": []} for path, text in notebooks.items()},
    }
    return base


#: Bytes of HTML per flagged pair of a large report (finding, table row, view, data). The audit of
#: the 153 shared partial-copy cases (1,449 flagged pairs) writes 3.1 MB: about 2,100 bytes a pair.
MAX_BYTES_PER_PAIR = 3_000


def test_chromium_opens_a_large_report_and_draws_a_pair_on_demand(tmp_path):
    _browser()
    report = large_report()
    text = render_html(report)
    flagged = len(report["similarity"]["pairs"])
    assert len(text.encode("utf-8")) <= MAX_BYTES_PER_PAIR * flagged, len(text) / flagged
    data = report_data(text)["r1"]
    assert len(data["texts"]) == len(report["similarity"]["sources"]["agent"]) + 60  # each text once
    assert 'data-encoding="gzip-base64"' in text
    path = tmp_path / "large.html"
    path.write_text(text, encoding="utf-8")
    last = f"r1-p{flagged}"
    dom = _dom(path, f"#{last}-b3")
    page = _Dom()
    page.feed(dom)
    page.close()
    assert page.scripts == 1
    # Opening at a fragment of the last pair drew that pair (and only the pairs asked for).
    assert {f"{last}-a3", f"{last}-b3"} <= set(page.ids)
    assert page.frag_links.get(last, 0) >= 10
    assert dom.count('data-rendered="1"') == 1
    assert page.active and all("3" in frags.split() for _, frags in page.active)
    # Key elements: the glossary, the legend, the copied pairs table; every static link resolves.
    assert {"rules", "legend", "r1-similarity"} <= set(page.ids)
    assert sorted(set(page.links) - set(page.ids)) == []
