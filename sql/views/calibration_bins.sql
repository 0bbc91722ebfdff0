-- calibration_bins: per-bin sufficient statistics of every cell, at the connection's bin count.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × non-empty bin.
-- Columns: the cell key, bin, bin_lower, bin_upper, n, sum_confidence, sum_correct,
--   mean_confidence, accuracy (see sql/macros/calibration_bins.sql).
-- Inputs: view predictions; macro calibration_bins.
-- Parameters: variable relcol_bins (M, set by relcol; default 15). Another M without
--   reconnecting: SELECT * FROM calibration_bins(bins := 10).
CREATE OR REPLACE VIEW calibration_bins AS
SELECT
    study, dataset, model, corruption, severity, label, bin, bin_lower, bin_upper,
    n, sum_confidence, sum_correct, mean_confidence, accuracy
FROM calibration_bins('predictions', bins := getvariable('relcol_bins'));
