"""JSON Schemas of the files the audit writes, shipped as package data.

``report.schema.json`` (JSON Schema draft 2020-12) describes ``AuditReport.to_dict()``, the JSON
report of one run. Its ``schema_version`` is ``MAJOR.MINOR``: the major number changes when a key
disappears or changes meaning, keys may be added within a major version, and the schema file is
updated with every key the code writes (a test validates the reports of the example runs).
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any, Mapping

import jsonschema

from mleaudit.audit.errors import AuditError

__all__ = ["REPORT_SCHEMA_NAME", "ReportSchemaError", "load_report_schema", "check_report"]

#: File name of the report schema inside this package.
REPORT_SCHEMA_NAME = "report.schema.json"


class ReportSchemaError(AuditError):
    """A report does not follow ``report.schema.json``; the message lists every violation with its path."""


@lru_cache(maxsize=None)
def _schema_text(name: str) -> str:
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")


def load_report_schema() -> dict[str, Any]:
    """The report schema as a dict (a fresh copy on each call).

    Returns
    -------
    dict
        JSON Schema draft 2020-12 of ``AuditReport.to_dict()``.
    """
    return json.loads(_schema_text(REPORT_SCHEMA_NAME))


@lru_cache(maxsize=None)
def _report_validator() -> jsonschema.Draft202012Validator:
    schema = load_report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def check_report(data: Mapping[str, Any], *, source: str = "report") -> Mapping[str, Any]:
    """Validate a report dict (``AuditReport.to_dict()`` or a loaded JSON report) against the schema.

    Parameters
    ----------
    data : mapping
        The report, as JSON would hold it (lists, not tuples, where it matters only for readers).
    source : str, default "report"
        Where the report came from (a file name), used in the error message.

    Returns
    -------
    mapping
        ``data`` itself, unchanged, when it is valid.

    Raises
    ------
    ReportSchemaError
        If it is not valid; the message names ``source`` and each violation's JSON path.
    """
    errors = sorted(_report_validator().iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        lines = [f"  - {'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}" for e in errors[:20]]
        more = f"\n  ... and {len(errors) - 20} more" if len(errors) > 20 else ""
        raise ReportSchemaError(f"{source} does not follow {REPORT_SCHEMA_NAME}:\n" + "\n".join(lines) + more)
    return data
