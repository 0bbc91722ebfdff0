"""A package's names imported from their modules on first use (PEP 562).

``import relcol`` and the command line's start stay cheap, and a command loads only the
libraries its own code needs: ``relcol sql`` draws a table without Polars, ``relcol ingest
--predictions`` imports no model, SciPy or report library. A package lists its
names once, each with the module that defines it, and sets::

    __getattr__ = lazy_getattr(globals(), _LAZY)

A name maps to its module, or to ``(module, name there)`` where the package renames it.
The first access imports that module alone and binds the name in the package, so later
accesses are plain attribute reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_getattr(
    namespace: dict[str, Any], names: Mapping[str, str | tuple[str, str]]
) -> Callable[[str], Any]:
    """The module ``__getattr__`` of the package whose ``globals()`` is ``namespace``.

    The package's ``__all__`` (a literal list, which linters read) must name exactly
    ``names``."""
    package = namespace["__name__"]
    if set(namespace["__all__"]) != set(names):
        raise ImportError(f"{package}: __all__ and its lazy names differ")

    def __getattr__(name: str) -> Any:
        where = names.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = (where, name) if isinstance(where, str) else where
        value = getattr(import_module(module), attribute)
        namespace[name] = value
        return value

    return __getattr__
