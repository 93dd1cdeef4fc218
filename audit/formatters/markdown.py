"""GitHub-flavoured markdown summary of an audit report, for a pull request or an issue comment.

Audited text (messages, excerpts, paths) is untrusted: in prose and tables it is escaped (markdown
punctuation backslash-escaped, ``<``, ``>`` and ``&`` as entities, newlines folded) so it cannot
add links, images or HTML; excerpts go in fenced code blocks whose fence is longer than any
backtick run inside them, so they cannot close the block.

Sample::

    # Audit of run `copied-digits`

    **Verdict: REVIEW** — plag-kernel-containment (medium)

    | competition | agent | score | medal | above median | gold | silver | bronze | median |
    |---|---|---|---|---|---|---|---|---|
    | `sklearn-digits` | `example-agent` | 0.9889 | 🥇 gold | yes | ≥ 0.9806 | ≥ 0.9667 | ≥ 0.9361 | 0.9056 |

    ## Findings (1)

    ### 1. MEDIUM · confidence medium · actor agent · `plag-kernel-containment` — Agent code copied from a public kernel
    ...
"""

from __future__ import annotations

import re
from typing import Any, Mapping, TextIO

from mleaudit.audit.formatters.common import (
    TOO_SHORT,
    as_report_dict,
    copied_share_line,
    pair_origin_label,
    pair_too_short,
    code_language,
    flagged_pairs,
    fragment_side_label,
    grade_status,
    medal_of,
    pair_fragments,
    review_line,
    span_location,
)
from mleaudit.audit.formatters.terminal import HIDDEN_FORMAT_CHARS
from mleaudit.audit.report import AuditReport

__all__ = ["render_markdown", "write_markdown"]

#: Evidence excerpts longer than this many lines are cut (the JSON report keeps them whole).
MAX_EXCERPT_LINES = 40
#: Pairs listed in the similarity table.
MAX_PAIRS = 10
#: Fragments listed per flagged pair.
MAX_FRAGMENTS = 20

_MEDAL_ICON = {"gold": "🥇 gold", "silver": "🥈 silver", "bronze": "🥉 bronze", "none": "none"}
# Inline markdown punctuation; block markers only matter at the start of a line (see _text).
_MD_SPECIAL = re.compile(r"([\\`*_\[\]!|~])")
_BLOCK_START = re.compile(r"^([#>+=-]|\d{1,9}[.)])(?=\s|$)")
# Bare URLs become links in GFM (extended autolinks); escaping their first punctuation stops that.
_AUTOLINK = re.compile(r"(?i)\b(https?|ftp)(:)|\b(www)(\.)")
_SAFE_URL = re.compile(r"^https://[A-Za-z0-9._~:/?#@!$&'()*+,;=%-]+$")
_BACKTICKS = re.compile(r"`+")
# C0 controls other than tab and newline, DEL and C1: never useful in a review, sometimes hostile.
# Controls and the format characters that reorder or hide text (a right-to-left override).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f" + HIDDEN_FORMAT_CHARS + "]")


def _text(value: Any, *, line_start: bool = False) -> str:
    """Escape untrusted text for markdown prose or a table cell (one line).

    ``line_start``: the text begins a line, where ``# ``, ``> ``, ``- ``, ``1. `` open blocks.
    """
    text = _CONTROL.sub("\ufffd", str(value))
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_SPECIAL.sub(r"\\\1", " ".join(text.split()))
    text = _AUTOLINK.sub(lambda m: f"{m.group(1) or m.group(3)}\\{m.group(2) or m.group(4)}", text)
    return _BLOCK_START.sub(r"\\\1", text) if line_start else text


def _code(value: Any) -> str:
    """Untrusted text as an inline code span (``|`` escaped: tables split cells before code spans)."""
    text = " ".join(_CONTROL.sub("\ufffd", str(value)).split())
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text else ""
    return f"{fence}{pad}{text}{pad}{fence}".replace("|", "\\|")


def _fenced(text: str, language: str) -> list[str]:
    """A fenced code block that ``text`` cannot close."""
    lines = [_CONTROL.sub("\ufffd", line) for line in text.splitlines()] or [""]
    if len(lines) > MAX_EXCERPT_LINES:
        more = len(lines) - MAX_EXCERPT_LINES
        lines = lines[:MAX_EXCERPT_LINES] + [f"… {more} more line{'s' if more != 1 else ''}"]
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{language if language != 'text' else ''}", *lines, fence]


def _num(value: Any, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _grade_section(report: Mapping[str, Any]) -> list[str]:
    run, grade, meta = report["run"], report.get("grade"), report.get("meta", {})
    head = "| competition | agent | score | medal | above median | gold | silver | bronze | median | leaderboard |"
    rule = "|---|---|---|---|---|---|---|---|---|---|"
    competition = _code(run["competition_id"]) if run.get("competition_id") else "–"
    agent = _code(run["agent_id"]) if run.get("agent_id") else "–"
    status = grade_status(grade, meta)
    if status is not None:
        return [f"**Grade:** {_text(status)} (competition {competition}, agent {agent})"]
    op = "≤" if grade.get("is_lower_better") else "≥"
    row = (
        f"| {competition} | {agent} | {_num(grade.get('score'))} | {_MEDAL_ICON[medal_of(grade)]} | "
        f"{'yes' if grade.get('above_median') else 'no'} | {op} {_num(grade.get('gold_threshold'))} | "
        f"{op} {_num(grade.get('silver_threshold'))} | {op} {_num(grade.get('bronze_threshold'))} | "
        f"{_num(grade.get('median_threshold'))} | {_text(grade.get('leaderboard_source', 'leaderboard'))} |"
    )
    return [head, rule, row]


def _finding_section(index: int, finding: Mapping[str, Any], rules: Mapping[str, Any]) -> list[str]:
    review = finding.get("review") if isinstance(finding.get("review"), Mapping) else None
    dismissed = " · *dismissed*" if review and review.get("decision") == "dismissed" else ""
    out = [
        f"### {index}. {finding['severity'].upper()} · confidence {finding['confidence']} · "
        f"actor {_text(str(finding.get('actor', 'unknown')))} · "
        f"{_code(finding['rule_id'])} — {_text(finding.get('title', ''))}{dismissed}",
        "",
        _text(finding.get("message", ""), line_start=True),
        "",
    ]
    if review:
        out += [f"**Reviewer:** {_text(review_line(review))}", ""]
    for ev in finding.get("evidence", []):
        where = _code(span_location(ev["path"], ev.get("start_line"), ev.get("end_line")))
        label = f" ({_text(ev['label'])})" if ev.get("label") else ""
        out.append(f"{where}{label}")
        out.append("")
        if ev.get("excerpt"):
            out.extend(_fenced(ev["excerpt"], code_language(ev["path"])))
            out.append("")
    if finding.get("fingerprint"):
        out.append(f"<sub>fingerprint {_code(finding['fingerprint'])}</sub>")
        out.append("")
    return out


def _similarity_section(report: Mapping[str, Any]) -> list[str]:
    sim = report.get("similarity")
    if sim is None:
        reason = report.get("meta", {}).get("similarity_skipped")
        return ["## Similarity", "", "Not run" + (f": {_text(reason)}." if reason else "."), ""]
    pairs = list(sim.get("pairs", []))
    out = [
        "## Similarity",
        "",
        f"{len(sim.get('agent_files', []))} agent file(s) compared with {sim.get('reference_count', 0)} reference "
        f"notebook(s) of {_code(sim.get('corpus', '?'))}.",
        "",
    ]
    share = copied_share_line(sim)
    if share is not None:
        out += [f"**Copied share:** {_text(share)}.", ""]
    if not pairs:
        return out + ["No pair above the display threshold.", ""]
    out += [
        "| agent file | reference | copy score | flagged | similarity | agent containment | reference containment | longest fragment |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for pair in pairs[:MAX_PAIRS]:
        origin = pair_origin_label(pair)
        agent = _code(pair["agent_path"]) + (f" {_text(origin)}" if origin else "")
        if pair_too_short(pair):
            figures = f"{TOO_SHORT} | – | –"
        else:
            figures = (f"{_num(pair.get('similarity'), 3)} | {_num(pair.get('agent_containment'), 3)} | "
                       f"{_num(pair.get('reference_containment'), 3)}")
        out.append(
            f"| {agent} | {_code(pair['reference_path'])} | {_num(pair.get('score'), 3)} | "
            f"{'**yes**' if pair.get('flagged') else 'no'} | {figures} | {_num(pair.get('longest_fragment'))} |"
        )
    if len(pairs) > MAX_PAIRS:
        out.append(f"\n… {len(pairs) - MAX_PAIRS} more pair(s) in the JSON report.")
    out.append("")
    for pair in flagged_pairs(sim):
        kind, fragments = pair_fragments(pair)
        origin = pair_origin_label(pair)
        out.append(f"### {_code(pair['agent_path'])}{' ' + _text(origin) if origin else ''} ↔ {_code(pair['reference_path'])}")
        out.append("")
        source = "the copy detector's chain" if kind == "evidence" else "Dolos fragments"
        out.append(f"Matched fragments ({source}):")
        out.append("")
        out.append(f"| # | agent | reference | {'tokens' if kind == 'evidence' else 'k-grams'} |")
        out.append("|---|---|---|---|")
        for i, fragment in enumerate(fragments[:MAX_FRAGMENTS], start=1):
            out.append(
                f"| {i} | {_text(fragment_side_label(fragment, 'agent'))} | "
                f"{_text(fragment_side_label(fragment, 'reference'))} | {fragment.get('length', '')} |"
            )
        if len(fragments) > MAX_FRAGMENTS:
            out.append(f"\n… {len(fragments) - MAX_FRAGMENTS} more fragment(s) in the JSON report.")
        out.append("")
    return out


def _rules_section(findings: list[Mapping[str, Any]], rules: Mapping[str, Any]) -> list[str]:
    """Each rule with a finding, once: its title and references (not repeated per finding)."""
    ids = sorted({str(f["rule_id"]) for f in findings})
    if not ids:
        return []
    out = ["## Rules", ""]
    for rule_id in ids:
        info = rules.get(rule_id) or {}
        refs = [r for r in info.get("references", []) if isinstance(r, str)]
        line = f"- {_code(rule_id)} — {_text(info.get('title', ''))}"
        if refs:
            line += ". References: " + ", ".join(f"<{r}>" if _SAFE_URL.match(r) else _text(r) for r in refs)
        out.append(line)
    out.append("")
    return out


def render_markdown(report: AuditReport | Mapping[str, Any]) -> str:
    """The markdown summary of one report.

    Parameters
    ----------
    report : AuditReport or mapping
        A report, or its JSON form (``AuditReport.to_dict()`` or a loaded JSON report).

    Returns
    -------
    str
        GitHub-flavoured markdown ending with a newline: verdict, grade table, findings with
        evidence excerpts in fenced code, similarity pairs with the fragments of flagged pairs,
        skipped files.
    """
    data = as_report_dict(report)
    run = data["run"]
    verdict = data["verdict"]
    out = [f"# Audit of run {_code(run['run_id'])}", ""]
    reasons = ", ".join(verdict.get("reasons", []))
    out.append(f"**Verdict: {verdict['kind'].upper()}**" + (f" — {_text(reasons)}" if reasons else ""))
    out.append("")
    gaps = verdict.get("gaps", [])
    if gaps:
        out += [f"### Not checked ({len(gaps)})", "", "The audit is incomplete: the run is not clean until these are resolved.", ""]
        for gap in gaps:
            where = " ".join(_code(x) for x in (gap.get("rule_id"), gap.get("path")) if x)
            out.append(f"- {_text(gap.get('kind', ''))}{' ' + where if where else ''}: {_text(gap.get('reason', ''))}")
        out.append("")
    out.extend(_grade_section(data))
    out.append("")
    audited = (
        f"Audited {sum(run.get('artifact_counts', {}).values())} file(s): {run.get('code_units', 0)} code unit(s), "
        f"{run.get('log_events', 0)} log event(s), {data.get('meta', {}).get('rules', '?')} rule(s)."
    )
    if run.get("parse_errors"):
        audited += f" Syntax errors in {len(run['parse_errors'])} unit(s)."
    out += [audited, ""]

    findings = data.get("findings", [])
    out += [f"## Findings ({len(findings)})", ""]
    if not findings:
        out += ["None.", ""]
    for i, finding in enumerate(findings, start=1):
        out.extend(_finding_section(i, finding, data.get("rules", {})))

    out.extend(_similarity_section(data))
    out.extend(_rules_section(findings, data.get("rules", {})))

    skipped = data.get("skipped", [])
    if skipped:
        out += [f"## Skipped ({len(skipped)})", ""]
        out += [f"- {_code(item['path'])}: {_text(item['reason'])}" for item in skipped]
        out.append("")
    meta = data.get("meta", {})
    out.append(
        f"<sub>{_text(meta.get('tool', 'mleaudit'))} {_text(meta.get('version', ''))} · "
        f"ruleset {_text(str(meta.get('ruleset_digest', ''))[:12])} · {_text(meta.get('created_at', ''))}</sub>"
    )
    return "\n".join(out).rstrip("\n") + "\n"


def write_markdown(report: AuditReport, stream: TextIO) -> None:
    """Write ``report`` as GitHub-flavoured markdown to ``stream``."""
    stream.write(render_markdown(report))
