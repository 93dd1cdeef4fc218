"""The copy detector's evidence for a pair as fragments a reviewer can read.

The detector (:mod:`mleaudit.audit.similarity.detect`) gives a chain of tiles in its own token
coordinates; :func:`evidence_fragments` turns them into :class:`Fragment` records with spans on
both sides, and :func:`evidence_extent` counts the lines and stretches they cover (the
``copied_lines`` and ``copied_fragments`` of a pair report).
"""

from __future__ import annotations

import bisect
import re
from typing import Any, Sequence

from mleaudit.audit.model import Span
from mleaudit.audit.similarity.detect import Evidence, Profile
from mleaudit.audit.similarity.fragments import Fragment, _describe, _host

__all__ = ["evidence_extent", "evidence_fragments"]


def evidence_extent(fragments: Sequence[Fragment]) -> tuple[int, int]:
    """``(lines, fragments)`` of a chain of evidence fragments: the distinct agent lines they
    cover, and how many stretches they make when fragments on adjacent or overlapping lines are
    joined.

    Examples
    --------
    >>> def at(a, b):
    ...     span = Span.from_lines("a.py", a, b)
    ...     return Fragment(agent=span, reference=span, agent_kgrams=range(0, 1), reference_kgrams=range(0, 1), length=1)
    >>> evidence_extent([at(3, 5), at(6, 6), at(10, 12)])
    (7, 2)
    """
    return _line_extent([(f.agent.start_line, f.agent.end_line) for f in fragments])


def _line_extent(ranges: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """Distinct lines of inclusive line ranges, and the stretches they make joined when adjacent."""
    lines: set[int] = set()
    stretches = 0
    last = None
    for start, end in sorted(ranges):
        lines.update(range(start, end + 1))
        if last is None or start > last + 1:
            stretches += 1
        last = end if last is None else max(last, end)
    return len(lines), stretches


def _unit_extent(evidence: Any, profile: Any, text: str) -> tuple[int, int]:
    """:func:`evidence_extent` counted on the lines of the agent unit's own text (token offsets of
    the chain's tiles in the detector's profile)."""
    line_starts = [0] + [match.end() for match in re.finditer("\n", text)]
    ranges = []
    for tile in evidence.tiles:
        if tile.agent_stop <= tile.agent_start:
            continue
        start = profile.starts[tile.agent_start]
        end = max(start, profile.ends[tile.agent_stop - 1] - 1)
        ranges.append((bisect.bisect_right(line_starts, start), bisect.bisect_right(line_starts, end)))
    return _line_extent(ranges)


def evidence_fragments(
    evidence: Evidence,
    agent_profile: Profile,
    reference_profile: Profile,
    *,
    agent_text: str,
    reference_text: str,
    agent_path: str | None = None,
    reference_path: str | None = None,
    agent_unit: Any = None,
    reference_unit: Any = None,
) -> tuple[Fragment, ...]:
    """The detector's chain of tiles as :class:`Fragment` records with spans on both sides.

    Parameters
    ----------
    evidence : Evidence
    agent_profile, reference_profile : Profile
        Profiles of ``agent_text`` and ``reference_text`` (token character offsets).
    agent_text, reference_text : str
        The compared texts (a notebook's joined code cells, a log's code block).
    agent_path, reference_path : str, optional
        Paths recorded on the spans (default: the profiles' paths).
    agent_unit, reference_unit : mleaudit.audit.units.CodeUnit, optional
        Map spans to the host file and describe notebook cells, as for Dolos fragments.

    Returns
    -------
    tuple of Fragment
        One per tile of the chain, in agent order; ranges are detector token indices.
    """
    out = []
    for tile in evidence.tiles:
        agent_span = Span.from_offsets(agent_text, agent_path if agent_path is not None else agent_profile.path,
                                       agent_profile.starts[tile.agent_start], agent_profile.ends[tile.agent_stop - 1])
        reference_span = Span.from_offsets(reference_text,
                                           reference_path if reference_path is not None else reference_profile.path,
                                           reference_profile.starts[tile.reference_start],
                                           reference_profile.ends[tile.reference_stop - 1])
        out.append(
            Fragment(
                agent=_host(agent_unit, agent_span),
                reference=_host(reference_unit, reference_span),
                agent_kgrams=range(tile.agent_start, tile.agent_stop),
                reference_kgrams=range(tile.reference_start, tile.reference_stop),
                length=tile.length,
                agent_location=_describe(agent_unit, agent_span),
                reference_location=_describe(reference_unit, reference_span),
            )
        )
    out.sort(key=lambda f: (f.agent_kgrams.start, f.reference_kgrams.start))
    return tuple(out)
