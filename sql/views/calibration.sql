-- calibration: calibration and proper scores of every cell, at the connection's bin count.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label).
-- Columns: the cell key, n, accuracy, mean_confidence, gap, abs_gap, ece, ece_over,
--   ece_under, mce, mce_n, ace, rmsce, classwise_ece, ece_null, ece_excess, ece_pvalue, ece_debiased, brier, brier_top,
--   brier_reliability, brier_resolution, brier_uncertainty, brier_within, nll, nll_top
--   (see sql/macros/calibration.sql).
-- Inputs: views stored_calibration (the rows stored at commit) and calibration_from_rows (the
--   rest, computed from the long table); macro calibration.
-- Parameters: variable relcol_bins (M, set by relcol; default 15); R = 100 ECE₀ draws. Other
--   values without reconnecting: SELECT * FROM calibration(bins := 10, draws := 1000).
CREATE OR REPLACE VIEW calibration AS
SELECT *
FROM (SELECT * FROM stored_calibration UNION ALL BY NAME SELECT * FROM calibration_from_rows)
ORDER BY study, dataset, model, corruption, severity, label;
