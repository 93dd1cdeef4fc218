"""Detection quality of the copy detector (``score``) on the shared partial copies and known copies.

Prints, for easy partial copies, hard partial copies, both, and the known copies of
``notebooks/labels.tsv``: AUC, recall at a false-positive rate of 1 %, recall and false-positive
rate at the shipped threshold (read from ``rules/plagiarism/``), the share of cases whose source
kernel is flagged, and the recall of MLE-bench's rule "Dolos similarity > 0.6" for comparison.
Then leave-one-competition-out: for each competition, the threshold is chosen on the other
competitions by the rule used for the shipped one (the lowest score whose false-positive rate
stays at or below 0.5 %) and applied to the held-out competition.

Every figure goes through :func:`audit.similarity.compare`, the code path of ``mleaudit
similarity compare`` and ``mleaudit audit``.

Ground truth. A case is an agent script with a slice of one notebook (its *source*) pasted in.

- *labels* (the issue's definition): positives are the source, the notebooks of the source's
  ``source_group`` and its near-duplicates (Dolos similarity >= 0.8 with the source in
  ``similarity-golden``); every other notebook of the competition is a negative.
- *content*: the label view counts as negatives notebooks that contain the very code that was
  pasted (Kaggle notebooks copy each other, and 24 of the 24 Titanic notebooks share tutorial
  code), and as positives group members that lack it. The content view reads which lines of the
  case were copied (lines found in the source and not in the agent script the case was built on,
  ``runs/aide``) and how many of them each notebook contains (lines compared as the detector's
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

Usage: ``python benchmarks/detection_quality.py [--data ../shared/data] [--references notebooks|golden]
[--no-known]``
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(REPO_ROOT))

from audit.similarity import (  # noqa: E402
    SimilarityOptions,
    compare,
    load_reference_corpus,
    load_score_threshold,
)
from audit.similarity.detect import bits_from_score, lex_code  # noqa: E402
from audit.units import CodeUnit  # noqa: E402

DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data"
NEAR_DUPLICATE_SIMILARITY = 0.8
CONTENT_POSITIVE = 0.5
CONTENT_NEGATIVE = 0.1
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

    def coverage(self, case_text: str, source: str, competition: str) -> dict[str, float]:
        """reference -> share of the copied tokens it contains (1.0 for the source)."""
        lines = _lines(case_text)
        host = max(self.hosts, key=lambda h: sum(1 for line, _ in lines if line in h)) if self.hosts else ""
        copied = [(line, n) for line, n in lines if line in self.golden[source] and line not in host]
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
            rows.append(Row(agent=pair.agent_path, kind=kind, competition=competition, reference=reference,
                            score=pair.score, similarity=pair.similarity, label=label, content=content,
                            source=reference == source, cover=cover))
    return rows


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
    args = parser.parse_args()
    if not (args.data / "partial-copies" / "cases.tsv").is_file():
        raise SystemExit(f"no partial-copy cases under {args.data}")
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
                "agreement": " (pairs both views agree on)"}[view]
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

    print("\n== leave one competition out (content view; threshold chosen on the other competitions "
          f"at FPR <= {SELECTION_FPR:.1%})")
    competitions = sorted({r.competition for r in rows})
    tp = fn = fp = tn = src_hit = src_total = 0
    chosen = []
    for held in competitions:
        train_neg = [r.score for r in rows if r.competition != held and r.content == "neg"]
        threshold = threshold_at_fpr(train_neg, SELECTION_FPR)
        chosen.append(threshold)
        test = [r for r in rows if r.competition == held]
        pos, neg = _view(test, "content")
        hits = sum(1 for r in pos if r.score >= threshold)
        false = sum(1 for r in neg if r.score >= threshold)
        tp += hits
        fn += len(pos) - hits
        fp += false
        tn += len(neg) - false
        sources = [r for r in test if r.source]
        src_hit += sum(1 for r in sources if r.score >= threshold)
        src_total += len(sources)
        print(f"  {held:45} threshold {threshold:.3f} ({bits_from_score(threshold):5.0f} bits)  "
              f"recall {hits / max(1, len(pos)):.3f} ({len(pos)})  FPR {false / max(1, len(neg)):.4f} ({len(neg)})")
    print(f"LOCO pooled: recall {tp / max(1, tp + fn):.3f}  FPR {fp / max(1, fp + tn):.4f}  sources flagged "
          f"{src_hit / max(1, src_total):.3f}  thresholds {min(chosen):.3f}-{max(chosen):.3f}")
    chosen_all = threshold_at_fpr([r.score for r in rows if r.content == "neg"], SELECTION_FPR)
    print(f"threshold chosen on all competitions by the same rule: {chosen_all:.3f} "
          f"({bits_from_score(chosen_all):.0f} bits); shipped {shipped:.3f}")


if __name__ == "__main__":
    main()
