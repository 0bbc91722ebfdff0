"""𝒟: datasets with one fixed held-out test set per study (DESIGN.md §2–§3)."""

from __future__ import annotations

from relcol.data._datasets import BUILTIN, Dataset, DatasetSpec, load_dataset

__all__ = ["BUILTIN", "Dataset", "DatasetSpec", "load_dataset"]
