"""JSON output: the report's ``to_dict()`` with sorted keys and an indent of 2.

Sample::

    {
      "findings": [ {"rule_id": "llm-external-api-call", "severity": "high", ...} ],
      "grade": {"competition_id": "sklearn-digits", "score": 0.97, "any_medal": true, ...},
      "meta": {...}, "run": {...}, "schema_version": "1.0", "similarity": {...},
      "skipped": [], "verdict": {"kind": "flagged", "reasons": ["llm-external-api-call (high)"]}
    }
"""

from __future__ import annotations

import json
import math
from typing import Any, TextIO

from mleaudit.audit.report import AuditReport

__all__ = ["write_json", "to_json"]


def _clean(value: Any) -> Any:
    # JSON has no NaN/inf: write them as null rather than emitting invalid JSON.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def to_json(data: Any) -> str:
    """Deterministic JSON text (sorted keys, indent 2, no NaN) ending with a newline."""
    return json.dumps(_clean(data), sort_keys=True, indent=2, ensure_ascii=False, default=str) + "\n"


def write_json(report: AuditReport, stream: TextIO) -> None:
    """Write ``report`` as JSON to ``stream``."""
    stream.write(to_json(report.to_dict()))
