"""``python -m mleaudit`` runs the ``mleaudit`` command line.

``python -m`` puts the current directory first on ``sys.path``; the audited run folder is often
that directory, so the path is cleaned (:func:`mleaudit._entry.clean_sys_path`) before anything
else is imported.
"""

from mleaudit._entry import clean_sys_path

clean_sys_path()

if __name__ == "__main__":
    from mleaudit._entry import main

    main()
