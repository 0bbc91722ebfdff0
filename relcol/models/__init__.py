"""f_θ: the model zoo. Each (dataset, model, seed) is fitted once on clean data, then frozen."""

from __future__ import annotations

from relcol.models._zoo import ZOO, FrozenModel, ModelSpec, fit_frozen, validate_model

__all__ = ["ZOO", "FrozenModel", "ModelSpec", "fit_frozen", "validate_model"]
