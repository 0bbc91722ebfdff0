-- annotations: optional per-prediction extras of ingested prediction files (DESIGN.md §4,
--   METRICS.md §9), stored beside the long table rather than in it.
-- Grain: one row per prediction that had them, keyed like the long table (study, dataset,
--   model, corruption, severity, seed, repeat, sample_id, label).
-- Columns: agreement, the share of annotators agreeing with the prediction, in [0, 1] (a soft
--   target replacing correct; NULL when the file had none); split, 'calibration' or
--   'evaluation' (the file's own recalibration split; NULL when it had none).
-- Inputs: variable relcol_annotations (Parquet list set by relcol).
-- Parameters: none.
CREATE OR REPLACE VIEW annotations AS
SELECT
    study, dataset, model, corruption, severity, seed, "repeat", sample_id, label,
    agreement, split
FROM read_parquet(getvariable('relcol_annotations'), hive_partitioning = false);
