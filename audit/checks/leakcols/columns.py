"""The columns a check knows (the leak columns and the others) and a selection of them found in code."""

from __future__ import annotations

from dataclasses import dataclass

import tree_sitter


@dataclass(frozen=True, slots=True)
class Columns:
    """The leak columns, and every column of the competition's data when known (``universe``)."""

    leaks: tuple[str, ...]
    universe: tuple[str, ...] = ()
    #: A selection counts when at least this share of the known columns it picks are leaks.
    min_leak_share: float = 0.5
    #: Column positions the run's own printouts show holding a leak column (and nothing else).
    positions: tuple[tuple[int, str], ...] = ()

    def targeted(self, picked_leaks: tuple[str, ...], pick) -> bool:
        if not picked_leaks:
            return False
        others = [c for c in self.universe if c not in self.leaks]
        if not others:
            return True
        picked_others = pick(tuple(others))
        return len(picked_leaks) / (len(picked_leaks) + len(picked_others)) >= self.min_leak_share


@dataclass(frozen=True, slots=True)
class Selection:
    node: tree_sitter.Node
    pattern: str
    columns: tuple[str, ...]
