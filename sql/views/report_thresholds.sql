-- report_thresholds: the thresholds table of the statistical layer (docs/statistics.md) as materialised by the
--            latest `relcol report` of each study.
-- Grain: one row per curve (study, dataset, model, corruption, label).
-- Inputs: variable relcol_report_thresholds (Parquet list set by relcol).
-- Parameters: none.
CREATE OR REPLACE VIEW report_thresholds AS
SELECT *
FROM read_parquet(getvariable('relcol_report_thresholds'), hive_partitioning = false, union_by_name = true);
