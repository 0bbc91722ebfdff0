-- predictions_binned: the rows the binned views (calibration, calibration_bins) compute from:
--   those of predictions_unstored when the connection's bin count (relcol_bins) is the one the
--   stored rows were computed at (relcol_stored_bins), else every row of predictions. DuckDB
--   evaluates both variables when it plans a query and skips the branch that is false.
-- Grain and columns: those of view predictions.
-- Inputs: views predictions_unstored, predictions; variables relcol_bins, relcol_stored_bins.
CREATE OR REPLACE VIEW predictions_binned AS
SELECT * FROM predictions_unstored
WHERE getvariable('relcol_bins') = getvariable('relcol_stored_bins')
UNION ALL
SELECT * FROM predictions
WHERE getvariable('relcol_bins') <> getvariable('relcol_stored_bins');
