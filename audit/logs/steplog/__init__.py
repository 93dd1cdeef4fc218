"""Scaffold step logs: THOUGHT/ACTION/OBSERVATION records and MLAgentBench-style step blocks.

Two styles are read:

- timestamped records: a line that starts with a time (``2025-07-09 16:45:04,555``,
  ``2025-03-04T09:12:11Z``, ``[03:01:44]``), optionally a level (``INFO``) and a logger name
  (``agent:``), then a tag. A record runs until the next timestamped line. Tags are written
  ``ACTION``, ``ACTION:``, ``[ACTION]``, ``<ACTION>`` or ``Action:`` (any case with a colon or
  brackets, capitals without); ``THOUGHT``/``THINKING``/``REASONING``/``PLAN`` give a MESSAGE,
  ``OBSERVATION``/``OBS``/``RESULT``/``OUTPUT`` an OUTPUT, ``ACTION``/``TOOL_CALL``/``TOOL`` an
  action. What an action holds is read from the tool it names and where its input is
  (:func:`classify_action`):

  - the tool, then a colon and the input (``ACTION bash: ls``, ``ACTION write_file:`` with the
    target on the next line), or the tool alone on the header line and the input on the lines
    after it (``ACTION shell`` / ``ACTION: bash`` / ``[ACTION] python`` / ``Action: Execute``
    then the command or code): a shell tool (``bash``, ``shell``, ``execute``, ``run`` ...)
    gives a COMMAND, a Python tool (``python``, ``ipython`` ...) a CODE event, a file-write
    tool (``write_file`` ...) a CODE event for ``.py``/``.sh`` targets (content after the
    target, or after ``Path:``/``Content:`` labels; a placeholder such as ``(42 lines
    written)`` is no code), other tools a TOOL_CALL (tool name included); an input that is one
    fenced block is read without its fence, and its tag decides between command and code; a
    tool name may be wrapped (``(bash)``, ``**CmdRunAction (source=agent)**``) and its input
    may follow a ``COMMAND:``/``CODE:`` label line (OpenHands' console); a JSON input gives the
    commands and code its arguments hold (:func:`mleaudit.audit.logs.toolcalls.call_actions`) where the log
    writes them verbatim;
  - a command line (``ACTION: python -c "..."``, ``ACTION\\nnvidia-smi -L``): a COMMAND when
    it starts with a shell command word or a path, a CODE event when it reads as Python
    (``import``, ``def``, ``print(``), else a TOOL_CALL (``view_image a.jpg``, ``finish``); a
    shell or Python tool name followed on its line by its input (``execute_bash ls -la``) gives
    that input only when it reads as a command or code (``Execute the script "train.py".`` is a
    sentence: a TOOL_CALL).

  The same records without time stamps are read too when lines start with a tag (``THOUGHT:``,
  ``ACTION: bash``, ``[OBSERVATION]``) and the log has a thought or observation and an action
  that runs a command or code (notes that narrate "[Action]: The agent listed the files" stay
  plain text); a record then runs until the next line that starts with such a tag.
  ``ACTION INPUT:``/``TOOL INPUT:`` records give the input of the action before them
  (``Action: bash`` then ``Action Input: ls``), and ``COMMAND:``/``CODE:`` records (with a
  colon or brackets) a command or code.

  Records without a tag that name a logger after a level (``INFO agent: ===== step 1``) are
  the scaffold's progress lines: a MESSAGE with role ``scaffold``. Timestamped lines without a
  tag or logger that follow an observation are lines of that output (a program's own log
  lines); elsewhere they are a MESSAGE whose writer is not known.
- MLAgentBench-style blocks (``Thought:``, ``Action:``, ``Action Input:``, ``Observation:``
  fields, ``Step N`` headers): the action name and its input together give one TOOL_CALL, or a
  COMMAND/CODE event for a shell or Python tool with a plain-text input; the observation
  (inside its ``` fence) an OUTPUT, the other fields a MESSAGE.

Commands typed at a prompt (``$ cmd``, ``user@host:~$ cmd``, ``>>> code``, see
:func:`mleaudit.audit.logs.prompts.match_prompt`) inside observations, untagged records and the text before
the first record or field are COMMAND/CODE events of their own; the text around them stays what
it was. Text before the first record is a MESSAGE whose writer is not known (a banner, a task
statement); the banner before the first field of an MLAgentBench-style log gives only the
commands typed in it.

Every span covers exactly the event's text in the file. Who wrote each event
(:class:`~mleaudit.audit.units.Actor`): the agent's thoughts, actions and the observations its actions
returned are the **agent**'s; records with a logger name and no tag (the scaffold's own
progress lines, role ``scaffold``) the **scaffold**'s; untagged records without a logger name,
the text before the first record and commands typed inside scaffold text are left ``unknown``
(judged like the agent's).

Routine Listings
----------------
records
    Record heads (time stamp, level, logger, tag) and :func:`split_records`: a log's records
    and their tags.
actions
    :func:`classify_action`: what an action's body holds (tool names, inputs, fenced blocks,
    JSON arguments, file writes).
reading
    :func:`read_records` (tagged records) and :func:`read_fields` (MLAgentBench-style fields):
    the events, with their actors.

Notes
-----
This package is the ``steplog`` adapter: :data:`NAME`, :func:`detect` and :func:`read_events`.
Imports point down the listing above; the modules import only the shared log helpers
(:mod:`~mleaudit.audit.logs.common`, :mod:`~mleaudit.audit.logs.jsonregions`,
:mod:`~mleaudit.audit.logs.keys`, :mod:`~mleaudit.audit.logs.toolcalls`,
:mod:`~mleaudit.audit.logs.prompts`) and the event model. A new tag goes in ``records``
(``_TAG_NAMES``, ``_TAG_CLASSES``) and is read in ``reading``; a new tool name in the tool sets of
``actions``.
"""

from __future__ import annotations

from mleaudit.audit.logs.common import SpanMaker
from mleaudit.audit.logs.steplog.actions import action_tool, classify_action, input_events
from mleaudit.audit.logs.steplog.reading import read_fields, read_records
from mleaudit.audit.logs.steplog.records import AFTER_TAG, REACT_LINES, split_records, tagged_enough
from mleaudit.audit.textcache import TextCache
from mleaudit.audit.units import LogEvent, LogEventKind

__all__ = ["NAME", "classify_action", "detect", "read_events"]

NAME = "steplog"


def _bare_step_log(text: str) -> bool:
    """Whether lines that start with tags make a step log: :func:`tagged_enough` without time
    stamps, and one action at least that runs a command or code (research notes that narrate
    "[Action]: The agent listed the files" are prose, not a step log)."""
    if not tagged_enough(text, bare=True):
        return False
    head = text[:1_000_000]
    records = split_records(head, bare=True)
    for number, record in enumerate(records):
        if record.tag == "action" and number + 1 < len(records) and records[number + 1].tag == "input":
            following = records[number + 1]
            input_start = AFTER_TAG.match(head, following.tag_end, following.end).end()
            events = input_events(head, action_tool(head, record.tag_end, record.end), input_start, following.end)
        elif record.tag == "action":
            events = classify_action(head, record.tag_end, record.end)
        elif record.tag in ("command", "code"):
            input_start = AFTER_TAG.match(head, record.tag_end, record.end).end()
            events = input_events(head, "bash" if record.tag == "command" else "python", input_start, record.end)
        else:
            continue
        if any(kind in (LogEventKind.COMMAND, LogEventKind.CODE) for kind, *_ in events):
            return True
    return False


def _fields(text: str) -> bool:
    head = text[:1_000_000]
    # lines that start "Action:" and "Action Input:" (``^`` in multiline mode), found with ``in``
    has_action = head.startswith("Action:") or "\nAction:" in head
    return has_action and (head.startswith("Action Input:") or "\nAction Input:" in head)


def detect(path: str, text: str) -> bool:
    """Timestamped THOUGHT/ACTION/OBSERVATION records, ``Action:`` plus ``Action Input:`` fields,
    or tagged records without time stamps.

    One record with a logger name and a tag (``INFO agent: ACTION bash: ls``) is enough; records
    without a logger name need two tagged records, one an action; lines that start with a tag
    and carry no time stamp need an action and a thought or an observation besides.
    """
    return _DETECTED.get_or_compute(text, len(text), lambda: _detect_text(text))


#: Detection answers by text (a function of the text alone): the same log is often saved many
#: times over (a workspace snapshot per step), and telling prose from a step log reads it all.
_DETECTED = TextCache(max_chars=32 * 1024 * 1024, max_entries=4096)


def _detect_text(text: str) -> bool:
    return REACT_LINES.search(text, min(len(text), 1_000_000)) or tagged_enough(text) or _fields(text) or (
        _bare_step_log(text))


def read_events(path: str, text: str, notes: list[str] | None = None) -> list[LogEvent]:
    """Events of a scaffold step log, in file order (see the module docstring).

    Parameters
    ----------
    path : str
        The log's POSIX path relative to the run root.
    text : str
        The whole file text.
    notes : list of str, optional
        Unused (every line of a text log is read).

    Returns
    -------
    list of LogEvent
        Indexed from 0; every ``text`` equals ``file_text[span.start_byte:span.end_byte]``.
    """
    spans = SpanMaker(text, path)
    if REACT_LINES.search(text, min(len(text), 1_000_000)) or tagged_enough(text):
        return read_records(text, spans)
    if not _fields(text) and _bare_step_log(text):
        return read_records(text, spans, bare=True)
    return read_fields(text, spans)
