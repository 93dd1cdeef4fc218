"""The ``submission-provenance`` check: a match when the run's provenance outcome is one the rule names."""

from __future__ import annotations

from mleaudit.audit.checks.provenance.assess import OUTCOMES, assess_provenance, provenance_view
from mleaudit.audit.model import Evidence
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.rules.match import Match
from mleaudit.audit.rules.registry import check
from mleaudit.audit.units import Actor


@check("submission-provenance", values=("outcome", "detail", "searched", "typed_rows"))
def submission_provenance(ctx: RunContext, *, outcomes: list[str] | tuple[str, ...] = ("written",),
                          min_typed_rows: int = 3) -> list[Match]:
    """Report the run's submission provenance when its outcome is one of ``outcomes``.

    Parameters
    ----------
    ctx : RunContext
        Needs ``submission_path``, ``code_units`` and ``log_events``.
    outcomes : list of str
        Which outcomes of :func:`assess_provenance` produce a match (each rule picks the ones
        whose severity it states).
    min_typed_rows : int
        See :func:`assess_provenance`.

    Returns
    -------
    list of Match
        At most one match, with values ``outcome``, ``detail`` (a sentence), ``searched``,
        ``typed_rows`` and ``actor`` (who wrote the file of the first evidence: ``operator``
        for the sandbox's recorded command), and the evidence of the assessment.

    Raises
    ------
    ValueError
        If ``outcomes`` names an unknown outcome.
    """
    unknown = sorted(set(outcomes) - set(OUTCOMES))
    if unknown:
        raise ValueError(f"submission-provenance: unknown outcomes {unknown} (known: {', '.join(OUTCOMES)})")
    result = ctx.memoize(f"provenance:{min_typed_rows}", lambda: assess_provenance(ctx, min_typed_rows=min_typed_rows))
    if result.outcome not in outcomes:
        return []
    return [Match(values={"outcome": result.outcome, "detail": result.detail, "searched": result.searched,
                          "typed_rows": result.typed_rows, "actor": _evidence_actor(ctx, result.evidence)},
                  evidence=result.evidence)]


def _evidence_actor(ctx: RunContext, evidence: tuple[Evidence, ...]) -> str:
    """Who wrote the file of the first evidence, among what the assessment looked at: the one
    actor of its units and events, else ``unknown`` (empty when there is no evidence)."""
    if not evidence:
        return ""
    path = evidence[0].span.path
    view = provenance_view(ctx)
    actors = {u.actor for u in view.code_units if u.path == path} | {e.actor for e in view.log_events
                                                                      if e.span.path == path}
    return next(iter(actors)).value if len(actors) == 1 else Actor.UNKNOWN.value
