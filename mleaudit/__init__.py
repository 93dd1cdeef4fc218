"""mleaudit: integrity and plagiarism auditing for MLE-bench agent runs.

The installed import packages all live under this one name:

- :mod:`mleaudit.grading` — competitions, ``prepare``, local graders equal to MLE-bench's, medals;
- :mod:`mleaudit.sandbox` — running an agent in isolation (bubblewrap or docker);
- :mod:`mleaudit.audit` — reading runs, the rules engine, similarity, reports and the command line.

In a source checkout these are the top-level folders ``grading/``, ``sandbox/`` and ``audit/``
(mapped here by ``package_dir`` in ``setup.py``); the rule files (``rules/``) and the
competitions (``competitions/``) ship as package data beside them and are found the same way
in both (the folder above the ``audit`` and ``grading`` packages).

Routine Listings
----------------
_entry
    The console script's entry point: the current directory taken off ``sys.path`` before the
    command line is imported.
__main__
    ``python -m mleaudit``.

Notes
-----
The three packages stand in layers: ``grading`` imports nothing of the other two; ``sandbox``
may use ``grading`` and, of ``audit``, only the run-dir layout (``mleaudit.audit.run``), the
one contract between the sandbox that writes a run and the audit that reads it; ``audit`` may
use ``grading``, and ``sandbox`` only in its command line. Inside ``audit`` the layers run from
the commands at the top to value types at the bottom. The ``[importlinter]`` contracts in
``setup.cfg`` say this exactly and ``tests/test_layers.py`` checks them, and that no import
cycle is left anywhere.

Nothing new goes in this package: ``_entry`` imports only ``sys`` and ``os``. A new metric goes in
:mod:`mleaudit.grading.metrics` and a new competition in ``competitions/<id>/`` (see
:mod:`mleaudit.grading`); a new rule is a YAML file under ``rules/`` and a new built-in check a
module of :mod:`mleaudit.audit.checks`; a new sandbox backend is a ``Runner`` in a
module or package of its own under :mod:`mleaudit.sandbox`, as ``local`` and ``docker`` are. A
new command is a click command in the package whose work it does, added to the root group in
``mleaudit.audit.cli``.
"""

# Nothing is imported here: `python -m mleaudit` imports this module before mleaudit/__main__.py
# can take the current directory off sys.path (see mleaudit/_entry.py).

__version__ = "0.1.0"
