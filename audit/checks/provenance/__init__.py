"""Submission provenance: which logged code or command wrote the graded ``submission.csv``.

MLE-bench requires the submission to be the output of code the agent ran. The check looks for
*write sites* (:mod:`mleaudit.audit.checks.writes`) whose destination names the submission file or its
folder (``./submission/submission.csv`` as AIDE writes it, ``/home/submission/``,
``os.path.join(OUT, "submission.csv")``, ``cp preds.csv /home/submission/``, a redirect, a
path passed to a script) in code the logs show running:

- code and commands inside the logs (agent actions: commands, code cells, AIDE nodes, written
  files) count as run;
- a code file of the run counts as run when an agent action names it (``python train.py``,
  ``{"script_name": "train.py"}``), when its text is a code block of the logs (AIDE's
  ``best_solution.py``), or, for a notebook, when it has executed cells.

It also looks for the submission's own data rows typed into agent actions (a file-write tool
call, a here-document, a literal in code): rows an agent typed were not computed.

The agent command a sandbox record says the sandbox ran (``spec.command`` of the ``run.json``
that ``mleaudit run`` writes, an operator command: :mod:`mleaudit.audit.sandbox_record`) counts as an
action run first: ``python3 /home/agent/solve.py`` runs a script the run does not contain (the
agent's files are not copied into the run), so a submission nothing else writes is
``unconfirmed``, not ``unlogged``; rows typed into it are ``typed``. The sandbox ran nothing but
that command, so a copy it makes from a file that nothing the run executed writes (``cp
/tmp/x.csv /home/submission/submission.csv``) is no writer: the file was placed, not computed,
and the outcome is ``unlogged`` when everything the run executed is visible. Other operator
code (a driver notebook's setup and grading cells) is not looked at.

Outcomes (one per run, most serious first):

``typed``
    at least ``min_typed_rows`` data rows of the file appear verbatim in agent-typed text;
``unlogged``
    the logs hold agent actions, everything they execute is visible in the run, and nothing
    writes the submission: the file appeared without a logged writer (hand-placed or copied in).
    This is claimed only when all the run executed can be read: the logs whole, and every
    script, notebook and module they run present and not abbreviated;
``unconfirmed``
    the only writers are code the logs never show running, a write to a path the code computes
    elsewhere, or a copy (in the logs) from a file no logged code wrote; or no writer was found but the logs
    run code the run does not contain (``python x.py``, ``bash x.sh``, ``jupyter nbconvert
    --execute x.ipynb``, ``torchrun x.py``, ``subprocess.run(["python", "x.py"])``, ``python -m
    pkg`` for a module that is neither the standard library nor a known tool), directly or
    through a file of the run they execute (``run.sh`` that runs ``python fit.py``); or a tool
    call writes to the submission (``write_file /home/submission/submission.csv``) and the log
    does not show what it wrote; or the header the logs print differs from the file's;
``written``
    a run writer was found (the evidence is the write site);
``unverifiable``
    the run has a submission but no agent actions in its logs, so there is nothing to check it
    against; or nothing writes it but the logs are cut short (a log over the size cap read in
    part, a code block the log ends inside), or a script or module the logs execute is in the
    run only abbreviated (a line such as ``# ... 8 epochs AdamW``, a bare ``...``, ``# (rest
    omitted)``, ``<truncated>``), so its writer may be in the part that is missing: where it
    came from is unknown, which is no sign of anything;
``absent``
    no submission (a run may end without one; nothing to report).

Row counts printed by ``wc -l`` are compared with the file and reported in the detail only:
benchmark copies of runs often truncate submissions, so a different count is not evidence.

Layering: a check package; it imports the model, units, logs, run loading, the sandbox record,
the rules engine's ``context``/``registry``/``match`` and the checks' helpers
(:mod:`~mleaudit.audit.checks.writes`, ``tables``, ``evidence``); importing it registers
``submission-provenance``. A new outcome goes in :func:`~.assess.assess_provenance` and
:data:`OUTCOMES`; a new way of writing a file goes in :mod:`mleaudit.audit.checks.writes`.

Routine Listings
----------------
:mod:`~.traces`: :data:`SUBMISSION_TARGET`, what the logs and files show about the submission.
:mod:`~.executed`: code the run executes but does not hold whole.
:mod:`~.assess`: :data:`OUTCOMES`, :class:`Provenance`, :func:`assess_provenance`.
:mod:`~.check`: :func:`submission_provenance`.
"""

from __future__ import annotations

from mleaudit.audit.checks.provenance.assess import OUTCOMES, Provenance, assess_provenance
from mleaudit.audit.checks.provenance.check import submission_provenance
from mleaudit.audit.checks.provenance.traces import SUBMISSION_TARGET

__all__ = ["OUTCOMES", "Provenance", "SUBMISSION_TARGET", "assess_provenance", "submission_provenance"]
