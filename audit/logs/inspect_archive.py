"""Inspect ``.eval`` archives: the samples of a zip archive, read within hard limits.

An ``.eval`` file is a zip archive (``header.json``, ``samples/<id>_epoch_<n>.json`` with one
sample each, ``_journal/`` while running). :func:`read_eval_archive` reads every member under
``samples/`` whose name ends in ``.json`` (any case), whatever other characters the name holds
(spaces, colons, subfolders, very long names: member names are only names, nothing is ever
extracted to disk), with hard limits checked before and while reading (zip bombs: declared and
actual sizes, member count, total bytes), and gives events whose span path is
``<archive>!/<member>``, the location of the member inside the archive. Every member that is
not read (a damaged, encrypted or oversized member, one that is not JSON, or any member other
than the samples and Inspect's own ``header.json``, ``reductions.json``, ``summaries.json`` and
``_journal/``) is listed with the reason. Each sample is read as in a JSON log
(:mod:`mleaudit.audit.logs.inspect_eval`).

References: ``inspect_ai/log/_recorders/eval.py`` (archive layout), https://inspect.aisi.org.uk/eval-logs.html.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass

from mleaudit.audit.logs.common import EventList, EventLimitReached
from mleaudit.audit.logs.inspect_eval import EvalDocument, sample_events
from mleaudit.audit.logs.jsonregions import json_nesting_problem, load_json, surrogate_note
from mleaudit.audit.logs.shadowed import read_hidden_members
from mleaudit.audit.units import LogEvent
from mleaudit.grading.untrusted_json import ShadowedList, collect_shadowed

__all__ = [
    "MAX_ARCHIVE_MEMBERS",
    "MAX_MEMBER_BYTES",
    "MAX_ARCHIVE_BYTES",
    "MAX_LISTED_MEMBERS",
    "EvalArchive",
    "read_eval_archive",
]

#: Archive limits, checked on the zip's directory before anything is inflated and again on the
#: bytes actually inflated (declared sizes can lie): entries looked at, bytes of one member,
#: bytes of all members together. A sample of a long agent run is a few MB.
MAX_ARCHIVE_MEMBERS = 10_000
MAX_MEMBER_BYTES = 20 * 1024 * 1024
MAX_ARCHIVE_BYTES = 64 * 1024 * 1024

#: Members Inspect writes besides the samples, which hold no agent messages: not read, not a gap.
_METADATA_MEMBERS = frozenset({"header.json", "reductions.json", "summaries.json"})
_METADATA_FOLDERS = ("_journal/",)
#: Unread members listed one by one; past this many, the rest are counted in one sentence.
MAX_LISTED_MEMBERS = 100


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalArchive:
    """What :func:`read_eval_archive` read from an ``.eval`` file.

    Attributes
    ----------
    documents : tuple of (str, str)
        ``(virtual path, text)`` of each sample member read; the virtual path is
        ``<archive path>!/<member name>`` and is the ``span.path`` of its events.
    events : tuple of LogEvent
        All samples' events, indexed from 0 across the archive.
    problems : tuple of str
        What was not read of the archive as a whole and why (not a zip, the member-count
        limit, members past :data:`MAX_LISTED_MEMBERS` counted together), one sentence each.
    unread : tuple of (str, str)
        ``(member name, reason)`` of each member not read, or read only in part (a sample cut
        short, the event limit), in archive order.
    notes : tuple of str
        Members read with a caveat (not valid UTF-8, lone surrogate escapes), one sentence each.
    """

    documents: tuple[tuple[str, str], ...]
    events: tuple[LogEvent, ...]
    problems: tuple[str, ...] = ()
    unread: tuple[tuple[str, str], ...] = ()
    notes: tuple[str, ...] = ()


def _inflate(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    """A member's bytes, refusing more than ``limit`` whatever its directory entry says."""
    with archive.open(info) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"inflates past {limit} bytes")
    return data


def _is_sample(name: str) -> bool:
    return name.startswith("samples/") and name.lower().endswith(".json") and len(name) > len("samples/.json")


def _is_metadata(name: str) -> bool:
    return name in _METADATA_MEMBERS or name.startswith(_METADATA_FOLDERS)


def _decode_member(raw: bytes) -> tuple[str, str | None]:
    """A member's text (UTF-8, BOM dropped, invalid bytes replaced) and a note when not clean."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        first = exc.start
    note = f"not valid UTF-8 (invalid bytes replaced with U+FFFD, the first at byte {first})"
    return raw.decode("utf-8", errors="replace"), note


class _Unread:
    """Collects unread members: the first :data:`MAX_LISTED_MEMBERS` one by one, then a count."""

    def __init__(self) -> None:
        self.listed: list[tuple[str, str]] = []
        self.more = 0
        self.first_more = ""

    def add(self, member: str, reason: str) -> None:
        if len(self.listed) < MAX_LISTED_MEMBERS:
            self.listed.append((member, reason))
            return
        if not self.more:
            self.first_more = member
        self.more += 1

    def summary(self) -> str | None:
        if not self.more:
            return None
        return (f"{self.more} more member(s) not read, from {self.first_more!r} on (only the first "
                f"{MAX_LISTED_MEMBERS} unread members are listed one by one)")


def read_eval_archive(path: str, data: bytes) -> EvalArchive:
    """Read the samples of an Inspect ``.eval`` archive, within the archive limits.

    Parameters
    ----------
    path : str
        The archive's POSIX path relative to the run root.
    data : bytes
        The archive's bytes (at most the run's file-size cap).

    Returns
    -------
    EvalArchive
        Events of every sample member (``samples/**.json``, any case) read, in archive order.
        Members past :data:`MAX_ARCHIVE_MEMBERS`, larger than :data:`MAX_MEMBER_BYTES`
        (declared or inflated), past :data:`MAX_ARCHIVE_BYTES` in total, damaged (bad CRC,
        bad header, cut short), encrypted, compressed with an unsupported method, not JSON,
        nested deeper than :data:`~mleaudit.audit.logs.jsonregions.MAX_JSON_DEPTH`, or not samples at all
        are listed in ``unread`` (member by member) or ``problems`` (the archive as a whole);
        nothing raises.
    """
    problems: list[str] = []
    unread = _Unread()
    notes: list[str] = []
    events = EventList()
    documents: list[tuple[str, str]] = []
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - a damaged archive is reported, whatever zipfile raises
        return EvalArchive(documents=(), events=(), problems=(f"not a readable zip archive: {_describe(exc)}",))
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_ARCHIVE_MEMBERS:
            problems.append(f"{len(infos)} archive entries; only the first {MAX_ARCHIVE_MEMBERS} were looked at, "
                            f"the other {len(infos) - MAX_ARCHIVE_MEMBERS} were not read")
            infos = infos[:MAX_ARCHIVE_MEMBERS]
        names = {info.filename for info in infos}
        if not names & {"header.json", "_journal/start.json"} and not any(n.startswith("samples/") for n in names):
            return EvalArchive(documents=(), events=(),
                               problems=("not an Inspect eval archive (no header.json or samples/)", *problems))
        samples = []
        for info in infos:
            name = info.filename
            if info.is_dir() or _is_metadata(name):
                continue
            if _is_sample(name):
                samples.append(info)
            else:
                unread.add(name, "not an Inspect sample member (samples/*.json); not read")
        if not samples:
            problems.append("no samples/*.json in the archive: the agent's messages are not in it")
        total = 0
        used: dict[str, int] = {}
        for number, info in enumerate(samples):
            member = info.filename
            if info.flag_bits & 0x1:
                unread.add(member, "encrypted member; not read")
                continue
            if info.file_size > MAX_MEMBER_BYTES:
                unread.add(member, f"{info.file_size} bytes inflated is over the {MAX_MEMBER_BYTES}-byte member limit; "
                                   "not read")
                continue
            if total + info.file_size > MAX_ARCHIVE_BYTES:
                for later in samples[number:]:
                    unread.add(later.filename, f"not read: over the {MAX_ARCHIVE_BYTES}-byte archive limit")
                break
            try:
                raw = _inflate(archive, info, min(MAX_MEMBER_BYTES, MAX_ARCHIVE_BYTES - total))
            except Exception as exc:  # noqa: BLE001 - bad CRC, bad header, zlib errors, encryption ...
                unread.add(member, f"not read ({_describe(exc)})")
                continue
            total += len(raw)
            text, decoding = _decode_member(raw)
            if decoding is not None:
                notes.append(f"{member}: {decoding}")
            nesting = json_nesting_problem(text)
            if nesting is not None:
                unread.add(member, f"{nesting}; not read")
                continue
            with collect_shadowed() as hidden:
                sample, broke = load_json(text)
            if not isinstance(sample, dict):
                why = broke.describe() if broke else "wrong type"
                unread.add(member, f"not a JSON sample object ({why}); not read")
                continue
            seen = used.get(member, 0)
            used[member] = seen + 1
            virtual = f"{path}!/{member}" if not seen else f"{path}!/{member}#{seen + 1}"
            documents.append((virtual, text))
            remark = surrogate_note(text)
            if remark is not None:
                notes.append(f"{member}: {remark}")
            doc = EvalDocument(virtual, text, events)
            start = len(text) - len(text.lstrip())
            try:
                with collect_shadowed() as hidden_inside:  # JSON held in strings (tool-call arguments)
                    sample_events(doc, sample, (start, len(text)), "")
                hidden = ShadowedList.joined(hidden, hidden_inside)
            except EventLimitReached as exc:
                unread.add(member, f"event limit of {exc.limit} reached at line {exc.event.span.start_line}; the rest "
                                   "of the member was not read")
                for later in samples[number + 1:]:
                    unread.add(later.filename, f"not read: the event limit of {exc.limit} was reached before it")
                break
            if broke is not None:
                unread.add(member, f"JSON cut short or damaged at {broke.describe()}; read up to there")
            if hidden:
                hidden_read, hidden_said = read_hidden_members(virtual, text, hidden, len(events))
                try:
                    for event in hidden_read:
                        events.append(event)
                except EventLimitReached as exc:
                    hidden_said.append(f"event limit of {exc.limit} reached in its hidden values")
                for sentence in hidden_said:
                    unread.add(member, sentence)
    summary = unread.summary()
    if summary is not None:
        problems.append(summary)
    return EvalArchive(documents=tuple(documents), events=tuple(events), problems=tuple(problems),
                       unread=tuple(unread.listed), notes=tuple(notes))


def _describe(exc: Exception) -> str:
    """``"BadZipFile: Bad CRC-32 for file 'x'"``: the exception's class and message."""
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
