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
"""

from __future__ import annotations

import bisect
import logging
import string
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

from mleaudit.audit.model import Evidence, Finding, Span, finding_fingerprint, make_excerpt
from mleaudit.audit.parsing import language_for_path
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.rules.loader import CompiledRule, Ruleset
from mleaudit.audit.rules.match import Match
from mleaudit.audit.rules.matchers import Subject
from mleaudit.audit.rules.policy import URL_ALLOWLIST_CATEGORIES, RulePolicy, find_urls
from mleaudit.audit.rules.prefilter import FoldedTexts
from mleaudit.audit.rules.spec import PAIR_FIELDS, RuleStatus, Target
from mleaudit.audit.units import Actor, CodeUnit, LogEvent

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

logger = logging.getLogger(__name__)

#: Captured text longer than this is cut (with "…") before it goes into a message.
MAX_TEMPLATE_VALUE_CHARS = 200
#: A similarity finding shows at most this many of the pair's longest fragments.
MAX_FRAGMENT_EVIDENCE = 5
#: At most this many secondary locations (other ``all`` children) follow the primary evidence.
MAX_SUPPORT_EVIDENCE = 3
_TEXT_TARGETS = (Target.CODE, Target.LOG, Target.FILE)


class _Missing:
    """Stands in for a placeholder a particular match does not provide (an ``any`` branch)."""

    def __format__(self, spec: str) -> str:
        return "?"


class _SafeFormatter(string.Formatter):
    def get_value(self, key: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        if isinstance(key, str):
            return kwargs.get(key, _Missing())
        return _Missing()

    def format_field(self, value: Any, format_spec: str) -> str:
        try:
            return super().format_field(value, format_spec)
        except (TypeError, ValueError):
            # A text capture under a numeric spec ("{x:.0%}"): show the text as is.
            return str(value)


_FORMATTER = _SafeFormatter()


def _template_text(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
    if len(text) > MAX_TEMPLATE_VALUE_CHARS:
        text = text[: MAX_TEMPLATE_VALUE_CHARS - 1] + "…"
    return text


def render_message(template: str, values: Mapping[str, Any]) -> str:
    """Fill a rule message with ``str.format`` semantics over named ``values``.

    Strings are cut to :data:`MAX_TEMPLATE_VALUE_CHARS` characters and newlines are escaped, so
    a message stays one line; placeholders without a value render as ``?`` and a format spec
    that does not fit the value falls back to the plain value, so a message never fails.

    Parameters
    ----------
    template : str
        The rule's ``message``.
    values : Mapping[str, Any]
        Captured texts, built-in values or pair report fields by name.

    Returns
    -------
    str

    Examples
    --------
    >>> render_message("{x} at {share:.0%}", {"x": "a\\nb", "share": 0.5})
    'a\\\\nb at 50%'
    >>> render_message("{missing}", {})
    '?'
    """
    cleaned = {k: _template_text(v) if isinstance(v, str) else v for k, v in values.items()}
    try:
        return _FORMATTER.vformat(template, (), cleaned)
    except (IndexError, KeyError, ValueError, AttributeError):
        logger.warning("cannot render message template %r; using it as is", template)
        return template


@dataclass(frozen=True, slots=True)
class _Locator:
    """Maps character offsets in a scanned text to host spans, with a location note."""

    text: str
    to_host: Callable[[int, int], Span]
    note: Callable[[int], str]


def _unit_locator(unit: CodeUnit) -> _Locator:
    origin = unit.origin
    # Code decoded from a JSON string (an AIDE node, an OpenHands action) is shorter than its
    # escaped region in the file, so inner offsets cannot be mapped: point at the whole origin.
    exact = origin is None or origin.end_byte - origin.start_byte == len(unit.text)

    def to_host(start: int, end: int) -> Span:
        if not exact:
            return origin
        return unit.host_span(Span.from_offsets(unit.text, unit.path, start, end))

    def note(start: int) -> str:
        if not unit.cells:
            return ""
        return unit.describe(unit.text.count("\n", 0, start) + 1)

    return _Locator(text=unit.text, to_host=to_host, note=note)


def _event_locator(event: LogEvent) -> _Locator:
    host = event.span
    # Offsets map one to one only when the event text is the host region verbatim; a JSON
    # string value with escapes is longer in the file, so evidence falls back to the event.
    exact = host.end_byte - host.start_byte == len(event.text) and host.end_byte > host.start_byte

    def to_host(start: int, end: int) -> Span:
        if not exact:
            return host
        return Span.from_offsets(event.text, host.path, start, end).within(host)

    def note(start: int) -> str:
        return f"{event.kind.value} event {event.index}"

    return _Locator(text=event.text, to_host=to_host, note=note)


def _file_locator(path: str, text: str) -> _Locator:
    return _Locator(text=text, to_host=lambda s, e: Span.from_offsets(text, path, s, e), note=lambda s: "")


def _support_label(match: Match) -> str:
    for name, cap in match.captures.items():
        if cap.start == match.start and cap.end == match.end:
            return name
    return min(match.captures, key=lambda n: match.captures[n].start) if match.captures else "context"


def _allowed_by(rule: CompiledRule, match: Match, text: str, policy: RulePolicy | None) -> str | None:
    """The ``allow_urls`` entry that covers what ``match`` fetches, for URL-bearing categories."""
    if policy is None or rule.spec.category not in URL_ALLOWLIST_CATEGORIES:
        return None
    focus = match.captures.get(rule.spec.focus) if rule.spec.focus else None
    if focus is not None:
        allowed = policy.allowed_by(focus.text)
        if allowed is not None:
            return allowed
        if find_urls(focus.text):
            return None
        # The focus names no URL (a download call): judge the URLs of the other captures.
    texts = [cap.text for cap in match.captures.values()] or [text[match.start:match.end]]
    return policy.allowed_by("\n".join(texts))


def _text_finding(rule: CompiledRule, match: Match, locator: _Locator, run_id: str,
                  policy: RulePolicy | None = None, actor: str = Actor.UNKNOWN.value) -> tuple[tuple, Finding, str | None]:
    spec = rule.spec
    focus = match.captures.get(spec.focus) if spec.focus else None
    start, end = (focus.start, focus.end) if focus is not None else (match.start, match.end)
    label = spec.focus if focus is not None else "match"
    host = locator.to_host(start, end)
    note = locator.note(start)
    evidence = [
        Evidence(span=host, excerpt=make_excerpt(locator.text, start, end, context_lines=1),
                 label=f"{label} ({note})" if note else label)
    ]
    for support in match.support[:MAX_SUPPORT_EVIDENCE]:
        span = locator.to_host(support.start, support.end)
        if span == host:
            continue
        evidence.append(Evidence(span=span, excerpt=make_excerpt(locator.text, support.start, support.end),
                                 label=_support_label(support)))
    values: dict[str, Any] = {"file": host.path, "line": host.start_line}
    values.update(match.values)
    values.update({name: cap.text for name, cap in match.captures.items()})
    # The fingerprint uses the matched lines without context, so that edits to neighbouring
    # lines do not change it (line numbers are never part of it).
    fingerprint = finding_fingerprint(spec.id, host.path, make_excerpt(locator.text, start, end))
    allowed = _allowed_by(rule, match, locator.text, policy)
    text_match = match.values.get("text_match")
    if text_match:
        evidence[0] = Evidence(span=evidence[0].span, excerpt=evidence[0].excerpt,
                               label=f"{evidence[0].label} [{text_match}]")
    finding = _finding(rule, render_message(spec.message, values), tuple(evidence), run_id, fingerprint,
                       allowed_by=allowed, text_match=text_match, actor=actor)
    key = (spec.id, host.path, host.start_byte, host.end_byte, host.start_line, host.end_line)
    return key, finding, allowed


def _finding(rule: CompiledRule, message: str, evidence: tuple[Evidence, ...], run_id: str, fingerprint: str,
             *, allowed_by: str | None = None, text_match: str | None = None,
             actor: str = Actor.UNKNOWN.value) -> Finding:
    spec = rule.spec
    metadata: dict[str, Any] = {"references": list(spec.metadata.references)}
    if text_match:
        # Found by the rule's literals in the text, not by its syntax query (tree too deep to query).
        metadata["text_match"] = text_match
    if spec.metadata.since:
        metadata["since"] = spec.metadata.since
    if allowed_by is not None:
        metadata["allowlisted_by"] = allowed_by
    return Finding(
        rule_id=spec.id,
        title=spec.title,
        category=spec.category,
        severity=spec.severity,
        confidence=spec.confidence,
        message=message,
        evidence=evidence,
        run_id=run_id,
        fingerprint=fingerprint,
        metadata=metadata,
        actor=actor,
    )


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


_Produced = tuple[tuple, Finding, "str | None"]


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
            probe = replace(subject, unevaluated=[], folds=self._folds or subject.folds)
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


def _text_findings(rule: CompiledRule, subject: Subject, locator: _Locator, run_id: str,
                   policy: RulePolicy | None, where: str, errors: list[EvaluationError],
                   actor: str = Actor.UNKNOWN.value, memo: _MatchMemo | None = None) -> list[_Produced]:
    matches = memo.find(subject) if memo is not None else rule.matcher.find(subject)
    produced = [_text_finding(rule, match, locator, run_id, policy, actor) for match in matches]
    for why in dict.fromkeys(subject.unevaluated):
        errors.append(EvaluationError(rule_id=rule.id, where=where, path=subject.path, error="NotEvaluated",
                                      message=why))
    return produced


def _code_findings(rule: CompiledRule, units: Iterable[CodeUnit], run_id: str,
                   policy: RulePolicy | None, errors: list[EvaluationError],
                   folds: FoldedTexts | None = None) -> Iterable[_Produced]:
    spec = rule.spec
    memo = _MatchMemo(rule, folds)
    for unit in units:
        if spec.languages and unit.language not in spec.languages:
            continue
        if unit.actor not in spec.actors or not spec.paths.accepts(unit.path):
            continue
        if memo.nothing_in(unit.text, unit.language, unit.path, policy):
            continue
        subject = Subject(text=unit.text, language=unit.language, path=unit.path, policy=policy)
        locator = _unit_locator(unit)
        where = unit.path if unit.origin is None else f"{unit.path}:{unit.origin.start_line}"
        actor = unit.actor.value
        yield from _guarded(rule, where, unit.path,
                            lambda: _text_findings(rule, subject, locator, run_id, policy, where, errors, actor, memo),
                            errors)


def _log_findings(rule: CompiledRule, events: Iterable[LogEvent], run_id: str,
                  policy: RulePolicy | None, errors: list[EvaluationError],
                  folds: FoldedTexts | None = None) -> Iterable[_Produced]:
    spec = rule.spec
    memo = _MatchMemo(rule, folds)
    for event in events:
        if event.kind not in spec.events or event.actor not in spec.actors or not spec.paths.accepts(event.span.path):
            continue
        if memo.nothing_in(event.text, event.language, event.span.path, policy):
            continue
        subject = Subject(text=event.text, language=event.language, path=event.span.path, policy=policy)
        locator = _event_locator(event)
        where = f"{event.span.path} event {event.index}"
        actor = event.actor.value
        yield from _guarded(rule, where, event.span.path,
                            lambda: _text_findings(rule, subject, locator, run_id, policy, where, errors, actor, memo),
                            errors)


def _file_findings(rule: CompiledRule, files: Iterable[tuple[str, str]], run_id: str,
                   policy: RulePolicy | None, errors: list[EvaluationError],
                   folds: FoldedTexts | None = None) -> Iterable[_Produced]:
    spec = rule.spec
    for path, text in files:
        if not spec.paths.accepts(path):
            continue
        subject = Subject(text=text, language=language_for_path(path), path=path, policy=policy, folds=folds)
        locator = _file_locator(path, text)
        yield from _guarded(rule, path, path,
                            lambda: _text_findings(rule, subject, locator, run_id, policy, path, errors), errors)


@dataclass(frozen=True, slots=True)
class _ActorView:
    """A run context narrowed to the units and events of some actors, and who wrote each path."""

    ctx: RunContext
    actors_by_path: Mapping[str, frozenset[str]]


def _actor_view(ctx: RunContext, actors: frozenset[Actor]) -> _ActorView:
    """``ctx`` with only the code units and log events of ``actors``, built once per actor set.

    Each view has its own ``memo`` (an analysis memoized on one actor set is not valid for
    another) and shares ``skipped``, so what a check could not read still reaches the report.
    """
    key = ("actor-view", actors)
    view = ctx.memo.get(key)
    if view is None:
        units = tuple(u for u in ctx.code_units if u.actor in actors)
        events = tuple(e for e in ctx.log_events if e.actor in actors)
        by_path: dict[str, set[str]] = {}
        for unit in units:
            by_path.setdefault(unit.path, set()).add(unit.actor.value)
        for event in events:
            by_path.setdefault(event.span.path, set()).add(event.actor.value)
        narrowed = replace(ctx, code_units=units, log_events=events, skipped=ctx.skipped, memo={})
        view = _ActorView(ctx=narrowed, actors_by_path={p: frozenset(a) for p, a in by_path.items()})
        ctx.memo[key] = view
    return view


def _run_findings(rule: CompiledRule, ctx: RunContext, run_id: str,
                  errors: list[EvaluationError]) -> Iterable[_Produced]:
    view = _actor_view(ctx, rule.spec.actors)
    return _guarded(rule, "run", ".",
                    lambda: [_run_finding(rule, m, run_id, view) for m in rule.matcher.find(view.ctx)], errors)


def _run_finding(rule: CompiledRule, match: Match, run_id: str, view: _ActorView | None = None) -> _Produced:
    spec = rule.spec
    evidence = match.evidence or (Evidence(span=Span.from_lines(".", 1, 1), excerpt="", label="run"),)
    first = evidence[0].span
    values: dict[str, Any] = {"file": first.path, "line": first.start_line}
    values.update(match.values)
    fingerprint = finding_fingerprint(spec.id, first.path, evidence[0].excerpt)
    actor = str(match.values.get("actor") or "")
    if not actor:
        # A check names no actor: the evidence file's, when all of its judged units agree.
        writers = view.actors_by_path.get(first.path, frozenset()) if view is not None else frozenset()
        actor = next(iter(writers)) if len(writers) == 1 else Actor.UNKNOWN.value
    finding = _finding(rule, render_message(spec.message, values), tuple(evidence), run_id, fingerprint,
                       actor=actor)
    return (spec.id, first.path, first.start_byte, first.end_byte, first.start_line, first.end_line), finding, None


def _pair_values(pair: Any) -> dict[str, Any]:
    return {name: getattr(pair, name, None) for name in PAIR_FIELDS}


def _pair_evidence(pair: Any, texts: Mapping[str, str]) -> tuple[Evidence, ...]:
    reference_path = getattr(pair, "reference_path", "") or ""
    fragments = sorted(getattr(pair, "fragments", ()) or (), key=lambda f: -(getattr(f, "length", 0) or 0))
    evidence = []
    for fragment in fragments[:MAX_FRAGMENT_EVIDENCE]:
        agent, reference = fragment.agent, fragment.reference
        text = texts.get(agent.path)
        excerpt = ""
        if text is not None and 0 <= agent.start_byte <= agent.end_byte <= len(text):
            excerpt = make_excerpt(text, agent.start_byte, agent.end_byte)
        label = f"kernel fragment: {reference_path} lines {reference.start_line}–{reference.end_line}"
        evidence.append(Evidence(span=agent, excerpt=excerpt, label=label))
    if not evidence:
        evidence.append(Evidence(span=Span.from_lines(str(getattr(pair, "agent_path", "")), 1, 1), excerpt="",
                                 label=f"kernel: {reference_path}"))
    return tuple(evidence)


def _similarity_findings(rule: CompiledRule, pairs: Iterable[Any], texts: Mapping[str, str],
                         run_id: str, code_units: Sequence[CodeUnit] = ()) -> Iterable[_Produced]:
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
            evidence = _pair_evidence(pair, texts)
        except Exception:  # noqa: BLE001 - the finding stands; only its excerpts are lost
            logger.warning("rule %s: cannot build evidence for pair %s", rule.id, agent_path, exc_info=True)
            evidence = (Evidence(span=Span.from_lines(agent_path, 1, 1), excerpt="", label="kernel pair"),)
        reference = str(getattr(pair, "reference_id", None) or getattr(pair, "reference_path", ""))
        # Fragments move when code is edited; the pair's identity does not.
        fingerprint = finding_fingerprint(spec.id, agent_path, reference)
        finding = _finding(rule, render_message(spec.message, _pair_values(pair)), evidence, run_id, fingerprint,
                           actor=actor)
        yield (spec.id, agent_path, reference), finding, None


def _evaluate(rule: CompiledRule, *, code_units: Sequence[CodeUnit], log_events: Sequence[LogEvent],
              files: Sequence[tuple[str, str]], run_context: RunContext | None, pairs: Sequence[Any], run_id: str,
              policy: RulePolicy | None, errors: list[EvaluationError],
              folds: FoldedTexts | None = None) -> tuple[list[Finding], list[Finding]]:
    spec = rule.spec
    produced: list[tuple[Target, _Produced]] = []
    for target in spec.targets:
        if target is Target.CODE:
            found: Iterable[_Produced] = _code_findings(rule, code_units, run_id, policy, errors, folds)
        elif target is Target.LOG:
            found = _log_findings(rule, log_events, run_id, policy, errors, folds)
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
    findings, _ = _evaluate(rule, code_units=code_units, log_events=log_events, files=files,
                            run_context=run_context, pairs=pairs, run_id=run_id, policy=policy, errors=[])
    return findings


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
    for rule in ruleset:
        if rule.spec.status is RuleStatus.EXPERIMENTAL and not include_experimental:
            continue
        evaluated.append(rule.id)
        try:
            kept, dropped = _evaluate(rule, code_units=code_units, log_events=log_events, files=files,
                                      run_context=run_context, pairs=pairs, run_id=run_id, policy=policy,
                                      errors=errors, folds=folds)
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
