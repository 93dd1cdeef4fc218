"""Evaluating a rule or a ruleset over a run: :func:`evaluate_rule`, :func:`evaluate_ruleset`, :func:`evaluate_rules`.

Findings come back sorted by :func:`finding_order` (a total order, so output is deterministic);
:func:`evaluate_ruleset` also returns the findings the competition's ``allow_urls`` dropped and
the evaluation errors.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from mleaudit.audit.model import Finding
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.rules.engine.plan import event_groups, unit_groups
from mleaudit.audit.rules.engine.targets import EvaluationError, evaluate_targets
from mleaudit.audit.rules.loader import CompiledRule, Ruleset
from mleaudit.audit.rules.policy import RulePolicy
from mleaudit.audit.rules.prefilter import FoldedTexts
from mleaudit.audit.rules.spec import RuleStatus
from mleaudit.audit.units import CodeUnit, LogEvent

logger = logging.getLogger(__name__)

#: Rules go over the units and events grouped once for all (:mod:`~.plan`); tests turn it off to
#: compare with every rule going over every unit and event.
_GROUPED = True


def evaluate_rule(
    rule: CompiledRule,
    *,
    code_units: Sequence[CodeUnit] = (),
    log_events: Sequence[LogEvent] = (),
    files: Sequence[tuple[str, str]] = (),
    run_context: RunContext | None = None,
    pairs: Sequence[Any] = (),
    run_id: str = "",
    policy: RulePolicy | None = None,
) -> list[Finding]:
    """Findings of one rule, in discovery order (allowlisted matches left out).

    One finding is kept per focus span; of text findings whose primary spans nest in the same
    file only the narrowest is kept.

    See :func:`evaluate_ruleset` for the parameters.
    """
    findings, _ = evaluate_targets(rule, code_units=code_units, log_events=log_events, files=files,
                            run_context=run_context, pairs=pairs, run_id=run_id, policy=policy, errors=[])
    return findings


def finding_order(finding: Finding) -> tuple:
    """A total sort key: :meth:`Finding.sort_key`, then end offset, message and fingerprint.

    Two findings of one rule can share a start (two rules' evidence at one place, a run-level
    check with several results); the tie-breakers keep the order independent of discovery order.
    """
    first = finding.evidence[0].span if finding.evidence else None
    return (*finding.sort_key(), first.end_byte if first else 0, finding.message, finding.fingerprint)


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleEvaluation:
    """The outcome of a ruleset over one run.

    Attributes
    ----------
    findings : tuple of Finding
        Sorted by :func:`finding_order` (severity descending, rule id, path, line, offset).
    allowlisted : tuple of Finding
        Matches dropped because the competition policy's ``allow_urls`` covers every URL they
        name; each has ``metadata["allowlisted_by"]`` (the entry). Same order.
    errors : tuple of EvaluationError
        Every (rule, unit) evaluation that raised or timed out, in evaluation order: the unit
        was not checked by that rule, so the audit is incomplete.
    evaluated_rules : tuple of str
        Ids of the rules that were evaluated (enabled ones).
    """

    findings: tuple[Finding, ...]
    allowlisted: tuple[Finding, ...] = ()
    errors: tuple[EvaluationError, ...] = ()
    evaluated_rules: tuple[str, ...] = ()


def evaluate_ruleset(
    ruleset: Ruleset | Iterable[CompiledRule],
    *,
    code_units: Sequence[CodeUnit] = (),
    log_events: Sequence[LogEvent] = (),
    files: Sequence[tuple[str, str]] = (),
    run_context: RunContext | None = None,
    pairs: Sequence[Any] = (),
    run_id: str = "",
    include_experimental: bool = False,
    policy: RulePolicy | None = None,
) -> RuleEvaluation:
    """Evaluate every rule of ``ruleset``; return the findings and the allowlisted matches, sorted.

    Parameters
    ----------
    ruleset : Ruleset or iterable of CompiledRule
        From :func:`mleaudit.audit.rules.loader.load_ruleset`.
    code_units : sequence of CodeUnit
        Code files, notebook code and code embedded in logs.
    log_events : sequence of LogEvent
        Events of the run's logs.
    files : sequence of (str, str)
        ``(path relative to the run root, text)`` for ``file`` rules.
    run_context : RunContext, optional
        For ``run`` rules (built-in checks); ``run`` rules are skipped when absent.
    pairs : sequence
        Similarity pair reports (any objects with the attributes of :data:`PAIR_FIELDS` and
        ``fragments``, each fragment with ``agent``/``reference`` spans and ``length``).
    run_id : str
        Copied into every finding.
    include_experimental : bool
        Also run rules whose ``status`` is ``experimental``.
    policy : RulePolicy, optional
        The competition's audit policy: term lists for ``terms`` filters, ``allow_urls`` for
        the categories of :data:`mleaudit.audit.rules.policy.URL_ALLOWLIST_CATEGORIES`.

    Returns
    -------
    RuleEvaluation
        One finding per (rule id, focus span), deduplicated and totally ordered.
    """
    findings: list[Finding] = []
    allowlisted: list[Finding] = []
    errors: list[EvaluationError] = []
    evaluated: list[str] = []
    folds = FoldedTexts()  # each distinct text lower-cased once for every rule's prefilter
    groups = None
    if _GROUPED:
        code_units, log_events = tuple(code_units), tuple(log_events)  # indexed by the groups
        groups = (unit_groups(code_units), event_groups(log_events))
    for rule in ruleset:
        if rule.spec.status is RuleStatus.EXPERIMENTAL and not include_experimental:
            continue
        evaluated.append(rule.id)
        try:
            kept, dropped = evaluate_targets(rule, code_units=code_units, log_events=log_events, files=files,
                                      run_context=run_context, pairs=pairs, run_id=run_id, policy=policy,
                                      errors=errors, folds=folds, groups=groups)
        except Exception as exc:  # noqa: BLE001 - one broken rule must not stop the others
            logger.info("rule %s failed", rule.id, exc_info=True)
            errors.append(EvaluationError(rule_id=rule.id, where="all units", path=".", error=type(exc).__name__,
                                          message=str(exc)[:500] or repr(exc)[:500]))
            continue
        findings.extend(kept)
        allowlisted.extend(dropped)
    return RuleEvaluation(findings=tuple(sorted(findings, key=finding_order)),
                          allowlisted=tuple(sorted(allowlisted, key=finding_order)),
                          errors=tuple(errors), evaluated_rules=tuple(evaluated))


def evaluate_rules(
    ruleset: Ruleset | Iterable[CompiledRule],
    *,
    code_units: Sequence[CodeUnit] = (),
    log_events: Sequence[LogEvent] = (),
    files: Sequence[tuple[str, str]] = (),
    run_context: RunContext | None = None,
    pairs: Sequence[Any] = (),
    run_id: str = "",
    include_experimental: bool = False,
    policy: RulePolicy | None = None,
) -> list[Finding]:
    """Evaluate every rule of ``ruleset`` and return the findings, sorted.

    The same as :func:`evaluate_ruleset` (see it for the parameters) without the allowlisted
    matches.

    Returns
    -------
    list of Finding
        One finding per (rule id, focus span), sorted by :func:`finding_order`
        (severity descending, rule id, path, line, offset, then message and fingerprint).
    """
    return list(evaluate_ruleset(ruleset, code_units=code_units, log_events=log_events, files=files,
                                 run_context=run_context, pairs=pairs, run_id=run_id,
                                 include_experimental=include_experimental, policy=policy).findings)
