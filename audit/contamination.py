"""Contamination: did a run reproduce public notebook code, and did it fetch that code or recall it?

An investigator asks two questions of a run whose code matches a public Kaggle notebook: how much
was shared (the longest fragments), and where it came from. A run that *retrieved* the notebook
(downloaded it, opened its URL, or saw its code in a tool's output before writing it) broke the
external-resource rule; a run that wrote the same code with no sign of fetching it *reproduced it
without retrieval*, which points at memorised training data (contamination of the benchmark).

:func:`analyse_run` classifies each flagged similarity pair of an audit report (the policy
threshold of ``rules/plagiarism/`` decides "flagged") with the run's own logs as evidence:

- ``retrieved``: the logs or code name the notebook (its slug, its Kaggle URL, a ``kaggle kernels
  pull/output`` of it), fetch notebooks in general (``kaggle kernels pull``, the Kaggle API's
  ``kernels_pull``), a line of the copied fragment appears in a tool output *before* the agent
  first writes it, or the audit found an external-resource rule violation;
- ``reproduced``: the run has logs, and none of the above is in them;
- ``unknown``: the run has no logs to check (only code), so the origin cannot be told.

A run's status is the strongest of its pairs' (``retrieved`` > ``reproduced`` > ``unknown``), or
``none`` without flagged pairs. :func:`summarize_contamination` gives per competition the share
of runs that reproduced public code without retrieval.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from mleaudit.audit.units import CodeUnit, LogEvent, LogEventKind

__all__ = [
    "MIN_LINE_CHARS",
    "PairOrigin",
    "RetrievalEvidence",
    "RunContamination",
    "analyse_run",
    "summarize_contamination",
]

#: Shortest fragment line (whitespace-normalised characters) searched for in tool outputs; shorter
#: lines (``import numpy as np``) are too common to say where code came from.
MIN_LINE_CHARS = 30
#: Fragment lines searched per pair (the longest ones).
MAX_PROBE_LINES = 12
#: Fragments listed per pair, longest first.
MAX_FRAGMENTS = 5

_KERNEL_FETCH = re.compile(
    r"\bkaggle\s+kernels\s+(?:pull|output)\b|\bkernels_pull\s*\(|\bkernel_pull\s*\(|\bkernels_output\s*\(",
    re.IGNORECASE,
)
_WS = re.compile(r"\s+")
_STATUS_ORDER = {"retrieved": 3, "reproduced": 2, "unknown": 1, "none": 0}


@dataclass(frozen=True, slots=True, kw_only=True)
class RetrievalEvidence:
    """One sign that the run fetched public material.

    ``kind``: ``names-notebook`` (slug or URL of the matched notebook), ``kernel-download``
    (``kaggle kernels pull`` and the like), ``seen-in-output`` (a copied line shown by a tool
    before the agent wrote it), ``external-resource-finding`` (an audit finding of that category).
    ``where``: ``path:line`` or the log event; ``excerpt``: the line, shortened.
    """

    kind: str
    where: str
    excerpt: str

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "where": self.where, "excerpt": self.excerpt}


@dataclass(frozen=True, slots=True, kw_only=True)
class PairOrigin:
    """A flagged (agent file, public notebook) pair and where its shared code came from.

    ``fragments``: the longest shared fragments (``length`` in k-grams, locations on both sides,
    ``agent_excerpt``). ``status``: ``retrieved``, ``reproduced`` or ``unknown``.
    """

    agent_path: str
    reference_path: str
    reference_id: str
    score: float
    longest_fragment: int
    agent_containment: float
    fragments: tuple[Mapping[str, Any], ...]
    evidence: tuple[RetrievalEvidence, ...]
    status: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent_path": self.agent_path,
            "reference_path": self.reference_path,
            "reference_id": self.reference_id,
            "score": self.score,
            "longest_fragment": self.longest_fragment,
            "agent_containment": self.agent_containment,
            "status": self.status,
            "fragments": [dict(f) for f in self.fragments],
            "evidence": [e.to_dict() for e in self.evidence],
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class RunContamination:
    """The contamination analysis of one run (``status``: see the module docstring)."""

    run_id: str
    competition_id: str | None
    status: str
    has_logs: bool
    pairs: tuple[PairOrigin, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "competition_id": self.competition_id,
            "status": self.status,
            "has_logs": self.has_logs,
            "pairs": [p.to_dict() for p in self.pairs],
        }


def _normalise(text: str) -> str:
    return _WS.sub(" ", text).strip()


def _short(text: str, limit: int = 160) -> str:
    text = _normalise(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fragment_text(sources: Mapping[str, Any], path: str, span: Mapping[str, Any]) -> str | None:
    """The agent-side text of a fragment from the report's ``similarity.sources``."""
    record = (sources.get("agent") or {}).get(path)
    text = (record or {}).get("text")
    if not text:
        return None
    data = text.encode("utf-8", errors="surrogatepass")
    start, end = int(span.get("start_byte", 0)), int(span.get("end_byte", 0))
    if not 0 <= start < end <= len(data):
        return None
    return data[start:end].decode("utf-8", errors="replace")


def _probe_lines(text: str) -> list[str]:
    lines = {_normalise(line) for line in text.splitlines()}
    lines = [line for line in lines if len(line) >= MIN_LINE_CHARS]
    return sorted(lines, key=lambda line: (-len(line), line))[:MAX_PROBE_LINES]


def _event_where(event: LogEvent) -> str:
    return f"{event.span.path}:{event.span.start_line} (event {event.index})"


def _names_notebook(identifiers: Sequence[str], events: Sequence[LogEvent], units: Sequence[CodeUnit]) -> list[RetrievalEvidence]:
    found = []
    patterns = [re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])", re.IGNORECASE) for name in identifiers if len(name) >= 8]
    if not patterns:
        return found
    for event in events:
        if event.kind is LogEventKind.OUTPUT:
            continue  # a listing that merely shows the name is not a fetch; the agent's own actions are
        for pattern in patterns:
            match = pattern.search(event.text)
            if match:
                line = event.text[event.text.rfind("\n", 0, match.start()) + 1:].split("\n", 1)[0]
                found.append(RetrievalEvidence(kind="names-notebook", where=_event_where(event), excerpt=_short(line)))
                break
    for unit in units:
        if unit.origin is not None:
            continue  # code from logs was searched as events
        for pattern in patterns:
            match = pattern.search(unit.text)
            if match:
                line_number = unit.text.count("\n", 0, match.start()) + 1
                line = unit.text.splitlines()[line_number - 1] if unit.text else ""
                found.append(RetrievalEvidence(kind="names-notebook", where=f"{unit.path}:{line_number}", excerpt=_short(line)))
                break
    return found


def _kernel_downloads(events: Sequence[LogEvent], units: Sequence[CodeUnit]) -> list[RetrievalEvidence]:
    found = []
    for event in events:
        if event.kind is LogEventKind.OUTPUT:
            continue
        match = _KERNEL_FETCH.search(event.text)
        if match:
            line = event.text[event.text.rfind("\n", 0, match.start()) + 1:].split("\n", 1)[0]
            found.append(RetrievalEvidence(kind="kernel-download", where=_event_where(event), excerpt=_short(line)))
    for unit in units:
        if unit.origin is None and (match := _KERNEL_FETCH.search(unit.text)):
            line_number = unit.text.count("\n", 0, match.start()) + 1
            found.append(RetrievalEvidence(kind="kernel-download", where=f"{unit.path}:{line_number}",
                                           excerpt=_short(unit.text.splitlines()[line_number - 1])))
    return found


def _seen_in_output(lines: Sequence[str], events: Sequence[LogEvent]) -> list[RetrievalEvidence]:
    """Copied lines that a tool output showed before the agent first wrote them."""
    if not lines:
        return []
    normalised = [(_normalise(event.text), event) for event in events]
    found = []
    for line in lines:
        first_write = next((e.index for text, e in normalised if e.kind is not LogEventKind.OUTPUT and line in text), None)
        for text, event in normalised:
            if event.kind is LogEventKind.OUTPUT and line in text and (first_write is None or event.index < first_write):
                found.append(RetrievalEvidence(kind="seen-in-output", where=_event_where(event), excerpt=_short(line)))
                break
    return found


def _identifiers(pair: Mapping[str, Any], kernel_refs: Mapping[str, Sequence[str]]) -> list[str]:
    reference_id = str(pair.get("reference_id") or "")
    names = {reference_id} if reference_id else set()
    names.update(kernel_refs.get(reference_id, ()))
    return sorted(names)


def analyse_run(
    report: Mapping[str, Any],
    *,
    code_units: Sequence[CodeUnit] = (),
    log_events: Sequence[LogEvent] = (),
    kernel_refs: Mapping[str, Sequence[str]] | None = None,
) -> RunContamination:
    """Classify the flagged similarity pairs of one audit report.

    Parameters
    ----------
    report : mapping
        :meth:`mleaudit.audit.report.AuditReport.to_dict` of the run, audited with a reference corpus
        (``similarity.pairs`` with ``flagged``, ``evidence_fragments`` and ``similarity.sources``).
    code_units, log_events : sequences
        The run's code and log events (:func:`mleaudit.audit.expand.expand_run`), searched for retrieval.
    kernel_refs : mapping, optional
        Reference id (file stem) → other names of that notebook (``owner/slug``, title), e.g.
        from the corpus's ``kernels.txt``.

    Returns
    -------
    RunContamination
        Pairs sorted by longest fragment (descending).
    """
    kernel_refs = kernel_refs or {}
    run = report.get("run") or {}
    similarity = report.get("similarity") or {}
    sources = similarity.get("sources") or {}
    has_logs = bool(log_events)
    external = [
        RetrievalEvidence(kind="external-resource-finding",
                          where=f"{(f.get('evidence') or [{}])[0].get('path')}:{(f.get('evidence') or [{}])[0].get('start_line')}",
                          excerpt=_short(str(f.get("message", ""))))
        for f in report.get("findings", [])
        if f.get("category") == "external-resource" and (f.get("review") or {}).get("decision") != "dismissed"
    ]
    downloads = _kernel_downloads(log_events, code_units)
    origins = []
    for pair in similarity.get("pairs", []):
        if not pair.get("flagged"):
            continue
        fragments = sorted(pair.get("evidence_fragments") or pair.get("fragments") or [],
                           key=lambda f: -int(f.get("length", 0)))[:MAX_FRAGMENTS]
        listed = []
        probe: list[str] = []
        for fragment in fragments:
            text = _fragment_text(sources, str(pair.get("agent_path")), fragment.get("agent") or {})
            listed.append({
                "length": fragment.get("length"),
                "agent_location": fragment.get("agent_location"),
                "reference_location": fragment.get("reference_location"),
                "agent_excerpt": _short(text, 400) if text else None,
            })
            if text:
                probe.extend(_probe_lines(text))
        evidence = (
            _names_notebook(_identifiers(pair, kernel_refs), log_events, code_units)
            + downloads
            + _seen_in_output(sorted(set(probe), key=lambda line: (-len(line), line))[:MAX_PROBE_LINES], log_events)
            + external
        )
        status = "retrieved" if evidence else ("reproduced" if has_logs else "unknown")
        origins.append(PairOrigin(
            agent_path=str(pair.get("agent_path")),
            reference_path=str(pair.get("reference_path")),
            reference_id=str(pair.get("reference_id") or ""),
            score=float(pair.get("score") or 0.0),
            longest_fragment=int(pair.get("longest_fragment") or 0),
            agent_containment=float(pair.get("agent_containment") or 0.0),
            fragments=tuple(listed),
            evidence=tuple(evidence),
            status=status,
        ))
    origins.sort(key=lambda p: (-p.longest_fragment, p.agent_path, p.reference_path))
    status = max((p.status for p in origins), key=_STATUS_ORDER.__getitem__, default="none")
    return RunContamination(run_id=str(run.get("run_id", "")), competition_id=run.get("competition_id"),
                            status=status, has_logs=has_logs, pairs=tuple(origins))


def summarize_contamination(runs: Iterable[RunContamination]) -> list[dict[str, Any]]:
    """Per competition: how many runs reproduced public code without retrieving it.

    Returns
    -------
    list of dict
        ``competition_id``, ``runs``, ``retrieved``, ``reproduced``, ``unknown``, ``none`` (run
        counts) and ``reproduced_share`` (``reproduced / runs``; higher means more of the
        competition's runs wrote public code with no sign of fetching it), sorted by id.
    """
    table: dict[str, dict[str, Any]] = defaultdict(lambda: {"runs": 0, "retrieved": 0, "reproduced": 0, "unknown": 0, "none": 0})
    for run in runs:
        row = table[run.competition_id or "(unknown)"]
        row["runs"] += 1
        row[run.status] += 1
    return [
        {"competition_id": competition, **row, "reproduced_share": row["reproduced"] / row["runs"]}
        for competition, row in sorted(table.items())
    ]
