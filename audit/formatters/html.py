"""Self-contained HTML report: verdict, grade panel, findings with evidence, side-by-side copies.

One file, no network: CSS and JavaScript are inline, and a Content-Security-Policy allows only
that one script and that one style sheet (by their sha256 hashes), so even a mistake in escaping
could not run code from an audited file. Everything that comes from the run, the notebooks or the
rules is escaped as text (``html.escape``); ids and links are built from numbers only.

For each flagged similarity pair the page shows the agent file and the reference notebook side by
side, notebook code cells as cells, the matched fragments highlighted; every highlighted stretch
links to the same fragment on the other side, and the fragment table links to both. The texts
come from the report itself (``similarity.sources``, filled by the audit pipeline for flagged
pairs), never from disk: a report renders the same after the run folder is gone, and rendering
cannot be made to read files. When a source is missing or was over the pipeline's size cap, the
fragments are listed by location without the code.

A list of reports renders as one page with an index (batch output); ids are prefixed per run
(``r1-``, ``r2-`` ...).

Sample (structure)::

    <section class="run" id="r1">  verdict · grade panel · findings (r1-f1 ...) · similarity
      <section class="pair" id="r1-p1">  fragment table · agent pane (r1-p1-a1 ...) | reference pane (r1-p1-b1 ...)
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence, TextIO

from audit.formatters.common import (
    SEVERITY_ORDER,
    as_report_dicts,
    flagged_pairs,
    fragment_side_label,
    grade_status,
    medal_of,
    pair_fragments,
    review_line,
    span_location,
)
from audit.formatters.terminal import HIDDEN_FORMAT_CHARS
from audit.report import AuditReport

__all__ = ["render_html", "write_html", "CONTENT_SECURITY_POLICY"]

#: Sources with more lines than this show only the lines near fragments (logs can be long).
MAX_FULL_LINES = 400
#: Lines of context kept around fragments in a shortened source.
CONTEXT_LINES = 12
#: Pairs listed in the similarity table of a run.
MAX_PAIRS = 10
#: Evidence locations shown open per finding; the rest sit in a collapsed <details>.
MAX_OPEN_EVIDENCE = 2

# Controls and the format characters that reorder or hide text (a right-to-left override).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f" + HIDDEN_FORMAT_CHARS + "]")
_SAFE_URL = re.compile(r"^https://[A-Za-z0-9._~:/?#@!$&'()*+,;=%-]+$")

_CSS = """
:root{--bg:#fff;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--code:#f6f8fa;--hl:#fff1b8;--hl2:#ffd33d;
--crit:#82071e;--high:#cf222e;--med:#bc4c00;--low:#9a6700;--info:#59636e;--ok:#1a7f37}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.5 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif}
main{max-width:1400px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:20px;margin:24px 0 8px}h3{font-size:16px;margin:20px 0 8px}
h4{font-size:14px;margin:16px 0 6px}
code,pre{font:12px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.muted{color:var(--muted)}
table{border-collapse:collapse;margin:6px 0}th,td{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:var(--code);font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
.run{border-top:3px solid var(--line);margin-top:24px;padding-top:8px}
.verdict{display:inline-block;padding:6px 12px;border-radius:6px;font-weight:700;color:#fff}
.v-flagged{background:var(--high)}.v-incomplete{background:#6f42c1}.v-review{background:var(--med)}.v-clean{background:var(--ok)}
.badge{display:inline-block;padding:0 7px;border-radius:10px;font-size:12px;font-weight:600;border:1px solid currentColor}
.sev-critical{color:var(--crit)}.sev-high{color:var(--high)}.sev-medium{color:var(--med)}.sev-low{color:var(--low)}.sev-info{color:var(--info)}
.medal-gold{background:#f9d849;color:#3b2f00}.medal-silver{background:#d8dee4;color:#24292f}.medal-bronze{background:#d49a6a;color:#2b1600}
.medal-none{background:var(--code);color:var(--muted)}
.medal{padding:2px 10px;border-radius:10px;font-weight:700}
.reached{color:var(--ok);font-weight:700}
.finding{border:1px solid var(--line);border-left:4px solid currentColor;border-radius:6px;padding:8px 12px;margin:10px 0}
.finding>*{color:var(--fg)}.finding header{display:flex;gap:8px;align-items:baseline;flex-wrap:wrap}
.finding header .rule{font-weight:600}
.where{margin-top:8px;font-weight:600}.where .label{font-weight:400;color:var(--muted)}
pre.excerpt{background:var(--code);border:1px solid var(--line);border-radius:6px;padding:6px 8px;overflow:auto;max-height:360px;margin:4px 0}
.fp{font-size:11px;color:var(--muted)}
.decision{font-weight:700;text-transform:uppercase;font-size:12px}.review-dismissed{opacity:.6}
.review-dismissed .decision{color:var(--muted)}.review-confirmed .decision{color:var(--high)}
.review{font-style:italic}
details.rule-info,details.more-evidence{margin-top:6px}details.rule-info .rationale{white-space:pre-wrap}
.sbs{display:grid;grid-template-columns:1fr 1fr;gap:12px;align-items:start}
@media (max-width:900px){.sbs{grid-template-columns:1fr}}
.pane{position:relative;border:1px solid var(--line);border-radius:6px;max-height:75vh;overflow:auto;background:var(--bg)}
.pane-head{position:sticky;top:0;z-index:2;background:var(--code);border-bottom:1px solid var(--line);padding:4px 8px;font-weight:600}
pre.code{margin:0;padding:4px 0;white-space:pre}
.line{display:block;padding-right:8px}.line.hl{background:#fffbe6}
.ln{display:inline-block;width:4.5em;padding-right:8px;text-align:right;color:var(--muted);user-select:none}
.cell{margin:8px;border:1px solid var(--line);border-radius:4px}
.cell-in{font:11px ui-monospace,monospace;color:#0550ae;background:var(--code);padding:2px 8px;border-bottom:1px solid var(--line)}
a.frag{background:var(--hl);color:inherit;text-decoration:none;border-bottom:1px solid var(--hl2)}
a.frag:hover,a.frag.active,tr.frag-row.active td{background:var(--hl2)}
.frag-anchor{scroll-margin-top:40px}
.gap{color:var(--muted);font-style:italic;padding:2px 8px}
.omitted{padding:8px;color:var(--muted)}
.placeholders{padding:4px 8px;margin:0;list-style:none}
nav.index td a{font-weight:600}
@media print{.pane{max-height:none;overflow:visible}}
""".strip()

# Scrolls each code pane to its first fragment on load; activates a fragment (both sides and its
# table row) when its anchor becomes the URL fragment and scrolls the pair's panes to it. It reads
# only ids and numeric data attributes.
_JS = """
(function () {
  "use strict";
  function clear() {
    var old = document.querySelectorAll(".active");
    for (var i = 0; i < old.length; i++) { old[i].classList.remove("active"); }
  }
  function activate() {
    clear();
    var id = "";
    try { id = decodeURIComponent(window.location.hash.slice(1)); } catch (e) { id = ""; }
    var target = id ? document.getElementById(id) : null;
    if (!target || !target.hasAttribute("data-frag")) { return; }
    var pair = target.closest(".pair");
    var key = target.getAttribute("data-frag");
    if (!pair || !/^[0-9]+$/.test(key)) { return; }
    var marks = pair.querySelectorAll("[data-frags~='" + key + "']");
    for (var i = 0; i < marks.length; i++) { marks[i].classList.add("active"); }
    var panes = pair.querySelectorAll(".pane");
    for (var j = 0; j < panes.length; j++) {
      scrollPane(panes[j], panes[j].querySelector(".frag-anchor[data-frag='" + key + "']"));
    }
  }
  function scrollPane(pane, anchor) {
    if (anchor) { pane.scrollTop = Math.max(0, anchor.offsetTop - 48); }
  }
  var all = document.querySelectorAll(".pane");
  for (var k = 0; k < all.length; k++) { scrollPane(all[k], all[k].querySelector(".frag-anchor")); }
  window.addEventListener("hashchange", activate);
  activate();
  document.documentElement.setAttribute("data-ready", "1");
})();
""".strip()


def _sha256_b64(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).digest()).decode("ascii")


#: Only the page's own style sheet and script may apply; nothing may be fetched.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; "
    f"style-src 'sha256-{_sha256_b64(_CSS)}'; "
    f"script-src 'sha256-{_sha256_b64(_JS)}'; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)


def _e(value: Any) -> str:
    """Escape untrusted text for HTML text or a quoted attribute; controls become visible."""
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(value))
    return html.escape(text, quote=True)


def _num(value: Any, digits: int = 4) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return _e(value)


# ----------------------------------------------------------------------------------------------
# Sources with highlighted fragments


@dataclass(frozen=True, slots=True, kw_only=True)
class _Range:
    """One fragment on one side, in character offsets of the source text."""

    number: int  # 1-based fragment number in the pair
    start: int
    end: int


class _Source:
    """A source text with its line table."""

    def __init__(self, text: str, cells: Sequence[Mapping[str, Any]]):
        self.text = text
        self.cells = [c for c in cells if isinstance(c, Mapping)]
        self.starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]

    @property
    def n_lines(self) -> int:
        return len(self.starts)

    def line_of(self, offset: int) -> int:
        """1-based line of a character offset."""
        return bisect_right(self.starts, offset)

    def line_bounds(self, line: int) -> tuple[int, int]:
        """Offsets ``[start, end)`` of 1-based ``line`` without its newline."""
        start = self.starts[line - 1]
        end = self.starts[line] - 1 if line < self.n_lines else len(self.text)
        return start, end

    def locate(self, number: int, span: Mapping[str, Any]) -> _Range | None:
        """The fragment's character range, trimmed of surrounding whitespace.

        The span's offsets are used when they agree with its start line; otherwise (a source
        that is not the text the spans were computed on) its whole lines are.
        """
        try:
            start, end = int(span["start_byte"]), int(span["end_byte"])
            first, last = int(span["start_line"]), int(span["end_line"])
        except (KeyError, TypeError, ValueError):
            return None
        if not (0 <= start < end <= len(self.text) and self.line_of(start) == first):
            if not 1 <= first <= last or first > self.n_lines:
                return None
            start = self.line_bounds(first)[0]
            end = self.line_bounds(min(last, self.n_lines))[1]
        text = self.text
        # Tokens start after whitespace and k-gram spans often begin at a newline: trim so the
        # anchor and the highlight start on a visible character.
        a, b = start, end
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if a < b:
            start, end = a, b
        return _Range(number=number, start=start, end=end) if start < end else None


def _visible_lines(source: _Source, ranges: list[_Range]) -> list[bool]:
    """Which lines to show: all of a short source, else the lines near fragments."""
    n = source.n_lines
    if n <= MAX_FULL_LINES or not ranges:
        return [True] * n
    show = [False] * n
    for r in ranges:
        first = max(1, source.line_of(r.start) - CONTEXT_LINES)
        last = min(n, source.line_of(max(r.start, r.end - 1)) + CONTEXT_LINES)
        for line in range(first, last + 1):
            show[line - 1] = True
    return show


class _Layout:
    """Fragments of one side by line: which ranges touch each line, which anchors start on it."""

    def __init__(self, source: _Source, ranges: list[_Range]):
        self.by_line: dict[int, list[_Range]] = {}
        self.anchors: dict[int, list[int]] = {}
        for r in ranges:
            first = source.line_of(r.start)
            last = source.line_of(max(r.start, r.end - 1))
            for line in range(first, last + 1):
                self.by_line.setdefault(line, []).append(r)
            self.anchors.setdefault(first, []).append(r.number)


def _render_line(source: _Source, line: int, layout: _Layout, side: str, other: str, prefix: str,
                 emitted: set[int], number_label: str, title: str = "") -> str:
    """One source line with its highlighted pieces; fragment anchors go before the line's text."""
    start, end = source.line_bounds(line)
    text = source.text
    covering = layout.by_line.get(line, [])
    points = {start, end}
    for r in covering:
        points.add(min(max(r.start, start), end))
        points.add(min(max(r.end, start), end))
    cuts = sorted(points)
    parts = []
    for number in layout.anchors.get(line, []):
        if number not in emitted:
            emitted.add(number)
            parts.append(f'<a class="frag-anchor" id="{prefix}-{side}{number}" data-frag="{number}"></a>')
    for a, b in zip(cuts, cuts[1:]):
        piece = text[a:b].rstrip("\r")
        if not piece:
            continue
        active = [r.number for r in covering if r.start <= a and r.end >= b]
        if active:
            frags = " ".join(str(n) for n in active)
            parts.append(f'<a class="frag" href="#{prefix}-{other}{active[0]}" data-frags="{frags}" '
                         f'title="fragment {frags}">{_e(piece)}</a>')
        else:
            parts.append(_e(piece))
    hl = " hl" if covering else ""
    title_attr = f' title="{_e(title)}"' if title else ""
    return f'<span class="line{hl}"{title_attr}><span class="ln">{number_label}</span>{"".join(parts)}</span>'


def _render_lines(source: _Source, lines: Iterable[int], show: list[bool], layout: _Layout, side: str, other: str,
                  prefix: str, emitted: set[int], cell_start: int | None = None) -> str:
    out = []
    hidden = 0
    for line in lines:
        if not show[line - 1]:
            hidden += 1
            continue
        if hidden:
            out.append(f'<span class="line gap">⋯ {hidden} line{"s" if hidden != 1 else ""} not shown</span>')
            hidden = 0
        if cell_start is None:
            label, title = str(line), ""
        else:
            label, title = str(line - cell_start + 1), f"code line {line}"
        out.append(_render_line(source, line, layout, side, other, prefix, emitted, label, title))
    if hidden:
        out.append(f'<span class="line gap">⋯ {hidden} line{"s" if hidden != 1 else ""} not shown</span>')
    # Lines are block elements: a newline between them would add an empty line in <pre>.
    return "".join(out)


def _render_pane(title: str, source_info: Mapping[str, Any] | None, fragments: list[Mapping[str, Any]],
                 side_key: str, side: str, other: str, prefix: str) -> str:
    """One side of a pair: its code (cells for notebooks) with fragment anchors and highlights."""
    head = f'<div class="pane-head">{_e(title)}</div>'
    text = source_info.get("text") if source_info else None
    emitted: set[int] = set()
    body = ""
    if isinstance(text, str):
        source = _Source(text, source_info.get("cells") or [])
        ranges = [r for i, f in enumerate(fragments, start=1) if (r := source.locate(i, f[side_key])) is not None]
        layout = _Layout(source, ranges)
        show = _visible_lines(source, ranges)
        if source.cells:
            blocks = []
            for cell in source.cells:
                first = max(1, int(cell.get("start_line", 1)))
                last = min(source.n_lines, int(cell.get("end_line", first)))
                if first > last:
                    continue
                code = _render_lines(source, range(first, last + 1), show, layout, side, other, prefix, emitted,
                                     cell_start=first)
                blocks.append(f'<div class="cell"><div class="cell-in">cell {_e(cell.get("cell_index", "?"))}</div>'
                              f'<pre class="code">{code}</pre></div>')
            body = "\n".join(blocks)
        else:
            code = _render_lines(source, range(1, source.n_lines + 1), show, layout, side, other, prefix, emitted)
            body = f'<pre class="code">{code}</pre>'
    else:
        why = (source_info or {}).get("omitted") or "the report does not carry this file's text"
        body = f'<p class="omitted">Code not shown: {_e(why)}.</p>'
    # Every fragment keeps a target on both sides, so every link of the page resolves.
    missing = [i for i in range(1, len(fragments) + 1) if i not in emitted]
    if missing:
        items = "".join(
            f'<li><a class="frag-anchor" id="{prefix}-{side}{i}" data-frag="{i}"></a>'
            f'<a class="frag" href="#{prefix}-{other}{i}" data-frags="{i}">fragment {i}</a>: '
            f'{_e(fragment_side_label(fragments[i - 1], side_key))}</li>'
            for i in missing
        )
        body += f'<ul class="placeholders">{items}</ul>'
    return f'<div class="pane pane-{side_key}">{head}{body}</div>'


def _render_pair(pair: Mapping[str, Any], sources: Mapping[str, Any], prefix: str) -> str:
    kind, fragments = pair_fragments(pair)
    agent_src = (sources.get("agent") or {}).get(pair["agent_path"])
    ref_src = (sources.get("reference") or {}).get(pair["reference_path"])
    unit = "tokens" if kind == "evidence" else "k-grams"
    rows = []
    for i, fragment in enumerate(fragments, start=1):
        rows.append(
            f'<tr class="frag-row" data-frags="{i}"><td class="num">{i}</td>'
            f'<td><a href="#{prefix}-a{i}">{_e(fragment_side_label(fragment, "agent"))}</a></td>'
            f'<td><a href="#{prefix}-b{i}">{_e(fragment_side_label(fragment, "reference"))}</a></td>'
            f'<td class="num">{_e(fragment.get("length", ""))}</td></tr>'
        )
    which = "the copy detector's chain of copied stretches" if kind == "evidence" else "Dolos fragments"
    figures = (
        f'copy score <strong>{_num(pair.get("score"), 3)}</strong> · similarity {_num(pair.get("similarity"), 3)} · '
        f'agent containment {_num(pair.get("agent_containment"), 3)} · reference containment '
        f'{_num(pair.get("reference_containment"), 3)} · longest fragment {_num(pair.get("longest_fragment"))}'
    )
    return (
        f'<section class="pair" id="{prefix}">'
        f'<h4><code>{_e(pair["agent_path"])}</code> ↔ <code>{_e(pair["reference_path"])}</code> '
        f'<span class="muted">({_e(pair.get("reference_id", ""))})</span></h4>'
        f'<p>{figures}</p>'
        f'<p class="muted">{len(fragments)} matched fragment(s), {which}. Each highlighted stretch links to the same '
        f'fragment on the other side.</p>'
        f'<table class="fragments"><thead><tr><th>#</th><th>agent</th><th>reference</th><th>{unit}</th></tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table>'
        f'<div class="sbs">'
        f'{_render_pane("agent · " + pair["agent_path"], agent_src, fragments, "agent", "a", "b", prefix)}'
        f'{_render_pane("reference · " + pair["reference_path"], ref_src, fragments, "reference", "b", "a", prefix)}'
        f'</div></section>'
    )


# ----------------------------------------------------------------------------------------------
# Report sections


def _grade_panel(report: Mapping[str, Any]) -> str:
    grade, meta = report.get("grade"), report.get("meta", {})
    status = grade_status(grade, meta)
    if status is not None:
        return f'<section class="grade"><h3>Grade</h3><p>{_e(status)}</p></section>'
    medal = medal_of(grade)
    op = "≤" if grade.get("is_lower_better") else "≥"
    tiers = [("gold", grade.get("gold_medal")), ("silver", grade.get("silver_medal")),
             ("bronze", grade.get("bronze_medal")), ("median", grade.get("above_median"))]
    rows = "".join(
        f'<tr><th>{name}</th><td class="num">{op + " " if name != "median" else ""}'
        f'{_num(grade.get(f"{name}_threshold"))}</td><td>{"<span class=reached>✓</span>" if hit else ""}</td></tr>'
        for name, hit in tiers
    )
    return (
        '<section class="grade"><h3>Grade</h3>'
        f'<p>score <strong>{_num(grade.get("score"), 5)}</strong> '
        f'<span class="medal medal-{medal}">{_e(medal if medal != "none" else "no medal")}</span> '
        f'{"above" if grade.get("above_median") else "not above"} median · '
        f'{"lower" if grade.get("is_lower_better") else "higher"} is better · valid submission</p>'
        f'<table class="thresholds"><thead><tr><th>tier</th><th>threshold</th><th>reached</th></tr></thead>'
        f'<tbody>{rows}</tbody></table>'
        f'<p class="muted">leaderboard: {_e(grade.get("leaderboard_source", "leaderboard"))} · competition '
        f'{_e(grade.get("competition_id", ""))}</p></section>'
    )


def _pair_link(evidence: Mapping[str, Any], pair_ids: list[tuple[Mapping[str, Any], str]]) -> str:
    for pair, pid in pair_ids:
        if evidence.get("path") == pair["agent_path"] and pair["reference_path"] in str(evidence.get("label", "")):
            return f' <a href="#{pid}">side by side ↓</a>'
    return ""


def _excerpt(evidence: Mapping[str, Any]) -> str:
    excerpt = str(evidence.get("excerpt") or "")
    if not excerpt:
        return ""
    lines = excerpt.split("\n")
    first, last = evidence.get("start_line"), evidence.get("end_line")
    numbered = isinstance(first, int) and isinstance(last, int) and len(lines) == last - first + 1
    body = "".join(
        f'<span class="line">{f"<span class=ln>{first + i}</span>" if numbered else ""}{_e(line.rstrip(chr(13)))}</span>'
        for i, line in enumerate(lines)
    )
    return f'<pre class="excerpt"><code>{body}</code></pre>'


def _finding(index: int, finding: Mapping[str, Any], rules: Mapping[str, Any], prefix: str,
             pair_ids: list[tuple[Mapping[str, Any], str]]) -> str:
    severity = str(finding.get("severity", "info"))
    sev_class = f"sev-{severity}" if severity in SEVERITY_ORDER else "sev-info"
    review = finding.get("review") if isinstance(finding.get("review"), Mapping) else None
    decision = str(review.get("decision", "")) if review else ""
    decided = f" review-{decision}" if decision in ("confirmed", "dismissed") else ""
    parts = [
        f'<article class="finding {sev_class}{decided}" id="{prefix}-f{index}">',
        f'<header><span class="badge {sev_class}">{_e(severity.upper())}</span>'
        f'<span class="badge sev-info">confidence {_e(finding.get("confidence", ""))}</span>'
        f'<span class="badge sev-info">actor {_e(finding.get("actor", "unknown"))}</span>'
        f'<code class="rule">{_e(finding["rule_id"])}</code><span>{_e(finding.get("title", ""))}</span>'
        f'{f"<span class=decision>{_e(decision)}</span>" if decision else ""}</header>',
        f'<p class="message">{_e(finding.get("message", ""))}</p>',
    ]
    if review:
        parts.append(f'<p class="review">Reviewer: {_e(review_line(review))}</p>')
    evidence = list(finding.get("evidence", []))
    for i, ev in enumerate(evidence):
        if i == MAX_OPEN_EVIDENCE:
            more = len(evidence) - MAX_OPEN_EVIDENCE
            parts.append(f'<details class="more-evidence"><summary>{more} more location{"s" if more != 1 else ""}'
                         '</summary>')
        where = span_location(str(ev.get("path", "")), ev.get("start_line"), ev.get("end_line"))
        label = f' <span class="label">({_e(ev["label"])})</span>' if ev.get("label") else ""
        parts.append(f'<div class="evidence"><div class="where"><code>{_e(where)}</code>{label}'
                     f'{_pair_link(ev, pair_ids)}</div>{_excerpt(ev)}</div>')
    if len(evidence) > MAX_OPEN_EVIDENCE:
        parts.append("</details>")
    info = rules.get(finding["rule_id"]) or {}
    if info.get("rationale") or info.get("references"):
        refs = "".join(
            f'<li><a href="{_e(r)}" rel="noopener noreferrer">{_e(r)}</a></li>' if _SAFE_URL.match(str(r))
            else f"<li>{_e(r)}</li>"
            for r in info.get("references", [])
        )
        parts.append(f'<details class="rule-info"><summary>Why this rule</summary>'
                     f'<div class="rationale">{_e(str(info.get("rationale", "")).strip())}</div>'
                     f'{f"<ul>{refs}</ul>" if refs else ""}</details>')
    if finding.get("fingerprint"):
        parts.append(f'<div class="fp">fingerprint {_e(finding["fingerprint"])}</div>')
    parts.append("</article>")
    return "".join(parts)


def _similarity(report: Mapping[str, Any], prefix: str, pair_ids: list[tuple[Mapping[str, Any], str]]) -> str:
    sim = report.get("similarity")
    if sim is None:
        reason = report.get("meta", {}).get("similarity_skipped")
        return f'<section class="similarity"><h3>Similarity</h3><p>Not run{": " + _e(reason) if reason else ""}.</p></section>'
    pairs = list(sim.get("pairs", []))
    ids = {id(p): pid for p, pid in pair_ids}
    out = [
        f'<section class="similarity" id="{prefix}-similarity"><h3>Similarity</h3>'
        f'<p>{len(sim.get("agent_files", []))} agent file(s) compared with {_e(sim.get("reference_count", 0))} '
        f'reference notebook(s) of <code>{_e(sim.get("corpus", "?"))}</code>.</p>'
    ]
    if pairs:
        rows = []
        for pair in pairs[:MAX_PAIRS] + [p for p in pairs[MAX_PAIRS:] if p.get("flagged")]:
            pid = ids.get(id(pair))
            flagged = f'<a href="#{pid}"><strong>flagged</strong></a>' if pid else "no"
            rows.append(
                f'<tr><td><code>{_e(pair["agent_path"])}</code></td><td><code>{_e(pair["reference_path"])}</code></td>'
                f'<td class="num">{_num(pair.get("score"), 3)}</td><td>{flagged}</td>'
                f'<td class="num">{_num(pair.get("similarity"), 3)}</td><td class="num">{_num(pair.get("agent_containment"), 3)}</td>'
                f'<td class="num">{_num(pair.get("reference_containment"), 3)}</td><td class="num">{_num(pair.get("longest_fragment"))}</td></tr>'
            )
        out.append(
            '<table class="pairs"><thead><tr><th>agent file</th><th>reference</th><th>copy score</th><th>flagged</th>'
            '<th>similarity</th><th>agent containment</th><th>reference containment</th><th>longest fragment</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>'
        )
    else:
        out.append("<p>No pair above the display threshold.</p>")
    sources = sim.get("sources") or {}
    for pair, pid in pair_ids:
        out.append(_render_pair(pair, sources, pid))
    out.append("</section>")
    return "".join(out)


_VERDICT_CLASSES = ("clean", "review", "incomplete", "flagged")


def _gaps(gaps: list[Mapping[str, Any]], prefix: str) -> str:
    """What the audit did not check (an incomplete audit), one item per gap."""
    if not gaps:
        return ""
    items = []
    for gap in gaps:
        where = " ".join(f"<code>{_e(x)}</code>" for x in (gap.get("rule_id"), gap.get("path")) if x)
        items.append(f"<li>{_e(gap.get('kind', ''))}{' ' + where if where else ''}: {_e(gap.get('reason', ''))}</li>")
    return (f'<section class="gaps" id="{prefix}-gaps"><h3>Not checked ({len(gaps)})</h3>'
            f'<p>The audit is incomplete: the run is not clean until these are resolved.</p><ul>{"".join(items)}</ul></section>')


def _run_section(report: Mapping[str, Any], n: int) -> str:
    prefix = f"r{n}"
    run, verdict, meta = report["run"], report["verdict"], report.get("meta", {})
    kind = str(verdict.get("kind", "review"))
    kind_class = kind if kind in _VERDICT_CLASSES else "review"
    pair_ids = [(p, f"{prefix}-p{i}") for i, p in enumerate(flagged_pairs(report.get("similarity")), start=1)]
    reasons = "".join(f"<li>{_e(r)}</li>" for r in verdict.get("reasons", []))
    facts = [f"competition <code>{_e(run['competition_id'])}</code>" if run.get("competition_id") else "competition unknown"]
    if run.get("agent_id"):
        facts.append(f"agent <code>{_e(run['agent_id'])}</code>")
    facts.append(
        f"{sum(run.get('artifact_counts', {}).values())} file(s), {_e(run.get('code_units', 0))} code unit(s), "
        f"{_e(run.get('log_events', 0))} log event(s), {_e(meta.get('rules', '?'))} rule(s)"
    )
    if run.get("parse_errors"):
        facts.append(f"syntax errors in {len(run['parse_errors'])} unit(s)")
    findings = list(report.get("findings", []))
    counts = {s: sum(1 for f in findings if f.get("severity") == s) for s in SEVERITY_ORDER}
    count_text = ", ".join(f'<span class="sev-{s}">{c} {s}</span>' for s, c in counts.items() if c) or "none"
    parts = [
        f'<section class="run" id="{prefix}" data-verdict="{kind_class}">',
        f'<h2>Run <code>{_e(run["run_id"])}</code></h2>',
        f'<p class="muted">{" · ".join(facts)}</p>',
        f'<div><span class="verdict v-{kind_class}">{_e(kind.upper())}</span></div>',
        f'<ul class="reasons">{reasons}</ul>' if reasons else "",
        _gaps(verdict.get("gaps", []), prefix),
        _grade_panel(report),
        f'<section class="findings" id="{prefix}-findings"><h3>Findings ({len(findings)}: {count_text})</h3>',
    ]
    rules = report.get("rules", {}) or {}
    parts += [_finding(i, f, rules, prefix, pair_ids) for i, f in enumerate(findings, start=1)]
    if not findings:
        parts.append("<p>None.</p>")
    parts.append("</section>")
    parts.append(_similarity(report, prefix, pair_ids))
    skipped = report.get("skipped", [])
    if skipped:
        items = "".join(f"<li><code>{_e(s['path'])}</code>: {_e(s['reason'])}</li>" for s in skipped)
        parts.append(f'<section class="skipped"><h3>Not audited ({len(skipped)})</h3><ul>{items}</ul></section>')
    parts.append(
        f'<p class="fp">{_e(meta.get("tool", "mleaudit"))} {_e(meta.get("version", ""))} · ruleset '
        f'{_e(str(meta.get("ruleset_digest", ""))[:12])} · {_e(meta.get("created_at", ""))} · run folder '
        f'<code>{_e(run.get("root", ""))}</code></p>'
    )
    parts.append("</section>")
    return "\n".join(p for p in parts if p)


def _index(reports: list[dict[str, Any]]) -> str:
    rows = []
    for n, report in enumerate(reports, start=1):
        run, grade = report["run"], report.get("grade")
        kind = str(report["verdict"].get("kind", ""))
        rows.append(
            f'<tr><td><a href="#r{n}">{_e(run["run_id"])}</a></td><td>{_e(run.get("competition_id") or "–")}</td>'
            f'<td><span class="verdict v-{kind if kind in _VERDICT_CLASSES else "review"}">{_e(kind.upper())}</span></td>'
            f'<td>{_e(medal_of(grade)) if grade else "–"}</td><td class="num">{len(report.get("findings", []))}</td>'
            f'<td class="num">{len(flagged_pairs(report.get("similarity")))}</td></tr>'
        )
    return (
        '<nav class="index"><h2>Runs</h2><table><thead><tr><th>run</th><th>competition</th><th>verdict</th>'
        f'<th>medal</th><th>findings</th><th>flagged pairs</th></tr></thead><tbody>{"".join(rows)}</tbody></table></nav>'
    )


def _table(headers: Iterable[str], rows: Iterable[Iterable[Any]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_SUMMARY_VERDICTS = ("clean", "review", "incomplete", "flagged", "error")


def _batch_summary(summary: Mapping[str, Any]) -> str:
    """The batch summary (:func:`audit.batch_summary.summarize_batch`): totals, verdicts, rules, clusters."""
    from audit.batch_summary import describe_seeds

    totals, kept = summary.get("totals") or {}, summary.get("totals_excluding_flagged") or {}
    parts = ['<section class="batch" id="summary"><h2>Batch summary</h2>',
             "<h3>MLE-bench totals</h3>",
             _table(("field", "all runs", "uncertified runs disqualified"), ((k, totals[k], kept.get(k, "")) for k in totals))]
    verdicts = summary.get("verdicts") or {}
    parts.append("<p>Verdicts: " + ", ".join(f"{_e(k)} {_e(v)}" for k, v in verdicts.items()) + "</p>")
    for kind, row in (summary.get("not_certified") or {}).items():
        if row.get("runs"):
            parts.append(f"<p>Not certified ({_e(kind)}): {_e(row['runs'])} run(s), {_e(row.get('medals', 0))} medal(s) "
                         "not counted after disqualification</p>")
    for label, key in (("all runs", "seeds"), ("uncertified runs disqualified", "seeds_excluding_flagged")):
        seeds = summary.get(key)
        if seeds and seeds.get("metrics"):
            medal = seeds["metrics"]["any_medal_percentage"]
            parts.append(f"<p>Any medal ({_e(label)}): {medal['mean']:.1f} ± {medal['standard_error']:.1f} % over "
                         f"{_e(seeds['num_seeds_averaged'])} seed(s) × {_e(seeds['num_competitions_per_seed'])} competition(s)"
                         + (" (missing runs padded as failed)" if seeds.get("pad_missing") else "") + "</p>")
        elif seeds:
            parts.append(f"<p>Any medal ({_e(label)}): no seed averaged</p>")
    seed_notes = describe_seeds(summary.get("seeds"), limit=50)
    if seed_notes:
        parts.append('<h3>Seeds: runs left out and padded</h3><ul class="seed-notes">'
                     + "".join(f"<li>{_e(line)}</li>" for line in seed_notes) + "</ul>")
    if summary.get("competitions"):
        parts += ["<h3>Competitions</h3>", _table(
            ("competition", "runs", "valid", "medals", "medals (uncertified disqualified)", *_SUMMARY_VERDICTS),
            ((c["competition_id"], c["runs"], c["valid_submissions"], c["medals"], c["medals_excluding_flagged"],
              *(c.get(kind, 0) for kind in _SUMMARY_VERDICTS)) for c in summary["competitions"]))]
    if summary.get("rules"):
        parts += ["<h3>Rules</h3>", _table(("rule", "category", "severity", "runs", "findings"),
                                          ((r["rule_id"], r["category"], r["severity"], r["runs"], r["findings"])
                                           for r in summary["rules"]))]
    clusters = (summary.get("copy_clusters") or {}).get("clusters") or []
    if clusters:
        parts.append(f"<h3>Copy clusters ({len(clusters)})</h3>")
        for number, cluster in enumerate(clusters, start=1):
            parts.append(f'<div class="cluster" id="cluster-{number}"><p>Runs: {_e(", ".join(cluster["runs"]))}'
                         + (f" · notebooks: {_e(', '.join(cluster['notebooks']))}" if cluster["notebooks"] else "") + "</p>")
            parts.append(_table(("kind", "left", "right", "score", "longest fragment"),
                                ((e["kind"], e.get("left_file") or e["left"], e.get("right_file") or e["right"],
                                  _num(e.get("score")), e.get("longest_fragment")) for e in cluster["edges"])))
            parts.append("</div>")
    errors = [r for r in summary.get("runs", []) if r.get("error")]
    if errors:
        items = "".join(f"<li><code>{_e(r['run_id'])}</code>: {_e(r['error'])}</li>" for r in errors)
        parts.append(f"<h3>Not audited ({len(errors)})</h3><ul>{items}</ul>")
    parts.append("</section>")
    return "\n".join(parts)


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
        A batch summary (:func:`audit.batch_summary.summarize_batch`) shown before the runs.

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
    body = [f"<h1>{_e(title)}</h1>"]
    if summary is not None:
        body.append(_batch_summary(summary))
    if len(data) != 1:
        body.append(_index(data))
    body += [_run_section(report, n) for n, report in enumerate(data, start=1)]
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n"
        f'<body><main>\n{chr(10).join(body)}\n</main><script>{_JS}</script></body></html>\n'
    )


def write_html(report: AuditReport, stream: TextIO) -> None:
    """Write ``report`` as one self-contained HTML page to ``stream``."""
    stream.write(render_html(report))
