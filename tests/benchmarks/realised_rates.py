"""Realised corruption rate against nominal d, on the built-in datasets.

    python tests/benchmarks/realised_rates.py [--repeats 5] [--datasets digits breast_cancer wine]

Each dataset is split as a study splits it (test_size 0.3, split_seed 0); every operator
configuration below corrupts the test set at d = 0.1 … 0.5, ``--repeats`` draws each, with
the training statistics (and labels) of the clean training rows. Prints, per dataset and
operator, the mean realised rate at each d and the largest |mean realised − d|. For
``gaussian_noise`` the realised rate is the realised noise scale in training SDs; for
``ampute`` the share of rows made incomplete; for ``structural_bias`` the base's rate
within the group. Not a test: tests/test_corruption.py and tests/test_corruption_study.py
hold the properties; this shows the sizes.
"""

from __future__ import annotations

import argparse

import numpy as np

from relcol.corruption import TrainingStats, get_operator
from relcol.data import load_dataset
from relcol.data._datasets import DatasetSpec
from relcol.study._runner import rng_for

SEVERITIES = (0.1, 0.2, 0.3, 0.4, 0.5)
CONFIGS: dict[str, tuple[str, dict]] = {
    "mcar": ("mcar", {}),
    "mcar cols 0-4, rows 50%": ("mcar", {"columns": [0, 1, 2, 3, 4], "fraction": 0.5}),
    "mar (auto driver)": ("mar", {}),
    "mnar (quantile)": ("mnar", {}),
    "mnar (logistic)": ("mnar", {"variant": "logistic"}),
    "ampute (one pattern per feature)": ("ampute", {}),
    "ampute (MAR tail + MNAR mix)": (
        "ampute",
        {
            "patterns": [
                {"incomplete": [0, 1, 2], "freq": 0.6, "shape": "tail"},
                {"incomplete": [3], "freq": 0.4, "mechanism": "MNAR"},
            ]
        },
    ),
    "structural_bias (mnar, class 0)": ("structural_bias", {}),
    "gaussian_noise": ("gaussian_noise", {}),
    "label_noise": ("label_noise", {}),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--datasets", nargs="+", default=["digits", "breast_cancer", "wine"])
    args = parser.parse_args()
    print(f"{'dataset':<14}{'operator':<34}" + "".join(f"{d:>8}" for d in SEVERITIES) + "  max|Δ|")
    for name in args.datasets:
        ds = load_dataset(DatasetSpec(name=name), test_size=0.3, split_seed=0)
        stats = TrainingStats.fit(ds.X_train, ds.n_classes, labels=ds.y_train)
        for label, (op_name, given) in CONFIGS.items():
            op = get_operator(op_name)
            params = op.validate(given, n_features=ds.X_test.shape[1], n_classes=ds.n_classes)
            means = [
                np.mean(
                    [
                        op(ds.X_test, ds.y_test, d, rng_for("bench", name, label, d, r), stats,
                           **params).realised_rate
                        for r in range(args.repeats)
                    ]
                )
                for d in SEVERITIES
            ]  # fmt: skip
            worst = max(abs(m - d) for m, d in zip(means, SEVERITIES, strict=True))
            print(f"{name:<14}{label:<34}" + "".join(f"{m:8.3f}" for m in means) + f"{worst:8.3f}")


if __name__ == "__main__":
    main()
