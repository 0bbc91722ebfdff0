-- annotations: optional per-prediction extras of ingested prediction files (docs/warehouse.md,
--   docs/multilabel.md), stored beside the long table rather than in it.
-- Grain: one row per prediction that had them, keyed like the long table (study, dataset,
--   model, corruption, severity, seed, repeat, sample_id, label).
-- Columns: agreement, the share of annotators agreeing with the prediction, in [0, 1] (a soft
--   target replacing correct; NULL when the file had none); split, 'calibration' or
--   'evaluation' (the file's own recalibration split; NULL when it had none); period, the
--   collection period of the prediction (text, e.g. '2026-W03'; NULL when the file had none).
-- Files written before a column existed lack it: union_by_name reads them with NULL there,
--   and the empty typed row below keeps every column defined when no file has it yet.
-- Inputs: variable relcol_annotations (Parquet list set by relcol).
-- Parameters: none.
CREATE OR REPLACE VIEW annotations AS
SELECT
    study, dataset, model, corruption, severity, seed, "repeat", sample_id, label,
    agreement, split, period
FROM (
    SELECT * FROM read_parquet(
        getvariable('relcol_annotations'), hive_partitioning = false, union_by_name = true
    )
    UNION ALL BY NAME
    SELECT CAST(NULL AS DOUBLE) AS agreement, CAST(NULL AS VARCHAR) AS split,
        CAST(NULL AS VARCHAR) AS period
    WHERE false
);
