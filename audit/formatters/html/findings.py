"""A run's grade panel and its findings, each with its evidence: an excerpt, or a link to its side-by-side view."""

from __future__ import annotations

from typing import Any, Mapping

from mleaudit.audit.formatters.common import SEVERITY_ORDER, grade_status, medal_of, review_line, span_location
from mleaudit.audit.formatters.html.markup import esc, fmt_num

__all__ = ["MAX_OPEN_EVIDENCE", "finding_html", "grade_panel"]

#: Evidence locations shown open per finding; the rest sit in a collapsed <details>.
MAX_OPEN_EVIDENCE = 2


def grade_panel(report: Mapping[str, Any]) -> str:
    """The grade: the score, the medal and the tier thresholds, or why there is no grade."""
    grade, meta = report.get("grade"), report.get("meta", {})
    status = grade_status(grade, meta)
    if status is not None:
        return f'<section class="grade"><h3>Grade</h3><p>{esc(status)}</p></section>'
    medal = medal_of(grade)
    op = "≤" if grade.get("is_lower_better") else "≥"
    tiers = [("gold", grade.get("gold_medal")), ("silver", grade.get("silver_medal")),
             ("bronze", grade.get("bronze_medal")), ("median", grade.get("above_median"))]
    rows = "".join(
        f'<tr><th>{name}</th><td class="num">{op + " " if name != "median" else ""}'
        f'{fmt_num(grade.get(f"{name}_threshold"))}</td><td>{"<span class=reached>✓</span>" if hit else ""}</td></tr>'
        for name, hit in tiers
    )
    return (
        '<section class="grade"><h3>Grade</h3>'
        f'<p>score <strong>{fmt_num(grade.get("score"), 5)}</strong> '
        f'<span class="medal medal-{medal}">{esc(medal if medal != "none" else "no medal")}</span> '
        f'{"above" if grade.get("above_median") else "not above"} median · '
        f'{"lower" if grade.get("is_lower_better") else "higher"} is better · valid submission</p>'
        f'<table class="thresholds"><thead><tr><th>tier</th><th>threshold</th><th>reached</th></tr></thead>'
        f'<tbody>{rows}</tbody></table>'
        f'<p class="muted">leaderboard: {esc(grade.get("leaderboard_source", "leaderboard"))} · competition '
        f'{esc(grade.get("competition_id", ""))}</p></section>'
    )


def _pair_link(evidence: Mapping[str, Any], pair_ids: list[tuple[Mapping[str, Any], str]]) -> str:
    """The id of the side-by-side view of the pair an evidence item is about, or ``""``."""
    for pair, pid in pair_ids:
        if evidence.get("path") == pair["agent_path"] and pair["reference_path"] in str(evidence.get("label", "")):
            return pid
    return ""


def _excerpt(evidence: Mapping[str, Any]) -> str:
    excerpt = str(evidence.get("excerpt") or "")
    if not excerpt:
        return ""
    lines = excerpt.split("\n")
    first, last = evidence.get("start_line"), evidence.get("end_line")
    numbered = isinstance(first, int) and isinstance(last, int) and len(lines) == last - first + 1
    body = "".join(
        f'<span class="line">{f"<span class=ln>{first + i}</span>" if numbered else ""}{esc(line.rstrip(chr(13)))}</span>'
        for i, line in enumerate(lines)
    )
    return f'<pre class="excerpt"><code>{body}</code></pre>'


def _evidence_item(ev: Mapping[str, Any], pid: str, *, excerpt: bool = True) -> str:
    where = span_location(str(ev.get("path", "")), ev.get("start_line"), ev.get("end_line"))
    label = f' <span class="label">({esc(ev["label"])})</span>' if ev.get("label") else ""
    link = f' <a href="#{pid}">side by side ↓</a>' if pid else ""
    return (f'<div class="evidence"><div class="where"><code>{esc(where)}</code>{label}{link}</div>'
            f'{_excerpt(ev) if excerpt else ""}</div>')


def finding_html(index: int, finding: Mapping[str, Any], rule_anchors: Mapping[str, str], prefix: str,
             pair_ids: list[tuple[Mapping[str, Any], str]]) -> str:
    """One finding as an ``<article>``: badges, message, review, evidence and fingerprint."""
    severity = str(finding.get("severity", "info"))
    sev_class = f"sev-{severity}" if severity in SEVERITY_ORDER else "sev-info"
    review = finding.get("review") if isinstance(finding.get("review"), Mapping) else None
    decision = str(review.get("decision", "")) if review else ""
    decided = f" review-{decision}" if decision in ("confirmed", "dismissed") else ""
    anchor = rule_anchors.get(str(finding.get("rule_id")))
    why = f' <a class="why" href="#{anchor}">why this rule</a>' if anchor else ""
    parts = [
        f'<article class="finding {sev_class}{decided}" id="{prefix}-f{index}">',
        f'<header><span class="badge {sev_class}">{esc(severity.upper())}</span>'
        f'<span class="badge sev-info">confidence {esc(finding.get("confidence", ""))}</span>'
        f'<span class="badge sev-info">actor {esc(finding.get("actor", "unknown"))}</span>'
        f'<code class="rule">{esc(finding["rule_id"])}</code><span>{esc(finding.get("title", ""))}</span>'
        f'{f"<span class=decision>{esc(decision)}</span>" if decision else ""}{why}</header>',
        f'<p class="message">{esc(finding.get("message", ""))}</p>',
    ]
    if review:
        parts.append(f'<p class="review">Reviewer: {esc(review_line(review))}</p>')
    evidence = list(finding.get("evidence", []))
    links = [_pair_link(ev, pair_ids) for ev in evidence]
    if evidence and links[0] and len(set(links)) == 1:
        # Every location is a fragment of one side-by-side view, which shows the code: one line here.
        parts.append(_evidence_item(evidence[0], links[0], excerpt=False))
        if len(evidence) > 1:
            parts.append(f'<p class="muted">{len(evidence) - 1} more location(s): the fragments of the side-by-side '
                         'view.</p>')
    else:
        for i, ev in enumerate(evidence):
            if i == MAX_OPEN_EVIDENCE:
                more = len(evidence) - MAX_OPEN_EVIDENCE
                parts.append(f'<details class="more-evidence"><summary>{more} more location{"s" if more != 1 else ""}'
                             '</summary>')
            parts.append(_evidence_item(ev, links[i]))
        if len(evidence) > MAX_OPEN_EVIDENCE:
            parts.append("</details>")
    if finding.get("fingerprint"):
        parts.append(f'<div class="fp">fingerprint {esc(finding["fingerprint"])}</div>')
    parts.append("</article>")
    return "".join(parts)
