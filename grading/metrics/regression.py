"""Metrics on predicted numbers: errors, correlations, and geometric distances.

Predictions reach these functions as finite floats (validation rejects text, NaN and inf).
"""

from __future__ import annotations

import warnings
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats as _stats

from mleaudit.grading.metrics.base import as_matrix, bad_prediction, require_answer_columns

__all__ = [
    "rmse_error",
    "mae_error",
    "rmsle_error",
    "grouped_log_mae_error",
    "pearson_correlation_score",
    "spearman_correlation_score",
    "mean_haversine_distance_error",
    "mean_angular_error",
    "laplace_log_likelihood_score",
]


def rmse_error(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Root mean squared error.

    Parameters
    ----------
    y_true, y_pred : numpy.ndarray of float
        Shape ``(n_rows,)`` or ``(n_rows, n_targets)``, aligned by id.

    Returns
    -------
    float
        ``sqrt(mean((y_true - y_pred) ** 2))``, >= 0, lower is better; with several target
        columns the per-column RMSEs are averaged (scikit-learn's ``uniform_average``, which is
        Kaggle's "mean column-wise RMSE", MCRMSE).

    Examples
    --------
    >>> import numpy as np
    >>> rmse_error(np.array([1.0, 2.0]), np.array([1.0, 4.0]))
    1.4142135623730951
    """
    diff = np.asarray(y_true, dtype=float) - np.asarray(y_pred, dtype=float)
    per_column = np.sqrt(np.mean(diff**2, axis=0))
    return float(np.mean(per_column))


def mae_error(y_true: np.ndarray, y_pred: np.ndarray, decimals: int | None = None) -> float:
    """Mean absolute error.

    Parameters
    ----------
    y_true, y_pred : numpy.ndarray of float
        Shape ``(n_rows,)`` or ``(n_rows, n_targets)``, aligned by id.
    decimals : int, optional
        Round the result to this many decimals (MLE-bench's volcanic-eruption grader reports
        the MAE rounded to an integer, ``decimals=0``).

    Returns
    -------
    float
        ``mean(|y_true - y_pred|)``, >= 0, lower is better; per-column values are averaged.

    Examples
    --------
    >>> import numpy as np
    >>> mae_error(np.array([1.0, 2.0]), np.array([1.0, 4.0]))
    1.0
    >>> mae_error(np.array([0.0, 0.0]), np.array([1.0, 2.2]), decimals=0)
    2.0
    """
    diff = np.abs(np.asarray(y_true, dtype=float) - np.asarray(y_pred, dtype=float))
    value = float(np.mean(np.mean(diff, axis=0)))
    return value if decimals is None else float(round(value, int(decimals)))


def rmsle_error(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Root mean squared logarithmic error, averaged over target columns.

    ``sqrt(mean((log(1 + y_pred) - log(1 + y_true)) ** 2))`` per column, as
    :func:`sklearn.metrics.root_mean_squared_log_error`, then the mean over columns (Kaggle's
    "mean column-wise RMSLE").

    Parameters
    ----------
    y_true, y_pred : numpy.ndarray of float
        Shape ``(n_rows,)`` or ``(n_rows, n_targets)``; every value must be greater than -1.

    Returns
    -------
    float
        >= 0, lower is better.

    Raises
    ------
    PredictionError
        For a prediction <= -1 (its logarithm is undefined).

    Examples
    --------
    >>> import numpy as np
    >>> round(rmsle_error(np.array([[0.0, 1.0]]), np.array([[np.e - 1, 1.0]])), 6)
    0.5
    """
    truth = as_matrix(np.asarray(y_true, dtype=float))
    pred = as_matrix(np.asarray(y_pred, dtype=float))
    if (pred <= -1).any():
        raise bad_prediction(pred <= -1, pred, "which is not greater than -1 (log(1 + x) is undefined)")
    per_column = np.sqrt(np.mean((np.log1p(pred) - np.log1p(truth)) ** 2, axis=0))
    return float(np.mean(per_column))


def grouped_log_mae_error(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
    group_column: str = "type",
    floor: float = 1e-9,
) -> float:
    """Mean over groups of the log of each group's mean absolute error (CHAMPS scalar coupling).

    A 1 % better MAE in any group improves the score by the same amount, whatever the group's
    scale. Each group's MAE is floored at ``floor`` before the log, as Kaggle's metric does, so a
    perfect group scores ``log(floor)`` (MLE-bench's grader takes ``log(0) = -inf`` there).

    Parameters
    ----------
    answers : pandas.DataFrame
        With the target column and ``group_column`` (e.g. the coupling type).
    submission : pandas.DataFrame
        With the predicted target column.
    group_column : str
        Answers column that defines the groups.
    floor : float
        Smallest MAE a group can have.

    Returns
    -------
    float
        Lower is better; can be negative.

    Examples
    --------
    >>> import pandas as pd
    >>> answers = pd.DataFrame({"id": ["a", "b", "c"], "y": [1.0, 2.0, 3.0], "type": ["p", "p", "q"]})
    >>> sub = pd.DataFrame({"id": ["a", "b", "c"], "y": [2.0, 2.0, 3.0 + 1e-3]})
    >>> round(grouped_log_mae_error(answers, sub, id_columns=["id"], target_columns=["y"]), 4)
    -3.8005
    """
    require_answer_columns(answers, [group_column], metric="grouped_log_mae_error")
    column = target_columns[0]
    errors = np.abs(pd.to_numeric(answers[column]).to_numpy(dtype=float) - submission[column].to_numpy(dtype=float))
    per_group = pd.Series(errors).groupby(answers[group_column].to_numpy(), sort=True).mean().to_numpy()
    return float(np.mean(np.log(np.maximum(per_group, floor))))


def pearson_correlation_score(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Pearson correlation coefficient, by :func:`scipy.stats.pearsonr`.

    Parameters
    ----------
    y_true, y_pred : numpy.ndarray of float
        Shape ``(n_rows,)``.

    Returns
    -------
    float
        In [-1, 1], higher is better; NaN (an invalid score) for a constant prediction.

    Examples
    --------
    >>> import numpy as np
    >>> round(pearson_correlation_score(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 2.5])), 4)
    0.982
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(_stats.pearsonr(np.asarray(y_true, dtype=float), np.asarray(y_pred, dtype=float))[0])


def spearman_correlation_score(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """Spearman rank correlation per target column, averaged (Google QUEST).

    Parameters
    ----------
    y_true, y_pred : numpy.ndarray of float
        Shape ``(n_rows,)`` or ``(n_rows, n_targets)``.

    Returns
    -------
    float
        In [-1, 1], higher is better; NaN (an invalid score) when a column is constant.

    Examples
    --------
    >>> import numpy as np
    >>> spearman_correlation_score(np.array([[1, 3], [2, 2], [3, 1]]), np.array([[1, 9], [5, 5], [9, 1]]))
    1.0
    """
    truth = as_matrix(np.asarray(y_true, dtype=float))
    pred = as_matrix(np.asarray(y_pred, dtype=float))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        values = [_stats.spearmanr(pred[:, j], truth[:, j]).statistic for j in range(truth.shape[1])]
    return float(np.mean(values))


#: Earth radius of the haversine distance in MLE-bench's smartphone grader, in metres.
HAVERSINE_RADIUS_M = 6_371_000.0


def mean_haversine_distance_error(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
    group_column: str = "tripId",
    latitude_column: str = "LatitudeDegrees",
    longitude_column: str = "LongitudeDegrees",
    quantiles: Sequence[float] = (0.5, 0.95),
) -> float:
    """Mean over trips of the mean of the 50th and 95th percentile haversine errors (GSDC 2022).

    Distances between predicted and true positions use a sphere of radius 6,371 km; percentiles
    interpolate linearly (numpy's default). Rows are paired by id, so a trip's rows need not be
    in the answers' order (MLE-bench's grader pairs them by position within each trip).

    Parameters
    ----------
    answers, submission : pandas.DataFrame
        Aligned frames with latitude and longitude in degrees; ``group_column`` (the trip)
        is read from the answers.
    group_column, latitude_column, longitude_column : str
        Column names.
    quantiles : sequence of float
        Percentiles (as fractions) averaged per trip.

    Returns
    -------
    float
        Metres, >= 0, lower is better.

    References
    ----------
    Kaggle Google Smartphone Decimeter Challenge 2022, evaluation page.

    Examples
    --------
    >>> import pandas as pd
    >>> answers = pd.DataFrame({"tripId": ["t", "t"], "LatitudeDegrees": [0.0, 0.0], "LongitudeDegrees": [0.0, 1.0]})
    >>> sub = answers.assign(LatitudeDegrees=[0.0, 0.001])
    >>> round(mean_haversine_distance_error(answers, sub, id_columns=["tripId"],
    ...       target_columns=["LatitudeDegrees", "LongitudeDegrees"]), 2)
    80.62
    """
    require_answer_columns(answers, [group_column, latitude_column, longitude_column], metric="mean_haversine_distance_error")
    lat1 = np.deg2rad(submission[latitude_column].to_numpy(dtype=float))
    lng1 = np.deg2rad(submission[longitude_column].to_numpy(dtype=float))
    lat2 = np.deg2rad(pd.to_numeric(answers[latitude_column]).to_numpy(dtype=float))
    lng2 = np.deg2rad(pd.to_numeric(answers[longitude_column]).to_numpy(dtype=float))
    a = np.sin((lat2 - lat1) / 2) ** 2 + np.cos(lat1) * np.cos(lat2) * np.sin((lng2 - lng1) / 2) ** 2
    distances = 2 * HAVERSINE_RADIUS_M * np.arcsin(np.sqrt(a))
    groups = pd.Series(distances).groupby(answers[group_column].to_numpy(), sort=False)
    per_trip = groups.quantile(list(quantiles)).groupby(level=0, sort=False).mean()
    return float(per_trip.mean())


def mean_angular_error(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
    azimuth_column: str = "azimuth",
    zenith_column: str = "zenith",
) -> float:
    """Mean angle between predicted and true directions (IceCube neutrinos).

    Directions are (azimuth, zenith) in radians, turned into unit vectors; the angle is the
    arccos of their dot product, clipped to [-1, 1] against rounding.

    Parameters
    ----------
    answers, submission : pandas.DataFrame
        Aligned frames with the two angle columns.
    azimuth_column, zenith_column : str
        Column names.

    Returns
    -------
    float
        Radians in [0, pi], lower is better.

    References
    ----------
    Kaggle IceCube - Neutrinos in Deep Ice, "Mean angular error" (competition host's notebook).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> answers = pd.DataFrame({"azimuth": [0.0], "zenith": [np.pi / 2]})
    >>> sub = pd.DataFrame({"azimuth": [np.pi / 2], "zenith": [np.pi / 2]})
    >>> round(mean_angular_error(answers, sub, id_columns=[], target_columns=["azimuth", "zenith"]), 6)
    1.570796
    """
    az1 = pd.to_numeric(answers[azimuth_column]).to_numpy(dtype=float)
    ze1 = pd.to_numeric(answers[zenith_column]).to_numpy(dtype=float)
    az2 = submission[azimuth_column].to_numpy(dtype=float)
    ze2 = submission[zenith_column].to_numpy(dtype=float)
    dot = np.sin(ze1) * np.sin(ze2) * (np.cos(az1) * np.cos(az2) + np.sin(az1) * np.sin(az2)) + np.cos(ze1) * np.cos(ze2)
    return float(np.mean(np.abs(np.arccos(np.clip(dot, -1.0, 1.0)))))


def laplace_log_likelihood_score(
    answers: pd.DataFrame,
    submission: pd.DataFrame,
    *,
    id_columns: Sequence[str],
    target_columns: Sequence[str],
    value_column: str = "FVC",
    confidence_column: str = "Confidence",
    group_column: str = "Patient",
    last_n: int = 3,
    min_confidence: float = 70.0,
    max_error: float = 1000.0,
) -> float:
    """Modified Laplace log likelihood of predictions with a confidence (OSIC pulmonary fibrosis).

    Per scored row, with ``sigma = max(confidence, 70)`` and ``delta = min(|true - pred|, 1000)``:
    ``-sqrt(2) * delta / sigma - ln(sqrt(2) * sigma)``; the score is the mean. Only each
    patient's last ``last_n`` weeks with a known value are scored (week = the number after the
    id's last ``_``, as in ``<patient>_<week>``); answer rows without a value are placeholders.

    Parameters
    ----------
    answers : pandas.DataFrame
        With ``value_column`` (missing for placeholder rows) and ``group_column``.
    submission : pandas.DataFrame
        With ``value_column`` and ``confidence_column``.
    value_column, confidence_column, group_column : str
        Column names.
    last_n : int
        Weeks scored per patient.
    min_confidence, max_error : float
        Kaggle's clips of sigma and of the error.

    Returns
    -------
    float
        Higher is better; at most ``-ln(sqrt(2) * 70)`` = -4.59507.

    References
    ----------
    Kaggle OSIC Pulmonary Fibrosis Progression, evaluation page.

    Examples
    --------
    >>> import pandas as pd
    >>> answers = pd.DataFrame({"Patient_Week": ["p_1", "p_2"], "FVC": [2000.0, 2100.0], "Patient": ["p", "p"]})
    >>> sub = pd.DataFrame({"Patient_Week": ["p_1", "p_2"], "FVC": [2000.0, 2100.0], "Confidence": [70.0, 70.0]})
    >>> round(laplace_log_likelihood_score(answers, sub, id_columns=["Patient_Week"],
    ...       target_columns=["FVC", "Confidence"]), 5)
    -4.59507
    """
    require_answer_columns(answers, [value_column, group_column], metric="laplace_log_likelihood_score")
    truth = pd.to_numeric(answers[value_column]).to_numpy(dtype=float)
    known = np.flatnonzero(~np.isnan(truth))
    weeks = answers[id_columns[0]].astype(str).str.rsplit("_", n=1).str[-1]
    week_numbers = pd.to_numeric(weeks, errors="coerce").to_numpy(dtype=float)
    frame = pd.DataFrame({"row": known, "group": answers[group_column].to_numpy()[known], "week": week_numbers[known]})
    scored = frame.sort_values(["week"], kind="stable").groupby("group", sort=False).tail(int(last_n))["row"].to_numpy()
    sigma = np.maximum(submission[confidence_column].to_numpy(dtype=float)[scored], min_confidence)
    delta = np.minimum(np.abs(truth[scored] - submission[value_column].to_numpy(dtype=float)[scored]), max_error)
    values = -np.sqrt(2) * delta / sigma - np.log(np.sqrt(2) * sigma)
    return float(np.mean(values))
