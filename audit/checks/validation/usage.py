"""How a run used the validator: :func:`assess_validation` counts calls from the calls log, the logs and the code, and finds the busiest step."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

from mleaudit.audit.checks.evidence import event_evidence, file_line_evidence, unit_evidence, unit_location
from mleaudit.audit.checks.validation.calls import (
    VALIDATION_CALLS_LOG,
    ValidationCall,
    ValidationLogError,
    largest_burst,
    load_validation_calls,
)
from mleaudit.audit.checks.validation.sites import ENDPOINT, CallSite, python_call_sites, shell_call_sites
from mleaudit.audit.model import Evidence
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.units import LogEvent, LogEventKind

#: Validator replies: MLE-bench's wording, and the JSON of this suite's sandbox endpoint (whose
#: message may repeat the wording, so a reply is counted once by taking the larger count).
_REPLY = re.compile(r"Submission is valid|Submission invalid")
_JSON_REPLY = re.compile(r"\"valid\"\s*:\s*(?:true|false)\s*,\s*\"result\"")

_TOOL_SCRIPT = re.compile(r"script_name[\"']?\s*[:=]\s*[\"'][^\"']*validat", re.IGNORECASE)


def _normalise(text: str) -> str:
    return "\n".join(line.strip() for line in text.strip().splitlines() if line.strip())


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidationUsage:
    """How a run used the validation endpoint.

    Attributes
    ----------
    calls : int
        Best estimate of the number of calls (the calls log when present, else the largest of
        the call-site estimate, the replies seen and the tool calls); an unbounded loop counts as
        its site alone, so ``calls`` stays a lower bound.
    step_calls : int or None
        Most calls attributable to one step: the largest loop estimate, the most replies in one
        output, or the largest burst in the calls log; ``None`` for an unbounded loop.
    basis : str
        How ``calls`` was counted, for the message.
    step : str
        Which step ``step_calls`` comes from, for the message.
    sites : tuple of CallSite
    replies : int
        Validator replies seen in outputs.
    logged : int or None
        Calls in the calls log (``None`` when the run has none).
    evidence : tuple of Evidence
        The biggest step first, then the calls log.
    """

    calls: int
    step_calls: int | None
    basis: str
    step: str
    sites: tuple[CallSite, ...] = ()
    replies: int = 0
    logged: int | None = None
    evidence: tuple[Evidence, ...] = ()


def assess_validation(ctx: RunContext, *, window_s: float = 60.0) -> ValidationUsage:
    """Count a run's validation calls and find its largest single step.

    Parameters
    ----------
    ctx : RunContext
        Reads ``code_units``, ``log_events`` and ``root / VALIDATION_CALLS_LOG``.
    window_s : float
        Width in seconds of the window in which calls logged by the sandbox count as one burst.

    Returns
    -------
    ValidationUsage
    """
    log_units = [u for u in ctx.code_units if u.source == "log"]
    logged_code = {_normalise(u.text) for u in log_units}
    sites: list[CallSite] = []
    for unit in ctx.code_units:
        if "validat" not in unit.text:
            continue
        if unit.source != "log" and _normalise(unit.text) in logged_code:
            continue  # the same code is counted where the logs show it
        if unit.language == "python":
            sites.extend(python_call_sites(unit))
        elif unit.language == "bash":
            sites.extend(shell_call_sites(unit))

    tool_calls = [e for e in ctx.log_events if e.kind is LogEventKind.TOOL_CALL
                  and (ENDPOINT.search(e.text) or _TOOL_SCRIPT.search(e.text))]
    reply_events: list[tuple[LogEvent, int]] = []
    for event in ctx.log_events:
        if event.kind is LogEventKind.OUTPUT:
            count = max(len(_REPLY.findall(event.text)), len(_JSON_REPLY.findall(event.text)))
            if count:
                reply_events.append((event, count))
    replies = sum(c for _, c in reply_events)

    logged: int | None = None
    burst, burst_at = 0, -1
    log_path = Path(ctx.root) / VALIDATION_CALLS_LOG
    log_calls: list[ValidationCall] = []
    if os.path.lexists(log_path):
        try:
            log_calls, malformed = load_validation_calls(log_path, root=Path(ctx.root))
            logged = len(log_calls)
            burst, burst_at = largest_burst(log_calls, window_s)
            if malformed:
                ctx.skip(VALIDATION_CALLS_LOG, f"{malformed} malformed line(s) not counted")
        except ValidationLogError as exc:
            ctx.skip(VALIDATION_CALLS_LOG, str(exc))

    unbounded = [s for s in sites if s.calls is None]
    site_total = sum(s.calls for s in sites if s.calls is not None) + len(unbounded)
    estimates = {"call sites in code and commands": site_total, "validator replies in outputs": replies,
                 "tool calls": len(tool_calls)}
    if logged is not None:
        calls, basis = logged, f"{VALIDATION_CALLS_LOG} records {logged}"
    else:
        source = max(estimates, key=lambda k: estimates[k])
        calls, basis = estimates[source], f"from {source}"

    # The largest single step.
    candidates: list[tuple[float, int | None, str, Evidence]] = []
    for site in sites:
        size = math.inf if site.calls is None else site.calls
        where = unit_location(site.unit, site.start)
        text = f"a call in a loop ({site.loop}) at {where}" if site.loop else f"a call at {where}"
        candidates.append((size, site.calls, text, unit_evidence(site.unit, site.start, site.end, "validation call")))
    for event, count in reply_events:
        candidates.append((count, count, f"{count} validator replies printed by one step "
                           f"({event.span.path} output event {event.index})", event_evidence(event, "validator replies")))
    if burst:
        label = "first call of the burst" if burst > 1 else "calls log"
        evidence = file_line_evidence(ctx, log_path, log_calls[burst_at].line, label)
        what = f"{burst} calls within {window_s:g} s" if burst > 1 else f"no two calls within {window_s:g} s"
        candidates.append((burst, burst, f"{what} in {VALIDATION_CALLS_LOG}", evidence))
    candidates.sort(key=lambda c: -c[0])
    if candidates:
        _, step_calls, step, first = candidates[0]
        evidence = [first] + [c[3] for c in candidates[1:3]]
    else:
        step_calls, step, evidence = 0, "no validation call found", []
    if logged is not None and not any(e.span.path == VALIDATION_CALLS_LOG for e in evidence) and log_calls:
        evidence.append(file_line_evidence(ctx, log_path, log_calls[0].line, "calls log"))
    return ValidationUsage(calls=calls, step_calls=step_calls, basis=basis, step=step, sites=tuple(sites),
                           replies=replies, logged=logged, evidence=tuple(evidence))


def step_text(usage: ValidationUsage) -> str:
    return "unbounded" if usage.step_calls is None else str(usage.step_calls)


def usage_of(ctx: RunContext, window_s: float) -> ValidationUsage:
    # Keyed by the number, not its spelling: a rule's ``window_s: 60`` shares the default 60.0's result.
    return ctx.memoize(f"validation:{float(window_s)!r}", lambda: assess_validation(ctx, window_s=window_s))


def is_probing(usage: ValidationUsage, min_step_calls: int) -> bool:
    return usage.step_calls is None or usage.step_calls >= min_step_calls


def check_threshold(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 1:
        raise ValueError(f"{name} must be a number >= 1, got {value!r}")
