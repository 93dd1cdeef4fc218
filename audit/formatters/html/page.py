"""The page: one section per run, the index of runs, the rules explained once, and :func:`render_html`."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence, TextIO

from mleaudit.audit.formatters.common import SEVERITY_ORDER, as_report_dicts, flagged_pairs, medal_of
from mleaudit.audit.formatters.html.assets import CONTENT_SECURITY_POLICY, CSS, JS
from mleaudit.audit.formatters.html.batch import batch_summary
from mleaudit.audit.formatters.html.findings import finding_html, grade_panel
from mleaudit.audit.formatters.html.markup import SAFE_URL, esc
from mleaudit.audit.formatters.html.similarity import LEGEND, share_percent, similarity_section
from mleaudit.audit.report import AuditReport

__all__ = ["render_html", "write_html"]

_VERDICT_CLASSES = ("clean", "review", "incomplete", "flagged")


def _gaps(gaps: list[Mapping[str, Any]], prefix: str) -> str:
    """What the audit did not check (an incomplete audit), one item per gap."""
    if not gaps:
        return ""
    items = []
    for gap in gaps:
        where = " ".join(f"<code>{esc(x)}</code>" for x in (gap.get("rule_id"), gap.get("path")) if x)
        items.append(f"<li>{esc(gap.get('kind', ''))}{' ' + where if where else ''}: {esc(gap.get('reason', ''))}</li>")
    return (f'<section class="gaps" id="{prefix}-gaps"><h3>Not checked ({len(gaps)})</h3>'
            f'<p>The audit is incomplete: the run is not clean until these are resolved.</p><ul>{"".join(items)}</ul></section>')


def _run_section(report: Mapping[str, Any], n: int, rule_anchors: Mapping[str, str]) -> str:
    prefix = f"r{n}"
    run, verdict, meta = report["run"], report["verdict"], report.get("meta", {})
    kind = str(verdict.get("kind", "review"))
    kind_class = kind if kind in _VERDICT_CLASSES else "review"
    pair_ids = [(p, f"{prefix}-p{i}") for i, p in enumerate(flagged_pairs(report.get("similarity")), start=1)]
    reasons = "".join(f"<li>{esc(r)}</li>" for r in verdict.get("reasons", []))
    facts = [f"competition <code>{esc(run['competition_id'])}</code>" if run.get("competition_id") else "competition unknown"]
    if run.get("agent_id"):
        facts.append(f"agent <code>{esc(run['agent_id'])}</code>")
    facts.append(
        f"{sum(run.get('artifact_counts', {}).values())} file(s), {esc(run.get('code_units', 0))} code unit(s), "
        f"{esc(run.get('log_events', 0))} log event(s), {esc(meta.get('rules', '?'))} rule(s)"
    )
    if run.get("parse_errors"):
        facts.append(f"syntax errors in {len(run['parse_errors'])} unit(s)")
    share = share_percent(report.get("similarity"))
    if share:
        facts.append(f'<a href="#{prefix}-copied-share">{share} of the agent code found in public notebooks</a>')
    findings = list(report.get("findings", []))
    counts = {s: sum(1 for f in findings if f.get("severity") == s) for s in SEVERITY_ORDER}
    count_text = ", ".join(f'<span class="sev-{s}">{c} {s}</span>' for s, c in counts.items() if c) or "none"
    parts = [
        f'<section class="run" id="{prefix}" data-verdict="{kind_class}">',
        f'<h2>Run <code>{esc(run["run_id"])}</code></h2>',
        f'<p class="muted">{" · ".join(facts)}</p>',
        f'<div><span class="verdict v-{kind_class}">{esc(kind.upper())}</span></div>',
        f'<ul class="reasons">{reasons}</ul>' if reasons else "",
        _gaps(verdict.get("gaps", []), prefix),
        grade_panel(report),
        f'<section class="findings" id="{prefix}-findings"><h3>Findings ({len(findings)}: {count_text})</h3>',
    ]
    parts += [finding_html(i, f, rule_anchors, prefix, pair_ids) for i, f in enumerate(findings, start=1)]
    if not findings:
        parts.append("<p>None.</p>")
    parts.append("</section>")
    parts.append(similarity_section(report, prefix, pair_ids))
    skipped = report.get("skipped", [])
    if skipped:
        items = "".join(f"<li><code>{esc(s['path'])}</code>: {esc(s['reason'])}</li>" for s in skipped)
        parts.append(f'<section class="skipped"><h3>Not audited ({len(skipped)})</h3><ul>{items}</ul></section>')
    parts.append(
        f'<p class="fp">{esc(meta.get("tool", "mleaudit"))} {esc(meta.get("version", ""))} · ruleset '
        f'{esc(str(meta.get("ruleset_digest", ""))[:12])} · {esc(meta.get("created_at", ""))} · run folder '
        f'<code>{esc(run.get("root", ""))}</code></p>'
    )
    parts.append("</section>")
    return "\n".join(p for p in parts if p)


def _index(reports: list[dict[str, Any]]) -> str:
    rows = []
    for n, report in enumerate(reports, start=1):
        run, grade = report["run"], report.get("grade")
        kind = str(report["verdict"].get("kind", ""))
        rows.append(
            f'<tr><td><a href="#r{n}">{esc(run["run_id"])}</a></td><td>{esc(run.get("competition_id") or "–")}</td>'
            f'<td><span class="verdict v-{kind if kind in _VERDICT_CLASSES else "review"}">{esc(kind.upper())}</span></td>'
            f'<td>{esc(medal_of(grade)) if grade else "–"}</td><td class="num">{len(report.get("findings", []))}</td>'
            f'<td class="num">{len(flagged_pairs(report.get("similarity")))}</td>'
            f'<td class="num">{share_percent(report.get("similarity")) or "–"}</td></tr>'
        )
    return (
        '<nav class="index"><h2>Runs</h2><table><thead><tr><th>run</th><th>competition</th><th>verdict</th>'
        f'<th>medal</th><th>findings</th><th>flagged pairs</th><th>copied share</th></tr></thead><tbody>{"".join(rows)}</tbody></table></nav>'
    )


def _rule_anchors(reports: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """``rule id -> "rule-N"`` for every rule with a finding on the page (ids from numbers only)."""
    ids = sorted({str(f.get("rule_id")) for r in reports for f in r.get("findings", [])})
    return {rule_id: f"rule-{n}" for n, rule_id in enumerate(ids, start=1)}


def _glossary(reports: Sequence[Mapping[str, Any]], anchors: Mapping[str, str]) -> str:
    """Each rule with a finding on the page, explained once: title, severity, rationale, references."""
    if not anchors:
        return ""
    infos: dict[str, Mapping[str, Any]] = {}
    for report in reports:
        for rule_id, info in (report.get("rules") or {}).items():
            if isinstance(info, Mapping):
                infos.setdefault(str(rule_id), info)
    items = []
    for rule_id, anchor in anchors.items():
        info = infos.get(rule_id) or {}
        refs = "".join(
            f'<li><a href="{esc(r)}" rel="noopener noreferrer">{esc(r)}</a></li>' if SAFE_URL.match(str(r))
            else f"<li>{esc(r)}</li>"
            for r in info.get("references", [])
        )
        facts = " · ".join(esc(f"{k} {info[k]}") for k in ("category", "severity", "confidence") if info.get(k))
        items.append(
            f'<section class="rule-info" id="{anchor}"><h3><code>{esc(rule_id)}</code> {esc(info.get("title", ""))}</h3>'
            f'{f"<p class=muted>{facts}</p>" if facts else ""}'
            f'<div class="rationale">{esc(str(info.get("rationale", "")).strip() or "No rationale in the report.")}</div>'
            f'{f"<ul>{refs}</ul>" if refs else ""}</section>'
        )
    return f'<section class="glossary" id="rules"><h2>Rules</h2><p>Why each rule with a finding on this page exists.</p>{"".join(items)}</section>'


def render_html(reports: AuditReport | Mapping[str, Any] | Iterable[AuditReport | Mapping[str, Any]],
                *, title: str | None = None, summary: Mapping[str, Any] | None = None) -> str:
    """One self-contained HTML page for one report or a list of reports.

    Parameters
    ----------
    reports : AuditReport, mapping, or iterable of them
        Reports or their JSON form. Side-by-side views need ``similarity.sources`` (written by
        the audit pipeline for flagged pairs); without it the fragments are listed by location.
    title : str, optional
        Page title (default: the run id and verdict, or the number of runs).
    summary : mapping, optional
        A batch summary (:func:`mleaudit.audit.batch_summary.summarize_batch`) shown before the runs.

    Returns
    -------
    str
        An HTML5 document with inline CSS/JS and a Content-Security-Policy that forbids any
        network access and any script but its own.
    """
    data = as_report_dicts(reports)
    if title is None:
        if len(data) == 1:
            title = f"mleaudit · {data[0]['run']['run_id']} · {str(data[0]['verdict'].get('kind', '')).upper()}"
        else:
            title = f"mleaudit · {len(data)} runs"
    body = [f"<h1>{esc(title)}</h1>"]
    if summary is not None:
        body.append(batch_summary(summary))
    if len(data) != 1:
        body.append(_index(data))
    anchors = _rule_anchors(data)
    body += [_run_section(report, n, anchors) for n, report in enumerate(data, start=1)]
    body.append(_glossary(data, anchors))
    if any(report.get("similarity") for report in data):
        body.append(LEGEND)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>\n"
        f'<body><main>\n{chr(10).join(body)}\n</main><script>{JS}</script></body></html>\n'
    )


def write_html(report: AuditReport, stream: TextIO) -> None:
    """Write ``report`` as one self-contained HTML page to ``stream``."""
    stream.write(render_html(report))
