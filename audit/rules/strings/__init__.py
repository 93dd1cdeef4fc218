"""String values of code expressions, folded the way a reader would: for rules that look through assembly.

A URL, a host or a path can be spelled in pieces so that no single literal holds it:
``"https://api." + "openai.com"``, ``f"https://{HOST}/v1/chat/completions"``,
``"/".join(["https:", "", host])``, ``Path("/private") / "data"``, ``base64.b64decode("...")``,
``"moc.ianepo.ipa"[::-1]``, or in shell ``H=api.openai.com; curl "https://$H/v1/..."``.
:func:`fold_strings` walks a unit's syntax tree (never runs it) and returns, for every maximal
string-valued expression, the value such an expression would have, with the parts it cannot
know (a function parameter, a call result) written as ``{}``. The ``strings`` matcher of the
rules engine runs its regex over these values.

Folding is deliberately simple and bounded: names resolve only to string constants assigned
exactly one value in the same unit (Python ``NAME = ...``, shell ``NAME=...``/``export``);
values are cut at :data:`MAX_VALUE_CHARS`; expressions deeper than :data:`MAX_FOLD_DEPTH` are
unknown. Each value keeps *segments* that say which characters came verbatim from which literal,
so a matcher can tell an assembled value from one that a single literal already spells out
(``assembled_only``), and leave the latter to the ordinary literal rules.

Naming: a *part* is a folded sub-expression; a *segment* is a run of value characters copied
verbatim from one literal (``source`` is that literal's start byte), or produced by a
transformation (decoding, reversing, escapes: ``source`` is ``None``).

Layering: this package imports only parsing and the text cache; the ``strings`` matcher
(:mod:`mleaudit.audit.rules.matchers.text`) reads it. Teaching it a new spelling of a string
means a branch in the folder of that grammar (:mod:`~.python`, :mod:`~.bash`); a new language
means a :class:`~.parts.Folder` subclass registered in :mod:`~.fold`.

Routine Listings
----------------
:mod:`~.parts`: :class:`FoldedString`, :data:`UNKNOWN`, :data:`MAX_VALUE_CHARS`,
:data:`MAX_FOLD_DEPTH`, the part helpers and :class:`~.parts.Folder`.
:mod:`~.python`, :mod:`~.bash`: the folders of each grammar.
:mod:`~.fold`: :func:`fold_strings`.
"""

from __future__ import annotations

from mleaudit.audit.rules.strings.fold import fold_strings
from mleaudit.audit.rules.strings.parts import MAX_FOLD_DEPTH, MAX_VALUE_CHARS, UNKNOWN, FoldedString

__all__ = ["FoldedString", "fold_strings", "UNKNOWN", "MAX_VALUE_CHARS", "MAX_FOLD_DEPTH"]
