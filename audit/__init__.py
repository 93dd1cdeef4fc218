"""mleaudit: integrity and plagiarism auditing for MLE-bench agent runs."""

__version__ = "0.1.0"
