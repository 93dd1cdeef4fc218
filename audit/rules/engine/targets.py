"""One rule over the units of each of its targets: code units, log events, files, the run, similarity pairs.

A rule that raises on a unit becomes an :class:`EvaluationError` for that (rule, unit) and the
other units still run (:func:`_guarded`); matches are memoized per distinct text within one
evaluation; one finding is kept per (rule id, focus span), and of nested text findings in one
file only the narrowest.
"""

from __future__ import annotations

import bisect
import logging
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

from mleaudit.audit.model import Evidence, Finding, Span, finding_fingerprint
from mleaudit.audit.parsing import language_for_path
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.rules.engine.findings import (
    ActorView,
    Locator,
    Produced,
    event_locator,
    file_locator,
    pair_evidence,
    pair_values,
    rule_finding,
    run_finding,
    text_finding,
    unit_locator,
)
from mleaudit.audit.rules.engine.messages import render_message
from mleaudit.audit.rules.engine.plan import TextGroups
from mleaudit.audit.rules.loader import CompiledRule
from mleaudit.audit.rules.match import Match
from mleaudit.audit.rules.matchers import Subject
from mleaudit.audit.rules.policy import RulePolicy
from mleaudit.audit.rules.prefilter import FoldedTexts
from mleaudit.audit.rules.spec import Target
from mleaudit.audit.units import Actor, CodeUnit, LogEvent

logger = logging.getLogger(__name__)

_TEXT_TARGETS = (Target.CODE, Target.LOG, Target.FILE)


@dataclass(frozen=True, slots=True, kw_only=True)
class EvaluationError:
    """A rule that raised (or ran past a time bound) on one unit: that unit was not checked by it.

    Attributes
    ----------
    rule_id : str
    where : str
        The unit: a path relative to the run root, ``"<path> event <n>"`` for a log event, or the
        run root for run-level checks.
    path : str
        The host file of the unit (the run root for run-level checks).
    error : str
        The exception class name (``TimeoutError`` for a regex past :data:`mleaudit.audit.rules.matchers.REGEX_TIMEOUT_SECONDS`).
    message : str
        The exception's message.
    """

    rule_id: str
    where: str
    path: str
    error: str
    message: str


def _guarded(rule: CompiledRule, where: str, path: str, fn: Callable[[], list[Any]],
             errors: list[EvaluationError]) -> list[Any]:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - one broken rule or odd unit must not stop the audit
        logger.info("rule %s not evaluated on %s: %s: %s", rule.id, where, type(exc).__name__, exc)
        logger.debug("rule %s failed on %s", rule.id, where, exc_info=True)
        errors.append(EvaluationError(rule_id=rule.id, where=where, path=path, error=type(exc).__name__,
                                      message=str(exc)[:500] or repr(exc)[:500]))
        return []


class _MatchMemo:
    """One rule's matches per distinct ``(language, text)`` within one evaluation.

    Agent logs repeat themselves: an MLAgentBench run shows the same script at every step (550
    code units, 24 distinct texts) and the same tool output many times (6,193 events, 709
    distinct). A matcher's result depends only on the text, its language and the competition's
    policy (``Subject.path`` is for diagnostics), and the policy is fixed for one evaluation, so
    each distinct text is matched once; every unit or event holding it still gets its own
    findings at its own place, its own copy of what could not be evaluated, and its own error
    when the matcher raised (a regex past its time bound is not run again on each copy).
    """

    def __init__(self, rule: CompiledRule, folds: FoldedTexts | None = None) -> None:
        self._rule = rule
        self._folds = folds
        self._found: dict[tuple[str | None, str], tuple[list[Match], BaseException | None, tuple[str, ...]]] = {}

    def known(self, subject: Subject) -> tuple[list[Match], BaseException | None, tuple[str, ...]]:
        """``(matches, error raised, what could not be evaluated)`` of the subject's text."""
        key = (subject.language, subject.text)
        known = self._found.get(key)
        if known is None:
            # Built field by field: dataclasses.replace costs more than the match of most texts.
            probe = Subject(text=subject.text, language=subject.language, path=subject.path, policy=subject.policy,
                            unevaluated=[], folds=self._folds or subject.folds)
            try:
                known = (self._rule.matcher.find(probe), None, tuple(probe.unevaluated))
            except Exception as exc:  # noqa: BLE001 - raised again for each subject, reported by _guarded
                known = ([], exc, tuple(probe.unevaluated))
            self._found[key] = known
        return known

    def nothing_in(self, text: str, language: str | None, path: str, policy: RulePolicy | None) -> bool:
        """True when the rule finds nothing in ``text`` and nothing was left unevaluated there.

        The common case, answered from the memo without building a subject, a locator and a
        closure for every unit or event that holds a text already matched.
        """
        key = (language, text)
        known = self._found.get(key)
        if known is None:
            known = self.known(Subject(text=text, language=language, path=path, policy=policy))
        return not known[0] and known[1] is None and not known[2]

    def find(self, subject: Subject) -> list[Match]:
        matches, error, unevaluated = self.known(subject)
        subject.unevaluated.extend(unevaluated)
        if error is not None:
            raise error.with_traceback(None)
        return matches


def _text_findings(rule: CompiledRule, subject: Subject, locator: Locator, run_id: str,
                   policy: RulePolicy | None, where: str, errors: list[EvaluationError],
                   actor: str = Actor.UNKNOWN.value, memo: _MatchMemo | None = None) -> list[Produced]:
    matches = memo.find(subject) if memo is not None else rule.matcher.find(subject)
    produced = [text_finding(rule, match, locator, run_id, policy, actor) for match in matches]
    for why in dict.fromkeys(subject.unevaluated):
        errors.append(EvaluationError(rule_id=rule.id, where=where, path=subject.path, error="NotEvaluated",
                                      message=why))
    return produced


def _code_findings(rule: CompiledRule, units: Sequence[CodeUnit], run_id: str,
                   policy: RulePolicy | None, errors: list[EvaluationError],
                   folds: FoldedTexts | None = None, groups: TextGroups | None = None) -> Iterable[Produced]:
    spec = rule.spec
    memo = _MatchMemo(rule, folds)
    if groups is not None and folds is not None:
        # Only the units the filters below take and the rule's gate lets in (same findings).
        units = [units[i] for i in groups.candidates(rule, lambda key: (
            (not spec.languages or key[0] in spec.languages) and key[1] in spec.actors), folds)]
    for unit in units:
        if spec.languages and unit.language not in spec.languages:
            continue
        if unit.actor not in spec.actors or not spec.paths.accepts(unit.path):
            continue
        if memo.nothing_in(unit.text, unit.language, unit.path, policy):
            continue
        subject = Subject(text=unit.text, language=unit.language, path=unit.path, policy=policy)
        locator = unit_locator(unit)
        where = unit.path if unit.origin is None else f"{unit.path}:{unit.origin.start_line}"
        actor = unit.actor.value
        yield from _guarded(rule, where, unit.path,
                            lambda: _text_findings(rule, subject, locator, run_id, policy, where, errors, actor, memo),
                            errors)


def _log_findings(rule: CompiledRule, events: Sequence[LogEvent], run_id: str,
                  policy: RulePolicy | None, errors: list[EvaluationError],
                  folds: FoldedTexts | None = None, groups: TextGroups | None = None) -> Iterable[Produced]:
    spec = rule.spec
    memo = _MatchMemo(rule, folds)
    if groups is not None and folds is not None:
        # Only the events the filters below take and the rule's gate lets in (same findings).
        events = [events[i] for i in groups.candidates(rule, lambda key: (
            key[0] in spec.events and key[1] in spec.actors), folds)]
    for event in events:
        if event.kind not in spec.events or event.actor not in spec.actors or not spec.paths.accepts(event.span.path):
            continue
        if memo.nothing_in(event.text, event.language, event.span.path, policy):
            continue
        subject = Subject(text=event.text, language=event.language, path=event.span.path, policy=policy)
        locator = event_locator(event)
        where = f"{event.span.path} event {event.index}"
        actor = event.actor.value
        yield from _guarded(rule, where, event.span.path,
                            lambda: _text_findings(rule, subject, locator, run_id, policy, where, errors, actor, memo),
                            errors)


def _file_findings(rule: CompiledRule, files: Iterable[tuple[str, str]], run_id: str,
                   policy: RulePolicy | None, errors: list[EvaluationError],
                   folds: FoldedTexts | None = None) -> Iterable[Produced]:
    spec = rule.spec
    for path, text in files:
        if not spec.paths.accepts(path):
            continue
        subject = Subject(text=text, language=language_for_path(path), path=path, policy=policy, folds=folds)
        locator = file_locator(path, text)
        yield from _guarded(rule, path, path,
                            lambda: _text_findings(rule, subject, locator, run_id, policy, path, errors), errors)


def _actor_view(ctx: RunContext, actors: frozenset[Actor]) -> ActorView:
    """``ctx`` with only the code units and log events of ``actors``, built once per actor set.

    Each view has its own ``memo`` (an analysis memoized on one actor set is not valid for
    another) and shares ``skipped``, so what a check could not read still reaches the report.
    """
    key = ("actor-view", actors)
    view = ctx.memo.get(key)
    if view is None:
        # Actors compared by value: hashing an Enum member runs Python code, for every unit and event.
        names = frozenset(actor.value for actor in actors)
        units = tuple(u for u in ctx.code_units if u.actor._value_ in names)
        events = tuple(e for e in ctx.log_events if e.actor._value_ in names)
        writers = ctx.memo.get("actor-writers")
        if writers is None:
            # (path, actor) pairs in order of first appearance, units first: a run has few.
            writers = ctx.memo["actor-writers"] = tuple(dict.fromkeys(
                [(u.path, u.actor._value_) for u in ctx.code_units]
                + [(e.span.path, e.actor._value_) for e in ctx.log_events]))
        by_path: dict[str, set[str]] = {}
        for path, name in writers:
            if name in names:
                by_path.setdefault(path, set()).add(name)
        narrowed = replace(ctx, code_units=units, log_events=events, skipped=ctx.skipped, memo={})
        view = ActorView(ctx=narrowed, actors_by_path={p: frozenset(a) for p, a in by_path.items()})
        ctx.memo[key] = view
    return view


def _run_findings(rule: CompiledRule, ctx: RunContext, run_id: str,
                  errors: list[EvaluationError]) -> Iterable[Produced]:
    view = _actor_view(ctx, rule.spec.actors)
    return _guarded(rule, "run", ".",
                    lambda: [run_finding(rule, m, run_id, view) for m in rule.matcher.find(view.ctx)], errors)


def _similarity_findings(rule: CompiledRule, pairs: Iterable[Any], texts: Mapping[str, str],
                         run_id: str, code_units: Sequence[CodeUnit] = ()) -> Iterable[Produced]:
    spec = rule.spec
    writers: dict[str, set[str]] = {}
    for unit in code_units:
        writers.setdefault(unit.path, set()).add(unit.actor.value)
    for pair in pairs:
        agent_path = str(getattr(pair, "agent_path", ""))
        if not spec.paths.accepts(agent_path) or spec.when is None or not spec.when.test(pair):
            continue
        of_path = writers.get(agent_path, set())
        actor = next(iter(of_path)) if len(of_path) == 1 else Actor.UNKNOWN.value
        try:
            evidence = pair_evidence(pair, texts)
        except Exception:  # noqa: BLE001 - the finding stands; only its excerpts are lost
            logger.warning("rule %s: cannot build evidence for pair %s", rule.id, agent_path, exc_info=True)
            evidence = (Evidence(span=Span.from_lines(agent_path, 1, 1), excerpt="", label="kernel pair"),)
        reference = str(getattr(pair, "reference_id", None) or getattr(pair, "reference_path", ""))
        # Fragments move when code is edited; the pair's identity does not.
        fingerprint = finding_fingerprint(spec.id, agent_path, reference)
        finding = rule_finding(rule, render_message(spec.message, pair_values(pair)), evidence, run_id, fingerprint,
                           actor=actor)
        yield (spec.id, agent_path, reference), finding, None


def evaluate_targets(rule: CompiledRule, *, code_units: Sequence[CodeUnit], log_events: Sequence[LogEvent],
              files: Sequence[tuple[str, str]], run_context: RunContext | None, pairs: Sequence[Any], run_id: str,
              policy: RulePolicy | None, errors: list[EvaluationError],
              folds: FoldedTexts | None = None,
              groups: tuple[TextGroups, TextGroups] | None = None) -> tuple[list[Finding], list[Finding]]:
    """The findings of ``rule`` (kept, allowlisted); ``groups`` (of the code units, of the log
    events) lets it skip the units and events it cannot match (:mod:`~.plan`)."""
    spec = rule.spec
    produced: list[tuple[Target, Produced]] = []
    for target in spec.targets:
        if target is Target.CODE:
            found: Iterable[Produced] = _code_findings(rule, code_units, run_id, policy, errors, folds,
                                                       groups[0] if groups else None)
        elif target is Target.LOG:
            found = _log_findings(rule, log_events, run_id, policy, errors, folds, groups[1] if groups else None)
        elif target is Target.FILE:
            found = _file_findings(rule, files, run_id, policy, errors, folds)
        elif target is Target.RUN and run_context is not None:
            found = _run_findings(rule, run_context, run_id, errors)
        elif target is Target.SIMILARITY:
            texts = {path: text for path, text in files}
            texts.update({u.path: u.text for u in code_units if u.origin is None and not u.cells})
            found = _similarity_findings(rule, pairs, texts, run_id, code_units)
        else:
            continue
        produced.extend((target, item) for item in found)
    seen: set[tuple] = set()
    unique: list[tuple[Target, Finding, str | None]] = []
    for target, (key, finding, allowed) in produced:
        if key in seen:
            continue
        seen.add(key)
        unique.append((target, finding, allowed))
    kept = _drop_nested(unique)
    return [f for f, allowed in kept if allowed is None], [f for f, allowed in kept if allowed is not None]


def _drop_nested(items: list[tuple[Target, Finding, str | None]]) -> list[tuple[Finding, str | None]]:
    """Keep the narrowest of text findings whose primary spans nest in the same file.

    The same code can reach a rule twice: as a log event (whose evidence may be the whole event
    when its text is escaped in the file) and as a code unit extracted from that event, or
    through two ``any`` branches that match nested regions. One finding per place is enough.
    """
    def width(span: Span) -> int:
        return span.end_byte - span.start_byte

    textual = [i for i, (target, f, _) in enumerate(items)
               if target in _TEXT_TARGETS and f.evidence and width(f.evidence[0].span) > 0]
    # Narrowest first: a span kept earlier is never wider, so the new span nests with a kept
    # one exactly when it contains it. Kept spans are indexed per path by start.
    kept: dict[str, tuple[list[int], list[int]]] = {}
    dropped: set[int] = set()
    for i in sorted(textual, key=lambda i: (width(items[i][1].evidence[0].span), i)):
        span = items[i][1].evidence[0].span
        starts, ends = kept.setdefault(span.path, ([], []))
        k = bisect.bisect_left(starts, span.start_byte)
        nested = False
        while k < len(starts) and starts[k] <= span.end_byte:
            if ends[k] <= span.end_byte:
                nested = True
                break
            k += 1
        if nested:
            dropped.add(i)
        else:
            at = bisect.bisect_left(starts, span.start_byte)
            starts.insert(at, span.start_byte)
            ends.insert(at, span.end_byte)
    return [(f, allowed) for i, (_, f, allowed) in enumerate(items) if i not in dropped]
