"""Readable terminal summary of an audit report (rich tables; plain text when not a terminal).

Sample::

    Run llm-digits · competition sklearn-digits · agent example-agent
    Verdict: FLAGGED — llm-external-api-call (high)

An incomplete audit lists what was not checked under the verdict (``Not checked (N)``). Every
name and text from the run goes through :func:`mleaudit.audit.formatters.terminal.terminal_safe`.

    Grade   score 0.9694 · valid submission · medal: bronze · above median
            gold ≥ 0.9806 · silver ≥ 0.9778 · bronze ≥ 0.9694 · median 0.9611 (reference-baselines, 120 teams)

    Findings (1)
     HIGH  high  llm-external-api-call  code/refine.py:14-17
           Calls the OpenAI API (`client.chat.completions.create`) from agent code.
           │ resp = client.chat.completions.create(
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from mleaudit.audit.formatters.common import (TOO_SHORT, copied_share_line, grade_status, pair_agent_label, pair_too_short,
                                     review_line)
from mleaudit.audit.formatters.terminal import terminal_safe
from mleaudit.audit.report import AuditReport

__all__ = ["table_order", "write_text"]

_EXCERPT_LINES = 6
_EXCERPT_WIDTH = 120
_GAPS_SHOWN = 20
_SKIPPED_SHOWN = 20
#: Pairs listed in the similarity table (the JSON report has them all).
_PAIRS_SHOWN = 5
_PAIR_COLUMNS = ("agent", "reference", "score", "flagged", "similarity", "agent containment", "longest fragment")


def table_order(pairs: list) -> list:
    """Similarity pairs in the order of the text table: flagged first, then by copy score
    (highest first), so that the rows a reviewer reads first are the likeliest copies; a stable
    sort keeps the report's order among equal scores."""
    return sorted(pairs, key=lambda p: (not p.get("flagged"), -float(p.get("score") or 0.0)))


def _safe(text: object) -> str:
    # Audited names and texts must not move the cursor, recolour the terminal or forge lines.
    return terminal_safe(text)


def _fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _grade_lines(grade: Mapping[str, Any] | None, meta: Mapping[str, Any]) -> list[str]:
    status = grade_status(grade, meta)
    if status is not None:
        return [status]
    medal = next((m for m in ("gold", "silver", "bronze") if grade.get(f"{m}_medal")), "none")
    first = f"score {_fmt(grade.get('score'))} · valid submission · medal: {medal}"
    first += " · above median" if grade.get("above_median") else " · not above median"
    op = "≤" if grade.get("is_lower_better") else "≥"
    second = (
        f"gold {op} {_fmt(grade.get('gold_threshold'))} · silver {op} {_fmt(grade.get('silver_threshold'))} · "
        f"bronze {op} {_fmt(grade.get('bronze_threshold'))} · median {_fmt(grade.get('median_threshold'))}"
        f" ({grade.get('leaderboard_source', 'leaderboard')})"
    )
    return [first, second]


def _readers_line(files) -> str:
    """``Read by: aide 1, python 3 · not read: 2`` — which readers read the run's files."""
    readers = Counter(f.reader for f in files if f.reader != "none")
    line = "Read by: " + (", ".join(f"{name} {n}" for name, n in sorted(readers.items())) or "nothing")
    unread = sum(1 for f in files if f.reader == "none" and f.kind != "data")
    data = sum(1 for f in files if f.reader == "none" and f.kind == "data")
    partly = sum(1 for f in files if f.reader != "none" and f.unread)
    if unread:
        line += f" · not read: {unread}"
    if data:
        line += f" · data files (no rule reads them): {data}"
    if partly:
        line += f" · partly read: {partly}"
    return line + " (the JSON report's run.files lists each file)"


def write_text(report: AuditReport, stream: TextIO) -> None:
    """Write a human summary of ``report`` to ``stream`` (colours only on a terminal)."""
    is_tty = bool(getattr(stream, "isatty", lambda: False)())
    # Files and pipes get unwrapped lines (soft_wrap) so that grep and diff see whole lines.
    console = Console(file=stream, width=None if is_tty else 160, force_terminal=is_tty, no_color=not is_tty,
                      highlight=False, soft_wrap=not is_tty, emoji=False)
    run = report.run
    head = f"Run {run.run_id}"
    if run.competition_id:
        head += f" · competition {run.competition_id}"
    if run.agent_id:
        head += f" · agent {run.agent_id}"
    console.print(_safe(head), markup=False)
    files = sum(run.artifact_counts.values())
    audited = (
        f"Audited {files} file(s): {run.code_units} code unit(s), {run.log_events} log event(s), "
        f"{report.meta.get('rules', '?')} rule(s)"
    )
    if run.parse_errors:
        audited += f"; syntax errors in {len(run.parse_errors)} unit(s): {', '.join(run.parse_errors[:3])}"
    console.print(_safe(audited), markup=False)
    if run.files:
        console.print(_safe(_readers_line(run.files)), markup=False)
    share = copied_share_line(report.similarity)
    if share is not None:
        console.print(f"Copied share: {_safe(share)}", markup=False)
    verdict = report.verdict
    reasons = ", ".join(verdict.reasons)
    style = {"flagged": "bold red", "incomplete": "bold magenta", "review": "bold yellow",
             "clean": "bold green"}[verdict.kind.value]
    line = Text(f"Verdict: {verdict.kind.value.upper()}", style=style)
    if reasons:
        line.append(f" — {_safe(reasons)}")
    console.print(line)
    if verdict.gaps:
        console.print(f"Not checked ({len(verdict.gaps)}): the audit is incomplete, so the run is not clean", markup=False)
        for gap in verdict.gaps[:_GAPS_SHOWN]:
            console.print(f" {_safe(gap.describe())}", markup=False)
        if len(verdict.gaps) > _GAPS_SHOWN:
            console.print(f" … {len(verdict.gaps) - _GAPS_SHOWN} more (see the JSON report's verdict.gaps)", markup=False)
    console.print()

    for i, line in enumerate(_grade_lines(report.grade, report.meta)):
        console.print(("Grade   " if i == 0 else "        ") + _safe(line), markup=False)
    console.print()

    dismissed = sum(1 for finding in report.findings if finding.dismissed)
    heading = f"Findings ({len(report.findings)}" + (f", {dismissed} dismissed by a reviewer" if dismissed else "") + ")"
    if report.findings:
        heading += "   severity · confidence · rule · actor · location"
    console.print(heading, markup=False)
    for finding in report.findings:
        ev = finding.evidence[0] if finding.evidence else None
        where = ""
        if ev is not None:
            span = ev.span
            where = f"{span.path}:{span.start_line}" + (f"-{span.end_line}" if span.end_line != span.start_line else "")
            if ev.label:
                where += f" ({ev.label})"
        review = finding.review if isinstance(finding.review, Mapping) else None
        decision = str(review.get("decision", "")).upper() if review else ""
        console.print(
            f" {finding.severity.label.upper():8} {finding.confidence.label:6} {_safe(finding.rule_id)}  "
            f"[{_safe(finding.actor)}]  {_safe(where)}" + (f"  [{_safe(decision)}]" if decision else ""), markup=False
        )
        console.print(f"          {_safe(finding.message)}", markup=False)
        if review:
            # A dismissed finding no longer counts for the verdict: the reader must see why.
            console.print(f"          reviewed: {_safe(review_line(review))}", markup=False)
        if ev is not None and ev.excerpt:
            lines = ev.excerpt.splitlines()
            for line in lines[:_EXCERPT_LINES]:
                clipped = line if len(line) <= _EXCERPT_WIDTH else line[: _EXCERPT_WIDTH - 1] + "…"
                console.print(f"          │ {_safe(clipped)}", markup=False)
            if len(lines) > _EXCERPT_LINES:
                more = len(lines) - _EXCERPT_LINES
                console.print(f"          │ … {more} more line{'s' if more != 1 else ''}", markup=False)
    if not report.findings:
        console.print(" none", markup=False)
    console.print()

    sim = report.similarity
    if sim is None:
        console.print("Similarity: not run" + (f" ({_safe(report.meta.get('similarity_skipped'))})" if report.meta.get("similarity_skipped") else ""), markup=False)
    else:
        pairs = list(sim.get("pairs", []))
        console.print(
            f"Similarity: {len(sim.get('agent_files', []))} agent file(s) vs {sim.get('reference_count', 0)} reference "
            f"notebook(s) in {_safe(sim.get('corpus', '?'))}",
            markup=False,
        )
        if pairs:
            pairs = table_order(pairs)
            shown = pairs[:_PAIRS_SHOWN]
            table = Table(show_edge=False, pad_edge=False, box=None)
            for col in _PAIR_COLUMNS:
                table.add_column(col, justify="left" if col in ("agent", "reference", "flagged") else "right")
            for pair in shown:
                short = pair_too_short(pair)
                table.add_row(
                    Text(_safe(pair_agent_label(pair))),
                    Text(_safe(pair["reference_path"])),
                    _fmt(pair.get("score"), 3),
                    "yes" if pair.get("flagged") else "no",
                    TOO_SHORT if short else _fmt(pair["similarity"], 3),
                    "–" if short else _fmt(pair["agent_containment"], 3),
                    str(pair["longest_fragment"]),
                )
            console.print(table)
            if len(pairs) > len(shown):
                flagged = sum(1 for p in pairs[len(shown):] if p.get("flagged"))
                console.print(f" … {len(pairs) - len(shown)} more pair(s), {flagged} of them flagged "
                              "(see the JSON report's similarity.pairs)", markup=False)
            console.print("rows: flagged first, then by score; score: the copy detector's score in [0, 1); "
                          "flagged: it reached the plagiarism rule's "
                          "bound; similarity: Dolos's symmetric similarity; agent containment: the share of the "
                          "agent file's fingerprints found in the notebook; longest fragment: Dolos's longest run "
                          "of shared fingerprints, in k-grams", markup=False)
    if report.skipped:
        console.print()
        console.print(f"Skipped ({len(report.skipped)})", markup=False)
        for item in report.skipped[:_SKIPPED_SHOWN]:
            console.print(f" {_safe(item.path)}: {_safe(item.reason)}", markup=False)
        if len(report.skipped) > _SKIPPED_SHOWN:
            console.print(f" … {len(report.skipped) - _SKIPPED_SHOWN} more (see the JSON report's skipped)", markup=False)
