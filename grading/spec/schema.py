"""The vocabulary of ``config.yaml`` and its JSON Schema: file names, sources, policy keys, looseness kinds."""

from __future__ import annotations

from typing import Any, Mapping


CONFIG_FILE = "config.yaml"
CHECKSUMS_FILE = "checksums.yaml"
#: Where a leaderboard's scores come from: Kaggle's final private leaderboard, baselines trained
#: by ``scripts/make_reference_leaderboard.py`` for competitions that never ran on Kaggle, or
#: ``unavailable`` when no snapshot could be had (the note says why; no medals can be awarded).
LEADERBOARD_SOURCES = ("kaggle", "reference-baselines", "unavailable")
#: Kaggle's kinds of competition: ``simple`` (upload a CSV) or ``code`` (entries are notebooks
#: run by Kaggle, often with limits on run time and internet access).
COMPETITION_TYPES = ("simple", "code")
#: Keys of a competition's audit policy (lists of strings, default empty): ``allow_urls``
#: (hosts or ``host/path`` prefixes, optionally with a scheme, whose downloads the external-resource
#: and llm-api rules accept), ``public_data_dirs``, ``boilerplate`` (starter code for similarity)
#: and ``label_leak_columns`` (test-data columns known to leak the label, read by the generic
#: label-leak rules).
AUDIT_POLICY_KEYS = ("allow_urls", "public_data_dirs", "boilerplate", "label_leak_columns")
#: An ``allow_urls`` entry: a host with a dot (and an optional port and path), optionally with a
#: scheme. A bare word cannot be an entry: it would allow nothing, or everything.
_ALLOW_URL = {
    "type": "string",
    "pattern": r"^(?:[A-Za-z][A-Za-z0-9+.-]*://)?[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+(?::[0-9]{1,5})?(?:/[^\s]*)?$",
}
#: A column name: no blanks around it, one line.
_COLUMN = {"type": "string", "pattern": r"^\S(?:[^\n]*\S)?$"}

_STRING_LIST = {"type": "array", "items": {"type": "string", "minLength": 1}}

#: The vocabulary of ``mlebench_looseness``: what MLE-bench's grader for a competition accepts, or
#: how it pairs rows, where this project's grading checks strictly. Each kind, its definition
#: and the keys an entry of that kind may carry besides ``kind``, ``note`` and ``score``
#: (detection: :mod:`mleaudit.grading.mlebench_divergence`).
MLEBENCH_LOOSENESS_KINDS: Mapping[str, str] = {
    "positional_rows": "submission rows are paired with answer rows by their position in the file (within each value of "
                       "the column `within` when given); the ids are not compared, and may be wrong or absent",
    "sorted_rows": "each file is sorted by its own id column and rows are paired by sorted position; the ids are never "
                   "compared, so unknown or repeated ids pass (`mask_by_position`: the answers' row mask column is "
                   "applied to the submission by file position)",
    "row_order_required": "rows are paired by position and each pair's ids must be equal: a file holding every test id "
                          "once, but not in the answers' order, is invalid under MLE-bench",
    "positional_columns": "the prediction columns are read by their position in the file, not by their names",
    "duplicate_ids_accepted": "a test id on several rows is accepted (`pairing`: `merge` scores every copy against its "
                              "answer row; `sorted` pairs rows by position after sorting, so copies take the place of "
                              "other ids; `pool` joins the copies' predictions into one row)",
    "missing_rows_accepted": "a submission without some test ids is scored on the rows it has",
    "header_only_valid": "a file with a header and no rows is a valid submission, with an undefined (NaN) score",
    "nan_inf_coerced": "missing, NaN or infinite cells of `columns` are accepted: `fill` says what value each kind of "
                       "cell becomes (null: accepted, but what it becomes is not emulated), `whole_score` which kinds "
                       "of cell set MLE-bench's whole score",
    "labels_truncated": "fractional class labels of `columns` are truncated to integers (int(1.5) is 1)",
    "odd_rle_accepted": "run-length masks of `columns` with an odd count of numbers are accepted: one number is an "
                        "empty mask, three give the dangling start the first run's length",
}
#: Kinds of cell ``nan_inf_coerced`` entries speak of: missing or NaN, +inf, -inf.
CELL_KINDS = ("nan", "posinf", "neginf")
#: Keys an entry may carry beyond ``kind``, ``note`` and ``score``, by kind.
_LOOSENESS_OPTIONS: Mapping[str, tuple[str, ...]] = {
    "positional_rows": ("within",),
    "sorted_rows": ("mask_by_position",),
    "duplicate_ids_accepted": ("pairing",),
    "nan_inf_coerced": ("columns", "fill", "whole_score"),
    "labels_truncated": ("columns",),
    "odd_rle_accepted": ("columns",),
}
#: How far detection can reproduce MLE-bench's score for an entry: ``exact`` (default),
#: ``approximate`` (the note says what differs) or ``none`` (its outcome is described only).
LOOSENESS_SCORES = ("exact", "approximate", "none")
_CALLABLE_REF = {"type": "string", "pattern": r"^[A-Za-z0-9_.\-]+\.py:[A-Za-z_][A-Za-z0-9_]*$"}

#: JSON Schema (draft 2020-12) of ``config.yaml``.
CONFIG_SCHEMA: Mapping[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["id", "name", "metric", "id_column", "target_columns", "dataset", "leaderboard", "kernels"],
    "properties": {
        # Kaggle slugs are lower-case except a few early ones (AI4Code).
        "id": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9\-]*$"},
        "name": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
        "metric": {
            "type": "object",
            "additionalProperties": False,
            "required": ["name", "higher_is_better"],
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "higher_is_better": {"type": "boolean"},
                "params": {"type": "object"},
                "grader": _CALLABLE_REF,
            },
        },
        "id_column": {"type": "string", "minLength": 1},
        "target_columns": {**_STRING_LIST, "minItems": 1, "uniqueItems": True},
        "dataset": {
            "type": "object",
            "additionalProperties": False,
            "required": ["answers", "sample_submission"],
            "properties": {
                "answers": {"type": "string", "minLength": 1},
                "sample_submission": {"type": "string", "minLength": 1},
                "raw_files": _STRING_LIST,
            },
        },
        "leaderboard": {
            "type": "object",
            "additionalProperties": False,
            "required": ["path", "source"],
            "properties": {
                "path": {"type": "string", "minLength": 1},
                "source": {"enum": list(LEADERBOARD_SOURCES)},
                "note": {"type": "string"},
            },
        },
        "prepare": _CALLABLE_REF,
        "kernels": {"type": "string", "minLength": 1},
        "kernels_list": {"type": "string", "minLength": 1},
        "awards_medals": {"type": "boolean"},
        "competition_type": {"enum": list(COMPETITION_TYPES)},
        "splits": {
            "type": "array",
            "items": {"type": "string", "pattern": r"^[a-z0-9][a-z0-9\-]*$"},
            "uniqueItems": True,
        },
        "audit": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                **{key: _STRING_LIST for key in AUDIT_POLICY_KEYS},
                "allow_urls": {"type": "array", "items": _ALLOW_URL, "uniqueItems": True},
                "label_leak_columns": {"type": "array", "items": _COLUMN, "uniqueItems": True},
            },
        },
        "mlebench_looseness": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["kind", "note"],
                "properties": {
                    "kind": {"enum": list(MLEBENCH_LOOSENESS_KINDS)},
                    "note": {"type": "string", "pattern": r"^\S[^\n]*$"},
                    "score": {"enum": list(LOOSENESS_SCORES)},
                    "within": _COLUMN,
                    "mask_by_position": _COLUMN,
                    "pairing": {"enum": ["merge", "sorted", "pool"]},
                    "columns": {"type": "array", "items": _COLUMN, "minItems": 1, "uniqueItems": True},
                    "fill": {
                        "type": "object",
                        "propertyNames": {"enum": list(CELL_KINDS)},
                        "additionalProperties": {"type": ["number", "string", "null"]},
                    },
                    "whole_score": {
                        "type": "object",
                        "propertyNames": {"enum": list(CELL_KINDS)},
                        "additionalProperties": {"type": "number"},
                    },
                },
            },
        },
    },
}
