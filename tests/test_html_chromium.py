"""The HTML report as a reviewer sees it: opened in real headless Chromium, with its script run.

The page holds two runs: the copied example (a flagged pair against a reference notebook) and an
invented report whose audited text tries to inject a script. ``--dump-dom`` gives the document
after the page's script ran; ``--screenshot`` keeps a picture of the side-by-side view under the
test's temporary folder. Skipped when no Chromium is installed (Debian package ``chromium``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from audit.formatters.html import render_html
from tests.audit.test_formatters import INJECTION, hostile_report

ROOT = Path(__file__).resolve().parents[1]
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking")


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
        if tag == "section" and "pair" in classes:
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
    from audit.pipeline import AuditOptions, audit_run
    from audit.rules.loader import find_rules_root, load_ruleset
    from audit.run import load_run

    copied = audit_run(
        load_run(ROOT / "examples" / "runs" / "copied-digits"),
        ruleset=load_ruleset([find_rules_root(None)]),
        options=AuditOptions(corpus_dir=ROOT / "competitions" / "sklearn-digits" / "kernels"),
    )
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(render_html([copied, hostile_report()]), encoding="utf-8")
    return path


def test_chromium_runs_the_page_script_and_every_link_resolves(page_path):
    result = _run_browser(["--dump-dom", page_path.as_uri() + "#r1-p1-b2"], page_path.parent)
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
    for pair, count in (("r1-p1", 2), ("r2-p1", 3)):
        for i in range(1, count + 1):
            assert f"{pair}-a{i}" in dom.ids and f"{pair}-b{i}" in dom.ids
        assert dom.frag_links.get(pair, 0) >= 2 * count
    assert {"r2-p2-a1", "r2-p2-b1"} <= set(dom.ids)  # reference text not in the report: placeholder target
    # Opening the page at fragment 2 of the copied pair activates it on both sides and in the table.
    assert dom.active, "no fragment was activated"
    assert all("2" in frags.split() for _, frags in dom.active)
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
