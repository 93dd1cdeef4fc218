"""Detection quality of the copy detector (``score``) on the shared partial copies and known copies.

Prints, for easy partial copies, hard partial copies, both, and the known copies of
``notebooks/labels.tsv``: AUC, recall at a false-positive rate of 1 %, recall and false-positive
rate at the shipped threshold (read from ``rules/plagiarism/``), the share of cases whose source
kernel is flagged, and the recall of MLE-bench's rule "Dolos similarity > 0.6" for comparison.
Then leave-one-competition-out: for each competition, the threshold is chosen on the other
competitions by the rule used for the shipped one (the lowest score whose false-positive rate
stays at or below 0.5 %) and applied to the held-out competition.

Every figure goes through :func:`mleaudit.audit.similarity.compare`, the code path of ``mleaudit
similarity compare`` and ``mleaudit audit``.

Ground truth. A case is an agent script with a slice of one notebook (its *source*) pasted in.

- *labels* (the issue's definition): positives are the source, the notebooks of the source's
  ``source_group`` and its near-duplicates (Dolos similarity >= 0.8 with the source in
  ``similarity-golden``); every other notebook of the competition is a negative.
- *content*: the label view counts as negatives notebooks that contain the very code that was
  pasted (Kaggle notebooks copy each other, and 24 of the 24 Titanic notebooks share tutorial
  code), and as positives group members that lack it. The content view reads which lines of the
  case were copied (lines found in the source and not in the agent scripts the case was built
  on, ``runs/aide``: an easy case splices its slice between pieces of two scripts, a hard case
  places its blocks in one) and how many of them each notebook contains (lines compared as the detector's
  lexical tokens, identifiers normalised): positives hold at least half of them (the source
  always counts), negatives hold less than 10 % and are not label positives; pairs in between
  are left out of both and counted. The shipped threshold was chosen on this view.
- *agreement*: the pairs both views agree on (label positives holding at least half of the
  pasted lines; label negatives holding less than 10 %). It leaves out both kinds of label
  noise: unlabelled notebooks that hold the pasted code (negatives by label) and notebooks that
  hold a few of its lines scattered among their own code (positives by content).

Under the labels view a notebook that holds the pasted code but is not in the source's group
counts as a false positive whatever a detector does; the benchmark prints the ceiling of that
view, the recall at FPR 1 % of the share of pasted lines each notebook holds used as the score.

Positives come in clumps: a case whose source has forks gives one positive per fork (a Titanic
case has up to 24), so pair-level recall moves in steps of a dozen pairs. The benchmark also
prints case-level figures (cases whose source is flagged; cases whose every content positive is
flagged) and leave-one-competition-out at both selection rates.

``--list`` prints, for the content view at the threshold of FPR 1 %, every missed positive and
every negative at or above it, with why:

- a missed positive is the case's *source*, or a *holder*: a notebook outside the source's group
  that holds part of the pasted lines. Holders are scored against a background that still holds
  the source and its forks, so the pasted code they share reads as common code of the
  competition; the line says how many other notebooks hold at least half of the pasted lines.
- a negative is explained by where the detector's chain lies in the case: on the *host* lines
  (the agent script the case was built on shares that code with the kernel: canonical
  ``train_test_split``/``fit``/``predict`` code, ``./input`` paths) or on *pasted* lines (the
  kernel holds a few of the pasted lines, under 10 %).

``--clean-runs`` also scores every clean real run (``runs/aide``, ``aide-journal``, ``autokaggle``,
``mlagentbench``: the audit's Python units of each) against all 204 notebooks at once and prints
the flagged pairs (there should be none) and the highest scores. ``--no-background`` scores
without the shipped background of ordinary code (the detector before it), for comparison.

Usage: ``python benchmarks/detection_quality.py [--data ../shared/data] [--references notebooks|golden]
[--no-known] [--clean-runs] [--no-background] [--list]``
"""

from __future__ import annotations

import argparse
import csv
import math
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

from mleaudit.audit.similarity import (  # noqa: E402
    SimilarityOptions,
    compare,
    load_reference_corpus,
)
from mleaudit.audit.score_threshold import load_score_threshold  # noqa: E402
from mleaudit.audit.similarity.detect import bits_from_score, lex_code  # noqa: E402
from mleaudit.audit.units import CodeUnit  # noqa: E402

DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data"
NEAR_DUPLICATE_SIMILARITY = 0.8
CONTENT_POSITIVE = 0.5
CONTENT_NEGATIVE = 0.1
#: A second agent script counts as a host of a case when it holds this many of the case's lines
#: that the first host and the source lack.
SECOND_HOST_LINES = 3
TARGET_FPR = 0.01
SELECTION_FPR = 0.005


@dataclass
class Row:
    """One scored (agent, reference) pair."""

    agent: str
    kind: str  # easy, hard, known
    competition: str
    reference: str  # competition/stem
    score: float
    similarity: float
    label: bool  # positive under the label view
    content: str  # "pos", "neg" or "mid" under the content view
    source: bool  # the case's own source kernel
    cover: float = 0.0  # share of the case's copied lines the reference holds (1.0 for the source)
    holders: int = 0  # other notebooks of the competition holding at least half of the copied lines
    chain_host: float = 0.0  # share of the chain's lines on the case's host lines (vs pasted lines)


# -- ground truth -----------------------------------------------------------------------------------


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[-1].rsplit(".", 1)[0]


def _read_tsv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def _labels(data: Path) -> dict[str, str]:
    """competition/stem -> source_group ('' when independent)."""
    rows = _read_tsv(data / "notebooks" / "labels.tsv")
    return {f"{r['competition']}/{_stem(r['file'])}": r["source_group"] for r in rows}


def _golden_similarity(data: Path) -> dict[tuple[str, str], float]:
    out = {}
    for tsv in sorted((data / "similarity-golden").glob("*/dolos_pairs.tsv")):
        for r in _read_tsv(tsv):
            a = f"{r['left'].split('/')[0]}/{_stem(r['left'])}"
            b = f"{r['right'].split('/')[0]}/{_stem(r['right'])}"
            out[(a, b)] = out[(b, a)] = float(r["similarity"])
    return out


_SEP = "\x00"


def _joined(text: str) -> str:
    return _SEP + _SEP.join(lex_code(text).tokens) + _SEP


def _lines(text: str) -> list[tuple[str, int]]:
    """Lines worth comparing, as joined token strings with their token counts."""
    out = []
    for line in text.split("\n"):
        tokens = lex_code(line).tokens
        if len(tokens) >= 6 or (len(tokens) >= 3 and any(t.startswith("S") and len(t) > 4 for t in tokens)):
            out.append((_SEP + _SEP.join(tokens) + _SEP, len(tokens)))
    return out


class ContentTruth:
    """Which notebooks contain the lines a case copied from its source."""

    def __init__(self, data: Path) -> None:
        self.hosts = [_joined(p.read_text(encoding="utf-8")) for p in sorted((data / "runs" / "aide").glob("*.py"))]
        self.golden = {f"{p.parent.name}/{p.stem}": _joined(p.read_text(encoding="utf-8"))
                       for p in sorted((data / "similarity-golden").glob("*/*.py"))}

    def _hosts(self, lines: list[tuple[str, int]], source: str) -> tuple[str, ...]:
        """The agent scripts the case was built on: the one holding most of its lines, and a
        second one when it holds at least :data:`SECOND_HOST_LINES` lines that neither the first
        nor the source holds (an easy case splices its slice between pieces of two scripts; a
        hard case places its blocks in one, where no script holds more than 2 such lines)."""
        if not self.hosts:
            return ()
        first = max(self.hosts, key=lambda h: sum(1 for line, _ in lines if line in h))
        rest = [line for line, _ in lines if line not in first and line not in self.golden[source]]
        second = max(self.hosts, key=lambda h: sum(1 for line in rest if line in h))
        return (first, second) if sum(1 for line in rest if line in second) >= SECOND_HOST_LINES else (first,)

    def line_kinds(self, case_text: str, source: str) -> list[tuple[str, int]]:
        """Per line of the case (index = line number - 1): ``("host", n)`` when a host script
        holds it, ``("pasted", n)`` when only the source does, else ``("", n)``; ``n`` is its
        number of tokens."""
        hosts = self._hosts(_lines(case_text), source)
        out = []
        for line in case_text.split("\n"):
            tokens = lex_code(line).tokens
            joined = _SEP + _SEP.join(tokens) + _SEP
            if not tokens:
                kind = ""
            elif any(joined in host for host in hosts):
                kind = "host"
            else:
                kind = "pasted" if joined in self.golden[source] else ""
            out.append((kind, len(tokens)))
        return out

    def coverage(self, case_text: str, source: str, competition: str) -> dict[str, float]:
        """reference -> share of the copied tokens it contains (1.0 for the source)."""
        lines = _lines(case_text)
        hosts = self._hosts(lines, source)
        copied = [(line, n) for line, n in lines
                  if line in self.golden[source] and not any(line in host for host in hosts)]
        total = sum(n for _, n in copied)
        out = {}
        for key, joined in self.golden.items():
            if key.split("/")[0] != competition:
                continue
            out[key] = sum(n for line, n in copied if line in joined) / total if total else 0.0
        return out


# -- metrics ----------------------------------------------------------------------------------------


def auc(positives: list[float], negatives: list[float]) -> float:
    """Area under the ROC curve (Mann-Whitney U, ties counted half)."""
    if not positives or not negatives:
        return math.nan
    ordered = sorted([(s, 1) for s in positives] + [(s, 0) for s in negatives])
    rank_sum = 0.0
    i = 0
    while i < len(ordered):
        j = i
        while j < len(ordered) and ordered[j][0] == ordered[i][0]:
            j += 1
        mean_rank = (i + 1 + j) / 2
        rank_sum += mean_rank * sum(1 for k in range(i, j) if ordered[k][1])
        i = j
    n_pos, n_neg = len(positives), len(negatives)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def threshold_at_fpr(negatives: list[float], max_fpr: float) -> float:
    """The lowest score threshold (flag when ``score >= t``) whose false-positive rate is <= max_fpr."""
    if not negatives:
        return 0.0
    ordered = sorted(negatives, reverse=True)
    allowed = int(math.floor(max_fpr * len(ordered) + 1e-9))
    if allowed >= len(ordered):
        return 0.0
    return math.nextafter(ordered[allowed], math.inf)


def rate(values: list[float], threshold: float) -> float:
    return sum(1 for v in values if v >= threshold) / len(values) if values else math.nan


def summarize(name: str, positives: list[float], negatives: list[float], shipped: float,
              dolos_pos: list[float], dolos_neg: list[float], sources: list[float] | None = None) -> str:
    at1 = threshold_at_fpr(negatives, TARGET_FPR)
    parts = [
        f"{name:28}",
        f"pos {len(positives):5d} neg {len(negatives):5d}",
        f"AUC {auc(positives, negatives):.4f}",
        f"recall@FPR1% {rate(positives, at1):.3f}",
        f"recall@thr {rate(positives, shipped):.3f}",
        f"FPR@thr {rate(negatives, shipped):.4f}",
    ]
    if sources is not None:
        parts.append(f"sources flagged {rate(sources, shipped):.3f}")
    parts.append(f"| Dolos>0.6 recall {sum(1 for s in dolos_pos if s > 0.6) / max(1, len(dolos_pos)):.3f}"
                 f" FPR {sum(1 for s in dolos_neg if s > 0.6) / max(1, len(dolos_neg)):.4f}")
    return "  ".join(parts)


# -- scoring ----------------------------------------------------------------------------------------


def _references(data: Path, competition: str, which: str) -> list[CodeUnit]:
    folder = data / ("notebooks" if which == "notebooks" else "similarity-golden") / competition
    return list(load_reference_corpus(folder).units)


def score_cases(data: Path, which: str, threshold: float, competitions: set[str] | None = None) -> list[Row]:
    """Score every (case, kernel of its competition) pair; ``competitions`` limits the cases."""
    labels = _labels(data)
    golden = _golden_similarity(data)
    truth = ContentTruth(data)
    cases = []
    for folder, kind in (("partial-copies", "easy"), ("partial-copies/hard", "hard")):
        for r in _read_tsv(data / folder / "cases.tsv"):
            text = (data / folder / r["case"]).read_text(encoding="utf-8")
            cases.append((f"{folder}/{r['case']}", kind, f"{r['source'].split('/')[0]}/{_stem(r['source'])}", text))
    by_competition = defaultdict(list)
    for case in cases:
        by_competition[case[2].split("/")[0]].append(case)
    rows: list[Row] = []
    # every pair's score is a data point: no cap on the pairs kept per agent file
    options = SimilarityOptions(score_threshold=threshold, max_pairs_per_agent=None)
    for competition, group in sorted(by_competition.items()):
        if competitions is not None and competition not in competitions:
            continue
        references = _references(data, competition, which)
        agents = [CodeUnit(path=name, language="python", text=text) for name, _, _, text in group]
        report = compare(agents, references, options)
        info = {name: (kind, source, text) for name, kind, source, text in group}
        coverage = {name: truth.coverage(text, source, competition) for name, (kind, source, text) in info.items()}
        line_kinds = {name: truth.line_kinds(text, source) for name, (kind, source, text) in info.items()}
        for pair in report.pairs:
            kind, source, _ = info[pair.agent_path]
            reference = f"{competition}/{_stem(pair.reference_path)}"
            group_id = labels.get(source, "")
            label = (reference == source or (group_id != "" and labels.get(reference) == group_id)
                     or golden.get((reference, source), 0.0) >= NEAR_DUPLICATE_SIMILARITY)
            cover = 1.0 if reference == source else coverage[pair.agent_path].get(reference, 0.0)
            if cover >= CONTENT_POSITIVE:
                content = "pos"
            elif cover < CONTENT_NEGATIVE and not label:
                content = "neg"
            else:
                content = "mid"
            holders = sum(1 for other, share in coverage[pair.agent_path].items()
                          if other != reference and (other == source or share >= CONTENT_POSITIVE))
            rows.append(Row(agent=pair.agent_path, kind=kind, competition=competition, reference=reference,
                            score=pair.score, similarity=pair.similarity, label=label, content=content,
                            source=reference == source, cover=cover, holders=holders,
                            chain_host=_chain_host(pair, line_kinds[pair.agent_path])))
    return rows


def _chain_host(pair, kinds: list[tuple[str, int]]) -> float:
    """Share of the tokens on the lines of the detector's chain that lie on host lines (rather
    than pasted ones); lines of fewer than 3 tokens (brackets, ``else:``) are not counted."""
    lines = {n for fragment in pair.evidence_fragments
             for n in range(fragment.agent.start_line, fragment.agent.end_line + 1)}
    host = pasted = 0
    for number in lines:
        kind, tokens = kinds[number - 1] if 0 < number <= len(kinds) else ("", 0)
        if tokens < 3:
            continue
        host += tokens if kind == "host" else 0
        pasted += tokens if kind == "pasted" else 0
    return host / (host + pasted) if host + pasted else 0.0


def explain(row: Row) -> str:
    """Why a content-view positive was missed or a negative scored high (see the module docstring)."""
    if row.content == "pos":
        who = "source" if row.source else f"holder of {row.cover:.0%} of the pasted lines"
        return f"{who}; {row.holders} other notebook(s) hold at least half of them"
    where = "host" if row.chain_host >= 0.5 else "pasted"
    return (f"chain on {where} lines ({row.chain_host:.0%} host); the kernel holds {row.cover:.0%} of "
            "the pasted lines")


def list_errors(rows: list[Row], max_fpr: float = TARGET_FPR) -> list[str]:
    """Lines naming every content-view positive below, and every negative at or above, the
    threshold of FPR ``max_fpr`` (lowest score first for misses, highest first for negatives)."""
    positives, negatives = _view(rows, "content")
    cut = threshold_at_fpr([r.score for r in negatives], max_fpr)
    bits = bits_from_score(cut)
    missed = sorted((r for r in positives if r.score < cut), key=lambda r: (r.score, r.agent, r.reference))
    above = sorted((r for r in negatives if r.score >= cut), key=lambda r: (-r.score, r.agent, r.reference))
    out = [f"content view at FPR {max_fpr:.0%}: threshold {cut:.3f} ({bits:.0f} bits); "
           f"{len(missed)} of {len(positives)} positives missed, {len(above)} of {len(negatives)} negatives at or above"]
    out.append("missed positives:")
    out += [f"  {r.score:.3f} {r.agent} vs {r.reference}: {explain(r)}" for r in missed]
    out.append("negatives at or above:")
    out += [f"  {r.score:.3f} {r.agent} vs {r.reference}: {explain(r)}" for r in above]
    return out


def case_summary(rows: list[Row], threshold: float) -> str:
    """Case-level figures at ``threshold``: cases whose source is flagged, whose every content
    positive is flagged, and that have a content-view false positive."""
    by_case: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_case[row.agent].append(row)
    sources = sum(any(r.source and r.score >= threshold for r in case) for case in by_case.values())
    complete = sum(all(r.score >= threshold for r in case if r.content == "pos") for case in by_case.values())
    false = sum(any(r.score >= threshold for r in case if r.content == "neg") for case in by_case.values())
    return (f"cases {len(by_case)}: source flagged {sources}, every content positive flagged {complete}, "
            f"with a content false positive {false} (threshold {threshold:.3f})")


def _line_containment(lines: list[tuple[str, int]], joined: str) -> float:
    total = sum(n for _, n in lines)
    return sum(n for line, n in lines if line in joined) / total if total else 0.0


def score_known_copies(data: Path, which: str, threshold: float) -> list[Row]:
    """Each notebook with a source_group against the other notebooks of its competition.

    Label view: positives share the agent notebook's group or are near-duplicates (Dolos
    similarity >= 0.8). Content view: positives share the group; negatives are outside it and
    share less than 10 % of their lines with the agent notebook either way (lines as in the
    partial-copy content view); the rest is left out.
    """
    labels = _labels(data)
    golden = _golden_similarity(data)
    texts = {f"{p.parent.name}/{p.stem}": p.read_text(encoding="utf-8")
             for p in sorted((data / "similarity-golden").glob("*/*.py"))}
    joined = {key: _joined(text) for key, text in texts.items()}
    lines = {key: _lines(text) for key, text in texts.items()}
    # every pair's score is a data point: no cap on the pairs kept per agent file
    options = SimilarityOptions(score_threshold=threshold, max_pairs_per_agent=None)
    rows: list[Row] = []
    by_competition = defaultdict(list)
    for key, group_id in labels.items():
        if group_id:
            by_competition[key.split("/")[0]].append(key)
    for competition, members in sorted(by_competition.items()):
        references = _references(data, competition, which)
        for agent_key in sorted(members):
            agent = [u for u in references if f"{competition}/{_stem(u.path)}" == agent_key]
            if not agent:
                continue  # skipped by the reader (R kernel, broken JSON)
            others = [u for u in references if u is not agent[0]]
            report = compare([CodeUnit(path=agent_key, language=agent[0].language, text=agent[0].text,
                                       cells=agent[0].cells)], others, options)
            for pair in report.pairs:
                reference = f"{competition}/{_stem(pair.reference_path)}"
                label = labels.get(reference) == labels[agent_key]
                near = golden.get((reference, agent_key), 0.0) >= NEAR_DUPLICATE_SIMILARITY
                shared = max(_line_containment(lines.get(agent_key, []), joined.get(reference, "")),
                             _line_containment(lines.get(reference, []), joined.get(agent_key, "")))
                content = "pos" if label else ("neg" if shared < CONTENT_NEGATIVE and not near else "mid")
                rows.append(Row(agent=agent_key, kind="known", competition=competition, reference=reference,
                                score=pair.score, similarity=pair.similarity, label=label or near,
                                content=content, source=label))
    return rows


# -- clean real runs --------------------------------------------------------------------------------

#: The clean real runs under ``runs/``: each ``aide/*.py`` is a run; each folder of the others is one.
CLEAN_RUN_SOURCES = ("aide", "aide-journal", "autokaggle", "mlagentbench")


def clean_run_units(data: Path, sources: tuple[str, ...] = CLEAN_RUN_SOURCES) -> list[CodeUnit]:
    """The agent code of every clean real run, as the audit compares it (the distinct Python
    units of the run's agent and unknown actors), each path prefixed with ``<source>/<run>::``."""
    from dataclasses import replace

    from mleaudit.audit.expand import expand_run
    from mleaudit.audit.report_similarity import similarity_agents
    from mleaudit.audit.run import load_run

    runs = data / "runs"
    specs: list[tuple[str, Path]] = []
    for source in sources:
        folder = runs / source
        if not folder.is_dir():
            continue
        if source == "aide":
            specs += [(f"aide/{p.stem}", p) for p in sorted(folder.glob("*.py"))]
        else:
            specs += [(f"{source}/{p.name}", p) for p in sorted(folder.iterdir()) if p.is_dir()]
    units = []
    for name, path in specs:
        for unit in similarity_agents(expand_run(load_run(path)).code_units):
            units.append(replace(unit, path=f"{name}::{unit.path}"))
    return units


def score_clean_runs(data: Path, threshold: float, sources: tuple[str, ...] = CLEAN_RUN_SOURCES,
                     top: int = 3) -> list:
    """Every clean real run's code against all the shared notebooks at once (one corpus, every
    competition); the ``top`` pairs of each agent file by score, highest first."""
    units = clean_run_units(data, sources)
    references = load_reference_corpus(data / "notebooks")
    options = SimilarityOptions(score_threshold=threshold, max_pairs_per_agent=top)
    report = compare(units, references, options)
    return sorted(report.pairs, key=lambda p: (-p.score, p.agent_path, p.reference_path))


def print_clean_runs(data: Path, threshold: float) -> None:
    started = time.perf_counter()
    pairs = score_clean_runs(data, threshold)
    flagged = [p for p in pairs if p.flagged]
    runs = sorted({p.agent_path.split("::")[0] for p in pairs})
    print(f"\n== clean real runs ({len(runs)} runs, {len({p.agent_path for p in pairs})} files) against "
          f"the shared notebooks, {time.perf_counter() - started:.1f} s")
    print(f"flagged pairs {len(flagged)} in {len({p.agent_path.split('::')[0] for p in flagged})} runs "
          f"(threshold {threshold:.3f}); highest scores:")
    for pair in pairs[:10]:
        print(f"  {pair.score:.3f} ({bits_from_score(pair.score):4.0f} bits) {'FLAGGED ' if pair.flagged else ''}"
              f"{pair.agent_path} vs {pair.reference_id}")


def _view(rows: list[Row], view: str) -> tuple[list[Row], list[Row]]:
    if view == "labels":
        return [r for r in rows if r.label], [r for r in rows if not r.label]
    if view == "agreement":
        return ([r for r in rows if r.label and r.content == "pos"],
                [r for r in rows if not r.label and r.content == "neg"])
    return [r for r in rows if r.content == "pos"], [r for r in rows if r.content == "neg"]


def coverage_ceiling(rows: list[Row]) -> str:
    """Recall at FPR 1 % of the labels view when the score is the share of the pasted lines a
    notebook holds (known only to the benchmark): what reading the code alone can reach, since
    unlabelled notebooks that hold the pasted code count as negatives there."""
    pos, neg = _view(rows, "labels")
    cut = threshold_at_fpr([r.cover for r in neg], TARGET_FPR)
    return (f"labels view ceiling (score = share of the pasted lines a notebook holds): AUC "
            f"{auc([r.cover for r in pos], [r.cover for r in neg]):.4f}, recall@FPR1% {rate([r.cover for r in pos], cut):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    parser.add_argument("--references", choices=("notebooks", "golden"), default="notebooks",
                        help="reference kernels: the .ipynb/.py notebooks, or their .py twins")
    parser.add_argument("--no-known", action="store_true", help="skip the known-copies evaluation")
    parser.add_argument("--clean-runs", action="store_true",
                        help="also score every clean real run under runs/ against all the notebooks")
    parser.add_argument("--no-background", action="store_true",
                        help="score without the shipped background of ordinary code (the corpus alone)")
    parser.add_argument("--list", action="store_true",
                        help="list the content view's missed positives and high negatives at FPR 1 %%, with why")
    args = parser.parse_args()
    if not (args.data / "partial-copies" / "cases.tsv").is_file():
        raise SystemExit(f"no partial-copy cases under {args.data}")
    if args.no_background:
        from mleaudit.audit.similarity import detect

        detect._DEFAULT_BACKGROUND[:] = [detect.Background.empty()]
    shipped = load_score_threshold()
    print(f"shipped threshold: score >= {shipped:.3f} ({bits_from_score(shipped):.0f} bits of evidence)")
    started = time.perf_counter()
    rows = score_cases(args.data, args.references, shipped)
    print(f"scored {len(rows)} (case, kernel) pairs in {time.perf_counter() - started:.1f} s "
          f"(references: {args.references})")
    known: list[Row] = []
    if not args.no_known:
        started = time.perf_counter()
        known = score_known_copies(args.data, args.references, shipped)
        print(f"scored {len(known)} (notebook, notebook) pairs of the known copies in "
              f"{time.perf_counter() - started:.1f} s")

    for view in ("content", "labels", "agreement"):
        mid = sum(1 for r in rows if r.content == "mid") if view == "content" else 0
        mid_known = sum(1 for r in known if r.content == "mid") if view == "content" else 0
        note = {"content": f" ({mid} partial-copy and {mid_known} known-copy pairs that share part of the code left out)",
                "labels": "",
                "agreement": (" (pairs both views agree on: the content view with its holders left out; "
                              "positives are the source, its group and near-duplicates)")}[view]
        print(f"\n== {view} view" + note)
        sets = [("easy partial copies", [r for r in rows if r.kind == "easy"]),
                ("hard partial copies", [r for r in rows if r.kind == "hard"]),
                ("easy + hard", rows)]
        if known:
            sets.append(("known copies (labels.tsv)", known))
        for name, subset in sets:
            pos, neg = _view(subset, view)
            sources = [r.score for r in subset if r.source] if subset is not known else None
            print(summarize(name, [r.score for r in pos], [r.score for r in neg], shipped,
                            [r.similarity for r in pos], [r.similarity for r in neg], sources))
        if view == "labels":
            print(coverage_ceiling(rows))

    content_pos, content_neg = _view(rows, "content")
    at1 = threshold_at_fpr([r.score for r in content_neg], TARGET_FPR)
    print("\n== cases")
    print(case_summary(rows, at1) + " [FPR 1 %]")
    print(case_summary(rows, shipped) + " [shipped]")

    print("\n== leave one competition out (content view; threshold chosen on the other competitions "
          f"at FPR <= {SELECTION_FPR:.1%})")
    per_competition, pooled = leave_one_competition_out(rows, SELECTION_FPR)
    for held, threshold, hits, n_pos, false, n_neg in per_competition:
        print(f"  {held:45} threshold {threshold:.3f} ({bits_from_score(threshold):5.0f} bits)  "
              f"recall {hits / max(1, n_pos):.3f} ({n_pos})  FPR {false / max(1, n_neg):.4f} ({n_neg})")
    chosen = [c[1] for c in per_competition]
    print(f"LOCO pooled: recall {pooled[0]:.3f}  FPR {pooled[1]:.4f}  sources flagged {pooled[2]:.3f}  "
          f"thresholds {min(chosen):.3f}-{max(chosen):.3f}")
    _, at_target = leave_one_competition_out(rows, TARGET_FPR)
    print(f"LOCO pooled with the threshold chosen at FPR <= {TARGET_FPR:.0%}: recall {at_target[0]:.3f}  "
          f"FPR {at_target[1]:.4f}  sources flagged {at_target[2]:.3f}")
    chosen_all = threshold_at_fpr([r.score for r in content_neg], SELECTION_FPR)
    print(f"threshold chosen on all competitions by the same rule: {chosen_all:.3f} "
          f"({bits_from_score(chosen_all):.0f} bits); shipped {shipped:.3f}")
    if args.clean_runs:
        print_clean_runs(args.data, shipped)
    if args.list:
        print()
        print("\n".join(list_errors(rows)))


def leave_one_competition_out(rows: list[Row], selection_fpr: float
                              ) -> tuple[list[tuple[str, float, int, int, int, int]], tuple[float, float, float]]:
    """Content view, each competition held out in turn: the threshold is chosen on the other
    competitions' negatives (the lowest score whose FPR is <= ``selection_fpr``) and applied to it.

    Returns
    -------
    per_competition : list of (competition, threshold, hits, positives, false positives, negatives)
    pooled : (recall, false-positive rate, share of sources flagged), over all held-out competitions
    """
    per_competition = []
    tp = n_pos_all = fp = n_neg_all = src_hit = src_total = 0
    for held in sorted({r.competition for r in rows}):
        threshold = threshold_at_fpr([r.score for r in rows if r.competition != held and r.content == "neg"],
                                     selection_fpr)
        test = [r for r in rows if r.competition == held]
        pos, neg = _view(test, "content")
        hits = sum(1 for r in pos if r.score >= threshold)
        false = sum(1 for r in neg if r.score >= threshold)
        per_competition.append((held, threshold, hits, len(pos), false, len(neg)))
        tp, n_pos_all, fp, n_neg_all = tp + hits, n_pos_all + len(pos), fp + false, n_neg_all + len(neg)
        src_hit += sum(1 for r in test if r.source and r.score >= threshold)
        src_total += sum(1 for r in test if r.source)
    return per_competition, (tp / max(1, n_pos_all), fp / max(1, n_neg_all), src_hit / max(1, src_total))


if __name__ == "__main__":
    main()
