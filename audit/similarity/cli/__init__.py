"""``mleaudit similarity``: Dolos-style pair figures and the copy detector from the command line.

Thin click commands over :mod:`mleaudit.audit.similarity`: ``pairs`` prints Dolos's figures for every
pair of the given files (the columns of Dolos's own pair output), ``compare`` scores agent files
against reference kernels (a folder, or a corpus index) with the copy detector and says which
pairs reach the policy threshold of ``rules/plagiarism/``. Library errors become
:class:`mleaudit.audit.cli_options.InputError` (exit code 2).

Routine Listings
----------------
output
    Terminal-safe text, TSV rows, JSON, skipped files on stderr; :data:`TOO_SHORT`.
inputs
    ``_collect``: the named files and folders as code units.
pairs
    ``similarity pairs``; :data:`PAIR_COLUMNS`.
compare_output
    The rows of ``similarity compare``, spilled to disk and written in order; :data:`COMPARE_COLUMNS`.
compare
    ``similarity compare`` (a folder of references or a corpus index); its batch sizes.

Notes
-----
The :func:`similarity` group is defined here and the commands are added to it; the column
orders and the too-short note are re-exported (the batch sizes of ``compare`` are read, and
patched by tests, in ``compare``). Imports point down the listing above. The engine
(tokenizers, the copy detector, the corpus index) is imported inside the commands, on first
use, so that ``mleaudit --help`` starts without it. A new subcommand gets a module of its own
and one ``similarity.add_command`` line here.
"""

from __future__ import annotations

import click

from mleaudit.audit.similarity.cli import compare_output as _compare_output
from mleaudit.audit.similarity.cli import output as _output
from mleaudit.audit.similarity.cli import pairs as _pairs
from mleaudit.audit.similarity.cli.compare import compare_command
from mleaudit.audit.similarity.cli.pairs import pairs_command

__all__ = ["similarity"]

# Reached under this module's name though not in __all__ (the column orders and the too-short note).
PAIR_COLUMNS = _pairs.PAIR_COLUMNS
COMPARE_COLUMNS = _compare_output.COMPARE_COLUMNS
TOO_SHORT = _output.TOO_SHORT


@click.group("similarity")
def similarity() -> None:
    """Compare code with public kernels: Dolos's figures and the copy detector.

    Example:

        mleaudit similarity pairs kernels/titanic

        mleaudit similarity compare runs/x/code --reference kernels/titanic
    """


similarity.add_command(pairs_command)
similarity.add_command(compare_command)
