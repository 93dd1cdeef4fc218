"""sklearn-diabetes: disease progression regression from scikit-learn's bundled diabetes data.

The 442 patients of ``sklearn.datasets.load_diabetes`` (Efron et al., 2004) are read,
unscaled, from the copy shipped inside scikit-learn, so no raw files are needed. Features are
``age, sex, bmi, bp, s1 .. s6`` in their original units; ``target`` is a quantitative measure
of disease progression one year after baseline; ``id`` is the patient's index in the bundled
data. A random 20 % of patients (seed 0) is held out.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from sklearn.datasets import load_diabetes

from mleaudit.grading.embedded import integral_to_int, write_embedded_split


def prepare(raw: Path | None, public: Path, private: Path) -> None:
    """Write the public train/test/sample_submission and the private answers.

    Parameters
    ----------
    raw : pathlib.Path or None
        Unused: the data ships inside scikit-learn.
    public : pathlib.Path
        Receives ``train.csv`` (``id``, 10 features, ``target``; 353 rows), ``test.csv``
        (without ``target``; 89 rows) and ``sample_submission.csv`` (``id,target``, all 0).
    private : pathlib.Path
        Receives ``test.csv`` with ``id,target`` for the 89 held-out patients.
    """
    diabetes = load_diabetes(scaled=False)
    features = pd.DataFrame(diabetes.data, columns=diabetes.feature_names)
    table = pd.concat(
        [
            pd.DataFrame({"id": range(len(features))}),
            integral_to_int(features),
            integral_to_int(pd.DataFrame({"target": diabetes.target})),
        ],
        axis=1,
    )
    write_embedded_split(table, id_column="id", target_column="target", sample_value=0, public=public, private=private)
