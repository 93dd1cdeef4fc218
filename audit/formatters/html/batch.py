"""The batch summary shown before the runs of a batch page: totals, verdicts, seeds, rules, copy clusters."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from mleaudit.audit.formatters.common import cluster_side_label
from mleaudit.audit.formatters.html.markup import esc, fmt_num

__all__ = ["batch_summary"]

def html_table(headers: Iterable[str], rows: Iterable[Iterable[Any]]) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_SUMMARY_VERDICTS = ("clean", "review", "incomplete", "flagged", "error")


def batch_summary(summary: Mapping[str, Any]) -> str:
    """The batch summary (:func:`mleaudit.audit.batch_summary.summarize_batch`): totals, verdicts, rules, clusters."""
    from mleaudit.audit.batch_summary import describe_seeds

    totals, kept = summary.get("totals") or {}, summary.get("totals_excluding_flagged") or {}
    parts = ['<section class="batch" id="summary"><h2>Batch summary</h2>',
             "<h3>MLE-bench totals</h3>",
             html_table(("field", "all runs", "uncertified runs disqualified"), ((k, totals[k], kept.get(k, "")) for k in totals))]
    verdicts = summary.get("verdicts") or {}
    parts.append("<p>Verdicts: " + ", ".join(f"{esc(k)} {esc(v)}" for k, v in verdicts.items()) + "</p>")
    for kind, row in (summary.get("not_certified") or {}).items():
        if row.get("runs"):
            parts.append(f"<p>Not certified ({esc(kind)}): {esc(row['runs'])} run(s), {esc(row.get('medals', 0))} medal(s) "
                         "not counted after disqualification</p>")
    for label, key in (("all runs", "seeds"), ("uncertified runs disqualified", "seeds_excluding_flagged")):
        seeds = summary.get(key)
        if seeds and seeds.get("metrics"):
            medal = seeds["metrics"]["any_medal_percentage"]
            parts.append(f"<p>Any medal ({esc(label)}): {medal['mean']:.1f} ± {medal['standard_error']:.1f} % over "
                         f"{esc(seeds['num_seeds_averaged'])} seed(s) × {esc(seeds['num_competitions_per_seed'])} competition(s)"
                         + (" (missing runs padded as failed)" if seeds.get("pad_missing") else "") + "</p>")
        elif seeds:
            parts.append(f"<p>Any medal ({esc(label)}): no seed averaged</p>")
    seed_notes = describe_seeds(summary.get("seeds"), limit=50)
    if seed_notes:
        parts.append('<h3>Seeds: runs left out and padded</h3><ul class="seed-notes">'
                     + "".join(f"<li>{esc(line)}</li>" for line in seed_notes) + "</ul>")
    if summary.get("competitions"):
        parts += ["<h3>Competitions</h3>", html_table(
            ("competition", "runs", "valid", "medals", "medals (uncertified disqualified)", *_SUMMARY_VERDICTS),
            ((c["competition_id"], c["runs"], c["valid_submissions"], c["medals"], c["medals_excluding_flagged"],
              *(c.get(kind, 0) for kind in _SUMMARY_VERDICTS)) for c in summary["competitions"]))]
    if summary.get("rules"):
        parts += ["<h3>Rules</h3>", html_table(("rule", "category", "severity", "runs", "findings"),
                                          ((r["rule_id"], r["category"], r["severity"], r["runs"], r["findings"])
                                           for r in summary["rules"]))]
    clusters = (summary.get("copy_clusters") or {}).get("clusters") or []
    if clusters:
        parts.append(f"<h3>Copy clusters ({len(clusters)})</h3>")
        for number, cluster in enumerate(clusters, start=1):
            parts.append(f'<div class="cluster" id="cluster-{number}"><p>Runs: {esc(", ".join(cluster["runs"]))}'
                         + (f" · notebooks: {esc(', '.join(cluster['notebooks']))}" if cluster["notebooks"] else "") + "</p>")
            parts.append(html_table(("kind", "left", "right", "score", "longest fragment"),
                                ((e["kind"], cluster_side_label(e, "left"), cluster_side_label(e, "right"),
                                  fmt_num(e.get("score")), e.get("longest_fragment")) for e in cluster["edges"])))
            parts.append("</div>")
    errors = [r for r in summary.get("runs", []) if r.get("error")]
    if errors:
        items = "".join(f"<li><code>{esc(r['run_id'])}</code>: {esc(r['error'])}</li>" for r in errors)
        parts.append(f"<h3>Not audited ({len(errors)})</h3><ul>{items}</ul>")
    parts.append("</section>")
    return "\n".join(parts)
