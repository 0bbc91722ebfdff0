"""The rank kernel's loop, compiled with numba: one pass over the levels instead of dozens.

In numpy the rank metrics of a (levels × groups) array take some thirty passes over it (two
running sums, their differences, four weighted sums, the threshold searches), each a full
array in memory; the bootstrap calls them on thousands of levels × replicates per cell, and
they were the largest share of ``relcol report``. Here every group walks its levels once,
keeping its running counts in registers, in Float64 whatever the input's dtype (the counts
are exact small integers in either). ``rank_rows`` does the same for one cell's rows under
many columns of weights, summing each level's counts as it goes.

``rest_totals`` and ``grid_parts`` are the exact product's steps on a block of samples of a
large test set: each row's sum of what its earlier parts leave (the grid), and the parts
themselves, in one pass over the block each, with the bits of numpy's formulas;
``add_parts`` puts the parts' products together into the product's rows;
``sparse_parts_product`` takes the whole exact product of a d mostly of zeros from its
non-zero entries (``nonzeros_by_row``).

``rows_by_cell``, ``add_tie_key`` and ``sort_cells`` sort rows per cell by a score and packed
tie-breaking columns (``cell_sorted`` in ``_sorting.py``): a counting sort by cell, then a
radix sort of each cell's keys, a few passes over memory where a multi-column sort compares
encoded rows. ``class_bin_sums`` puts every entry of the probability vectors in its cell ×
class × bin and sums its error with ``exact_sum``'s bits, where Polars exploded the vectors;
``moment_sums`` takes the effect sizes' sums per cell × outcome the same way, and
``group_sums`` any terms' sums per group (the calibration bins', the rank metrics').

Imported on first use, so importing ``relcol.metrics`` does not import numba; compiled once
per input dtype and cached beside this file.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from relcol._interrupts import held_while_compiling

#: The rows of ``rank_pass``'s output, in order.
RANK_PASS = (
    "auroc",
    "aupr_success",
    "aupr_error",
    "fpr_at_95tpr",
    "aurc",
    "risk_at_coverage",
    "coverage_at_risk",
)


#: Levels one pass over the groups takes in turn, each group's running values held in registers
#: between them: loaded and stored once per four levels rather than once per level (about 1.5×
#: faster on 1024 levels × 4004 groups, the same bits); with eight the loop no longer
#: vectorises and is 2.5× slower than with one.
LEVELS_PER_PASS = 4


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _level(right, wrong, n1, n0, coverage, risk, state):
    """One level of ``rank_pass`` for one group: its ``state`` (right under, wrong under,
    rank sum, error precision, success precision, risk sum, false positives, within, at
    coverage) after the level's ``right`` and ``wrong`` counts."""
    below_r, below_w, rank_sum, error_precision, success_precision, risk_sum, fp, within, at = state
    n = n1 + n0
    rank_sum += right * below_w + 0.5 * right * wrong
    at_or_below = below_r + right + below_w + wrong
    error_precision += wrong * ((below_w + wrong) / max(at_or_below, 1.0))
    accepted = n - below_r - below_w
    errors = n0 - below_w
    if 20.0 * below_r <= n1:
        fp = errors
    if errors <= risk * accepted and accepted > within:
        within = accepted
    safe = max(accepted, 1.0)  # 0 accepted: 0 right, 0 wrong above
    success_precision += right * ((n1 - below_r) / safe)
    level_risk = errors / safe
    risk_sum += (right + wrong) * level_risk
    if accepted >= coverage * n:
        at = level_risk
    return (
        below_r + right,
        below_w + wrong,
        rank_sum,
        error_precision,
        success_precision,
        risk_sum,
        fp,
        within,
        at,
    )


@numba.njit(cache=True, nogil=True)
def _held(running, g):
    """Group ``g``'s running values (``_level``'s state) from their arrays."""
    a, b, c, d, e, f, h, i, j = running
    return a[g], b[g], c[g], d[g], e[g], f[g], h[g], i[g], j[g]


@numba.njit(cache=True, nogil=True)
def _hold(running, g, held):
    """Store group ``g``'s running values ``held`` back into their arrays."""
    a, b, c, d, e, f, h, i, j = running
    a[g], b[g], c[g], d[g], e[g], f[g], h[g], i[g], j[g] = held


@held_while_compiling
@numba.njit(cache=True, nogil=True, error_model="numpy")
def rank_pass(right, wrong, coverage, risk):
    """``RANK_PASS`` of every column of ``right``/``wrong`` (levels × groups, levels in
    ascending order of confidence): a (7 × groups) Float64 array, NaN where undefined, and
    each column's right and total counts n₁ and n.

    Per level, with the counts strictly below it (``right_under``, ``wrong_under``):
    AUROC adds right · (wrong under + wrong / 2) (mid-ranks for ties); AUPR of errors adds
    wrong · (wrong at or below / rows at or below); the rows accepted at the level (confidence
    ≥ it) are n − right under − wrong under, of which n₀ − wrong under are wrong, giving the
    precision of success, the level's risk (added with weight right + wrong for AURC), FPR at
    95 % TPR (the errors at the last level where 20 · right under ≤ n₁), coverage at risk (the
    most rows accepted with errors ≤ risk · accepted) and risk at coverage (the risk at the
    last level accepting ≥ coverage · n). These levels form prefixes, as the counts only grow.
    Each group's arithmetic is the same, level after level, whichever pass takes the level.
    """
    levels, groups = right.shape
    n1 = np.zeros(groups)
    n0 = np.zeros(groups)
    for level in range(levels):
        for g in range(groups):
            n1[g] += right[level, g]
            n0[g] += wrong[level, g]
    running = _running(groups)
    _passes(right, wrong, n1, n0, coverage, risk, running)
    return _finish(running, n1, n0), n1, n1 + n0


@held_while_compiling
@numba.njit(cache=True, nogil=True, error_model="numpy")
def rank_rows(level, correct, sample, weights, bounds, coverage, risk):
    """``rank_pass`` of groups of rows, weighted: each column's right and wrong counts at a
    level are the sums of ``weights[sample, column]`` over the level's right and wrong rows.

    ``level`` (non-decreasing within a group), ``correct`` and ``sample`` give the rows, group
    after group (``bounds``: each group's first row, then the end), ``weights`` (samples ×
    columns) the weights. This is the product H·W of the rows' one-hot levels H with the
    weights and ``rank_pass`` on it in one loop, holding the counts of ``LEVELS_PER_PASS``
    levels at a time instead of every level's; a level with no rows is left out, which changes
    no metric. The sums are exact (integer weights in Float64), so the counts, and every value
    after them, are those ``rank_pass`` gets from the same counts laid out in an array.
    Returns ``RANK_PASS`` (7 × groups × columns), n₁ and n (groups × columns)."""
    groups, columns = len(bounds) - 1, weights.shape[1]
    out = np.empty((7, groups, columns))
    n1 = np.zeros((groups, columns))
    n = np.zeros((groups, columns))
    right = np.empty((LEVELS_PER_PASS, columns))
    wrong = np.empty((LEVELS_PER_PASS, columns))
    rows_of = np.zeros((weights.shape[0], 2), dtype=np.int64)  # a sample's wrong, right rows
    touched = np.empty(len(level), dtype=np.int64)
    for group in range(groups):
        lo, hi = bounds[group], bounds[group + 1]
        right_total = n1[group]
        wrong_total = np.zeros(columns)
        _add_totals(correct, sample, lo, hi, weights, rows_of, touched, right_total, wrong_total)
        running = _running(columns)
        i = lo
        while i < hi:
            taken = 0
            while taken < LEVELS_PER_PASS and i < hi:
                right[taken] = 0.0
                wrong[taken] = 0.0
                first = level[i]
                while i < hi and level[i] == first:
                    _add_row(right[taken] if correct[i] else wrong[taken], weights, sample[i])
                    i += 1
                taken += 1
            _passes(right[:taken], wrong[:taken], right_total, wrong_total, coverage, risk, running)
        # element by element: assigning an array to a slice (out[:, group] = ...) makes numba
        # compile its shape check's error message, string formatting that took about 3.4 of the
        # 4.5 s this function took to compile on its first call
        finished = _finish(running, right_total, wrong_total)
        for c in range(columns):
            n[group, c] = right_total[c] + wrong_total[c]
            for metric in range(7):
                out[metric, group, c] = finished[metric, c]
    return out, n1, n


@numba.njit(cache=True, nogil=True)
def _add_totals(correct, sample, lo, hi, weights, rows_of, touched, right_total, wrong_total):
    """Add the weights of rows ``lo`` … ``hi`` − 1 to ``right_total`` or ``wrong_total``,
    once per sample: each sample's row of ``weights`` times its count of right rows and of
    wrong rows (``rows_of``, zero before and after; ``touched``: scratch). The products and
    sums are whole numbers below 2⁵³, so the totals have the bits of adding the rows one by
    one, at a pass over the samples instead of the rows (a cell of three seeds × three
    repeats has nine rows per sample)."""
    found = 0
    for i in range(lo, hi):
        s = sample[i]
        if rows_of[s, 0] == 0 and rows_of[s, 1] == 0:
            touched[found] = s
            found += 1
        rows_of[s, 1 if correct[i] else 0] += 1
    for k in range(found):
        s = touched[k]
        row = weights[s]
        for counts, times in ((wrong_total, rows_of[s, 0]), (right_total, rows_of[s, 1])):
            if times:
                for b in range(len(counts)):
                    counts[b] += times * np.float64(row[b])
        rows_of[s, 0] = 0
        rows_of[s, 1] = 0


@numba.njit(cache=True, nogil=True)
def _add_row(counts, weights, sample):
    """Add row ``sample`` of ``weights`` to ``counts``."""
    row = weights[sample]
    for b in range(len(counts)):
        counts[b] += row[b]


@numba.njit(cache=True, nogil=True)
def _running(groups):
    """Every group's running values, one array each in the order of ``_level``'s state."""
    return (
        np.zeros(groups),
        np.zeros(groups),
        np.zeros(groups),
        np.zeros(groups),
        np.zeros(groups),
        np.zeros(groups),
        np.zeros(groups),
        np.zeros(groups),
        np.full(groups, np.nan),
    )


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _passes(right, wrong, n1, n0, coverage, risk, running):
    """``running`` after the levels of ``right``/``wrong`` (levels × groups): whole passes of
    ``LEVELS_PER_PASS`` levels (a constant count: the loop unrolls and vectorises), then the
    levels left over one pass each."""
    levels, groups = right.shape
    whole = levels - levels % LEVELS_PER_PASS
    for start in range(0, whole, LEVELS_PER_PASS):
        for g in range(groups):
            held = _held(running, g)
            for level in range(start, start + LEVELS_PER_PASS):
                r, w = np.float64(right[level, g]), np.float64(wrong[level, g])
                held = _level(r, w, n1[g], n0[g], coverage, risk, held)
            _hold(running, g, held)
    for level in range(whole, levels):
        for g in range(groups):
            r, w = np.float64(right[level, g]), np.float64(wrong[level, g])
            _hold(running, g, _level(r, w, n1[g], n0[g], coverage, risk, _held(running, g)))


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _finish(running, n1, n0):
    """``RANK_PASS`` (7 × groups) from the running values after the last level."""
    _, _, rank_sum, error_precision, success_precision, risk_sum, fp, within, at = running
    groups = len(n1)
    out = np.full((7, groups), np.nan)
    for g in range(groups):
        n = n1[g] + n0[g]
        if n1[g] > 0 and n0[g] > 0:
            out[0, g] = rank_sum[g] / (n1[g] * n0[g])
            out[3, g] = fp[g] / n0[g]
        if n1[g] > 0:
            out[1, g] = success_precision[g] / n1[g]
        if n0[g] > 0:
            out[2, g] = error_precision[g] / n0[g]
        if n > 0:
            out[4, g] = risk_sum[g] / n
            out[5, g] = at[g]
            out[6, g] = within[g] / n
    return out


@held_while_compiling
@numba.njit(cache=True, nogil=True)
def add_parts(products, later, rows, out):
    """The exact product's rows from its parts' products: ``out[rows[j]]`` = ``products[j]``
    + 0.0, then + ``products[later[k, j]]`` for each later part k of row j (``later`` ≥ 0),
    in order of k. The additions of numpy's ``np.add(first, 0.0)`` and ``+=`` of each part
    (+ 0.0 turns a −0.0 into 0.0), so the same bits, in one pass over each row of ``out``
    where numpy made one per part and a copy of the rows to place them. Float32 products
    (the whole-number rows') are widened to Float64 before the + 0.0, as numpy's
    ``np.add(products, 0.0, dtype=np.float64)`` does."""
    for j in range(len(rows)):
        o = rows[j]
        for c in range(out.shape[1]):
            out[o, c] = products[j, c] + 0.0
        for k in range(later.shape[0]):
            r = later[k, j]
            if r >= 0:
                for c in range(out.shape[1]):
                    out[o, c] += products[r, c]


@held_while_compiling
@numba.njit(cache=True, nogil=True, error_model="numpy")
def rest_totals(d, rows, steps, out):
    """``out[r] += Σⱼ |rest of d[rows[r], j]|`` for the exact product's grid: the rest of a
    term after each earlier part p, ``x − round(x / steps[r, p])·steps[r, p]`` in order, as
    numpy's ``_on_grid`` takes it (the same bits), added over the samples j in order. One
    pass over a block of d (rows × samples), along its memory in either layout, where numpy
    took one per operation and per part and a copy of the rows: 0.32, 0.54 and 0.03 ms
    against 0.53, 1.27 and 0.05 ms for the three parts of a block of 132 rows × 4 190
    samples."""
    parts = steps.shape[1]
    if d.strides[0] < d.strides[1]:  # a sample's terms adjacent: every row under each sample
        for j in range(d.shape[1]):
            for r in range(len(rows)):
                x = d[rows[r], j]
                for p in range(parts):
                    x = x - np.round(x / steps[r, p]) * steps[r, p]
                out[r] += abs(x)
    else:
        for r in range(len(rows)):
            total = out[r]
            for j in range(d.shape[1]):
                x = d[rows[r], j]
                for p in range(parts):
                    x = x - np.round(x / steps[r, p]) * steps[r, p]
                total += abs(x)
            out[r] = total


@held_while_compiling
@numba.njit(cache=True, nogil=True, error_model="numpy")
def grid_parts(d, rows, places, steps, out):
    """The exact product's parts of a block of d: for each of ``rows`` (rows of d) r and each
    part p, while ``places[r, p]`` ≥ 0, ``out[places[r, p]] = round(x / steps[r, p])·steps[r, p]``
    with x what is left of the row after its earlier parts, as numpy's ``_on_grid`` and
    subtraction take them (the same bits). One pass over the block, where numpy took one per
    operation and per part, a copy of the rows and a stack of the parts."""
    for r in range(len(rows)):
        for j in range(d.shape[1]):
            x = d[rows[r], j]
            for p in range(places.shape[1]):
                if places[r, p] < 0:
                    break
                part = np.round(x / steps[r, p]) * steps[r, p]
                out[places[r, p], j] = part
                x = x - part


@held_while_compiling
@numba.njit(cache=True, nogil=True)
def nonzeros_by_row(dt):
    """The non-zero entries of d (rows × samples) from its transpose ``dt`` (samples × rows,
    C-contiguous: the bootstrap's D itself), row after row of d, each row's in the order of its
    samples: ``(starts, samples, values)``, row r's being ``starts[r] : starts[r + 1]``. Two
    passes along ``dt``'s memory."""
    samples, rows = dt.shape
    starts = np.zeros(rows + 1, np.int64)
    for j in range(samples):
        for r in range(rows):
            if dt[j, r] != 0.0:
                starts[r + 1] += 1
    for r in range(rows):
        starts[r + 1] += starts[r]
    sample = np.empty(starts[rows], np.int64)
    value = np.empty(starts[rows])
    place = np.empty(rows, np.int64)
    for r in range(rows):
        place[r] = starts[r]
    for j in range(samples):
        for r in range(rows):
            x = dt[j, r]
            if x != 0.0:
                sample[place[r]] = j
                value[place[r]] = x
                place[r] += 1
    return starts, sample, value


@held_while_compiling
@numba.njit(cache=True, nogil=True, error_model="numpy")
def sparse_parts_product(starts, sample, value, w, w_max, parts, out):
    """``exact_product`` of a d mostly of zeros (its non-zero entries, ``nonzeros_by_row``)
    with w (samples × columns, any dtype of non-negative integers) into ``out`` (rows ×
    columns), with the bits of the GEMMs: each row's parts on the same grid (``_step`` of
    w_max·Σ|rest|, the row's samples added in order; a zero entry adds nothing), each part's
    product exact in any order, and the parts added as ``add_parts`` adds them (the first +
    0.0, then each later one). A part's product walks the row's entries four at a time, each
    a row of w, so the work is the entries' count times w's columns, where a GEMM's is every
    entry's."""
    rows, columns = len(starts) - 1, w.shape[1]
    widest = 0
    for r in range(rows):
        widest = max(widest, starts[r + 1] - starts[r])
    rest = np.empty(widest)
    part = np.empty(widest)
    acc = np.empty(columns)
    for r in range(rows):
        lo, n = starts[r], starts[r + 1] - starts[r]
        for k in range(n):
            rest[k] = value[lo + k]
        for p in range(parts):
            total = 0.0
            for k in range(n):
                total += abs(rest[k])
            if p > 0 and total == 0.0:
                break
            _, e = math.frexp(w_max * total)  # ``_step``: 2^(e − 52) for 2^e > w_max·Σ|row|
            step = math.ldexp(1.0, max(e - 52, -1074))
            for k in range(n):
                x = rest[k]
                part[k] = np.rint(x / step) * step  # numpy's round: half to even
                rest[k] = x - part[k]
            for c in range(columns):
                acc[c] = 0.0
            k = 0
            while k + 4 <= n:
                v0, v1, v2, v3 = part[k], part[k + 1], part[k + 2], part[k + 3]
                w0, w1 = w[sample[lo + k]], w[sample[lo + k + 1]]
                w2, w3 = w[sample[lo + k + 2]], w[sample[lo + k + 3]]
                for c in range(columns):
                    acc[c] += (v0 * np.float64(w0[c]) + v1 * np.float64(w1[c])) + (
                        v2 * np.float64(w2[c]) + v3 * np.float64(w3[c])
                    )
                k += 4
            while k < n:
                v0, w0 = part[k], w[sample[lo + k]]
                for c in range(columns):
                    acc[c] += v0 * np.float64(w0[c])
                k += 1
            if p == 0:
                for c in range(columns):
                    out[r, c] = acc[c] + 0.0
            else:
                for c in range(columns):
                    out[r, c] += acc[c]


#: The sign bit of a Float64's bits (and the top bit of an order key).
_SIGN = np.uint64(1 << 63)
_BYTE = np.uint64(255)


@held_while_compiling
@numba.njit(cache=True, nogil=True)
def rows_by_cell(cell, n_cells):
    """``(starts, rows)``: the row numbers of each cell id in ``0 .. n_cells − 1``, in input
    order, cell after cell (a counting sort, two passes): cell g's rows are
    ``rows[starts[g] : starts[g + 1]]``."""
    starts = np.zeros(n_cells + 1, np.int64)
    for i in range(len(cell)):
        starts[cell[i] + 1] += 1
    for g in range(n_cells):
        starts[g + 1] += starts[g]
    place = starts[:-1].copy()
    rows = np.empty(len(cell), np.int64)
    for i in range(len(cell)):
        g = cell[i]
        rows[place[g]] = i
        place[g] += 1
    return starts, rows


@held_while_compiling
@numba.njit(cache=True, nogil=True)
def add_tie_key(values, low, high, shift, descending, key):
    """``key |= (values − low) << shift`` (``high − values`` when ``descending``): one
    tie-breaking column's bits in a packed key, taken modulo 2⁶⁴ so that any integer column
    whose range fits the bits given it is placed exactly."""
    lo, hi, s = np.uint64(low), np.uint64(high), np.uint64(shift)
    for i in range(len(values)):
        v = np.uint64(values[i])
        key[i] |= ((hi - v) if descending else (v - lo)) << s


@held_while_compiling
@numba.njit(cache=True, nogil=True)
def sort_cells(score_bits, ties, starts, first, last, descending, rows):
    """Sorts each cell's rows in place (``rows[starts[g] : starts[g + 1]]`` for the cells
    ``first .. last − 1``) by the score, then the packed tie key ``ties``, both ascending or
    both ``descending``, rows equal in both kept in their order.

    ``score_bits`` are the Float64 scores' bits (finite, or ±inf). A score's order key is its
    bits with the sign bit set when positive and every bit flipped when negative, so that the
    keys' order as integers is the floats'; −0.0 counts as 0.0. Each cell is then sorted by a
    least-significant-digit radix sort of the two keys' bytes (tie key first), skipping any
    byte every row of the cell shares: scores in [0, 1] share their top byte, and small ties
    most of theirs."""
    size = 0
    for g in range(first, last):
        size = max(size, starts[g + 1] - starts[g])
    high, low, places = (
        np.empty(size, np.uint64),
        np.empty(size, np.uint64),
        np.empty(size, np.int64),
    )
    high_to, low_to, places_to = np.empty_like(high), np.empty_like(low), np.empty_like(places)
    counts = np.empty((16, 256), np.int64)
    flip = ~np.uint64(0) if descending else np.uint64(0)
    for g in range(first, last):
        a, m = starts[g], starts[g + 1] - starts[g]
        if m < 2:
            continue
        counts[:] = 0
        for j in range(m):
            r = rows[a + j]
            bits = score_bits[r]
            if bits == _SIGN:  # −0.0
                bits = np.uint64(0)
            bits = ~bits if bits & _SIGN else bits | _SIGN
            high[j], low[j], places[j] = bits ^ flip, ties[r], r
        for j in range(m):
            for d in range(8):
                counts[d, (low[j] >> np.uint64(8 * d)) & _BYTE] += 1
                counts[8 + d, (high[j] >> np.uint64(8 * d)) & _BYTE] += 1
        h, lw, p, h_to, lw_to, p_to = high, low, places, high_to, low_to, places_to
        for digit in range(16):
            shared = False
            for v in range(256):
                if counts[digit, v] != 0:
                    shared = counts[digit, v] == m
                    break
            if shared:
                continue
            place = np.empty(256, np.int64)
            total = 0
            for v in range(256):
                place[v] = total
                total += counts[digit, v]
            shift = np.uint64(8 * (digit % 8))
            words = lw if digit < 8 else h
            for j in range(m):
                v = (words[j] >> shift) & _BYTE
                k = place[v]
                place[v] = k + 1
                h_to[k], lw_to[k], p_to[k] = h[j], lw[j], p[j]
            h, lw, p, h_to, lw_to, p_to = h_to, lw_to, p_to, h, lw, p
        # element by element, as in rank_rows: the slice assignment's error message took
        # about 2.4 of the 3.3 s this function took to compile
        for j in range(m):
            rows[a + j] = p[j]


_TWO_64 = 2.0**64
_TWO_32 = 2.0**32


@numba.njit(cache=True, nogil=True)
def _add_fixed(value, sums, row, at):
    """Adds ``value``, an integer-valued Float64, to the exact integer held as
    ``sums[row, at]``·2³² + ``sums[row + 1, at]``: its multiple of 2³² and the rest in
    [0, 2³²), each added as a 64-bit integer."""
    whole = np.floor(value / _TWO_32)
    sums[row, at] += np.int64(whole)
    sums[row + 1, at] += np.int64(value - whole * _TWO_32)


@numba.njit(cache=True, nogil=True)
def _add_fixed_parts(x, sums, row, at):
    """Adds ``exact_sum``'s two fixed-point parts of ``x``, h = round(x·2⁶⁴) and
    l = round((x·2⁶⁴ − h)·2⁶⁴), to the exact integers of ``sums`` rows ``row`` .. ``row + 3``
    (``_add_fixed``)."""
    scaled = x * _TWO_64
    high = np.round(scaled)
    _add_fixed(high, sums, row, at)
    _add_fixed(np.round((scaled - high) * _TWO_64), sums, row + 2, at)


@held_while_compiling
@numba.njit(cache=True, nogil=True, error_model="numpy")
def class_bin_sums(offsets, values, label, cell, bins, classes, first, last, sums):
    """The classwise ECE's sums over rows ``first .. last − 1``: each entry pₖ of a row's
    vector (``values[offsets[i] : offsets[i + 1]]``, Float32) falls in the group (cell, k,
    bin), at (cell·classes + k)·bins + bin, with bin = ⌈pₖ·M⌉ − 1 and ⌈pₖ·M⌉ clipped to
    [1, M] as ``_bin_index_of_float32`` takes it. It adds 1 to the group's count
    (``sums[4]``) and e = 1[label = k] − pₖ to its sum, which is ``exact_sum``'s to the bit:
    h = round(e·2⁶⁴) and l = round((e·2⁶⁴ − h)·2⁶⁴) are summed as exact integers, two 64-bit
    words each (``sums[0:2]`` for h, ``sums[2:4]`` for l), in any order. Exact while a
    group has fewer than 2³¹ entries of |e| ≤ 1."""
    for i in range(first, last):
        y = label[i]
        base = cell[i] * classes
        for j in range(offsets[i], offsets[i + 1]):
            k = j - offsets[i]
            p = np.float64(values[j])
            upper = min(max(np.ceil(p * bins), 1.0), np.float64(bins))
            at = (base + k) * bins + np.int64(upper) - 1
            _add_fixed_parts((1.0 if y == k else 0.0) - p, sums, 0, at)
            sums[4, at] += 1


@held_while_compiling
@numba.njit(cache=True, nogil=True, error_model="numpy")
def moment_sums(cell, z, c, low, high, count, sums):
    """The effect sizes' sums per group g = 2·cell + z (z 0 or 1): ``count``, ``low`` and
    ``high`` (the scores' minimum and maximum; ``low`` starts at +inf, ``high`` at −inf), and
    the fixed-point parts of c, d, d², a, a² (``sums`` rows 4t .. 4t + 3 for the t-th) with
    d = c − the group's minimum and a = c − the cell's, as exact integers
    (``_add_fixed_parts``): the sums of ``exact_sum``'s parts, to the bit, in two passes over
    the rows."""
    for i in range(len(c)):
        g = 2 * np.int64(cell[i]) + np.int64(z[i])
        count[g] += 1
        low[g] = min(low[g], c[i])
        high[g] = max(high[g], c[i])
    for i in range(len(c)):
        g = 2 * np.int64(cell[i]) + np.int64(z[i])
        x = c[i]
        d = x - low[g]
        a = x - min(low[g - g % 2], low[g - g % 2 + 1])
        _add_fixed_parts(x, sums, 0, g)
        _add_fixed_parts(d, sums, 4, g)
        _add_fixed_parts(d * d, sums, 8, g)
        _add_fixed_parts(a, sums, 12, g)
        _add_fixed_parts(a * a, sums, 16, g)


@held_while_compiling
@numba.njit(cache=True, nogil=True, error_model="numpy")
def group_sums(group, terms, count, sums):
    """``exact_sum`` of each of ``terms`` (a tuple of Float64 arrays) per group: row i adds 1 to
    ``count[group[i]]`` and the fixed-point parts of its t-th term to the exact integers of
    ``sums`` rows 4t .. 4t + 3 (``_add_fixed_parts``), so any split of the rows, summed, gives
    the same integers. Returns the largest |term| (inf when one is NaN or infinite): the
    integers are exact while it times a group's rows stays below 2³⁰."""
    largest = 0.0
    for i in range(len(group)):
        g = group[i]
        count[g] += 1
        for t in range(len(terms)):
            x = terms[t][i]
            size = abs(x)
            if size > largest:
                largest = size
            elif not size <= largest:  # NaN
                largest = np.inf
            _add_fixed_parts(x, sums, 4 * t, g)
    return largest
