"""Driver notebooks: notebooks that run an agent framework, and who wrote each of their cells.

A *driver* notebook is the operator's harness around an agent run (a Kaggle or Colab notebook
that installs AIDE and calls ``exp.run()``, a notebook that launches MLE-bench's
``run_agent.py``): its code is the operator's, and the outputs of the cell that runs the agent
are the scaffold's printed log, which holds the agent's code and commands. A notebook that runs
no framework is the agent's own work: all its code and outputs are the agent's.

The heuristic, applied to the code cells' source with comment lines left out:

1. **Markers.** :data:`VOCABULARY` lists, per framework, the ways a notebook calls into it:
   imports (``from aide import``), command lines (``!aide data_dir=...``, ``python -m aide``,
   ``python -u -m MLAgentBench.runner``, ``inspect eval``, ``bash run_agent.sh``,
   ``python run_agent.py``), API calls (``aide.Experiment(...)``, ``run_controller(``,
   ``inspect_ai.eval(``). Each entry is *strong* (the name is the framework's own) or *weak*
   (generic words: ``agent.run(``, ``run_agent(``, ``Agent(...).run(``, a subprocess running a
   ``run.py``). Variables assigned from a framework constructor
   (``exp = aide.Experiment(...)``) make ``exp.run(`` a run call too.
2. **Driver.** A notebook is a driver when a strong marker matches, or a weak run call does
   and a cell at or before it holds operator setup (:data:`SETUP_SIGNALS`: cloning a
   repository, ``pip install -e``/``git+``, setting an LLM provider's API key, reading
   Kaggle/Colab secrets, installing or preparing MLE-bench). Only a notebook at the run root
   (or given alone) can be a driver: one in any folder of the run (``code/``, ``logs/``,
   ``notebooks/`` ...) is something the agent could have written, and an agent could otherwise
   dress its own notebook up as a harness to have its code judged as the operator's (the
   agent writes the run's folders: MLE-bench's ``logs/``, ``code/`` and ``submission/``,
   AIDE's ``working/``, MLAgentBench's traces). Only the first
   :data:`MAX_SCANNED_CELL_CHARS` characters of a cell are scanned.
3. **Cells.** The *run* cells are those with a run call (a command line, a constructor or a
   ``.run(`` on one, not a bare import); a notebook that names a framework but never launches
   it is not a driver. Cells before the first run cell are ``setup``; after it, each cell is,
   first match wins: ``run`` (another run call); ``rerun`` (it runs or holds solution code:
   ``.fit(``, ``.predict(``, ``exec(``, ``%run``, a ``.py`` script; :data:`RERUN_SIGNALS`),
   even next to grading words; ``post`` when it grades (``mlebench grade-sample``, a helper
   that locates the answers to score the submission; :data:`GRADE_SIGNALS`); ``stream`` (it
   keeps showing the run: ``tail -f``, ``cat`` of a log, waiting on the run's process, reading
   the journal; :data:`STREAM_SIGNALS`); else ``rerun``: nothing says the operator wrote it.
4. **Actors.** Code of ``setup``, ``run``, ``stream`` and ``post`` cells is the OPERATOR's;
   ``rerun`` code is UNKNOWN (pasted or replayed agent code, so rules judge it). Outputs of
   ``run`` and ``stream`` cells are the SCAFFOLD's, and code or commands found in them are the
   AGENT's; outputs of ``setup`` and ``post`` cells are the OPERATOR's; outputs of ``rerun``
   cells are UNKNOWN. Markdown and raw cells are the operator's.

Everything here reads text with regular expressions; nothing is imported or run.

Routine Listings
----------------
vocabulary
    :class:`Marker`, :data:`VOCABULARY` and the role signals (:data:`SETUP_SIGNALS`,
    :data:`GRADE_SIGNALS`, :data:`STREAM_SIGNALS`, :data:`RERUN_SIGNALS`): tables only.
roles
    :class:`CellRole` and :class:`DriverReading` (who wrote each cell's code and outputs).
custom
    Launches of a framework the vocabulary does not name, after operator setup.
reading
    :func:`read_driver`: the heuristic above.

Notes
-----
Every public name is re-exported here, so callers import from ``mleaudit.audit.driver``.
Imports point down the listing above: a module imports only modules listed before it, plus
``mleaudit.audit.units``. A new framework is a set of :class:`Marker` entries in
``vocabulary.VOCABULARY``; a new signal of a cell's role a row of the matching table there.
"""

from mleaudit.audit.driver.reading import read_driver
from mleaudit.audit.driver.roles import CellRole, DriverReading
from mleaudit.audit.driver.vocabulary import (
    AGENT_FOLDERS,
    GRADE_SIGNALS,
    RERUN_SIGNALS,
    SETUP_SIGNALS,
    STREAM_SIGNALS,
    VOCABULARY,
    Marker,
)

__all__ = [
    "AGENT_FOLDERS",
    "CellRole",
    "DriverReading",
    "Marker",
    "GRADE_SIGNALS",
    "RERUN_SIGNALS",
    "SETUP_SIGNALS",
    "STREAM_SIGNALS",
    "VOCABULARY",
    "read_driver",
]
