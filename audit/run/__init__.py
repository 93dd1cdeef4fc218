"""The run model: what an agent run directory holds, and ``load_run`` to read one.

Layout contract (MLE-bench's): ``submission/submission.csv``, ``logs/``, ``code/``, ``run.log``
and an optional ``run.json``/``metadata.json``. A bare folder of ``.py``/``.ipynb``/``.log``/
``.txt``/``.json`` files (AutoKaggle phase folders, an AIDE output dir) and an MLAgentBench log
folder (``agent_log/``, ``env_log/``) are read too, and the layout found is recorded
(:data:`RunLayout.LAYOUTS`).

A file is classified by its name (:func:`classify_path`); a file whose name says nothing
(no extension, or an unknown one: ``main_log``, ``train.py_2024-02-04_14-26-56``,
``config.yaml``) is classified by its content (:func:`classify_content`: binary, archive,
Python, shell script or text) and the way it was told is noted.

Run contents are untrusted. Size caps (:class:`RunLayout`): a file over ``MAX_FILE_BYTES`` is
not read, except a log, of which the first ``MAX_LOG_BYTES`` are read (to the last line end)
and the rest is reported; nothing is ever read whole into memory past those caps. Text is
decoded by :func:`decode_text` (UTF-8, BOMs honoured, other encodings detected, and invalid
bytes replaced and counted when no encoding fits).

Routine Listings
----------------
layout
    :class:`RunLayout` (the run-directory contract the sandbox shares) and :func:`detect_layout`.
kinds
    :class:`ArtifactKind` and :func:`classify_path`: a file's kind by its name.
reading
    :func:`read_run_file` and :func:`display_name`: reads that follow no link and keep to the caps.
decoding
    :func:`decode_text` and :func:`printable_share`: bytes to text, in whatever encoding.
sniffing
    :func:`classify_content` and :func:`python_by_content`: a file's kind by its content.
artifacts
    :class:`Artifact` and :class:`Run`.
walk
    The folder walk: regular files under the root, refused paths with reasons.
loader
    :func:`load_run`.

Notes
-----
Every public name is re-exported here, so callers import from ``mleaudit.audit.run``. Imports
point down the listing above: a module imports only modules listed before it, plus
``mleaudit.audit.errors``, ``mleaudit.audit.model``, ``mleaudit.audit.parsing`` and
``mleaudit.grading.untrusted_json``; ``layout`` imports nothing of ours, so that the sandbox can
depend on it. A new run layout is added to :class:`RunLayout` (``LAYOUTS``, its submission
candidates) and told in :func:`detect_layout`; a new file extension goes in ``kinds``; a new
content signature (a data or archive magic, a script header) in ``sniffing``. Every limit and
every refusal message here decides whether a verdict may be clean: a file not read must end up in
``Run.skipped``.
"""

from mleaudit.audit.run.artifacts import Artifact, Run
from mleaudit.audit.run.decoding import BINARY_INVALID_SHARE, MIN_PRINTABLE_SHARE, decode_text, printable_share
from mleaudit.audit.run.kinds import ArtifactKind, classify_path
from mleaudit.audit.run.layout import RunLayout, detect_layout
from mleaudit.audit.run.loader import load_run
from mleaudit.audit.run.reading import display_name, read_run_file
from mleaudit.audit.run.sniffing import LONE_CR, SNIFF_BYTES, classify_content, in_agent_folder, python_by_content

__all__ = [
    "RunLayout",
    "ArtifactKind",
    "Artifact",
    "Run",
    "load_run",
    "classify_content",
    "classify_path",
    "decode_text",
    "detect_layout",
    "display_name",
    "printable_share",
    "read_run_file",
    "python_by_content",
    "in_agent_folder",
    "LONE_CR",
    "SNIFF_BYTES",
    "BINARY_INVALID_SHARE",
    "MIN_PRINTABLE_SHARE",
]
