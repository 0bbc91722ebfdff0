-- mix32: the finaliser of relcol's counter-based generator (relcol/metrics/_random.py).
-- Grain: scalar.
-- Definition: two rounds of x ← xorshift16(x) · 0x45D9F3B mod 2^32, then xorshift16(x). Every
--   product is below 2^59, so BIGINT never overflows (DuckDB refuses overflow, never wraps).
-- Inputs: x, a BIGINT in [0, 2^32); macro xorshift16.
-- Parameters: none. The Polars twin is relcol.metrics._random.mix32.
CREATE OR REPLACE MACRO mix32(x) AS
    xorshift16((xorshift16((xorshift16(x) * 73244475) & 4294967295) * 73244475) & 4294967295);
