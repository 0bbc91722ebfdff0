-- Attempts to escape `relcol sql`'s sandbox, one per line: every one must be refused with one
-- line, change no byte of the warehouse and read nothing outside it (tests/test_sandbox.py).
-- Placeholders: {part} a committed part, {side} a committed side table, {sums} a checksum
-- file, {schema} a schema file, {table} a materialised table, {readme} the warehouse README,
-- {wh} the warehouse, {cwd} the working folder (holding .tmp/notes.txt), {outside} a text
-- file outside the warehouse, {outside_dir} its folder, {outside_parquet} a Parquet file there.
--
-- writes hidden inside EXPLAIN ANALYZE (which runs the statement it explains)
EXPLAIN ANALYZE COPY (SELECT 42 AS x) TO '{part}' (FORMAT parquet, USE_TMP_FILE false)
EXPLAIN ANALYZE COPY (SELECT 42 AS x) TO '{schema}' (FORMAT parquet, USE_TMP_FILE false)
EXPLAIN ANALYZE COPY (SELECT 42 AS x) TO '{table}' (FORMAT parquet, USE_TMP_FILE false)
explain analyze copy (select 42 as x) to '{part}' (format parquet, use_tmp_file false)
EXPLAIN /* a comment */ ANALYZE COPY (SELECT 1 AS x) TO '{part}' (FORMAT parquet)
EXPLAIN ANALYZE /* a comment */ COPY (SELECT 1 AS x) TO '{side}' (FORMAT parquet)
EXPLAIN (ANALYZE) COPY (SELECT 1 AS x) TO '{part}' (FORMAT parquet)
EXPLAIN (ANALYZE, FORMAT json) COPY (SELECT 1 AS x) TO '{side}' (FORMAT parquet)
EXPLAIN (FORMAT json, ANALYZE) COPY (SELECT 1 AS x) TO '{sums}' (FORMAT csv)
EXPLAIN ANALYZE COPY (SELECT 'pwn' AS x) TO '{cwd}/.tmp/pwn.sh' (FORMAT csv)
EXPLAIN ANALYZE COPY (SELECT 'pwn' AS x) TO '{outside_dir}/pwn.sh' (FORMAT csv)
EXPLAIN ANALYZE INSERT INTO predictions SELECT * FROM predictions
EXPLAIN ANALYZE CREATE TABLE t AS SELECT 1 AS x
EXPLAIN ANALYZE ATTACH '{wh}/pwn.duckdb' AS pwn
EXPLAIN COPY (SELECT 1 AS x) TO '{part}' (FORMAT parquet)
-- plain writes
COPY (SELECT 1 AS x) TO '{part}' (FORMAT parquet, USE_TMP_FILE false)
COPY (SELECT 1 AS x) TO '{sums}' (FORMAT csv)
COPY (SELECT * FROM predictions) TO '{readme}' (FORMAT csv)
COPY (SELECT 'pwn' AS x) TO '{cwd}/.tmp/pwn.sh' (FORMAT csv)
SELECT 1; COPY (SELECT 1 AS x) TO '{part}' (FORMAT parquet)
SELECT 1; EXPLAIN ANALYZE COPY (SELECT 1 AS x) TO '{part}' (FORMAT parquet)
EXPORT DATABASE '{wh}/predictions'
CREATE TABLE t AS SELECT 1 AS x
CREATE OR REPLACE VIEW predictions AS SELECT 1 AS x
CREATE OR REPLACE MACRO bin_index(x, y) AS 0
DROP VIEW predictions
ATTACH '{wh}/pwn.duckdb' AS pwn
ATTACH ':memory:' AS scratch
PREPARE p AS COPY (SELECT 1 AS x) TO '{part}' (FORMAT parquet)
EXECUTE p
SELECT * FROM query('COPY (SELECT 1 AS x) TO ''{part}'' (FORMAT parquet)')
CHECKPOINT
VACUUM
-- switching the sandbox off, extensions
SET enable_external_access = true
RESET enable_external_access
SET lock_configuration = false
SET allowed_paths = ['{outside}']
SET allowed_directories = ['/']
SET temp_directory = '{cwd}/.tmp'
SELECT set_config('enable_external_access', true)
PRAGMA enable_profiling
CALL pragma_version()
INSTALL httpfs
LOAD httpfs
FORCE INSTALL httpfs
-- reads outside the warehouse (the working folder's .tmp included)
SELECT * FROM read_text('{cwd}/.tmp/notes.txt')
SELECT * FROM read_text('{cwd}/.tmp/*')
SELECT * FROM read_text('{outside}')
SELECT * FROM read_blob('{outside}')
SELECT * FROM read_csv('{outside}')
SELECT * FROM read_csv_auto('{outside}', header = false)
SELECT * FROM sniff_csv('{outside}')
SELECT * FROM glob('{outside_dir}/*')
SELECT * FROM read_parquet('{outside_parquet}')
SELECT * FROM parquet_metadata('{outside_parquet}')
SELECT * FROM '{outside}'
SELECT * FROM read_text('{readme}')
SELECT * FROM read_json('http://127.0.0.1:9/x.json')
DESCRIBE SELECT * FROM read_text('{outside}')
SUMMARIZE SELECT * FROM read_text('{outside}')
EXPLAIN ANALYZE SELECT * FROM read_text('{outside}')
WITH x AS (SELECT * FROM read_text('{outside}')) SELECT * FROM x
