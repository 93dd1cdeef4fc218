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

Routine Listings
----------------
assets
    The page's style sheet and script, and :data:`CONTENT_SECURITY_POLICY`, which allows only them.
markup
    Escaping of untrusted text (``esc``), numbers, safe links.
rundata
    ``RunData``: a run's hidden data block (each text once, each flagged pair's fragments).
findings
    The grade panel and the findings with their evidence.
similarity
    The similarity section: the pairs table, the flagged pairs' views, the legend of the figures.
batch
    The batch summary shown before the runs.
page
    A run's section, the index of runs, the rules explained, and :func:`render_html` /
    :func:`write_html`: the page.

Notes
-----
Imports point down the listing above; the modules import only :mod:`mleaudit.audit.report`,
:mod:`mleaudit.audit.formatters.common` and :mod:`mleaudit.audit.formatters.terminal` (and the
batch summary lazily its :func:`~mleaudit.audit.batch_summary.describe_seeds`). Everything a
module writes from a report goes through ``markup.esc``. A new section of a run goes in its own
module here, called from ``page._run_section``; anything the page's script needs goes in the
data block (``rundata``) and the script (``assets``), whose hashes the policy follows.
"""

from __future__ import annotations

from mleaudit.audit.formatters.html.assets import CONTENT_SECURITY_POLICY
from mleaudit.audit.formatters.html.page import render_html, write_html

__all__ = ["render_html", "write_html", "CONTENT_SECURITY_POLICY"]
