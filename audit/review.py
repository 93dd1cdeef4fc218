"""Review decisions: a reviewer confirms or dismisses a finding once, in a baseline file the audit honours.

The baseline is a JSON file meant to be kept in version control next to the run group and read
in diffs: ``{"version": 1, "decisions": [...]}`` with one object per decision, sorted by
fingerprint, keys in a fixed order, two-space indentation and a final newline. A decision names a
finding by its fingerprint (:func:`mleaudit.audit.model.finding_fingerprint`: rule id, path and the
whitespace-normalised excerpt, no line numbers), so it survives edits that shift lines (the idea
of bandit's baseline). A decision recorded with a ``run_id`` applies to that run only; without
one it applies wherever the fingerprint occurs (e.g. several seeds sharing the same file).

Decisions live outside the audited run: nothing inside a run (comments, files) can dismiss a
finding. Dismissed findings stay in the report, marked as such, and no longer count towards the
verdict (:func:`mleaudit.audit.report.decide_verdict`).

Several reviewers (or scripts) may record decisions at once: :func:`record_decision` holds a
lock file ``<baseline>.lock`` (``filelock``) around reading, changing and writing the baseline,
and the file is replaced whole (a temporary file renamed over it), so no decision is lost and a
reader never sees half a file.
"""

from __future__ import annotations

import datetime as _dt
import getpass
import json
import os
import re
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from mleaudit.grading import untrusted_json

from mleaudit.audit.errors import AuditError
from mleaudit.audit.model import Finding

__all__ = [
    "BASELINE_VERSION",
    "DECISIONS",
    "Baseline",
    "BaselineError",
    "Decision",
    "apply_baseline",
    "load_baseline",
    "record_decision",
    "resolve_fingerprint",
    "save_baseline",
]

#: Format version of the baseline file; bumped when a field changes meaning.
BASELINE_VERSION = 1
#: The decisions a reviewer can record.
DECISIONS = ("confirmed", "dismissed")
_FINGERPRINT = re.compile(r"^[0-9a-f]{64}$")
_FIELDS = ("fingerprint", "decision", "note", "rule_id", "run_id", "location", "decided_by", "decided_at")
#: A baseline file larger than this is refused (a decision takes a few hundred bytes).
MAX_BASELINE_BYTES = 64 * 1024 * 1024
#: Seconds :func:`record_decision` waits for another writer of the same baseline.
LOCK_TIMEOUT = 120.0


class BaselineError(AuditError):
    """A baseline file cannot be read or a decision cannot be recorded."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """One reviewer decision.

    Parameters
    ----------
    fingerprint : str
        The finding's fingerprint (64 hex digits).
    decision : str
        ``confirmed`` (a real violation) or ``dismissed`` (a false alarm).
    note : str
        Why; shown next to the finding in every later report.
    rule_id, run_id, location : str or None
        Context recorded for readers of the file; ``run_id`` also scopes the decision.
    decided_by : str
        Who decided (the login name unless given).
    decided_at : str
        When, ISO 8601 in UTC.
    """

    fingerprint: str
    decision: str
    note: str
    rule_id: str | None = None
    run_id: str | None = None
    location: str | None = None
    decided_by: str = ""
    decided_at: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in _FIELDS}

    def applies_to(self, fingerprint: str, run_id: str | None) -> bool:
        """Whether this decision covers a finding with ``fingerprint`` in run ``run_id``."""
        return self.fingerprint == fingerprint and (self.run_id is None or self.run_id == run_id)


@dataclass(frozen=True, slots=True)
class Baseline:
    """All decisions of a baseline file, sorted by (fingerprint, run id)."""

    decisions: tuple[Decision, ...] = ()

    def lookup(self, fingerprint: str, run_id: str | None) -> Decision | None:
        """The decision for a finding: one scoped to its run wins over a global one."""
        matching = [d for d in self.decisions if d.applies_to(fingerprint, run_id)]
        matching.sort(key=lambda d: d.run_id is None)
        return matching[0] if matching else None

    def with_decision(self, decision: Decision) -> "Baseline":
        """A new baseline where ``decision`` replaces any earlier one with the same fingerprint and scope."""
        kept = [d for d in self.decisions if (d.fingerprint, d.run_id) != (decision.fingerprint, decision.run_id)]
        kept.append(decision)
        kept.sort(key=lambda d: (d.fingerprint, d.run_id or ""))
        return Baseline(tuple(kept))

    def to_dict(self) -> dict[str, Any]:
        return {"version": BASELINE_VERSION, "decisions": [d.to_dict() for d in self.decisions]}


def _decision_from(record: Any, where: str) -> Decision:
    if not isinstance(record, dict):
        raise BaselineError(f"{where}: expected an object")
    unknown = sorted(set(record) - set(_FIELDS))
    if unknown:
        raise BaselineError(f"{where}: unknown field(s) {', '.join(unknown)}")
    fingerprint = record.get("fingerprint")
    if not isinstance(fingerprint, str) or not _FINGERPRINT.match(fingerprint):
        raise BaselineError(f"{where}: field 'fingerprint' must be 64 lowercase hex digits")
    decision = record.get("decision")
    if decision not in DECISIONS:
        raise BaselineError(f"{where}: field 'decision' must be one of {', '.join(DECISIONS)}, not {decision!r}")
    note = record.get("note")
    if not isinstance(note, str):
        raise BaselineError(f"{where}: field 'note' must be a string")
    values = {}
    for name in ("rule_id", "run_id", "location", "decided_by", "decided_at"):
        value = record.get(name)
        if value is not None and not isinstance(value, str):
            raise BaselineError(f"{where}: field {name!r} must be a string or null")
        values[name] = value
    return Decision(fingerprint=fingerprint, decision=decision, note=note, rule_id=values["rule_id"],
                    run_id=values["run_id"], location=values["location"], decided_by=values["decided_by"] or "",
                    decided_at=values["decided_at"] or "")


def load_baseline(path: str | os.PathLike[str], *, missing_ok: bool = False) -> Baseline:
    """Read a baseline file.

    Parameters
    ----------
    path : path
    missing_ok : bool
        Return an empty baseline when the file does not exist (for recording the first decision).

    Returns
    -------
    Baseline

    Raises
    ------
    BaselineError
        Unreadable file, invalid JSON, unsupported version, or a malformed decision (named by its
        index and field).
    """
    path = Path(path)
    if not path.exists():
        if missing_ok:
            return Baseline()
        raise BaselineError(f"{path}: baseline file does not exist")
    try:
        with path.open("rb") as stream:
            raw = stream.read(MAX_BASELINE_BYTES + 1)
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read ({exc})") from exc
    if len(raw) > MAX_BASELINE_BYTES:
        raise BaselineError(f"{path}: larger than {MAX_BASELINE_BYTES // (1024 * 1024)} MiB; not a baseline file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BaselineError(f"{path}: cannot read ({exc})") from exc
    try:
        data = untrusted_json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from exc
    if not isinstance(data, dict) or data.get("version") != BASELINE_VERSION or not isinstance(data.get("decisions"), list):
        raise BaselineError(f"{path}: expected {{\"version\": {BASELINE_VERSION}, \"decisions\": [...]}}")
    decisions = [_decision_from(record, f"{path}: decisions[{i}]") for i, record in enumerate(data["decisions"])]
    baseline = Baseline()
    for decision in decisions:
        baseline = baseline.with_decision(decision)
    return baseline


def _new_file_mode(path: Path) -> int:
    """The mode of the file being replaced, or what the umask gives a new file."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0o022)
        os.umask(mask)
        return 0o666 & ~mask


def save_baseline(baseline: Baseline, path: str | os.PathLike[str]) -> None:
    """Write a baseline file atomically (a temporary file, synced, renamed over the old one).

    Call it under the baseline's lock (:func:`record_decision` does) when other writers may run.

    Raises
    ------
    BaselineError
        The folder does not exist or is not writable.
    """
    path = Path(path)
    text = json.dumps(baseline.to_dict(), indent=2, ensure_ascii=False) + "\n"
    temporary = None
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or Path("."))
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, _new_file_mode(path))
        os.replace(temporary, path)
        temporary = None
    except OSError as exc:
        raise BaselineError(f"cannot write the baseline {path}: {exc.strerror or exc}") from exc
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass


def baseline_lock_path(path: str | os.PathLike[str]) -> Path:
    """The lock file of a baseline: ``<baseline>.lock`` beside it."""
    path = Path(path)
    return path.with_name(path.name + ".lock")


def record_decision(path: str | os.PathLike[str], decision: "Decision", *, timeout: float = LOCK_TIMEOUT) -> Baseline:
    """Add ``decision`` to the baseline at ``path`` (created if missing), safe against concurrent writers.

    The read, the change and the write happen while holding ``<baseline>.lock``, so two
    reviewers recording decisions at the same moment both keep theirs; the file is replaced
    atomically (:func:`save_baseline`).

    Parameters
    ----------
    path : path
    decision : Decision
    timeout : float
        Seconds to wait for another writer.

    Returns
    -------
    Baseline
        The baseline as written.

    Raises
    ------
    BaselineError
        The baseline is malformed, the lock is not obtained in time, or the file cannot be written.
    """
    from filelock import FileLock, Timeout

    path = Path(path)
    lock = FileLock(str(baseline_lock_path(path)), timeout=timeout)
    try:
        with lock:
            updated = load_baseline(path, missing_ok=True).with_decision(decision)
            save_baseline(updated, path)
    except Timeout:
        raise BaselineError(f"{path}: another process has held {baseline_lock_path(path).name} for {timeout:.0f} s; "
                            "try again") from None
    except OSError as exc:  # the lock file cannot be created
        raise BaselineError(f"cannot lock the baseline {path}: {exc.strerror or exc}") from exc
    return updated


def new_decision(fingerprint: str, decision: str, note: str, *, finding: Mapping[str, Any] | None = None,
                 run_id: str | None = None, decided_by: str | None = None) -> Decision:
    """A decision stamped with who and when; context (rule, location) taken from ``finding``.

    Raises
    ------
    BaselineError
        Unknown decision, empty note, or a fingerprint that is not 64 hex digits.
    """
    if decision not in DECISIONS:
        raise BaselineError(f"decision must be one of {', '.join(DECISIONS)}")
    if not note.strip():
        raise BaselineError("a decision needs a note saying why")
    if not _FINGERPRINT.match(fingerprint):
        raise BaselineError(f"{fingerprint!r} is not a full fingerprint (64 hex digits); pass --from RUN_OR_REPORT to use a prefix")
    location = None
    rule_id = None
    if finding is not None:
        rule_id = finding.get("rule_id")
        evidence = finding.get("evidence") or []
        if evidence:
            first = evidence[0]
            location = f"{first.get('path')}:{first.get('start_line')}" if first.get("start_line") else first.get("path")
    if decided_by is None:
        try:
            decided_by = getpass.getuser()
        except (KeyError, OSError):
            decided_by = ""
    now = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
    return Decision(fingerprint=fingerprint, decision=decision, note=note.strip(), rule_id=rule_id, run_id=run_id,
                    location=location, decided_by=decided_by, decided_at=now)


def resolve_fingerprint(prefix: str, findings: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The one finding whose fingerprint starts with ``prefix`` (at least 6 hex digits).

    Raises
    ------
    BaselineError
        Too short, no match, or several findings match (they are listed).
    """
    prefix = prefix.strip().lower()
    if len(prefix) < 6 or not re.fullmatch(r"[0-9a-f]+", prefix):
        raise BaselineError(f"{prefix!r}: give at least 6 hex digits of the fingerprint")
    matches = {f["fingerprint"]: f for f in findings if str(f.get("fingerprint", "")).startswith(prefix)}
    if not matches:
        raise BaselineError(f"no finding has a fingerprint starting with {prefix}")
    if len(matches) > 1:
        listed = ", ".join(f"{fp[:12]} ({f.get('rule_id')})" for fp, f in sorted(matches.items()))
        raise BaselineError(f"{prefix} matches several findings: {listed}; give more digits")
    return next(iter(matches.values()))


def apply_baseline(findings: Iterable[Finding], baseline: Baseline, run_id: str | None) -> tuple[Finding, ...]:
    """Mark each finding with the reviewer's decision, if any (``Finding.review``).

    Returns
    -------
    tuple of Finding
        The same findings in the same order; decided ones carry ``review`` = the decision's
        fields (``decision``, ``note``, ``decided_by``, ``decided_at``, ``scope``).
    """
    marked = []
    for finding in findings:
        decision = baseline.lookup(finding.fingerprint, run_id)
        if decision is None:
            marked.append(finding)
            continue
        review = {
            "decision": decision.decision,
            "note": decision.note,
            "decided_by": decision.decided_by,
            "decided_at": decision.decided_at,
            "scope": "run" if decision.run_id is not None else "all runs",
        }
        marked.append(replace(finding, review=review))
    return tuple(marked)
