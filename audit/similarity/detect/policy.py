"""The decision threshold on ``score`` as a ruleset states it (read from the rules by
:func:`mleaudit.audit.score_threshold.load_score_threshold`, above the rules engine)."""

from __future__ import annotations

from typing import Any


def score_threshold_from_rules(ruleset: Any) -> float | None:
    """The lowest ``score`` bound of the enabled similarity rules of a ruleset.

    Parameters
    ----------
    ruleset : mleaudit.audit.rules.loader.Ruleset

    Returns
    -------
    float or None
        The smallest ``gte``/``gt`` bound on ``score`` in a ``similarity`` rule's ``when``, or
        ``None`` when no rule bounds the score.
    """
    bounds = []
    for rule in getattr(ruleset, "rules", ()):
        spec = getattr(rule, "spec", rule)
        when = getattr(spec, "when", None)
        if when is None:
            continue
        for condition in getattr(when, "conditions", ()):
            if getattr(condition, "field", None) == "score" and getattr(condition, "op", None) in ("gte", "gt"):
                bounds.append(float(condition.value))
    return min(bounds) if bounds else None
