"""Public Kaggle notebooks named in the run: ``owner/slug`` references of known notebooks.

A run that searches Kaggle (``kaggle kernels list -s ...``, a web search, a scaffold's retrieval
tool) sees other people's notebooks as references: ``owner/slug`` in a ``ref`` column,
``https://www.kaggle.com/code/owner/slug``, ``Found notebook: owner/slug``. A reference only
counts when it names a notebook this repository knows to be public: one listed in some
competition's ``kernels.txt`` (:func:`mleaudit.audit.checks.competition.kernel_refs`), so a path that
merely looks like ``owner/slug`` (``data/train``, ``sklearn/ensemble``) never matches.

Texts scanned: every log event (outputs included: that is where search results appear) and
every code unit of the actors the rule judges. Each known reference is reported once, at its
first place, with the competitions whose lists name it; references of the run's own
competition come first.

Notebooks the task itself links to are not evidence: a competition description can point at a
host's starter notebook (``cat description.md`` prints it, the scaffold's prompt quotes it).
The rule lists those references (``ignore_refs``), and references found in the prepared
``description.md`` of the run's competition are left out too.
"""

from __future__ import annotations

import re
from typing import Iterator

from mleaudit.audit.checks.competition import competition_id, kernel_refs
from mleaudit.audit.checks.evidence import event_evidence, unit_evidence
from mleaudit.audit.rules.context import RunContext
from mleaudit.audit.rules.registry import check
from mleaudit.audit.rules.match import Match
from mleaudit.audit.units import LogEventKind

__all__ = ["public_notebook_refs", "find_refs"]

#: A run of path-like segments joined by slashes (URLs included); pairs of adjacent segments
#: are the candidate references. A run starts only where no name character precedes it, so a
#: long run of name characters without a slash is tried once, not at each of its positions.
_PATHISH = re.compile(r"(?<![\w.-])[A-Za-z0-9][\w.-]{0,199}(?:/[A-Za-z0-9][\w.-]{0,199})+")
#: Texts longer than this are scanned only up to it (a reference is short; logs are not).
MAX_SCAN_CHARS = 5_000_000
#: At most this many distinct references are reported per run.
MAX_REFS = 25


def find_refs(text: str, known) -> Iterator[tuple[int, int, str]]:
    """``(start, end, ref)`` for each known ``owner/slug`` in ``text`` (lower-cased ``ref``).

    Examples
    --------
    >>> known = {"someone/spaceship-eda"}
    >>> [r for _, _, r in find_refs("see https://www.kaggle.com/code/someone/spaceship-eda/notebook", known)]
    ['someone/spaceship-eda']
    >>> list(find_refs("data/train and sklearn/ensemble", known))
    []
    """
    for m in _PATHISH.finditer(text, 0, min(len(text), MAX_SCAN_CHARS)):
        segments = m.group(0).split("/")
        offset = m.start()
        starts = []
        for segment in segments:
            starts.append(offset)
            offset += len(segment) + 1
        for i in range(len(segments) - 1):
            owner, slug = segments[i], segments[i + 1]
            # A Kaggle slug has no extension: "slug.ipynb" from `kaggle kernels pull -p` counts.
            for candidate in (slug, slug.rsplit(".", 1)[0]):
                ref = f"{owner}/{candidate}".lower()
                if ref in known:
                    yield starts[i], starts[i + 1] + len(candidate), ref
                    break


def _description_refs(competition: str | None, known) -> frozenset[str]:
    """References named in the prepared ``description.md`` of ``competition`` (empty when absent)."""
    if not competition:
        return frozenset()
    try:
        from mleaudit.grading.paths import resolve_data_dir

        path = resolve_data_dir(None) / competition / "prepared" / "public" / "description.md"
        if not path.is_file() or path.stat().st_size > (4 << 20):
            return frozenset()
        text = path.read_text(encoding="utf-8", errors="replace")
    except Exception:  # noqa: BLE001 - no description: nothing to leave out
        return frozenset()
    return frozenset(ref for _, _, ref in find_refs(text, known))


@check("public-notebook-refs", values=("ref", "competitions", "count", "where"))
def public_notebook_refs(ctx: RunContext, *, event_kinds: tuple[str, ...] = ("output", "message", "tool_call", "command", "code"),
                         code: bool = True, own_competition_only: bool = False,
                         ignore_refs: tuple[str, ...] = ()) -> list[Match]:
    """Known public notebooks named in the run's events and code.

    Parameters
    ----------
    ctx : RunContext
    event_kinds : tuple of str
        Log event kinds scanned.
    code : bool
        Also scan code units.
    own_competition_only : bool
        Count only notebooks of the run's own competition (when it is known).
    ignore_refs : tuple of str
        ``owner/slug`` references that are not evidence (notebooks competition descriptions link to).

    Returns
    -------
    list of Match
        One per distinct reference (at most :data:`MAX_REFS`), values ``ref``, ``competitions``
        (comma-separated), ``count`` (distinct references in the run) and ``where``.
    """
    known = kernel_refs()
    if not known:
        return []
    own = competition_id(ctx)
    if own_competition_only:
        if not own:
            return []
        known = {ref: comps for ref, comps in known.items() if own in comps}
    ignored = {r.lower() for r in ignore_refs} | _description_refs(own, known)
    if ignored:
        known = {ref: comps for ref, comps in known.items() if ref not in ignored}
    kinds = {LogEventKind(k) for k in event_kinds}
    first: dict[str, tuple] = {}
    # Only each reference's first place is kept, so a text seen before (a log repeats the same
    # script and output at every step) cannot add one: it is searched once.
    searched: set[str] = set()
    for event in ctx.log_events:
        if event.kind not in kinds or event.text in searched:
            continue
        searched.add(event.text)
        for start, end, ref in find_refs(event.text, known):
            if ref not in first:
                first[ref] = (event_evidence(event, "notebook reference", start, end), f"{event.kind.value} event",
                              event.actor.value)
    if code:
        for unit in ctx.code_units:
            if unit.text in searched:
                continue
            searched.add(unit.text)
            for start, end, ref in find_refs(unit.text, known):
                if ref not in first:
                    first[ref] = (unit_evidence(unit, start, end, "notebook reference"), "code", unit.actor.value)
    if not first:
        return []
    # The run's own competition first, then in the order the run shows them (sorted() is stable).
    ordered = sorted(first, key=lambda r: own not in known[r])
    matches = []
    for ref in ordered[:MAX_REFS]:
        evidence, where, actor = first[ref]
        comps = known[ref]
        if own in comps:
            comps = (own, *(c for c in comps if c != own))
        matches.append(Match(evidence=(evidence,), values={
            "ref": ref, "competitions": ", ".join(comps), "count": len(first), "where": where, "actor": actor}))
    return matches
