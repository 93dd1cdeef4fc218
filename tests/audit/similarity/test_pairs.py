"""Dolos pair figures, containment and fragments on hand-built fingerprint sequences."""

from __future__ import annotations

import pytest

from mleaudit.audit.similarity.fingerprint_index import IndexedFile, Role
from mleaudit.audit.similarity.pairs import (
    build_fragments,
    containment,
    dolos_metrics,
    longest_common_run,
    pair_report,
)
from mleaudit.audit.similarity.tokenize import tokenize_text
from mleaudit.audit.similarity.winnow import Fingerprint
from mleaudit.audit.units import CellRange, CodeUnit


def make_file(path: str, hashes: list[int]) -> IndexedFile:
    """An indexed file whose fingerprint i covers tokens i..i+1 of a stream of ``x`` tokens."""
    n_tokens = len(hashes) + 1
    text = "x" * n_tokens
    from mleaudit.audit.similarity.tokenize import TokenizedFile

    tokenized = TokenizedFile(
        path=path,
        language="chars",
        text=text,
        tokens=tuple(text),
        starts=tuple(range(n_tokens)),
        ends=tuple(range(1, n_tokens + 1)),
    )
    fingerprints = tuple(Fingerprint(hash=h, start=i, stop=i + 1, index=i) for i, h in enumerate(hashes))
    occurrences: dict[int, list[int]] = {}
    for f in fingerprints:
        occurrences.setdefault(f.hash, []).append(f.index)
    return IndexedFile(
        id=0,
        role=Role.REFERENCE,
        file=tokenized,
        fingerprints=fingerprints,
        occurrences={h: tuple(p) for h, p in occurrences.items()},
    )


LEFT = make_file("left", [1, 2, 3, 4, 2])
RIGHT = make_file("right", [2, 3, 9])


def test_dolos_metrics_by_hand() -> None:
    m = dolos_metrics(LEFT, RIGHT)
    assert (m.left_covered, m.right_covered, m.total_overlap) == (3, 2, 5)
    assert (m.left_total, m.right_total) == (5, 3)
    assert m.similarity == pytest.approx(5 / 8)
    # right is the short side (2 < 3 is false for left): runs over right's consecutive indices.
    assert m.longest_fragment == 2


def test_dolos_metrics_with_ignored_hash() -> None:
    m = dolos_metrics(LEFT, RIGHT, frozenset({3}))
    assert (m.left_covered, m.right_covered) == (2, 1)
    assert (m.left_ignored, m.right_ignored) == (1, 1)
    assert m.similarity == pytest.approx(3 / (8 - 2))
    assert m.longest_fragment == 1


def test_dolos_metrics_nothing_shared_and_empty() -> None:
    m = dolos_metrics(LEFT, make_file("other", [10, 11]))
    assert (m.similarity, m.total_overlap, m.longest_fragment) == (0.0, 0, 0)
    empty = dolos_metrics(make_file("a", []), make_file("b", []))
    assert (empty.similarity, empty.left_total, empty.right_total) == (0.0, 0, 0)


def test_longest_common_run_asymmetry_is_dolos() -> None:
    # The longer side counts consecutive list positions, not indices.
    assert longest_common_run([(0, 7), (1, 8)], [(3, 7), (8, 8), (9, 5)]) == 2
    assert longest_common_run([(3, 7), (8, 8), (9, 5)], [(0, 7), (1, 8)]) == 2
    assert longest_common_run([], [(1, 1)]) == 0


def test_fragments_by_hand() -> None:
    fragments = build_fragments(LEFT, RIGHT)
    assert [(f.left, f.right) for f in fragments] == [(range(1, 3), range(0, 2)), (range(4, 5), range(0, 1))]
    assert [f.length for f in build_fragments(LEFT, RIGHT, min_kgrams=2)] == [2]
    assert build_fragments(LEFT, RIGHT, frozenset({2, 3})) == []


def test_fragments_contained_on_both_sides_are_squashed() -> None:
    same = make_file("same", [5, 5, 5])
    fragments = build_fragments(same, make_file("same2", [5, 5, 5]))
    assert [(f.left, f.right) for f in fragments] == [(range(0, 3), range(0, 3))]


def test_fragment_contained_on_one_side_only_is_kept() -> None:
    fragments = build_fragments(make_file("l", [7, 8, 9]), make_file("r", [7, 8, 9, 8]))
    assert [(f.left, f.right) for f in fragments] == [(range(0, 3), range(0, 3)), (range(1, 2), range(3, 4))]


def test_the_longest_fragments_are_those_of_the_whole_list_cut() -> None:
    import random

    from mleaudit.audit.similarity import fragments

    rng = random.Random(0)
    tested = 0
    for _ in range(3000):
        span = rng.choice([5, 20, 200])
        runs = []
        for _ in range(rng.randint(1, 80)):
            start, length = rng.randint(0, span), rng.randint(1, span // 2 + 1)
            if rng.random() < 0.8:  # a diagonal run, as unchained pairings give
                shift = rng.randint(0, 2 * span)
                runs.append((start, start + length, start + shift, start + shift + length))
            else:  # merged runs of a capped pair need not be diagonal
                other = rng.randint(0, span)
                runs.append((start, start + length, other, other + rng.randint(1, span)))
        runs += runs[: rng.randint(0, 3)]  # a run given twice is one fragment
        count, least = rng.randint(1, 10), rng.randint(1, 3)
        whole = sorted(r for r in fragments._squash(runs) if r[1] - r[0] >= least)
        first = sorted(range(len(whole)), key=lambda i: (whole[i][0] - whole[i][1], i))[:count]
        found = fragments._longest_kept(runs, count, least)
        if found is not None:
            tested += 1
            assert found == [whole[i] for i in sorted(first)]
    assert tested > 2500
    assert fragments._longest_kept([(0, 3, 0, 3), (1, 2, 5, 6)], 0, 1) == []


def test_a_cap_of_no_fragment_lists_none() -> None:
    pair = pair_report(LEFT, RIGHT, max_fragments=0)
    assert pair.fragments == () and pair.total_overlap == pair_report(LEFT, RIGHT).total_overlap


def test_containment() -> None:
    assert containment(3, 10, 4) == 0.5
    assert containment(0, 0) == 0.0
    assert containment(2, 2, 2) == 0.0


def test_pair_report_fields_and_spans() -> None:
    report = pair_report(LEFT, RIGHT, reference_id="k")
    assert report.agent_containment == pytest.approx(3 / 5)
    assert report.reference_containment == pytest.approx(2 / 3)
    assert (report.agent_covered, report.reference_covered, report.total_overlap) == (3, 2, 5)
    first = report.fragments[0]
    # fingerprints 1..2 cover tokens 1..3 (one character each)
    assert (first.agent.start_byte, first.agent.end_byte) == (1, 4)
    assert (first.reference.start_byte, first.reference.end_byte) == (0, 3)
    data = report.to_dict()
    assert data["reference_id"] == "k" and data["fragments"][0]["agent_kgrams"] == [1, 3]


def test_pair_report_describes_notebook_cells_and_maps_log_code() -> None:
    from mleaudit.audit.model import Span
    from mleaudit.audit.similarity.fingerprint_index import FingerprintIndex

    code = "values = [i * 2 for i in range(10) if i % 3]\nprint(sum(values), len(values))\n"
    notebook_text = "import os\n\n" + code
    notebook = CodeUnit(
        path="kernel.ipynb",
        language="python",
        text=notebook_text,
        cells=(CellRange(cell_index=0, start_line=1, end_line=1), CellRange(cell_index=2, start_line=3, end_line=4)),
        source="notebook",
    )
    log_text = "step 1\n" + code
    origin = Span.from_offsets(log_text, "logs/run.log", 7, len(log_text))
    agent = CodeUnit(path="logs/run.log", language="python", text=code, origin=origin, source="log")
    index = FingerprintIndex(kgram_length=5, kgrams_in_window=3)
    ref = index.add_reference(tokenize_text(notebook.text, "python", notebook.path))
    ag = index.add_agent(tokenize_text(agent.text, "python", agent.path))
    report = pair_report(ag, ref, agent_unit=agent, reference_unit=notebook)
    assert report.fragments
    fragment = max(report.fragments, key=lambda f: f.length)
    assert fragment.reference_location.startswith("cell 2, line ")
    assert fragment.agent.path == "logs/run.log" and fragment.agent.start_line >= 2
    assert fragment.agent_location == f"line {fragment.agent.start_line}"
    assert log_text[fragment.agent.start_byte : fragment.agent.end_byte] in log_text[7:]


def _brute_force_fragments(left: IndexedFile, right: IndexedFile) -> list[tuple[range, range]]:
    pairs = {
        (a, b)
        for a, fa in enumerate(left.fingerprints)
        for b, fb in enumerate(right.fingerprints)
        if fa.hash == fb.hash
    }
    runs = []
    for a, b in pairs:
        if (a - 1, b - 1) not in pairs:
            n = 1
            while (a + n, b + n) in pairs:
                n += 1
            runs.append((range(a, a + n), range(b, b + n)))

    def inside(x: range, y: range) -> bool:
        return y.start <= x.start and x.stop <= y.stop

    kept = [r for r in runs if not any(o != r and inside(r[0], o[0]) and inside(r[1], o[1]) for o in runs)]
    return sorted(kept, key=lambda r: (r[0].start, r[0].stop, r[1].start, r[1].stop))


def test_fragments_agree_with_brute_force_on_repetitive_sequences() -> None:
    import random

    rng = random.Random(3)
    for _ in range(200):
        left = make_file("l", [rng.randrange(4) for _ in range(rng.randrange(1, 25))])
        right = make_file("r", [rng.randrange(4) for _ in range(rng.randrange(1, 25))])
        got = [(f.left, f.right) for f in build_fragments(left, right)]
        assert got == _brute_force_fragments(left, right)


def _dolos_loop(left: list[tuple[int, int]], right: list[tuple[int, int]]) -> int:
    """Dolos's ``longestCommonSubstring`` loop with no shortcut."""
    short, long = (left, right) if len(left) < len(right) else (right, left)
    best, previous = 0, {}
    for _, value in long:
        current = {}
        for index, other in short:
            if other == value:
                current[index] = previous.get(index - 1, 0) + 1
                best = max(best, current[index])
        previous = current
    return best


def test_longest_common_run_past_the_visit_bound_is_still_dolos(monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    import mleaudit.audit.similarity.pair_metrics as pair_metrics

    rng = random.Random(8)
    monkeypatch.setattr(pair_metrics, "MAX_RUN_VISITS", 0)  # every call takes the substring route
    for _ in range(200):
        left = sorted(rng.sample(range(40), rng.randrange(0, 20)))
        right = sorted(rng.sample(range(40), rng.randrange(0, 20)))
        left_occ = [(i, rng.randrange(3)) for i in left]
        right_occ = [(i, rng.randrange(3)) for i in right]
        assert longest_common_run(left_occ, right_occ) == _dolos_loop(left_occ, right_occ)


NESTED = "value = " + "(" * 5000 + "1" + ")" * 5000 + "\n"


def test_five_thousand_nested_parentheses_against_themselves_in_well_under_a_second() -> None:
    import time

    from mleaudit.audit.similarity.fingerprint_index import FingerprintIndex

    index = FingerprintIndex()
    agent = index.add_agent(tokenize_text(NESTED, "python", "agent.py"))
    reference = index.add_reference(tokenize_text(NESTED, "python", "kernel.py"))
    started = time.perf_counter()
    report = pair_report(agent, reference)
    elapsed = time.perf_counter() - started
    n = len(agent.fingerprints)
    # Dolos's figures are exact; the one fragment is the whole file (every other run lies inside it)
    assert (report.longest_fragment, report.agent_covered, report.agent_containment) == (n, n, 1.0)
    assert [(f.agent_kgrams, f.reference_kgrams) for f in report.fragments] == [(range(0, n), range(0, n))]
    assert elapsed < 1.0, f"{elapsed:.2f} s"  # about 0.1 s; Dolos's own loop: 10**8 steps


def test_capped_fragments_keep_runs_through_repeated_hashes(monkeypatch: pytest.MonkeyPatch) -> None:
    import mleaudit.audit.similarity.fragments as fragments

    # 1 2 3 anchor a copied stretch of 60 repeated 9s; 9 also repeats elsewhere on the right
    left = make_file("l", [1, 2, 3] + [9] * 60 + [4])
    right = make_file("r", [9] * 30 + [5, 1, 2, 3] + [9] * 60 + [4, 6] + [9] * 8)
    exact = [(f.left, f.right) for f in build_fragments(left, right)]
    assert exact == _brute_force_fragments(left, right)
    monkeypatch.setattr(fragments, "MAX_FRAGMENT_PAIRINGS", 100)  # 9 pairs 60 x 98 times: left out
    capped = [(f.left, f.right) for f in build_fragments(left, right)]
    # the anchored copy is whole again; the runs made of 9s alone are not reported
    assert capped == [(range(0, 64), range(31, 95))]
    assert capped[0] in exact
