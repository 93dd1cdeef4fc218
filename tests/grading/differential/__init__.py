"""Differential grading against MLE-bench's own graders.

:mod:`.keys` writes a small invented answer key for each competition in the layout MLE-bench's
grader reads, :mod:`.mutations` derives the submissions (perfect, random, perturbed, shuffled,
re-id'd, missing/duplicate/extra rows and columns, odd cells, changed header case, header only),
and :mod:`.compare` grades each with ``scripts/mlebench_grade.py`` in MLE-bench's own environment
and with mleaudit, and lists where the two disagree.
"""
