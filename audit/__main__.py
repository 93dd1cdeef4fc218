"""``python -m audit`` runs the ``mleaudit`` command line."""

from audit.cli import main

if __name__ == "__main__":
    main()
