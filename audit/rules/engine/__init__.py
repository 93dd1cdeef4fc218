"""Evaluate a ruleset over a run's code units, log events, files, run context and similarity pairs.

Each rule runs on the units of its targets (DESIGN §4.3):

- ``code``: one :class:`~mleaudit.audit.units.CodeUnit` at a time (filtered by ``languages`` and ``paths``);
- ``log``: one :class:`~mleaudit.audit.units.LogEvent` at a time (filtered by ``events`` and ``paths``),
  so a regex never spans two events;
- ``file``: one ``(path, text)`` at a time;
- ``run``: the whole :class:`~mleaudit.audit.rules.context.RunContext` (built-in checks);
- ``similarity``: one pair report at a time, kept when every ``when`` bound holds.

Evidence points at the host file: offsets inside a code unit are mapped with
``CodeUnit.host_span`` and offsets inside a log event with ``Span.within`` of the event's span;
when a text was decoded from a JSON string (so offsets cannot be mapped) the evidence is the
whole region it came from. One finding is kept per (rule id, focus span), and of text findings
whose spans nest in the same file only the narrowest (the same command seen as a log event and
as the code unit extracted from it). A rule that raises (or whose regex runs past its time
bound) on some unit is recorded as an :class:`EvaluationError` for that (rule, unit) — the audit
reports it as a gap, never as silence — and the other rules and units still run.

A competition's audit policy (:class:`~mleaudit.audit.rules.policy.RulePolicy`) is passed to the matchers
(``terms`` filters read its lists) and drops the findings of URL-bearing categories whose matched
text names only allowed URLs; :func:`evaluate_ruleset` returns those separately, so they stay
visible. Findings are sorted by :meth:`Finding.sort_key`, then by message and fingerprint, so the
order is total and the output deterministic.

Layering
--------
The engine may import the model, parsing, units and the rest of :mod:`mleaudit.audit.rules`
(``spec``, ``loader``, ``matchers``, ``policy``, ``prefilter``, ``context``, ``match``); it never
imports the built-in checks (a ``run`` rule calls them through its compiled matcher) nor the
pipeline. Inside the package: ``messages``, then ``findings``, ``plan``, ``targets``, ``evaluate``.

Adding to it
------------
A new rule is YAML under ``rules/`` (see :mod:`mleaudit.audit.rules`), never engine code. A new
target kind needs its ``Target`` in :mod:`mleaudit.audit.rules.spec`, a ``*_findings`` function
in :mod:`~.targets` (and its branch in ``evaluate_targets``), and an argument of the functions in
:mod:`~.evaluate`.

Routine Listings
----------------
:mod:`~.messages`: :func:`render_message`, :data:`MAX_TEMPLATE_VALUE_CHARS`.
:mod:`~.findings`: locators and :class:`~mleaudit.audit.model.Finding` records from matches,
:data:`MAX_FRAGMENT_EVIDENCE`.
:mod:`~.plan`: the units and events of one evaluation grouped once, so that each rule goes over
only those its filters take and its text gate lets in (:func:`~.plan.unit_groups`,
:func:`~.plan.event_groups`).
:mod:`~.targets`: :class:`EvaluationError`, one rule over each target's units.
:mod:`~.evaluate`: :func:`evaluate_rule`, :func:`evaluate_ruleset`, :func:`evaluate_rules`,
:class:`RuleEvaluation`, :func:`finding_order`.
"""

from __future__ import annotations

from mleaudit.audit.rules.engine.evaluate import RuleEvaluation, evaluate_rule, evaluate_rules, evaluate_ruleset, finding_order
from mleaudit.audit.rules.engine.findings import MAX_FRAGMENT_EVIDENCE
from mleaudit.audit.rules.engine.messages import MAX_TEMPLATE_VALUE_CHARS, render_message
from mleaudit.audit.rules.engine.targets import EvaluationError

__all__ = [
    "RuleEvaluation",
    "EvaluationError",
    "evaluate_ruleset",
    "evaluate_rules",
    "evaluate_rule",
    "render_message",
    "finding_order",
    "MAX_TEMPLATE_VALUE_CHARS",
    "MAX_FRAGMENT_EVIDENCE",
]
