"""Report size on real material: an audit of shared partial-copy cases against the shared corpus.

The whole set (153 cases, 1,449 flagged pairs) takes minutes to audit, so the test audits the
first cases and holds the HTML page to the same size per case as 5 MB for all 153
(``benchmarks/report_size.py`` measures the whole set). Skipped without ``../shared``.
"""

from __future__ import annotations


import pytest

from mleaudit.audit.formatters.html import render_html
from benchmarks.report_size import ALL_CASES, MAX_HTML_BYTES, audit_cases
from tests.audit.test_formatters import report_data
from tests.conftest import shared_path

CASES = 10


@pytest.fixture(scope="module")
def partial_copy_report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    data = shared_path("partial-copies").parent
    shared_path("similarity-golden")
    return audit_cases(data, CASES, tmp_path_factory.mktemp("cases")).to_dict()


def test_html_of_partial_copies_stays_under_the_size_per_case(partial_copy_report: dict) -> None:
    text = render_html(partial_copy_report)
    size = len(text.encode("utf-8"))
    flagged = sum(1 for p in partial_copy_report["similarity"]["pairs"] if p["flagged"])
    assert flagged >= CASES  # each case is flagged against its source and its copies
    assert size <= MAX_HTML_BYTES * CASES / ALL_CASES, f"{size} bytes for {CASES} cases ({flagged} flagged pairs)"
    # Each text once: as many texts as distinct files among the flagged pairs.
    data = report_data(text)["r1"]
    flagged_pairs = [p for p in partial_copy_report["similarity"]["pairs"] if p["flagged"]]
    distinct = {("agent", p["agent_path"]) for p in flagged_pairs} | {("reference", p["reference_path"]) for p in flagged_pairs}
    assert len(data["texts"]) == len(distinct)
    assert len(data["pairs"]) == flagged
    # Each rule explained once, however many findings it has.
    rules = {f["rule_id"] for f in partial_copy_report["findings"]}
    assert text.count('<section class="rule-info"') == len(rules)


def test_copied_share_of_partial_copies(partial_copy_report: dict) -> None:
    share = partial_copy_report["similarity"]["copied_share"]
    # Each case pastes a 15-60 % slice of one notebook between pieces of agent code.
    assert share["units_with_copies"] == CASES
    assert 0.10 <= share["share"] <= 0.75, share
