"""Auditing of agent runs: reading runs, rules, similarity, reports and the command line.

Public API: :func:`load_run` reads a run directory, :func:`audit_run` audits it into an
:class:`AuditReport` of :class:`Finding` records (with :class:`Severity`, :class:`Confidence` and
:class:`Span` evidence). Heavier modules are imported on first use so that ``import mleaudit.audit``
stays cheap for the command line.

Layers
------
Bottom to top; a module may import the layers below its own, never those above (the
``audit-layers`` contract of ``setup.cfg``, checked by ``tests/test_layers.py``):

1. **Value types and parsing**: ``model`` (findings, spans, severities), ``units`` (code units, log
   events, actors), ``errors``, ``parsing`` (tree-sitter grammars), ``textmap``, ``textcache``,
   ``cpus``, ``schemas``. They import nothing above.
2. **Reading a run**: ``run`` (the run directory: layout, safe reads, decoding, content sniffing,
   the loader), ``notebooks``, ``logs`` (one adapter per agent log format), ``driver`` (driver
   notebooks), ``expand`` (a run into code units and log events), ``attribution``, ``starter``,
   ``sandbox_record``. Untrusted input is read here, within caps; whatever is not read is listed
   as skipped, so that a clean verdict keeps meaning that every file was read.
3. **The rules engine**: ``rules`` (YAML rule specs, matchers, the evaluation, the check registry
   and the run context).
4. **The built-in checks**, ``checks``, and **similarity**, ``similarity`` (its own column: neither
   imports the other).
5. **The report**: ``report`` (verdict, gaps), ``report_similarity``, ``review`` (reviewer
   decisions).
6. **Orchestration**: ``pipeline`` (one run: :func:`audit_run`, ``run_audit``), ``batch``,
   ``batch_dask``, ``batch_summary``, ``clusters``, ``contamination``.
7. **Output**: ``formatters`` (one output format each) and ``cli_options``.
8. **Commands**: ``cli``, ``batch_cli``, ``review_cli``, ``contamination_cli`` (and the command
   modules inside packages: ``rules.cli``, ``similarity.cli``, ``similarity.corpus_cli``).

``mleaudit.grading`` imports nothing of this package; ``mleaudit.sandbox`` imports only ``run``
(the run-directory contract, :class:`~mleaudit.audit.run.RunLayout`). Each package's own
docstring lists its modules and the order they import each other in.

Where the next one goes
-----------------------
- **A rule**: YAML under ``rules/<category>/`` with its self-test (see :mod:`mleaudit.audit.rules`);
  no Python unless no matcher can say it.
- **A built-in check** (what a matcher cannot express): a function registered in the module of its
  concept in :mod:`mleaudit.audit.checks`, referred to by a rule's ``match: {builtin: ...}``.
- **A log adapter** (a new agent framework's log format): a module of :mod:`mleaudit.audit.logs`
  and an entry in its ``ADAPTERS``, in detection order.
- **A run layout** or a file kind: :class:`~mleaudit.audit.run.RunLayout` and
  :func:`~mleaudit.audit.run.detect_layout`, ``run.kinds`` (by name) or ``run.sniffing`` (by
  content).
- **An output format**: a module of :mod:`mleaudit.audit.formatters` and an entry in its
  ``FORMATTERS``.
- **A step of the audit**: a function called from :func:`audit_run` (``pipeline.orchestration``);
  what it cannot do becomes a gap (``pipeline.coverage``).
"""

# Nothing is imported at module level: importing stays cheap for the command line, and the lazy
# exports avoid a half-initialised package (the modules below import it).

__version__ = "0.1.0"

__all__ = ["load_run", "audit_run", "AuditReport", "Finding", "Severity", "Confidence", "Span", "__version__"]

_EXPORTS = {
    "load_run": "mleaudit.audit.run",
    "audit_run": "mleaudit.audit.pipeline",
    "AuditReport": "mleaudit.audit.report",
    "Finding": "mleaudit.audit.model",
    "Severity": "mleaudit.audit.model",
    "Confidence": "mleaudit.audit.model",
    "Span": "mleaudit.audit.model",
}


def __getattr__(name: str) -> "object":
    # Lazy exports (PEP 562): mleaudit.audit.model and friends import `audit`, so eager imports here
    # would make the package import itself half-initialised.
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'mleaudit.audit' has no attribute {name!r}")
