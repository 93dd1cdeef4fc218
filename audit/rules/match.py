"""What a matcher returns: :class:`Match` (captured regions of one scanned text) and :class:`Capture`.

A match is expressed in character offsets into the text that was scanned (a code unit's text, a
log event's text, a file's text); the engine maps those offsets to host-file spans, so matchers
never need to know where a text came from. Built-in checks (``mleaudit.audit.checks``) return matches too,
with ready-made ``evidence`` and numeric ``values`` for message templates.

Naming: a *capture* is a named region (a tree-sitter ``@capture`` or a regex ``(?P<group>)``);
the *extent* of a match is the smallest region that covers all of its captures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from mleaudit.audit.model import Evidence

__all__ = ["Capture", "Match"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Capture:
    """A named region of the scanned text.

    Parameters
    ----------
    start, end : int
        0-based, half-open character offsets into the scanned text.
    text : str
        ``scanned_text[start:end]`` (kept so templates need not slice again).
    """

    start: int
    end: int
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Match:
    """One match of a rule's matcher tree within one unit.

    Parameters
    ----------
    captures : Mapping[str, Capture]
        Named regions, in character offsets into the scanned text.
    start, end : int
        The match's extent (0-based, half-open character offsets); for built-in checks that
        do not scan a text both are 0.
    values : Mapping[str, Any]
        Extra template values that are not text regions (a built-in's ``match_fraction``).
    evidence : tuple of Evidence
        Evidence already mapped to host files (built-in checks); empty for text matches,
        whose evidence the engine derives from ``captures``.
    support : tuple of Match
        Matches of the other children of an ``all`` matcher, shown as secondary evidence.
    """

    captures: Mapping[str, Capture] = field(default_factory=dict)
    start: int = 0
    end: int = 0
    values: Mapping[str, Any] = field(default_factory=dict)
    evidence: tuple[Evidence, ...] = ()
    support: tuple["Match", ...] = ()

    @classmethod
    def from_captures(cls, captures: Mapping[str, Capture], **kwargs: Any) -> "Match":
        """A match whose extent covers all ``captures`` (which must not be empty)."""
        start = min(c.start for c in captures.values())
        end = max(c.end for c in captures.values())
        return cls(captures=dict(captures), start=start, end=end, **kwargs)

    def overlaps(self, start: int, end: int) -> bool:
        """True when ``[start, end)`` shares at least one character with this match's extent.

        Empty regions overlap when they touch the extent, so a zero-width match is not
        silently ignored by a ``not`` filter.
        """
        if start == end or self.start == self.end:
            return self.start <= start <= self.end or start <= self.start <= end
        return start < self.end and self.start < end
