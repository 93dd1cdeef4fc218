"""What each cell of a notebook is (:class:`CellRole`) and who wrote its code and outputs
(:class:`DriverReading`)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from mleaudit.audit.units import Actor


class CellRole(enum.Enum):
    """What a code cell of a driver notebook does (see the module docstring)."""

    SETUP = "setup"
    RUN = "run"
    STREAM = "stream"
    RERUN = "rerun"
    POST = "post"
    AGENT = "agent"


#: Actor of a cell's code, of its outputs, and of code found in its outputs, per role.
_ACTORS: dict[CellRole, tuple[Actor, Actor, Actor]] = {
    CellRole.SETUP: (Actor.OPERATOR, Actor.OPERATOR, Actor.OPERATOR),
    CellRole.RUN: (Actor.OPERATOR, Actor.SCAFFOLD, Actor.AGENT),
    CellRole.STREAM: (Actor.OPERATOR, Actor.SCAFFOLD, Actor.AGENT),
    CellRole.RERUN: (Actor.UNKNOWN, Actor.UNKNOWN, Actor.UNKNOWN),
    CellRole.POST: (Actor.OPERATOR, Actor.OPERATOR, Actor.UNKNOWN),
    CellRole.AGENT: (Actor.AGENT, Actor.AGENT, Actor.AGENT),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class DriverReading:
    """How a notebook was attributed.

    Attributes
    ----------
    driver : bool
        Whether the notebook is a driver.
    frameworks : tuple of str
        Frameworks whose markers matched (in vocabulary order).
    markers : tuple of (int, str)
        ``(cell index, what)`` of each marker match, in cell order.
    run_cells : tuple of int
        Cells whose outputs are the scaffold's log (``run`` and ``stream`` roles).
    roles : dict of int to CellRole
        Role of each code cell; every cell is ``agent`` in a notebook that is not a driver.
    reason : str
        One sentence saying why (or why not) the notebook is a driver.
    """

    driver: bool
    frameworks: tuple[str, ...] = ()
    markers: tuple[tuple[int, str], ...] = ()
    run_cells: tuple[int, ...] = ()
    roles: dict[int, CellRole] | None = None
    reason: str = ""

    def role(self, cell_index: int) -> CellRole:
        """The role of a cell (``agent`` outside drivers; ``setup`` for a driver's non-code cells)."""
        if self.roles is not None and cell_index in self.roles:
            return self.roles[cell_index]
        return CellRole.SETUP if self.driver else CellRole.AGENT

    def code_actor(self, cell_index: int) -> Actor:
        """Who wrote a cell's code."""
        return _ACTORS[self.role(cell_index)][0]

    def output_actor(self, cell_index: int) -> Actor:
        """Who produced a cell's outputs (and a markdown or raw cell's text)."""
        if self.driver and (self.roles is None or cell_index not in self.roles):
            return Actor.OPERATOR  # markdown and raw cells of a driver
        return _ACTORS[self.role(cell_index)][1]

    def found_code_actor(self, cell_index: int) -> Actor:
        """Who wrote code and commands found in a cell's outputs."""
        if self.driver and (self.roles is None or cell_index not in self.roles):
            return Actor.OPERATOR
        return _ACTORS[self.role(cell_index)][2]

    def describe(self) -> str:
        """One line for reports: ``driver notebook (aide: run cells 5, 6)`` or why not."""
        if not self.driver:
            return self.reason or "not a driver notebook"
        cells = ", ".join(str(c) for c in self.run_cells) or "none found"
        return f"driver notebook ({', '.join(self.frameworks) or 'agent framework'}; run cells {cells})"
