"""Confidence sources derived from an LLM's log-probabilities, and from several runs of it.

A prediction file may carry, instead of (or beside) a stated confidence, what an LLM API
returns (the roles, in ``LLM_ROLES``):

- ``label_logprobs``: single-label, the log-probability of every class (a list column in
  class order, or one ``logp_<class>`` column per class);
- ``answer_logprob``: log P(answer), the summed log-probability of the answer's tokens;
- ``token_logprobs``: the log-probability of each token of the answer (a list column);
- ``logprobs``: single-label, a chat-completion ``logprobs`` object
  ``{"content": [{"token", "logprob", "top_logprobs": [{"token", "logprob"}]}]}`` (or its
  ``content`` list), as a nested JSON value or JSON text.

Each becomes named scores (``DERIVED``), and each score one confidence source
``<model>:<score>``, mapped into [0, 1] by the stated monotone map. Only ``loglik`` maps to
a probability (exp(LL) = P(answer)); the other maps keep the score's order, so its
discrimination (AUROC, AURC …) is the score's own, but its calibration metrics mean nothing
until it is recalibrated (``relcol recalibrate``). ``SCORE_KINDS`` records which is which.

``ensemble_rows`` turns several runs of one system (the ``seed`` column) into three more
sources per source: the mean probability of the ensemble's prediction, 1 − 4·variance of
the runs' probabilities, and the share of runs voting for the prediction.

Every value is checked first; a log-probability that is positive, NaN or infinite, an
empty token list or a class missing from ``top_logprobs`` is one ``InputError``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from relcol.errors import InputError
from relcol.store import KEY

#: The roles an LLM's raw output can play, with what each holds.
LLM_ROLES: dict[str, str] = {
    "label_logprobs": "single-label: log-probability of every class, a list in class order "
    "(or logp_<class> columns)",
    "answer_logprob": "log P(answer): the summed log-probability of y_pred's tokens, <= 0",
    "answer_tokens": "the answer's number of tokens T >= 1 (with answer_logprob: loglik_norm)",
    "token_logprobs": "the log-probability of each token of the answer, a list of numbers <= 0",
    "logprobs": "single-label: a chat-completion logprobs object "
    "{content: [{token, logprob, top_logprobs: [{token, logprob}]}]}",
}
LOGPROB_PREFIX = "logp_"


@dataclass(frozen=True)
class Derived:
    """One derived score: what it is, how it maps into [0, 1], and whether that is a
    probability (calibration metrics apply as is) or only an ordering (recalibrate first)."""

    formula: str
    mapping: str
    probability: bool


#: Every score derived from log-probabilities, by name (the source is ``<model>:<name>``).
DERIVED: dict[str, Derived] = {
    "loglik": Derived(
        "LL = sum over the answer's tokens of log p_t (a label's log-probability)",
        "c = exp(LL) = P(answer)",
        True,
    ),
    "loglik_norm": Derived(
        "LL / T, T the number of tokens",
        "c = exp(LL / T), the geometric mean of the token probabilities",
        False,
    ),
    "mean_token_prob": Derived("(1/T) sum of exp(log p_t)", "c = the mean itself", False),
    "min_token_prob": Derived("min over t of exp(log p_t)", "c = the minimum itself", False),
    "margin": Derived(
        "m = log p(y_pred) - max over the other classes of log p(k) (top-1 - top-2 when y_pred "
        "is the arg max)",
        "c = 1 / (1 + exp(-m)) = p(y_pred) / (p(y_pred) + p(runner-up))",
        False,
    ),
    "entropy": Derived(
        "H = -sum q_k log q_k, q = the class probabilities renormalised over the K classes",
        "c = 1 - H / log K (1: all mass on one class, 0: uniform)",
        False,
    ),
}
#: Sources added per source by ``ensemble_rows``.
ENSEMBLE: dict[str, Derived] = {
    "ensemble": Derived(
        "p_bar = (1/M) sum over runs of p_m(y_pred | x), y_pred the arg max of the mean",
        "c = p_bar",
        True,
    ),
    "ensemble_var": Derived(
        "Var = (1/M) sum over runs of (p_m(y_pred | x) - p_bar)^2",
        "c = 1 - 4 Var (a probability's variance is at most 1/4)",
        False,
    ),
    "vote": Derived(
        "the share of the M runs whose prediction is y_pred", "c = the share itself", False
    ),
}
_SCORE_ORDER = tuple(DERIVED)


def score_kind(entry: Derived) -> str:
    return "probability" if entry.probability else "score"


# -- reading log-probabilities ----------------------------------------------------------------


def logprob_lists(reader, role: str, col: str) -> pl.Series:
    """A list column of log-probabilities (JSON text in a CSV), checked: no null or empty
    list, every element a finite number <= 0."""
    s = reader.frame.get_column(col)
    if s.dtype == pl.String:
        s = _decode(reader, role, col, s, pl.List(pl.Float64))
    if isinstance(s.dtype, pl.Array):
        s = s.cast(pl.List(s.dtype.inner))
    if not isinstance(s.dtype, pl.List) or not (s.dtype.inner.is_numeric()):
        raise InputError(
            f"{reader.name(role, col)}: expected a list of log-probabilities per row (or its "
            f"JSON text, e.g. [-0.01, -2.3]); found type {s.dtype}"
        )
    s = s.cast(pl.List(pl.Float64))
    reader.fail(role, col, s.is_null(), "have no list of log-probabilities")
    reader.fail(role, col, s.list.len() == 0, "hold an empty list; expected one log-prob a token")
    check_logprobs(reader, role, col, s.explode(), s.list.len())
    return s


def check_logprobs(
    reader, role: str, col: str, values: pl.Series, lengths=None, *, rows=None, within=""
) -> None:
    """Refuse missing, non-finite and positive log-probabilities. ``values`` are one per
    row, or exploded from lists of ``lengths`` per row, or belong to the file rows ``rows``."""
    if rows is None:
        rows = reader.row if lengths is None else reader.row.repeat_by(lengths).explode()
    frame = pl.DataFrame({"row": rows, "v": values.cast(pl.Float64)})
    expected = "; expected finite log-probabilities <= 0 (natural log)"
    for mask, what in (
        (pl.col("v").is_null() | pl.col("v").is_nan(), "a missing or NaN log-probability"),
        (pl.col("v").is_infinite(), "an infinite log-probability"),
        (pl.col("v") > 0, "a positive log-probability (a probability above 1)"),
    ):
        bad = frame.filter(mask).get_column("row").unique()
        if bad.len():
            reader.fail(
                role, col, reader.row.is_in(bad.implode()), f"hold {what}{within}{expected}"
            )


def _decode(reader, role: str, col: str, s: pl.Series, dtype: pl.DataType) -> pl.Series:
    try:
        return s.str.json_decode(dtype)
    except Exception:  # polars raises several types for text that is not this JSON shape
        for value, row in zip(s.to_list(), reader.row.to_list(), strict=True):
            try:
                pl.Series([value]).str.json_decode(dtype)
            except Exception:
                shown = value if value is None or len(value) < 60 else value[:57] + "..."
                raise InputError(
                    f"{reader.name(role, col)}: row {row} is not JSON of the expected shape "
                    f"({dtype}); found {shown!r}"
                ) from None
        raise


# -- scores -----------------------------------------------------------------------------------


def token_scores(lists: pl.Series) -> dict[str, np.ndarray]:
    """loglik, loglik_norm, mean_token_prob and min_token_prob of each row's token list,
    already mapped into [0, 1]."""
    frame = pl.DataFrame({"t": lists}).select(
        total=pl.col("t").list.sum(),
        n=pl.col("t").list.len().cast(pl.Float64),
        mean=pl.col("t").list.eval(pl.element().exp()).list.mean(),
        low=pl.col("t").list.min(),
    )
    total, n = frame["total"].to_numpy(), frame["n"].to_numpy()
    return {
        "loglik": np.exp(total),
        "loglik_norm": np.exp(total / n),
        "mean_token_prob": frame["mean"].to_numpy(),
        "min_token_prob": np.exp(frame["low"].to_numpy()),
    }


def label_scores(logp: np.ndarray, y_pred: np.ndarray) -> dict[str, np.ndarray]:
    """loglik, margin and entropy of the class log-probabilities ``logp`` (n × K, K >= 2)
    for the predicted codes ``y_pred``, mapped into [0, 1]."""
    # SciPy is imported here: a file without log-probabilities is read without it
    from scipy.special import expit, logsumexp

    n, k = logp.shape
    rows = np.arange(n)
    chosen = logp[rows, y_pred]
    others = logp.copy()
    others[rows, y_pred] = -np.inf
    margin = chosen - others.max(axis=1)
    q = np.exp(logp - logsumexp(logp, axis=1, keepdims=True))
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(q > 0, q * np.log(q), 0.0)
    entropy = -terms.sum(axis=1)
    return {
        "loglik": np.exp(chosen),
        "margin": expit(margin),
        # the clip only removes rounding (H = log K can come out a few ulp above it)
        "entropy": np.clip(1.0 - entropy / np.log(k), 0.0, 1.0),
    }


# -- the pre-pass -----------------------------------------------------------------------------


@dataclass
class LLMInput:
    """What ``derive`` adds to the file: score columns, maybe y_pred, and the record."""

    frame: pl.DataFrame
    scores: list[tuple[str, str]]  # (score name, new column)
    y_pred: str | None  # a derived y_pred column, when the file had none
    classes: list[str] | None  # the class list the log-probabilities imply
    spec: dict


def llm_roles(columns: dict[str, str], logvector: list) -> list[str]:
    return [r for r in LLM_ROLES if r in columns] + (["logp_<class>"] if logvector else [])


def derive(
    reader,
    columns: dict[str, str],
    logvector: list[tuple[str, str]],
    declared: list[str] | None,
    multilabel: bool,
) -> LLMInput:
    """Derive every score the file's LLM columns allow, as new ``confidence`` columns.

    ``columns`` are the plain roles (role -> file column); ``logvector`` the
    ``logp_<class>`` columns as (class name, column).
    """
    frame, where = reader.frame, reader.where
    given = llm_roles(columns, logvector)
    distributions = [r for r in given if r in ("label_logprobs", "logp_<class>", "logprobs")]
    if multilabel and distributions:
        raise InputError(
            f"{where}: {distributions[0]} gives a distribution over classes, which is for "
            "single-label files; multi-label rows take answer_logprob or token_logprobs with y_pred"
        )
    if len(distributions) > 1:
        raise InputError(
            f"{where}: both {distributions[0]} and {distributions[1]} give the class "
            "distribution; give one"
        )
    sequences = [r for r in given if r in ("answer_logprob", "token_logprobs", "logprobs")]
    if len(sequences) > 1:
        raise InputError(
            f"{where}: both {sequences[0]} and {sequences[1]} give the answer's log-likelihood; "
            "give one"
        )
    y_true = frame.get_column(columns["y_true"]) if "y_true" in columns else None
    textual = y_true is not None and y_true.dtype == pl.String
    scores: dict[str, np.ndarray] = {}
    made_from: dict[str, str] = {}
    classes = declared
    y_pred_col = None
    y_pred_values = None
    spec: dict = {}

    if "token_logprobs" in columns:
        lists = logprob_lists(reader, "token_logprobs", columns["token_logprobs"])
        for name, values in token_scores(lists).items():
            scores[name], made_from[name] = values, columns["token_logprobs"]
    if "answer_logprob" in columns:
        col = columns["answer_logprob"]
        values = reader.numbers("answer_logprob", col)
        check_logprobs(reader, "answer_logprob", col, values)
        scores["loglik"], made_from["loglik"] = np.exp(values.to_numpy()), col
        if "answer_tokens" in columns:
            count = reader.integers("answer_tokens", columns["answer_tokens"], (1, 2**31 - 1))
            scores["loglik_norm"] = np.exp(values.to_numpy() / count.to_numpy())
            made_from["loglik_norm"] = col
    elif "answer_tokens" in columns:
        raise InputError(
            f"{where}: answer_tokens ({columns['answer_tokens']!r}) counts the tokens of "
            "answer_logprob, which the file does not give"
        )
    logp = None
    if logvector or "label_logprobs" in columns:
        logp, classes = _label_matrix(reader, columns, logvector, declared, textual)
    if "logprobs" in columns:
        col = columns["logprobs"]
        answer, lists, logp, classes, spec = _chat(reader, col, declared, y_true, textual)
        for name, values in token_scores(lists).items():
            scores[name], made_from[name] = values, col
        y_pred_values = answer
        if "y_pred" in columns:
            stated = reader.labels("y_pred", columns["y_pred"])
            if stated.dtype != answer.dtype:
                stated = stated.cast(answer.dtype, strict=False)
            reader.fail(
                "y_pred",
                columns["y_pred"],
                stated != answer,
                f"differ from the answer in {col!r} (its tokens joined); expected the same label",
            )
    if logp is not None:
        col = columns.get("label_logprobs") or columns.get("logprobs") or "logp_<class>"
        from scipy.special import logsumexp

        sums = np.exp(logsumexp(logp, axis=1))
        reader.fail_subject(
            f"{where}: class log-probabilities ({col})",
            pl.Series(sums > 1 + reader.tolerance),
            f"have probabilities summing above 1 (up to {sums.max():.6g}; expected at most "
            f"1 + {reader.tolerance:g}: one answer's log-probabilities over exclusive classes)",
        )
        if "y_pred" in columns:
            codes = _codes(reader, columns["y_pred"], classes, textual)
        elif y_pred_values is not None:
            codes = _codes_of(
                reader, col, y_pred_values, classes, textual, "answer: the tokens joined"
            )
        else:
            codes = logp.argmax(axis=1)
            y_pred_values = (
                pl.Series([classes[c] for c in codes], dtype=pl.String)
                if textual
                else pl.Series(codes, dtype=pl.Int64)
            )
        for name, values in label_scores(logp, codes).items():
            if name == "loglik" and "loglik" in scores:
                continue  # the answer's tokens give P(answer); the label's is its first token
            scores[name], made_from[name] = values, col
    new = {}
    if y_pred_values is not None and "y_pred" not in columns:
        y_pred_col = _fresh(
            frame,
            f"{columns['logprobs']}.answer" if "logprobs" in columns else f"{col}.arg_max",
        )
        new[y_pred_col] = y_pred_values
    score_cols = []
    for name in _SCORE_ORDER:
        if name in scores:
            col = _fresh(frame, f"{made_from[name]}->{name}")
            new[col] = pl.Series(scores[name], dtype=pl.Float64)
            score_cols.append((name, col))
    spec = {
        "roles": given,
        **spec,
        "scores": {
            name: {
                "from": made_from[name],
                "formula": DERIVED[name].formula,
                "mapping": DERIVED[name].mapping,
                "kind": score_kind(DERIVED[name]),
            }
            for name, _ in score_cols
        },
    }
    return LLMInput(
        frame=frame.with_columns(**new),
        scores=score_cols,
        y_pred=y_pred_col,
        classes=classes,
        spec=spec,
    )


def _fresh(frame: pl.DataFrame, name: str) -> str:
    if name in frame.columns:
        raise InputError(f"column name {name!r} is reserved for a derived score; rename it")
    return name


def _label_matrix(reader, columns, logvector, declared, textual):
    """The n × K class log-probabilities and the class names, in code order."""
    if logvector:
        names = [name for name, _ in logvector]
        if declared:
            if set(declared) != set(names):
                raise InputError(
                    f"{reader.where}: the classes given ({', '.join(declared)}) differ from "
                    f"the log-probability columns' ({', '.join(names)})"
                )
            order = dict(logvector)
            logvector = [(name, order[name]) for name in declared]
        elif not textual and all(name.isdigit() for name in names):
            logvector = sorted(logvector, key=lambda item: int(item[0]))
            if [int(name) for name, _ in logvector] != list(range(len(logvector))):
                raise InputError(
                    f"{reader.where}: log-probability columns "
                    f"{', '.join(c for _, c in logvector)} must be numbered 0 … K−1 to match "
                    "integer class codes"
                )
        series = []
        for name, col in logvector:
            s = reader.numbers(f"{name} log-probability", col)
            check_logprobs(reader, f"{name} log-probability", col, s)
            series.append(s.to_numpy())
        matrix, names = np.column_stack(series), [name for name, _ in logvector]
    else:
        col = columns["label_logprobs"]
        lists = logprob_lists(reader, "label_logprobs", col)
        lengths = lists.list.len()
        k = int(lengths.mode().sort()[-1])
        reader.fail(
            "label_logprobs", col, lengths != k, f"hold lists of another length than the usual {k}"
        )
        matrix = lists.explode().to_numpy().reshape(-1, k)
        if declared is None:
            if textual:
                raise InputError(
                    f"{reader.name('label_logprobs', col)}: the lists do not name their classes "
                    "and y_true holds class names; declare them in list order with --classes"
                )
            names = [str(i) for i in range(k)]
        elif len(declared) != k:
            raise InputError(
                f"{reader.name('label_logprobs', col)}: lists hold {k} log-probabilities but "
                f"{len(declared)} classes were declared"
            )
        else:
            names = declared
    if matrix.shape[1] < 2:
        raise InputError(f"{reader.where}: class log-probabilities need at least two classes")
    return matrix, names


def _codes(reader, col: str, classes: list[str], textual: bool) -> np.ndarray:
    s = reader.labels("y_pred", col)
    return _codes_of(reader, col, s, classes, textual, "y_pred")


def _codes_of(reader, col, values: pl.Series, classes, textual, role) -> np.ndarray:
    if values.dtype == pl.String:
        lookup = {name: i for i, name in enumerate(classes)}
        codes = values.replace_strict(lookup, default=None, return_dtype=pl.Int64)
    else:
        codes = values.cast(pl.Int64)
        codes = (
            codes.to_frame("v")
            .select(pl.when((pl.col("v") >= 0) & (pl.col("v") < len(classes))).then(pl.col("v")))
            .to_series()
        )
    shown = ", ".join(classes[:10]) + (" …" if len(classes) > 10 else "")
    reader.fail(
        role,
        col,
        codes.is_null(),
        f"name labels outside the classes of the log-probabilities ({shown}), e.g. "
        f"{values.filter(codes.is_null())[0] if codes.is_null().any() else ''!r}",
    )
    return codes.to_numpy()


#: The chat-completion shape, as Polars reads it.
_TOP = pl.Struct({"token": pl.String, "logprob": pl.Float64})
_CONTENT = pl.List(
    pl.Struct({"token": pl.String, "logprob": pl.Float64, "top_logprobs": pl.List(_TOP)})
)


def _chat(reader, col: str, declared, y_true: pl.Series | None, textual: bool):
    """Answer text, token log-prob lists, class log-probs at the first token (or None)."""
    role = "logprobs"
    s = reader.frame.get_column(col)
    if s.dtype == pl.String:
        first = s.drop_nulls().str.strip_chars().str.slice(0, 1)
        shape = pl.Struct({"content": _CONTENT}) if (first == "{").all() else _CONTENT
        s = _decode(reader, role, col, s, shape)
    if isinstance(s.dtype, pl.Struct):
        fields = [f.name for f in s.dtype.fields]
        if "content" not in fields:
            raise InputError(
                f"{reader.name(role, col)}: expected a logprobs object with a 'content' list; "
                f"found fields {', '.join(fields)}"
            )
        s = s.struct.field("content")
    if not isinstance(s.dtype, pl.List) or not isinstance(s.dtype.inner, pl.Struct):
        raise InputError(
            f"{reader.name(role, col)}: expected a chat-completion logprobs object "
            f"{{content: [{{token, logprob, top_logprobs}}]}}; found type {s.dtype}"
        )
    inner = [f.name for f in s.dtype.inner.fields]
    missing = [f for f in ("token", "logprob") if f not in inner]
    if missing:
        raise InputError(
            f"{reader.name(role, col)}: content entries have no {' or '.join(missing)} field; "
            f"found {', '.join(inner)}"
        )
    reader.fail(role, col, s.is_null(), "have no logprobs object (null)")
    reader.fail(role, col, s.list.len() == 0, "hold an empty content list; expected the tokens")
    tokens = pl.DataFrame({"row": reader.row, "t": s}).explode("t").unnest("t")
    reader.fail(
        role,
        col,
        reader.row.is_in(tokens.filter(pl.col("token").is_null())["row"].implode()),
        "hold a content entry without a token",
    )
    check_logprobs(reader, role, col, tokens["logprob"], s.list.len())
    per_row = tokens.group_by("row", maintain_order=True).agg(
        answer=pl.col("token").str.join("").str.strip_chars(), lp=pl.col("logprob")
    )
    answer = per_row["answer"]
    if not textual:
        as_int = answer.cast(pl.Int64, strict=False)
        reader.fail(
            role,
            col,
            as_int.is_null(),
            "hold answers that are not class codes (y_true holds integers); e.g. "
            f"{answer.filter(as_int.is_null())[0] if as_int.is_null().any() else ''!r}",
        )
        answer = as_int
    lists = per_row["lp"].cast(pl.List(pl.Float64))
    spec = {"answer": "the content tokens joined, surrounding white space removed"}
    if "top_logprobs" not in inner:
        spec["label_distribution"] = "none: the content entries have no top_logprobs"
        return answer, lists, None, declared, spec
    top = (
        pl.DataFrame({"row": reader.row, "top": s.list.first().struct.field("top_logprobs")})
        .explode("top")
        .unnest("top")
        .filter(pl.col("token").is_not_null() | pl.col("logprob").is_not_null())
    )
    if top.is_empty():
        spec["label_distribution"] = "none: top_logprobs is empty in every row"
        return answer, lists, None, declared, spec
    check_logprobs(reader, role, col, top["logprob"], rows=top["row"], within=" in top_logprobs")
    if declared is not None:
        classes = declared
    elif textual:
        classes = sorted(y_true.drop_nulls().unique().to_list())
    else:
        classes = [str(i) for i in range(int(y_true.max()) + 1)]
    # a class's log-probability: log of the summed probabilities of its tokens (log-sum-exp)
    lp, peak = pl.col("logprob"), pl.col("logprob").max()
    found = (
        top.with_columns(label=pl.col("token").str.strip_chars())
        .filter(pl.col("label").is_in(classes))
        .group_by("row", "label")
        .agg(value=peak + (lp - peak).exp().sum().log())
        .with_columns(code=pl.col("label").replace_strict(classes, list(range(len(classes)))))
    )
    matrix = np.full((reader.frame.height, len(classes)), np.nan)
    # file rows are numbered 1 … n in order, so row r is position r − 1
    matrix[found["row"].to_numpy().astype(np.int64) - 1, found["code"].to_numpy()] = found[
        "value"
    ].to_numpy()
    lacking = np.isnan(matrix)
    if lacking.any():
        first_row = int(np.flatnonzero(lacking.any(axis=1))[0])
        absent = [classes[j] for j in np.flatnonzero(lacking[first_row])]
        reader.fail(
            role,
            col,
            pl.Series(lacking.any(axis=1)),
            f"hold first-token top_logprobs without every class (row {reader.row[first_row]} "
            f"lacks {', '.join(map(repr, absent[:5]))}); margin and "
            "entropy need every class there: request more top_logprobs, declare only the "
            "classes (--classes), or give label_logprobs",
        )
    spec["label_distribution"] = (
        "the first content token's top_logprobs; a class's log-probability is the log of the "
        "summed probabilities of the tokens that read as its name once white space is removed"
    )
    return answer, lists, matrix, classes, spec


# -- ensembles --------------------------------------------------------------------------------

#: A run is one seed; the runs of one prediction share every other key column.
_GROUP = ("dataset", "model", "corruption", "severity", "repeat", "sample_id", "label")


def ensemble_rows(
    where: str,
    rows: pl.DataFrame,
    annotations: pl.DataFrame | None,
    multilabel: bool,
    kinds: dict[str, str],
    classes: int,
) -> tuple[pl.DataFrame, pl.DataFrame | None, dict[str, str]]:
    """Add ``<source>:ensemble``, ``:ensemble_var`` and ``:vote`` rows for every source whose
    predictions come from several runs (seeds); the new sources and their kinds.

    p_m(k | x) is run m's probability of class k: its probability vector when it has one; in
    a binary task (multi-label rows, or two classes) c for its prediction and 1 − c for the
    other; with more classes and no vector, c for its prediction and 0 for the others, a
    lower bound (the run's remaining mass is spread over classes it did not name). The
    ensemble predicts the arg max of the mean p_bar (lowest code on ties; multi-label:
    present when p_bar >= 0.5). An annotation (agreement, split) is carried from a run that
    predicted the same label; when none did, the agreement is null (it was given for another
    prediction).
    """
    runs = rows.get_column("seed").n_unique()
    if runs < 2:
        raise InputError(
            f"{where}: an ensemble needs several runs of each system, numbered in the seed "
            f"column; found {runs} seed"
        )
    group = list(_GROUP)
    shape = rows.group_by(group).agg(
        runs=pl.len(), truths=pl.col("y_true").n_unique(), row=pl.col("__relcol_row").min()
    )
    m = int(shape["runs"].max())
    short = shape.filter(pl.col("runs") != m).sort("row")
    if short.height:
        first = short.row(0, named=True)
        raise InputError(
            f"{where}: an ensemble needs every prediction in every run: sample_id "
            f"{first['sample_id']} of {first['model']!r} (first at row {first['row']}) has "
            f"{first['runs']} runs, others {m}; {short.height:,} predictions are short"
        )
    split = shape.filter(pl.col("truths") > 1).sort("row")
    if split.height:
        raise InputError(
            f"{where}: the runs of one prediction must share y_true: sample_id "
            f"{split['sample_id'][0]} of {split['model'][0]!r} (first at row {split['row'][0]}) "
            "has several"
        )
    ordered = rows.sort([*group, "seed"], nulls_last=True)
    firsts = ordered.gather(np.arange(0, ordered.height, m))
    y_pred = ordered["y_pred"].to_numpy().reshape(-1, m)
    conf = ordered["confidence"].to_numpy().reshape(-1, m)
    has_vector = ordered["proba"].null_count() == 0 and not multilabel
    binary = multilabel or classes == 2
    if has_vector:
        p = np.asarray(ordered["proba"].to_list(), dtype=np.float64).reshape(-1, m, classes)
    else:
        k = 2 if binary else classes
        rest = (1.0 - conf) if binary else np.zeros_like(conf)
        p = np.repeat(rest[:, :, None], k, axis=2)
        if not binary:
            p[:] = 0.0
        np.put_along_axis(p, y_pred[:, :, None], conf[:, :, None], axis=2)
    mean = p.mean(axis=1)
    chosen = (mean[:, 1] >= 0.5).astype(np.int64) if multilabel else mean.argmax(axis=1)
    per_run = np.take_along_axis(p, chosen[:, None, None], axis=2)[:, :, 0]
    scores = {
        "ensemble": np.take_along_axis(mean, chosen[:, None], axis=1)[:, 0],
        "ensemble_var": 1.0 - 4.0 * per_run.var(axis=1),
        "vote": (y_pred == chosen[:, None]).mean(axis=1),
    }
    proba = pl.Series(mean.astype(np.float32)).cast(pl.List(pl.Float32)) if has_vector else None
    blocks, made = [], {}
    for name, values in scores.items():
        block = firsts.with_columns(
            model=pl.col("model") + f":{name}",
            seed=pl.lit(0, firsts.schema["seed"]),
            y_pred=pl.Series(chosen).cast(pl.Int32),
            confidence=pl.Series(np.clip(values, 0.0, 1.0)),  # rounding only: var <= 1/4
            proba=proba
            if name == "ensemble" and proba is not None
            else pl.lit(None, pl.List(pl.Float32)),
            __relcol_row=pl.lit(None, firsts.schema["__relcol_row"]),
        ).with_columns(correct=pl.col("y_pred") == pl.col("y_true"))
        blocks.append(block)
        for source in firsts["model"].unique(maintain_order=True).to_list():
            # the mean of probabilities is one; the mean of a score is still a score
            base = kinds.get(source, "stated")
            kind = score_kind(ENSEMBLE[name])
            made[f"{source}:{name}"] = base if kind == "probability" else kind
    clash = sorted(set(made) & set(kinds))
    if clash:
        raise InputError(f"{where}: ensemble source {clash[0]!r} is already a source of the file")
    out = pl.concat([rows, *(b.select(rows.columns) for b in blocks)])
    if annotations is not None:
        annotations = _ensemble_annotations(annotations, ordered, firsts, chosen, m, blocks)
    return out, annotations, made


def _ensemble_annotations(annotations, ordered, firsts, chosen, m, blocks):
    """Each ensemble row's split and period (its first run's), and the agreement of a run
    that predicted its label."""
    key = [c for c in KEY if c in annotations.columns]
    runs = ordered.select(key).join(
        annotations, on=key, how="left", maintain_order="left", nulls_equal=True
    )
    agreement = runs["agreement"].to_numpy().reshape(-1, m)
    same = ordered["y_pred"].to_numpy().reshape(-1, m) == chosen[:, None]
    pick = same.argmax(axis=1)
    carried = np.where(same.any(axis=1), agreement[np.arange(len(pick)), pick], np.nan)
    first = {
        c: pl.Series(runs[c].to_numpy().reshape(-1, m)[:, 0], dtype=pl.String)
        for c in ("split", "period")
        if c in runs.columns
    }
    extra = [
        b.select(key).with_columns(
            agreement=pl.Series(carried, dtype=pl.Float64).fill_nan(None), **first
        )
        for b in blocks
    ]
    return pl.concat([annotations, *(e.select(annotations.columns) for e in extra)])
