"""Predictions typed by hand into code: row overrides, id-to-label tables, label lists and strings.

Shapes that the literal-table rules (``sub-handwritten-submission``) and the row-edit rule
(``sub-edit-sample-submission``, for ``.loc``/``.at`` edits) do not cover:

- *literal overrides*: several statements that each set one row of a prediction array to a typed
  value, ``preds[17] = 0.93``, ``proba[204, 1] = 0.02``, ``y_pred[test.id == 1234] = 1`` — values
  often copied from an earlier output. A single statement is not enough (``p[0] = 0.5`` can be a
  fix-up of a known edge case); ``min_overrides`` of them in one unit are;
- *id-to-label tables*: a dictionary literal from row ids (integers, or strings that hold digits)
  to typed labels or typed rows of values, ``{0: "EAP", 3: "HPL", 17: "EAP", ...}``,
  ``{"Test_3": (0, 0, 1, 0), ...}``, applied to the predictions (through
  ``map``/``replace``/``update``/``Series``/``DataFrame``, a ``for k, v in TABLE.items()`` loop, or
  in a unit that writes a submission). Label encodings (``{"EAP": 0, "HPL": 1}``: words to
  numbers), label decodings (``{0: "EAP", 1: "HPL", 2: "MWS"}``: consecutive keys, distinct
  values), class weights with consecutive keys and hyperparameter dictionaries (word keys) are not
  such tables;
- *label lists*: a list or tuple of at least ``min_labels`` short string literals with few
  distinct values (``PRED = ['7', '6', '3', ...]``): one typed label per test row;
- *label strings*: one string literal split or iterated into at least ``min_labels`` short items
  with few distinct values (``S = '7634...'`` read through ``list(S)``, ``map(int, S)``,
  ``for c in S``; ``'7 6 3 ...'.split()``; one label a line through ``splitlines()``).

Label lists and strings count when the number of items equals the number of data rows of the
sample submission or of the submission (when either is known; the unit need not write the
submission then), or, when neither is known, when the unit writes a submission and holds at least
``min_labels`` items. Labels repeat across rows, so a list with more than ``max_distinct``
distinct values, or with more than half of its items distinct, is a list of names (class
names, column names, a vocabulary), not predictions.

A second check, ``encoded-prediction-data``, reports *opaque encoded literals*: a base64, hex or
bytes literal of at least ``min_chars`` characters passed (directly or through the name it is
assigned to) to a decoder (``base64``, ``binascii``, ``codecs.decode``, ``bytes.fromhex``,
``zlib``/``bz2``/``lzma``/``gzip`` decompression, ``pickle``/``marshal`` loads) in a unit that
writes a submission. What such a literal holds cannot be read without running the code, so it
is a lead for a reviewer, not evidence of typed rows.

Audited code is parsed with tree-sitter, never run. Literals are measured as written: a literal
list is judged from its first :data:`MAX_LABEL_ITEMS` items, and strings over
:data:`MAX_LITERAL_CHARS` characters are not split.

Layering: a check package (model, units, parsing, the rules engine's ``context``/``registry``/
``match``, the checks' ``tables`` and ``evidence``); importing it registers both checks. A new
shape of hand-set prediction goes in :mod:`~.overrides` (assignments, tables) or :mod:`~.labels`
(typed label lists); a new decoder in :mod:`~.encoded`.

Routine Listings
----------------
:mod:`~.overrides`: literal overrides and tables of predictions.
:mod:`~.labels`: :data:`MAX_LABEL_ITEMS`, :data:`MAX_LITERAL_CHARS`, typed label lists.
:mod:`~.check`: :func:`typed_prediction_overrides`.
:mod:`~.encoded`: :func:`encoded_prediction_data`.
"""

from __future__ import annotations

from mleaudit.audit.checks.typed.check import typed_prediction_overrides
from mleaudit.audit.checks.typed.encoded import encoded_prediction_data
from mleaudit.audit.checks.typed.labels import MAX_LABEL_ITEMS, MAX_LITERAL_CHARS

__all__ = ["MAX_LABEL_ITEMS", "MAX_LITERAL_CHARS", "encoded_prediction_data", "typed_prediction_overrides"]
