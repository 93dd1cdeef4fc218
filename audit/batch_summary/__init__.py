"""The summary of a batch audit: MLE-bench's totals with and without the flagged runs, and what was found.

A compliance lead's question after a sweep is "what is the medal table once the runs that broke
the rules are taken out?". :func:`summarize_batch` answers it from the runs' audit reports:

- ``coverage``: what the totals count: runs graded, not graded (with a submission, or without
  one) and not audited at all;
- ``totals``: MLE-bench's aggregate fields (``total_runs``, ``total_runs_with_submissions``,
  ``total_valid_submissions``, ``total_medals``, ``total_gold_medals``, ...) over every run; a
  run without a grade (not graded, audit failed) counts as MLE-bench's zero report, except that
  a submission it holds counts in ``total_runs_with_submissions``;
- ``totals_excluding_flagged``: the same after **disqualifying** the runs whose verdict is in
  ``excluded_verdicts`` — by default every run that is not certified: ``flagged`` (rule-breaking
  evidence), ``incomplete`` (something was not checked) and ``error`` (no audit at all); they
  stay in ``total_runs`` but count as zero reports, as a disqualified attempt scores nothing;
- ``not_certified``: the incomplete and the failed audits counted separately (runs, valid
  submissions and the medals they would have had), so a reviewer sees what a rerun or a
  human check could still restore;
- ``seeds``: MLE-bench's seed aggregation (``experiments/aggregate_grading_reports.py``): the runs
  of each competition are taken in batch order, seed *i* holds the *i*-th run of every
  competition, only complete seeds are kept, each seed's percentages are computed over its
  competitions, and the mean, standard error of the mean (``ddof=1``) and a 95 % interval
  (mean ± 1.96 SEM) are reported, with and without the flagged runs. When competitions have
  uneven numbers of runs, ``left_out`` names every run of a dropped seed (competition, run id,
  path and why: ``"seed 3 incomplete: 4 of 22 competitions have a 3rd run"``); with
  ``pad_missing`` (MLE-bench's ``--pad-missing``) every seed is kept instead and a missing run
  counts as a failed one, each listed in ``padded``;
- ``pass_at_k``: the share of competitions with a medal in at least one of *k* attempts, with the
  unbiased estimator ``1 - C(n-c, k) / C(n, k)`` per competition of *n* runs and *c* medals (Chen
  et al., 2021, "Evaluating Large Language Models Trained on Code"), averaged over the
  competitions with ``n >= k``;
- ``verdicts``, ``rules``, ``categories``, ``competitions``: counts a reviewer sorts by (a run
  counts into a category for a finding of severity ``low`` or above, not for context at ``info``;
  a finding a reviewer dismissed counts nowhere but in its rule's ``dismissed``);
- ``copy_clusters``: runs and notebooks linked by flagged similarity pairs (:mod:`mleaudit.audit.clusters`).

Routine Listings
----------------
seeds
    :data:`SEED_METRICS`, :func:`seed_aggregate`, :func:`describe_seeds`, :func:`pass_at_k`: figures
    over the repeated runs of each competition, from grades alone.
summary
    :func:`summarize_batch` and the summary's constants (:data:`BATCH_SUMMARY_VERSION`,
    :data:`NOT_CERTIFIED`, :data:`VERDICT_KINDS`).

Notes
-----
Every public name is re-exported here, so callers import from ``mleaudit.audit.batch_summary``.
``seeds`` imports nothing of ours; ``summary`` imports ``seeds``, :mod:`mleaudit.audit.batch` and
:func:`mleaudit.grading.grade.grade_totals`. A new figure over repeated runs goes in ``seeds``; a new
section of the summary in :func:`summarize_batch` (and :data:`BATCH_SUMMARY_VERSION` is bumped when
a key changes meaning or disappears).
"""

from mleaudit.audit.batch_summary.seeds import SEED_METRICS, describe_seeds, pass_at_k, seed_aggregate
from mleaudit.audit.batch_summary.summary import BATCH_SUMMARY_VERSION, NOT_CERTIFIED, VERDICT_KINDS, summarize_batch

__all__ = ["BATCH_SUMMARY_VERSION", "NOT_CERTIFIED", "VERDICT_KINDS", "SEED_METRICS", "describe_seeds", "pass_at_k",
           "seed_aggregate", "summarize_batch"]
