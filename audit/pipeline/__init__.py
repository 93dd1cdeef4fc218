"""The audit pipeline: ``audit_run`` from a loaded run to an :class:`~mleaudit.audit.report.AuditReport`,
and ``run_audit`` from what ``mleaudit audit RUN`` is asked to a report.

Steps (DESIGN §4.5): expand the run into code units and log events; parse every code unit
(syntax errors are recorded, never fatal); grade the submission when the competition is known
and prepared; compare the code with the reference corpus; evaluate the rules over code, logs,
the run and the similarity pairs; decide the verdict.

Routine Listings
----------------
options
    :class:`AuditOptions`.
similarity_stage
    The comparison with the reference corpus (a folder or a corpus index) and what the report keeps.
coverage
    What was read of each run file, and the gaps: what the audit did not check.
orchestration
    :func:`audit_run` and :func:`artifact_text`.
request
    :class:`AuditRequest` and :func:`run_audit`: paths, ruleset, grading and competition settings
    resolved, then :func:`audit_run`.

Notes
-----
Every public name is re-exported here, so callers import from ``mleaudit.audit.pipeline`` (and a
test that replaces ``run_audit`` replaces it here, where the command modules look it up). Imports
point down the listing above: a module imports only modules listed before it, plus every lower
layer of ``mleaudit.audit`` (run loading, expansion, attribution, the rules engine and the built-in
checks, similarity, the report); nothing below imports this package, and the command modules
import it lazily. A new step of the audit is a function of its own, called from
:func:`audit_run` at its place; whatever a step could not do must become a gap in ``coverage``,
so that a clean verdict keeps meaning that every file was read and every rule ran.
"""

from mleaudit.audit.pipeline.coverage import DATA_FILE_NOT_READ
from mleaudit.audit.pipeline.options import AuditOptions
from mleaudit.audit.pipeline.orchestration import artifact_text, audit_run
from mleaudit.audit.pipeline.request import AuditRequest, run_audit
from mleaudit.audit.pipeline.similarity_stage import MAX_SOURCE_CHARS, REPORT_FRAGMENTS_PER_PAIR

__all__ = ["AuditOptions", "audit_run", "AuditRequest", "run_audit", "artifact_text", "DATA_FILE_NOT_READ",
           "MAX_SOURCE_CHARS", "REPORT_FRAGMENTS_PER_PAIR"]
