-- report_calibration: the calibration table as materialised by the latest `relcol report` of
--                     each study (the bins and engine it was computed with are columns).
-- Grain: one row per cell (study, dataset, model, corruption, severity, label).
-- Inputs: variable relcol_report_calibration (Parquet list set by relcol).
-- Parameters: none.
CREATE OR REPLACE VIEW report_calibration AS
SELECT *
FROM read_parquet(getvariable('relcol_report_calibration'), hive_partitioning = false, union_by_name = true);
