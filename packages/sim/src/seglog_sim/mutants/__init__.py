"""Mutants: one guard removed, one order swapped or one known bug brought back, each in the real source.

Stdlib only at import: a mutant's import hook must be installed before any seglog module is imported.
"""
