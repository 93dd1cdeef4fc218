"""What run-level checks see: actor views built once per actor set, analyses shared between checks."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

from mleaudit.audit.checks.validation import validation_call_count, validation_probing
from mleaudit.audit.checks.validation.usage import usage_of
from mleaudit.audit.model import Span
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.rules.engine.targets import _actor_view
from mleaudit.audit.units import Actor, CodeUnit, LogEvent, LogEventKind


def _run(rnd: random.Random) -> RunContext:
    actors = list(Actor)
    paths = ["code/a.py", "code/b.py", "logs/run.log", "logs/other.log"]
    units = tuple(CodeUnit(path=rnd.choice(paths), language="python", text=f"x = {i}\n", actor=rnd.choice(actors))
                  for i in range(30))
    events = []
    for i in range(60):
        text = f"step {i}"
        events.append(LogEvent(index=i, kind=rnd.choice(list(LogEventKind)), text=text, actor=rnd.choice(actors),
                               span=Span.from_offsets(text, rnd.choice(paths), 0, len(text))))
    return RunContext(root=Path("."), code_units=units, log_events=tuple(events))


def test_an_actor_view_holds_the_units_events_and_writers_of_its_actors():
    for seed in range(20):
        ctx = _run(random.Random(seed))
        for size in range(1, len(Actor) + 1):
            for chosen in itertools.combinations(list(Actor), size):
                actors = frozenset(chosen)
                view = _actor_view(ctx, actors)
                units = tuple(u for u in ctx.code_units if u.actor in actors)
                events = tuple(e for e in ctx.log_events if e.actor in actors)
                assert view.ctx.code_units == units and view.ctx.log_events == events
                writers: dict[str, set[str]] = {}
                for path, actor in [(u.path, u.actor) for u in units] + [(e.span.path, e.actor) for e in events]:
                    writers.setdefault(path, set()).add(actor.value)
                assert dict(view.actors_by_path) == {p: frozenset(a) for p, a in writers.items()}
                assert _actor_view(ctx, actors) is view
                assert view.ctx.memo == {} and view.ctx.skipped is ctx.skipped


def test_the_validation_analysis_is_shared_by_a_window_spelled_as_an_int_or_a_float(monkeypatch):
    from mleaudit.audit.checks.validation import usage

    calls = []
    real = usage.assess_validation
    monkeypatch.setattr(usage, "assess_validation", lambda ctx, **kw: calls.append(kw) or real(ctx, **kw))
    ctx = RunContext(root=Path("."))
    assert usage_of(ctx, 60) is usage_of(ctx, 60.0)
    assert usage_of(ctx, 30) is not usage_of(ctx, 60)
    assert len(calls) == 2
    assert validation_probing(ctx, window_s=60) == validation_probing(RunContext(root=Path(".")), window_s=60.0)
    assert validation_call_count(ctx, window_s=60) == validation_call_count(RunContext(root=Path(".")))
