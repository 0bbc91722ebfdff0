-- poisson_weight: the paired bootstrap's weight of a test sample in a replicate (docs/statistics.md).
-- Grain: scalar.
-- Inputs: k0 … k3, BIGINT keys of ``uniform``: (stream, seed, replicate, sample_id) with
--         stream = relcol.metrics.stream_key('bootstrap:<study>') and seed the --seed offset.
-- Parameters: none.
-- Poisson(1) by the inverse CDF of the counter-based uniform u: the smallest j with
-- u <= F(j), F the Poisson(1) CDF as the DOUBLEs relcol.analysis.POISSON_CDF holds, so
-- Polars (relcol.analysis.poisson_weight), numpy (poisson_weights) and DuckDB agree.
CREATE OR REPLACE MACRO poisson_weight(k0, k1, k2, k3) AS (
    poisson_inverse(uniform(k0, k1, k2, k3))
);
