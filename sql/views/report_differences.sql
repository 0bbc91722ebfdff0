-- report_differences: the differences table of the statistical layer (docs/statistics.md) as materialised by the
--            latest `relcol report` of each study.
-- Grain: one row per cell × contrast ('clean' or 'model') × reference × metric.
-- Inputs: variable relcol_report_differences (Parquet list set by relcol).
-- Parameters: none.
CREATE OR REPLACE VIEW report_differences AS
SELECT *
FROM read_parquet(getvariable('relcol_report_differences'), hive_partitioning = false, union_by_name = true);
