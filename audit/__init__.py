"""mleaudit: integrity and plagiarism auditing for MLE-bench agent runs.

Public API: :func:`load_run` reads a run directory, :func:`audit_run` audits it into an
:class:`AuditReport` of :class:`Finding` records (with :class:`Severity`, :class:`Confidence` and
:class:`Span` evidence). Heavier modules are imported on first use so that ``import audit`` stays
cheap for the command line.
"""

# Nothing is imported at module level: `python -m audit` imports this package before
# audit/__main__.py can take the current directory off sys.path (see audit/_entry.py).

__version__ = "0.1.0"

__all__ = ["load_run", "audit_run", "AuditReport", "Finding", "Severity", "Confidence", "Span", "__version__"]

_EXPORTS = {
    "load_run": "audit.run",
    "audit_run": "audit.pipeline",
    "AuditReport": "audit.report",
    "Finding": "audit.model",
    "Severity": "audit.model",
    "Confidence": "audit.model",
    "Span": "audit.model",
}


def __getattr__(name: str) -> "object":
    # Lazy exports (PEP 562): audit.model and friends import `audit`, so eager imports here
    # would make the package import itself half-initialised.
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'audit' has no attribute {name!r}")
