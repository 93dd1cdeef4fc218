"""The events of ``run.json``: how one is written, and how many are kept when an agent makes thousands."""

from __future__ import annotations

from typing import Any, Mapping

MAX_EVENTS = 1000
#: Event kinds by how much a reviewer needs each one, most first: when there are more events than
#: :data:`MAX_EVENTS`, the least needed are dropped first (an agent must not be able to push a
#: link to the answers out of the record by making a thousand hard links first).
EVENT_PRIORITY = ("sandbox-failed", "sandbox-error", "no-sandbox", "spoofed-validation-log", "log-truncated",
                  "limit-hit", "network-denied", "validation-refused", "validation-timeout", "validation-failed",
                  "refused-output", "unreadable-output", "hard-link-copied", "attributes-removed")  # fmt: skip


def new_event(kind: str, detail: str, path: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"kind": kind, "detail": detail}
    if path is not None:
        event["path"] = path
    return event



def bounded_events(events: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """At most :data:`MAX_EVENTS` events, the least needed kinds dropped first, plus a count of the dropped.

    Events keep their order; when some are dropped, an ``events-truncated`` event says how many
    of each kind.
    """
    if len(events) <= MAX_EVENTS:
        return list(events)
    rank = {kind: i for i, kind in enumerate(EVENT_PRIORITY)}
    # Unknown kinds rank with the most needed: nothing unforeseen is dropped before the known noise.
    order = sorted(range(len(events)), key=lambda i: (rank.get(str(events[i].get("kind")), -1), i))
    kept = sorted(order[:MAX_EVENTS])
    dropped: dict[str, int] = {}
    for i in order[MAX_EVENTS:]:
        kind = str(events[i].get("kind"))
        dropped[kind] = dropped.get(kind, 0) + 1
    summary = ", ".join(f"{n} {kind}" for kind, n in sorted(dropped.items()))
    truncated = new_event("events-truncated", f"{sum(dropped.values())} more events not recorded: {summary}")
    truncated["dropped"] = dropped
    return [events[i] for i in kept] + [truncated]
