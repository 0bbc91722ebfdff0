-- calibration_bins_from_rows: the rows of view calibration_bins computed from the long table, for the studies
--   whose calibration_bins rows were not stored at commit or when the connection's bin count differs from the stored one (view predictions_binned).
--   What each row is: per-bin sufficient statistics of every cell in both binnings, at the
--   connection's bin count (reliability diagrams: binning = 'width' or 'mass').
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × binning ×
--   non-empty bin. Ordered by cell, binning ('mass' before 'width'), bin.
-- Columns: the cell key, binning, bin, bin_lower, bin_upper, n, sum_confidence, sum_correct,
--   mean_confidence, accuracy, sum_confidence_sq, sum_confidence_correct, sum_nll_top
--   (see sql/macros/calibration_bins.sql). Filter on binning: every row is in both binnings.
-- Inputs: view predictions_binned; macro calibration_bins.
-- Parameters: variable relcol_bins (M, set by relcol; default 15). Another M or one binning
--   without reconnecting: SELECT * FROM calibration_bins(bins := 10, binning := 'mass').
CREATE OR REPLACE VIEW calibration_bins_from_rows AS
SELECT
    study, dataset, model, corruption, severity, label, binning, bin, bin_lower, bin_upper,
    n, sum_confidence, sum_correct, mean_confidence, accuracy,
    sum_confidence_sq, sum_confidence_correct, sum_nll_top
FROM (
    SELECT * FROM calibration_bins('predictions_binned', bins := getvariable('relcol_bins'), binning := 'mass')
    UNION ALL
    SELECT * FROM calibration_bins('predictions_binned', bins := getvariable('relcol_bins'), binning := 'width')
)
ORDER BY study, dataset, model, corruption, severity, label, binning, bin;
