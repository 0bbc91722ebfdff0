-- proba_margin: p₍₁₎ − p₍₂₎, the two largest probabilities of a vector (p₍₂₎ = 0 for one
--   class) (docs/metrics.md).
-- Grain: scalar. NULL for a NULL or empty vector.
-- Inputs: proba, a list of probabilities (FLOAT[] in the long table, widened to DOUBLE).
-- Parameters: none. The Polars twin is relcol.metrics.proba_margin.
CREATE OR REPLACE MACRO proba_margin(proba) AS
    list_sort(CAST(proba AS DOUBLE[]), 'DESC')[1]
    - coalesce(list_sort(CAST(proba AS DOUBLE[]), 'DESC')[2], 0.0);
