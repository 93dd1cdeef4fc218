"""Competitions, data preparation, local graders and Kaggle medals (MLE-bench compatible)."""
