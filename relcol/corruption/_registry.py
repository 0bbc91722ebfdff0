"""The operators by name, as study specs and the long table's ``corruption`` column spell them."""

from __future__ import annotations

from types import MappingProxyType

from relcol.errors import SpecError

from ._amputation import Ampute
from ._base import Operator
from ._bias import StructuralBias
from ._categorical import CategoricalShift
from ._entry import Outliers, Scaling, SwappedColumns
from ._labels import LabelNoise, LabelTransition
from ._missing import MAR, MCAR, MNAR
from ._noise import GaussianNoise

# Built from the plain operators first, so structural bias can never nest itself.
_PLAIN: tuple[Operator, ...] = (
    MCAR(),
    MAR(),
    MNAR(),
    Ampute(),
    GaussianNoise(),
    LabelNoise(),
    Scaling(),
    SwappedColumns(),
    Outliers(),
    CategoricalShift(),
    LabelTransition(),
)

#: Every corruption operator, by name.
OPERATORS: dict[str, Operator] = {op.name: op for op in _PLAIN}
OPERATORS["structural_bias"] = StructuralBias(
    bases=MappingProxyType({op.name: op for op in _PLAIN})
)


def get_operator(name: str) -> Operator:
    """The operator called ``name``.

    Raises
    ------
    SpecError
        If there is none; the message lists the known names.
    """
    if not isinstance(name, str) or name not in OPERATORS:
        known = ", ".join(map(repr, sorted(OPERATORS)))
        raise SpecError(f"unknown corruption operator {name!r}; known operators: {known}.")
    return OPERATORS[name]
