"""Console transcripts of agent frameworks: LangChain, smolagents, AutoGen, CrewAI, scaffold printouts.

Frameworks print what their agent does to the console, and runs save that console as a log (or
as the output of the notebook cell that launched the framework). Each framework marks the
agent's actions with a few fixed lines; this reader finds them and turns

- what the agent ran into COMMAND, CODE or TOOL_CALL events (actor ``agent``),
- what its tools returned into OUTPUT events (actor ``agent``),
- the agent's own reasoning into MESSAGE events (actor ``agent``),
- the framework's chatter (chain banners, step rules, task panels, executor notices) into
  MESSAGE events (actor ``scaffold``, role ``scaffold``).

Formats read:

- LangChain/LangGraph ``AgentExecutor`` (verbose): ``> Entering new AgentExecutor chain...`` and
  ``> Finished chain.`` banners; tool-calling agents' ``Invoking: `python_repl` with `{...}```
  lines, whose argument (a JSON object or a Python ``dict`` as ``repr`` prints it) is decoded
  without evaluating anything (:func:`read_literal`), followed by the tool's observation and the
  agent's reply (OUTPUT); ReAct agents' ``Thought:``, ``Action:``, ``Action Input:``,
  ``Observation:`` and ``Final Answer:`` fields (these only in a file that has a chain banner, so
  that prose saying "Action:" is never read as one).
- smolagents (CodeAct): ``Executing parsed code:`` (or ``Executing this code:``) and the code
  after it, boxed with ``─`` rules, indented, or drawn inside ``│`` borders with line numbers;
  ``Execution logs:``, ``Out:`` and ``Observations:`` outputs; ``Calling tool: 'name' with
  arguments: {...}`` of tool-calling agents; ``━━ Step N ━━`` rules, ``[Step N: Duration ...]``
  summaries and task panels (scaffold); ``Output message of the LLM:`` (the agent's message).
- AutoGen: ``sender (to receiver):`` messages, separated by ``-`` rules, whose fenced code blocks
  are CODE/COMMAND events (the first message, the task, is the scaffold's);
  ``>>>>>>>> EXECUTING CODE BLOCK 0 (inferred language is python)...`` notices (scaffold);
  ``exitcode: 0 (execution succeeded)`` / ``Code output:`` replies (OUTPUT);
  ``***** Suggested tool call (id): name *****`` with its ``Arguments:`` and the
  ``***** Response from calling tool *****`` that answers it.
- CrewAI: ``# Agent:``/``## Task:`` headers (scaffold), ``## Thought:`` and ``## Final Answer:``
  (agent), ``## Using tool: X`` with ``## Tool Input:`` (the call) and ``## Tool Output:``; the
  same fields without ``#`` marks.
- Scaffold printouts: a header line naming code (``----- node c77e code -----``, ``=== code ===``,
  ``[step 3] code:``, ``Executing code:``) followed by the code, which runs to the next header, a
  rule, a time-stamped log line, or a blank line followed by a line that does not read as code; a
  header naming output (``----- node c77e output -----``, ``[step 3] output:``,
  ``Execution output:``) followed by the output, which runs to the next header or time-stamped
  line.

Text outside these blocks (a launcher's log lines, a banner) is read as a plain transcript
(:func:`mleaudit.audit.logs.text.scan_text`): its paragraphs are the scaffold's MESSAGE events, and
commands typed at a prompt or fenced in it are COMMAND/CODE events whose writer is not known.
Text after an action up to the next marker is that action's output (OUTPUT, agent).

Spans: every event's span is its text's place in the file. Code drawn with an indent, ``│``
borders or line numbers has them moved to the end of each of its lines as blanks, so that the
text keeps the span's length and line breaks (evidence lines and columns inside it stay right)
and reads as the code that ran; terminal colour escapes are read as blanks the same way. A tool
call whose argument decodes to other text (a JSON or Python string with escapes) has the span of
the call's argument. Detection is by content (:func:`detect`): a LangChain chain banner or
``Invoking:`` line, a smolagents ``Executing parsed code:`` or ``Calling tool:`` line, an AutoGen
``>>>>>>>> EXECUTING`` notice or ``exitcode: N (execution ...)`` line, a CrewAI ``Using tool:``
line with its ``Tool Input:``, or a scaffold code header followed by a line of code, each at the
start of a line.

Routine Listings
----------------
markers
    What a line starts (chain banners, ``Invoking:``, ``Executing parsed code:``, AutoGen notices,
    CrewAI fields, scaffold code and output headers), which frameworks a text shows the markers
    of, and :class:`~mleaudit.audit.logs.frameworks.markers.Lines`: a transcript's lines, the
    blocks they make.
literal
    :func:`read_literal`: a Python literal as ``repr`` prints it, decoded without evaluating it.
arguments
    A tool call's argument text decoded (JSON or a Python literal) and the commands and code it
    holds.
reader
    :class:`~mleaudit.audit.logs.frameworks.reader.Reader`: the events, marker by marker.

Notes
-----
This package is the ``frameworks`` adapter: :data:`NAME`, :func:`detect` (by content) and
:func:`read_events`. Imports point down the listing above; the modules import only the shared
log helpers (:mod:`~mleaudit.audit.logs.common`, :mod:`~mleaudit.audit.logs.jsonregions`,
:mod:`~mleaudit.audit.logs.keys`, :mod:`~mleaudit.audit.logs.toolcalls`,
:mod:`~mleaudit.audit.logs.text`) and the event model. A new framework gets its detection
pattern and a flag in ``markers.Modes``, its line patterns in ``Lines.marker``, and a handler in
``Reader.handle``.
"""

from __future__ import annotations

from mleaudit.audit.logs.frameworks.literal import read_literal
from mleaudit.audit.logs.frameworks.markers import Modes, mask
from mleaudit.audit.logs.frameworks.reader import Reader
from mleaudit.audit.textcache import TextCache
from mleaudit.audit.units import LogEvent

__all__ = ["NAME", "detect", "read_events", "read_literal"]

NAME = "frameworks"

#: Characters of the head of a file that detection looks at.
_DETECT_CHARS = 2 * 1024 * 1024


def detect(path: str, text: str) -> bool:
    """Whether a text is a framework console transcript (see the module docstring).

    Parameters
    ----------
    path : str
        The log's POSIX path (unused: detection is by content).
    text : str
        The whole file text.

    Returns
    -------
    bool
    """
    return _DETECTED.get_or_compute(text, len(text), lambda: _detect_text(text))


#: Detection answers by text (a function of the text alone; a log is often saved many times over).
_DETECTED = TextCache(max_chars=32 * 1024 * 1024, max_entries=4096)


def _detect_text(text: str) -> bool:
    head = text[:_DETECT_CHARS]
    if "\x00" in head[:65536]:
        return False
    return Modes(mask(head)).any()


def read_events(path: str, text: str, notes: list[str] | None = None) -> list[LogEvent]:
    """Events of a framework console transcript, in file order (see the module docstring).

    Parameters
    ----------
    path : str
        The log's POSIX path relative to the run root (goes on every span).
    text : str
        The whole file text (untrusted; only parsed, never run).
    notes : list of str, optional
        Unused (every line is read).

    Returns
    -------
    list of LogEvent
        Indexed from 0. COMMAND (language ``bash``), CODE (``python``) and TOOL_CALL events of
        what the agent ran, OUTPUT events of what it got back, MESSAGE events of its words
        (actor ``agent``) and of the framework's chatter (actor ``scaffold``, role
        ``scaffold``); commands typed at a prompt in text outside the framework's blocks have
        an unknown actor.
    """
    return Reader(mask(text), path).run()
