"""The host side of the validation endpoint, served over a Unix socket bound into the sandbox.

MLE-bench gives agents ``POST /validate`` (and ``/home/validate_submission.sh`` around it) to
check that a submission file is well formed. Here the server runs on the host, where the
answers are, and listens on a Unix socket that is bound into the sandbox at
``/home/validate.sock``, so it works with no network at all. It answers JSON
``{"valid": bool, "result": text}``, where the text is rendered only from the endpoint's own
templates (:mod:`mleaudit.sandbox.feedback`): a reason, at most a column name the submission itself has
(or a public expected column), a line number within the file (the header is line 1), counts of
the file's own rows and fields, public facts of the competition (the sample submission's row
count, what the metric needs) and the host's configured limits. Grading's own message, an
exception's text, ids, cells and answer values never reach the agent.

Every call that reached the validator is appended to a JSON Lines log that only the host can
write, one object per call::

    {"ts": "2024-05-01T12:00:00.123456+00:00", "valid": false, "message": "<the reply text>",
     "reason": "missing-value", "column": "label", "row": 7, "line": 8, "status": 200}

which the run dir keeps at ``logs/validation_calls.jsonl`` for the audit's probing checks.
``column`` and ``line`` are what the reply names (or ``null``); ``row`` is the data row whose
line the reply names (``null`` when it names none, or a line the parser found).
``status`` is 200 for a verdict, 504 when the validation ran out of time and 500 when the
validator failed. Refused requests are not calls: they are counted in :attr:`ValidationServer.stats`
and summarised by :meth:`ValidationServer.events` for ``run.json``.

Host cost is bounded (:class:`ValidationLimits`):

- request bodies are streamed to disk, never held in memory: a ``Content-Length`` over
  ``max_bytes`` is refused with 413 before any of the body is read, and a chunked body is
  refused with 413 as soon as it passes the cap; ``multipart/form-data`` bodies (``curl -F
  file=@submission.csv``, as MLE-bench's server takes) are parsed as they stream, with
  ``python-multipart``, and only the ``file`` part (else the first part with a file name) is
  kept; any other body is the raw file (``Content-Type: text/csv`` or ``application/octet-stream``);
- the validator runs in a separate worker process (:mod:`mleaudit.sandbox.validation_worker`) with an
  address-space limit and a wall-clock bound per call;
- one request is read and validated at a time; another waits at most ``busy_wait_s`` and is
  then refused with 429, and connections beyond :data:`MAX_CONNECTIONS` get 503 at once.

Routine Listings
----------------
limits
    :data:`Validator`, :data:`VALIDATION_CALLS_FILE`, :class:`ValidationLimits` and the
    defaults and timeouts of a request (``MAX_CONNECTIONS``).
body
    ``body_pieces`` and ``receive_multipart``: a request's body streamed to a file, bounded;
    ``Refused``, a request refused before validation.
handler
    ``Handler``: the HTTP request handler (``/health``, ``/validate``), its refusals and replies.
server
    :class:`ValidationServer` (the worker, the calls log, the refusal events) and
    :class:`ValidationStats`.
client
    :func:`post_submission`: the host-side client.

Notes
-----
The names above are re-exported here, so callers import from ``mleaudit.sandbox.validation``.
Imports point down the listing: a module imports only modules listed before it, plus
``mleaudit.sandbox.feedback`` (the reply templates), ``mleaudit.sandbox.unix_service`` and
``mleaudit.sandbox.validation_worker`` (the worker process, which imports ``mleaudit.grading``);
nothing here imports ``mleaudit.audit``. A new refusal gets its cause raised as ``Refused`` (in
``body`` or ``handler``) and its ``run.json`` text in ``server.REFUSAL_DETAILS``; a new field of
the calls log is written in ``ValidationServer.validate``.
"""

from __future__ import annotations

from mleaudit.sandbox.feedback import ValidationOutcome
from mleaudit.sandbox.validation.client import post_submission
from mleaudit.sandbox.validation.limits import VALIDATION_CALLS_FILE, ValidationLimits, Validator
from mleaudit.sandbox.validation.server import ValidationServer, ValidationStats

__all__ = [
    "Validator",
    "ValidationLimits",
    "ValidationOutcome",
    "ValidationStats",
    "ValidationServer",
    "VALIDATION_CALLS_FILE",
    "post_submission",
]
