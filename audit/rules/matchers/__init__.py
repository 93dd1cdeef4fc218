"""Compiled matchers: tree-sitter queries, regexes, folded strings, built-in checks and their combinations.

:func:`compile_matcher` turns a matcher spec (``mleaudit.audit.rules.spec``) into a matcher object once,
at load time, and appends every problem it finds (a query that does not compile, an unknown
regex flag, a ``not`` outside ``all``) to a list instead of stopping at the first, so that the
loader can report a whole ruleset at once.

Every matcher has ``find(subject) -> list[Match]`` where the subject is a :class:`Subject` (a
text with its language) or, for built-in checks, a :class:`~mleaudit.audit.rules.context.RunContext`. Offsets in
matches are character offsets into ``subject.text``.

Semantics (DESIGN §4.3):

- ``query``: one tree-sitter query per language, run with ``QueryCursor.matches``; its
  ``#match?``-family predicates whose regex may backtrack are applied here with the ``regex``
  package and a time bound (:class:`RegexPredicate`), not by tree-sitter with ``re``; each
  match's captures are its named nodes (the first node when a quantified capture holds several). On a
  tree too deep or too wide to query (:func:`pathological_tree`) the query's predicate literals
  and regexes are searched in the text instead (:class:`TextFallback`), and such matches carry
  the value ``text_match``; query patterns without literals cannot fall back and are listed in
  ``Subject.unevaluated`` (an evaluation error of the rule, unless under ``not``).
- ``regex``: ``finditer`` of the ``regex`` package (re-compatible syntax), bounded by
  :data:`REGEX_TIMEOUT_SECONDS` per unit; named groups are the captures, empty matches are
  skipped.
- ``strings``: the same over the folded value of every maximal string expression
  (:func:`mleaudit.audit.rules.strings.fold_strings`); every capture spans the whole expression in the
  source and carries the matched part of the *value* as its text.
- ``all``: every positive child must match in the same subject; the matches come from the
  *primary* child (the first one that defines the rule's ``focus``, else the first positive
  child), with the other children's first matches attached as ``support``. ``not`` children
  drop every positive match that overlaps one of their matches; ``inside`` keeps the primary
  matches that lie within a match of its child; ``terms`` keeps the primary matches that name
  a term of the rule or of the competition policy (``Subject.policy``).
- ``any``: the union of the children's matches.
- ``builtin``: ``CHECKS[name](ctx, **params)``.

Layering
--------
Matchers may import the model, parsing, :mod:`~mleaudit.audit.rules.spec`, ``match``, ``policy``,
``prefilter``, ``strings``, ``context`` and ``registry`` of the rules engine; never the loader,
the engine, the built-in checks (found through :mod:`mleaudit.audit.rules.registry`) nor the
pipeline. Inside the package the modules import down this list: ``base``, ``predicates``,
``fallback``, ``query``, ``text``, ``combine``, ``gate``, ``compile``.

Adding a matcher
----------------
Most new detections are rules, not matchers: write YAML under ``rules/`` (see
:mod:`mleaudit.audit.rules`). A new matcher kind needs its spec in
:mod:`mleaudit.audit.rules.spec` and the schema, a class with ``capture_names`` and
``find(subject)`` in the module of its kind here (or a new module), and a branch in
:func:`~mleaudit.audit.rules.matchers.compile.compile_matcher`.

Routine Listings
----------------
:mod:`~.base`: :class:`Subject`, :class:`Matcher`, :data:`REGEX_TIMEOUT_SECONDS` (patch it
there: the other modules import it by name), :func:`tree_shape`, :func:`bounded_finditer`.
:mod:`~.predicates`: :class:`RegexPredicate`, :data:`SUPPORTED_PREDICATES`.
:mod:`~.fallback`: :class:`TextFallback`, :class:`TextRequirement`.
:mod:`~.query`: :class:`QueryMatcher`.
:mod:`~.text`: :class:`RegexMatcher`, :class:`StringsMatcher`, :func:`literal_runs`.
:mod:`~.combine`: :class:`AllMatcher`, :class:`AnyMatcher`, :class:`NotMatcher`,
:class:`InsideFilter`, :class:`TermsFilter`, :data:`POLICY_LISTS`, :class:`BuiltinMatcher`.
:mod:`~.gate`: :func:`~.gate.text_gate`, :class:`~.gate.Gate` (literals a text must hold for a
matcher to find anything in it; the engine skips the texts a rule's gate keeps out).
:mod:`~.compile`: :func:`compile_matcher`, :func:`leaf_specs`.
"""

from __future__ import annotations

from mleaudit.audit.rules.matchers.base import REGEX_TIMEOUT_SECONDS, Matcher, Subject, bounded_finditer, tree_shape
from mleaudit.audit.rules.matchers.combine import (
    POLICY_LISTS,
    AllMatcher,
    AnyMatcher,
    BuiltinMatcher,
    InsideFilter,
    NotMatcher,
    TermsFilter,
)
from mleaudit.audit.rules.matchers.compile import compile_matcher, leaf_specs
from mleaudit.audit.rules.matchers.predicates import SUPPORTED_PREDICATES
from mleaudit.audit.rules.matchers.query import QueryMatcher
from mleaudit.audit.rules.matchers.text import RegexMatcher, StringsMatcher, literal_runs

__all__ = [
    "Subject",
    "Matcher",
    "QueryMatcher",
    "RegexMatcher",
    "StringsMatcher",
    "BuiltinMatcher",
    "AllMatcher",
    "AnyMatcher",
    "NotMatcher",
    "InsideFilter",
    "TermsFilter",
    "POLICY_LISTS",
    "compile_matcher",
    "leaf_specs",
    "SUPPORTED_PREDICATES",
    "bounded_finditer",
    "literal_runs",
    "tree_shape",
    "REGEX_TIMEOUT_SECONDS",
]
