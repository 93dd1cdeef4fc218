"""Value types shared across the audit: severities, source spans, evidence and findings.

Every record that crosses a module boundary is a frozen, slotted, keyword-only dataclass so
that a finding, once built, cannot be edited in place and cannot be built with arguments in
the wrong slots. Paths inside records are POSIX strings relative to the run root.
"""

from __future__ import annotations

import bisect
import enum
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

__all__ = [
    "Severity",
    "Confidence",
    "Span",
    "Evidence",
    "Finding",
    "Skipped",
    "make_excerpt",
]

#: Evidence excerpts are clipped to this many characters so reports stay readable.
MAX_EXCERPT_CHARS = 2000


class _LowerNameEnum(enum.IntEnum):
    """An ``IntEnum`` parsed from and written as its lower-case name (the YAML spelling)."""

    @classmethod
    def parse(cls, value: "str | _LowerNameEnum") -> "_LowerNameEnum":
        """Return the member named ``value`` (case-insensitive).

        Raises
        ------
        ValueError
            If ``value`` names no member; the message lists the allowed names.
        """
        if isinstance(value, cls):
            return value
        try:
            return cls[str(value).strip().upper()]
        except KeyError:
            allowed = ", ".join(m.label for m in cls)
            raise ValueError(f"unknown {cls.__name__.lower()} {value!r}; expected one of: {allowed}") from None

    @property
    def label(self) -> str:
        """The lower-case name used in YAML and reports."""
        return self.name.lower()


class Severity(_LowerNameEnum):
    """How bad a finding is if it is true (orderable: ``CRITICAL > HIGH``).

    - critical: read held-out answers or grader internals;
    - high: fetched outside solutions or data, used an external LLM, wrote the submission by hand;
    - medium: heavy copying from a public kernel;
    - low: suspicious but often benign;
    - info: context.
    """

    INFO = 10
    LOW = 20
    MEDIUM = 30
    HIGH = 40
    CRITICAL = 50


class Confidence(_LowerNameEnum):
    """How likely the detector is right: regex on free text is low/medium, an exact call match is high."""

    LOW = 10
    MEDIUM = 20
    HIGH = 30


#: Texts longer than this get their line starts indexed once (many spans into one large text
#: would otherwise count newlines from the start each time: quadratic in the findings).
_INDEXED_TEXT_CHARS = 65_536
_NEWLINES: dict[int, tuple[str, list[int]]] = {}


def _line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of character ``offset`` in ``text``."""
    if len(text) < _INDEXED_TEXT_CHARS:
        return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1
    cached = _NEWLINES.get(id(text))
    if cached is None or cached[0] is not text:
        if len(_NEWLINES) >= 8:
            _NEWLINES.pop(next(iter(_NEWLINES)))
        cached = (text, [m.start() for m in re.finditer("\n", text)])
        _NEWLINES[id(text)] = cached
    newlines = cached[1]
    before = bisect.bisect_left(newlines, offset)
    line_start = newlines[before - 1] + 1 if before else 0
    return before + 1, offset - line_start + 1


@dataclass(frozen=True, slots=True, kw_only=True)
class Span:
    """A region of a file.

    Parameters
    ----------
    path : str
        POSIX path relative to the run root (or corpus root for reference files).
    start_byte, end_byte : int
        0-based, half-open offsets into the file's text (characters of the decoded text).
    start_line, start_col, end_line, end_col : int
        1-based positions, as SARIF regions use them.
    """

    path: str
    start_byte: int
    end_byte: int
    start_line: int
    start_col: int
    end_line: int
    end_col: int

    @classmethod
    def from_offsets(cls, text: str, path: str, start: int, end: int) -> "Span":
        """Build a span from 0-based character offsets ``[start, end)`` into ``text``."""
        start = max(0, min(start, len(text)))
        end = max(start, min(end, len(text)))
        start_line, start_col = _line_col(text, start)
        end_line, end_col = _line_col(text, end)
        return cls(
            path=path,
            start_byte=start,
            end_byte=end,
            start_line=start_line,
            start_col=start_col,
            end_line=end_line,
            end_col=end_col,
        )

    @classmethod
    def from_lines(cls, path: str, start_line: int, end_line: int) -> "Span":
        """A whole-line span when no offsets are known (offsets are set to 0)."""
        return cls(
            path=path,
            start_byte=0,
            end_byte=0,
            start_line=start_line,
            start_col=1,
            end_line=end_line,
            end_col=1,
        )

    def within(self, parent: "Span") -> "Span":
        """Map a span inside an embedded block (a notebook cell, a log event) to the host file.

        ``self`` is relative to the embedded text, whose first character sits at ``parent``'s
        start. Offsets and lines shift; columns on the first line shift by the parent's column.
        """
        start_col = self.start_col + (parent.start_col - 1 if self.start_line == 1 else 0)
        end_col = self.end_col + (parent.start_col - 1 if self.end_line == 1 else 0)
        return Span(
            path=parent.path,
            start_byte=parent.start_byte + self.start_byte,
            end_byte=parent.start_byte + self.end_byte,
            start_line=parent.start_line + self.start_line - 1,
            start_col=start_col,
            end_line=parent.start_line + self.end_line - 1,
            end_col=end_col,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "start_byte": self.start_byte,
            "end_byte": self.end_byte,
            "start_line": self.start_line,
            "start_col": self.start_col,
            "end_line": self.end_line,
            "end_col": self.end_col,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Span":
        return cls(**{k: data[k] for k in cls.__slots__})


def make_excerpt(text: str, start: int, end: int, context_lines: int = 0) -> str:
    """The lines of ``text`` covering ``[start, end)`` plus ``context_lines`` either side.

    Clipped to :data:`MAX_EXCERPT_CHARS` so that a report stands alone after the run dir is
    deleted without carrying whole files.
    """
    line_start = text.rfind("\n", 0, start) + 1
    for _ in range(context_lines):
        if line_start == 0:
            break
        line_start = text.rfind("\n", 0, line_start - 1) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end == -1 else line_end
    for _ in range(context_lines):
        if line_end >= len(text):
            break
        nxt = text.find("\n", line_end + 1)
        line_end = len(text) if nxt == -1 else nxt
    excerpt = text[line_start:line_end]
    if len(excerpt) > MAX_EXCERPT_CHARS:
        excerpt = excerpt[: MAX_EXCERPT_CHARS - 1] + "…"
    return excerpt


@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    """One location that supports a finding.

    ``excerpt`` holds the matched text (with a little context), stored so the report stands
    alone; ``label`` names the capture or role (``"call"``, ``"kernel fragment"``).
    """

    span: Span
    excerpt: str
    label: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.span.path,
            "start_line": self.span.start_line,
            "end_line": self.span.end_line,
            "span": self.span.to_dict(),
            "excerpt": self.excerpt,
            "label": self.label,
        }


_WS = re.compile(r"\s+")


def finding_fingerprint(rule_id: str, path: str, excerpt: str) -> str:
    """Stable id of a finding: sha256 over rule id, path and the whitespace-normalised excerpt.

    Line numbers are deliberately left out so that a reviewer's decision survives edits that
    shift lines (bandit's baseline idea).
    """
    normalised = _WS.sub(" ", excerpt).strip()
    digest = hashlib.sha256(f"{rule_id}\0{path}\0{normalised}".encode("utf-8", errors="surrogatepass"))
    return digest.hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """A rule violation (or suspicion) with its evidence.

    ``evidence[0]`` is the primary location. ``fingerprint`` identifies the finding across
    runs of the tool and does not depend on line numbers.
    """

    rule_id: str
    title: str
    category: str
    severity: Severity
    confidence: Confidence
    message: str
    evidence: tuple[Evidence, ...]
    run_id: str = ""
    fingerprint: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    #: A reviewer's decision from a baseline file (:mod:`mleaudit.audit.review`), ``None`` when undecided.
    review: Mapping[str, Any] | None = None
    #: Who produced the evidence: ``agent``, ``scaffold``, ``operator`` or ``unknown``
    #: (:class:`mleaudit.audit.units.Actor`; DESIGN decision 12).
    actor: str = "unknown"

    @property
    def dismissed(self) -> bool:
        """A reviewer marked this finding a false alarm (it no longer counts for the verdict)."""
        return self.review is not None and self.review.get("decision") == "dismissed"

    def sort_key(self) -> tuple:
        """Deterministic order: severity desc, rule id, path, start offset."""
        first = self.evidence[0].span if self.evidence else None
        return (
            -int(self.severity),
            self.rule_id,
            first.path if first else "",
            first.start_line if first else 0,
            first.start_byte if first else 0,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule_id": self.rule_id,
            "title": self.title,
            "category": self.category,
            "severity": self.severity.label,
            "confidence": self.confidence.label,
            "message": self.message,
            "evidence": [e.to_dict() for e in self.evidence],
            "fingerprint": self.fingerprint,
            "metadata": dict(self.metadata),
            "actor": self.actor,
            **({"review": dict(self.review)} if self.review is not None else {}),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Skipped:
    """A file the audit could not read, with the reason (listed in ``report.skipped``)."""

    path: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}
