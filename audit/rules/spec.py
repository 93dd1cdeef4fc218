"""Rule specifications: the typed form of one YAML rule file (DESIGN §4.3 "Rules as data").

:func:`RuleSpec.from_dict` turns a schema-valid mapping (``rules/schema.json``) into frozen value
objects; it does not compile queries or regexes (``mleaudit.audit.rules.loader`` does that, so that all
problems of a ruleset are reported together). The matcher tree is a union of
:class:`QuerySpec`, :class:`RegexSpec`, :class:`StringsSpec`, :class:`BuiltinSpec`,
:class:`AllSpec`, :class:`AnySpec`, and the filters that are only valid inside ``all``:
:class:`NotSpec`, :class:`InsideSpec` and :class:`TermsSpec`.

Naming: ``targets`` is what a rule scans (``code``, ``log``, ``file``, ``run``, ``similarity``);
``focus`` is the capture that becomes the primary evidence span.
"""

from __future__ import annotations

import enum
import fnmatch
import functools
import math
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Mapping, Union

from mleaudit.audit.errors import RuleError
from mleaudit.audit.model import Confidence, Severity
from mleaudit.audit.units import Actor, LogEventKind

__all__ = [
    "Target",
    "RuleStatus",
    "QuerySpec",
    "RegexSpec",
    "StringsSpec",
    "BuiltinSpec",
    "AllSpec",
    "AnySpec",
    "NotSpec",
    "InsideSpec",
    "TermsSpec",
    "MatcherSpec",
    "Threshold",
    "Thresholds",
    "PathFilter",
    "RuleMetadata",
    "RuleSpec",
    "PAIR_FIELDS",
    "NUMERIC_PAIR_FIELDS",
    "REGEX_FLAGS",
    "DEFAULT_EVENTS",
    "DEFAULT_ACTORS",
]

#: Fields of a similarity pair report that a ``similarity`` rule's message may use.
PAIR_FIELDS = (
    "agent_path",
    "reference_path",
    "reference_id",
    "similarity",
    "agent_containment",
    "reference_containment",
    "longest_fragment",
    "total_overlap",
    "score",
    "copied_lines",
    "copied_fragments",
    "summary",
)
#: Fields a ``when`` threshold may test (numbers; containments, similarity and the copy
#: detector's ``score`` in [0, 1], ``longest_fragment`` and ``total_overlap`` in k-grams).
NUMERIC_PAIR_FIELDS = (
    "similarity",
    "agent_containment",
    "reference_containment",
    "longest_fragment",
    "total_overlap",
    "score",
)
#: YAML spelling of regex flags -> ``re`` flag names.
REGEX_FLAGS = {"ignorecase": "IGNORECASE", "multiline": "MULTILINE", "dotall": "DOTALL"}
#: Log event kinds scanned when a ``log`` rule names none: what the agent itself wrote. Program
#: output and scaffold messages are left out on purpose (a scaffold's own API traffic is not
#: the agent's doing).
DEFAULT_EVENTS = (LogEventKind.COMMAND, LogEventKind.CODE)
#: Who a rule judges when it does not say: what the agent did, and what nobody can place
#: (fail closed: an unattributed unit is never exempt). The scaffold's own process and the
#: operator's harness are judged only by rules that name them (DESIGN decision 12).
DEFAULT_ACTORS = frozenset({Actor.AGENT, Actor.UNKNOWN})


class Target(enum.Enum):
    """What a rule scans: one code unit, one log event, one file, the whole run, one pair report."""

    CODE = "code"
    LOG = "log"
    FILE = "file"
    RUN = "run"
    SIMILARITY = "similarity"


class RuleStatus(enum.Enum):
    """``experimental`` rules only run when asked for (``--include-experimental``)."""

    STABLE = "stable"
    EXPERIMENTAL = "experimental"


@dataclass(frozen=True, slots=True, kw_only=True)
class QuerySpec:
    """A tree-sitter query per language: ``queries`` is ``((language, source), ...)``."""

    queries: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class RegexSpec:
    """A Python regular expression; named groups are the captures.

    ``flags`` uses the YAML names (``ignorecase``, ``multiline``, ``dotall``). ``languages``,
    when not empty, limits the regex to code units and log events of those languages.
    """

    pattern: str
    flags: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class StringsSpec:
    """A regular expression over the folded values of string expressions (:mod:`mleaudit.audit.rules.strings`).

    ``assembled_only`` keeps only matches that no single literal spells out by itself (those are
    left to ``query``/``regex`` rules, so the same place is not reported twice).
    """

    pattern: str
    flags: tuple[str, ...] = ()
    assembled_only: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class BuiltinSpec:
    """A call of the built-in check ``name`` (``mleaudit.audit.rules.registry.CHECKS``) with keyword ``params``."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class AllSpec:
    """Matches when every positive child matches in the same unit; ``not`` children filter."""

    children: tuple["MatcherSpec", ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AnySpec:
    """The union of the children's matches."""

    children: tuple["MatcherSpec", ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class NotSpec:
    """Inside ``all`` only: drops candidate matches that overlap a match of ``child``."""

    child: "MatcherSpec"


@dataclass(frozen=True, slots=True, kw_only=True)
class InsideSpec:
    """Inside ``all`` only: keeps the primary matches that lie within a match of ``child``."""

    child: "MatcherSpec"


@dataclass(frozen=True, slots=True, kw_only=True)
class TermsSpec:
    """Inside ``all`` only: keeps the primary matches whose ``capture`` names one of the terms.

    The terms are ``values`` plus the competition policy list ``policy`` (a key of the
    ``audit:`` section of ``competitions/<id>/config.yaml``, e.g. ``label_leak_columns``). A term
    counts when it occurs as a whole word in the capture's text (the whole match when
    ``capture`` is ``None``); the first one found fills the ``{term}`` placeholder.
    """

    capture: str | None = None
    policy: str | None = None
    values: tuple[str, ...] = ()


MatcherSpec = Union[QuerySpec, RegexSpec, StringsSpec, BuiltinSpec, AllSpec, AnySpec, NotSpec, InsideSpec, TermsSpec]

_OPERATORS = {
    "gte": lambda a, b: a >= b,
    "gt": lambda a, b: a > b,
    "lte": lambda a, b: a <= b,
    "lt": lambda a, b: a < b,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Threshold:
    """One bound on a pair report field: ``field`` ``op`` ``value`` (``op`` in gte/gt/lte/lt)."""

    field: str
    op: str
    value: float

    def test(self, actual: Any) -> bool:
        """True when ``actual`` is a number that satisfies the bound (``None``/NaN never do)."""
        if actual is None or isinstance(actual, bool):
            return False
        try:
            number = float(actual)
        except (TypeError, ValueError):
            return False
        if math.isnan(number):
            return False
        return _OPERATORS[self.op](number, self.value)


@dataclass(frozen=True, slots=True, kw_only=True)
class Thresholds:
    """All bounds of a ``when`` block; a pair passes when every bound holds."""

    conditions: tuple[Threshold, ...]

    def test(self, pair: Any) -> bool:
        """True when ``pair`` (any object with the :data:`PAIR_FIELDS` attributes) meets every bound."""
        return all(c.test(getattr(pair, c.field, None)) for c in self.conditions)


@functools.lru_cache(maxsize=65536)
def _glob_hit(path: str, globs: tuple[str, ...]) -> bool:
    """Whether ``path`` or (for a glob without ``/``) its file name matches one of ``globs``;
    memoized: a run's events name a few paths, each tested by every rule with a filter."""
    name = PurePosixPath(path).name
    return any(fnmatch.fnmatchcase(path, g) or ("/" not in g and fnmatch.fnmatchcase(name, g)) for g in globs)


@dataclass(frozen=True, slots=True, kw_only=True)
class PathFilter:
    """``include``/``exclude`` globs matched with :func:`fnmatch.fnmatchcase` on host paths.

    A glob without ``/`` also matches the file name alone (``*.ipynb`` matches
    ``code/a/b.ipynb``); ``*`` crosses directory separators, as in semgrep's ``paths``.
    """

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @staticmethod
    def _hit(path: str, globs: tuple[str, ...]) -> bool:
        if not globs:
            return False  # most rules have no filter: no path parsing for every unit and event
        return _glob_hit(path, globs)

    def accepts(self, path: str) -> bool:
        """True when ``path`` passes ``include`` (if any) and matches no ``exclude`` glob."""
        if self.include and not self._hit(path, self.include):
            return False
        return not self._hit(path, self.exclude)


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleMetadata:
    """Reviewer-facing context: ``rationale`` (markdown), ``references`` (URLs), ``since`` (version)."""

    rationale: str
    references: tuple[str, ...] = ()
    since: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleSpec:
    """One rule, as written in ``rules/<category>/<id>.yaml``.

    Parameters
    ----------
    id : str
        Kebab-case, globally unique, equal to the file stem, with a category prefix.
    title, message : str
        Short noun phrase; one-line message with ``{capture}`` / ``{field:.0%}`` placeholders.
    severity : Severity
        How bad if true.
    confidence : Confidence
        How likely the detector is right.
    category : str
        One of the categories of ``rules/schema.json``.
    targets : tuple of Target
        What the rule scans; ``code``, ``log`` and ``file`` may be combined, ``run`` and
        ``similarity`` stand alone.
    languages : tuple of str
        Grammar names; code units of other languages are skipped (empty: all languages).
    events : tuple of LogEventKind
        Log event kinds scanned by ``log`` rules.
    actors : frozenset of Actor
        Whose code units and log events the rule judges (:data:`DEFAULT_ACTORS` when the YAML
        has no ``actors``); units and events of other actors are not scanned by it.
    paths : PathFilter
        Include/exclude globs on host paths.
    match : MatcherSpec or None
        The matcher tree (``None`` for similarity rules).
    when : Thresholds or None
        Similarity thresholds (``None`` for other rules).
    focus : str or None
        Capture or regex group that becomes the primary evidence span.
    metadata : RuleMetadata
        Rationale, references, since.
    status : RuleStatus
        Stable rules always run; experimental ones only on request.
    source_path : Path or None
        The YAML file the rule came from.
    """

    id: str
    title: str
    message: str
    severity: Severity
    confidence: Confidence
    category: str
    targets: tuple[Target, ...]
    languages: tuple[str, ...] = ()
    events: tuple[LogEventKind, ...] = DEFAULT_EVENTS
    actors: frozenset[Actor] = DEFAULT_ACTORS
    paths: PathFilter = field(default_factory=PathFilter)
    match: MatcherSpec | None = None
    when: Thresholds | None = None
    focus: str | None = None
    metadata: RuleMetadata = field(default_factory=lambda: RuleMetadata(rationale=""))
    status: RuleStatus = RuleStatus.STABLE
    source_path: Path | None = None

    @property
    def target(self) -> Target:
        """The first (primary) target; self-test snippets given as plain strings use it."""
        return self.targets[0]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source_path: Path | None = None) -> "RuleSpec":
        """Build a spec from a mapping already validated against ``rules/schema.json``.

        Parameters
        ----------
        data : Mapping
            The parsed YAML document.
        source_path : Path, optional
            Where it was read from (used in error messages).

        Returns
        -------
        RuleSpec

        Raises
        ------
        RuleError
            If a value cannot be converted (an unknown severity, a query string without
            ``languages``); the message names the rule id and file.
        """
        rule_id = str(data.get("id", "?"))
        where = f"{rule_id} ({source_path})" if source_path else rule_id
        try:
            raw_targets = data["target"]
            targets = tuple(Target(t) for t in ([raw_targets] if isinstance(raw_targets, str) else raw_targets))
            languages = tuple(data.get("languages", ()))
            events = tuple(LogEventKind(e) for e in data.get("events", ())) or DEFAULT_EVENTS
            actors = frozenset(Actor.parse(a) for a in data.get("actors", ())) or DEFAULT_ACTORS
            paths = data.get("paths") or {}
            meta = data.get("metadata") or {}
            when = data.get("when")
            thresholds = None
            if when is not None:
                thresholds = Thresholds(
                    conditions=tuple(
                        Threshold(field=name, op=op, value=float(value))
                        for name, bounds in when.items()
                        for op, value in bounds.items()
                    )
                )
            return cls(
                id=rule_id,
                title=str(data["title"]),
                message=str(data["message"]),
                severity=Severity.parse(data["severity"]),
                confidence=Confidence.parse(data["confidence"]),
                category=str(data["category"]),
                targets=targets,
                languages=languages,
                events=events,
                actors=actors,
                paths=PathFilter(include=tuple(paths.get("include", ())), exclude=tuple(paths.get("exclude", ()))),
                match=_matcher_from_dict(data["match"], languages) if "match" in data else None,
                when=thresholds,
                focus=data.get("focus"),
                metadata=RuleMetadata(
                    rationale=str(meta.get("rationale", "")),
                    references=tuple(str(r) for r in meta.get("references", ())),
                    since=str(meta["since"]) if meta.get("since") is not None else None,
                ),
                status=RuleStatus(data.get("status", "stable")),
                source_path=source_path,
            )
        except RuleError as exc:
            raise RuleError(f"{where}: {exc}") from None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise RuleError(f"{where}: cannot build rule: {exc!r}") from None


def _matcher_from_dict(node: Any, languages: tuple[str, ...]) -> MatcherSpec:
    if not isinstance(node, Mapping) or len(node) == 0:
        raise RuleError(f"a matcher must be a mapping, got {node!r}")
    if "query" in node:
        query = node["query"]
        if isinstance(query, str):
            if not languages:
                raise RuleError("a query given as one string needs the rule's `languages`")
            pairs = tuple((lang, query) for lang in languages)
        else:
            pairs = tuple((str(lang), str(src)) for lang, src in query.items())
        return QuerySpec(queries=pairs)
    if "regex" in node:
        return RegexSpec(
            pattern=str(node["regex"]),
            flags=tuple(node.get("regex_flags", ())),
            languages=tuple(node.get("languages", ())),
        )
    if "strings" in node:
        return StringsSpec(
            pattern=str(node["strings"]),
            flags=tuple(node.get("regex_flags", ())),
            assembled_only=bool(node.get("assembled_only", False)),
        )
    if "inside" in node:
        return InsideSpec(child=_matcher_from_dict(node["inside"], languages))
    if "terms" in node:
        terms = node["terms"]
        if not isinstance(terms, Mapping):
            raise RuleError(f"`terms` must be a mapping, got {terms!r}")
        return TermsSpec(
            capture=terms.get("capture"),
            policy=terms.get("policy"),
            values=tuple(str(v) for v in terms.get("values", ())),
        )
    if "builtin" in node:
        return BuiltinSpec(name=str(node["builtin"]), params=dict(node.get("params") or {}))
    if "all" in node:
        return AllSpec(children=tuple(_matcher_from_dict(c, languages) for c in node["all"]))
    if "any" in node:
        return AnySpec(children=tuple(_matcher_from_dict(c, languages) for c in node["any"]))
    if "not" in node:
        return NotSpec(child=_matcher_from_dict(node["not"], languages))
    raise RuleError(
        f"unknown matcher keys {sorted(node)}; expected query, regex, strings, builtin, all, any, not, inside or terms"
    )
