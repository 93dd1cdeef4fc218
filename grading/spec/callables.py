"""A competition's own Python functions (``prepare``, a custom grader), loaded by file path."""

from __future__ import annotations

import importlib.util
import inspect
import re
import sys
from pathlib import Path
from typing import Any, Callable

from mleaudit.grading.errors import ConfigError


def _load_callable(root: Path, ref: str, *, config: Path, field_name: str, competition_id: str) -> Callable[..., Any]:
    file_name, func_name = ref.split(":")
    file_path = root / file_name
    if not file_path.is_file():
        raise ConfigError(f"{config}: field '{field_name}': {file_path} does not exist")
    module_name = f"_mleaudit_competition_{re.sub(r'[^0-9A-Za-z_]', '_', competition_id)}_{file_path.stem}"
    module_spec = importlib.util.spec_from_file_location(module_name, file_path)
    if module_spec is None or module_spec.loader is None:
        raise ConfigError(f"{config}: field '{field_name}': cannot load {file_path}")
    module = importlib.util.module_from_spec(module_spec)
    # Registered under a private name because dataclasses and pickling look a class's
    # module up in sys.modules.
    sys.modules[module_name] = module
    try:
        # The competition folders are this project's own files, never audited input.
        module_spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - any failure in the file is a config problem
        sys.modules.pop(module_name, None)
        raise ConfigError(f"{config}: field '{field_name}': {file_path} failed to load: {exc!r}") from exc
    func = getattr(module, func_name, None)
    if not callable(func):
        raise ConfigError(f"{config}: field '{field_name}': {file_path} has no function {func_name!r}")
    return func


def _check_parameters(func: Callable[..., Any], expected: list[str], *, config: Path, field_name: str) -> None:
    actual = list(inspect.signature(func).parameters)
    if actual != expected:
        raise ConfigError(
            f"{config}: field '{field_name}': function takes ({', '.join(actual)}); expected ({', '.join(expected)})"
        )
