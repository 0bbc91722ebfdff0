-- consistency_layout(source): which rows are replicates of which stratum (docs/consistency.md); the
--   first step of every consistency macro.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × seed × repeat
--   × axis, for the axes on which the draw's stratum has τ >= 2 replicates.
-- Columns: the cell key, seed, "repeat", axis ('repeat': the replicates are the repeats of one
--   seed; 'seed': the seeds of one repeat), stratum (the seed, resp. the repeat), replicate
--   (the repeat, resp. the seed), g (BIGINT numbering the strata of both axes), tau (τ, the
--   replicates of the stratum), classes (K: 1 + the largest class code among y_true, y_clean
--   and y_pred of the cell).
-- Inputs: source, the name of a table or view with the long table's columns.
-- Parameters: none.
-- The Polars twin is relcol.metrics._consistency._Plan (its layout step).
CREATE OR REPLACE MACRO consistency_layout(source := 'predictions') AS TABLE
WITH draws AS (
    SELECT
        study, dataset, model, corruption, severity, label,
        CAST(seed AS INTEGER) AS seed,
        CAST("repeat" AS INTEGER) AS "repeat",
        max(greatest(y_true, y_clean, y_pred)) AS top
    FROM query_table(source)
    GROUP BY ALL
),
numbered AS (
    SELECT
        study, dataset, model, corruption, severity, label, seed, "repeat",
        CAST(max(top) OVER cell + 1 AS BIGINT) AS classes,
        2 * (dense_rank() OVER (ORDER BY study, dataset, model, corruption, severity, label, seed) - 1)
            AS g_repeat,
        count(*) OVER (PARTITION BY study, dataset, model, corruption, severity, label, seed)
            AS tau_repeat,
        2 * (dense_rank() OVER (ORDER BY study, dataset, model, corruption, severity, label, "repeat") - 1) + 1
            AS g_seed,
        count(*) OVER (PARTITION BY study, dataset, model, corruption, severity, label, "repeat")
            AS tau_seed
    FROM draws
    WINDOW cell AS (PARTITION BY study, dataset, model, corruption, severity, label)
)
SELECT
    study, dataset, model, corruption, severity, label, seed, "repeat",
    'repeat' AS axis, seed AS stratum, "repeat" AS replicate,
    CAST(g_repeat AS BIGINT) AS g, CAST(tau_repeat AS BIGINT) AS tau, classes
FROM numbered
WHERE tau_repeat >= 2
UNION ALL
SELECT
    study, dataset, model, corruption, severity, label, seed, "repeat",
    'seed' AS axis, "repeat" AS stratum, seed AS replicate,
    CAST(g_seed AS BIGINT) AS g, CAST(tau_seed AS BIGINT) AS tau, classes
FROM numbered
WHERE tau_seed >= 2;
