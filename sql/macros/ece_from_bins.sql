-- ece_from_bins: the one ECE formula of the SQL side, an aggregate over the bins of a group:
--   Σₘ |Σz − Σc| / Σₘ nₘ = Σₘ (nₘ/n)·|accₘ − confₘ| (METRICS.md §2).
-- Grain: aggregate; use it in a GROUP BY over per-bin rows (calibration_bins, per-class bins,
--   simulated bins of the ECE₀ draws).
-- Inputs: n, sum_confidence, sum_correct: a bin's row count and sums (the outcome sum may be
--   simulated). Parameters: none. The Polars twin is relcol.metrics.ece_from_bins.
CREATE OR REPLACE MACRO ece_from_bins(n, sum_confidence, sum_correct) AS
    sum(abs(sum_correct - sum_confidence)) / sum(n);
