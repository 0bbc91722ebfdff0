-- classes: class names of each dataset in each study, so reports show `spam`, not `3`.
-- Grain: one row per (study, dataset, code).
-- Inputs: variable relcol_classes (Parquet list set by relcol).
-- Parameters: none.
CREATE OR REPLACE VIEW classes AS
SELECT study, dataset, code, name
FROM read_parquet(getvariable('relcol_classes'), hive_partitioning = false);
