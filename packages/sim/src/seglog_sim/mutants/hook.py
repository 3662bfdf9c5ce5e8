"""Loading one module with a mutant's edit applied to its source, before anything imports it.

A meta path finder answers for the mutant's module only, with a loader that compiles the edited source (never a
cached .pyc). It must be installed before the module is first imported, so the mutant runs in a fresh process.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import CodeType, ModuleType

from seglog_sim.mutants.catalogue import Mutant


class MutantNotApplicable(Exception):
    """The text a mutant replaces is not in the module exactly once: the code moved, the mutant must follow."""


def mutate(source: str, mutant: Mutant) -> str:
    count = source.count(mutant.old)
    if count != 1:
        raise MutantNotApplicable(f"mutant {mutant.name}: the text to replace occurs {count} times in "
                                  f"{mutant.module} (expected once): update its entry in seglog_sim/mutants/")
    return source.replace(mutant.old, mutant.new)


class _Loader(importlib.machinery.SourceFileLoader):
    def __init__(self, fullname: str, path: str, mutant: Mutant) -> None:
        super().__init__(fullname, path)
        self.mutant = mutant

    def get_code(self, fullname: str) -> CodeType:
        source = Path(self.path).read_text(encoding="utf-8")
        return compile(mutate(source, self.mutant), self.path, "exec", dont_inherit=True)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, mutant: Mutant) -> None:
        self.mutant = mutant

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.mutant.module:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.origin is None:
            return None
        return importlib.util.spec_from_file_location(fullname, spec.origin,
                                                      loader=_Loader(fullname, spec.origin, self.mutant))


def install(mutant: Mutant) -> None:
    """Make the next import of the mutant's module load the mutated source."""
    if mutant.module in sys.modules:
        raise RuntimeError(f"{mutant.module} is already imported: install the mutant first, in a fresh process")
    sys.meta_path.insert(0, _Finder(mutant))


def source_path(module: str) -> Path:
    """The file a module loads from (without importing it)."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise MutantNotApplicable(f"module {module} not found")
    return Path(spec.origin)
