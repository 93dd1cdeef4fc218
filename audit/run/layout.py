"""The run-directory contract (:class:`RunLayout`) and which layout a run follows (:func:`detect_layout`).

The sandbox writes runs by this contract and the audit reads them by it; this module imports
nothing of ours, so that ``mleaudit.sandbox`` can depend on it alone.
"""

from __future__ import annotations


class RunLayout:
    """Names of the run-dir contract shared by the sandbox (which writes runs) and the audit."""

    SUBMISSION_DIR = "submission"
    SUBMISSION_FILE = "submission.csv"
    LOGS_DIR = "logs"
    CODE_DIR = "code"
    RUN_LOG = "run.log"
    RUN_META = ("run.json", "metadata.json")
    #: Where the submission may sit, first match wins: the MLE-bench layout, a bare folder
    #: (AutoKaggle writes it at the top), AIDE's working directory.
    SUBMISSION_CANDIDATES = ("submission/submission.csv", "submission.csv", "working/submission.csv")
    #: Files larger than this are listed under ``skipped`` instead of read (text logs excepted).
    MAX_FILE_BYTES = 20 * 1024 * 1024
    #: How much of a text log is read: a larger log is read up to here (cut back to the last
    #: line end) and the rest is listed under ``skipped``. 20 MB of text reads in seconds.
    MAX_LOG_BYTES = 20 * 1024 * 1024
    #: Folders nested deeper than this below the run root are not entered (listed under
    #: ``skipped``): real runs nest a few levels, and every level costs each file below it.
    MAX_FOLDER_DEPTH = 64
    #: AutoKaggle's phase folders (``<phase>/<phase>_code.py``, ``_output.txt``, ``review.json``).
    AUTOKAGGLE_PHASES = (
        "understand_background", "pre_eda", "data_cleaning", "deep_eda", "feature_engineering", "model_build_predict",
    )  # fmt: skip
    #: Layout names :func:`detect_layout` returns.
    LAYOUTS = ("mlebench", "aide", "autokaggle", "mlagentbench", "folder", "file")
    #: Files that mark an MLAgentBench log folder: the agent's transcript and the environment's trace.
    MLAGENTBENCH_MARKERS = frozenset({"agent_log/main_log", "env_log/trace.json"})
    #: Submission paths particular to a layout, looked for after :data:`SUBMISSION_CANDIDATES`:
    #: MLAgentBench snapshots the agent's workspace after every step (``env_log/traces/step_N_files/``);
    #: the final snapshot's ``submission.csv`` is the run's submission, earlier ones are data files.
    LAYOUT_SUBMISSION_CANDIDATES = {
        "mlagentbench": ("env_log/traces/step_final_files/submission.csv",),
    }

    @classmethod
    def submission_candidates(cls, layout: str | None = None) -> tuple[str, ...]:
        """Where a run of ``layout`` may hold its submission, first match first.

        Parameters
        ----------
        layout : str, optional
            One of :data:`LAYOUTS`; ``None`` gives the candidates every layout shares.

        Returns
        -------
        tuple of str
            :data:`SUBMISSION_CANDIDATES`, then the layout's own (:data:`LAYOUT_SUBMISSION_CANDIDATES`).

        Examples
        --------
        >>> RunLayout.submission_candidates("mlagentbench")[-1]
        'env_log/traces/step_final_files/submission.csv'
        """
        return cls.SUBMISSION_CANDIDATES + cls.LAYOUT_SUBMISSION_CANDIDATES.get(layout or "", ())


def detect_layout(paths: set[str] | frozenset[str], single_file: bool = False) -> str:
    """Which run layout a set of run paths follows.

    Parameters
    ----------
    paths : set of str
        The run's file paths, POSIX, relative to the run root.
    single_file : bool
        Whether the run is one file given on its own.

    Returns
    -------
    str
        ``"autokaggle"`` (two or more of AutoKaggle's phase folders), ``"mlagentbench"``
        (``agent_log/main_log`` or ``env_log/trace.json``), ``"mlebench"``
        (``submission/``, ``logs/`` or ``code/`` folders, or ``run.log``), ``"aide"``
        (``journal.json`` at the top or ``best_solution.py`` with ``working/``), ``"file"`` for
        a single file, else ``"folder"``.

    Examples
    --------
    >>> detect_layout({"pre_eda/pre_eda_code.py", "data_cleaning/report.txt", "submission.csv"})
    'autokaggle'
    >>> detect_layout({"logs/agent.log", "submission/submission.csv"})
    'mlebench'
    >>> detect_layout({"agent_log/main_log", "env_log/trace.json", "log"})
    'mlagentbench'
    """
    if single_file:
        return "file"
    folders = {p.split("/", 1)[0] for p in paths if "/" in p}
    if len(folders & set(RunLayout.AUTOKAGGLE_PHASES)) >= 2:
        return "autokaggle"
    if RunLayout.MLAGENTBENCH_MARKERS & set(paths):
        return "mlagentbench"
    if folders & {RunLayout.SUBMISSION_DIR, RunLayout.LOGS_DIR, RunLayout.CODE_DIR} or RunLayout.RUN_LOG in paths:
        return "mlebench"
    if "journal.json" in paths or ("best_solution.py" in paths and "working" in folders):
        return "aide"
    return "folder"
