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

__all__ = ["json_pure", "write_json", "to_json"]


def _clean(value: Any) -> Any:
    # JSON has no NaN/inf: write them as null rather than emitting invalid JSON.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _null(_constant: str) -> None:
    return None


def json_pure(data: Any) -> Any:
    """``json.loads(to_json(data))`` without the indented text: a fresh copy holding what JSON
    holds (lists for tuples, ``None`` for NaN and infinity, string keys, keys sorted).

    The text is written by the C encoder (the indented one is pure Python, ten times slower on
    a large report), NaN and infinity as JavaScript's constants that the parser turns into
    ``None``; data with a key that is not a ``str`` takes the path of :func:`to_json`.
    """
    if _string_keys(data):
        text = json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)
    else:  # the C encoder writes True, None or an enum key its own way
        text = json.dumps(_clean(data), sort_keys=True, ensure_ascii=False, default=str)
    return json.loads(text, parse_constant=_null)


def _string_keys(value: Any) -> bool:
    """Whether every mapping inside ``value`` (lists and tuples entered) has keys of type ``str``
    (a stack, not recursion: a report nests as deep as :func:`to_json` can write)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if not all(type(key) is str for key in item):
                return False
            stack.extend(v for v in item.values() if isinstance(v, (dict, list, tuple)))
        elif isinstance(item, (list, tuple)):
            stack.extend(v for v in item if isinstance(v, (dict, list, tuple)))
    return True


def to_json(data: Any) -> str:
    """Deterministic JSON text (sorted keys, indent 2, no NaN) ending with a newline."""
    return json.dumps(_clean(data), sort_keys=True, indent=2, ensure_ascii=False, default=str) + "\n"


def write_json(report: AuditReport, stream: TextIO) -> None:
    """Write ``report`` as JSON to ``stream``."""
    stream.write(to_json(report.to_dict()))
