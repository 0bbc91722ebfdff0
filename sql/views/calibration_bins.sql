-- calibration_bins: per-bin sufficient statistics of every cell in both binnings, at the
--   connection's bin count (reliability diagrams: binning = 'width' or 'mass').
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × binning ×
--   non-empty bin. Ordered by cell, binning ('mass' before 'width'), bin.
-- Columns: the cell key, binning, bin, bin_lower, bin_upper, n, sum_confidence, sum_correct,
--   mean_confidence, accuracy, sum_confidence_sq, sum_confidence_correct, sum_nll_top
--   (see sql/macros/calibration_bins.sql). Filter on binning: every row is in both binnings.
-- Inputs: views stored_calibration_bins (the rows stored at commit) and calibration_bins_from_rows (the
--   rest, computed from the long table); macro calibration_bins.
-- Parameters: variable relcol_bins (M, set by relcol; default 15). Another M or one binning
--   without reconnecting: SELECT * FROM calibration_bins(bins := 10, binning := 'mass').
CREATE OR REPLACE VIEW calibration_bins AS
SELECT *
FROM (SELECT * FROM stored_calibration_bins UNION ALL BY NAME SELECT * FROM calibration_bins_from_rows)
ORDER BY study, dataset, model, corruption, severity, label, binning, bin;
