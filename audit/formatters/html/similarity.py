"""A run's similarity section: the pairs table, the copied share, the flagged pairs' views; the figures' legend."""

from __future__ import annotations

from typing import Any, Mapping

from mleaudit.audit.formatters.common import TOO_SHORT, copied_share_line, pair_origin_label, pair_too_short
from mleaudit.audit.formatters.html.markup import esc, fmt_num
from mleaudit.audit.formatters.html.rundata import RunData

__all__ = ["LEGEND", "MAX_PAIRS", "OPEN_PAIRS", "share_percent", "similarity_section"]

#: Pairs listed in the similarity table of a run.
MAX_PAIRS = 10
#: Runs with at most this many flagged pairs show their side-by-side views open; more stay
#: collapsed and each is drawn when it is opened (or its link followed).
OPEN_PAIRS = 20


def _pair_row(pair: Mapping[str, Any], pid: str | None) -> str:
    flagged = f'<a href="#{pid}"><strong>flagged</strong></a>' if pid else "no"
    if pair_too_short(pair):
        figures = f'<td colspan="3">{TOO_SHORT}</td>'
    else:
        figures = (f'<td>{fmt_num(pair.get("similarity"), 3)}</td><td>{fmt_num(pair.get("agent_containment"), 3)}</td>'
                   f'<td>{fmt_num(pair.get("reference_containment"), 3)}</td>')
    origin = pair_origin_label(pair)
    agent = f'<code>{esc(pair["agent_path"])}</code>' + (f' <span class="origin">{esc(origin)}</span>' if origin else "")
    return (f'<tr><td>{agent}</td><td><code>{esc(pair["reference_path"])}</code></td>'
            f'<td>{fmt_num(pair.get("score"), 3)}</td><td>{flagged}</td>{figures}'
            f'<td>{fmt_num(pair.get("longest_fragment"))}</td></tr>')


def _pair_view(pair: Mapping[str, Any], pid: str, prefix: str, fragments: int, *, open_: bool) -> str:
    """A flagged pair's collapsed view; the page's script fills it from the run's data block."""
    origin = pair_origin_label(pair)
    return (
        f'<details class="pair" id="{pid}" data-run="{prefix}"{" open" if open_ else ""}><summary>'
        f'<code>{esc(pair["agent_path"])}</code>{" " + esc(origin) if origin else ""} ↔ '
        f'<code>{esc(pair["reference_path"])}</code> · copy score {fmt_num(pair.get("score"), 3)} · '
        f'{fragments} fragment(s)</summary><div class="pair-view"><p class="muted">The side-by-side view is drawn by '
        f'the page\'s script.</p></div></details>'
    )


def similarity_section(report: Mapping[str, Any], prefix: str, pair_ids: list[tuple[Mapping[str, Any], str]]) -> str:
    """A run's similarity section, with a data block and a view per flagged pair."""
    sim = report.get("similarity")
    if sim is None:
        reason = report.get("meta", {}).get("similarity_skipped")
        return f'<section class="similarity"><h3>Similarity</h3><p>Not run{": " + esc(reason) if reason else ""}.</p></section>'
    pairs = list(sim.get("pairs", []))
    ids = {id(p): pid for p, pid in pair_ids}
    out = [
        f'<section class="similarity" id="{prefix}-similarity"><h3>Similarity</h3>'
        f'<p>{len(sim.get("agent_files", []))} agent file(s) compared with {esc(sim.get("reference_count", 0))} '
        f'reference notebook(s) of <code>{esc(sim.get("corpus", "?"))}</code> '
        '(<a href="#legend">how to read the figures</a>).</p>'
    ]
    share = copied_share_line(sim)
    if share is not None:
        out.append(f'<p class="copied-share" id="{prefix}-copied-share"><strong>Copied share:</strong> {esc(share)}.</p>')
    if pairs:
        rows = [_pair_row(p, ids.get(id(p))) for p in pairs[:MAX_PAIRS] + [p for p in pairs[MAX_PAIRS:] if p.get("flagged")]]
        out.append(
            '<table class="pairs"><thead><tr><th>agent file</th><th>reference</th><th>copy score</th><th>flagged</th>'
            '<th>similarity</th><th>agent containment</th><th>reference containment</th><th>longest fragment</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>'
        )
    else:
        out.append("<p>No pair above the display threshold.</p>")
    if pair_ids:
        data = RunData()
        sources = sim.get("sources") or {}
        views = []
        for pair, pid in pair_ids:
            count = data.add_pair(pid, pair, sources)
            views.append(_pair_view(pair, pid, prefix, count, open_=len(pair_ids) <= OPEN_PAIRS))
        out.append(f'<h4>Flagged pairs side by side ({len(pair_ids)})</h4>')
        out.append(f'<p class="nocode" id="{prefix}-nocode" hidden>This browser cannot unpack the code of this page '
                   '(it needs DecompressionStream); the JSON report holds it.</p>')
        out.append("".join(views))
        out.append(data.block(prefix))
    out.append("</section>")
    return "".join(out)


def share_percent(similarity: Mapping[str, Any] | None) -> str:
    """The run's copied share as ``"38.1 %"``, or ``""`` when the report has none."""
    share = (similarity or {}).get("copied_share")
    value = share.get("share") if isinstance(share, Mapping) else None
    return f"{100 * float(value):.1f} %" if isinstance(value, (int, float)) else ""


LEGEND = (
    '<section class="legend" id="legend"><h2>How to read the similarity figures</h2><dl>'
    "<dt>copy score</dt><dd>The copy detector's decision statistic, in [0, 1): how strongly the agent file's code "
    "reads as copied from that notebook, renamed, reformatted or split up or not.</dd>"
    "<dt>flagged</dt><dd>The score reached the bound of the plagiarism rule; flagged pairs get a side-by-side view.</dd>"
    "<dt>similarity</dt><dd>Dolos's symmetric similarity: the shared fingerprints over both files' fingerprints.</dd>"
    "<dt>agent / reference containment</dt><dd>The share of the agent file's (the notebook's) fingerprints that the "
    "other file also has.</dd>"
    "<dt>longest fragment</dt><dd>Dolos's longest run of shared fingerprints (k-grams).</dd>"
    f"<dt>{TOO_SHORT}</dt><dd>A file with fewer tokens than one k-gram has no fingerprint: no figure would mean "
    "anything, so none is shown.</dd>"
    "<dt>node, step, id</dt><dd>Code read from a log (an AIDE journal's nodes) shares the log's path; the node (or "
    "the record and its line) tells the rows apart.</dd>"
    "<dt>copied share</dt><dd>The lines of the run's agent code that the copy detector matched to a public notebook "
    "in a flagged pair, over all lines of the agent code compared.</dd>"
    "<dt>side-by-side view</dt><dd>The matched fragments (the copy detector's chain of copied stretches, or Dolos's "
    "fragments) are highlighted; each highlighted stretch links to the same fragment on the other side, and the "
    "fragment table links to both. Each text is stored once in the page and drawn when its view is opened.</dd>"
    "</dl></section>"
)
