"""Which code units and log events each text rule must match, worked out from groups built once per evaluation.

A run holds tens of thousands of log events with a few thousand distinct texts, and most rules
can match few of them: each takes only some event kinds, actors and paths, and most texts lack
the literals its matcher needs (:func:`mleaudit.audit.rules.matchers.gate.text_gate`). The units
and events are grouped once by what those tests read, so each rule tests each group once
instead of each event, and the literals a group's text holds are tested once for all rules
(:meth:`mleaudit.audit.rules.prefilter.FoldedTexts.holds_any`).

The engine still runs each rule over its candidates in their order with its own filters, so
what it finds, notes and raises is what it would find going over every unit and event: a unit
or event left out is one the rule's filters refuse or whose text its gate proves holds nothing
for it (``tests/audit/rules/test_gates.py`` compares both on many texts).
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Sequence

from mleaudit.audit.rules.loader import CompiledRule
from mleaudit.audit.rules.matchers.gate import Gate, text_gate
from mleaudit.audit.rules.prefilter import FoldedTexts
from mleaudit.audit.units import CodeUnit, LogEvent

__all__ = ["TextGroups", "unit_groups", "event_groups"]


class TextGroups:
    """Indices of items grouped by ``(filter key, language, text)``, in first-seen order.

    The filter key (an event's kind and actor, a unit's language and actor) takes few values,
    so each rule tests each once; paths are tested per item, and only for rules with a path
    filter (paths are many: nearly one per event in some logs).
    """

    def __init__(self, items: Sequence[tuple[Hashable, Hashable, str, str | None, str]]) -> None:
        """``items``: ``(fast key, filter key, path, language, text)``; the fast key (strings)
        stands for the filter key (Enum members, whose hashing runs Python code) in lookups."""
        key_ids: dict[Hashable, int] = {}
        self._keys: list[Hashable] = []
        self._paths: list[str] = []
        groups: dict[tuple[int, str | None, str], list[int]] = {}
        for index, (fast, key, path, language, text) in enumerate(items):
            kid = key_ids.get(fast)
            if kid is None:
                kid = key_ids[fast] = len(self._keys)
                self._keys.append(key)
            self._paths.append(path)
            found = groups.get((kid, language, text))
            if found is None:
                groups[(kid, language, text)] = [index]
            else:
                found.append(index)
        self._groups = [(kid, language, text, indices) for (kid, language, text), indices in groups.items()]

    def candidates(self, rule: CompiledRule, accepts: Callable[[Any], bool], folds: FoldedTexts) -> list[int]:
        """Indices, ascending, of the items whose filter key ``accepts``, whose path the rule's
        path filter takes and whose text the rule's gate lets in."""
        accepted = [accepts(key) for key in self._keys]
        paths = rule.spec.paths
        by_path = bool(paths.include or paths.exclude)
        gates: dict[str | None, Gate] = {}
        chosen: list[int] = []
        for kid, language, text, indices in self._groups:
            if not accepted[kid]:
                continue
            gate = gates.get(language)
            if gate is None:
                gate = gates[language] = text_gate(rule.matcher, language)
            if not gate.open(text, folds):
                continue
            if by_path:
                chosen.extend(i for i in indices if paths.accepts(self._paths[i]))
            else:
                chosen.extend(indices)
        chosen.sort()
        return chosen


def unit_groups(units: Sequence[CodeUnit]) -> TextGroups:
    """Code units by ``((language, actor), language, text)``."""
    return TextGroups([((u.language, u.actor._value_), (u.language, u.actor), u.path, u.language, u.text)
                       for u in units])


def event_groups(events: Sequence[LogEvent]) -> TextGroups:
    """Log events by ``((kind, actor), language, text)``."""
    return TextGroups([((e.kind._value_, e.actor._value_), (e.kind, e.actor), e.span.path, e.language, e.text)
                       for e in events])
