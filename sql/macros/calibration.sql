-- calibration(source, bins, draws): calibration and proper scores of every cell
--   (docs/metrics.md), each derived from sufficient statistics, never row by row.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label); a null label
--   (single-label rows) is one cell. Ordered by cell, nulls last.
-- Columns (BIGINT n, DOUBLE otherwise; z = correct, S/Z/Q/P a bin's Σc, Σz, Σc², Σcz):
--   n, accuracy, mean_confidence, gap = mean_confidence − accuracy, abs_gap = |gap|;
--   ece = Σₘ |Z − S| / n, its overconfident part ece_over = Σₘ max(S − Z, 0) / n and its
--   underconfident part ece_under = Σₘ max(Z − S, 0) / n (ece_over + ece_under = ece) and
--   mce = maxₘ |Z − S| / nₘ on the equal-width bins; mce_n (BIGINT)
--   = nₘ of the bin attaining mce (within 1e-12; on a tie the most rows); ace = ECE on the
--   equal-mass bins; rmsce = √(Σₘ (Z − S)²/nₘ / n); classwise_ece = mean over classes k of the
--   ECE of pₖ against 1[y = k]; ece_null = mean ECE of R simulated perfectly calibrated
--   outcomes, ece_excess = ece − ece_null, ece_pvalue = (b + 1)/(R + 1), b the number of draws
--   with ECE >= ece (within 1e-12), never 0; ece_debiased = Kumar et al.'s
--   √max(Σₘ (nₘ/n)[(accₘ − confₘ)² − accₘ(1 − accₘ)/(nₘ−1)], 0) (bins of one row add 0);
--   brier = (1/n) Σᵢ Σₖ (pᵢₖ − 1[yᵢ = k])²; brier_top = (1/n) Σ (c − z)²
--   = brier_reliability − brier_resolution + brier_uncertainty + brier_within, with
--   reliability Σₘ (Z − S)²/nₘ / n, resolution Σₘ nₘ(Z/nₘ − ā)² / n, uncertainty ā(1 − ā),
--   within Σₘ [Q − S²/nₘ − 2(P − S·Z/nₘ)] / n; nll = −(1/n) Σ ln max(p_y, 1e-15);
--   nll_top = −(1/n) Σ [z ln c̃ + (1 − z) ln(1 − c̃)], c̃ clipped to [1e-15, 1 − 1e-15].
--   classwise_ece, brier and nll are NULL for a cell with a row whose proba is NULL or empty.
-- ECE₀ simulation (relcol/metrics/_null.py has the reasoning): one outcome per distinct
--   prediction event (cell, sample_id, seed, y_pred, confidence), counted k times, k its rows.
--   Per equal-width bin m (n rows, S = Σc, e = n − Σ(k − 1) events) and draw r, a bin of
--   e <= 32 events draws Σⱼ kⱼ·[uniform(1, m, r, j)·n < S] over its events in descending order
--   of k, j = 0…e − 1; a larger bin draws S + √max(V, 0)·N, V = Σ k²c(1 − c) over its events
--   = (S − Σc²) + Σ(k² − k)·c(1 − c) over those stored more than once,
--   N = √(−2 ln u₀)·cos(2π u₁), uᵢ = uniform(2, m, r, i).
--   The draws do not depend on the cell, as in Polars, so both engines give the same numbers.
-- Inputs: source, the name of a table or view with the long table's columns
--   (default 'predictions'); macros bin_statistics, cell_rows, cell_ids, bin_index,
--   ece_from_bins, ece_over_from_bins, ece_under_from_bins, mce_from_bins, uniform. Every step works on cell ids; the keys are joined on at the end.
-- Parameters: bins (M, an integer >= 1, default 15), draws (R, default 100), named:
--   calibration(bins := 10, draws := 1000).
-- The Polars twin is relcol.metrics.calibration (the *_from_bins builders, formula for formula);
-- the view calibration calls this at the connection's bins.
CREATE OR REPLACE MACRO calibration(source := 'predictions', bins := 15, draws := 100) AS TABLE
WITH width AS (
    SELECT
        *,
        sum(sum_correct) OVER cells / sum(n) OVER cells AS cell_accuracy,
        abs(sum_correct - sum_confidence) / n AS bin_gap,
        max(abs(sum_correct - sum_confidence) / n) OVER cells AS cell_mce
    FROM bin_statistics(source, bins, 'width')
    WINDOW cells AS (PARTITION BY cell)
),
observed AS (
    SELECT
        cell,
        CAST(sum(n) AS BIGINT) AS n,  -- sum(BIGINT) is HUGEINT in DuckDB
        sum(sum_correct) / sum(n) AS accuracy,
        sum(sum_confidence) / sum(n) AS mean_confidence,
        ece_from_bins(n, sum_confidence, sum_correct) AS ece,
        ece_over_from_bins(n, sum_confidence, sum_correct) AS ece_over,
        ece_under_from_bins(n, sum_confidence, sum_correct) AS ece_under,
        mce_from_bins(n, sum_confidence, sum_correct) AS mce,
        max(n) FILTER (WHERE bin_gap >= cell_mce - 1e-12) AS mce_n,
        sum((sum_correct - sum_confidence) * (sum_correct - sum_confidence) / n) / sum(n)
            AS brier_reliability,
        sum(CASE WHEN n >= 2 THEN
            n * (((sum_correct - sum_confidence) / n) * ((sum_correct - sum_confidence) / n)
                 - (sum_correct / n) * (1 - sum_correct / n) / (n - 1))
            ELSE 0.0 END) / sum(n) AS debiased_square,
        sum(sum_confidence_sq - 2 * sum_confidence_correct + sum_correct) / sum(n) AS brier_top,
        sum(n * (sum_correct / n - cell_accuracy) * (sum_correct / n - cell_accuracy)) / sum(n)
            AS brier_resolution,
        sum(sum_confidence_sq - sum_confidence * sum_confidence / n
            - 2 * (sum_confidence_correct - sum_confidence * sum_correct / n)) / sum(n)
            AS brier_within,
        sum(sum_nll_top) / sum(n) AS nll_top
    FROM width
    GROUP BY cell
),
adaptive AS (
    SELECT cell, ece_from_bins(n, sum_confidence, sum_correct) AS ace
    FROM bin_statistics(source, bins, 'mass')
    GROUP BY cell
),
null_copies AS (
    -- the prediction events stored more than once, k their rows; every other row is an event
    SELECT cell, bin_index(confidence, bins) AS bin, confidence, k
    FROM (
        SELECT cell, CAST(confidence AS DOUBLE) AS confidence, count(*) AS k
        FROM cell_rows(source)
        GROUP BY cell, sample_id, seed, y_pred, CAST(confidence AS DOUBLE)
    )
    WHERE k > 1
),
null_bins AS (
    -- e = n − Σ(k − 1) events; V = (S − Σc²) + Σ(k² − k)·c(1 − c) over the repeated events
    SELECT
        w.cell, w.bin, w.n, w.sum_confidence,
        w.n - coalesce(r.repeated, 0) AS events,
        (w.sum_confidence - w.sum_confidence_sq) + coalesce(r.extra, 0.0) AS variance
    FROM width AS w
    LEFT JOIN (
        SELECT
            cell, bin,
            sum(k - 1) AS repeated,
            sum((k * k - k) * confidence * (1 - confidence)) AS extra
        FROM null_copies
        GROUP BY cell, bin
    ) AS r ON w.cell = r.cell AND w.bin = r.bin
),
null_noise AS (
    -- the random numbers depend on (bin, draw[, j]) only: drawn once, joined to every cell
    SELECT
        b.range AS bin, d.range AS draw,
        sqrt(ln(uniform(2, b.range, d.range, 0)) * -2.0)
            * cos(uniform(2, b.range, d.range, 1) * 6.283185307179586e0) AS normal
    FROM range(bins) AS b, range(draws) AS d
),
null_pseudo AS (
    SELECT b.range AS bin, d.range AS draw, j.range AS j, uniform(1, b.range, d.range, j.range) AS u
    FROM range(bins) AS b, range(draws) AS d, range(32) AS j
),
null_ranked AS (
    -- the repeated events of a bin take its first slots j, the most copies first; the events
    -- of one row take the rest (events with equal k are interchangeable: they share S/n)
    SELECT cell, bin, k, row_number() OVER (PARTITION BY cell, bin ORDER BY k DESC) - 1 AS j
    FROM null_copies
),
null_small AS (
    SELECT
        b.cell, b.bin, x.draw,
        any_value(b.n) AS n,
        any_value(b.sum_confidence) AS sum_confidence,
        CAST(sum(CASE WHEN x.u * b.n < b.sum_confidence THEN coalesce(e.k, 1) ELSE 0 END)
            AS DOUBLE) AS simulated
    FROM null_bins AS b
    JOIN null_pseudo AS x ON b.bin = x.bin AND x.j < b.events
    LEFT JOIN null_ranked AS e ON b.cell = e.cell AND b.bin = e.bin AND x.j = e.j
    WHERE b.events <= 32
    GROUP BY b.cell, b.bin, x.draw
),
null_large AS (
    SELECT
        b.cell, b.bin, x.draw, b.n, b.sum_confidence,
        b.sum_confidence + sqrt(greatest(b.variance, 0.0)) * x.normal AS simulated
    FROM null_bins AS b
    JOIN null_noise AS x ON b.bin = x.bin
    WHERE b.events > 32
),
null_draws AS (
    SELECT cell, draw, ece_from_bins(n, sum_confidence, simulated) AS ece
    FROM (SELECT * FROM null_small UNION ALL SELECT * FROM null_large)
    GROUP BY cell, draw
),
nulls AS (
    SELECT
        d.cell,
        avg(d.ece) AS ece_null,
        (count_if(d.ece >= o.ece - 1e-12) + 1.0) / (count(*) + 1.0) AS ece_pvalue
    FROM null_draws AS d
    JOIN observed AS o ON d.cell = o.cell
    GROUP BY d.cell
),
entries AS (
    -- grouped by the keys, not by cell id: a join would carry every vector along
    SELECT
        study, dataset, model, corruption, severity, label,
        unnest(proba) AS entry,
        unnest(range(len(proba))) AS k,
        CAST(y_true AS BIGINT) AS y
    FROM query_table(source)
    WHERE len(proba) > 0
),
per_class AS (
    -- a class's ECE from one sum per bin, Σ(1[y = k] − pₖ). A FLOAT entry (the long table's)
    -- has the exact bin max(⌈p·M⌉ − 1, 0) without bin_index's edge comparisons: p·M is exact
    -- and no FLOAT lies between k/M and its DOUBLE rounding (relcol.metrics._bins explains).
    SELECT study, dataset, model, corruption, severity, label, k,
        ece_from_bins(n, 0.0, sum_error) AS ece
    FROM (
        SELECT
            study, dataset, model, corruption, severity, label, k,
            count(*) AS n,
            sum(CASE WHEN y = k THEN 1.0 ELSE 0.0 END - CAST(entry AS DOUBLE)) AS sum_error
        FROM entries
        GROUP BY
            study, dataset, model, corruption, severity, label, k,
            CASE
                WHEN typeof(entry) = 'FLOAT' AND bins < 16777216 THEN
                    greatest(least(ceil(CAST(entry AS DOUBLE) * bins), bins), 1) - 1
                ELSE bin_index(CAST(entry AS DOUBLE), bins)
            END
    )
    GROUP BY study, dataset, model, corruption, severity, label, k
),
scores AS (
    -- per row, Σₖ pₖ² − 2p_y + 1 and −ln max(p_y, 1e-15), p_y = 0 for a label outside the vector
    SELECT
        study, dataset, model, corruption, severity, label,
        count(*) AS n_proba,
        sum(squares - 2 * p_y + 1) AS sum_brier,
        sum(-ln(greatest(p_y, 1e-15))) AS sum_nll
    FROM (
        SELECT
            study, dataset, model, corruption, severity, label,
            list_sum(list_transform(CAST(proba AS DOUBLE[]), lambda p: p * p)) AS squares,
            coalesce(CASE WHEN y_true >= 0 THEN CAST(proba[y_true + 1] AS DOUBLE) END, 0.0) AS p_y
        FROM query_table(source)
        WHERE len(proba) > 0
    )
    GROUP BY study, dataset, model, corruption, severity, label
),
classes AS (
    SELECT i.cell, s.n_proba, s.sum_brier, s.sum_nll, c.classwise_ece
    FROM scores AS s
    JOIN cell_ids(source) AS i
        ON s.study = i.study AND s.dataset = i.dataset AND s.model = i.model
        AND s.corruption = i.corruption AND s.severity = i.severity
        AND s.label IS NOT DISTINCT FROM i.label
    LEFT JOIN (
        SELECT study, dataset, model, corruption, severity, label, avg(ece) AS classwise_ece
        FROM per_class
        GROUP BY study, dataset, model, corruption, severity, label
    ) AS c
        ON s.study = c.study AND s.dataset = c.dataset AND s.model = c.model
        AND s.corruption = c.corruption AND s.severity = c.severity
        AND s.label IS NOT DISTINCT FROM c.label
)
SELECT
    k.study, k.dataset, k.model, k.corruption, k.severity, k.label,
    o.n, o.accuracy, o.mean_confidence,
    o.mean_confidence - o.accuracy AS gap,
    abs(o.mean_confidence - o.accuracy) AS abs_gap,
    o.ece, o.ece_over, o.ece_under, o.mce, o.mce_n,
    a.ace,
    sqrt(o.brier_reliability) AS rmsce,
    CASE WHEN c.n_proba = o.n THEN c.classwise_ece END AS classwise_ece,
    nu.ece_null,
    o.ece - nu.ece_null AS ece_excess,
    nu.ece_pvalue,
    sqrt(greatest(o.debiased_square, 0.0)) AS ece_debiased,
    CASE WHEN c.n_proba = o.n THEN c.sum_brier / o.n END AS brier,
    o.brier_top,
    o.brier_reliability,
    o.brier_resolution,
    o.accuracy * (1 - o.accuracy) AS brier_uncertainty,
    o.brier_within,
    CASE WHEN c.n_proba = o.n THEN c.sum_nll / o.n END AS nll,
    o.nll_top
FROM observed AS o
JOIN cell_ids(source) AS k ON o.cell = k.cell
LEFT JOIN adaptive AS a ON o.cell = a.cell
LEFT JOIN nulls AS nu ON o.cell = nu.cell
LEFT JOIN classes AS c ON o.cell = c.cell
ORDER BY o.cell;
