"""The decision threshold on ``score``: policy, read from the plagiarism rules."""

from __future__ import annotations

import logging
from typing import Any

from mleaudit.audit.similarity.detect.constants import DEFAULT_SCORE_THRESHOLD


logger = logging.getLogger(__name__)


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


def load_score_threshold(rules_root: Any = None) -> float:
    """The shipped decision threshold on ``score``, read from the plagiarism rules.

    Parameters
    ----------
    rules_root : path-like, optional
        Rules folder (default: ``--rules``/``MLEAUDIT_RULES``/the checkout's ``rules/``, see
        :func:`mleaudit.audit.rules.loader.find_rules_root`).

    Returns
    -------
    float
        The rule's bound, or :data:`DEFAULT_SCORE_THRESHOLD` when the rules cannot be loaded or
        no similarity rule bounds the score (logged at warning level).
    """
    from mleaudit.audit.errors import AuditError
    from mleaudit.audit.rules.loader import find_rules_root, load_ruleset

    try:
        ruleset = load_ruleset([find_rules_root(rules_root)])
    except (AuditError, OSError) as exc:
        logger.warning("cannot read the plagiarism rules (%s); using the default score threshold %.2f",
                       exc, DEFAULT_SCORE_THRESHOLD)
        return DEFAULT_SCORE_THRESHOLD
    value = score_threshold_from_rules(ruleset)
    if value is None:
        logger.warning("no similarity rule bounds `score`; using the default threshold %.2f", DEFAULT_SCORE_THRESHOLD)
        return DEFAULT_SCORE_THRESHOLD
    return value
