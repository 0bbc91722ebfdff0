-- bin_index: the 0-based equal-width calibration bin of a confidence (docs/metrics.md).
-- Grain: scalar, one value per row it is applied to.
-- Convention: bin(c) = max(⌈c·M⌉ − 1, 0), so bin m is (m/M, (m+1)/M], the first bin is
--   [0, 1/M] and c = 1.0 lands in the last bin. A confidence equal to an edge m/M (the DOUBLE
--   that calibration_bins reports as bin_lower) always lands in the lower bin: ⌈c·M⌉ in floating
--   point can be one too high at an edge (fl(7/25)·25 = 7.000000000000001), so the guess
--   g = ⌈c·M⌉ (clamped to 1..M) is checked against the two edges (g−1)/M and g/M around it.
--   The Polars twin is relcol.metrics.bin_index; both give exactly the same bins.
-- Inputs: confidence, a DOUBLE in [0, 1].
-- Parameters: bins (M, an integer >= 1, default 15).
CREATE OR REPLACE MACRO bin_index(confidence, bins := 15) AS
    CASE
        WHEN bins >= 1 AND bins <= 1000 AND bins = floor(bins) THEN
            -- g, written out three times: a scalar macro has no local names (no measurable cost)
            greatest(
                least(greatest(CAST(ceil(confidence * bins) AS BIGINT), 1), bins) - 2
                + CAST(confidence > (least(greatest(CAST(ceil(confidence * bins) AS BIGINT), 1), bins) - 1) / bins AS BIGINT)
                + CAST(confidence > least(greatest(CAST(ceil(confidence * bins) AS BIGINT), 1), bins) / bins AS BIGINT),
                0)
        ELSE error('bins must be an int in [1, 1000]. Got ' || coalesce(CAST(bins AS VARCHAR), 'NULL') || '.')
    END;
