-- uniform: a uniform in (0, 1) from four integer keys, the same in DuckDB and Polars
--   (relcol/metrics/_random.py): (hash32(k0, k1, k2, k3) + 0.5) / 2^32, never 0 or 1.
-- Grain: scalar, one draw per row and key tuple; the same keys always give the same draw.
-- Inputs: k0..k3: integers; by convention k0 is a stream constant naming the use
--   (1, 2: the ECE₀ simulation; relcol.metrics.stream_key(name) for others).
-- Parameters: none. The Polars twin is relcol.metrics.uniform.
CREATE OR REPLACE MACRO uniform(k0, k1, k2, k3) AS
    (CAST(hash32(k0, k1, k2, k3) AS DOUBLE) + 0.5) / 4294967296.0;
