-- calibration_bins(source, bins, binning): per-bin sufficient statistics for calibration
--   (docs/metrics.md, docs/statistics.md): every calibration number and top-label score is a function
--   of these sums per cell × bin.
-- Grain: one row per cell (study, dataset, model, corruption, severity, label) × non-empty bin
--   of one binning; a null label (single-label rows) is one cell. Ordered by cell and bin.
-- Binnings: 'width', bin_index(c, M): (m/M, (m+1)/M], bin_lower = m/M, bin_upper = (m+1)/M;
--   'mass': rows ordered by (confidence, sample_id, seed, repeat) within the cell, the row of
--   0-based rank r of n in bin ⌊r·M/n⌋; bin_lower and bin_upper are the smallest and largest
--   confidence in the bin.
-- Columns: the cell key, binning, bin (0-based BIGINT), bin_lower, bin_upper, n (BIGINT),
--   sum_confidence, sum_correct, mean_confidence, accuracy, sum_confidence_sq (Σc²),
--   sum_confidence_correct (Σc·z), sum_nll_top (Σ −[z log c̃ + (1−z) log(1−c̃)], c̃ clipped
--   to [1e-15, 1 − 1e-15]) (DOUBLE).
-- Inputs: source, the name of a table or view with the long table's columns
--   (default 'predictions'); macros bin_statistics (which computes every column), cell_ids.
-- Parameters: bins (M, an integer >= 1, default 15), binning ('width' or 'mass', default
--   'width'), named: calibration_bins(bins := 10, binning := 'mass').
-- The Polars twin is relcol.metrics.calibration_bins; the view calibration_bins holds both
-- binnings at the connection's bins.
CREATE OR REPLACE MACRO calibration_bins(source := 'predictions', bins := 15, binning := 'width') AS TABLE
SELECT
    k.study, k.dataset, k.model, k.corruption, k.severity, k.label,
    s.binning, s.bin, s.bin_lower, s.bin_upper, s.n, s.sum_confidence, s.sum_correct,
    s.mean_confidence, s.accuracy, s.sum_confidence_sq, s.sum_confidence_correct, s.sum_nll_top
FROM bin_statistics(source, bins, binning) AS s
JOIN cell_ids(source) AS k ON s.cell = k.cell
ORDER BY s.cell, s.bin;
