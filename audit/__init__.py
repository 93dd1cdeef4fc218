"""Auditing of agent runs: reading runs, rules, similarity, reports and the command line.

Public API: :func:`load_run` reads a run directory, :func:`audit_run` audits it into an
:class:`AuditReport` of :class:`Finding` records (with :class:`Severity`, :class:`Confidence` and
:class:`Span` evidence). Heavier modules are imported on first use so that ``import mleaudit.audit``
stays cheap for the command line.
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
