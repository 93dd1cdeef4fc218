"""Staging the agent-writable folders and turning them into the run dir afterwards.

During a run the agent writes only to ``<run>/.sandbox/out/{submission,logs,code}`` (bound at
``/home/submission``, ``/home/logs``, ``/home/code``); the host keeps its own files next to them
(the validation calls log), where the sandbox cannot reach. ``run.log`` is written by the host.
Afterwards :func:`finalize_run_dir`:

- removes what a host program must not follow out of the agent's folders: symbolic links
  (a ``submission.csv`` linking to the answers would make the grader read them), FIFOs, sockets
  and device nodes, and copies hard-linked files so they share no inode with anything else.
  Every name and byte there is treated as hostile: the walk goes by directory descriptors only
  (any depth, any path length, no recursion, never through a link), names are bytes (reported
  escaped), folders end up 0755 and files 0644/0755, and what cannot be handled is reported;
- moves the folders into place as ``submission/``, ``logs/``, ``code/`` (the
  :class:`mleaudit.audit.run.RunLayout` contract) and gives them back to the calling user;
- puts the host's calls log at ``logs/validation_calls.jsonl``; a file the agent wrote under
  that name is kept as ``logs/validation_calls.agent.jsonl`` and reported as a spoofing attempt;
- writes ``run.json`` with everything that happened, including these events.

The dot-folder is removed at the end (the audit never enters dot-folders anyway).

Routine Listings
----------------
names
    ``printable``, ``clip``, ``strerror``: hostile names and messages shown as text.
events
    ``new_event`` and ``bounded_events`` (at most ``MAX_EVENTS``, the least needed kinds of
    ``EVENT_PRIORITY`` dropped first).
stage
    :class:`RunDirStage`: the staging folders and their hand-over to the sandbox user.
walk
    ``DescriptorWalk``: the walk by directory descriptors (``MAX_HELD_DIR_FDS``), and the event
    paths it bounds (``MAX_EVENT_PATH_CHARS``).
sanitize
    :func:`sanitize_outputs`: what is done to every entry of the walk (``MAX_HARD_LINK_COPY_BYTES``).
finalize
    :func:`finalize_run_dir` and :data:`RUN_JSON_SCHEMA_VERSION`.

Notes
-----
The names above are re-exported here, so callers import from ``mleaudit.sandbox.extract``.
Imports point down the listing: a module imports only modules listed before it, plus
``mleaudit.sandbox.validation`` (the calls log's name) and ``mleaudit.audit.run`` (the run-dir
layout, the one contract with the audit). A new kind of entry to refuse or repair is handled in
``sanitize`` (``_Sanitizer._check``), its event kind ranked in ``EVENT_PRIORITY``; a new file the
host adds to the run dir is placed in ``finalize_run_dir``.
"""

from __future__ import annotations

from mleaudit.sandbox.extract.finalize import RUN_JSON_SCHEMA_VERSION, finalize_run_dir
from mleaudit.sandbox.extract.sanitize import sanitize_outputs
from mleaudit.sandbox.extract.stage import RunDirStage

__all__ = ["RunDirStage", "finalize_run_dir", "sanitize_outputs", "RUN_JSON_SCHEMA_VERSION"]
