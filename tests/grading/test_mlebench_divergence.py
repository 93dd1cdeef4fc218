"""Finding where MLE-bench's grader would grade a file differently: one kind of looseness at a time.

The answer keys are small and invented. Every expected MLE-bench score below is the score MLE-bench's own
grader gives the same two files (checked with ``scripts/mlebench_grade.py`` in MLE-bench's pinned
environment); the detection emulates it with this project's metric.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from mleaudit.grading.grade import GradeReport, grade_submission
from mleaudit.grading.mlebench_divergence import SHOWN_ROWS, CheckedGrade, Divergence, find_mlebench_divergences
from mleaudit.grading.spec import load_competition_spec

REPO = Path(__file__).resolve().parents[2]
_SPECS: dict = {}


def spec_of(cid: str):
    if cid not in _SPECS:
        _SPECS[cid] = load_competition_spec(REPO / "competitions" / cid)
    return _SPECS[cid]


def check(tmp_path: Path, cid: str, answers: str, submission: str, **kwargs):
    answers_path = tmp_path / "answers.csv"
    answers_path.write_text(answers, encoding="utf-8")
    submission_path = tmp_path / "submission.csv"
    submission_path.write_text(submission, encoding="utf-8")
    return find_mlebench_divergences(submission_path, spec_of(cid), answers_path, **kwargs)


def only(result) -> Divergence:
    assert result.skipped is None
    assert len(result.records) == 1, result.records
    return result.records[0]


NOMAD = "nomad2018-predict-transparent-conductors"
NOMAD_ANSWERS = "id,formation_energy_ev_natom,bandgap_energy_ev\n1,0.1,1.0\n2,0.2,2.0\n3,0.3,3.0\n4,0.4,4.0\n"
NOMAD_HEADER = "id,formation_energy_ev_natom,bandgap_energy_ev\n"


# --- positional_rows ---------------------------------------------------------------------------------


def test_shuffled_rows_are_scored_by_position(tmp_path):
    record = only(check(tmp_path, NOMAD, NOMAD_ANSWERS, NOMAD_HEADER + "3,0.3,3.0\n1,0.1,1.0\n4,0.4,4.0\n2,0.2,2.0\n"))
    assert record.kind == "positional_rows"
    assert (record.mlebench_valid, record.mlebench_score, record.score_basis) == (True, 0.30799, "exact")
    assert (record.checked_valid, record.checked_score, record.checked_medal) == (True, 0.0, "gold")
    assert record.mlebench_medal == "none" and not record.medal_only_under_mlebench
    assert record.column == "id" and record.rows == (1, 2, 3, 4) and record.count == 4
    assert "row 1 has id '3' and is scored against the answers' id '1'" in record.trigger
    assert record.difference == ("MLE-bench: valid, score 0.30799, no medal; checked grade: valid, score 0.0, "
                                 "gold medal")


def test_a_file_without_ids_earns_a_medal_only_under_mlebench(tmp_path):
    record = only(check(tmp_path, NOMAD, NOMAD_ANSWERS,
                        "formation_energy_ev_natom,bandgap_energy_ev\n0.1,1.0\n0.2,2.0\n0.3,3.0\n0.4,4.0\n"))
    assert record.trigger.startswith("the file has no id column 'id'")
    assert (record.mlebench_valid, record.mlebench_score, record.mlebench_medal) == (True, 0.0, "gold")
    assert record.checked_valid is False and record.medal_only_under_mlebench
    assert record.difference.endswith("the medal exists only under MLE-bench's grader")


def test_a_file_in_the_answers_order_triggers_nothing(tmp_path):
    result = check(tmp_path, NOMAD, NOMAD_ANSWERS, NOMAD_HEADER + "1,0.15,1.0\n2,0.2,2.5\n3,0.3,3.0\n4,0.4,4.0\n")
    assert result.records == () and result.skipped is None


def test_rows_of_another_length_are_invalid_in_both(tmp_path):
    assert check(tmp_path, NOMAD, NOMAD_ANSWERS, NOMAD_HEADER + "2,0.2,2.0\n1,0.1,1.0\n").records == ()


def test_positional_pairs_within_each_trip(tmp_path):
    answers = ("tripId,UnixTimeMillis,LatitudeDegrees,LongitudeDegrees\nt1,1,37.0,-122.0\nt1,2,37.1,-122.1\n"
               "t1,3,37.2,-122.2\nt2,1,38.0,-121.0\nt2,2,38.1,-121.1\n")
    shuffled = ("tripId,UnixTimeMillis,LatitudeDegrees,LongitudeDegrees\nt2,2,38.1,-121.1\nt1,3,37.2,-122.2\n"
                "t1,1,37.0,-122.0\nt1,2,37.1,-122.1\nt2,1,38.0,-121.0\n")
    record = only(check(tmp_path, "smartphone-decimeter-2022", answers, shuffled))
    assert record.mlebench_score == 17389.41876 and record.checked_score == 0.0
    assert "within each tripId" in record.trigger
    wrong_times = answers.replace(",1,", ",9,").replace(",2,", ",9,").replace(",3,", ",9,")
    record = only(check(tmp_path, "smartphone-decimeter-2022", answers, wrong_times))
    assert (record.mlebench_score, record.checked_valid, record.medal_only_under_mlebench) == (0.0, False, True)


UW_ANSWERS = ("id,class,predicted,image_height,image_width\n"
              "case1_day1_slice_0001,large_bowel,1 5,10,10\ncase1_day1_slice_0001,small_bowel,,10,10\n"
              "case1_day1_slice_0001,stomach,20 5,10,10\ncase1_day1_slice_0002,large_bowel,3 4,10,10\n"
              "case1_day1_slice_0002,small_bowel,,10,10\ncase1_day1_slice_0002,stomach,,10,10\n")


def test_uw_madison_pairs_by_position_approximately(tmp_path):
    shuffled = ("id,class,predicted\ncase1_day1_slice_0001,stomach,20 5\ncase1_day1_slice_0001,large_bowel,1 5\n"
                "case1_day1_slice_0001,small_bowel,\ncase1_day1_slice_0002,large_bowel,3 4\n"
                "case1_day1_slice_0002,small_bowel,\ncase1_day1_slice_0002,stomach,\n")
    record = only(check(tmp_path, "uw-madison-gi-tract-image-segmentation", UW_ANSWERS, shuffled))
    assert record.kind == "positional_rows" and record.score_basis == "approximate"
    assert record.mlebench_score == 0.7 and record.checked_score == 1.0
    assert record.difference.startswith("MLE-bench (approximately): ")


# --- missing_rows_accepted, header_only_valid --------------------------------------------------------


def test_a_header_only_file_is_valid_without_a_score(tmp_path):
    record = only(check(tmp_path, "uw-madison-gi-tract-image-segmentation", UW_ANSWERS, "id,class,predicted\n"))
    assert record.kind == "header_only_valid" and record.rows == ()
    assert (record.mlebench_valid, record.mlebench_score, record.mlebench_medal) == (True, None, "none")
    assert record.mlebench_outcome == "valid, no score (undefined), no medal" and record.checked_valid is False


def test_missing_rows_are_scored_on_the_rows_given(tmp_path):
    result = check(tmp_path, "uw-madison-gi-tract-image-segmentation", UW_ANSWERS,
                   "id,class,predicted\ncase1_day1_slice_0001,large_bowel,1 5\ncase1_day1_slice_0001,small_bowel,\n")
    record = only(result)
    assert record.kind == "missing_rows_accepted" and record.score_basis == "approximate"
    assert record.count == 4 and record.mlebench_valid is True


def test_osic_missing_rows_are_valid_but_not_emulated(tmp_path):
    answers = ("Patient_Week,FVC,Percent,Patient\nP1_1,2000,50,P1\nP1_2,2100,50,P1\nP1_3,2200,50,P1\n"
               "P2_1,3000,50,P2\nP2_2,3100,50,P2\n")
    record = only(check(tmp_path, "osic-pulmonary-fibrosis-progression", answers,
                        "Patient_Week,FVC,Confidence\nP1_1,2000,100\nP2_1,3000,100\n"))
    assert record.kind == "missing_rows_accepted" and record.count == 3
    assert "lacks 3 of the 5 test ids, first 'P1_2'" in record.trigger
    assert record.mlebench_valid is None and record.mlebench_score is None and record.mlebench_medal is None
    assert record.score_basis == "not computed: the config marks missing_rows_accepted as not emulated"
    assert record.mlebench_outcome == "not computed"
    # A repeated week may be dropped or break the grader's arrays: reported, not emulated.
    repeated = "Patient_Week,FVC,Confidence\nP1_1,2000,100\nP1_1,2000,100\nP1_2,2100,100\nP1_3,2200,100\nP2_1,3000,100\nP2_2,3100,100\n"
    record = only(check(tmp_path, "osic-pulmonary-fibrosis-progression", answers, repeated))
    assert record.kind == "duplicate_ids_accepted" and record.rows == (2,) and record.mlebench_valid is None


# --- sorted_rows, row_order_required ------------------------------------------------------------------


def test_sorted_rows_score_wrong_and_repeated_keys(tmp_path):
    answers = "key,fare_amount\na,1.0\nb,2.0\nc,3.0\n"
    record = only(check(tmp_path, "new-york-city-taxi-fare-prediction", answers, "key,fare_amount\nx,1.0\ny,2.0\nz,3.0\n"))
    assert record.kind == "sorted_rows" and record.mlebench_score == 0.0 and record.medal_only_under_mlebench
    record = only(check(tmp_path, "new-york-city-taxi-fare-prediction", answers, "key,fare_amount\na,1.0\na,2.0\nc,3.0\n"))
    assert record.rows == (2,) and "row 2 is paired" in record.trigger and record.mlebench_score == 0.0


def test_sorted_rows_with_a_mask_applied_by_position(tmp_path):
    answers = ("id_seqpos,reactivity,deg_Mg_pH10,deg_pH10,deg_Mg_50C,deg_50C,keep\nx_0,1,1,1,1,1,True\n"
               "x_1,2,2,2,2,2,True\nx_2,3,3,3,3,3,False\ny_0,4,4,4,4,4,True\n")
    header = "id_seqpos,reactivity,deg_Mg_pH10,deg_pH10,deg_Mg_50C,deg_50C\n"
    record = only(check(tmp_path, "stanford-covid-vaccine", answers,
                        header + "y_0,4,4,4,4,4\nx_2,3,3,3,3,3\nx_1,2,2,2,2,2\nx_0,1,1,1,1,1\n"))
    assert (record.mlebench_score, record.checked_score) == (0.57735, 0.0)
    in_order = header + "x_0,1,1,1,1,1\nx_1,2,2,2,2,2\nx_2,3,3,3,3,3\ny_0,4,4,4,4,4\n"
    assert check(tmp_path, "stanford-covid-vaccine", answers, in_order).records == ()


def test_rows_out_of_order_are_invalid_where_the_grader_asserts_equal_ids(tmp_path):
    answers = "Id,Predicted,width,height\na,1 5,4,4\nb,2 3,4,4\n"
    record = only(check(tmp_path, "vesuvius-challenge-ink-detection", answers, "Id,Predicted\nb,2 3\na,1 5\n"))
    assert record.kind == "row_order_required"
    assert record.mlebench_valid is False and record.mlebench_outcome.startswith("invalid (")
    assert record.checked_valid is True and not record.medal_only_under_mlebench


# --- positional_columns, duplicate_ids_accepted --------------------------------------------------------

JIGSAW = "jigsaw-toxic-comment-classification-challenge"
CLASSES = ["toxic", "severe_toxic", "obscene", "threat", "insult", "identity_hate"]
JIGSAW_ANSWERS = ("id," + ",".join(CLASSES) + "\na,1,0,1,0,1,0\nb,0,1,0,1,0,1\nc,1,1,0,0,1,1\nd,0,0,1,1,0,0\n"
                  "e,-1,-1,-1,-1,-1,-1\n")
JIGSAW_ROWS = [("a", [.9, .1, .9, .1, .9, .1]), ("b", [.1, .9, .1, .9, .1, .9]), ("c", [.9, .9, .1, .1, .9, .9]),
               ("d", [.1, .1, .9, .9, .1, .1]), ("e", [.5] * 6)]


def jigsaw_file(order, rows=JIGSAW_ROWS):
    lines = []
    for key, values in rows:
        cells = dict(zip(CLASSES, values))
        lines.append(key + "," + ",".join(str(cells[c]) for c in order))
    return "id," + ",".join(order) + "\n" + "\n".join(lines) + "\n"


def test_columns_read_by_position(tmp_path):
    swapped = ["severe_toxic", "toxic", *CLASSES[2:]]
    record = only(check(tmp_path, JIGSAW, JIGSAW_ANSWERS, jigsaw_file(swapped)))
    assert record.kind == "positional_columns" and record.column == "severe_toxic" and record.count == 2
    assert (record.mlebench_score, record.checked_score) == (0.83333, 1.0)
    assert check(tmp_path, JIGSAW, JIGSAW_ANSWERS, jigsaw_file(CLASSES)).records == ()


def test_repeated_ids_paired_after_sorting(tmp_path):
    rows = [JIGSAW_ROWS[0], JIGSAW_ROWS[0], *JIGSAW_ROWS[2:]]
    record = only(check(tmp_path, JIGSAW, JIGSAW_ANSWERS, jigsaw_file(CLASSES, rows)))
    assert record.kind == "duplicate_ids_accepted" and record.rows == (2,)
    assert (record.mlebench_score, record.checked_valid) == (0.75, False)


def test_repeated_ids_merged_score_every_copy(tmp_path):
    answers = "segment_id,time_to_eruption\n1,100\n2,200\n3,300\n"
    record = only(check(tmp_path, "predict-volcanic-eruptions-ingv-oe", answers,
                        "segment_id,time_to_eruption\n1,100\n1,100\n1,100\n2,250\n3,300\n"))
    assert record.trigger == "2 repeated id(s) in 'segment_id', first '1' again at rows 2, 3"
    assert (record.mlebench_score, record.medal_only_under_mlebench) == (10.0, True)
    champs = ("id,molecule_name,atom_index_0,atom_index_1,type,scalar_coupling_constant\n1,m,0,1,1JHC,10.0\n"
              "2,m,0,2,1JHC,20.0\n3,m,0,3,2JHH,5.0\n")
    record = only(check(tmp_path, "champs-scalar-coupling", champs, "id,scalar_coupling_constant\n1,10.0\n1,10.0\n2,21.0\n3,5.5\n"))
    assert record.mlebench_score == -0.89588


def test_repeated_customers_take_the_next_customers_place(tmp_path):
    answers = "customer_id,prediction\nA,1 2 3\nB,4 5 6\n"
    record = only(check(tmp_path, "h-and-m-personalized-fashion-recommendations", answers,
                        "customer_id,prediction\nA,1 2 3\nA,4 5 6\nB,9\n"))
    assert (record.mlebench_score, record.checked_valid) == (1.0, False)


def test_pooled_repeats_that_grade_alike_are_no_divergence(tmp_path):
    answers = ("image_id,class_name,class_id,rad_id,x_min,y_min,x_max,y_max\na,Aortic,0,R1,10,10,50,50\n"
               "a,Cardio,3,R1,60,60,90,90\nb,No finding,14,R1,0,0,1,1\n")
    result = check(tmp_path, "vinbigdata-chest-xray-abnormalities-detection", answers,
                   "image_id,PredictionString\na,0 0.9 10 10 50 50\na,3 0.8 60 60 90 90\nb,14 1 0 0 1 1\n")
    assert result.records == () and result.skipped is None


# --- nan_inf_coerced, labels_truncated, odd_rle_accepted ----------------------------------------------


def jigsaw_bias_files():
    identities = ["male", "female", "homosexual_gay_or_lesbian", "christian", "jewish", "muslim", "black", "white",
                  "psychiatric_or_mental_illness"]
    rng = random.Random(1)
    rows = [[str(i), str(rng.choice([0.0, 1.0]))] + [str(rng.choice([0, 1])) for _ in identities] for i in range(40)]
    answers = "id,toxicity," + ",".join(identities) + "\n" + "\n".join(",".join(r) for r in rows) + "\n"
    return answers, rows


def test_missing_and_infinite_predictions_become_numbers(tmp_path):
    answers, rows = jigsaw_bias_files()
    cid = "jigsaw-unintended-bias-in-toxicity-classification"
    missing = "id,prediction\n" + "\n".join(f"{r[0]},{'' if i == 0 else r[1]}" for i, r in enumerate(rows)) + "\n"
    record = only(check(tmp_path, cid, answers, missing))
    assert record.kind == "nan_inf_coerced" and record.trigger == "1 missing or NaN cell(s) in 'prediction', first at row 1"
    assert (record.mlebench_score, record.checked_valid, record.medal_only_under_mlebench) == (1.0, False, True)
    infinite = "id,prediction\n" + "\n".join(f"{r[0]},{'inf' if i == 0 else r[1]}" for i, r in enumerate(rows)) + "\n"
    record = only(check(tmp_path, cid, answers, infinite))
    assert record.trigger.startswith("1 +inf cell(s)") and record.mlebench_score == 0.96836


def test_cells_that_set_the_whole_score(tmp_path):
    answers = "prediction_id,cancer\na,1\nb,0\nc,0\nd,1\n"
    record = only(check(tmp_path, "rsna-breast-cancer-detection", answers, "prediction_id,cancer\na,inf\nb,-inf\nc,0.1\nd,0.8\n"))
    assert record.mlebench_score == 0.92308 and record.rows == (1, 2)
    record = only(check(tmp_path, "rsna-breast-cancer-detection", answers, "prediction_id,cancer\na,\nb,0\nc,0.1\nd,0.8\n"))
    assert (record.mlebench_valid, record.mlebench_score) == (True, 0.0)
    answers = ("tripId,UnixTimeMillis,LatitudeDegrees,LongitudeDegrees\nt1,1,37.0,-122.0\nt1,2,37.1,-122.1\n")
    record = only(check(tmp_path, "smartphone-decimeter-2022", answers,
                        "tripId,UnixTimeMillis,LatitudeDegrees,LongitudeDegrees\nt1,1,,-122.0\nt1,2,37.1,-122.1\n"))
    assert (record.mlebench_valid, record.mlebench_score, record.column) == (True, None, "LatitudeDegrees")


def test_per_column_fills(tmp_path):
    answers = ("Patient_Week,FVC,Percent,Patient\nP1_1,2000,50,P1\nP1_2,2100,50,P1\nP1_3,2200,50,P1\n"
               "P2_1,3000,50,P2\nP2_2,3100,50,P2\n")
    cid = "osic-pulmonary-fibrosis-progression"
    rows = "\nP1_2,2100,100\nP1_3,2200,100\nP2_1,3000,100\nP2_2,3100,100\n"
    record = only(check(tmp_path, cid, answers, "Patient_Week,FVC,Confidence\nP1_1,2000," + rows))
    assert (record.column, record.mlebench_score) == ("Confidence", -4.88041)
    record = only(check(tmp_path, cid, answers, "Patient_Week,FVC,Confidence\nP1_1,inf,100" + rows))
    assert (record.column, record.mlebench_score) == ("FVC", -7.78017)


def test_cells_whose_fate_is_not_emulated(tmp_path):
    answers = ("eeg_id,seizure_vote,lpd_vote,gpd_vote,lrda_vote,grda_vote,other_vote\n1,1,0,0,0,0,0\n2,0,1,0,0,0,1\n")
    submission = ("eeg_id,seizure_vote,lpd_vote,gpd_vote,lrda_vote,grda_vote,other_vote\n1,0.5,,0.1,0.1,0.1,0.2\n"
                  "2,0.1,0.4,0.1,0.1,0,0.3\n")
    record = only(check(tmp_path, "hms-harmful-brain-activity-classification", answers, submission))
    assert record.mlebench_valid is True and record.mlebench_score is None
    assert record.score_basis == "not computed: what MLE-bench makes of a missing or NaN cell in 'lpd_vote' is not emulated"


def test_fractional_labels_are_truncated(tmp_path):
    record = only(check(tmp_path, "herbarium-2020-fgvc7", "Id,Predicted\n1,1\n2,2\n3,3\n4,1\n",
                        "Id,Predicted\n1,1.5\n2,2.9\n3,3\n4,1\n"))
    assert record.kind == "labels_truncated" and record.rows == (1, 2) and record.column == "Predicted"
    assert (record.mlebench_score, record.medal_only_under_mlebench) == (1.0, True)
    record = only(check(tmp_path, "iwildcam-2019-fgvc6", "Id,Category\na,1\nb,2\nc,3\n", "Id,Category\na,1.5\nb,2\nc,3.2\n"))
    assert record.rows == (1, 3) and record.mlebench_score == 1.0
    # Whole numbers written as floats are read alike by both graders.
    assert check(tmp_path, "herbarium-2021-fgvc8", "Id,Predicted\n1,2\n2,3\n", "Id,Predicted\n1,2.0\n2,3\n").records == ()


@pytest.mark.parametrize(("mask", "score"), [("7", 1.0), ("1 5 20", 0.66667)])
def test_odd_run_length_masks_are_decoded_as_mlebench_does(tmp_path, mask, score):
    answers = "id,rle_mask\na,1 5\nb,\nc,10 3\n"
    first = mask if " " in mask else "1 5"
    second = "" if " " in mask else mask
    record = only(check(tmp_path, "tgs-salt-identification-challenge", answers,
                        f"id,rle_mask\na,{first}\nb,{second}\nc,10 3\n"))
    assert record.kind == "odd_rle_accepted" and record.mlebench_score == score and record.checked_valid is False


def test_odd_masks_mlebench_cannot_decode_either_are_no_divergence(tmp_path):
    answers = "id,rle_mask\na,1 5\nb,\nc,10 3\n"
    assert check(tmp_path, "tgs-salt-identification-challenge", answers, "id,rle_mask\na,1 5 20 2 30\nb,\nc,10 3\n").records == ()


# --- strict graders, untrusted input, bounds ------------------------------------------------------------


def test_a_strict_grader_has_nothing_to_find(tmp_path):
    result = check(tmp_path, "spaceship-titanic", "PassengerId,Transported\n0001_01,True\n0002_01,False\n",
                   "PassengerId,Transported\n0002_01,False\n0001_01,True\n")
    assert result.records == () and result.skipped is None


@pytest.mark.parametrize(
    ("content", "skipped"),
    [
        (b"id,formation_energy_ev_natom\n\"1,0.1\n", "the submission cannot be read: "),
        (b"\xff\xfe\x00\x01garbage\n\x00\x00", "the submission cannot be read: "),
        (b"", None),
        (b"id," + b"x" * (2 << 20) + b"\n1,2\n", "the submission cannot be read: "),
    ],
)
def test_unreadable_files_are_reported_not_raised(tmp_path, content, skipped):
    answers = tmp_path / "answers.csv"
    answers.write_text(NOMAD_ANSWERS, encoding="utf-8")
    submission = tmp_path / "submission.csv"
    submission.write_bytes(content)
    result = find_mlebench_divergences(submission, spec_of(NOMAD), answers)
    assert result.records == ()
    if skipped is None:
        assert result.skipped is None
    else:
        assert result.skipped.startswith(skipped)


def test_missing_answers_are_reported_not_raised(tmp_path):
    submission = tmp_path / "submission.csv"
    submission.write_text(NOMAD_HEADER + "1,0.1,1.0\n", encoding="utf-8")
    result = find_mlebench_divergences(submission, spec_of(NOMAD), tmp_path / "nope.csv")
    assert result.records == () and result.skipped.startswith("the answers cannot be read: ")


def test_records_list_the_first_rows_only_and_count_them_all(tmp_path):
    answers = NOMAD_HEADER + "".join(f"{i},0.{i % 9 + 1},{i}.0\n" for i in range(1, 41))
    reverse = NOMAD_HEADER + "".join(f"{i},0.{i % 9 + 1},{i}.0\n" for i in range(40, 0, -1))
    record = only(check(tmp_path, NOMAD, answers, reverse))
    assert record.rows == tuple(range(1, SHOWN_ROWS + 1)) and record.count == 40
    assert "rows 1, 2, 3, 4, 5 (40 in all) are paired" in record.trigger


def test_a_given_checked_grade_is_used_as_given(tmp_path):
    shuffled = NOMAD_HEADER + "3,0.3,3.0\n1,0.1,1.0\n4,0.4,4.0\n2,0.2,2.0\n"
    record = only(check(tmp_path, NOMAD, NOMAD_ANSWERS, shuffled, checked=CheckedGrade(valid=False, score=None)))
    assert record.checked_valid is False and record.checked_outcome == "invalid"


def test_records_hold_no_answer_value(tmp_path):
    answers = NOMAD_HEADER + "1,0.123456,7.654321\n2,0.222222,8.888888\n"
    record = only(check(tmp_path, NOMAD, answers, NOMAD_HEADER + "2,0.5,1.0\n1,0.1,2.0\n"))
    text = json.dumps(record.to_dict())
    for value in ("0.123456", "7.654321", "0.222222", "8.888888"):
        assert value not in text


def test_round_trip_through_dicts(tmp_path):
    record = only(check(tmp_path, NOMAD, NOMAD_ANSWERS, NOMAD_HEADER + "3,0.3,3.0\n1,0.1,1.0\n4,0.4,4.0\n2,0.2,2.0\n"))
    assert Divergence.from_dict(json.loads(json.dumps(record.to_dict()))) == record


# --- the grade report ------------------------------------------------------------------------------------


def _prepared(tmp_path: Path, cid: str, answers: str) -> Path:
    data = tmp_path / "data"
    path = spec_of(cid).answers_path(data)
    path.parent.mkdir(parents=True)
    path.write_text(answers, encoding="utf-8")
    return data


def test_grade_reports_carry_the_records(tmp_path):
    data = _prepared(tmp_path, NOMAD, NOMAD_ANSWERS)
    submission = tmp_path / "submission.csv"
    submission.write_text(NOMAD_HEADER + "3,0.3,3.0\n1,0.1,1.0\n4,0.4,4.0\n2,0.2,2.0\n", encoding="utf-8")
    report = grade_submission(submission, spec_of(NOMAD), data)
    assert report.score == 0.0 and report.gold_medal
    as_dict = report.to_dict()
    assert as_dict["mlebench_divergence"][0]["kind"] == "positional_rows"
    assert as_dict["mlebench_divergence"][0]["mlebench_score"] == 0.30799
    assert as_dict["mlebench_divergence_skipped"] is None
    assert GradeReport.from_dict(as_dict).mlebench_divergence == report.mlebench_divergence
    assert grade_submission(submission, spec_of(NOMAD), data, divergences=False).mlebench_divergence == ()
    # MLE-bench's report fields are all still there.
    for key in ("score", "gold_threshold", "silver_threshold", "bronze_threshold", "median_threshold", "any_medal",
                "gold_medal", "silver_medal", "bronze_medal", "above_median", "submission_exists",
                "valid_submission", "is_lower_better", "created_at", "submission_path", "competition_id"):
        assert key in as_dict


def test_grade_of_a_missing_file_has_no_records(tmp_path):
    data = _prepared(tmp_path, NOMAD, NOMAD_ANSWERS)
    report = grade_submission(tmp_path / "nope.csv", spec_of(NOMAD), data)
    assert report.to_dict()["mlebench_divergence"] == [] and report.mlebench_divergence_skipped is None


def test_grade_command_keeps_mlebench_fields_and_adds_the_records(tmp_path):
    from click.testing import CliRunner

    from mleaudit.audit.cli import main

    data = _prepared(tmp_path, NOMAD, NOMAD_ANSWERS)
    (tmp_path / "shuffled.csv").write_text(NOMAD_HEADER + "3,0.3,3.0\n1,0.1,1.0\n4,0.4,4.0\n2,0.2,2.0\n", encoding="utf-8")
    (tmp_path / "in_order.csv").write_text(NOMAD_ANSWERS, encoding="utf-8")
    jsonl = tmp_path / "submissions.jsonl"
    jsonl.write_text("\n".join(json.dumps({"competition_id": NOMAD, "submission_path": name})
                               for name in ("shuffled.csv", "in_order.csv")) + "\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["grade", "--submission", str(jsonl), "--output-dir", str(tmp_path / "out"),
                                       "--data-dir", str(data)])
    assert result.exit_code == 0, result.output
    assert ("1 submission(s) MLE-bench's grader would grade differently, 0 with a medal only under MLE-bench's "
            "grader") in result.output
    (report_file,) = (tmp_path / "out").iterdir()
    shuffled, in_order = json.loads(report_file.read_text())["competition_reports"]
    assert shuffled["score"] == 0.0 and shuffled["gold_medal"] and shuffled["is_lower_better"]
    assert [d["kind"] for d in shuffled["mlebench_divergence"]] == ["positional_rows"]
    assert shuffled["mlebench_divergence"][0]["mlebench_score"] == 0.30799
    assert in_order["mlebench_divergence"] == [] and in_order["mlebench_divergence_skipped"] is None
