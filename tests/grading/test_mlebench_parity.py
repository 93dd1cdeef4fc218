"""Competitions whose MLE-bench grader transforms or checks a submission in its own way.

Each test writes a small invented answer key where the competition's config expects it, then
grades submissions through :func:`mleaudit.grading.grade.score_submission` (the path of ``mleaudit
grade``) and checks the score, or the rejection, that MLE-bench's ``grade.py`` for that
competition gives the same file.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from mleaudit.grading import CompetitionRegistry, find_competitions_root
from mleaudit.grading.errors import InvalidSubmission
from mleaudit.grading.grade import score_csv, score_submission
from tests.grading.test_column_policy import _pair

ROOT = find_competitions_root()
REGISTRY = CompetitionRegistry(ROOT, ROOT / ".unused")


def grade(competition_id: str, answers: str, submission: str, tmp_path: Path) -> float:
    """Score CSV text ``submission`` against CSV text ``answers`` as the competition's answer key."""
    spec = REGISTRY.get(competition_id)
    data_dir = tmp_path / "data"
    answers_path = spec.answers_path(data_dir)
    answers_path.parent.mkdir(parents=True, exist_ok=True)
    answers_path.write_text(answers, encoding="utf-8")
    submission_path = tmp_path / "submission.csv"
    submission_path.write_text(submission, encoding="utf-8")
    return score_submission(submission_path, spec, data_dir)


def test_plant_seedlings_species_are_whole_labels(tmp_path: Path) -> None:
    answers = "file,species\na.png,Common Chickweed\nb.png,Loose Silky-bent\n"
    # One right, one wrong that shares a word with the truth: micro F1 of single labels = accuracy.
    submission = "file,species\na.png,Common Chickweed\nb.png,Common wheat\n"
    assert grade("plant-seedlings-classification", answers, submission, tmp_path) == 0.5


@pytest.mark.parametrize(("value", "valid"), [("1", True), ("100", True), ("0.5", False), ("100.01", False)])
def test_petfinder_pawpularity_lies_between_1_and_100(value: str, valid: bool, tmp_path: Path) -> None:
    answers = "Id,Pawpularity\np1,30\np2,60\n"
    submission = f"Id,Pawpularity\np1,30\np2,{value}\n"
    if valid:
        assert grade("petfinder-pawpularity-score", answers, submission, tmp_path) == pytest.approx(
            (((60 - float(value)) ** 2) / 2) ** 0.5
        )
    else:
        with pytest.raises(InvalidSubmission, match=r"Pawpularity.*row 2"):
            grade("petfinder-pawpularity-score", answers, submission, tmp_path)


RSNA_MICCAI = "rsna-miccai-brain-tumor-radiogenomic-classification"
RSNA_ANSWERS = "BraTS21ID,MGMT_value\n00002,1\n00005,0\n00010,1\n00011,0\n"


@pytest.mark.parametrize(
    "ids",
    [
        ["00002", "00005", "00010", "00011"],  # as the answers spell them
        ["2", "5", "10", "11"],  # written from pd.read_csv(sample_submission)
        ["2.0", "5.0", "10.0", "11.0"],  # a float column
        ["11", "2", "10", "5"],  # and in another order
    ],
)
def test_rsna_miccai_ids_are_matched_by_number(ids: list[str], tmp_path: Path) -> None:
    scores = {"2": "0.9", "5": "0.2", "10": "0.4", "11": "0.6"}
    rows = "".join(f"{i},{scores[str(int(float(i)))]}\n" for i in ids)
    # Positives 0.9 and 0.4 against negatives 0.2 and 0.6: three of the four pairs are ordered.
    assert grade(RSNA_MICCAI, RSNA_ANSWERS, "BraTS21ID,MGMT_value\n" + rows, tmp_path) == 0.75


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ("2,0.9\n5,0.2\n10,0.4\n12,0.6\n", r"^Submission has id '12' at row 4, which is not a test id"),
        ("2,0.9\n2.0,0.2\n10,0.4\n11,0.6\n", r"^Submission repeats id '00002' at rows 1 and 2\."),
        ("2,0.9\nfive,0.2\n10,0.4\n11,0.6\n", r"^Submission has id 'five' at row 2, which is not a test id \(1 of its 4 rows"),
    ],
)
def test_rsna_miccai_ids_that_are_no_test_id_as_a_number_are_still_rejected(rows: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(InvalidSubmission, match=message):
        grade(RSNA_MICCAI, RSNA_ANSWERS, "BraTS21ID,MGMT_value\n" + rows, tmp_path)


@pytest.mark.parametrize("competition_id", ["text-normalization-challenge-english-language", "text-normalization-challenge-russian-language"])
def test_text_normalization_compares_missing_looking_tokens_as_nan(competition_id: str, tmp_path: Path) -> None:
    answers = "id,after\n0_0,None\n0_1,n a\n0_2,null\n0_3,seven\n"
    # "None" and "null" are read as missing in both files and compared as "nan"; so is an empty
    # cell, which therefore matches "null". "NA" for "n a" is wrong.
    submission = "id,after\n0_0,None\n0_1,NA\n0_2,\n0_3,seven\n"
    assert grade(competition_id, answers, submission, tmp_path) == 0.75


#: Competitions whose MLE-bench grader compares ids as the numbers pandas reads (sorting both
#: files by id and comparing the values, or merging on them) and whose test ids are numbers.
IDS_BY_NUMBER = {
    "billion-word-imputation",
    "cdiscount-image-classification-challenge",
    "champs-scalar-coupling",
    "dogs-vs-cats-redux-kernels-edition",
    "facebook-recruiting-iii-keyword-extraction",
    "google-research-identify-contrails-reduce-global-warming",
    "herbarium-2020-fgvc7",
    "herbarium-2021-fgvc8",
    "herbarium-2022-fgvc9",
    "hms-harmful-brain-activity-classification",
    "icecube-neutrinos-in-deep-ice",
    "inaturalist-2019-fgvc6",
    "invasive-species-monitoring",
    "jigsaw-unintended-bias-in-toxicity-classification",
    "leaf-classification",
    "lmsys-chatbot-arena",
    "ml2021spring-hw2",
    "mlsp-2013-birds",
    "movie-review-sentiment-analysis-kernels-only",
    "multi-modal-gesture-recognition",
    "playground-series-s3e18",
    "predict-volcanic-eruptions-ingv-oe",
    RSNA_MICCAI,
    "tabular-playground-series-dec-2021",
    "tabular-playground-series-may-2022",
    "ventilator-pressure-prediction",
}


def setting(name: str, value: object) -> set[str]:
    """The competitions whose config sets the scoring parameter ``name`` to ``value``."""
    return {cid for cid in REGISTRY.ids() if (REGISTRY.get(cid).metric.params or {}).get(name) == value}


def test_only_graders_comparing_numbers_match_ids_by_number() -> None:
    assert setting("id_match", "number") == IDS_BY_NUMBER


@pytest.mark.parametrize("competition_id", sorted(IDS_BY_NUMBER))
def test_ids_spelled_as_other_numbers_grade_alike(competition_id: str, tmp_path: Path) -> None:
    spec = REGISTRY.get(competition_id)
    answers_path, submission, params = _pair(spec, tmp_path)
    answers = pd.read_csv(answers_path, dtype=str, keep_default_na=False)
    (id_column,) = spec.id_column if isinstance(spec.id_column, list) else [spec.id_column]
    # The test ids become zero-padded numbers; the submission writes them as floats.
    number = {text: i + 1 for i, text in enumerate(dict.fromkeys(answers[id_column]))}
    answers[id_column] = [f"{number[t]:05d}" for t in answers[id_column]]
    answers.to_csv(answers_path, index=False, lineterminator="\n")

    def score(ids: list[str]) -> float:
        path = tmp_path / "submission.csv"
        submission.assign(**{id_column: ids}).to_csv(path, index=False, lineterminator="\n")
        return score_csv(path, answers_path, metric=spec.metric.name, id_column=id_column, target_columns=spec.target_columns, params=params)

    exact = score([f"{number[t]:05d}" for t in submission[id_column]])
    assert score([f"{number[t]}.0" for t in submission[id_column]]) == exact
    with pytest.raises(InvalidSubmission, match="not a test id"):
        score([f"{number[t] + 0.5}" for t in submission[id_column]])


def test_random_acts_of_pizza_hard_predictions_are_scores(tmp_path: Path) -> None:
    answers = "request_id,requester_received_pizza\nt3_a,True\nt3_b,False\nt3_c,True\nt3_d,False\n"
    # A classifier's predict() output: True ranks above False; one positive missed.
    submission = "request_id,requester_received_pizza\nt3_a,True\nt3_b,False\nt3_c,False\nt3_d,False\n"
    assert grade("random-acts-of-pizza", answers, submission, tmp_path) == 0.75


def test_rsna_breast_cancer_all_zero_predictions_score_0(tmp_path: Path) -> None:
    answers = "prediction_id,cancer\n10_L,1\n10_R,0\n11_L,0\n"
    # Precision 0 / 0: NaN in MLE-bench's NumPy sums, which its "> 0" test turns into a score of 0.
    assert grade("rsna-breast-cancer-detection", answers, "prediction_id,cancer\n10_L,0\n10_R,0\n11_L,0\n", tmp_path) == 0.0
    assert grade("rsna-breast-cancer-detection", answers, "prediction_id,cancer\n10_L,0.5\n10_R,0\n11_L,0.5\n", tmp_path) == pytest.approx(0.5)


HMS = "hms-harmful-brain-activity-classification"
HMS_VOTES = "seizure_vote,lpd_vote,gpd_vote,lrda_vote,grda_vote,other_vote"
HMS_ANSWERS = f"eeg_id,{HMS_VOTES}\n568657,3,0,0,0,0,0\n568657,3,0,0,0,0,0\n1895581,0,0,1,0,0,2\n"


def test_hms_test_rows_share_eeg_ids_as_in_mlebench(tmp_path: Path) -> None:
    rows = {"568657": "0.8,0.04,0.04,0.04,0.04,0.04", "1895581": "0.1,0.1,0.3,0.1,0.1,0.3"}
    in_order = grade(HMS, HMS_ANSWERS, f"eeg_id,{HMS_VOTES}\n" + "".join(f"{i},{rows[i]}\n" for i in ["568657", "568657", "1895581"]), tmp_path)
    shuffled = grade(HMS, HMS_ANSWERS, f"eeg_id,{HMS_VOTES}\n" + "".join(f"{i},{rows[i.removesuffix('.0')]}\n" for i in ["1895581", "568657", "568657.0"]), tmp_path)
    assert shuffled == pytest.approx(in_order) and in_order > 0
    # One row per eeg_id is a submission error (MLE-bench: lengths differ), not a broken answer key.
    with pytest.raises(InvalidSubmission, match=r"568657"):
        grade(HMS, HMS_ANSWERS, f"eeg_id,{HMS_VOTES}\n" + "".join(f"{i},{rows[i]}\n" for i in rows), tmp_path)


def test_plant_seedlings_class_indices_are_no_species(tmp_path: Path) -> None:
    answers = "file,species\na.png,Common Chickweed\nb.png,Maize\n"
    with pytest.raises(InvalidSubmission, match=r"column 'species' holds only numbers \(e\.g\. '3'\), the answers hold text labels"):
        grade("plant-seedlings-classification", answers, "file,species\na.png,3\nb.png,7\n", tmp_path)


def test_a_constant_prediction_of_a_correlation_is_valid_without_a_score(tmp_path: Path) -> None:
    from mleaudit.grading.grade import grade_submission, validate_submission

    # us-patent-phrase-to-phrase-matching's sample submission: score 0 on every row. Pearson's r
    # is NaN, which MLE-bench's grader returns and counts as a valid submission.
    spec = REGISTRY.get("us-patent-phrase-to-phrase-matching")
    answers = "id,anchor,target,context,score\na1,x,y,A01,0.5\na2,x,z,A01,0.25\na3,w,y,B02,1.0\n"
    data_dir = tmp_path / "data"
    spec.answers_path(data_dir).parent.mkdir(parents=True)
    spec.answers_path(data_dir).write_text(answers, encoding="utf-8")
    sample = tmp_path / "submission.csv"
    sample.write_text("id,score\na1,0\na2,0\na3,0\n", encoding="utf-8")
    report = grade_submission(sample, spec, data_dir).to_dict()
    assert report["valid_submission"] is True and report["score"] is None
    assert not report["any_medal"] and not report["above_median"]
    assert report["error"].startswith("the metric is undefined for this submission (it returned nan")
    assert validate_submission(sample, spec, data_dir) == (True, "Submission is valid.")


@pytest.mark.parametrize(("cell", "what"), [("", "a missing value"), ("inf", "the value inf"), ("NaN", "a missing value")])
def test_a_correlation_with_a_missing_or_infinite_prediction_is_valid_without_a_score(cell: str, what: str, tmp_path: Path) -> None:
    from mleaudit.grading.errors import UndefinedScore

    answers = "id,anchor,target,context,score\na1,x,y,A01,0.5\na2,x,z,A01,0.25\na3,w,y,B02,1.0\n"
    with pytest.raises(UndefinedScore, match=rf"^Submission column 'score' has {what} at row 2 \(id 'a2'\), for which pearson-correlation-coefficient is undefined"):
        grade("us-patent-phrase-to-phrase-matching", answers, f"id,score\na1,0.4\na2,{cell}\na3,0.9\n", tmp_path)
    # Text is no number: the submission is invalid, as SciPy fails on it.
    with pytest.raises(InvalidSubmission, match=r"non-numeric value 'high' at row 2") as excinfo:
        grade("us-patent-phrase-to-phrase-matching", answers, "id,score\na1,0.4\na2,high\na3,0.9\n", tmp_path)
    assert not isinstance(excinfo.value, UndefinedScore)


def test_ventilator_rows_left_out_of_the_score_may_hold_anything(tmp_path: Path) -> None:
    # u_out = 1 rows (the expiratory phase) are dropped before MLE-bench's grader reads a value.
    answers = "id,breath_id,u_out,pressure\n1,1,0,5.0\n2,1,0,7.0\n3,1,1,9.0\n4,1,1,3.0\n"
    expected = grade("ventilator-pressure-prediction", answers, "id,pressure\n1,6.0\n2,7.0\n3,0.0\n4,0.0\n", tmp_path)
    assert expected == 0.5
    for unscored in ("", "nan", "inf", "high"):
        submission = f"id,pressure\n1,6.0\n2,7.0\n3,{unscored}\n4,0.0\n"
        assert grade("ventilator-pressure-prediction", answers, submission, tmp_path) == expected, unscored
    # A scored row is checked as ever.
    with pytest.raises(InvalidSubmission, match=r"^Submission column 'pressure' has a missing value at row 2 \(id '2'\)"):
        grade("ventilator-pressure-prediction", answers, "id,pressure\n1,6.0\n2,\n3,0.0\n4,0.0\n", tmp_path)


def test_stanford_covid_unscored_positions_may_be_left_empty(tmp_path: Path) -> None:
    columns = "reactivity,deg_Mg_pH10,deg_Mg_50C"
    answers = f"id_seqpos,{columns},keep\nm_0,0.5,0.5,0.5,True\nm_1,1.0,1.0,1.0,True\nm_2,2.0,2.0,2.0,False\n"
    header = f"id_seqpos,{columns},deg_pH10,deg_50C\n"
    full = header + "m_0,0.5,0.5,0.5,0,0\nm_1,1.0,1.0,1.0,0,0\nm_2,0.1,0.1,0.1,0,0\n"
    blank = header + "m_2,,,,0,0\nm_0,0.5,0.5,0.5,0,0\nm_1,1.0,1.0,1.0,0,0\n"
    assert grade("stanford-covid-vaccine", answers, full, tmp_path) == grade("stanford-covid-vaccine", answers, blank, tmp_path) == 0.0


#: Text metrics that read an empty cell as an empty prediction, in competitions whose MLE-bench
#: grader fails on the NaN pandas reads there (Levenshtein on a float, rle_decode's str check,
#: .split or .strip on NaN).
EMPTY_CELL_IS_INVALID = {
    "billion-word-imputation",
    "google-research-identify-contrails-reduce-global-warming",
    "multi-modal-gesture-recognition",
    "siim-covid19-detection",
    "vesuvius-challenge-ink-detection",
    "vinbigdata-chest-xray-abnormalities-detection",
}


def test_only_graders_failing_on_empty_cells_reject_them() -> None:
    assert setting("missing_values", "error") == EMPTY_CELL_IS_INVALID


@pytest.mark.parametrize("competition_id", sorted(EMPTY_CELL_IS_INVALID))
def test_an_empty_prediction_is_rejected_as_mlebench_does(competition_id: str, tmp_path: Path) -> None:
    spec = REGISTRY.get(competition_id)
    answers_path, submission, params = _pair(spec, tmp_path)
    target = spec.target_columns[0]
    blank = submission.copy()
    blank.loc[blank.index[1], target] = ""
    path = tmp_path / "submission.csv"
    blank.to_csv(path, index=False, lineterminator="\n")

    def score(**changes: object) -> float:
        return score_csv(
            path, answers_path, metric=spec.metric.name, id_column=spec.id_column, target_columns=spec.target_columns,
            params={**params, **changes},
        )

    with pytest.raises(InvalidSubmission, match=rf"^Submission column '{target}' has a missing value at row 2"):
        score()
    params.pop("missing_values")
    assert isinstance(score(), float)  # the metric itself reads it as an empty prediction



JIGSAW_TOXIC = "jigsaw-toxic-comment-classification-challenge"
TOXIC_HEADER = "id,toxic,severe_toxic,obscene,threat,insult,identity_hate\n"
# Row 4 is a test row Kaggle left unscored: -1 in every label column.
TOXIC_ANSWERS = TOXIC_HEADER + "0,0,0,0,0,0,0\n1,1,1,1,1,1,1\n2,0,1,0,1,0,1\n3,1,0,1,0,1,0\n4,-1,-1,-1,-1,-1,-1\n"
TOXIC_SCORED = "0,0.1,0.1,0.1,0.1,0.1,0.1\n1,0.9,0.9,0.9,0.9,0.9,0.9\n2,0.4,0.4,0.4,0.4,0.4,0.4\n3,0.6,0.6,0.6,0.6,0.6,0.6\n"


@pytest.mark.parametrize("unscored_cell", ["", "nan", "inf", "abc", "-1"])
def test_jigsaw_toxic_rows_marked_minus_one_are_never_read(unscored_cell: str, tmp_path: Path) -> None:
    # Per class the scored rows rank 0.9 > 0.6 > 0.4 > 0.1: AUC 0.75 where rows 2/3 are the
    # positive/negative pair ranked the wrong way round (toxic, obscene, insult), 1.0 elsewhere.
    unscored = "4," + ",".join([unscored_cell] * 6) + "\n"
    assert grade(JIGSAW_TOXIC, TOXIC_ANSWERS, TOXIC_HEADER + TOXIC_SCORED + unscored, tmp_path) == pytest.approx(0.875)
    # A bad cell in a scored row is still named.
    bad = TOXIC_HEADER + TOXIC_SCORED.replace("0.9", "abc", 1) + unscored
    with pytest.raises(InvalidSubmission, match=r"column 'toxic' has a non-numeric value 'abc' at row 2"):
        grade(JIGSAW_TOXIC, TOXIC_ANSWERS, bad, tmp_path)


def test_google_quest_ranks_an_infinite_prediction(tmp_path: Path) -> None:
    from scipy.stats import spearmanr

    spec = REGISTRY.get("google-quest-challenge")
    columns = list(spec.target_columns)
    truth = [[(i * 7 + j * 3) % 5 / 4 for j in range(len(columns))] for i in range(6)]
    pred = [[(i * 5 + j) % 6 / 5 for j in range(len(columns))] for i in range(6)]
    pred[2][0] = float("inf")
    pred[4][1] = float("-inf")
    answers = "qa_id," + ",".join(columns) + "\n" + "".join(f"{i},{','.join(map(str, r))}\n" for i, r in enumerate(truth))
    submission = "qa_id," + ",".join(columns) + "\n" + "".join(f"{i},{','.join(map(str, r))}\n" for i, r in enumerate(pred))
    expected = sum(spearmanr([r[j] for r in pred], [r[j] for r in truth]).statistic for j in range(len(columns))) / len(columns)
    assert grade("google-quest-challenge", answers, submission, tmp_path) == pytest.approx(expected)


def test_bms_empty_inchi_is_the_text_nan(tmp_path: Path) -> None:
    answers = "image_id,InChI\na,InChI=1S/H2O/h1H2\nb,InChI=1S/CH4/h1H4\n"
    # Row a is exact; row b's empty or NA-looking cell is compared as the text "nan".
    from rapidfuzz.distance import Levenshtein

    expected = Levenshtein.distance("nan", "InChI=1S/CH4/h1H4") / 2
    for empty in ("", "nan", "NA"):
        submission = f"image_id,InChI\na,InChI=1S/H2O/h1H2\nb,{empty}\n"
        assert grade("bms-molecular-translation", answers, submission, tmp_path) == pytest.approx(expected)


def test_paddy_empty_label_is_scored_wrong(tmp_path: Path) -> None:
    answers = "image_id,label\na.jpg,blast\nb.jpg,normal\n"
    assert grade("paddy-disease-classification", answers, "image_id,label\na.jpg,blast\nb.jpg,\n", tmp_path) == 0.5
    assert grade("paddy-disease-classification", answers, "image_id,label\na.jpg,\nb.jpg,\n", tmp_path) == 0.0


def test_plant_seedlings_column_without_any_species_is_invalid(tmp_path: Path) -> None:
    answers = "file,species\na.png,Maize\nb.png,Common wheat\n"
    assert grade("plant-seedlings-classification", answers, "file,species\na.png,Maize\nb.png,\n", tmp_path) == 0.5
    with pytest.raises(InvalidSubmission, match=r"^Submission column 'species' has no value in any of its 2 rows\.$"):
        grade("plant-seedlings-classification", answers, "file,species\na.png,\nb.png,\n", tmp_path)


@pytest.mark.parametrize(
    ("competition_id", "answers", "submission"),
    [
        ("tgs-salt-identification-challenge", "id,rle_mask\na,1 5\nb,\n", "id,rle_mask\na,1 5\nb,-\n"),
        ("hubmap-kidney-segmentation", "id,encoding,width_pixels,height_pixels\na,1 5,4,4\nb,3 2,4,4\n",
         "id,predicted\na,1 5\nb,-\n"),
        ("vesuvius-challenge-ink-detection", "Id,Predicted,height,width\na,1 5,4,4\nb,3 2,4,4\n",
         "Id,Predicted\na,1 5\nb,-\n"),
    ],
)
def test_a_dash_is_no_empty_mask_outside_contrails(competition_id: str, answers: str, submission: str, tmp_path: Path) -> None:
    with pytest.raises(InvalidSubmission, match=r"run-length mask with the value '-', which is not an integer at row 2"):
        grade(competition_id, answers, submission, tmp_path)


def test_contrails_dash_is_the_empty_mask(tmp_path: Path) -> None:
    answers = "record_id,encoded_pixels,height,width\n1,1 4,4,4\n2,-,4,4\n"
    assert grade(
        "google-research-identify-contrails-reduce-global-warming", answers, "record_id,encoded_pixels\n1,1 4\n2,-\n", tmp_path
    ) == 1.0


def test_spaceship_labels_written_as_numbers_compare_as_booleans_do(tmp_path: Path) -> None:
    answers = "PassengerId,Transported\n0013_01,True\n0018_01,False\n0019_01,True\n0021_01,False\n"
    for one, zero in (("1", "0"), ("1.0", "0.0")):
        submission = f"PassengerId,Transported\n0013_01,{one}\n0018_01,{zero}\n0019_01,{zero}\n0021_01,{zero}\n"
        assert grade("spaceship-titanic", answers, submission, tmp_path) == 0.75
    with pytest.raises(InvalidSubmission, match=r"label 'yes' at row 1 \(id '0013_01'\), which is not True or False"):
        grade("spaceship-titanic", answers, "PassengerId,Transported\n0013_01,yes\n0018_01,False\n0019_01,True\n0021_01,False\n", tmp_path)


def test_nomad_refuses_negative_predictions_as_mlebench_s_scikit_learn_does(tmp_path: Path) -> None:
    answers = "id,formation_energy_ev_natom,bandgap_energy_ev\n1,0.1,1.2\n2,0.2,3.4\n"
    with pytest.raises(InvalidSubmission, match=r"^Submission column 'formation_energy_ev_natom' has -0.004 at row 2 \(id '2'\), outside \[0, inf\]\.$"):
        grade("nomad2018-predict-transparent-conductors", answers, answers.replace("0.2,3.4", "-0.004,3.4"), tmp_path)
    assert grade("nomad2018-predict-transparent-conductors", answers, answers.replace("0.2,3.4", "0,3.4"), tmp_path) > 0


def test_jigsaw_unintended_takes_toxicity_for_prediction(tmp_path: Path) -> None:
    from mleaudit.grading.metrics import JIGSAW_IDENTITY_COLUMNS

    header = "id,toxicity," + ",".join(JIGSAW_IDENTITY_COLUMNS)
    rows = [(0.9, 1.0), (0.1, 1.0), (0.8, 0.0), (0.2, 0.0), (0.7, 1.0), (0.3, 0.0)]
    answers = header + "\n" + "".join(
        f"{7000 + i},{t}," + ",".join([str(g)] * len(JIGSAW_IDENTITY_COLUMNS)) + "\n" for i, (t, g) in enumerate(rows)
    )
    predictions = "".join(f"{7000 + i},{p}\n" for i, p in enumerate([0.8, 0.4, 0.6, 0.1, 0.9, 0.7]))
    expected = grade("jigsaw-unintended-bias-in-toxicity-classification", answers, "id,prediction\n" + predictions, tmp_path)
    assert grade("jigsaw-unintended-bias-in-toxicity-classification", answers, "id,toxicity\n" + predictions, tmp_path) == expected
    both = "id,prediction,toxicity\n" + "".join(f"{line},0.5\n" for line in predictions.splitlines())
    with pytest.raises(InvalidSubmission, match=r"^Submission has both column 'prediction' and column 'toxicity'"):
        grade("jigsaw-unintended-bias-in-toxicity-classification", answers, both, tmp_path)


def test_reported_scores_round_as_mlebench_s_numpy_floats_do() -> None:
    from mleaudit.grading.grade import round_score

    # 133/320 = 0.415625: NumPy's round-half-even of the scaled value gives 0.41562.
    assert round_score(133 / 320) == 0.41562 and round(133 / 320, 5) == 0.41563
    assert round_score(0.123456) == 0.12346
    assert math.isnan(round_score(math.nan)) and round_score(-math.inf) == -math.inf
