"""𝒟: datasets with one fixed held-out test set per study (docs/development.md)."""

from __future__ import annotations

from relcol.data._datasets import BUILTIN, Dataset, DatasetSpec, load_dataset, validate_dataset
from relcol.data._examples import (
    EMAIL_LABELS,
    EMAIL_PUBLISHED_AT_LEAST,
    EMAIL_PUBLISHED_TABLE,
    email_predictions,
)
from relcol.data._predictions import (
    MAX_CODES,
    ROLES,
    Predictions,
    merge_predictions,
    read_predictions,
    spec_text,
)

__all__ = [
    "BUILTIN",
    "EMAIL_LABELS",
    "EMAIL_PUBLISHED_AT_LEAST",
    "EMAIL_PUBLISHED_TABLE",
    "MAX_CODES",
    "ROLES",
    "Dataset",
    "DatasetSpec",
    "Predictions",
    "email_predictions",
    "load_dataset",
    "merge_predictions",
    "read_predictions",
    "spec_text",
    "validate_dataset",
]
