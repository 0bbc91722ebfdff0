-- predictions: the long table (docs/warehouse.md), every committed ingest of the warehouse.
-- Grain: one row per (study, dataset, model, corruption, severity, seed, repeat, sample_id, label).
-- Inputs: variable relcol_predictions, the list of committed Parquet parts (set by relcol; a
--         zero-row schema file keeps it non-empty in an empty warehouse).
-- Parameters: none.
CREATE OR REPLACE VIEW predictions AS
SELECT
    study, dataset, model, corruption, severity, seed, "repeat", sample_id, label,
    y_true, y_clean, y_pred, confidence, correct, proba, run_id
FROM read_parquet(getvariable('relcol_predictions'), hive_partitioning = false);
