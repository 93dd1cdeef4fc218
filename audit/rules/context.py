"""What a run-level check looks at: :class:`RunContext` (the run's files, code, log events and answers).

The rules engine builds one per run (or the pipeline does) and hands it to every ``run`` rule's
built-in check (:mod:`mleaudit.audit.rules.registry`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from mleaudit.audit.model import Skipped
from mleaudit.audit.units import CodeUnit, LogEvent

__all__ = ["RunContext"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunContext:
    """Everything a run-level check may look at.

    Parameters
    ----------
    root : Path
        The run directory.
    submission_path : Path or None
        The run's ``submission.csv`` on disk (``None`` when the run wrote none).
    answers_path : Path or None
        Held-out answers CSV, read on the host only (``None`` when not prepared).
    sample_submission_path : Path or None
        The competition's sample submission CSV.
    id_column : str or None
        Column that identifies a row in the submission and the answers.
    target_columns : tuple of str
        Prediction columns (empty: every non-id column shared by submission and answers).
    answer_columns : mapping of str to str
        Prediction column -> the answers' column holding its truth, where they differ.
    column_aliases : mapping of str to str
        Prediction column -> another name the grader accepts for it in a submission.
    ids_by_number : bool
        The grader matches ids that spell one number (``7``, ``007``, ``7.0``) as one id.
    competition_id : str or None
        The run's competition (``--competition`` or the run's metadata), when known; checks
        that read what the competition publishes (its public files, its public notebooks)
        fall back to the run's ``run.json``/``metadata.json`` when it is ``None``
        (:func:`mleaudit.audit.checks.competition.competition_id`).
    code_units : tuple of CodeUnit
        The run's code (files, notebook code, code from logs).
    log_events : tuple of LogEvent
        The run's log events in order.
    skipped : list of Skipped
        Filled by checks (through :meth:`skip`) with the inputs they could not read: an
        unreadable submission, a sample submission over the size cap. The pipeline lists them
        under the report's ``skipped`` and as gaps of the audit: a check that could not read
        its input did not judge the run, so the verdict cannot be ``clean``.
    memo : dict
        Scratch space shared by the checks of one run, so that several rules built on one
        analysis run it once (see :meth:`memoize`).
    """

    root: Path
    submission_path: Path | None = None
    answers_path: Path | None = None
    sample_submission_path: Path | None = None
    id_column: str | None = None
    target_columns: tuple[str, ...] = ()
    answer_columns: Mapping[str, str] = field(default_factory=dict)
    column_aliases: Mapping[str, str] = field(default_factory=dict)
    ids_by_number: bool = False
    competition_id: str | None = None
    code_units: tuple[CodeUnit, ...] = ()
    log_events: tuple[LogEvent, ...] = ()
    skipped: list[Skipped] = field(default_factory=list, compare=False, repr=False)
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    def skip(self, path: str, reason: str) -> None:
        """Record that ``path`` (relative to the run root, or a file name) could not be used."""
        item = Skipped(path=path, reason=reason)
        if item not in self.skipped:
            self.skipped.append(item)

    def memoize(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per context and ``key``; later calls return the stored value."""
        if key not in self.memo:
            self.memo[key] = compute()
        return self.memo[key]

    def mentions(self, pattern: re.Pattern[str], text: str) -> bool:
        """``pattern.search(text) is not None``, searched once per distinct text of this context.

        The prefilters of the checks run over every code unit, and agent logs repeat one script
        at every step (hundreds of units, a few dozen distinct texts).
        """
        seen = self.memo.setdefault(("mentions", pattern), {})
        found = seen.get(text)
        if found is None:
            found = seen[text] = pattern.search(text) is not None
        return found

    def relative(self, path: Path) -> str:
        """``path`` as a POSIX string relative to ``root``, or its name when it lies outside."""
        try:
            return Path(path).resolve().relative_to(Path(self.root).resolve()).as_posix()
        except ValueError:
            return Path(path).name
