"""Expand a run into what rules and similarity read: code units and log events.

- every ``.py``/``.sh`` file is a code unit (``source="file"``);
- every Python notebook gives one unit of its joined code cells (``source="notebook"``,
  ``cells`` set) plus one bash unit per shell escape (``!pip``, ``%%bash``), whose ``origin``
  locates the command in the notebook's joined code text (the coordinates the notebook unit
  itself uses). A *driver* notebook (one that runs an agent framework, :mod:`mleaudit.audit.driver`)
  gives one unit per actor instead: each keeps the joined text's line numbers with the other
  actors' cells emptied, and its ``cells`` lists its own cells;
- every notebook's cell outputs, and its markdown and raw cells, are read as log events
  (:func:`mleaudit.audit.notebooks.read_notebook_outputs`; ``log_formats`` names the notebook
  :data:`NOTEBOOK_OUTPUTS`): OUTPUT (MESSAGE for text cells) events located at the JSON strings
  in the file, with ``location`` such as ``cells[12].outputs[0]``; outputs over
  :data:`MAX_OUTPUT_EVENT_CHARS` are cut at line ends into several events. The outputs are
  then read as a log (the scaffold's printed log holds the agent's code): fenced code, shell
  prompts, structured records and printed calls give CODE, COMMAND and TOOL_CALL events, and
  units like any log's. Outputs are never part of the notebook's code. How each notebook was
  read is in ``RunUnits.notebooks``;
- actors: units and events of a notebook that is not a driver are the AGENT's; in a driver,
  each cell's role decides (:mod:`mleaudit.audit.driver`); log events carry the actor their adapter
  gives, and every unit derived from an event (its code, shell escapes, here-documents)
  inherits it. Code files stay UNKNOWN here (a later pass places them by the run's layout);
- every log is read by its adapter (:mod:`mleaudit.audit.logs`) into events; each CODE event becomes a
  unit in its language and each COMMAND event a bash unit, with ``origin`` = the event's span
  in the log (``source="log"``). IPython syntax in Python code from logs is handled as in
  notebooks (commented out, shell escapes become bash units);
- here-documents in bash units that feed Python (``python - <<EOF``, ``cat > x.py <<EOF``)
  also become Python units located inside the bash text, so code an agent wrote through the
  shell is checked as Python;
- the agent command a sandbox record (``run.json`` of ``mleaudit run``) says the sandbox ran is
  one COMMAND event of the OPERATOR, located at ``spec.command`` in ``run.json``
  (:mod:`mleaudit.audit.sandbox_record`), and a bash unit like any logged command; ``log_formats`` names
  ``run.json`` as ``sandbox-record``.

Nothing is parsed here (the rules engine parses). Files that cannot be read, binary content,
notebooks in languages without a grammar or nested too deep, and the parts of logs that could
not be read (a JSON log cut short or nested deeper than
:data:`~mleaudit.grading.untrusted_json.MAX_JSON_DEPTH`, the event limit) go to ``skipped``; text that
was read with caveats (not valid UTF-8, lone surrogate escapes decoded as U+FFFD) goes to
``notes``; nothing aborts the expansion. Inspect ``.eval`` archives are read member by member
(:func:`mleaudit.audit.logs.inspect_eval.read_eval_archive`); their events and units carry the member's
virtual path ``<archive>!/<member>``, and each member not read is listed in ``skipped`` under
that virtual path.

Note on ``origin``: for logs whose events are decoded from JSON strings (AIDE journals,
OpenHands events, JSONL), ``origin`` is the string literal's region in the file, but the unit
text is the decoded string, so positions inside the unit cannot be mapped onto the file
(escapes such as ``\\n`` change lengths and lines). Such a unit is recognisable by
``len(unit.text) != origin.end_byte - origin.start_byte``; its evidence should point at the
whole origin. Units derived from it (here-documents, shell escapes) get that whole origin.

Routine Listings
----------------
derived
    :func:`heredoc_python_units` and the units derived from code and from log events.
found
    Code, commands and tool calls found in printed text (notebook outputs, JSON log messages).
notebook_units
    :class:`NotebookRecord`: a notebook's code units and output events.
decoding
    A Python file's declared source encoding; binary content.
launch
    Logs read by content that the run runs with Python, read as Python too.
expander
    :class:`RunUnits` and :func:`expand_run`.

Notes
-----
Every public name is re-exported here, so callers import from ``mleaudit.audit.expand``. Imports
point down the listing above: a module imports only modules listed before it, plus the run loader
(:mod:`mleaudit.audit.run`), the notebook and driver readers, the log adapters
(:mod:`mleaudit.audit.logs`), :mod:`mleaudit.audit.sandbox_record` and the model modules; nothing
here parses code or imports the rules. A new log format is a log adapter (see
:mod:`mleaudit.audit.logs`), not code here; a new way code hides in a unit (another shell form
that feeds Python) goes in ``derived``; a new kind of run file is read in :func:`expand_run`. Nothing
read may be dropped silently: what is not read goes to ``skipped``, with why.
"""

from mleaudit.audit.expand.decoding import decode_as_declared, declared_source_encoding, is_binary_text
from mleaudit.audit.expand.derived import heredoc_python_units
from mleaudit.audit.expand.expander import RunUnits, expand_run
from mleaudit.audit.expand.notebook_units import BINARY_OUTPUTS_NOT_READ, NOTEBOOK_OUTPUTS, NotebookRecord

__all__ = [
    "BINARY_OUTPUTS_NOT_READ",
    "NOTEBOOK_OUTPUTS",
    "NotebookRecord",
    "RunUnits",
    "expand_run",
    "decode_as_declared",
    "declared_source_encoding",
    "heredoc_python_units",
    "is_binary_text",
]
