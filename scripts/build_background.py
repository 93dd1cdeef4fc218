"""Build the copy detector's background of ordinary ML code: ``audit/similarity/data/background.npz``.

The copy detector (:mod:`mleaudit.audit.similarity.detect`) weighs shared code by how predictable it is
for code written independently of a kernel. The reference corpus alone teaches that only as far
as its kernels use the idioms, and a corpus of a handful of kernels (or one competition's) has
not seen ``train_test_split(X, y, test_size=0.2, random_state=42)`` often enough to call it
ordinary. This script writes a fixed set of agent-style scripts (the kind an ML agent writes for
a Kaggle task: read ``./input``, split, fit, score on a validation split, predict, write
``./working/submission.csv``) and stores the document frequencies of their lexical token
n-grams, the same :class:`~mleaudit.audit.similarity.detect.NgramTable` the detector builds from a corpus.

Inputs: nothing but this file. Every script is composed from the idiom snippets below (written
for this purpose: pandas I/O, scikit-learn, LightGBM, XGBoost, CatBoost, PyTorch and Keras
training loops, metrics, cross-validation, submission writing), with the choices drawn by
``random.Random(SEED)``; the same file gives the same table, byte for byte. The output holds
64-bit hashes of token n-grams and counts only, from which no script text can be read back.

Usage::

    python scripts/build_background.py [-o audit/similarity/data/background.npz] [--dump DIR]

``--dump DIR`` also writes the generated scripts, to read what the background was built from.
"""

from __future__ import annotations

import argparse
import hashlib
import random
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

from mleaudit.audit.similarity.detect import (  # noqa: E402
    BACKGROUND_FORMAT,
    PROFILE_SCHEME,
    NgramTable,
    idiom_grams,
    profile_code,
    save_background,
)

#: Seed of the composition: changing it changes the table (and its digest).
SEED = 20261202
#: Number of scripts composed.
SCRIPTS = 800
DEFAULT_OUTPUT = REPO_ROOT / "audit" / "similarity" / "data" / "background.npz"

# -- vocabulary of choices --------------------------------------------------------------------------

DATA_DIRS = ["./input", "./input", "./input", "../input", "/kaggle/input", "input", "./data", "data"]
OUT_DIRS = ["./working", "./working", "./submission", ".", "./output", "working"]
TRAIN_FILES = ["train.csv", "train.csv", "train.csv", "training.csv", "train_data.csv"]
TEST_FILES = ["test.csv", "test.csv", "test.csv", "test_data.csv"]
SAMPLE_FILES = ["sample_submission.csv", "sample_submission.csv", "sampleSubmission.csv"]
ID_COLUMNS = ["id", "id", "Id", "ID", "row_id", "PassengerId", "key", "image_id", "qid"]
TARGETS = ["target", "target", "label", "y", "Survived", "SalePrice", "Transported", "price",
           "fare_amount", "is_duplicate", "sentiment", "class", "loss", "score", "Label", "failure"]
TEXT_COLUMNS = ["text", "comment_text", "Comment", "review", "question_text", "Phrase", "excerpt"]
SEEDS = ["42", "42", "42", "0", "1", "2021", "2022", "2023", "123", "7", "SEED", "seed", "RANDOM_STATE"]
TEST_SIZES = ["0.2", "0.2", "0.2", "0.1", "0.25", "0.3", "0.15"]
N_ESTIMATORS = ["100", "100", "200", "300", "500", "1000", "2000", "50", "400", "5000", "10000"]
LEARNING_RATES = ["0.1", "0.05", "0.01", "0.03", "0.02", "0.001", "1e-3", "3e-4", "1e-4", "2e-5", "0.005"]
DEPTHS = ["3", "4", "5", "6", "7", "8", "10", "-1", "None", "12"]
FOLDS = ["5", "5", "5", "10", "3", "4"]
EPOCHS = ["10", "5", "20", "3", "30", "50", "100", "NUM_EPOCHS", "EPOCHS", "epochs"]
BATCH_SIZES = ["32", "64", "128", "256", "16", "512", "BATCH_SIZE", "batch_size"]
NUM_LEAVES = ["31", "63", "127", "15", "255"]
METRIC_NAMES = ["RMSE", "MAE", "AUC", "Accuracy", "F1", "Log loss", "ROC AUC", "R2", "RMSLE", "MSE",
                "Validation RMSE", "Validation AUC", "Validation accuracy", "Validation log loss",
                "CV score", "Mean CV score", "Fold", "Best iteration", "Validation ROC AUC Score",
                "Validation Accuracy", "Validation F1", "Validation MAE", "Validation Log Loss"]
IMAGE_SIZES = ["224", "128", "256", "32", "64", "96", "299", "384", "512", "IMG_SIZE"]
DEVICES = ['"cuda" if torch.cuda.is_available() else "cpu"', "'cuda' if torch.cuda.is_available() else 'cpu'",
           '"cuda"', '"cpu"']


def _q(rng: random.Random) -> str:
    return rng.choice(['"', '"', "'"])


# -- snippets -----------------------------------------------------------------------------------------
# Each returns a block of code. Names are free (the detector reads identifiers as ``ID``); the
# literals and the shapes of the statements are what the background learns.


def imports(rng: random.Random, kind: str) -> str:
    lines = ["import os", "import numpy as np", "import pandas as pd"]
    extra = {
        "tabular": ["from sklearn.model_selection import train_test_split",
                    "from sklearn.model_selection import KFold, StratifiedKFold, cross_val_score",
                    "from sklearn.metrics import mean_squared_error, roc_auc_score, accuracy_score, log_loss",
                    "from sklearn.preprocessing import LabelEncoder, StandardScaler, OneHotEncoder",
                    "from sklearn.ensemble import RandomForestRegressor, RandomForestClassifier",
                    "from sklearn.linear_model import LogisticRegression, Ridge, Lasso, LinearRegression",
                    "from sklearn.impute import SimpleImputer",
                    "from sklearn.pipeline import Pipeline, make_pipeline",
                    "from sklearn.compose import ColumnTransformer",
                    "import lightgbm as lgb", "from lightgbm import LGBMRegressor, LGBMClassifier",
                    "import xgboost as xgb", "from xgboost import XGBRegressor, XGBClassifier",
                    "from catboost import CatBoostRegressor, CatBoostClassifier"],
        "text": ["from sklearn.feature_extraction.text import TfidfVectorizer, CountVectorizer",
                 "from sklearn.linear_model import LogisticRegression",
                 "from sklearn.model_selection import train_test_split, StratifiedKFold",
                 "from sklearn.metrics import roc_auc_score, accuracy_score, f1_score, log_loss",
                 "from sklearn.pipeline import make_pipeline", "import re", "import string",
                 "from scipy.sparse import hstack"],
        "image": ["import torch", "import torch.nn as nn", "import torch.nn.functional as F",
                  "from torch.utils.data import Dataset, DataLoader", "import torchvision",
                  "from torchvision import transforms, models", "from PIL import Image",
                  "from sklearn.model_selection import train_test_split",
                  "from sklearn.metrics import roc_auc_score, accuracy_score", "from tqdm import tqdm",
                  "import cv2", "import timm"],
        "keras": ["import tensorflow as tf", "from tensorflow import keras",
                  "from tensorflow.keras import layers", "from tensorflow.keras.models import Sequential",
                  "from tensorflow.keras.layers import Dense, Dropout, Conv2D, MaxPooling2D, Flatten",
                  "from tensorflow.keras.callbacks import EarlyStopping, ReduceLROnPlateau, ModelCheckpoint",
                  "from sklearn.model_selection import train_test_split"],
    }[kind]
    picked = rng.sample(extra, k=min(len(extra), rng.randint(3, len(extra))))
    out = lines + picked
    if rng.random() < 0.3:
        out.append("import warnings")
        out.append(rng.choice(["warnings.filterwarnings('ignore')", 'warnings.filterwarnings("ignore")']))
    if rng.random() < 0.4:
        out += ["import matplotlib.pyplot as plt", "import seaborn as sns"]
    if rng.random() < 0.2:
        out.append("import gc")
    return "\n".join(out) + "\n"


def seeding(rng: random.Random, kind: str) -> str:
    seed = rng.choice(["42", "2023", "0", "1234"])
    if kind == "image":
        return (f"SEED = {seed}\nrandom.seed(SEED)\nnp.random.seed(SEED)\ntorch.manual_seed(SEED)\n"
                "torch.cuda.manual_seed_all(SEED)\n" if rng.random() < 0.5 else f"torch.manual_seed({seed})\n")
    if rng.random() < 0.5:
        return f"SEED = {seed}\nnp.random.seed(SEED)\n"
    return f"np.random.seed({seed})\n"


def load(rng: random.Random, data: str) -> str:
    q = _q(rng)
    train, test, sample = rng.choice(TRAIN_FILES), rng.choice(TEST_FILES), rng.choice(SAMPLE_FILES)
    style = rng.randint(0, 4)
    if style == 0:
        code = (f"train = pd.read_csv({q}{data}/{train}{q})\ntest = pd.read_csv({q}{data}/{test}{q})\n")
    elif style == 1:
        code = (f"DATA_DIR = {q}{data}{q}\ntrain_df = pd.read_csv(os.path.join(DATA_DIR, {q}{train}{q}))\n"
                f"test_df = pd.read_csv(os.path.join(DATA_DIR, {q}{test}{q}))\n")
    elif style == 2:
        code = (f"train_data = pd.read_csv({q}{data}/{train}{q})\ntest_data = pd.read_csv({q}{data}/{test}{q})\n"
                f"submission = pd.read_csv({q}{data}/{sample}{q})\n")
    elif style == 3:
        code = (f"train_df = pd.read_csv(f{q}{{DATA_DIR}}/{train}{q})\ntest_df = pd.read_csv(f{q}{{DATA_DIR}}/{test}{q})\n")
    else:
        code = (f"df_train = pd.read_csv({q}{data}/{train}{q})\ndf_test = pd.read_csv({q}{data}/{test}{q})\n"
                f"sample_submission = pd.read_csv({q}{data}/{sample}{q})\n")
    if rng.random() < 0.4:
        code += rng.choice(["print(train.shape, test.shape)\n", "print(train_df.shape, test_df.shape)\n",
                            "print(train.head())\n", "print(train_df.info())\n", "train.head()\n",
                            "print(train_df.describe())\n", "print(train.isnull().sum())\n",
                            f"print({q}Train shape:{q}, train.shape)\nprint({q}Test shape:{q}, test.shape)\n"])
    return code


def features(rng: random.Random, target: str, ident: str) -> str:
    q = _q(rng)
    style = rng.randint(0, 5)
    if style == 0:
        code = (f"X = train.drop([{q}{ident}{q}, {q}{target}{q}], axis=1)\ny = train[{q}{target}{q}]\n"
                f"X_test = test.drop([{q}{ident}{q}], axis=1)\n")
    elif style == 1:
        code = (f"features = [c for c in train.columns if c not in [{q}{ident}{q}, {q}{target}{q}]]\n"
                f"X = train[features]\ny = train[{q}{target}{q}]\nX_test = test[features]\n")
    elif style == 2:
        code = (f"target = {q}{target}{q}\nX = train_df.drop(columns=[target])\ny = train_df[target]\n")
    elif style == 3:
        code = (f"y = train_df[{q}{target}{q}].values\nX = train_df.drop([{q}{target}{q}, {q}{ident}{q}], axis=1).values\n")
    elif style == 4:
        code = (f"X = train_data.drop({q}{target}{q}, axis=1)\ny = train_data[{q}{target}{q}]\n")
    else:
        code = (f"TARGET = {q}{target}{q}\nFEATURES = [col for col in train.columns if col not in [TARGET, {q}{ident}{q}]]\n")
    return code


def preprocess(rng: random.Random) -> str:
    q = _q(rng)
    blocks = [
        "for col in cat_cols:\n    le = LabelEncoder()\n    train[col] = le.fit_transform(train[col].astype(str))\n"
        "    test[col] = le.transform(test[col].astype(str))\n",
        f"cat_cols = X.select_dtypes(include=[{q}object{q}]).columns.tolist()\n"
        f"num_cols = X.select_dtypes(exclude=[{q}object{q}]).columns.tolist()\n",
        f"num_cols = X.select_dtypes(include=[np.number]).columns\ncat_cols = X.select_dtypes(include=[{q}object{q}]).columns\n",
        "X = X.fillna(X.median())\nX_test = X_test.fillna(X.median())\n",
        "train.fillna(-1, inplace=True)\ntest.fillna(-1, inplace=True)\n",
        "X = pd.get_dummies(X)\nX_test = pd.get_dummies(X_test)\nX, X_test = X.align(X_test, join='left', axis=1, fill_value=0)\n",
        "scaler = StandardScaler()\nX_train = scaler.fit_transform(X_train)\nX_val = scaler.transform(X_val)\n"
        "X_test = scaler.transform(X_test)\n",
        f"numeric_transformer = Pipeline(steps=[({q}imputer{q}, SimpleImputer(strategy={q}median{q})), "
        f"({q}scaler{q}, StandardScaler())])\n"
        f"categorical_transformer = Pipeline(steps=[({q}imputer{q}, SimpleImputer(strategy={q}most_frequent{q})), "
        f"({q}onehot{q}, OneHotEncoder(handle_unknown={q}ignore{q}))])\n"
        f"preprocessor = ColumnTransformer(transformers=[({q}num{q}, numeric_transformer, num_cols), "
        f"({q}cat{q}, categorical_transformer, cat_cols)])\n",
        f"imputer = SimpleImputer(strategy={q}{rng.choice(['mean', 'median', 'most_frequent'])}{q})\n"
        "X = pd.DataFrame(imputer.fit_transform(X), columns=X.columns)\n",
        f"for col in cat_cols:\n    train[col] = train[col].astype({q}category{q})\n    test[col] = test[col].astype({q}category{q})\n",
        f"train[{q}pickup_datetime{q}] = pd.to_datetime(train[{q}pickup_datetime{q}])\n"
        f"train[{q}hour{q}] = train[{q}pickup_datetime{q}].dt.hour\ntrain[{q}day{q}] = train[{q}pickup_datetime{q}].dt.day\n"
        f"train[{q}month{q}] = train[{q}pickup_datetime{q}].dt.month\ntrain[{q}year{q}] = train[{q}pickup_datetime{q}].dt.year\n"
        f"train[{q}weekday{q}] = train[{q}pickup_datetime{q}].dt.weekday\n",
        "def haversine(lat1, lon1, lat2, lon2):\n    R = 6371\n"
        "    lat1, lon1, lat2, lon2 = map(np.radians, [lat1, lon1, lat2, lon2])\n"
        "    dlat = lat2 - lat1\n    dlon = lon2 - lon1\n"
        "    a = np.sin(dlat / 2) ** 2 + np.cos(lat1) * np.cos(lat2) * np.sin(dlon / 2) ** 2\n"
        "    return 2 * R * np.arcsin(np.sqrt(a))\n",
        f"df = pd.concat([train, test], axis=0, ignore_index=True)\n",
        "all_data = pd.concat([train.drop(target, axis=1), test], axis=0)\n",
        f"train[{q}Age{q}] = train[{q}Age{q}].fillna(train[{q}Age{q}].median())\n"
        f"train[{q}Embarked{q}] = train[{q}Embarked{q}].fillna({q}S{q})\n"
        f"train[{q}Sex{q}] = train[{q}Sex{q}].map({{{q}male{q}: 0, {q}female{q}: 1}})\n",
        f"train[[{q}Deck{q}, {q}Num{q}, {q}Side{q}]] = train[{q}Cabin{q}].str.split({q}/{q}, expand=True)\n",
        "y = np.log1p(y)\n",
        f"for df in [train, test]:\n    df[{q}total{q}] = df[num_cols].sum(axis=1)\n    df[{q}mean{q}] = df[num_cols].mean(axis=1)\n",
        "X = X.astype(np.float32)\n",
        f"missing = train.isnull().sum().sort_values(ascending=False)\nprint(missing[missing > 0])\n",
        f"train = train.drop_duplicates()\ntrain = train.dropna(subset=[{q}{rng.choice(TARGETS)}{q}])\n",
    ]
    return "".join(rng.sample(blocks, k=rng.randint(1, 4)))


def split(rng: random.Random) -> str:
    size, seed = rng.choice(TEST_SIZES), rng.choice(SEEDS)
    q = _q(rng)
    style = rng.randint(0, 3)
    if style == 0:
        return f"X_train, X_val, y_train, y_val = train_test_split(X, y, test_size={size}, random_state={seed})\n"
    if style == 1:
        return (f"X_train, X_val, y_train, y_val = train_test_split(\n    X, y, test_size={size}, "
                f"random_state={seed}, stratify=y\n)\n")
    if style == 2:
        return f"X_train, X_valid, y_train, y_valid = train_test_split(X, y, test_size={size}, random_state={seed})\n"
    return (f"train_df, val_df = train_test_split(train_df, test_size={size}, random_state={seed}, "
            f"stratify=train_df[{q}{rng.choice(TARGETS)}{q}])\n")


def model(rng: random.Random, task: str) -> str:
    n, lr, depth, seed = rng.choice(N_ESTIMATORS), rng.choice(LEARNING_RATES), rng.choice(DEPTHS), rng.choice(SEEDS)
    q = _q(rng)
    reg = task == "regression"
    options = [
        f"model = {'RandomForestRegressor' if reg else 'RandomForestClassifier'}(n_estimators={n}, random_state={seed}, n_jobs=-1)\n",
        f"model = {'RandomForestRegressor' if reg else 'RandomForestClassifier'}(n_estimators={n}, max_depth={depth}, random_state={seed})\n",
        f"model = {'LGBMRegressor' if reg else 'LGBMClassifier'}()\n",
        f"model = {'LGBMRegressor' if reg else 'LGBMClassifier'}(n_estimators={n}, learning_rate={lr}, random_state={seed})\n",
        f"model = lgb.{'LGBMRegressor' if reg else 'LGBMClassifier'}(\n    n_estimators={n},\n    learning_rate={lr},\n"
        f"    num_leaves={rng.choice(NUM_LEAVES)},\n    random_state={seed},\n)\n",
        f"model = {'XGBRegressor' if reg else 'XGBClassifier'}(n_estimators={n}, learning_rate={lr}, max_depth={depth}, "
        f"random_state={seed})\n",
        f"model = xgb.{'XGBRegressor' if reg else 'XGBClassifier'}(\n    n_estimators={n},\n    learning_rate={lr},\n"
        f"    max_depth={depth},\n    subsample=0.8,\n    colsample_bytree=0.8,\n    random_state={seed},\n)\n",
        f"model = {'CatBoostRegressor' if reg else 'CatBoostClassifier'}(iterations={n}, learning_rate={lr}, "
        f"depth={depth}, verbose=0, random_seed={seed})\n",
        f"model = {'Ridge(alpha=1.0)' if reg else 'LogisticRegression(max_iter=1000)'}\n",
        f"model = {'LinearRegression()' if reg else f'LogisticRegression(C=1.0, solver={q}liblinear{q})'}\n",
        "model = make_pipeline(StandardScaler(), " + ("Ridge())\n" if reg else "LogisticRegression(max_iter=1000))\n"),
        f"model = Pipeline(steps=[({q}preprocessor{q}, preprocessor), ({q}model{q}, "
        + ("RandomForestRegressor(n_estimators=100, random_state=42))])\n" if reg
           else "RandomForestClassifier(n_estimators=100, random_state=42))])\n"),
    ]
    return rng.choice(options)


def params_dict(rng: random.Random, task: str) -> str:
    q = _q(rng)
    objective = {"regression": rng.choice(["regression", "rmse", "reg:squarederror"]),
                 "binary": rng.choice(["binary", "binary:logistic"]),
                 "multiclass": rng.choice(["multiclass", "multi:softprob"])}[task]
    metric = {"regression": rng.choice(["rmse", "mae", "l2"]), "binary": rng.choice(["auc", "binary_logloss", "logloss"]),
              "multiclass": rng.choice(["multi_logloss", "mlogloss"])}[task]
    keys = [f"    {q}objective{q}: {q}{objective}{q},", f"    {q}metric{q}: {q}{metric}{q},",
            f"    {q}learning_rate{q}: {rng.choice(LEARNING_RATES)},", f"    {q}num_leaves{q}: {rng.choice(NUM_LEAVES)},",
            f"    {q}max_depth{q}: {rng.choice(DEPTHS)},", f"    {q}feature_fraction{q}: 0.8,",
            f"    {q}bagging_fraction{q}: 0.8,", f"    {q}bagging_freq{q}: 5,", f"    {q}verbose{q}: -1,",
            f"    {q}seed{q}: {rng.choice(SEEDS)},", f"    {q}n_estimators{q}: {rng.choice(N_ESTIMATORS)},",
            f"    {q}subsample{q}: 0.8,", f"    {q}colsample_bytree{q}: 0.8,", f"    {q}lambda_l1{q}: 0.1,",
            f"    {q}min_child_samples{q}: 20,", f"    {q}reg_alpha{q}: 0.1,", f"    {q}reg_lambda{q}: 1.0,"]
    body = keys[:2] + rng.sample(keys[2:], k=rng.randint(2, 8))
    return "params = {\n" + "\n".join(body) + "\n}\n"


def fit(rng: random.Random) -> str:
    style = rng.randint(0, 4)
    if style == 0:
        return "model.fit(X_train, y_train)\n"
    if style == 1:
        return "model.fit(X_train, y_train, eval_set=[(X_val, y_val)], verbose=False)\n"
    if style == 2:
        return ("model.fit(\n    X_train,\n    y_train,\n    eval_set=[(X_val, y_val)],\n"
                f"    callbacks=[lgb.early_stopping({rng.choice(['50', '100', '200'])}), lgb.log_evaluation(0)],\n)\n")
    if style == 3:
        return ("train_data = lgb.Dataset(X_train, label=y_train)\nval_data = lgb.Dataset(X_val, label=y_val, reference=train_data)\n"
                f"model = lgb.train(params, train_data, num_boost_round={rng.choice(N_ESTIMATORS)}, valid_sets=[val_data], "
                f"callbacks=[lgb.early_stopping({rng.choice(['50', '100'])})])\n")
    q = _q(rng)
    return ("dtrain = xgb.DMatrix(X_train, label=y_train)\ndval = xgb.DMatrix(X_val, label=y_val)\n"
            f"model = xgb.train(params, dtrain, num_boost_round={rng.choice(N_ESTIMATORS)}, "
            f"evals=[(dtrain, {q}train{q}), (dval, {q}val{q})], early_stopping_rounds=50, verbose_eval=100)\n")


def evaluate(rng: random.Random, task: str) -> str:
    q = _q(rng)
    name = rng.choice(METRIC_NAMES)
    if task == "regression":
        options = [
            "y_pred = model.predict(X_val)\nrmse = np.sqrt(mean_squared_error(y_val, y_pred))\n"
            f"print(f{q}{name}: {{rmse}}{q})\n",
            "val_preds = model.predict(X_val)\nrmse = mean_squared_error(y_val, val_preds, squared=False)\n"
            f"print(f{q}{name}: {{rmse:.4f}}{q})\n",
            "preds = model.predict(X_valid)\nscore = np.sqrt(mean_squared_error(y_valid, preds))\n"
            f"print({q}{name}:{q}, score)\n",
            "y_pred = model.predict(X_val)\nmae = mean_absolute_error(y_val, y_pred)\n"
            f"print(f{q}{name}: {{mae:.5f}}{q})\n",
            "val_pred = model.predict(X_val)\nrmsle = np.sqrt(mean_squared_error(np.log1p(y_val), np.log1p(val_pred)))\n"
            f"print({q}{name}:{q}, rmsle)\n",
            f"scores = cross_val_score(model, X, y, cv={rng.choice(FOLDS)}, scoring={q}neg_root_mean_squared_error{q})\n"
            f"print(f{q}{name}: {{-scores.mean():.4f}} +/- {{scores.std():.4f}}{q})\n",
        ]
    else:
        options = [
            "val_probs = model.predict_proba(X_val)[:, 1]\nval_auc = roc_auc_score(y_val, val_probs)\n"
            f"print(f{q}{name}: {{val_auc}}{q})\n",
            "y_pred = model.predict(X_val)\naccuracy = accuracy_score(y_val, y_pred)\n"
            f"print(f{q}{name}: {{accuracy:.4f}}{q})\n",
            "preds = model.predict_proba(X_valid)[:, 1]\nauc = roc_auc_score(y_valid, preds)\n"
            f"print({q}{name}:{q}, auc)\n",
            "y_pred_proba = model.predict_proba(X_val)\nloss = log_loss(y_val, y_pred_proba)\n"
            f"print(f{q}{name}: {{loss:.5f}}{q})\n",
            "val_pred = model.predict(X_val)\nf1 = f1_score(y_val, val_pred, average='macro')\n"
            f"print(f{q}{name}: {{f1:.4f}}{q})\n",
            f"scores = cross_val_score(model, X, y, cv={rng.choice(FOLDS)}, scoring={q}roc_auc{q})\n"
            f"print(f{q}{name}: {{scores.mean():.4f}}{q})\n",
            f"y_pred = model.predict(X_val)\nprint({q}{name}:{q}, accuracy_score(y_val, y_pred))\n",
        ]
    return rng.choice(options)


def cross_validation(rng: random.Random, task: str) -> str:
    folds, seed = rng.choice(FOLDS), rng.choice(SEEDS)
    splitter = rng.choice(["KFold", "StratifiedKFold"]) if task != "regression" else "KFold"
    pred = "model.predict(X_val)" if task == "regression" else "model.predict_proba(X_val)[:, 1]"
    test_pred = "model.predict(X_test)" if task == "regression" else "model.predict_proba(X_test)[:, 1]"
    metric = ("np.sqrt(mean_squared_error(y_val, oof[val_idx]))" if task == "regression"
              else "roc_auc_score(y_val, oof[val_idx])")
    q = _q(rng)
    split_call = "kf.split(X, y)" if splitter == "StratifiedKFold" else "kf.split(X)"
    return (f"kf = {splitter}(n_splits={folds}, shuffle=True, random_state={seed})\n"
            "oof = np.zeros(len(X))\npredictions = np.zeros(len(X_test))\nscores = []\n"
            f"for fold, (train_idx, val_idx) in enumerate({split_call}):\n"
            "    X_train, X_val = X.iloc[train_idx], X.iloc[val_idx]\n"
            "    y_train, y_val = y.iloc[train_idx], y.iloc[val_idx]\n"
            f"{_indent(model(rng, task))}{_indent(fit(rng))}"
            f"    oof[val_idx] = {pred}\n"
            f"    predictions += {test_pred} / {folds}\n"
            f"    score = {metric}\n    scores.append(score)\n"
            f"    print(f{q}Fold {{fold + 1}}: {{score:.5f}}{q})\n"
            f"print(f{q}{rng.choice(METRIC_NAMES)}: {{np.mean(scores):.5f}} +/- {{np.std(scores):.5f}}{q})\n")


def _indent(code: str) -> str:
    return "".join("    " + line + "\n" if line else "\n" for line in code.rstrip("\n").split("\n"))


def _test_input(rng: random.Random, ident: str, q: str) -> str:
    """What the model predicts on: the test features, however the script holds them."""
    return rng.choice(["X_test", "X_test", "X_test", "test", "test[features]", f"test.drop([{q}{ident}{q}], axis=1)",
                       f"test_data.drop([{q}{ident}{q}], axis=1)", f"test_df.drop(columns=[{q}{ident}{q}])"])


def submit(rng: random.Random, out: str, ident: str, target: str) -> str:
    q = _q(rng)
    style = rng.randint(0, 5)
    x_test = _test_input(rng, ident, q)
    if style == 0:
        code = (f"test_preds = model.predict({x_test})\nsubmission = pd.DataFrame({{{q}{ident}{q}: test[{q}{ident}{q}], "
                f"{q}{target}{q}: test_preds}})\nsubmission.to_csv({q}{out}/submission.csv{q}, index=False)\n")
    elif style == 1:
        code = (f"os.makedirs({q}{out}{q}, exist_ok=True)\nsubmission[{q}{target}{q}] = predictions\n"
                f"submission.to_csv(os.path.join({q}{out}{q}, {q}submission.csv{q}), index=False)\n")
    elif style == 2:
        code = (f"test_probs = model.predict_proba({x_test})[:, 1]\nsubmission = pd.DataFrame({{{q}{ident}{q}: test_df[{q}{ident}{q}], "
                f"{q}{target}{q}: test_probs}})\nsubmission.to_csv({q}{out}/submission.csv{q}, index=False)\n")
    elif style == 3:
        code = (f"sample_submission[{q}{target}{q}] = model.predict({x_test})\n"
                f"sample_submission.to_csv({q}submission.csv{q}, index=False)\n")
    elif style == 4:
        code = (f"test_df[{q}{target}{q}] = model.predict({x_test})\n"
                f"test_df[[{q}{ident}{q}, {q}{target}{q}]].to_csv({q}{out}/submission.csv{q}, index=False)\n")
    else:
        code = (f"preds = np.expm1(model.predict({x_test}))\nsub = pd.DataFrame({{{q}{ident}{q}: test[{q}{ident}{q}], {q}{target}{q}: preds}})\n"
                f"sub.to_csv({q}{out}/submission.csv{q}, index=False)\n")
    if rng.random() < 0.5:
        code += rng.choice([f"print({q}Submission saved.{q})\n", f"print({q}Submission file saved{q})\n",
                            "print(submission.head())\n", f"print({q}Saved submission to{q}, {q}{out}/submission.csv{q})\n"])
    return code


def text_pipeline(rng: random.Random, col: str) -> str:
    q = _q(rng)
    ngram = rng.choice(["(1, 2)", "(1, 1)", "(1, 3)", "(2, 5)"])
    feats = rng.choice(["10000", "20000", "50000", "100000", "5000", "None"])
    code = (f"vectorizer = TfidfVectorizer(max_features={feats}, ngram_range={ngram}, stop_words={q}english{q})\n"
            f"X_train_tfidf = vectorizer.fit_transform(X_train)\nX_val_tfidf = vectorizer.transform(X_val)\n"
            f"X_test_tfidf = vectorizer.transform(test[{q}{col}{q}])\n")
    if rng.random() < 0.4:
        code = (f"def clean_text(text):\n    text = text.lower()\n    text = re.sub(r{q}[^a-z0-9\\s]{q}, {q}{q}, text)\n"
                f"    text = re.sub(r{q}\\s+{q}, {q} {q}, text)\n    return text.strip()\n"
                f"train[{q}{col}{q}] = train[{q}{col}{q}].apply(clean_text)\ntest[{q}{col}{q}] = test[{q}{col}{q}].apply(clean_text)\n") + code
    if rng.random() < 0.5:
        code += ("model = LogisticRegression(C=4.0, max_iter=1000)\nmodel.fit(X_train_tfidf, y_train)\n"
                 "val_pred = model.predict_proba(X_val_tfidf)[:, 1]\n")
    return code


def torch_dataset(rng: random.Random, ident: str) -> str:
    q = _q(rng)
    size = rng.choice(IMAGE_SIZES)
    return (f"class ImageDataset(Dataset):\n    def __init__(self, df, img_dir, transform=None):\n"
            f"        self.df = df\n        self.img_dir = img_dir\n        self.transform = transform\n\n"
            f"    def __len__(self):\n        return len(self.df)\n\n"
            f"    def __getitem__(self, idx):\n        row = self.df.iloc[idx]\n"
            f"        img_path = os.path.join(self.img_dir, row[{q}{ident}{q}])\n"
            f"        image = Image.open(img_path).convert({q}RGB{q})\n"
            f"        if self.transform:\n            image = self.transform(image)\n"
            f"        return image, row[{q}{rng.choice(TARGETS)}{q}]\n\n\n"
            f"train_transform = transforms.Compose([\n    transforms.Resize(({size}, {size})),\n"
            f"    transforms.RandomHorizontalFlip(),\n    transforms.ToTensor(),\n"
            f"    transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),\n])\n"
            f"val_transform = transforms.Compose([\n    transforms.Resize(({size}, {size})),\n    transforms.ToTensor(),\n"
            f"    transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),\n])\n")


def torch_train(rng: random.Random) -> str:
    q = _q(rng)
    lr, epochs, batch = rng.choice(LEARNING_RATES), rng.choice(EPOCHS), rng.choice(BATCH_SIZES)
    arch = rng.choice(["models.resnet18(pretrained=True)", "models.resnet50(pretrained=True)",
                       f"timm.create_model({q}efficientnet_b0{q}, pretrained=True, num_classes=num_classes)",
                       "models.resnet34(weights=models.ResNet34_Weights.DEFAULT)"])
    return (f"device = torch.device({rng.choice(DEVICES)})\n"
            f"train_loader = DataLoader(train_dataset, batch_size={batch}, shuffle=True, num_workers=4)\n"
            f"val_loader = DataLoader(val_dataset, batch_size={batch}, shuffle=False, num_workers=4)\n"
            f"model = {arch}\nmodel.fc = nn.Linear(model.fc.in_features, num_classes)\nmodel = model.to(device)\n"
            f"criterion = nn.{rng.choice(['CrossEntropyLoss()', 'BCEWithLogitsLoss()', 'MSELoss()'])}\n"
            f"optimizer = torch.optim.{rng.choice(['Adam', 'AdamW', 'SGD'])}(model.parameters(), lr={lr})\n"
            f"scheduler = torch.optim.lr_scheduler.{rng.choice(['CosineAnnealingLR(optimizer, T_max=10)', 'StepLR(optimizer, step_size=5, gamma=0.1)', 'ReduceLROnPlateau(optimizer, patience=2)'])}\n\n"
            f"for epoch in range({epochs}):\n    model.train()\n    train_loss = 0.0\n"
            "    for images, labels in train_loader:\n        images, labels = images.to(device), labels.to(device)\n"
            "        optimizer.zero_grad()\n        outputs = model(images)\n        loss = criterion(outputs, labels)\n"
            "        loss.backward()\n        optimizer.step()\n        train_loss += loss.item() * images.size(0)\n"
            "    train_loss /= len(train_loader.dataset)\n\n    model.eval()\n    val_loss = 0.0\n    correct = 0\n"
            "    with torch.no_grad():\n        for images, labels in val_loader:\n"
            "            images, labels = images.to(device), labels.to(device)\n            outputs = model(images)\n"
            "            loss = criterion(outputs, labels)\n            val_loss += loss.item() * images.size(0)\n"
            "            preds = outputs.argmax(dim=1)\n            correct += (preds == labels).sum().item()\n"
            "    val_loss /= len(val_loader.dataset)\n    val_acc = correct / len(val_loader.dataset)\n"
            f"    print(f{q}Epoch {{epoch + 1}}/{{{epochs}}}, Train Loss: {{train_loss:.4f}}, Val Loss: {{val_loss:.4f}}, "
            f"Val Acc: {{val_acc:.4f}}{q})\n"
            + ("    scheduler.step()\n" if rng.random() < 0.5 else "")
            + (f"    torch.save(model.state_dict(), {q}best_model.pth{q})\n" if rng.random() < 0.4 else ""))


def torch_predict(rng: random.Random) -> str:
    return ("model.eval()\npredictions = []\nwith torch.no_grad():\n    for images, _ in test_loader:\n"
            "        images = images.to(device)\n        outputs = model(images)\n"
            + rng.choice(["        probs = torch.softmax(outputs, dim=1)\n        predictions.extend(probs.cpu().numpy())\n",
                          "        predictions.extend(torch.sigmoid(outputs).cpu().numpy().flatten())\n",
                          "        predictions.extend(outputs.argmax(dim=1).cpu().numpy())\n"]))


def keras_model(rng: random.Random) -> str:
    q = _q(rng)
    size = rng.choice(IMAGE_SIZES)
    return (f"model = Sequential([\n    Conv2D(32, (3, 3), activation={q}relu{q}, input_shape=({size}, {size}, 3)),\n"
            f"    MaxPooling2D((2, 2)),\n    Conv2D(64, (3, 3), activation={q}relu{q}),\n    MaxPooling2D((2, 2)),\n"
            f"    Flatten(),\n    Dense(128, activation={q}relu{q}),\n    Dropout(0.5),\n"
            f"    Dense(1, activation={q}sigmoid{q}),\n])\n"
            f"model.compile(optimizer={q}adam{q}, loss={q}binary_crossentropy{q}, metrics=[{q}accuracy{q}])\n"
            f"early_stopping = EarlyStopping(monitor={q}val_loss{q}, patience={rng.choice(['3', '5', '10'])}, restore_best_weights=True)\n"
            f"history = model.fit(X_train, y_train, validation_data=(X_val, y_val), epochs={rng.choice(EPOCHS)}, "
            f"batch_size={rng.choice(BATCH_SIZES)}, callbacks=[early_stopping])\n")


def eda(rng: random.Random, target: str) -> str:
    q = _q(rng)
    blocks = [
        f"print(train[{q}{target}{q}].value_counts())\n",
        f"print(train[{q}{target}{q}].describe())\n",
        "print(train.dtypes)\n",
        "print(train.columns.tolist())\n",
        f"plt.figure(figsize=(10, 6))\nsns.histplot(train[{q}{target}{q}], kde=True)\nplt.show()\n",
        f"corr = train.corr(numeric_only=True)\nplt.figure(figsize=(12, 10))\nsns.heatmap(corr, annot=False, cmap={q}coolwarm{q})\nplt.show()\n",
        "print(train.isnull().sum().sort_values(ascending=False).head(20))\n",
        "print(train.nunique())\n",
    ]
    return "".join(rng.sample(blocks, k=rng.randint(1, 3)))


PLOT_TITLES = ["Correlation Matrix", "Correlation Heatmap", "Feature Importance", "Feature Importances",
               "Target Distribution", "Distribution of Target", "Confusion Matrix", "Training and Validation Loss",
               "Training and Validation Accuracy", "Missing Values", "Learning Curve", "ROC Curve",
               "Residuals", "Predicted vs Actual", "Top 20 Features", "Loss", "Accuracy"]
AXIS_LABELS = ["Epoch", "Loss", "Accuracy", "Feature", "Importance", "Count", "Frequency", "Value",
               "Predicted", "Actual", "True Label", "Predicted Label", "False Positive Rate", "True Positive Rate"]
CMAPS = ["coolwarm", "viridis", "Blues", "RdBu_r", "YlGnBu", "magma"]
FIGSIZES = ["(10, 6)", "(12, 8)", "(12, 10)", "(8, 6)", "(15, 10)", "(14, 8)", "(10, 8)", "(16, 6)", "(20, 10)"]


def plots(rng: random.Random, target: str) -> str:
    """Exploratory and diagnostic plots, as agents and notebooks write them."""
    q = _q(rng)
    title, cmap, size = rng.choice(PLOT_TITLES), rng.choice(CMAPS), rng.choice(FIGSIZES)
    blocks = [
        f"plt.figure(figsize={size})\nsns.heatmap(train.corr(), annot=True, cmap={q}{cmap}{q}, fmt={q}.2f{q})\n"
        f"plt.title({q}{title}{q})\nplt.show()\n",
        f"corr_matrix = train.corr()\nplt.figure(figsize={size})\nsns.heatmap(corr_matrix, annot=True, cmap={q}{cmap}{q}, "
        f"fmt={q}.2f{q}, linewidths=0.5)\nplt.title({q}{title}{q})\nplt.tight_layout()\nplt.show()\n",
        f"plt.figure(figsize={size})\nsns.countplot(x={q}{target}{q}, data=train)\nplt.title({q}{title}{q})\nplt.show()\n",
        f"plt.figure(figsize={size})\nsns.histplot(train[{q}{target}{q}], bins=50, kde=True)\nplt.title({q}{title}{q})\n"
        f"plt.xlabel({q}{rng.choice(AXIS_LABELS)}{q})\nplt.ylabel({q}{rng.choice(AXIS_LABELS)}{q})\nplt.show()\n",
        f"plt.plot(history.history[{q}loss{q}], label={q}train{q})\nplt.plot(history.history[{q}val_loss{q}], label={q}val{q})\n"
        f"plt.xlabel({q}Epoch{q})\nplt.ylabel({q}Loss{q})\nplt.legend()\nplt.title({q}{title}{q})\nplt.show()\n",
        f"fig, axes = plt.subplots(1, 2, figsize={size})\naxes[0].plot(train_losses, label={q}Train{q})\n"
        f"axes[0].plot(val_losses, label={q}Validation{q})\naxes[0].set_title({q}Loss{q})\naxes[0].legend()\n"
        f"axes[1].plot(train_accs, label={q}Train{q})\naxes[1].plot(val_accs, label={q}Validation{q})\n"
        f"axes[1].set_title({q}Accuracy{q})\naxes[1].legend()\nplt.show()\n",
        f"cm = confusion_matrix(y_val, y_pred)\nplt.figure(figsize={size})\nsns.heatmap(cm, annot=True, fmt={q}d{q}, cmap={q}Blues{q})\n"
        f"plt.xlabel({q}Predicted{q})\nplt.ylabel({q}Actual{q})\nplt.title({q}Confusion Matrix{q})\nplt.show()\n",
        f"fpr, tpr, _ = roc_curve(y_val, val_probs)\nplt.plot(fpr, tpr, label=f{q}AUC = {{auc:.3f}}{q})\n"
        f"plt.plot([0, 1], [0, 1], {q}k--{q})\nplt.xlabel({q}False Positive Rate{q})\nplt.ylabel({q}True Positive Rate{q})\n"
        f"plt.legend()\nplt.show()\n",
        f"missing = train.isnull().sum()\nmissing = missing[missing > 0].sort_values(ascending=False)\n"
        f"plt.figure(figsize={size})\nmissing.plot(kind={q}bar{q})\nplt.title({q}Missing Values{q})\nplt.show()\n",
        f"for col in num_cols:\n    plt.figure(figsize={size})\n    sns.histplot(train[col], kde=True)\n"
        f"    plt.title(f{q}Distribution of {{col}}{q})\n    plt.show()\n",
        f"train.hist(bins=50, figsize={size})\nplt.tight_layout()\nplt.show()\n",
        f"sns.boxplot(x={q}{target}{q}, y=col, data=train)\nplt.show()\n",
        f"plt.scatter(y_val, y_pred, alpha=0.5)\nplt.xlabel({q}Actual{q})\nplt.ylabel({q}Predicted{q})\n"
        f"plt.title({q}Predicted vs Actual{q})\nplt.show()\n",
    ]
    return "".join(rng.sample(blocks, k=rng.randint(1, 3)))


def outliers(rng: random.Random) -> str:
    """Outlier handling and summary statistics."""
    q = _q(rng)
    factor = rng.choice(["1.5", "1.5", "3", "3.0"])
    blocks = [
        f"for feature in num_cols:\n    Q1 = df[feature].quantile(0.25)\n    Q3 = df[feature].quantile(0.75)\n"
        f"    IQR = Q3 - Q1\n    lower_bound = Q1 - {factor} * IQR\n    upper_bound = Q3 + {factor} * IQR\n"
        f"    df[feature] = df[feature].clip(lower_bound, upper_bound)\n",
        f"Q1 = train[col].quantile(0.25)\nQ3 = train[col].quantile(0.75)\nIQR = Q3 - Q1\n"
        f"outliers = train[(train[col] < Q1 - {factor} * IQR) | (train[col] > Q3 + {factor} * IQR)]\n"
        f"print(f{q}Number of outliers in {{col}}: {{len(outliers)}}{q})\n",
        f"z_scores = np.abs((df[num_cols] - df[num_cols].mean()) / df[num_cols].std())\ndf = df[(z_scores < 3).all(axis=1)]\n",
        f"skewed = train[num_cols].skew().sort_values(ascending=False)\nprint(skewed[abs(skewed) > 0.75])\n",
        f"for col in num_cols:\n    print(f{q}{{col}}: mean={{train[col].mean():.2f}}, std={{train[col].std():.2f}}{q})\n",
        f"for col in cat_cols:\n    print(f{q}{{col}}: {{train[col].nunique()}} unique values{q})\n"
        f"    print(train[col].value_counts())\n",
        f"df[{q}FamilySize{q}] = df[{q}SibSp{q}] + df[{q}Parch{q}] + 1\ndf[{q}IsAlone{q}] = 0\n"
        f"df.loc[df[{q}FamilySize{q}] == 1, {q}IsAlone{q}] = 1\n",
        f"df[{q}Title{q}] = df[{q}Name{q}].str.extract({q} ([A-Za-z]+)\\.{q}, expand=False)\n",
    ]
    return "".join(rng.sample(blocks, k=rng.randint(1, 3)))


def feature_engineering(rng: random.Random) -> str:
    """Derived columns: a function of a few columns, dates, ratios, aggregates, distances."""
    q = _q(rng)
    a, b, c, d = rng.sample(["col_a", "col_b", "lat1", "lon1", "lat2", "lon2", "start", "end", "x", "y",
                             "pickup_latitude", "pickup_longitude", "dropoff_latitude", "dropoff_longitude",
                             "width", "height", "area", "count"], k=4)
    new = rng.choice(["distance", "ratio", "total", "diff", "area", "dist", "feature", "new_feature", "sum"])
    blocks = [
        f"df[{q}{new}{q}] = func(df[{q}{a}{q}], df[{q}{b}{q}], df[{q}{c}{q}], df[{q}{d}{q}])\n",
        f"train[{q}{new}{q}] = compute(\n    train[{q}{a}{q}],\n    train[{q}{b}{q}],\n    train[{q}{c}{q}],\n"
        f"    train[{q}{d}{q}],\n)\ntest[{q}{new}{q}] = compute(\n    test[{q}{a}{q}],\n    test[{q}{b}{q}],\n"
        f"    test[{q}{c}{q}],\n    test[{q}{d}{q}],\n)\n",
        f"for df in [train, test]:\n    df[{q}{new}{q}] = df[{q}{a}{q}] / (df[{q}{b}{q}] + 1)\n",
        f"df[{q}{new}{q}] = df[{q}{a}{q}] - df[{q}{b}{q}]\ndf[{q}{new}_2{q}] = df[{q}{c}{q}] * df[{q}{d}{q}]\n",
        "def haversine_distance(lat1, lon1, lat2, lon2):\n    R = 6371\n"
        "    phi1, phi2 = np.radians(lat1), np.radians(lat2)\n    dphi = np.radians(lat2 - lat1)\n"
        "    dlambda = np.radians(lon2 - lon1)\n"
        "    a = np.sin(dphi / 2) ** 2 + np.cos(phi1) * np.cos(phi2) * np.sin(dlambda / 2) ** 2\n"
        "    c = 2 * np.arctan2(np.sqrt(a), np.sqrt(1 - a))\n    d = R * c\n    return d\n",
        "def haversine(lon1, lat1, lon2, lat2):\n    lon1, lat1, lon2, lat2 = map(np.radians, [lon1, lat1, lon2, lat2])\n"
        "    dlon = lon2 - lon1\n    dlat = lat2 - lat1\n"
        "    a = np.sin(dlat / 2.0) ** 2 + np.cos(lat1) * np.cos(lat2) * np.sin(dlon / 2.0) ** 2\n"
        "    c = 2 * np.arcsin(np.sqrt(a))\n    km = 6367 * c\n    return km\n",
        f"df[{q}{new}{q}] = np.sqrt((df[{q}{a}{q}] - df[{q}{b}{q}]) ** 2 + (df[{q}{c}{q}] - df[{q}{d}{q}]) ** 2)\n",
        f"agg = train.groupby({q}{a}{q})[{q}{b}{q}].agg([{q}mean{q}, {q}std{q}, {q}min{q}, {q}max{q}]).reset_index()\n"
        f"train = train.merge(agg, on={q}{a}{q}, how={q}left{q})\n",
        f"df[{q}{a}{q}] = pd.to_datetime(df[{q}{a}{q}])\ndf[{q}year{q}] = df[{q}{a}{q}].dt.year\n"
        f"df[{q}month{q}] = df[{q}{a}{q}].dt.month\ndf[{q}day{q}] = df[{q}{a}{q}].dt.day\n"
        f"df[{q}hour{q}] = df[{q}{a}{q}].dt.hour\ndf[{q}dayofweek{q}] = df[{q}{a}{q}].dt.dayofweek\n",
        f"for col in [{q}{a}{q}, {q}{b}{q}, {q}{c}{q}]:\n    median_value = train[col].median()\n"
        f"    train[col].fillna(median_value, inplace=True)\n    test[col].fillna(median_value, inplace=True)\n",
        f"train = train[(train[{q}{a}{q}] > 0) & (train[{q}{a}{q}] < 100)]\n",
    ]
    return "".join(rng.sample(blocks, k=rng.randint(1, 4)))


def course_pipeline(rng: random.Random, task: str) -> str:
    """The preprocessing pipeline of Kaggle Learn's courses, which agents reproduce: imputers and
    a one-hot encoder in a ColumnTransformer, the model in a Pipeline, an 80/20 split."""
    q = _q(rng)
    strategy = rng.choice(["median", "mean", "constant", "most_frequent"])
    numeric = rng.choice([
        f"SimpleImputer(strategy={q}{strategy}{q})",
        f"Pipeline(steps=[({q}imputer{q}, SimpleImputer(strategy={q}{strategy}{q})), ({q}scaler{q}, StandardScaler())])",
    ])
    numeric_columns = rng.choice(["numerical_cols", "numeric_features", "num_cols",
                                  f"X.select_dtypes(exclude=[{q}object{q}]).columns"])
    categorical_columns = rng.choice(["categorical_cols", "categorical_features", "cat_cols",
                                      f"X.select_dtypes(include=[{q}object{q}]).columns"])
    code = (f"numerical_transformer = {numeric}\n"
            f"categorical_transformer = Pipeline(\n    steps=[\n        ({q}imputer{q}, SimpleImputer(strategy={q}most_frequent{q})),\n"
            f"        ({q}onehot{q}, OneHotEncoder(handle_unknown={q}ignore{q})),\n    ]\n)\n"
            f"preprocessor = ColumnTransformer(\n    transformers=[\n"
            f"        ({q}num{q}, numerical_transformer, {numeric_columns}),\n"
            f"        ({q}cat{q}, categorical_transformer, {categorical_columns}),\n    ]\n)\n")
    code += model(rng, task)
    code += f"my_pipeline = Pipeline(steps=[({q}preprocessor{q}, preprocessor), ({q}model{q}, model)])\n"
    code += rng.choice([
        "X_train, X_valid, y_train, y_valid = train_test_split(\n    X, y, train_size=0.8, test_size=0.2, random_state=0\n)\n",
        f"X_train, X_valid, y_train, y_valid = train_test_split(X, y, test_size={rng.choice(TEST_SIZES)}, "
        f"random_state={rng.choice(SEEDS)})\n",
    ])
    code += rng.choice(["my_pipeline.fit(X_train, y_train)\n", "my_pipeline.fit(X_train, np.log(y_train))\n",
                        "my_pipeline.fit(X_train, np.log1p(y_train))\n"])
    name = rng.choice(METRIC_NAMES)
    code += "preds = my_pipeline.predict(X_valid)\n" + rng.choice([
        f"score = mean_absolute_error(y_valid, preds)\nprint({q}{name}:{q}, score)\n",
        f"score = mean_squared_error(y_valid, preds, squared=False)\nprint({q}{name}:{q}, score)\n",
        f"score = mean_squared_error(np.log(y_valid), preds, squared=False)\nprint({q}{name}:{q}, score)\n",
        f"score = accuracy_score(y_valid, preds)\nprint(f{q}{name}: {{score:.4f}}{q})\n",
    ])
    return code + rng.choice(["test_preds = my_pipeline.predict(X_test)\n", "test_preds = my_pipeline.predict(test)\n",
                              "preds_test = my_pipeline.predict(X_test)\n"])


def feature_importance(rng: random.Random) -> str:
    q = _q(rng)
    return (f"importance = pd.DataFrame({{{q}feature{q}: X.columns, {q}importance{q}: model.feature_importances_}})\n"
            f"importance = importance.sort_values({q}importance{q}, ascending=False)\nprint(importance.head(20))\n")


def main_guard(code: str, rng: random.Random) -> str:
    if rng.random() < 0.15:
        return "def main():\n" + _indent(code) + "\n\nif __name__ == \"__main__\":\n    main()\n"
    return code


def compose(rng: random.Random) -> str:
    """One agent-style script."""
    kind = rng.choices(["tabular", "text", "image", "keras"], weights=[6, 2, 2, 1])[0]
    data, out = rng.choice(DATA_DIRS), rng.choice(OUT_DIRS)
    ident, target = rng.choice(ID_COLUMNS), rng.choice(TARGETS)
    task = rng.choice(["regression", "binary", "multiclass"]) if kind == "tabular" else "binary"
    parts = [imports(rng, kind)]
    if rng.random() < 0.4:
        parts.append(seeding(rng, kind))
    parts.append(load(rng, data))
    if rng.random() < 0.3:
        parts.append(eda(rng, target))
    if rng.random() < 0.35:
        parts.append(plots(rng, target))
    if rng.random() < 0.25:
        parts.append(outliers(rng))
    if kind == "tabular":
        parts.append(features(rng, target, ident))
        parts.append(preprocess(rng))
        if rng.random() < 0.5:
            parts.append(feature_engineering(rng))
        if rng.random() < 0.35:
            parts.append(params_dict(rng, task))
        if rng.random() < 0.35:
            parts.append(cross_validation(rng, task))
        elif rng.random() < 0.2:
            parts.append(course_pipeline(rng, task))
        else:
            parts.append(split(rng))
            parts.append(model(rng, task))
            parts.append(fit(rng))
            parts.append(evaluate(rng, task))
        if rng.random() < 0.2:
            parts.append(feature_importance(rng))
    elif kind == "text":
        col = rng.choice(TEXT_COLUMNS)
        q = _q(rng)
        parts.append(f"X = train[{q}{col}{q}]\ny = train[{q}{target}{q}]\n")
        parts.append(split(rng))
        parts.append(text_pipeline(rng, col))
        parts.append(evaluate(rng, "binary"))
    elif kind == "image":
        parts.append(torch_dataset(rng, ident))
        parts.append(split(rng))
        parts.append(torch_train(rng))
        parts.append(torch_predict(rng))
    else:
        parts.append(split(rng))
        parts.append(keras_model(rng))
    parts.append(submit(rng, out, ident, target))
    body = "\n".join(parts)
    return main_guard(body, rng) if kind == "tabular" else body


def corpus(seed: int = SEED, count: int = SCRIPTS) -> list[str]:
    """The generated scripts, in order (deterministic for a seed)."""
    rng = random.Random(seed)
    return [compose(rng) for _ in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--dump", type=Path, default=None, help="also write the generated scripts here")
    args = parser.parse_args()
    scripts = corpus()
    digest = hashlib.sha256("\0".join(scripts).encode("utf-8")).hexdigest()
    if args.dump is not None:
        args.dump.mkdir(parents=True, exist_ok=True)
        for number, text in enumerate(scripts):
            (args.dump / f"script{number:04d}.py").write_text(text, encoding="utf-8")
    profiles = [profile_code(text, f"script{n:04d}.py") for n, text in enumerate(scripts)]
    table = NgramTable.from_profiles(profiles)
    idioms = NgramTable.from_grams([idiom_grams(profile) for profile in profiles])
    source = (f"scripts/build_background.py: {len(scripts)} agent-style scripts composed from the script's own "
              f"idiom snippets, random.Random({SEED}); corpus sha256 {digest}")
    save_background(args.output, table, idioms=idioms, documents=len(scripts), source=source)
    print(f"wrote {args.output}: {table.keys.size} n-grams, {table.context_keys.size} contexts, "
          f"{idioms.keys.size} idiom n-grams from "
          f"{len(scripts)} scripts (format {BACKGROUND_FORMAT}, scheme {PROFILE_SCHEME})")


if __name__ == "__main__":
    main()
