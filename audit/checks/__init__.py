"""Built-in checks: Python functions for what a YAML matcher cannot express (bandit's plugin split).

A rule refers to a check with ``match: {builtin: <name>, params: {...}}``; the YAML keeps the
metadata (severity, message, rationale) and the check only finds matches. Each check receives a
:class:`~mleaudit.audit.rules.context.RunContext` and keyword parameters from the rule, and returns
a list of :class:`~mleaudit.audit.rules.match.Match` whose ``values`` fill the rule's message template.

Checks never read the audited code as Python (no import, no exec) and never raise on bad run
data: a file they cannot read means no match, and a log line says why.

Layering
--------
The checks sit above the rules engine: they may import the model, parsing, units, logs, run
loading, :mod:`mleaudit.audit.rules` (``context``, ``registry``, ``match``) and
:mod:`mleaudit.grading`; nothing under :mod:`mleaudit.audit.rules` imports them. The engine finds
them through its registry (:mod:`mleaudit.audit.rules.registry`), which each check module fills
when it is imported; importing this package imports every check module, so the pipeline and
``mleaudit rules`` import it before they load rules.

Adding a check
--------------
Write the rule first (YAML under ``rules/``, see :mod:`mleaudit.audit.rules`); only when no
matcher can say it, add a function to the module of its concept here (or a new module, then
list it in the import below) and register it with :func:`~mleaudit.audit.rules.registry.check`::

    @check("submission-equals-answers", values=("match_fraction", "matched", "total"))
    def submission_equals_answers(ctx: RunContext, *, min_fraction: float = 0.999) -> list[Match]:
        ...

Routine Listings
----------------
Helpers shared by checks: :mod:`~.competition` (what a competition publishes), :mod:`~.evidence`
(evidence of code units, events and file lines), :mod:`~.tables` (bounded CSV reads),
:mod:`~.writes` (where code writes files; shell commands; scripts a run ran).
Checks: :mod:`~.divergence`, :mod:`~.feedback`, :mod:`~.grader`, :mod:`~.kernels`,
:mod:`~.labels`, :mod:`~.leakcols`, :mod:`~.provenance`, :mod:`~.sample`,
:mod:`~.sandbox_events`, :mod:`~.submission`, :mod:`~.typed`, :mod:`~.validation`,
:mod:`~.wrappers`.

The registry names are re-exported here for callers of the old import path.
"""

from __future__ import annotations

from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.rules.registry import CHECKS, CheckFn, RegisteredCheck, check, get_check

# Importing the check modules registers their checks.
from mleaudit.audit.checks import divergence, feedback, grader, kernels, labels, leakcols, provenance, sample, sandbox_events, submission, typed, validation, wrappers  # noqa: F401

__all__ = ["RunContext", "CheckFn", "RegisteredCheck", "CHECKS", "check", "get_check"]
