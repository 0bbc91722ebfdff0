-- calibration: accuracy, mean confidence, gap, ECE and MCE of every cell, at the connection's
--   bin count.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label).
-- Columns: the cell key, n, accuracy, mean_confidence, gap, abs_gap, ece, mce
--   (see sql/macros/calibration.sql).
-- Inputs: view predictions; macro calibration.
-- Parameters: variable relcol_bins (M, set by relcol; default 15). Another M without
--   reconnecting: SELECT * FROM calibration(bins := 10).
CREATE OR REPLACE VIEW calibration AS
SELECT
    study, dataset, model, corruption, severity, label,
    n, accuracy, mean_confidence, gap, abs_gap, ece, mce
FROM calibration('predictions', bins := getvariable('relcol_bins'));
