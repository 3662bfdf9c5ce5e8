"""The user's ``drive.py`` and ``check.py``: loaded as modules of their own, their ``workload(app)`` and
``check(app)`` found by name, and a check's answer read as a list of violations.

A file that is missing, does not import, or lacks the function is refused before any run starts, with what to
write; a check that returns something else than a list (or None) is a violation of the run, never a crash of the
campaign.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from seglog_emulator.errors import EmulatorError

Script = Callable[[Any], Any]


class ScriptError(EmulatorError):
    """A workload or check file that cannot serve; the message says what it must define."""


def load_function(path: Path, name: str) -> Script:
    """``name`` from the Python file at ``path`` (imported once, its folder first on ``sys.path``, so it can import
    its neighbours).

    Raises:
        ScriptError: the file is missing, raises when imported, or defines no callable ``name``.
    """
    if not path.is_file():
        raise ScriptError(f"{path}: no such file; write a Python file that defines {name}(app)")
    spec = importlib.util.spec_from_file_location(f"seglog_chaos_{name}_{abs(hash(path.resolve()))}", path)
    if spec is None or spec.loader is None:
        raise ScriptError(f"{path}: not a Python module; name it *.py and define {name}(app) in it")
    module = importlib.util.module_from_spec(spec)
    folder = str(path.resolve().parent)
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise ScriptError(f"{path}: importing it raised {type(exc).__name__}: {exc}") from exc
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
    found = getattr(module, name, None)
    if not callable(found):
        raise ScriptError(f"{path} defines no function {name}(app); define one (see `seglog chaos --help`)")
    return found  # type: ignore[no-any-return]


def violations_of(answer: object, source: str) -> list[str]:
    """A check's answer as violations: a list (or tuple) of anything, each put as text; None is an empty list.
    Any other answer is itself reported, so that a check returning ``True`` is not taken for "no violation"."""
    if answer is None:
        return []
    if isinstance(answer, list | tuple):
        return [str(item) for item in answer]
    return [f"{source} returned {type(answer).__name__} {answer!r}; a check returns a list of violations "
            "(empty: fine)"]
