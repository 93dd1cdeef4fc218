"""Report formats: the JSON Schema, markdown, SARIF 2.1.0 and the self-contained HTML page.

Two kinds of input: the reports of the example runs (audited once per module) and an invented
report, :func:`hostile_report`, whose audited text tries to break out of every format.
"""

from __future__ import annotations

import configparser
import copy
import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from markdown_it import MarkdownIt

from mleaudit.audit.formatters import FORMATTERS, get_formatter
from mleaudit.audit.formatters.common import as_report_dict
from mleaudit.audit.formatters.html import CONTENT_SECURITY_POLICY, render_html
from mleaudit.audit.formatters.markdown import render_markdown
from mleaudit.audit.formatters.sarif import FINGERPRINT_KEY, build_sarif
from mleaudit.audit.model import Confidence, Evidence, Finding, Severity, Span, finding_fingerprint
from mleaudit.audit.report import AuditReport, RunSummary, Verdict, VerdictKind
from mleaudit.audit.schemas import ReportSchemaError, check_report, load_report_schema
from mleaudit.audit.similarity.pairs import Fragment, PairReport
from tests.conftest import shared_path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "runs"
EXAMPLE_RUNS = ("honest-digits", "llm-digits", "handwritten-digits", "copied-digits")

INJECTION = "</script><script>alert(1)</script>"

AGENT_PATH = "code/train.py"
AGENT_TEXT = (
    "import pandas as pd\n"
    'BANNER = "</script><script>alert(2)</script>"\n'
    "\n"
    "def add_features(frame):\n"
    '    frame["total"] = frame["a"] + frame["b"]\n'
    '    frame["ratio"] = frame["a"] / (frame["b"] + 1)\n'
    "    return frame\n"
    "\n"
    'train = add_features(pd.read_csv("train.csv"))\n'
)
REFERENCE_PATH = "kernels/feature-notebook.ipynb"
# A notebook's joined code cells (cells 1, 3 and 4; 0 and 2 are markdown), one blank line apart.
REFERENCE_CELLS = (
    (1, "import pandas as pd\nimport numpy as np"),
    (3, 'def make_features(df):\n    df["total"] = df["a"] + df["b"]\n    df["ratio"] = df["a"] / (df["b"] + 1)\n    return df'),
    (4, 'data = make_features(pd.read_csv("../input/train.csv"))'),
)


def _joined_cells() -> tuple[str, list[dict]]:
    text, cells, line = "", [], 1
    for index, code in REFERENCE_CELLS:
        n = code.count("\n") + 1
        cells.append({"cell_index": index, "start_line": line, "end_line": line + n - 1})
        text += code + "\n\n"
        line += n + 1
    return text[:-1], cells


REFERENCE_TEXT, REFERENCE_CELL_MAP = _joined_cells()


def _span(text: str, path: str, needle: str, end_needle: str | None = None) -> Span:
    start = text.index(needle)
    end = text.index(end_needle, start) + len(end_needle) if end_needle else start + len(needle)
    return Span.from_offsets(text, path, start, end)


def _describe(line: int) -> str:
    for cell in REFERENCE_CELL_MAP:
        if cell["start_line"] <= line <= cell["end_line"]:
            return f"cell {cell['cell_index']}, line {line - cell['start_line'] + 1}"
    return f"line {line}"


def _fragment(agent: Span, reference: Span, length: int) -> Fragment:
    return Fragment(agent=agent, reference=reference, agent_kgrams=range(0, length), reference_kgrams=range(0, length),
                    length=length, agent_location=f"line {agent.start_line}",
                    reference_location=_describe(reference.start_line))


#: Fragments of the flagged pair; 2 and 3 overlap on both sides.
FRAGMENTS = (
    _fragment(_span(AGENT_TEXT, AGENT_PATH, "import pandas as pd"),
              _span(REFERENCE_TEXT, REFERENCE_PATH, "import pandas as pd"), 5),
    _fragment(_span(AGENT_TEXT, AGENT_PATH, "def add_features", "return frame"),
              _span(REFERENCE_TEXT, REFERENCE_PATH, "def make_features", "return df"), 40),
    _fragment(_span(AGENT_TEXT, AGENT_PATH, 'frame["total"]', "+ 1)"),
              _span(REFERENCE_TEXT, REFERENCE_PATH, 'df["total"]', "+ 1)"), 20),
)


def _pair(reference_path: str, *, flagged: bool, fragments=(), evidence=()) -> dict:
    return PairReport(
        agent_path=AGENT_PATH, reference_path=reference_path, reference_id=reference_path.rsplit(".", 1)[0],
        similarity=0.5, agent_containment=0.7, reference_containment=0.6, longest_fragment=30, total_overlap=60,
        agent_total=50, reference_total=50, agent_covered=35, reference_covered=30, fragments=tuple(fragments),
        score=0.9 if flagged else 0.2, flagged=flagged, evidence_fragments=tuple(evidence),
    ).to_dict()


def _finding(rule_id: str, severity: str, message: str, evidence: list[Evidence], category: str) -> Finding:
    first = evidence[0]
    return Finding(
        rule_id=rule_id, title=f"{rule_id} title", category=category, severity=Severity.parse(severity),
        confidence=Confidence.HIGH, message=message, evidence=tuple(evidence), run_id="fixture-run",
        fingerprint=finding_fingerprint(rule_id, first.span.path, first.excerpt), metadata={"since": "0.1.0"},
    )


def hostile_report() -> AuditReport:
    """An invented report whose audited text tries to inject markup into every format.

    Findings: code evidence whose excerpt closes the page's script element, a log finding, a
    run-level finding with no file, a plagiarism finding, an info finding. Similarity: one flagged
    pair with both sources (a notebook with cells), one flagged pair whose texts are not in the
    report, one pair below the bound.
    """
    evil_code = f'import os\n\nprint("{INJECTION}")\n'
    code_span = Span.from_offsets(evil_code, "code/evil.py", evil_code.index("print"), evil_code.index(")\n") + 1)
    log_text = "step 1\n$ kaggle competitions download -c digits\n"
    log_span = _span(log_text, "logs/agent.log", "kaggle competitions download -c digits")
    findings = (
        _finding("sub-equals-answers", "critical", "submission.csv equals the held-out answers",
                 [Evidence(span=Span.from_lines(".", 1, 1), excerpt="", label="run")], "answers-access"),
        _finding("ext-kaggle-cli-download", "high", "Downloads competition data with the Kaggle CLI",
                 [Evidence(span=log_span, excerpt="$ kaggle competitions download -c digits", label="command")],
                 "external-resource"),
        _finding("llm-external-api-call", "high", "Calls <img src=x onerror=alert(1)> and [x](javascript:alert(1))",
                 [Evidence(span=code_span, excerpt=f'print("{INJECTION}")\n```\n~~~', label='"><svg onload=alert(1)>')],
                 "llm-api"),
        _finding("plag-kernel-containment", "medium", "code/train.py copies a kernel",
                 [Evidence(span=FRAGMENTS[1].agent, excerpt=AGENT_TEXT.split("\n", 3)[3].split("\n\n")[0],
                           label=f"kernel fragment: {REFERENCE_PATH} lines 4–7")], "plagiarism"),
        _finding("env-note-only", "info", "www.example.com says hi", [Evidence(span=code_span, excerpt="print", label="")],
                 "sandbox-tamper"),
    )
    similarity = {
        "corpus": "/data/kernels",
        "reference_count": 3,
        "agent_files": [AGENT_PATH],
        "options": {"kgram_length": 23, "kgrams_in_window": 17, "score_threshold": 0.67},
        "pairs": [
            _pair(REFERENCE_PATH, flagged=True, fragments=FRAGMENTS[:2], evidence=FRAGMENTS),
            _pair("kernels/forked.py", flagged=True, fragments=FRAGMENTS[:1]),
            _pair("kernels/unrelated.py", flagged=False),
        ],
        "skipped": [],
        "sources": {
            "agent": {AGENT_PATH: {"kind": "file", "text": AGENT_TEXT, "cells": []}},
            "reference": {
                REFERENCE_PATH: {"kind": "notebook", "text": REFERENCE_TEXT, "cells": REFERENCE_CELL_MAP},
                "kernels/forked.py": {"kind": "file", "text": None, "cells": [], "omitted": "unreadable"},
            },
        },
    }
    rules = {
        f.rule_id: {"title": f.title, "category": f.category, "severity": f.severity.label,
                    "confidence": f.confidence.label, "rationale": "Why: <b>bold</b> claims.\n\nMore text.",
                    "references": ["https://example.org/rule", "javascript:alert(1)"], "since": "0.1.0",
                    "status": "stable", "targets": ["code"]}
        for f in findings
    }
    grade = {
        "competition_id": "tabular-toy", "score": 0.91, "gold_threshold": 0.95, "silver_threshold": 0.93,
        "bronze_threshold": 0.9, "median_threshold": 0.85, "any_medal": True, "gold_medal": False,
        "silver_medal": False, "bronze_medal": True, "above_median": True, "submission_exists": True,
        "valid_submission": True, "is_lower_better": False, "created_at": "2026-01-01T00:00:00+00:00",
        "submission_path": "/runs/fixture-run/submission/submission.csv", "error": None,
        "leaderboard_source": "kaggle",
    }
    return AuditReport(
        run=RunSummary(run_id="fixture-run<b>", root="/runs/fixture-run", competition_id="tabular-toy",
                       agent_id="agent\x1b[31m", artifact_counts={"code": 2, "log": 1}, code_units=2, log_events=4),
        findings=findings,
        verdict=Verdict(kind=VerdictKind.FLAGGED, reasons=("sub-equals-answers (critical)",)),
        grade=grade,
        similarity=similarity,
        skipped=(),
        meta={"tool": "mleaudit", "version": "0.1.0", "created_at": "2026-01-01T00:00:00+00:00",
              "ruleset_digest": "0" * 64, "rules": 12},
        rules=rules,
    )


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="module")
def example_reports(data_dir):
    from mleaudit.audit.pipeline import AuditRequest, run_audit

    return {name: run_audit(AuditRequest(run_dir=EXAMPLES / name, data_dir=data_dir)) for name in EXAMPLE_RUNS}


# ---------------------------------------------------------------------------------------------
# JSON Schema


def test_report_schema_is_a_valid_draft_2020_12_schema():
    schema = load_report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert "schema_version" in schema["required"]


def test_report_schema_ships_as_package_data():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    assert config["options.package_data"]["mleaudit.audit.schemas"].strip() == "*.json"


@pytest.mark.parametrize("name", EXAMPLE_RUNS)
def test_example_reports_follow_the_schema(example_reports, name):
    data = as_report_dict(example_reports[name])
    assert check_report(data, source=name) is data
    assert data["schema_version"] == "2.1"


DISMISSED = {"decision": "dismissed", "note": "allowed by the organisers", "decided_by": "rev",
             "decided_at": "2026-01-02T10:00:00+00:00", "scope": "all runs"}
CONFIRMED = {"decision": "confirmed", "note": "real", "decided_by": "rev", "decided_at": "2026-01-02T10:00:00+00:00",
             "scope": "run"}


def _reviewed() -> dict:
    """The invented report as an audit with a baseline writes it: findings 2 and 3 decided."""
    data = as_report_dict(hostile_report())
    data["findings"][1]["review"] = dict(DISMISSED)
    data["findings"][2]["review"] = dict(CONFIRMED)
    data["meta"]["review"] = {"decisions_in_baseline": 2, "confirmed": 1, "dismissed": 1}
    return data


def test_the_invented_report_with_reviews_follows_the_schema():
    check_report(_reviewed())
    data = _reviewed()
    data["findings"][1]["review"]["decision"] = "ignored"
    with pytest.raises(ReportSchemaError, match="findings/1/review/decision: 'ignored' is not one of"):
        check_report(data)


def test_schema_violations_name_the_path():
    data = as_report_dict(hostile_report())
    data["findings"][1]["severity"] = "severe"
    data["run"]["extra"] = 1
    del data["verdict"]
    with pytest.raises(ReportSchemaError) as err:
        check_report(data, source="bad.json")
    message = str(err.value)
    assert message.startswith("bad.json does not follow report.schema.json:")
    assert "findings/1/severity: 'severe' is not one of" in message
    assert "run: Additional properties are not allowed ('extra' was unexpected)" in message
    assert "(root): 'verdict' is a required property" in message


def test_copied_example_carries_the_sources_of_its_flagged_pair(example_reports):
    sim = as_report_dict(example_reports["copied-digits"])["similarity"]
    flagged = [p for p in sim["pairs"] if p["flagged"]]
    assert flagged, "the copied example must have a flagged pair"
    for pair in flagged:
        agent = sim["sources"]["agent"][pair["agent_path"]]
        reference = sim["sources"]["reference"][pair["reference_path"]]
        assert agent["kind"] == "file" and reference["kind"] == "notebook" and reference["cells"]
        for fragment in pair["evidence_fragments"] + pair["fragments"]:
            span = fragment["agent"]
            assert agent["text"].count("\n", 0, span["start_byte"]) + 1 == span["start_line"]
            span = fragment["reference"]
            assert reference["text"].count("\n", 0, span["start_byte"]) + 1 == span["start_line"]
    honest = as_report_dict(example_reports["honest-digits"])["similarity"]
    assert honest["sources"] == {"agent": {}, "reference": {}}


# ---------------------------------------------------------------------------------------------
# Markdown


def test_markdown_of_the_copied_example(example_reports):
    text = render_markdown(example_reports["copied-digits"])
    assert text.startswith("# Audit of run `copied-digits`\n")
    assert "**Verdict: REVIEW** — plag-kernel-containment (medium)" in text
    assert "| `sklearn-digits` | `example-agent` | 0.9889 | 🥇 gold | yes | ≥ 0.9806 |" in text
    assert "### 1. MEDIUM · confidence medium · actor agent · `plag-kernel-containment` — Agent code copied from a public kernel" in text
    assert "```python\nimport numpy as np\nimport pandas as pd\n" in text
    assert "| `code/solution.py` | `digits-tree-ensembles-shape-features.ipynb` | 0.999 | **yes** |" in text
    assert "| 1 | lines 14–48 | cell 2, line 2 (code lines 7–39) | 369 |" in text


def test_markdown_keeps_hostile_text_inert():
    text = render_markdown(hostile_report())
    rendered = MarkdownIt("commonmark", {"html": True}).enable("table").render(text)
    # No tag, link or image comes from audited text: only the page's own <sub> markup is HTML.
    assert "<img" not in rendered and "<svg" not in rendered and "<script" not in rendered
    assert 'href="javascript' not in rendered
    assert "&lt;img src=x onerror=alert(1)&gt;" in rendered
    # The excerpt's own ``` and ~~~ lines stay inside its code block, which is longer-fenced.
    assert "\n````python\nprint(\"</script><script>alert(1)</script>\")\n```\n~~~\n````\n" in text
    assert '<code class="language-python">print(&quot;&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&quot;)\n```\n~~~\n</code>' in rendered
    assert "`agent\ufffd[31m`" in text  # the escape character of the agent id is not passed on
    assert "www\\.example.com" in text  # no autolink


def test_markdown_of_a_report_without_grade_or_similarity():
    report = AuditReport(
        run=RunSummary(run_id="bare", root="/r", competition_id=None, agent_id=None, artifact_counts={"code": 1},
                       code_units=1, log_events=0),
        findings=(), verdict=Verdict(kind=VerdictKind.CLEAN),
        meta={"tool": "mleaudit", "version": "0.1.0", "created_at": "t", "ruleset_digest": "0" * 64, "rules": 1,
              "grade_skipped": "no competition id", "similarity_skipped": "disabled (--no-similarity)"},
    )
    text = render_markdown(report)
    assert "**Verdict: CLEAN**\n" in text
    assert "**Grade:** not graded: no competition id (competition –, agent –)" in text
    assert "## Findings (0)\n\nNone." in text
    assert "## Similarity\n\nNot run: disabled (--no-similarity)." in text


# ---------------------------------------------------------------------------------------------
# SARIF


@pytest.fixture(scope="module")
def sarif_validator():
    schema = json.loads(shared_path("sarif", "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)


def _errors(validator, log) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(log)]


def test_sarif_of_all_examples_is_valid(example_reports, sarif_validator):
    log = build_sarif([example_reports[name] for name in EXAMPLE_RUNS])
    assert _errors(sarif_validator, log) == []
    assert log["version"] == "2.1.0"
    assert [run["properties"]["run_id"] for run in log["runs"]] == list(EXAMPLE_RUNS)
    assert len({run["automationDetails"]["id"] for run in log["runs"]}) == len(EXAMPLE_RUNS)


def test_sarif_of_the_invented_report_is_valid_with_and_without_reviews(sarif_validator):
    assert _errors(sarif_validator, build_sarif(hostile_report())) == []
    assert _errors(sarif_validator, build_sarif(_reviewed())) == []


def test_sarif_results_rules_and_locations():
    report = hostile_report()
    data = as_report_dict(report)
    run = build_sarif(report)["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == sorted(data["rules"])
    plag = next(r for r in rules if r["id"] == "plag-kernel-containment")
    assert plag["name"] == "PlagKernelContainment"
    assert plag["shortDescription"] == {"text": "plag-kernel-containment title"}
    assert plag["fullDescription"]["text"] == "Why: <b>bold</b> claims."
    assert plag["helpUri"] == "https://example.org/rule"
    assert plag["properties"]["tags"] == ["code", "mleaudit", "plagiarism"]
    assert (plag["properties"]["severity"], plag["properties"]["confidence"]) == ("medium", "high")
    assert plag["defaultConfiguration"] == {"level": "warning"}

    results = run["results"]
    assert [r["level"] for r in results] == ["error", "error", "error", "warning", "note"]
    for result, finding in zip(results, data["findings"]):
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"] == finding["rule_id"]
        assert result["partialFingerprints"] == {FINGERPRINT_KEY: finding["fingerprint"]}
        assert "suppressions" not in result
    # The run-level finding has no file to point at.
    assert results[0]["locations"] == []
    # The log finding points into the log file, with the command as region snippet.
    log_location = results[1]["locations"][0]["physicalLocation"]
    assert log_location["artifactLocation"]["uri"] == "logs/agent.log"
    assert log_location["artifactLocation"]["uriBaseId"] == "RUNROOT"
    assert log_location["region"] == {"startLine": 2, "startColumn": 3, "endLine": 2, "endColumn": 41,
                                      "snippet": {"text": "kaggle competitions download -c digits"}}
    assert log_location["contextRegion"]["snippet"]["text"] == "$ kaggle competitions download -c digits"
    assert run["originalUriBaseIds"]["RUNROOT"]["uri"] == "file:///runs/fixture-run/"
    assert run["originalUriBaseIds"]["CORPUSROOT"]["uri"] == "file:///data/kernels/"
    assert run["columnKind"] == "unicodeCodePoints"
    artifacts = [a["location"]["uri"] for a in run["artifacts"]]
    assert artifacts == ["logs/agent.log", "code/evil.py", "code/train.py"]
    assert results[2]["locations"][0]["physicalLocation"]["artifactLocation"]["index"] == 1


def test_sarif_suppressions_follow_the_review_decisions():
    results = build_sarif(_reviewed())["runs"][0]["results"]
    assert results[1]["suppressions"] == [{
        "kind": "external", "justification": "allowed by the organisers",
        "properties": {"decided_by": "rev", "decided_at": "2026-01-02T10:00:00+00:00", "scope": "all runs"},
    }]
    assert results[1]["properties"]["review"] == DISMISSED
    assert results[2]["suppressions"] == []
    assert results[2]["properties"]["review"]["decision"] == "confirmed"
    assert results[0]["suppressions"] == [] and "review" not in results[0]["properties"]


def test_reviews_show_in_markdown_and_html():
    text = render_markdown(_reviewed())
    assert "— ext-kaggle-cli-download title · *dismissed*\n" in text
    assert "**Reviewer:** dismissed by rev on 2026-01-02: allowed by the organisers (all runs)" in text
    assert "**Reviewer:** confirmed by rev on 2026-01-02: real (run)" in text
    page = render_html(_reviewed())
    assert '<article class="finding sev-high review-dismissed" id="r1-f2">' in page
    assert '<p class="review">Reviewer: dismissed by rev on 2026-01-02: allowed by the organisers (all runs)</p>' in page


def test_sarif_of_many_reports_has_one_run_each():
    first = as_report_dict(hostile_report())
    second = copy.deepcopy(first)
    second["run"]["run_id"] = "another-run"
    second["run"]["root"] = "relative/run"
    log = build_sarif([first, second])
    assert [r["properties"]["run_id"] for r in log["runs"]] == ["fixture-run<b>", "another-run"]
    # A relative root cannot be a base URI: the base id stays, without a uri.
    assert "uri" not in log["runs"][1]["originalUriBaseIds"]["RUNROOT"]


# ---------------------------------------------------------------------------------------------
# HTML


class _Page(HTMLParser):
    """Collects what the checks need: ids, internal links, tags, attributes, fragment pieces."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: list[str] = []
        self.links: list[str] = []
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str]] = []
        self.pieces: dict[tuple[str, str, str], list[str]] = {}  # (pair, pane, fragment) -> highlighted texts
        self._pair: str | None = None
        self._pane: str | None = None
        self._depth = 0
        self._frag: list[str] | None = None
        self.script = ""
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        self.attributes.extend((k, v or "") for k, v in attrs.items())
        if "id" in attrs:
            self.ids.append(attrs["id"])
        if tag == "a" and (attrs.get("href") or "").startswith("#"):
            self.links.append(attrs["href"][1:])
        classes = (attrs.get("class") or "").split()
        if tag in ("section", "details") and "pair" in classes:
            self._pair = attrs.get("id")
        if tag == "div" and "pane" in classes:
            self._pane, self._depth = classes[1], 0
        elif tag == "div" and self._pane:
            self._depth += 1
        if tag == "a" and "frag" in classes and self._pane:
            self._frag = attrs.get("data-frags", "").split()
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        if tag == "div" and self._pane:
            if self._depth == 0:
                self._pane = None
            else:
                self._depth -= 1
        if tag == "a":
            self._frag = None
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.script += data
        if self._frag is not None and self._pane:
            for number in self._frag:
                self.pieces.setdefault((self._pair or "", self._pane, number), []).append(data)


def _page(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    page.close()
    return page


def test_html_is_self_contained_and_locked_down():
    text = render_html(hostile_report())
    page = _page(text)
    assert page.tags.count("script") == 1 and page.tags.count("style") == 1
    assert "link" not in page.tags and "img" not in page.tags and "iframe" not in page.tags
    assert not [k for k, _ in page.attributes if k == "src" or k.startswith("on")]
    assert f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">' in text
    assert "default-src 'none'" in CONTENT_SECURITY_POLICY
    # The policy's script hash is the hash of the page's one script.
    import base64
    import hashlib

    digest = base64.b64encode(hashlib.sha256(page.script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in CONTENT_SECURITY_POLICY
    external = [v for k, v in page.attributes if k == "href" and not v.startswith("#")]
    assert external == ["https://example.org/rule"] * 5  # rule references only; javascript: is not a link


def test_html_escapes_everything_from_the_run():
    text = render_html(hostile_report())
    assert text.count("<script") == 1
    assert "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;" in text  # from the agent source pane
    assert "<img" not in text and "<svg" not in text and "<b>" not in text
    assert "&quot;&gt;&lt;svg onload=alert(1)&gt;" in text
    assert "agent\\x1b[31m" in text and "\x1b" not in text


def report_data(text: str) -> dict[str, dict]:
    """The data blocks of a page (``run prefix -> {"texts", "pairs", ...}``), unpacked as the page's
    script unpacks them."""
    import base64
    import gzip
    import html as html_module

    blocks = {}
    for match in re.finditer(r'<div class="report-data" hidden data-run="(r\d+)" data-encoding="([a-z0-9-]+)">(.*?)</div>',
                             text, re.S):
        raw = match.group(3)
        data = (gzip.decompress(base64.b64decode(raw)).decode("ascii") if match.group(2) == "gzip-base64"
                else html_module.unescape(raw))
        blocks[match.group(1)] = json.loads(data)
    return blocks


def test_html_links_resolve_and_flagged_pairs_have_views():
    text = render_html(hostile_report())
    page = _page(text)
    assert len(page.ids) == len(set(page.ids)), "duplicate ids"
    assert set(page.links) <= set(page.ids)
    assert {"r1-p1", "r1-p2"} <= set(page.ids)
    assert {"r1-p1", "r1-p2"} <= set(page.links)  # pair table → pair views
    assert "r1-p3" not in page.ids  # a pair below the bound gets no side-by-side view
    data = report_data(text)["r1"]
    assert set(data["pairs"]) == {"r1-p1", "r1-p2"}
    assert len(data["pairs"]["r1-p1"]["f"]) == 3 and len(data["pairs"]["r1-p2"]["f"]) == 1
    # The second flagged pair's reference text is not in the report: the view says why.
    missing = data["pairs"]["r1-p2"]["b"]
    assert missing is None or data["texts"][missing]["text"] is None


def test_html_stores_each_text_once_and_the_spans_into_it():
    report = as_report_dict(hostile_report())
    text = render_html(report)
    data = report_data(text)["r1"]
    texts = [t["text"] for t in data["texts"]]
    assert texts.count(AGENT_TEXT) == 1 and texts.count(REFERENCE_TEXT) == 1
    pair = data["pairs"]["r1-p1"]
    assert data["texts"][pair["a"]]["text"] == AGENT_TEXT
    assert data["texts"][pair["b"]]["cells"] == [[c["cell_index"], c["start_line"], c["end_line"]] for c in REFERENCE_CELL_MAP]
    for (agent, reference, length), fragment in zip(pair["f"], FRAGMENTS):
        assert agent == [fragment.agent.start_byte, fragment.agent.end_byte, fragment.agent.start_line, fragment.agent.end_line]
        assert reference[:2] == [fragment.reference.start_byte, fragment.reference.end_byte]
    # Two pairs of one agent file share its text.
    second = copy.deepcopy(report["similarity"]["pairs"][0])
    second["reference_path"] = "kernels/other.py"
    report["similarity"]["pairs"].append(second)
    report["similarity"]["sources"]["reference"]["kernels/other.py"] = {"kind": "file", "text": "x = 1\n", "cells": []}
    data = report_data(render_html(report))["r1"]
    assert [t["text"] for t in data["texts"]].count(AGENT_TEXT) == 1
    assert len({p["a"] for p in data["pairs"].values() if data["texts"][p["a"]]["text"] == AGENT_TEXT}) == 1


def test_html_offsets_count_utf16_units_past_astral_characters():
    report = as_report_dict(hostile_report())
    pair = report["similarity"]["pairs"][0]
    source = report["similarity"]["sources"]["agent"][pair["agent_path"]]
    source["text"] = "# 🐍\n" + source["text"]
    for fragment in pair["evidence_fragments"]:
        fragment["agent"]["start_byte"] += 4
        fragment["agent"]["end_byte"] += 4
    data = report_data(render_html(report))["r1"]
    first = data["pairs"]["r1-p1"]["f"][0][0]
    assert first[0] == pair["evidence_fragments"][0]["agent"]["start_byte"] + 1  # the snake is two UTF-16 units


def test_html_explains_rules_and_figures_once_per_page():
    reports = [hostile_report(), hostile_report()]
    text = render_html(reports)
    page = _page(text)
    assert set(page.links) <= set(page.ids)
    assert text.count('id="legend"') == 1 and text.count('class="glossary"') == 1
    rules = {f.rule_id for f in hostile_report().findings}
    assert text.count('<section class="rule-info"') == len(rules)
    assert text.count("Why each rule") == 1
    assert text.count('class="why"') == 2 * len(hostile_report().findings)
    assert "Each highlighted stretch links" not in text.split('id="legend"')[0]


def test_html_of_the_copied_example_carries_its_pair(example_reports):
    text = render_html(example_reports["copied-digits"])
    page = _page(text)
    assert set(page.links) <= set(page.ids)
    pair = as_report_dict(example_reports["copied-digits"])["similarity"]["pairs"][0]
    data = report_data(text)["r1"]["pairs"]["r1-p1"]
    assert len(data["f"]) == len(pair["evidence_fragments"])
    assert '<span class="medal medal-gold">gold</span>' in text


def test_html_of_many_reports_has_an_index_and_distinct_ids(example_reports):
    text = render_html([example_reports[name] for name in EXAMPLE_RUNS])
    page = _page(text)
    assert len(page.ids) == len(set(page.ids))
    assert set(page.links) <= set(page.ids)
    assert [f"r{n}" for n in range(1, 5)] == [i for i in page.ids if re.fullmatch(r"r\d", i)]
    assert "<title>mleaudit · 4 runs</title>" in text


# ---------------------------------------------------------------------------------------------
# Registry and command line


def test_formatter_registry_writes_every_format():
    report = hostile_report()
    for name in ("json", "text", "markdown", "sarif", "html"):
        stream = io.StringIO()
        get_formatter(name)(report, stream)
        assert stream.getvalue(), name
    assert set(FORMATTERS) >= {"json", "text", "markdown", "sarif", "html"}


@pytest.mark.parametrize("fmt,check", [
    ("sarif", lambda text: json.loads(text)["version"] == "2.1.0"),
    ("markdown", lambda text: text.startswith("# Audit of run `copied-digits`")),
    ("html", lambda text: text.startswith("<!DOCTYPE html>") and 'id="r1-p1"' in text and "r1-p1" in report_data(text)["r1"]["pairs"]),
])
def test_cli_writes_the_new_formats(example_reports, data_dir, tmp_path, fmt, check):
    from mleaudit.audit.cli import main

    out = tmp_path / f"report.{fmt}"
    result = CliRunner().invoke(main, ["audit", str(EXAMPLES / "copied-digits"), "--data-dir", str(data_dir),
                                       "--format", fmt, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert check(out.read_text(encoding="utf-8"))


def test_pipeline_stores_the_texts_that_fragment_spans_point_into():
    from mleaudit.audit.pipeline.similarity_stage import MAX_SOURCE_CHARS, _similarity_sources
    from mleaudit.audit.units import CellRange, CodeUnit

    log_text = "step 1\n```python\nimport pandas as pd\n```\n"
    origin = _span(log_text, "logs/agent.log", "import pandas as pd")
    agents = [CodeUnit(path=AGENT_PATH, language="python", text=AGENT_TEXT),
              CodeUnit(path="logs/agent.log", language="python", text="import pandas as pd", origin=origin, source="log")]
    references = [
        CodeUnit(path=REFERENCE_PATH, language="python", text=REFERENCE_TEXT, source="notebook",
                 cells=tuple(CellRange(**c) for c in REFERENCE_CELL_MAP)),
        CodeUnit(path="kernels/huge.py", language="python", text="x = 1\n" * (MAX_SOURCE_CHARS // 6 + 1)),
    ]

    def pair(agent_path, reference_path, flagged):
        return PairReport(agent_path=agent_path, reference_path=reference_path, reference_id="r", similarity=0.5,
                          agent_containment=0.5, reference_containment=0.5, longest_fragment=1, total_overlap=2,
                          agent_total=2, reference_total=2, agent_covered=1, reference_covered=1, flagged=flagged)

    shown = [pair(AGENT_PATH, REFERENCE_PATH, True), pair("logs/agent.log", "kernels/huge.py", True),
             pair(AGENT_PATH, "kernels/huge.py", False)]
    read = []
    sources = _similarity_sources(shown, agents, references, lambda path: read.append(path) or log_text)
    assert read == ["logs/agent.log"]  # only the log's text is read again: spans there point into the log file
    assert sources["agent"] == {
        AGENT_PATH: {"kind": "file", "text": AGENT_TEXT, "cells": []},
        "logs/agent.log": {"kind": "log", "text": log_text, "cells": []},
    }
    assert sources["reference"][REFERENCE_PATH] == {"kind": "notebook", "text": REFERENCE_TEXT, "cells": REFERENCE_CELL_MAP}
    huge = sources["reference"]["kernels/huge.py"]
    assert huge["text"] is None and huge["omitted"].endswith(f"over the {MAX_SOURCE_CHARS}-character cap")


def test_a_valid_submission_without_a_score_says_why_in_every_format():
    import dataclasses

    base = hostile_report()
    why = "the metric is undefined for this submission (it returned nan, e.g. a correlation of constant predictions)"
    grade = {**base.grade, "score": None, "error": why, "any_medal": False, "bronze_medal": False, "above_median": False}
    report = dataclasses.replace(base, grade=grade)
    expected = f"valid submission without a score, no medal: {why}"
    assert expected in render_markdown(report)
    assert expected in render_html(report)
    stream = io.StringIO()
    get_formatter("text")(report, stream)
    assert "valid submission without a score, no medal" in stream.getvalue()


def test_the_text_format_shows_each_review_decision_and_its_note():
    import dataclasses

    report = hostile_report()
    findings = list(report.findings)
    findings[1] = dataclasses.replace(findings[1], review=dict(DISMISSED))
    findings[2] = dataclasses.replace(findings[2], review=dict(CONFIRMED))
    stream = io.StringIO()
    get_formatter("text")(dataclasses.replace(report, findings=tuple(findings)), stream)
    text = stream.getvalue()
    assert f"Findings ({len(findings)}, 1 dismissed by a reviewer)" in text
    assert "[DISMISSED]" in text and "[CONFIRMED]" in text
    assert "reviewed: dismissed by rev on 2026-01-02: allowed by the organisers (all runs)" in text
    assert "reviewed: confirmed by rev on 2026-01-02: real (run)" in text


def test_a_run_side_of_a_cluster_edge_names_its_run():
    from mleaudit.audit.formatters.common import cluster_side_label

    edge = {"left": "run-a", "left_kind": "run", "left_file": "code/solution.py",
            "right": "owner/nb.ipynb", "right_kind": "notebook", "right_file": "owner/nb.ipynb"}
    assert cluster_side_label(edge, "left") == "run-a/code/solution.py"
    assert cluster_side_label(edge, "right") == "owner/nb.ipynb"
    assert cluster_side_label({"left": "run-a", "left_kind": "run", "left_file": "run-a/x.py"}, "left") == "run-a/x.py"

