"""Built-in checks: Python functions for what a YAML matcher cannot express (bandit's plugin split).

A rule refers to a check with ``match: {builtin: <name>, params: {...}}``; the YAML keeps the
metadata (severity, message, rationale) and the check only finds matches. Each check receives a
:class:`RunContext` and keyword parameters from the rule, and returns a list of
:class:`~mleaudit.audit.rules.match.Match` whose ``values`` fill the rule's message template.

Register a check with :func:`check`::

    @check("submission-equals-answers", values=("match_fraction", "matched", "total"))
    def submission_equals_answers(ctx: RunContext, *, min_fraction: float = 0.999) -> list[Match]:
        ...

Checks never read the audited code as Python (no import, no exec) and never raise on bad run
data: a file they cannot read means no match, and a log line says why.
"""

from __future__ import annotations

from mleaudit.audit.checks.registry import CHECKS, CheckFn, RegisteredCheck, RunContext, check, get_check

# Importing the check modules registers their checks.
from mleaudit.audit.checks import divergence, feedback, grader, kernels, labels, leakcols, provenance, sample, sandbox_events, submission, typed, validation, wrappers  # noqa: F401

__all__ = ["RunContext", "CheckFn", "RegisteredCheck", "CHECKS", "check", "get_check"]
