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

Each text is stored once per run, in a hidden data block (JSON, or gzip-compressed base64 when
large) that the pairs refer to by number; the page's script draws a pair's view from it (with
``textContent``, never as markup) when the view is opened or its link followed, all of them at
load when a run has few flagged pairs. Explanations are given once per page: the rules with a
finding (``#rules``, linked from each finding) and a legend of the similarity figures
(``#legend``). So an audit of hundreds of flagged pairs stays a few megabytes and opens quickly.

A list of reports renders as one page with an index (batch output); ids are prefixed per run
(``r1-``, ``r2-`` ...).

Sample (structure)::

    <section class="run" id="r1">  verdict · grade panel · findings (r1-f1 ...) · similarity (r1-copied-share)
      <details class="pair" id="r1-p1">  drawn by the script: fragment table · agent pane (r1-p1-a1 ...) | reference pane (r1-p1-b1 ...)
      <div class="report-data" hidden data-run="r1">  {"texts": [...], "pairs": {"r1-p1": {"a": 0, "b": 1, "f": [...]}}}
    <section class="glossary" id="rules">  <section class="legend" id="legend">
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import html
import json
import re
from bisect import bisect_left
from typing import Any, Callable, Iterable, Mapping, Sequence, TextIO

from mleaudit.audit.formatters.common import (
    SEVERITY_ORDER,
    TOO_SHORT,
    as_report_dicts,
    cluster_side_label,
    copied_share_line,
    flagged_pairs,
    grade_status,
    medal_of,
    pair_agent_label,
    pair_fragments,
    pair_origin_label,
    pair_too_short,
    review_line,
    span_location,
)
from mleaudit.audit.formatters.terminal import HIDDEN_FORMAT_CHARS
from mleaudit.audit.report import AuditReport

__all__ = ["render_html", "write_html", "CONTENT_SECURITY_POLICY"]

#: Sources with more lines than this show only the lines near fragments (logs can be long).
MAX_FULL_LINES = 400
#: Lines of context kept around fragments in a shortened source.
CONTEXT_LINES = 12
#: Pairs listed in the similarity table of a run.
MAX_PAIRS = 10
#: Evidence locations shown open per finding; the rest sit in a collapsed <details>.
MAX_OPEN_EVIDENCE = 2
#: Runs with at most this many flagged pairs show their side-by-side views open; more stay
#: collapsed and each is drawn when it is opened (or its link followed).
OPEN_PAIRS = 20
#: A run's data block (texts and fragments, as JSON) longer than this is stored gzip-compressed
#: in base64 (a quarter of the size) and unpacked by the page's script.
COMPRESS_OVER = 256_000

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
table.pairs td:nth-child(n+3){text-align:right;font-variant-numeric:tabular-nums}table.pairs td:nth-child(4){text-align:left}
.origin{color:var(--muted);font-size:12px}
details.pair{border:1px solid var(--line);border-radius:6px;margin:6px 0;padding:4px 8px}
details.pair>summary{cursor:pointer}details.pair[open]>summary{margin-bottom:6px}
.legend dt{font-weight:600}.legend dd{margin:0 0 6px 16px}.rule-info .rationale{white-space:pre-wrap}
a.why{font-size:12px;margin-left:auto}
@media print{.pane{max-height:none;overflow:visible}}
""".strip()

# Scrolls each code pane to its first fragment on load; activates a fragment (both sides and its
# table row) when its anchor becomes the URL fragment and scrolls the pair's panes to it. It reads
# only ids and numeric data attributes.
_JS = r"""
(function () {
  "use strict";
  var HIDDEN = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]/g;
  var runs = {};
  function visible(s) {
    return s.replace(HIDDEN, function (c) {
      var h = c.charCodeAt(0).toString(16);
      return "\\x" + (h.length < 2 ? "0" + h : h);
    });
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = text; }
    return e;
  }
  function link(cls, href, text) {
    var a = el("a", cls, text);
    a.setAttribute("href", "#" + href);
    return a;
  }
  function Source(t) {
    this.text = t.text;
    this.cells = t.cells || [];
    var s = [0];
    for (var i = 0; i < this.text.length; i++) { if (this.text.charCodeAt(i) === 10) { s.push(i + 1); } }
    this.starts = s;
  }
  Source.prototype.lineOf = function (offset) {
    var lo = 0, hi = this.starts.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (this.starts[mid] <= offset) { lo = mid + 1; } else { hi = mid; } }
    return lo;
  };
  Source.prototype.bounds = function (line) {
    var n = this.starts.length;
    return [this.starts[line - 1], line < n ? this.starts[line] - 1 : this.text.length];
  };
  Source.prototype.locate = function (number, s) {
    var start = s[0], end = s[1], first = s[2], last = s[3], t = this.text, n = this.starts.length;
    if (!(0 <= start && start < end && end <= t.length && this.lineOf(start) === first)) {
      if (!(1 <= first && first <= last) || first > n) { return null; }
      start = this.bounds(first)[0];
      end = this.bounds(Math.min(last, n))[1];
    }
    var a = start, b = end;
    while (a < b && /\s/.test(t.charAt(a))) { a++; }
    while (b > a && /\s/.test(t.charAt(b - 1))) { b--; }
    if (a < b) { start = a; end = b; }
    return start < end ? {n: number, start: start, end: end} : null;
  };
  function sideLabel(span, cells) {
    var lines = span[3] !== span[2] ? span[2] + "\u2013" + span[3] : "" + span[2];
    for (var i = 0; i < cells.length; i++) {
      if (cells[i][1] <= span[2] && span[2] <= cells[i][2]) {
        return "cell " + cells[i][0] + ", line " + (span[2] - cells[i][1] + 1) + " (code lines " + lines + ")";
      }
    }
    return (span[3] !== span[2] ? "lines " : "line ") + lines;
  }
  function renderPane(data, info, frags, side, other, prefix, title) {
    var key = side === "a" ? 0 : 1;
    var pane = el("div", "pane pane-" + (side === "a" ? "agent" : "reference"));
    pane.appendChild(el("div", "pane-head", title));
    var emitted = {};
    if (info && typeof info.text === "string") {
      var src = new Source(info);
      var ranges = [];
      for (var i = 0; i < frags.length; i++) {
        var r = src.locate(i + 1, frags[i][key]);
        if (r) { ranges.push(r); }
      }
      var n = src.starts.length, show = [], byLine = {}, anchors = {};
      for (var l = 0; l < n; l++) { show.push(n <= data.full || !ranges.length); }
      ranges.forEach(function (r) {
        var first = src.lineOf(r.start), last = src.lineOf(Math.max(r.start, r.end - 1));
        for (var k = first; k <= last; k++) { (byLine[k] = byLine[k] || []).push(r); }
        (anchors[first] = anchors[first] || []).push(r.n);
        if (n > data.full) {
          for (var m = Math.max(1, first - data.context); m <= Math.min(n, last + data.context); m++) { show[m - 1] = true; }
        }
      });
      var renderLine = function (line, label, titleText) {
        var b = src.bounds(line), covering = byLine[line] || [], points = [b[0], b[1]];
        covering.forEach(function (r) {
          points.push(Math.min(Math.max(r.start, b[0]), b[1]));
          points.push(Math.min(Math.max(r.end, b[0]), b[1]));
        });
        points.sort(function (x, y) { return x - y; });
        var span = el("span", covering.length ? "line hl" : "line");
        if (titleText) { span.setAttribute("title", titleText); }
        span.appendChild(el("span", "ln", label));
        (anchors[line] || []).forEach(function (num) {
          if (emitted[num]) { return; }
          emitted[num] = true;
          var anchor = el("a", "frag-anchor");
          anchor.id = prefix + "-" + side + num;
          anchor.setAttribute("data-frag", "" + num);
          span.appendChild(anchor);
        });
        for (var p = 0; p + 1 < points.length; p++) {
          var x = points[p], y = points[p + 1];
          if (x === y) { continue; }
          var piece = src.text.slice(x, y).replace(/\r+$/, "");
          if (!piece) { continue; }
          var active = covering.filter(function (r) { return r.start <= x && r.end >= y; }).map(function (r) { return r.n; });
          if (active.length) {
            var a = link("frag", prefix + "-" + other + active[0], visible(piece));
            a.setAttribute("data-frags", active.join(" "));
            a.setAttribute("title", "fragment " + active.join(" "));
            span.appendChild(a);
          } else {
            span.appendChild(document.createTextNode(visible(piece)));
          }
        }
        return span;
      };
      var renderLines = function (pre, first, last, cellStart) {
        var hidden = 0;
        var flush = function () {
          if (hidden) { pre.appendChild(el("span", "line gap", "\u22ef " + hidden + " line" + (hidden !== 1 ? "s" : "") + " not shown")); }
          hidden = 0;
        };
        for (var line = first; line <= last; line++) {
          if (!show[line - 1]) { hidden++; continue; }
          flush();
          pre.appendChild(cellStart ? renderLine(line, "" + (line - cellStart + 1), "code line " + line) : renderLine(line, "" + line, ""));
        }
        flush();
      };
      if (src.cells.length) {
        src.cells.forEach(function (c) {
          var first = Math.max(1, c[1]), last = Math.min(n, c[2]);
          if (first > last) { return; }
          var cell = el("div", "cell");
          cell.appendChild(el("div", "cell-in", "cell " + c[0]));
          var pre = el("pre", "code");
          renderLines(pre, first, last, first);
          cell.appendChild(pre);
          pane.appendChild(cell);
        });
      } else {
        var pre = el("pre", "code");
        renderLines(pre, 1, n, 0);
        pane.appendChild(pre);
      }
    } else {
      pane.appendChild(el("p", "omitted", "Code not shown: " + ((info && info.omitted) || "the report does not carry this file's text") + "."));
    }
    var missing = el("ul", "placeholders");
    for (var j = 1; j <= frags.length; j++) {
      if (emitted[j]) { continue; }
      var item = el("li");
      var anchor = el("a", "frag-anchor");
      anchor.id = prefix + "-" + side + j;
      anchor.setAttribute("data-frag", "" + j);
      item.appendChild(anchor);
      var back = link("frag", prefix + "-" + other + j, "fragment " + j);
      back.setAttribute("data-frags", "" + j);
      item.appendChild(back);
      item.appendChild(document.createTextNode(": " + sideLabel(frags[j - 1][key], (info && info.cells) || [])));
      missing.appendChild(item);
    }
    if (missing.childNodes.length) { pane.appendChild(missing); }
    return pane;
  }
  function renderPair(section) {
    if (section.getAttribute("data-rendered")) { return; }
    var run = runs[section.getAttribute("data-run")];
    var pair = run && run.pairs[section.id];
    if (!pair) { return; }
    section.setAttribute("data-rendered", "1");
    var prefix = section.id, texts = run.texts, a = texts[pair.a], b = texts[pair.b], frags = pair.f;
    var table = el("table", "fragments"), head = el("tr"), body = el("tbody");
    ["#", "agent", "reference", pair.k === "evidence" ? "tokens" : "k-grams"].forEach(function (h) { head.appendChild(el("th", null, h)); });
    var thead = el("thead");
    thead.appendChild(head);
    table.appendChild(thead);
    frags.forEach(function (f, i) {
      var row = el("tr", "frag-row");
      row.setAttribute("data-frags", "" + (i + 1));
      row.appendChild(el("td", "num", "" + (i + 1)));
      var ca = el("td"), cb = el("td");
      ca.appendChild(link(null, prefix + "-a" + (i + 1), sideLabel(f[0], (a && a.cells) || [])));
      cb.appendChild(link(null, prefix + "-b" + (i + 1), sideLabel(f[1], (b && b.cells) || [])));
      row.appendChild(ca);
      row.appendChild(cb);
      row.appendChild(el("td", "num", "" + f[2]));
      body.appendChild(row);
    });
    table.appendChild(body);
    var view = section.querySelector(".pair-view") || section;
    view.textContent = "";
    view.appendChild(table);
    var sbs = el("div", "sbs");
    sbs.appendChild(renderPane(run, a, frags, "a", "b", prefix, "agent \u00b7 " + pair.ap));
    sbs.appendChild(renderPane(run, b, frags, "b", "a", prefix, "reference \u00b7 " + pair.bp));
    view.appendChild(sbs);
    var panes = sbs.querySelectorAll(".pane");
    for (var k = 0; k < panes.length; k++) { scrollPane(panes[k], panes[k].querySelector(".frag-anchor")); }
  }
  function clear() {
    var old = document.querySelectorAll(".active");
    for (var i = 0; i < old.length; i++) { old[i].classList.remove("active"); }
  }
  function scrollPane(pane, anchor) {
    if (anchor) { pane.scrollTop = Math.max(0, anchor.offsetTop - 48); }
  }
  function activate() {
    clear();
    var id = "";
    try { id = decodeURIComponent(window.location.hash.slice(1)); } catch (e) { id = ""; }
    var m = /^(r[0-9]+-p[0-9]+)(-[ab][0-9]+)?$/.exec(id);
    if (m) {
      var section = document.getElementById(m[1]);
      if (section) {
        renderPair(section);
        if (section.tagName === "DETAILS") { section.open = true; }
      }
    }
    var target = id ? document.getElementById(id) : null;
    if (target && m && !m[2]) { target.scrollIntoView(); }
    if (!target || !target.hasAttribute("data-frag")) { return; }
    target.scrollIntoView();
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
  function decode(node, done) {
    var raw = node.textContent;
    if (node.getAttribute("data-encoding") !== "gzip-base64") { done(JSON.parse(raw)); return; }
    if (typeof DecompressionStream === "undefined") { done(null); return; }
    var bin = atob(raw.replace(/\s+/g, "")), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text().then(
      function (text) { done(JSON.parse(text)); }, function () { done(null); });
  }
  function start() {
    var blocks = document.querySelectorAll(".report-data");
    var left = blocks.length;
    var finish = function () {
      var sections = document.querySelectorAll("details.pair");
      for (var i = 0; i < sections.length; i++) {
        sections[i].addEventListener("toggle", function (event) { if (event.target.open) { renderPair(event.target); } });
        if (sections[i].open) { renderPair(sections[i]); }
      }
      window.addEventListener("hashchange", activate);
      activate();
      document.documentElement.setAttribute("data-ready", "1");
    };
    if (!left) { finish(); return; }
    Array.prototype.forEach.call(blocks, function (node) {
      decode(node, function (data) {
        if (data) { runs[node.getAttribute("data-run")] = data; } else {
          var note = document.getElementById(node.getAttribute("data-run") + "-nocode");
          if (note) { note.hidden = false; }
        }
        left -= 1;
        if (!left) { finish(); }
      });
    });
  }
  start();
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
# Texts and fragments of the flagged pairs: one data block per run, each text stored once


def _utf16_offsets(text: str) -> Callable[[int], int]:
    """Map a character offset of ``text`` to the UTF-16 offset the page's script counts in."""
    astral = [i for i, ch in enumerate(text) if ord(ch) > 0xFFFF] if any(ord(ch) > 0xFFFF for ch in text) else []
    if not astral:
        return lambda offset: offset
    return lambda offset: offset + bisect_left(astral, offset)


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


class _RunData:
    """The data block of one run: every text once (by number), and each flagged pair's fragments."""

    def __init__(self) -> None:
        self.texts: list[dict[str, Any]] = []
        self.pairs: dict[str, dict[str, Any]] = {}
        self._numbers: dict[tuple[str, str], int] = {}
        self._offsets: list[Callable[[int], int]] = []

    def text_number(self, side: str, path: str, info: Mapping[str, Any] | None) -> int | None:
        """The number of the text of ``path`` on ``side`` (``agent``/``reference``), added once."""
        if not isinstance(info, Mapping):
            return None
        key = (side, path)
        if key not in self._numbers:
            text = info.get("text")
            cells = [[_int(c.get("cell_index")), _int(c.get("start_line"), 1), _int(c.get("end_line"), 1)]
                     for c in info.get("cells") or [] if isinstance(c, Mapping)]
            record: dict[str, Any] = {"text": text if isinstance(text, str) else None, "cells": cells}
            if not isinstance(text, str):
                record["omitted"] = str(info.get("omitted") or "the report does not carry this file's text")
            self._numbers[key] = len(self.texts)
            self.texts.append(record)
            self._offsets.append(_utf16_offsets(text) if isinstance(text, str) else (lambda offset: offset))
        return self._numbers[key]

    def add_pair(self, pid: str, pair: Mapping[str, Any], sources: Mapping[str, Any]) -> int:
        """Record a flagged pair's fragments; returns how many there are."""
        kind, fragments = pair_fragments(pair)
        a = self.text_number("agent", pair["agent_path"], (sources.get("agent") or {}).get(pair["agent_path"]))
        b = self.text_number("reference", pair["reference_path"],
                             (sources.get("reference") or {}).get(pair["reference_path"]))

        def span(side: Mapping[str, Any], number: int | None) -> list[int]:
            shift = self._offsets[number] if number is not None else (lambda offset: offset)
            return [shift(_int(side.get("start_byte"), -1)), shift(_int(side.get("end_byte"), -1)),
                    _int(side.get("start_line")), _int(side.get("end_line"))]

        self.pairs[pid] = {
            "a": a, "b": b, "ap": pair_agent_label(pair), "bp": str(pair["reference_path"]), "k": kind,
            "f": [[span(f.get("agent") or {}, a), span(f.get("reference") or {}, b), _int(f.get("length"))]
                  for f in fragments],
        }
        return len(fragments)

    def block(self, prefix: str) -> str:
        """The hidden element holding the data, as JSON or (when large) gzip-compressed base64."""
        data = json.dumps({"texts": self.texts, "pairs": self.pairs, "full": MAX_FULL_LINES,
                           "context": CONTEXT_LINES}, separators=(",", ":"), ensure_ascii=True)
        if len(data) > COMPRESS_OVER:
            packed = base64.b64encode(gzip.compress(data.encode("ascii"), compresslevel=9, mtime=0)).decode("ascii")
            return (f'<div class="report-data" hidden data-run="{prefix}" data-encoding="gzip-base64">'
                    f"{packed}</div>")
        return f'<div class="report-data" hidden data-run="{prefix}" data-encoding="json">{html.escape(data, quote=False)}</div>'


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
        f'<span class="line">{f"<span class=ln>{first + i}</span>" if numbered else ""}{_e(line.rstrip(chr(13)))}</span>'
        for i, line in enumerate(lines)
    )
    return f'<pre class="excerpt"><code>{body}</code></pre>'


def _evidence_item(ev: Mapping[str, Any], pid: str, *, excerpt: bool = True) -> str:
    where = span_location(str(ev.get("path", "")), ev.get("start_line"), ev.get("end_line"))
    label = f' <span class="label">({_e(ev["label"])})</span>' if ev.get("label") else ""
    link = f' <a href="#{pid}">side by side ↓</a>' if pid else ""
    return (f'<div class="evidence"><div class="where"><code>{_e(where)}</code>{label}{link}</div>'
            f'{_excerpt(ev) if excerpt else ""}</div>')


def _finding(index: int, finding: Mapping[str, Any], rule_anchors: Mapping[str, str], prefix: str,
             pair_ids: list[tuple[Mapping[str, Any], str]]) -> str:
    severity = str(finding.get("severity", "info"))
    sev_class = f"sev-{severity}" if severity in SEVERITY_ORDER else "sev-info"
    review = finding.get("review") if isinstance(finding.get("review"), Mapping) else None
    decision = str(review.get("decision", "")) if review else ""
    decided = f" review-{decision}" if decision in ("confirmed", "dismissed") else ""
    anchor = rule_anchors.get(str(finding.get("rule_id")))
    why = f' <a class="why" href="#{anchor}">why this rule</a>' if anchor else ""
    parts = [
        f'<article class="finding {sev_class}{decided}" id="{prefix}-f{index}">',
        f'<header><span class="badge {sev_class}">{_e(severity.upper())}</span>'
        f'<span class="badge sev-info">confidence {_e(finding.get("confidence", ""))}</span>'
        f'<span class="badge sev-info">actor {_e(finding.get("actor", "unknown"))}</span>'
        f'<code class="rule">{_e(finding["rule_id"])}</code><span>{_e(finding.get("title", ""))}</span>'
        f'{f"<span class=decision>{_e(decision)}</span>" if decision else ""}{why}</header>',
        f'<p class="message">{_e(finding.get("message", ""))}</p>',
    ]
    if review:
        parts.append(f'<p class="review">Reviewer: {_e(review_line(review))}</p>')
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
        parts.append(f'<div class="fp">fingerprint {_e(finding["fingerprint"])}</div>')
    parts.append("</article>")
    return "".join(parts)


def _pair_row(pair: Mapping[str, Any], pid: str | None) -> str:
    flagged = f'<a href="#{pid}"><strong>flagged</strong></a>' if pid else "no"
    if pair_too_short(pair):
        figures = f'<td colspan="3">{TOO_SHORT}</td>'
    else:
        figures = (f'<td>{_num(pair.get("similarity"), 3)}</td><td>{_num(pair.get("agent_containment"), 3)}</td>'
                   f'<td>{_num(pair.get("reference_containment"), 3)}</td>')
    origin = pair_origin_label(pair)
    agent = f'<code>{_e(pair["agent_path"])}</code>' + (f' <span class="origin">{_e(origin)}</span>' if origin else "")
    return (f'<tr><td>{agent}</td><td><code>{_e(pair["reference_path"])}</code></td>'
            f'<td>{_num(pair.get("score"), 3)}</td><td>{flagged}</td>{figures}'
            f'<td>{_num(pair.get("longest_fragment"))}</td></tr>')


def _pair_view(pair: Mapping[str, Any], pid: str, prefix: str, fragments: int, *, open_: bool) -> str:
    """A flagged pair's collapsed view; the page's script fills it from the run's data block."""
    origin = pair_origin_label(pair)
    return (
        f'<details class="pair" id="{pid}" data-run="{prefix}"{" open" if open_ else ""}><summary>'
        f'<code>{_e(pair["agent_path"])}</code>{" " + _e(origin) if origin else ""} ↔ '
        f'<code>{_e(pair["reference_path"])}</code> · copy score {_num(pair.get("score"), 3)} · '
        f'{fragments} fragment(s)</summary><div class="pair-view"><p class="muted">The side-by-side view is drawn by '
        f'the page\'s script.</p></div></details>'
    )


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
        f'reference notebook(s) of <code>{_e(sim.get("corpus", "?"))}</code> '
        '(<a href="#legend">how to read the figures</a>).</p>'
    ]
    share = copied_share_line(sim)
    if share is not None:
        out.append(f'<p class="copied-share" id="{prefix}-copied-share"><strong>Copied share:</strong> {_e(share)}.</p>')
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
        data = _RunData()
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


def _share_percent(similarity: Mapping[str, Any] | None) -> str:
    """The run's copied share as ``"38.1 %"``, or ``""`` when the report has none."""
    share = (similarity or {}).get("copied_share")
    value = share.get("share") if isinstance(share, Mapping) else None
    return f"{100 * float(value):.1f} %" if isinstance(value, (int, float)) else ""


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
            f'<li><a href="{_e(r)}" rel="noopener noreferrer">{_e(r)}</a></li>' if _SAFE_URL.match(str(r))
            else f"<li>{_e(r)}</li>"
            for r in info.get("references", [])
        )
        facts = " · ".join(_e(f"{k} {info[k]}") for k in ("category", "severity", "confidence") if info.get(k))
        items.append(
            f'<section class="rule-info" id="{anchor}"><h3><code>{_e(rule_id)}</code> {_e(info.get("title", ""))}</h3>'
            f'{f"<p class=muted>{facts}</p>" if facts else ""}'
            f'<div class="rationale">{_e(str(info.get("rationale", "")).strip() or "No rationale in the report.")}</div>'
            f'{f"<ul>{refs}</ul>" if refs else ""}</section>'
        )
    return f'<section class="glossary" id="rules"><h2>Rules</h2><p>Why each rule with a finding on this page exists.</p>{"".join(items)}</section>'


_LEGEND = (
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


def _run_section(report: Mapping[str, Any], n: int, rule_anchors: Mapping[str, str]) -> str:
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
    share = _share_percent(report.get("similarity"))
    if share:
        facts.append(f'<a href="#{prefix}-copied-share">{share} of the agent code found in public notebooks</a>')
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
    parts += [_finding(i, f, rule_anchors, prefix, pair_ids) for i, f in enumerate(findings, start=1)]
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
            f'<td class="num">{len(flagged_pairs(report.get("similarity")))}</td>'
            f'<td class="num">{_share_percent(report.get("similarity")) or "–"}</td></tr>'
        )
    return (
        '<nav class="index"><h2>Runs</h2><table><thead><tr><th>run</th><th>competition</th><th>verdict</th>'
        f'<th>medal</th><th>findings</th><th>flagged pairs</th><th>copied share</th></tr></thead><tbody>{"".join(rows)}</tbody></table></nav>'
    )


def _table(headers: Iterable[str], rows: Iterable[Iterable[Any]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_SUMMARY_VERDICTS = ("clean", "review", "incomplete", "flagged", "error")


def _batch_summary(summary: Mapping[str, Any]) -> str:
    """The batch summary (:func:`mleaudit.audit.batch_summary.summarize_batch`): totals, verdicts, rules, clusters."""
    from mleaudit.audit.batch_summary import describe_seeds

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
                                ((e["kind"], cluster_side_label(e, "left"), cluster_side_label(e, "right"),
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
    body = [f"<h1>{_e(title)}</h1>"]
    if summary is not None:
        body.append(_batch_summary(summary))
    if len(data) != 1:
        body.append(_index(data))
    anchors = _rule_anchors(data)
    body += [_run_section(report, n, anchors) for n, report in enumerate(data, start=1)]
    body.append(_glossary(data, anchors))
    if any(report.get("similarity") for report in data):
        body.append(_LEGEND)
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
