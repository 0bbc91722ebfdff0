"""Built-in example prediction sets, generated deterministically from a seed.

``email`` regenerates the dummy dataset of a published worked example of confidence scores
for multi-label email classification (the email example of docs/email-example.md): 200 emails, 5 labels, about 2 true
labels per email, 30 % of the (email, label) decisions flipped, and a stated confidence
drawn from N(0.8, 0.1) when the decision is right and N(0.4, 0.15) when it is wrong, clipped
to [0, 1]. The published example names the labels A–E in its analysis and spam, personal,
work, urgent and confidential in its introduction; the example uses the latter, in that
order (A = spam … E = confidential).

It adds one thing the published example describes but does not simulate: a soft ``agreement``,
the share of 5 annotators whose vote agrees with the prediction, each annotator voting the
true label with probability 0.9. It comes from its own generator, so the other columns are
exactly what they would be without it.
"""

from __future__ import annotations

import numpy as np
import polars as pl

EMAIL_LABELS = ("spam", "personal", "work", "urgent", "confidential")

#: The published example's results table, for comparison: every row, in its order, by its names.
EMAIL_PUBLISHED_TABLE = {
    "accuracy": 0.7150,
    "ece": 0.2098,
    "mce": 0.25,
    "brier": 0.0894,
    "nll": 0.3253,
    "auroc": 0.9827,
    "pr_auc": 0.85,
    "cohens_d": 3.3420,
    "point_biserial": 0.8338,
}
#: Rows the published table states as a lower bound only ("MCE 0.25+", "PR-AUC 0.85+").
EMAIL_PUBLISHED_AT_LEAST = frozenset({"mce", "pr_auc"})


def email_predictions(
    seed: int = 0,
    *,
    emails: int = 200,
    label_rate: float = 0.4,
    flip_rate: float = 0.3,
    annotators: int = 5,
    annotator_accuracy: float = 0.9,
) -> pl.DataFrame:
    """The published worked example's dummy multi-label email predictions, one row per
    email × label.

    Parameters
    ----------
    seed
        Seeds the generator; the same seed gives the same frame on any machine.
    emails
        Number of emails (samples).
    label_rate
        Probability that each label is truly present (5 × 0.4 = 2 labels per email).
    flip_rate
        Probability that a decision is flipped (wrong).
    annotators, annotator_accuracy
        The simulated annotators behind ``agreement``.

    Returns
    -------
    pl.DataFrame
        ``sample_id`` (the email), ``label`` (its name), ``y_true`` and ``y_pred`` (0/1),
        ``confidence`` (in the predicted outcome), ``agreement``: a prediction file for
        ``relcol ingest --predictions``.

    Examples
    --------
    >>> frame = email_predictions()
    >>> frame.shape, frame["label"].unique(maintain_order=True).to_list()
    ((1000, 6), ['spam', 'personal', 'work', 'urgent', 'confidential'])
    """
    rng = np.random.default_rng(np.random.SeedSequence([seed, 1]))
    shape = (emails, len(EMAIL_LABELS))
    y_true = (rng.random(shape) < label_rate).astype(np.int32)
    flipped = rng.random(shape) < flip_rate
    y_pred = np.where(flipped, 1 - y_true, y_true).astype(np.int32)
    right = rng.normal(0.8, 0.1, shape)
    wrong = rng.normal(0.4, 0.15, shape)
    confidence = np.clip(np.where(flipped, wrong, right), 0.0, 1.0)

    votes_rng = np.random.default_rng(np.random.SeedSequence([seed, 2]))
    mistaken = votes_rng.random((*shape, annotators)) >= annotator_accuracy
    votes = np.where(mistaken, 1 - y_true[..., None], y_true[..., None])
    agreement = (votes == y_pred[..., None]).mean(axis=2)

    return pl.DataFrame(
        {
            "sample_id": np.repeat(np.arange(emails, dtype=np.int64), len(EMAIL_LABELS)),
            "label": np.tile(np.array(EMAIL_LABELS), emails),
            "y_true": y_true.ravel(),
            "y_pred": y_pred.ravel(),
            "confidence": confidence.ravel(),
            "agreement": agreement.ravel(),
        }
    )
