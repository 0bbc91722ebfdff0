-- runs: one row per committed ingest.
-- Grain: one row per run_id.
-- Columns: spec is the study's TOML text (or a description of the ingested file), spec_hash
--          its SHA-256, versions a JSON object of package versions.
-- Inputs: variable relcol_runs (Parquet list set by relcol).
-- Parameters: none.
CREATE OR REPLACE VIEW runs AS
SELECT run_id, study, kind, spec, spec_hash, versions, started_at, finished_at, "rows", cells, status
FROM read_parquet(getvariable('relcol_runs'), hive_partitioning = false);
