"""Packages of the distribution: one import namespace, ``mleaudit``.

The repository keeps the project's parts as top-level folders (``audit/``, ``grading/``,
``sandbox/``, ``rules/``, ``competitions/``); installed, they live under ``mleaudit`` so that
nothing generic (an ``audit`` package exists on PyPI) lands at the top of site-packages. Each
folder is mapped with ``package_dir`` and its sub-packages are found here, so a new sub-package
ships without editing a list. Everything else is declared in ``setup.cfg``.
"""

from setuptools import find_packages, setup

CODE = ("audit", "grading", "sandbox")
#: Data only (YAML, CSV, the competitions' prepare scripts): package data beside the code.
DATA = ("rules", "competitions")

packages = ["mleaudit"]
for folder in CODE:
    packages += [f"mleaudit.{name}" for name in find_packages(include=[folder, f"{folder}.*"])]
packages += [f"mleaudit.{folder}" for folder in DATA]

setup(
    packages=packages,
    package_dir={"mleaudit": "mleaudit", **{f"mleaudit.{folder}": folder for folder in CODE + DATA}},
)
