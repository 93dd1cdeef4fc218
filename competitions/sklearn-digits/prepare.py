"""sklearn-digits: handwritten digit recognition from scikit-learn's bundled 8x8 digits.

The 1,797 images of ``sklearn.datasets.load_digits`` (UCI optical recognition of handwritten
digits, test part) are read from the copy shipped inside scikit-learn, so no raw files are
needed. Each image becomes 64 integer pixel columns ``pixel_0 .. pixel_63`` (row-major,
values 0-16); ``id`` is the image's index in the bundled data and ``label`` its digit. A
stratified 20 % of the images (seed 0) is held out.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from sklearn.datasets import load_digits

from mleaudit.grading.embedded import integral_to_int, write_embedded_split


def prepare(raw: Path | None, public: Path, private: Path) -> None:
    """Write the public train/test/sample_submission and the private answers.

    Parameters
    ----------
    raw : pathlib.Path or None
        Unused: the data ships inside scikit-learn.
    public : pathlib.Path
        Receives ``train.csv`` (``id, pixel_0..pixel_63, label``; 1,437 rows), ``test.csv``
        (without ``label``; 360 rows) and ``sample_submission.csv`` (``id,label``, all 0).
    private : pathlib.Path
        Receives ``test.csv`` with ``id,label`` for the 360 held-out images.
    """
    digits = load_digits()
    pixels = pd.DataFrame(digits.data, columns=[f"pixel_{i}" for i in range(digits.data.shape[1])])
    table = pd.concat(
        [pd.DataFrame({"id": range(len(pixels))}), integral_to_int(pixels), pd.DataFrame({"label": digits.target})],
        axis=1,
    )
    write_embedded_split(
        table, id_column="id", target_column="label", sample_value=0, public=public, private=private, stratify=True
    )
