"""The copy detector's decision threshold on ``score``, read from the plagiarism rules.

The threshold is policy: it lives in ``rules/plagiarism/`` (a similarity rule ``when: {score: {gte:
X}}``), and :data:`~mleaudit.audit.similarity.detect.DEFAULT_SCORE_THRESHOLD` is the documented
fallback. Reading it needs the rules engine's loader, so it sits above both the rules engine and
similarity, beside the pipeline that passes it on.
"""

from __future__ import annotations

import logging
from typing import Any

from mleaudit.audit.errors import AuditError
from mleaudit.audit.rules.loader import find_rules_root, load_ruleset
from mleaudit.audit.similarity.detect import DEFAULT_SCORE_THRESHOLD, score_threshold_from_rules

__all__ = ["load_score_threshold"]

logger = logging.getLogger(__name__)


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
