"""Compiling a matcher spec into a matcher: :func:`compile_matcher` (every problem listed, none raised) and :func:`leaf_specs`."""

from __future__ import annotations

import inspect

from mleaudit.audit.rules.matchers.base import Matcher
from mleaudit.audit.rules.matchers.combine import (
    POLICY_LISTS,
    AllMatcher,
    AnyMatcher,
    BuiltinMatcher,
    InsideFilter,
    NotMatcher,
    TermsFilter,
)
from mleaudit.audit.rules.matchers.query import compile_query
from mleaudit.audit.rules.matchers.text import compile_regex, compile_strings
from mleaudit.audit.rules.registry import load_builtin_checks
from mleaudit.audit.rules.spec import (
    AllSpec,
    AnySpec,
    BuiltinSpec,
    InsideSpec,
    MatcherSpec,
    NotSpec,
    QuerySpec,
    RegexSpec,
    StringsSpec,
    TermsSpec,
)


def _compile_builtin(spec: BuiltinSpec, problems: list[str]) -> BuiltinMatcher | None:
    checks = load_builtin_checks()
    registered = checks.get(spec.name)
    if registered is None:
        problems.append(f"unknown built-in check {spec.name!r} (known: {', '.join(sorted(checks)) or 'none'})")
        return None
    try:
        inspect.signature(registered.fn).bind(None, **dict(spec.params))
    except TypeError as exc:
        problems.append(f"bad params for built-in check {spec.name!r}: {exc}")
        return None
    return BuiltinMatcher(check=registered, params=dict(spec.params))


def compile_matcher(
    spec: MatcherSpec, *, focus: str | None = None, problems: list[str], _inside_all: bool = False
) -> Matcher | None:
    """Compile a matcher spec tree.

    Parameters
    ----------
    spec : MatcherSpec
        The tree from :class:`~mleaudit.audit.rules.spec.RuleSpec`.
    focus : str, optional
        The rule's focus capture; an ``all`` takes its matches from the first child that
        defines it.
    problems : list of str
        Receives one message per problem found (the tree is compiled as far as possible).

    Returns
    -------
    Matcher or None
        ``None`` when any problem was found in this subtree.
    """
    before = len(problems)
    if isinstance(spec, QuerySpec):
        return compile_query(spec, problems)
    if isinstance(spec, RegexSpec):
        return compile_regex(spec, problems)
    if isinstance(spec, StringsSpec):
        return compile_strings(spec, problems)
    if isinstance(spec, BuiltinSpec):
        return _compile_builtin(spec, problems)
    if isinstance(spec, (InsideSpec, TermsSpec)):
        kind = "inside" if isinstance(spec, InsideSpec) else "terms"
        if not _inside_all:
            problems.append(f"`{kind}` is only valid as a child of `all`")
            return None
        if isinstance(spec, TermsSpec):
            if spec.policy is not None and spec.policy not in POLICY_LISTS:
                problems.append(f"`terms` names policy list {spec.policy!r}; known: {', '.join(POLICY_LISTS)}")
                return None
            if spec.policy is None and not spec.values:
                problems.append("`terms` needs `values`, a `policy` list, or both")
                return None
            return TermsFilter(capture=spec.capture, policy=spec.policy, values=spec.values)
        child = compile_matcher(spec.child, focus=None, problems=problems)
        return None if child is None else InsideFilter(child=child)
    if isinstance(spec, NotSpec):
        if not _inside_all:
            problems.append("`not` is only valid as a child of `all`")
            return None
        child = compile_matcher(spec.child, focus=None, problems=problems)
        return None if child is None else NotMatcher(child=child)
    if isinstance(spec, AnySpec):
        children = [compile_matcher(c, focus=focus, problems=problems) for c in spec.children]
        if len(problems) > before or not children:
            if not children:
                problems.append("`any` needs at least one child")
            return None
        names = frozenset().union(*(c.capture_names for c in children))
        values = frozenset().union(*(getattr(c, "value_names", frozenset()) for c in children))
        return AnyMatcher(children=tuple(children), capture_names=names, value_names=values)
    if isinstance(spec, AllSpec):
        compiled = [compile_matcher(c, focus=focus, problems=problems, _inside_all=True) for c in spec.children]
        filters = tuple(c for c in compiled if isinstance(c, (InsideFilter, TermsFilter)))
        positives = tuple(c for c in compiled
                          if c is not None and not isinstance(c, (NotMatcher, InsideFilter, TermsFilter)))
        negatives = tuple(c for c in compiled if isinstance(c, NotMatcher))
        if not any(not isinstance(c, (NotSpec, InsideSpec, TermsSpec)) for c in spec.children):
            problems.append("`all` needs at least one child that is not `not`, `inside` or `terms`")
        if len(problems) > before:
            return None
        primary = next((i for i, c in enumerate(positives) if focus and focus in c.capture_names), 0)
        for f in filters:
            if isinstance(f, TermsFilter) and f.capture is not None and f.capture not in positives[primary].capture_names:
                names = ", ".join(sorted(positives[primary].capture_names)) or "none"
                problems.append(f"`terms` capture {f.capture!r} is not a capture of the primary child (captures: {names})")
                return None
        names = frozenset().union(*(c.capture_names for c in positives))
        values = frozenset().union(*(getattr(c, "value_names", frozenset()) for c in (*positives, *filters)))
        return AllMatcher(positives=positives, negatives=negatives, filters=filters, primary=primary,
                          capture_names=names, value_names=values)
    problems.append(f"unknown matcher spec {type(spec).__name__}")
    return None


def leaf_specs(spec: MatcherSpec) -> list[MatcherSpec]:
    """Every leaf (query, regex, strings, builtin, terms) of a spec tree, including those under ``not``/``inside``."""
    if isinstance(spec, (AllSpec, AnySpec)):
        return [leaf for child in spec.children for leaf in leaf_specs(child)]
    if isinstance(spec, (NotSpec, InsideSpec)):
        return leaf_specs(spec.child)
    return [spec]
