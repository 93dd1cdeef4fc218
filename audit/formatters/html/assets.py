"""The page's inline style sheet and script, and the Content-Security-Policy that allows only those two."""

from __future__ import annotations

import base64
import hashlib

__all__ = ["CONTENT_SECURITY_POLICY", "CSS", "JS"]

CSS = """
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
JS = r"""
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
    f"style-src 'sha256-{_sha256_b64(CSS)}'; "
    f"script-src 'sha256-{_sha256_b64(JS)}'; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)
