""":func:`assess_provenance`: the run's one provenance outcome, with its evidence (see :mod:`mleaudit.audit.checks.provenance`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from mleaudit.audit.checks.evidence import (
    action_events,
    event_evidence,
    file_line_evidence,
    unit_evidence,
    unit_location,
)
from mleaudit.audit.checks.provenance.executed import (
    abbreviated_source,
    executed_elsewhere,
    module_sources,
    run_by_executed_files,
)
from mleaudit.audit.checks.provenance.traces import (
    SUBMISSION_TARGET,
    Site,
    count_typed_rows,
    cut_logs,
    data_rows,
    file_name,
    last_mention,
    normalise_code,
    notebook_ran,
    printed_counts,
    printed_headers,
    targets_submission,
)
from mleaudit.audit.checks.tables import CsvHead, CsvReadError, read_csv_head
from mleaudit.audit.checks.writes import find_write_sites, scripts_run
from mleaudit.audit.model import Evidence
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.sandbox_record import RECORD_PATH, is_sandbox_command
from mleaudit.audit.units import Actor, CodeUnit, LogEvent, LogEventKind

#: Outcomes of :func:`assess_provenance`, most serious first.
OUTCOMES = ("typed", "unlogged", "unconfirmed", "written", "unverifiable", "absent")

_WRITE_KINDS_UNRESOLVED = frozenset({"to_csv", "open", "write_text"})
_SCRIPT_NAME = re.compile(r"[\"']?script_name[\"']?\s*[:=]\s*[\"']([^\"'\n]+)[\"']")

_QUOTED_TEXT = re.compile(r"[\"']([^\"'\n]+)[\"']")


@dataclass(frozen=True, slots=True, kw_only=True)
class Provenance:
    """What :func:`assess_provenance` found for one run.

    Attributes
    ----------
    outcome : str
        One of :data:`OUTCOMES`.
    detail : str
        One sentence for a reviewer: the writer found, or why none counts.
    searched : str
        What was searched ("9 commands, 4 code blocks and 2 tool calls in logs/agent.log; 2 code files").
    evidence : tuple of Evidence
        The write site, the typed rows, or the submission's header line.
    typed_rows : int
        How many of the file's data rows appear in agent-typed text (0 when not ``typed``).
    """

    outcome: str
    detail: str
    searched: str = ""
    evidence: tuple[Evidence, ...] = ()
    typed_rows: int = 0


#: A tool call that writes files: its name or arguments say so (``write_file``, ``save``,
#: ``str_replace_editor create``, ``copy``, ``upload``), as a word of its text.
_WRITING_TOOL = re.compile(r"(?i)(?<![a-z])(?:write|save|create|edit|copy|cp|move|mv|put|upload|submit|str_replace|"
                           r"insert|append|overwrite|dump|export)(?![a-z])")
_SUBMISSION_FILE = re.compile(r"(?i)(?<![\w-])submission\.csv\b")


def _tool_call_writer(actions: list[LogEvent]) -> tuple[LogEvent, int, int] | None:
    """The last tool call that writes the submission file: a TOOL_CALL event whose text names
    ``submission.csv`` and a writing verb (:data:`_WRITING_TOOL`). Returns ``(event, start, end)``
    of the file name in the event's text, else ``None``."""
    found = None
    for event in actions:
        if event.kind is not LogEventKind.TOOL_CALL or "submission" not in event.text.lower():
            continue
        head = event.text[:100_000]
        target = _SUBMISSION_FILE.search(head)
        if target is not None and _WRITING_TOOL.search(head) is not None:
            found = (event, target.start(), target.end())
    return found


def provenance_view(ctx: RunContext) -> RunContext:
    """``ctx`` without the operator's code and events, except the sandbox's recorded agent command
    (the rules of this check judge the operator for that command only)."""
    units = tuple(u for u in ctx.code_units if u.actor is not Actor.OPERATOR or is_sandbox_command(u))
    events = tuple(e for e in ctx.log_events if e.actor is not Actor.OPERATOR or is_sandbox_command(e))
    if len(units) == len(ctx.code_units) and len(events) == len(ctx.log_events):
        return ctx
    return replace(ctx, code_units=units, log_events=events, skipped=ctx.skipped, memo=ctx.memo)


def _searched(ctx: RunContext, file_units: list[CodeUnit]) -> str:
    counts = {LogEventKind.COMMAND: 0, LogEventKind.CODE: 0, LogEventKind.TOOL_CALL: 0}
    logs: list[str] = []
    for event in action_events(ctx):
        counts[event.kind] += 1
        if event.span.path not in logs:
            logs.append(event.span.path)
    files = sorted({u.path for u in file_units})

    def count(n: int, noun: str) -> str:
        return f"{n} {noun}{'' if n == 1 else 's'}"

    text = (f"{count(counts[LogEventKind.COMMAND], 'command')}, {count(counts[LogEventKind.CODE], 'code block')} "
            f"and {count(counts[LogEventKind.TOOL_CALL], 'tool call')} in {', '.join(logs) or 'no log'}")
    return text + f"; {count(len(files), 'code file')}"


def assess_provenance(ctx: RunContext, *, min_typed_rows: int = 3) -> Provenance:
    """Decide where the run's submission came from.

    Parameters
    ----------
    ctx : RunContext
        Needs ``submission_path``, ``code_units`` and ``log_events``.
    min_typed_rows : int
        Data rows of the submission that must appear verbatim in agent-typed text for the
        outcome ``typed`` (rows shorter than 6 characters are ignored as too common).

    Returns
    -------
    Provenance
        See the module docstring for the outcomes.
    """
    if ctx.submission_path is None or not Path(ctx.submission_path).is_file():
        return Provenance(outcome="absent", detail="the run has no submission file")
    ctx = provenance_view(ctx)
    submission = Path(ctx.submission_path)
    rel = ctx.relative(submission)
    header_evidence = file_line_evidence(ctx, submission, 0, "submission header")
    head: CsvHead | None
    notes: list[str] = []
    try:
        head = read_csv_head(submission, label=rel)
    except CsvReadError as exc:
        head = None
        notes.append(f"its content could not be read ({exc})")
        ctx.skip(rel, f"submission provenance: {exc}")

    actions = action_events(ctx)
    log_units = [u for u in ctx.code_units if u.source == "log"]
    file_units = [u for u in ctx.code_units if u.source != "log"]
    searched = _searched(ctx, file_units)
    if not actions:
        return Provenance(outcome="unverifiable", searched=searched, evidence=(header_evidence,),
                          detail=f"not checked, the run has no agent log of commands or code to trace {rel} to")

    # --- typed rows ---------------------------------------------------------------------
    if head is not None:
        rows = data_rows(head)
        enough = min(min_typed_rows, max(1, len(rows)))
        if rows:
            typed: dict[str, tuple[int, int, int]] = {}  # by text: logs repeat their tool outputs

            def typed_rows(text: str) -> tuple[int, int, int]:
                found = typed.get(text)
                if found is None:
                    found = typed[text] = count_typed_rows(text, rows)
                return found

            for event in actions:
                count, start, end = typed_rows(event.text)
                if count >= enough:
                    evidence = event_evidence(event, "typed rows", start, end)
                    where = f"{event.span.path} {event.kind.value} event {event.index}"
                    return Provenance(
                        outcome="typed", searched=searched, evidence=(evidence, header_evidence), typed_rows=count,
                        detail=f"{count} of its data rows appear verbatim in agent-typed text ({where})")
            for unit in file_units:
                count, start, end = typed_rows(unit.text)
                if count >= enough:
                    evidence = unit_evidence(unit, start, end, "typed rows")
                    return Provenance(
                        outcome="typed", searched=searched, evidence=(evidence, header_evidence), typed_rows=count,
                        detail=f"{count} of its data rows appear verbatim in {unit_location(unit, start)}")

    # --- write sites ----------------------------------------------------------------------
    # Logs repeat one script at every step and name one file many times: each text is
    # normalised, and each name looked for in the actions, once.
    normalised: dict[str, str] = {}

    def normal(text: str) -> str:
        found = normalised.get(text)
        if found is None:
            found = normalised[text] = normalise_code(text)
        return found

    mentioned: dict[str, tuple[str, int] | None] = {}

    def mention(name: str) -> tuple[str, int] | None:
        if name not in mentioned:
            mentioned[name] = last_mention(name, actions)
        return mentioned[name]

    logged_code: dict[str, tuple[str, int]] = {}
    for unit in log_units:
        if unit.language == "python" and unit.origin is not None:
            logged_code[normal(unit.text)] = (unit.origin.path, unit.origin.start_byte)
    sites: list[Site] = []
    written_names: set[str] = set()
    for unit in ctx.code_units:
        when: tuple[str, int] | None
        if is_sandbox_command(unit):
            when = ("", 0)  # the command that started the run: before anything a log records
        elif unit.source == "log":
            when = (unit.origin.path, unit.origin.start_byte) if unit.origin is not None else (unit.path, 0)
        else:
            when = mention(PurePosixPath(unit.path).name)
            if when is None and unit.source == "notebook" and notebook_ran(Path(ctx.root), unit.path):
                when = (unit.path, 0)
            elif when is None and unit.source != "notebook":
                when = logged_code.get(normal(unit.text))
        ran = when is not None
        for site in find_write_sites(unit):
            # Every file name the destination may resolve to (os.path.join parts, f-string tails).
            # An in-place edit (`sed -i`) shows a change, not the file: what it edits is still
            # code the run does not contain.
            pieces = [] if site.kind == "edit" else [site.target.strip("'\" "), *_QUOTED_TEXT.findall(site.resolved)]
            for piece in pieces:
                base = PurePosixPath(piece.rsplit("}", 1)[-1]).name
                if base:
                    written_names.add(base)
            exact = targets_submission(site)
            if exact or (not site.literal and site.kind in _WRITE_KINDS_UNRESOLVED):
                sites.append(Site(unit=unit, site=site, ran=ran, exact=exact, when=when or ("", -1)))
    # In the order the logs run them, so the last one is the writer that left the file.
    sites.sort(key=lambda item: (item.when, item.site.start))

    def copied_from_unknown(item: Site) -> list[str]:
        if item.site.kind not in ("copy", "move"):
            return []
        unknown = []
        for source in item.site.sources:
            name = PurePosixPath(source.strip("'\" ")).name
            if not name or "/home/data" in source or "/input/" in source or source.startswith(("./input", "input/")):
                continue
            if name not in written_names and not SUBMISSION_TARGET.search(name):
                unknown.append(name)
        return unknown

    def describe(item: Site) -> str:
        target = item.site.target.strip()
        target = target if len(target) <= 80 else target[:77] + "..."
        return f"{item.site.kind} to `{target}` at {unit_location(item.unit, item.site.start)}"

    def site_evidence(item: Site, label: str) -> Evidence:
        return unit_evidence(item.unit, item.site.start, item.site.end, label)

    confirmed = [s for s in sites if s.ran and s.exact and not copied_from_unknown(s)]
    # The sandbox ran nothing but its command: what the command copies from a file nothing
    # executed writes came from outside the run. Such a copy is no writer (see the module doc).
    placed = [s for s in sites if s.ran and s.exact and is_sandbox_command(s.unit) and copied_from_unknown(s)]
    placed_ids = {id(s) for s in placed}
    sites = [s for s in sites if id(s) not in placed_ids]

    def placed_text(item: Site) -> str:
        names = ", ".join(copied_from_unknown(item))
        return (f"the sandbox's agent command ({RECORD_PATH} spec.command) copies it from {names}, which nothing "
                f"the run executed writes ({describe(item)})")

    # --- what the logs print about the file -------------------------------------------------
    mismatch = ""
    if head is not None:
        printed = printed_headers(ctx)
        if printed:
            event, line = printed[-1]
            columns = [c.strip() for c in line.split(",")]
            if columns != list(head.header) and not set(head.header) <= set(columns):
                mismatch = (f"the header the logs last print ({event.span.path} {event.kind.value} event "
                            f"{event.index}) has {len(columns)} columns that differ from the file's {len(head.header)}")
        counts = printed_counts(ctx)
        if counts and head.line_count is not None:
            if counts[-1] == head.line_count:
                notes.append(f"the logs print its line count ({counts[-1]})")
            else:
                notes.append(f"the logs last print {counts[-1]} lines, the file has {head.line_count}")

    def with_notes(text: str) -> str:
        return text + ("; " + "; ".join(notes) if notes else "")

    if confirmed and placed:
        best = confirmed[-1]
        return Provenance(outcome="unconfirmed", searched=searched,
                          evidence=(site_evidence(best, "write site"), site_evidence(placed[-1], "copy"), header_evidence),
                          detail=with_notes(f"{placed_text(placed[-1])}, although {describe(best)} writes it"))
    if confirmed and not mismatch:
        best = confirmed[-1]  # the last write is the one that left the file
        return Provenance(outcome="written", searched=searched, evidence=(site_evidence(best, "write site"),),
                          detail=with_notes(f"written by {describe(best)}"))
    if confirmed and mismatch:
        best = confirmed[-1]
        return Provenance(outcome="unconfirmed", searched=searched,
                          evidence=(site_evidence(best, "write site"), header_evidence),
                          detail=with_notes(f"{mismatch}, although {describe(best)} writes it"))
    if sites:
        item = sites[-1]
        if not item.ran:
            reason = f"the only writer is {describe(item)}, which the logs never show running"
        elif not item.exact:
            reason = f"the only candidate writer is {describe(item)}, whose path is computed elsewhere"
        else:
            names = ", ".join(copied_from_unknown(item))
            reason = f"it is copied by {describe(item)} from {names}, which no logged code writes"
        return Provenance(outcome="unconfirmed", searched=searched,
                          evidence=(site_evidence(item, "candidate writer"), header_evidence),
                          detail=with_notes(reason))

    tool_writer = _tool_call_writer(actions)
    if tool_writer is not None:
        # A tool (not code) wrote it, and the log does not show what the tool put there.
        event, start, end = tool_writer
        return Provenance(outcome="unconfirmed", searched=searched,
                          evidence=(event_evidence(event, "tool call", start, end), header_evidence),
                          detail=with_notes(f"no code writes it, but the tool call at {event.span.path}:"
                                            f"{event.span.start_line} ({event.kind.value} event {event.index}) "
                                            "writes to it, and the log does not show what it wrote"))

    available = {PurePosixPath(u.path).name for u in file_units} | written_names
    run_scripts: list[str] = []
    modules: list[str] = []
    launched: set[str] = set()  # what the sandbox's recorded command runs
    for unit in log_units:
        scripts, units_modules = executed_elsewhere(unit)
        scripts = scripts_run(unit) + scripts
        run_scripts.extend(scripts)
        modules.extend(units_modules)
        if is_sandbox_command(unit):
            launched.update(scripts)
            launched.update(f"{name} (python -m)" for name in units_modules)
    for event in actions:
        if event.kind is LogEventKind.TOOL_CALL:
            run_scripts.extend(file_name(m.group(1)) for m in _SCRIPT_NAME.finditer(event.text))
    run_by_executed_files(file_units, run_scripts, modules)
    missing = sorted({name for name in run_scripts if name not in available}
                     | {f"{name} (python -m)" for name in modules if not module_sources(name, file_units)})
    if missing:
        def listed(names: list[str]) -> str:
            return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")

        from_command = [name for name in missing if name in launched]
        from_logs = [name for name in missing if name not in launched]
        reasons = []
        if from_command:
            reasons.append(f"the sandbox's command ({RECORD_PATH} spec.command) runs code the run does not contain "
                           f"({listed(from_command)}; the agent's files at /home/agent are not copied into it)")
        if from_logs:
            reasons.append(f"the logs run scripts the run does not contain ({listed(from_logs)})")
        evidence = (header_evidence,)
        command = next((e for e in actions if is_sandbox_command(e)), None)
        if from_command and command is not None:
            evidence = (event_evidence(command, "sandbox command"), header_evidence)
        text = "no write site found, but " + " and ".join(reasons)
        if placed:
            text += f"; that code may write {', '.join(copied_from_unknown(placed[-1]))}, which the command copies to it"
        return Provenance(outcome="unconfirmed", searched=searched, evidence=evidence, detail=with_notes(text))
    cut = cut_logs(ctx)
    if cut is not None:
        # The writer may be in what the logs lost: no claim either way.
        return Provenance(outcome="unverifiable", searched=searched, evidence=(header_evidence,),
                          detail=with_notes(f"unknown: nothing in the logs read writes {rel}, but {cut}, so its "
                                            "writer may be in the part that is missing"))
    partial = abbreviated_source(set(run_scripts), modules, file_units, log_units)
    if partial is not None:
        # The run executed code it shows only in part: the writer may be in what is left out.
        unit, start, name = partial
        line_end = unit.text.find("\n", start)
        end = len(unit.text) if line_end == -1 else line_end
        return Provenance(outcome="unverifiable", searched=searched,
                          evidence=(unit_evidence(unit, start, end, "abbreviated source"), header_evidence),
                          detail=with_notes(f"unknown: the run executed {name}, whose source here is abbreviated "
                                            f"({unit_location(unit, start)}), so the writer of {rel} may be in the "
                                            "part not shown"))
    if placed:
        # Everything the run executed is visible and only the sandbox's command puts the file in place.
        return Provenance(outcome="unlogged", searched=searched,
                          evidence=(site_evidence(placed[-1], "copy"), header_evidence),
                          detail=with_notes(f"{placed_text(placed[-1])}: the file was placed in the run, not "
                                            "computed by it"))
    return Provenance(outcome="unlogged", searched=searched, evidence=(header_evidence,),
                      detail=with_notes(f"nothing the agent ran writes {rel} or its folder"))
