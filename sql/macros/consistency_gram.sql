-- consistency_gram(units, tally, layout): every replicate pair's error Gram entry and prediction
--   contingency table, and the pair's metrics (docs/consistency.md).
-- Grain: one row per stratum g × replicate pair i < j.
-- How: a constant sample (one class predicted by all τ replicates, all right or all wrong) adds
--   the same to every pair, so it is counted once per class (CTE constant). Only the varying
--   samples' rows are joined to themselves on (g, sample_id), giving the (ŷᵢ, ŷⱼ) cells of each
--   pair (CTE spread): O(n_varying·τ²) rows flow from the join into the aggregate, never stored.
-- Columns: g, replicate_i, replicate_j, n, wrong_i, wrong_j, both_wrong, agree (BIGINT),
--   chance_agreement = Σ_c m_ic·m_jc / n², phi2 = Σ_ab N_ab² / (m_ia·m_jb) − 1 (DOUBLE),
--   classes_i, classes_j (classes predicted, BIGINT), then ec_l, ec_g, ec_acc, ec_corr, pa,
--   pa_kappa, pa_v, kappa_error (DOUBLE) with the conventions of docs/consistency.md: ec_l = 1 for
--   two empty error sets; ec_corr NULL when either error vector is constant; kappa_error = 1
--   when the error vectors are equal; pa_kappa = 1 for identical predictions; pa_v = 1 for
--   identical predictions and NULL when they differ and either predicts one class.
-- Inputs: units, tally and layout, names of tables, views or CTEs holding consistency_units,
--   consistency_tally and consistency_layout of the same source.
-- Parameters: none.
-- The Polars twin is relcol.metrics._consistency._Plan.pairs (and the *_from_pairs builders).
CREATE OR REPLACE MACRO consistency_gram(units := 'consistency_units_', tally := 'consistency_tally_', layout := 'consistency_layout_') AS TABLE
WITH replicates AS (
    SELECT g, replicate FROM query_table(layout)
),
pairs AS (
    SELECT r.g, r.replicate AS i, s.replicate AS j
    FROM replicates AS r JOIN replicates AS s ON r.g = s.g AND r.replicate < s.replicate
),
constant AS (
    SELECT g, predicted AS a, count(*) AS n, count_if(wrong > 0) AS wrong_both
    FROM query_table(tally)
    WHERE constant
    GROUP BY g, predicted
),
varying AS (
    SELECT u.g, u.replicate, u.sample_id, u.y_pred, u.wrong
    FROM query_table(units) AS u
    SEMI JOIN (SELECT g, sample_id FROM query_table(tally) WHERE NOT constant) AS v
        ON u.g = v.g AND u.sample_id = v.sample_id
),
spread AS (
    SELECT
        x.g, x.replicate AS i, y.replicate AS j, x.y_pred AS a, y.y_pred AS b,
        count(*) AS n, count_if(x.wrong AND y.wrong) AS wrong_both
    FROM varying AS x
    JOIN varying AS y ON x.g = y.g AND x.sample_id = y.sample_id AND x.replicate < y.replicate
    GROUP BY x.g, x.replicate, y.replicate, x.y_pred, y.y_pred
),
cells AS (
    SELECT g, i, j, a, b, sum(n) AS n, sum(wrong_both) AS wrong_both
    FROM (
        SELECT g, i, j, a, b, n, wrong_both FROM spread
        UNION ALL
        SELECT p.g, p.i, p.j, c.a, c.a, c.n, c.wrong_both FROM pairs AS p JOIN constant AS c USING (g)
    )
    GROUP BY g, i, j, a, b
),
margins AS (  -- class counts m_ic and errors of each replicate
    SELECT g, i, c, sum(m) AS m, sum(w) AS w
    FROM (
        SELECT g, replicate AS i, y_pred AS c, count(*) AS m, count_if(wrong) AS w
        FROM varying GROUP BY g, replicate, y_pred
        UNION ALL
        SELECT r.g, r.replicate, c.a, c.n, c.wrong_both FROM replicates AS r JOIN constant AS c USING (g)
    )
    GROUP BY g, i, c
),
per_replicate AS (
    SELECT g, i, CAST(sum(w) AS BIGINT) AS wrong, CAST(count_if(m > 0) AS BIGINT) AS classes
    FROM margins GROUP BY g, i
),
chance AS (
    SELECT x.g, x.i, y.i AS j, sum(CAST(x.m AS DOUBLE) * y.m) AS mm
    FROM margins AS x JOIN margins AS y ON x.g = y.g AND x.c = y.c AND x.i < y.i
    GROUP BY x.g, x.i, y.i
),
tables AS (
    SELECT
        c.g, c.i, c.j,
        CAST(sum(c.n) AS BIGINT) AS n,
        CAST(sum(c.wrong_both) AS BIGINT) AS both_wrong,
        CAST(sum(CASE WHEN c.a = c.b THEN c.n ELSE 0 END) AS BIGINT) AS agree,
        sum(CAST(c.n AS DOUBLE) * c.n / (CAST(x.m AS DOUBLE) * y.m)) AS chi
    FROM cells AS c
    JOIN margins AS x ON c.g = x.g AND c.i = x.i AND c.a = x.c
    JOIN margins AS y ON c.g = y.g AND c.j = y.i AND c.b = y.c
    GROUP BY c.g, c.i, c.j
),
stats AS (
    SELECT
        p.g, p.i AS replicate_i, p.j AS replicate_j, t.n,
        x.wrong AS wrong_i, y.wrong AS wrong_j, t.both_wrong, t.agree,
        coalesce(h.mm, 0.0) / (CAST(t.n AS DOUBLE) * t.n) AS chance_agreement,
        t.chi - 1 AS phi2,
        x.classes AS classes_i, y.classes AS classes_j,
        CAST(x.wrong AS DOUBLE) AS wi, CAST(y.wrong AS DOUBLE) AS wj,
        CAST(t.n AS DOUBLE) AS nn,
        x.wrong + y.wrong - 2 * t.both_wrong AS differ
    FROM pairs AS p
    JOIN tables AS t ON p.g = t.g AND p.i = t.i AND p.j = t.j
    LEFT JOIN chance AS h ON p.g = h.g AND p.i = h.i AND p.j = h.j
    JOIN per_replicate AS x ON p.g = x.g AND p.i = x.i
    JOIN per_replicate AS y ON p.g = y.g AND p.j = y.i
)
SELECT
    g, replicate_i, replicate_j, n, wrong_i, wrong_j, both_wrong, agree,
    chance_agreement, phi2, classes_i, classes_j,
    CASE WHEN wrong_i + wrong_j - both_wrong = 0 THEN 1.0
        ELSE both_wrong / (wi + wj - both_wrong) END AS ec_l,
    both_wrong / nn AS ec_g,
    1 - differ / nn AS ec_acc,
    CASE WHEN wi * (nn - wi) > 0 AND wj * (nn - wj) > 0
        THEN (nn * both_wrong - wi * wj) / sqrt(wi * (nn - wi) * (wj * (nn - wj))) END AS ec_corr,
    agree / nn AS pa,
    CASE WHEN agree = n THEN 1.0
        ELSE (agree / nn - chance_agreement) / (1 - chance_agreement) END AS pa_kappa,
    CASE WHEN agree = n THEN 1.0
        WHEN least(classes_i, classes_j) > 1
        THEN sqrt(greatest(phi2, 0.0) / (least(classes_i, classes_j) - 1)) END AS pa_v,
    CASE WHEN differ = 0 THEN 1.0
        ELSE ((1 - differ / nn) - ((1 - wi / nn) * (1 - wj / nn) + (wi / nn) * (wj / nn)))
            / (1 - ((1 - wi / nn) * (1 - wj / nn) + (wi / nn) * (wj / nn))) END AS kappa_error
FROM stats;
