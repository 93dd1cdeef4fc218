"""Where code writes files: write sites in Python and shell code, and the scripts commands run.

Run-level checks ask "which code wrote this file?". This module answers the first half for one
code unit at a time: every place that writes a file (a *write site*) with the written path as
text, resolved as far as the unit itself allows.

Python (tree-sitter): ``df.to_csv(p)``, polars ``write_csv``, ``np.savetxt(p)``,
``open(p, "w"/"a"/"x")``, ``Path(p).write_text``/``write_bytes``, ``shutil.copy*``/``move``
(destination), ``os.rename``/``os.replace``, and shell command strings passed to
``subprocess``/``os.system``. A path held in a variable is resolved through the unit's
assignments, keyword arguments, parameter defaults, dictionary keys and ``argparse`` defaults
(``SUB = os.path.join(OUT, "submission.csv")`` ... ``sub.to_csv(SUB)``), at most three levels.

Shell (a small quote-aware lexer, no execution): redirects (``>``, ``>>``, ``&>``), ``tee``,
``cp``/``mv``/``install``/``rsync``/``ln`` destinations (``-t DIR`` too), ``curl -o``/``wget -O``
downloads, ``sed -i``/``perl -i`` in-place edits, ``unzip -d``/``tar -C`` extraction folders,
``dd of=``, and interpreter commands (``python x.py --out PATH``, ``python -c CODE``) whose
arguments name a path. Here-document bodies are not read as commands; the expansion step turns
the Python ones into units of their own.

Audited code is only parsed, never run; resolution is textual.

Layering: a helper of the checks, not a check: it imports parsing, units and the text cache
only, and registers nothing. Teach it a new writer in :mod:`~.python` (a call) or :mod:`~.shell`
(a command); the checks that ask "who wrote this file?" (provenance, labels, grader) then see it.

Routine Listings
----------------
:mod:`~.site`: :class:`WriteSite`.
:mod:`~.python`: :func:`find_python_write_sites`, :func:`python_calls`, :class:`Bindings`.
:mod:`~.shell`: :func:`find_shell_write_sites`, :func:`split_shell_commands`, :class:`ShellCommand`.
:mod:`~.units`: :func:`find_write_sites`, :func:`scripts_run`.
"""

from __future__ import annotations

from mleaudit.audit.checks.writes.python import Bindings, find_python_write_sites, python_calls
from mleaudit.audit.checks.writes.shell import ShellCommand, find_shell_write_sites, split_shell_commands
from mleaudit.audit.checks.writes.site import WriteSite
from mleaudit.audit.checks.writes.units import find_write_sites, scripts_run

__all__ = [
    "Bindings",
    "WriteSite",
    "ShellCommand",
    "python_calls",
    "find_write_sites",
    "find_python_write_sites",
    "find_shell_write_sites",
    "split_shell_commands",
    "scripts_run",
]
