-- The binned calibration errors of the SQL side, aggregates over the per-bin rows of a group.
-- ece_from_bins: the one ECE formula, Σₘ |Σz − Σc| / Σₘ nₘ = Σₘ (nₘ/n)·|accₘ − confₘ|
--   (docs/statistics.md).
-- Grain: aggregate; use it in a GROUP BY over per-bin rows (calibration_bins, per-class bins,
--   simulated bins of the ECE₀ draws).
-- Inputs: n, sum_confidence, sum_correct: a bin's row count and sums (the outcome sum may be
--   simulated). Parameters: none. The Polars twin is relcol.metrics.ece_from_bins.
CREATE OR REPLACE MACRO ece_from_bins(n, sum_confidence, sum_correct) AS
    sum(abs(sum_correct - sum_confidence)) / sum(n);
-- ece_over_from_bins, ece_under_from_bins: the two parts of the ECE over the same bins,
--   Σₘ max(Σc − Σz, 0) / Σₘ nₘ (the bins whose confidence exceeds their accuracy) and
--   Σₘ max(Σz − Σc, 0) / Σₘ nₘ (the others); their sum is ece_from_bins. The Polars twins are
--   relcol.metrics.ece_over_from_bins and ece_under_from_bins.
CREATE OR REPLACE MACRO ece_over_from_bins(n, sum_confidence, sum_correct) AS
    sum(greatest(sum_confidence - sum_correct, 0.0)) / sum(n);
CREATE OR REPLACE MACRO ece_under_from_bins(n, sum_confidence, sum_correct) AS
    sum(greatest(sum_correct - sum_confidence, 0.0)) / sum(n);
-- mce_from_bins: maxₘ |Σz − Σc| / nₘ = maxₘ |accₘ − confₘ| over the bins of a group. The Polars
--   twin is relcol.metrics.mce_from_bins.
CREATE OR REPLACE MACRO mce_from_bins(n, sum_confidence, sum_correct) AS
    max(abs(sum_correct - sum_confidence) / n);
