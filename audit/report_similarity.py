"""What an audit report says about its similarity pairs beyond their figures.

Two things a reviewer needs that the pair figures do not give:

- **where a pair's agent code lies in a log** (:func:`pair_origins`): code read from a log (an
  AIDE journal's nodes, the code blocks of a transcript) shares the log's path, so a
  600-node journal can list the same (file, notebook) pair once per node. Each such pair gets
  ``agent_origin``: the record's place in the log (``nodes[3].code``), its first line and, for
  an AIDE journal, the node's ``id`` and ``step``;
- **how much of the run's agent code was found in public notebooks** (:func:`copied_share`):
  the share of the lines of the compared agent code that lie in a stretch the copy detector
  matched to a notebook in a flagged pair.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Callable, Iterable, Mapping, Sequence

from mleaudit.audit.rules.spec import DEFAULT_ACTORS
from mleaudit.audit.similarity.strings import string_code_units
from mleaudit.audit.units import CodeUnit
from mleaudit.grading import untrusted_json
from mleaudit.grading.untrusted_json import replace_surrogates

__all__ = ["pair_origins", "copied_share", "log_origin", "record_locations", "similarity_agents", "unit_of_pair"]

_NODE_INDEX = re.compile(r"^(?:nodes)?\[(\d+)\]")
#: Longest node id kept in a report (AIDE's ids are 32 hex digits).
MAX_NODE_ID_CHARS = 200


def _line_count(text: str) -> int:
    """Lines of ``text`` (a final newline does not open another line)."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _fragments(pair: Any) -> tuple:
    return tuple(pair.evidence_fragments) or tuple(pair.fragments)


def similarity_agents(units: Iterable[CodeUnit]) -> list[CodeUnit]:
    """The units of one run compared with the corpus (or with other runs).

    Parameters
    ----------
    units : iterable of CodeUnit
        A run's code units.

    Returns
    -------
    list of CodeUnit
        Its Python units of the actors rules judge by default (the operator's harness and the
        scaffold's own code are not the agent's solution), each text once (AIDE's best node
        repeats ``best_solution.py``), each followed by the code its string literals hold
        (:func:`mleaudit.audit.similarity.strings.string_code_units`: a kernel pasted into strings and
        run with ``exec``).
    """
    seen: set[str] = set()
    expanded: set[str] = set()
    picked = []
    for unit in units:
        if unit.language != "python" or unit.actor not in DEFAULT_ACTORS:
            continue
        key = hashlib.sha256(unit.text.encode("utf-8", errors="replace")).hexdigest()
        if key in expanded:
            continue  # the same text as a unit before: the code of its strings was taken then
        expanded.add(key)
        for candidate in (unit, *string_code_units(unit)):
            digest = key if candidate is unit else hashlib.sha256(
                candidate.text.encode("utf-8", errors="replace")).hexdigest()
            if digest in seen or not candidate.text.strip():
                continue
            seen.add(digest)
            picked.append(candidate)
    return picked


def unit_of_pair(pair: Any, units_by_path: Mapping[str, Sequence[CodeUnit]]) -> CodeUnit | None:
    """The agent unit a pair was measured on.

    Parameters
    ----------
    pair : PairReport
    units_by_path : mapping of str to sequence of CodeUnit
        The compared agent units, by path.

    Returns
    -------
    CodeUnit or None
        The only unit of the pair's path; for a log with several units (or a file with the code
        of its strings), the narrowest whose origin holds the pair's first fragment, else the
        whole file (``None`` when nothing tells).
    """
    units = units_by_path.get(pair.agent_path) or ()
    if len(units) == 1:
        return units[0]
    whole = [unit for unit in units if unit.origin is None]
    fragments = _fragments(pair)
    if not fragments:
        return whole[0] if len(whole) == 1 else None
    start = fragments[0].agent.start_byte
    holding = [unit for unit in units if unit.origin is not None
               and unit.origin.start_byte <= start < max(unit.origin.end_byte, unit.origin.start_byte + 1)]
    if holding:
        return min(holding, key=lambda unit: unit.origin.end_byte - unit.origin.start_byte)
    return whole[0] if len(whole) == 1 else None


def _journal_nodes(text: str | None) -> list[Mapping[str, Any]] | None:
    """The node records of an AIDE journal's text, or ``None``."""
    if not text:
        return None
    from mleaudit.audit.logs.aide import journal_nodes

    try:
        return journal_nodes(untrusted_json.loads(text))
    except (ValueError, RecursionError):
        return None


def pair_origins(pairs: Iterable[Any], units: Sequence[CodeUnit], locations: Mapping[tuple[str, int], str],
                 host_text: Callable[[str], str | None] | None = None) -> dict[int, dict[str, Any]]:
    """``agent_origin`` of each pair whose agent code comes from a log.

    Parameters
    ----------
    pairs : iterable of PairReport
    units : sequence of CodeUnit
        The compared agent units.
    locations : mapping of (path, start offset) to str
        The place of each log record in its log (``LogEvent.location`` by the event span's
        path and start), e.g. ``nodes[3].code``.
    host_text : callable, optional
        The text of a run file (to read an AIDE journal's node ids and steps).

    Returns
    -------
    dict
        ``id(pair) -> {"location", "start_line", "node", "node_id", "step"}`` (the last three
        ``None`` outside AIDE journals), for the pairs of log units only.
    """
    by_path: dict[str, list[CodeUnit]] = {}
    for unit in units:
        by_path.setdefault(unit.path, []).append(unit)
    journals: dict[str, list[Mapping[str, Any]] | None] = {}
    out: dict[int, dict[str, Any]] = {}
    for pair in pairs:
        unit = unit_of_pair(pair, by_path)
        record = log_origin(unit, locations, host_text, journals) if unit is not None else None
        if record is not None:
            out[id(pair)] = record
    return out


def record_locations(events: Iterable[Any]) -> dict[tuple[str, int], str]:
    """The place of each log record in its log (``nodes[3].code``) by the record's path and start
    offset: the ``locations`` of :func:`pair_origins` and :func:`log_origin`, from the
    :class:`~mleaudit.audit.units.LogEvent` objects of an expanded run."""
    return {(e.span.path, e.span.start_byte): e.location for e in events if e.location}


def log_origin(unit: CodeUnit, locations: Mapping[tuple[str, int], str],
               host_text: Callable[[str], str | None] | None = None,
               journals: dict[str, list[Mapping[str, Any]] | None] | None = None) -> dict[str, Any] | None:
    """Where in its log a code unit was read: the ``agent_origin`` record of its pairs.

    Parameters
    ----------
    unit : CodeUnit
    locations : mapping of (path, start offset) to str
        As for :func:`pair_origins`.
    host_text : callable, optional
        The text of a run file (to read an AIDE journal's node ids and steps).
    journals : dict, optional
        A cache of the journals read, shared between calls.

    Returns
    -------
    dict or None
        ``{"location", "start_line", "node", "node_id", "step"}``; ``None`` for a unit that is a
        file of its own.
    """
    if unit.origin is None:
        return None
    journals = {} if journals is None else journals
    location = locations.get((unit.path, unit.origin.start_byte), "")
    record: dict[str, Any] = {"location": location, "start_line": unit.origin.start_line, "node": None,
                              "node_id": None, "step": None}
    match = _NODE_INDEX.match(location)
    if match is not None:
        if unit.path not in journals:
            journals[unit.path] = _journal_nodes(host_text(unit.path) if host_text is not None else None)
        nodes = journals[unit.path]
        number = int(match.group(1))
        record["node"] = number
        if nodes is not None and number < len(nodes):
            node = nodes[number]
            node_id, step = node.get("id"), node.get("step")
            # an id is the agent's text: at most a line of it, as UTF-8
            record["node_id"] = (replace_surrogates(str(node_id))[:MAX_NODE_ID_CHARS]
                                 if isinstance(node_id, (str, int)) and not isinstance(node_id, bool) else None)
            record["step"] = step if isinstance(step, int) and not isinstance(step, bool) else None
    return record


def copied_share(pairs: Iterable[Any], units: Sequence[CodeUnit]) -> dict[str, Any]:
    """The share of the run's agent code found in public notebooks.

    A line of an agent unit counts as found when an evidence fragment of one of its flagged
    pairs (the copy detector's chain of copied stretches) covers it; the share is those lines
    over all lines of the compared agent units. Where a unit's fragments cannot be placed on
    its own lines (code decoded from a JSON string, whose spans name the whole record), its
    lines times the largest agent containment among its flagged pairs (the share of its
    fingerprints that notebook holds) count instead.

    Parameters
    ----------
    pairs : iterable of PairReport
        Every pair the comparison kept (every flagged pair is among them).
    units : sequence of CodeUnit
        The compared agent units.

    Returns
    -------
    dict
        ``share`` (in [0, 1], ``None`` without agent code), ``copied_lines``, ``agent_lines``,
        ``agent_units``, ``units_with_copies`` and ``notebooks`` (distinct notebooks of the
        flagged pairs).
    """
    by_path: dict[str, list[CodeUnit]] = {}
    for unit in units:
        by_path.setdefault(unit.path, []).append(unit)
    covered: dict[int, set[int]] = {}
    fallback: dict[int, float] = {}
    notebooks: set[str] = set()
    for pair in pairs:
        if not pair.flagged:
            continue
        notebooks.add(pair.reference_path)
        unit = unit_of_pair(pair, by_path)
        if unit is None:
            continue
        key = id(unit)
        lines = covered.setdefault(key, set())
        origin = unit.origin
        exact = origin is None or len(unit.text) == origin.end_byte - origin.start_byte
        if not exact:
            fallback[key] = max(fallback.get(key, 0.0), float(pair.agent_containment))
            continue
        shift = 0 if origin is None else origin.start_line - 1
        for fragment in pair.evidence_fragments:
            lines.update(range(fragment.agent.start_line - shift, fragment.agent.end_line - shift + 1))
    total = 0
    copied = 0
    with_copies = 0
    for unit in units:
        n = _line_count(unit.text)
        total += n
        key = id(unit)
        found = len({line for line in covered.get(key, ()) if 1 <= line <= n})
        found = max(found, min(round(fallback.get(key, 0.0) * n), n))
        copied += found
        with_copies += found > 0
    return {
        "share": copied / total if total else None,
        "copied_lines": copied,
        "agent_lines": total,
        "agent_units": len(units),
        "units_with_copies": with_copies,
        "notebooks": len(notebooks),
    }
