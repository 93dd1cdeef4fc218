"""mleaudit: integrity and plagiarism auditing for MLE-bench agent runs.

The installed import packages all live under this one name:

- :mod:`mleaudit.grading` — competitions, ``prepare``, local graders equal to MLE-bench's, medals;
- :mod:`mleaudit.sandbox` — running an agent in isolation (bubblewrap or docker);
- :mod:`mleaudit.audit` — reading runs, the rules engine, similarity, reports and the command line.

In a source checkout these are the top-level folders ``grading/``, ``sandbox/`` and ``audit/``
(mapped here by ``package_dir`` in ``setup.py``); the rule files (``rules/``) and the
competitions (``competitions/``) ship as package data beside them and are found the same way
in both (the folder above the ``audit`` and ``grading`` packages).
"""

# Nothing is imported here: `python -m mleaudit` imports this module before mleaudit/__main__.py
# can take the current directory off sys.path (see mleaudit/_entry.py).

__version__ = "0.1.0"
