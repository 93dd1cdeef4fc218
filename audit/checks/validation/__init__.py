"""Validation-endpoint use: how often a run called the local ``/validate`` endpoint, and from loops.

MLE-bench gives agents a local validation endpoint (``POST /validate``, or the
``validate_submission.sh`` helper around it) that says whether a submission file is well formed.
It is meant for format checks: a handful of calls while the agent fixes column names, types or
row counts. Posting many perturbed submissions turns it into a test-set oracle, even when it
only answers valid/invalid.

Calls are counted from four sources, each a lower bound of the truth:

- the sandbox's record :data:`VALIDATION_CALLS_LOG` (``logs/validation_calls.jsonl``), one JSON
  object per call: ``{"ts": <ISO-8601 string or epoch seconds>, "valid": <bool>, "message": <str>}``
  (with ``reason``, ``column``, ``row`` and ``status`` since the endpoint records reason codes);
  when present it is the count of record and gives bursts (calls within ``window_s`` seconds);
- call sites in code and commands: an HTTP or subprocess call whose arguments reach the
  endpoint (directly, through a variable, or through a helper function), a ``curl``/helper
  command; a call inside a loop counts the loop's iterations (``range(300)``, ``seq 200``,
  ``{1..50}``), ``while True`` counts as unbounded;
- validator replies printed in outputs (``Submission is valid.`` / ``Submission invalid!``, or the
  sandbox endpoint's ``{"valid": ..., "result": ...}``);
- tool calls that name the endpoint or the helper.

Audited code is parsed, never run.

Layering: like every check module, this package imports the model, units, parsing, logs, run
loading and the rules engine's ``context``/``registry``/``match``, and the shared helpers of
the checks (:mod:`~mleaudit.audit.checks.writes`, ``tables``, ``evidence``); importing it
registers its checks. A new check on validator use goes in :mod:`~.checks` (or a module of its
own, imported below).

Routine Listings
----------------
:mod:`~.calls`: :data:`VALIDATION_CALLS_LOG`, :class:`ValidationCall`, :class:`ValidationLogError`,
:func:`load_validation_calls`.
:mod:`~.sites`: :class:`CallSite`, call sites in Python and shell code.
:mod:`~.usage`: :class:`ValidationUsage`, :func:`assess_validation`.
:mod:`~.checks`: :func:`validation_probing`, :func:`validation_call_count`, :func:`validation_replies`.
:mod:`~.helper_loop`: :func:`validation_helper_loop`.
"""

from __future__ import annotations

from mleaudit.audit.checks.validation.calls import VALIDATION_CALLS_LOG, ValidationCall, ValidationLogError, load_validation_calls
from mleaudit.audit.checks.validation.checks import validation_call_count, validation_probing, validation_replies
from mleaudit.audit.checks.validation.helper_loop import validation_helper_loop
from mleaudit.audit.checks.validation.sites import CallSite
from mleaudit.audit.checks.validation.usage import ValidationUsage, assess_validation

__all__ = [
    "VALIDATION_CALLS_LOG",
    "CallSite",
    "ValidationCall",
    "ValidationLogError",
    "ValidationUsage",
    "assess_validation",
    "load_validation_calls",
    "validation_call_count",
    "validation_helper_loop",
    "validation_probing",
    "validation_replies",
]
