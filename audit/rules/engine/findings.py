"""Findings from matches: evidence mapped to the host file, values for the message, the finding record.

Offsets inside a code unit are mapped with ``CodeUnit.host_span`` and offsets inside a log event
with ``Span.within`` of the event's span (:class:`Locator`); a URL-bearing finding whose matched
text names only allowed URLs carries the ``allow_urls`` entry that covers it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from mleaudit.audit.model import Evidence, Finding, Span, finding_fingerprint, make_excerpt
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.rules.engine.messages import render_message
from mleaudit.audit.rules.loader import CompiledRule
from mleaudit.audit.rules.match import Match
from mleaudit.audit.rules.policy import URL_ALLOWLIST_CATEGORIES, RulePolicy, find_urls
from mleaudit.audit.rules.spec import PAIR_FIELDS
from mleaudit.audit.units import Actor, CodeUnit, LogEvent

#: A similarity finding shows at most this many of the pair's longest fragments.
MAX_FRAGMENT_EVIDENCE = 5
#: At most this many secondary locations (other ``all`` children) follow the primary evidence.
MAX_SUPPORT_EVIDENCE = 3


@dataclass(frozen=True, slots=True)
class Locator:
    """Maps character offsets in a scanned text to host spans, with a location note."""

    text: str
    to_host: Callable[[int, int], Span]
    note: Callable[[int], str]


def unit_locator(unit: CodeUnit) -> Locator:
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

    return Locator(text=unit.text, to_host=to_host, note=note)


def event_locator(event: LogEvent) -> Locator:
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

    return Locator(text=event.text, to_host=to_host, note=note)


def file_locator(path: str, text: str) -> Locator:
    return Locator(text=text, to_host=lambda s, e: Span.from_offsets(text, path, s, e), note=lambda s: "")


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


def text_finding(rule: CompiledRule, match: Match, locator: Locator, run_id: str,
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
    finding = rule_finding(rule, render_message(spec.message, values), tuple(evidence), run_id, fingerprint,
                       allowed_by=allowed, text_match=text_match, actor=actor)
    key = (spec.id, host.path, host.start_byte, host.end_byte, host.start_line, host.end_line)
    return key, finding, allowed


def rule_finding(rule: CompiledRule, message: str, evidence: tuple[Evidence, ...], run_id: str, fingerprint: str,
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


Produced = tuple[tuple, Finding, "str | None"]


@dataclass(frozen=True, slots=True)
class ActorView:
    """A run context narrowed to the units and events of some actors, and who wrote each path."""

    ctx: RunContext
    actors_by_path: Mapping[str, frozenset[str]]


def run_finding(rule: CompiledRule, match: Match, run_id: str, view: ActorView | None = None) -> Produced:
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
    finding = rule_finding(rule, render_message(spec.message, values), tuple(evidence), run_id, fingerprint,
                       actor=actor)
    return (spec.id, first.path, first.start_byte, first.end_byte, first.start_line, first.end_line), finding, None


def pair_values(pair: Any) -> dict[str, Any]:
    return {name: getattr(pair, name, None) for name in PAIR_FIELDS}


def pair_evidence(pair: Any, texts: Mapping[str, str]) -> tuple[Evidence, ...]:
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
