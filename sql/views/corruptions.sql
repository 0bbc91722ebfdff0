-- corruptions: what each corruption draw actually did (docs/study.md).
-- Grain: one row per (study, dataset, corruption, severity, repeat).
-- Columns: realised_rate is the share of eligible entries the operator hit (the quantity d
--          sets); changed_share the share of entries whose value actually changed; params JSON.
-- Inputs: variable relcol_corruptions (Parquet list set by relcol).
-- Parameters: none.
CREATE OR REPLACE VIEW corruptions AS
SELECT study, dataset, corruption, operator, severity, "repeat", realised_rate, changed_share, params
FROM read_parquet(getvariable('relcol_corruptions'), hive_partitioning = false);
