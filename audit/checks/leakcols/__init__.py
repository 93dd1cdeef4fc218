"""Label-leak columns selected by a pattern instead of by name.

The rules ``leak-known-column-feature`` and ``leak-known-column-override`` see a leak column
when its name is written out. An agent can reach the same columns without naming them:
``test.filter(regex=r"^giv\\w+_if_kn\\w+$")``, ``df.filter(like="at_retrieval")``,
``[c for c in df.columns if "retrieval" in c]``, ``df.loc[:, df.columns.str.contains("giver")]``.
This check evaluates such patterns against the known leak columns (the rule's list plus the
competition's ``audit.label_leak_columns``) and reports the selections that pick at least one,
unless the run only sets them aside:

- the selection sits in the arguments of ``drop``/``difference``/``remove``/``discard``, under a
  negation (``~df.columns.str.contains(...)``, ``not``), or on the right of ``-`` or ``not in``;
- it is only printed or inspected (``print(...)``, ``len(...)``, ``display(...)``);
- it is assigned to a name whose every later use is one of the above (``LEAKY = [...]`` then
  ``df.drop(columns=LEAKY)``), or, when the name is never used again in the unit, the name says
  it is set aside (``leak_cols``, ``drop_cols``, ``to_remove``).

Negated conditions (``"retrieval" not in c``, ``not c.endswith(...)``) select the other columns
and are not reported. A column can also be taken by position (``test.columns[0]``,
``df.iloc[:, 0]``, ``cols = list(test.columns)`` then ``cols[0]``) once the run has printed which
position holds it (``df.info()``, ``list(enumerate(df.columns))``, ``list(df.columns)``): a
position counts when every printout that names it shows a leak column there. Patterns are evaluated, never the audited code: a regex is applied to the
column names with Python's ``re`` under a time bound of the ``regex`` package.

Layering: a check package (model, units, parsing, the rules engine's ``context``/``registry``/
``match``, the checks' ``competition`` and ``evidence``); importing it registers
``leak-column-patterns``. A new way of picking columns goes in :mod:`~.selection` (by pattern)
or :mod:`~.positions` (by position); a new way of keeping them aside in :mod:`~.check`.

Routine Listings
----------------
:mod:`~.columns`: the known columns and a selection of them.
:mod:`~.selection`: :func:`selected_columns`, selections by pattern.
:mod:`~.positions`: selections by position.
:mod:`~.check`: :func:`leak_column_patterns`.
"""

from __future__ import annotations

from mleaudit.audit.checks.leakcols.check import leak_column_patterns
from mleaudit.audit.checks.leakcols.selection import selected_columns

__all__ = ["leak_column_patterns", "selected_columns"]
