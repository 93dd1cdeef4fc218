"""What every matcher shares: the :class:`Subject` it reads, the :class:`Matcher` protocol and the regex time bound.

:data:`REGEX_TIMEOUT_SECONDS` bounds one regex over one unit (:func:`bounded_finditer`); a regex
that backtracks past it raises ``TimeoutError``, which the engine reports as an evaluation error.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Protocol

import regex as _regex

from mleaudit.audit.parsing import parse
from mleaudit.audit.rules.match import Match
from mleaudit.audit.rules.policy import RulePolicy
from mleaudit.audit.rules.prefilter import FoldedTexts, fold


@dataclass(frozen=True, slots=True, kw_only=True)
class Subject:
    """A text to match: a code unit's text, a log event's text or a file's text.

    ``language`` is a grammar name of :data:`mleaudit.audit.parsing.LANGUAGES` or ``None`` (then query
    matchers find nothing); ``path`` is the host path, for diagnostics only; ``policy`` is the
    competition's audit policy (``terms`` filters read it); ``unevaluated`` collects what could
    not be checked.
    """

    text: str
    language: str | None
    path: str = ""
    policy: RulePolicy | None = None
    #: Filled by matchers with what they could not evaluate on this subject (query patterns
    #: with no literal to search for on a pathological tree); the engine reports each entry as
    #: an evaluation error of the rule, next to whatever the rule did find.
    unevaluated: list[str] = field(default_factory=list, compare=False)
    #: Lower-cased texts shared by the rules of one evaluation (regex prefilters read them).
    folds: FoldedTexts | None = field(default=None, compare=False)

    def folded(self) -> str | None:
        """The text as :meth:`Prefilter.met` reads it (:func:`mleaudit.audit.rules.prefilter.fold`)."""
        return self.folds.get(self.text) if self.folds is not None else fold(self.text)


class Matcher(Protocol):
    """What every compiled matcher provides."""

    #: Names of the captures its matches may carry (template placeholders, ``focus``).
    capture_names: frozenset[str]

    def find(self, subject: Any) -> list[Match]:  # pragma: no cover - protocol
        ...


#: Wall-clock bound, in seconds, on one regex over one unit (all its matches together). A rule's
#: regex that backtracks past it on some text raises ``TimeoutError``, which the engine reports as
#: an evaluation error (a gap of the audit), never as "no match".
REGEX_TIMEOUT_SECONDS = 5.0


def tree_shape(subject: Subject) -> tuple[Any, str | None]:
    """Parse the subject once; return the tree and why it is pathological (``None`` when ordinary)."""
    parsed = parse(subject.text, subject.language)
    return parsed, parsed.pathological()


def bounded_finditer(pattern: Any, text: str, *, timeout: float | None = None) -> Iterator[Any]:
    """``pattern.finditer(text)`` with one wall-clock bound on all its matches together.

    Parameters
    ----------
    pattern : regex.Pattern or re.Pattern
        A pattern of the ``regex`` package gets the remaining time as its ``timeout`` on every
        search, so catastrophic backtracking is cut short inside one search; for an ``re``
        pattern the bound is checked between matches only.
    text : str
    timeout : float, optional
        Seconds for the whole iteration (default :data:`REGEX_TIMEOUT_SECONDS`).

    Yields
    ------
    match objects, as ``finditer`` yields them (an empty match advances one character).

    Raises
    ------
    TimeoutError
        The bound was reached; the matches yielded so far are a prefix of the full result.
    """
    timeout = REGEX_TIMEOUT_SECONDS if timeout is None else timeout
    deadline = time.monotonic() + timeout
    bounded = isinstance(pattern, _regex.Pattern)
    pos = 0
    end = len(text)
    while pos <= end:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"regex ran past its {timeout:g} s bound")
        m = pattern.search(text, pos, timeout=left) if bounded else pattern.search(text, pos)
        if m is None:
            return
        yield m
        pos = m.end() if m.end() > m.start() else m.end() + 1
