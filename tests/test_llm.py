"""An LLM's raw log-probabilities as confidence sources, ensembles of runs, soft agreement.

Every derived score is checked against a value worked by hand (or with numpy from its
definition), and the file shapes go through the CLI end to end.
"""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from relcol.cli import main
from scipy.stats import pearsonr, spearmanr

import relcol
from relcol.data import read_predictions
from relcol.errors import InputError
from tests.test_store import checksums

CLASSES = ["ham", "promo", "spam"]


def _source(read, name: str) -> pl.DataFrame:
    return read.rows.filter(pl.col("model") == name).sort("sample_id")


def _conf(read, name: str) -> list[float]:
    return _source(read, name)["confidence"].to_list()


def _top(token: str, lp: float, tops: list[tuple[str, float]]) -> dict:
    return {
        "token": token,
        "logprob": lp,
        "top_logprobs": [{"token": t, "logprob": v} for t, v in tops],
    }


def chat_rows() -> list[dict]:
    """Two answers in the chat-completion shape; ' ham' and 'ham' both read as ham."""
    log = math.log
    return [
        {
            "id": 1,
            "y_true": "spam",
            "logprobs": {
                "content": [
                    _top(
                        "spam",
                        log(0.7),
                        [
                            ("spam", log(0.7)),
                            (" ham", log(0.2)),
                            ("ham", log(0.05)),
                            ("promo", log(0.04)),
                        ],
                    )
                ]
            },
        },
        {
            "id": 2,
            "y_true": "spam",
            "logprobs": {
                "content": [
                    _top(
                        "ham",
                        log(0.6),
                        [("ham", log(0.6)), ("spam", log(0.3)), ("promo", log(0.1))],
                    ),
                    _top("\n", log(0.9), []),
                ]
            },
        },
    ]


def write_jsonl(path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def ingest(*args: str):
    return CliRunner().invoke(main, ["ingest", "--predictions", *args])


# -- token lists and per-answer log-probabilities -----------------------------------------------


def test_token_scores_match_the_hand_worked_values():
    frame = pl.DataFrame(
        {
            "y_true": ["spam", "ham"],
            "y_pred": ["spam", "spam"],
            "token_logprobs": [[-0.1, -0.2], [-1.0]],
        }
    )
    read = read_predictions(frame, model="llm")
    assert read.sources == (
        "llm:loglik",
        "llm:loglik_norm",
        "llm:mean_token_prob",
        "llm:min_token_prob",
    )
    e = math.exp
    assert _conf(read, "llm:loglik") == pytest.approx([e(-0.3), e(-1.0)], abs=1e-15)
    assert _conf(read, "llm:loglik_norm") == pytest.approx([e(-0.15), e(-1.0)], abs=1e-15)
    assert _conf(read, "llm:mean_token_prob") == pytest.approx(
        [(e(-0.1) + e(-0.2)) / 2, e(-1.0)], abs=1e-15
    )
    assert _conf(read, "llm:min_token_prob") == pytest.approx([e(-0.2), e(-1.0)], abs=1e-15)
    assert _source(read, "llm:loglik")["correct"].to_list() == [True, False]
    assert read.spec["source_kinds"] == {
        "llm:loglik": "probability",
        "llm:loglik_norm": "score",
        "llm:mean_token_prob": "score",
        "llm:min_token_prob": "score",
    }


def test_token_lists_as_json_text_in_a_csv(tmp_path):
    path = tmp_path / "tokens.csv"
    path.write_text('y_true,y_pred,token_logprobs\n1,1,"[-0.5, -0.25]"\n0,1,"[-2.0]"\n')
    read = read_predictions(path, model="llm")
    assert _conf(read, "llm:loglik") == pytest.approx([math.exp(-0.75), math.exp(-2.0)])


def test_an_answer_log_probability_with_its_token_count_gives_the_normalised_score():
    frame = pl.DataFrame(
        {
            "y_true": [0, 1],
            "y_pred": [0, 0],
            "answer_logprob": [-0.6, -2.0],
            "answer_tokens": [3, 1],
        }
    )
    read = read_predictions(frame, model="llm")
    assert read.sources == ("llm:loglik", "llm:loglik_norm")
    assert _conf(read, "llm:loglik_norm") == pytest.approx([math.exp(-0.2), math.exp(-2.0)])
    with pytest.raises(
        InputError,
        match=r"answer_tokens.: 1 row is outside the integer range \[1, 2147483647\], first at row 2",
    ):
        read_predictions(frame.with_columns(answer_tokens=pl.Series([3, 0])))
    with pytest.raises(InputError, match="counts the tokens of answer_logprob"):
        read_predictions(frame.drop("answer_logprob").with_columns(confidence=pl.lit(0.5)))


def test_an_answer_log_probability_gives_loglik_in_a_multilabel_file():
    frame = pl.DataFrame(
        {
            "sample_id": [0, 0, 1, 1],
            "label": ["spam", "promo", "spam", "promo"],
            "y_true": [1, 0, 0, 0],
            "y_pred": [1, 1, 0, 0],
            "answer_logprob": [-0.05, -1.2, -0.3, 0.0],
        }
    )
    read = read_predictions(frame, model="llm")
    assert read.multilabel and read.sources == ("llm:loglik",)
    rows = read.rows.sort("sample_id", "label")
    # labels sorted: promo = 0, spam = 1
    assert rows["confidence"].to_list() == pytest.approx(
        [math.exp(-1.2), math.exp(-0.05), 1.0, math.exp(-0.3)]
    )


# -- class distributions ---------------------------------------------------------------------


def reference_label_scores(logp: np.ndarray, y: np.ndarray):
    """margin and entropy straight from their definitions, row by row."""
    margins, entropies = [], []
    for row, k in zip(logp, y, strict=True):
        runner_up = max(v for j, v in enumerate(row) if j != k)
        margins.append(1 / (1 + math.exp(-(row[k] - runner_up))))
        q = np.exp(row) / np.exp(row).sum()
        entropies.append(1 + float((q * np.log(q)).sum()) / math.log(len(row)))
    return margins, entropies


def test_class_log_probability_columns_give_loglik_margin_and_entropy():
    p = np.array([[0.2, 0.1, 0.7], [0.5, 0.3, 0.1], [0.3, 0.3, 0.3]])
    logp = np.log(p)
    frame = pl.DataFrame(
        {"y_true": ["spam", "ham", "promo"]}
        | {f"logp_{c}": logp[:, j] for j, c in enumerate(CLASSES)}
    )
    read = read_predictions(frame, model="llm")
    assert read.sources == ("llm:loglik", "llm:margin", "llm:entropy")
    assert read.spec["classes"] == CLASSES
    # arg max, lowest code on ties
    assert _source(read, "llm:margin")["y_pred"].to_list() == [2, 0, 0]
    assert _conf(read, "llm:loglik") == pytest.approx([0.7, 0.5, 0.3])
    margins, entropies = reference_label_scores(logp, np.array([2, 0, 0]))
    assert _conf(read, "llm:margin") == pytest.approx(margins, abs=1e-12)
    # by hand: 0.7 / (0.7 + 0.2), 0.5 / 0.8, a tie 0.5
    assert margins == pytest.approx([0.7 / 0.9, 0.5 / 0.8, 0.5])
    assert _conf(read, "llm:entropy") == pytest.approx(entropies, abs=1e-12)
    assert _conf(read, "llm:entropy")[2] == pytest.approx(0.0, abs=1e-12)  # uniform


def test_a_given_prediction_that_is_not_the_arg_max_has_a_margin_below_one_half():
    frame = pl.DataFrame(
        {
            "y_true": [0, 1],
            "y_pred": [1, 1],
            "label_logprobs": [[math.log(0.8), math.log(0.2)], [math.log(0.4), math.log(0.6)]],
        }
    )
    read = read_predictions(frame, model="llm")
    assert _conf(read, "llm:margin") == pytest.approx([0.2, 0.6])
    assert _conf(read, "llm:loglik") == pytest.approx([0.2, 0.6])


def test_chat_completion_logprobs_end_to_end(tmp_path):
    path = tmp_path / "mail.jsonl"
    write_jsonl(path, chat_rows())
    wh = tmp_path / "wh"
    done = ingest(
        str(path), "--warehouse", str(wh), "--column", "sample_id=id", "--model", "llm",
        "--classes", "ham,promo,spam",
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "6 confidence sources" in done.stdout
    assert "llm:margin" in done.stderr and "run relcol recalibrate" in done.stderr
    rows = relcol.open_warehouse(wh).predictions("mail").collect()

    def conf(name):
        return rows.filter(pl.col("model") == name).sort("sample_id")["confidence"].to_list()

    # row 1: ham = 0.2 + 0.05 (two tokens read as ham); row 2: answer 'ham' + newline
    assert rows.filter(pl.col("model") == "llm:margin").sort("sample_id")["y_pred"].to_list() == [
        2,
        0,
    ]
    assert conf("llm:loglik") == pytest.approx([0.7, 0.6 * 0.9])
    assert conf("llm:min_token_prob") == pytest.approx([0.7, 0.6])
    assert conf("llm:mean_token_prob") == pytest.approx([0.7, 0.75])
    assert conf("llm:loglik_norm") == pytest.approx([0.7, math.sqrt(0.54)])
    assert conf("llm:margin") == pytest.approx([0.7 / 0.95, 0.6 / 0.9])
    logp = np.log([[0.25, 0.04, 0.7], [0.6, 0.1, 0.3]])
    _, entropies = reference_label_scores(logp, np.array([2, 0]))
    assert conf("llm:entropy") == pytest.approx(entropies, abs=1e-12)
    spec = json.loads(
        relcol.open_warehouse(wh).sql("SELECT spec FROM runs WHERE study = 'mail'")["spec"][0]
    )
    assert spec["llm"]["scores"]["margin"]["kind"] == "score"
    assert spec["llm"]["scores"]["loglik"]["mapping"] == "c = exp(LL) = P(answer)"
    table = relcol.confidence_sources(wh, study="mail")
    assert table.filter(pl.col("kind") == "probability")["source"].to_list() == ["llm:loglik"]
    assert set(table["source"]) == set(rows["model"])
    report = CliRunner().invoke(
        main, ["report", "--warehouse", str(wh), "--out", str(tmp_path / "r"), "--bootstrap", "0"]
    )
    assert report.exit_code == 0, report.output
    assert (
        "scores, not probabilities (read their AUROC and AURC; recalibrate before their ECE): "
        "llm:entropy, llm:loglik_norm, llm:margin, llm:mean_token_prob, llm:min_token_prob"
    ) in report.output
    page = (tmp_path / "r" / "index.html").read_text()
    assert 'id="sources"' in page and "p(y_pred) / (p(y_pred) + p(runner-up))" in page


def test_chat_completion_logprobs_as_json_text_in_a_csv_and_integer_classes(tmp_path):
    rows = chat_rows()
    for row, (truth, answer) in zip(rows, [(1, "1"), (0, "0")], strict=True):
        row["y_true"] = truth
        for entry in row["logprobs"]["content"][:1]:
            entry["token"] = answer
            entry["top_logprobs"] = [
                {"token": "1", "logprob": math.log(0.7 if answer == "1" else 0.2)},
                {"token": "0", "logprob": math.log(0.3 if answer == "1" else 0.8)},
            ]
    frame = pl.DataFrame(
        {
            "y_true": [r["y_true"] for r in rows],
            "logprobs": [json.dumps(r["logprobs"]) for r in rows],
        }
    )
    path = tmp_path / "binary.csv"
    frame.write_csv(path)
    read = read_predictions(path, model="llm")
    assert read.spec["classes"] == ["0", "1"]
    assert _source(read, "llm:margin")["y_pred"].to_list() == [1, 0]
    assert _conf(read, "llm:margin") == pytest.approx([0.7, 0.8])


# -- bad input -------------------------------------------------------------------------------


def _chat_with(change) -> list[dict]:
    rows = chat_rows()
    change(rows)
    return rows


BAD = [
    (
        "positive-token-logprob",
        pl.DataFrame({"y_true": [0, 1], "y_pred": [0, 1], "token_logprobs": [[-0.1], [-0.2, 0.3]]}),
        "column 'token_logprobs': 1 row holds a positive log-probability (a probability above 1)"
        "; expected finite log-probabilities <= 0 (natural log), first at row 2",
    ),
    (
        "nan-token-logprob",
        pl.DataFrame(
            {"y_true": [0, 1], "y_pred": [0, 1], "token_logprobs": [[float("nan")], [-0.2]]}
        ),
        "1 row holds a missing or NaN log-probability",
    ),
    (
        "infinite-answer-logprob",
        pl.DataFrame({"y_true": [0, 1], "y_pred": [0, 1], "answer_logprob": [-0.1, -math.inf]}),
        "column 'answer_logprob': 1 row holds an infinite log-probability",
    ),
    (
        "empty-token-list",
        pl.DataFrame(
            {"y_true": [0, 1], "y_pred": [0, 1], "token_logprobs": [[-0.1], []]},
            schema_overrides={"token_logprobs": pl.List(pl.Float64)},
        ),
        "1 row holds an empty list; expected one log-prob a token, first at row 2",
    ),
    (
        "label-missing-from-top-logprobs",
        _chat_with(lambda rows: rows[1]["logprobs"]["content"][0]["top_logprobs"].pop(2)),
        "1 row holds first-token top_logprobs without every class (row 2 lacks 'promo')",
    ),
    (
        "class-probabilities-above-1",
        pl.DataFrame({"y_true": [0, 1], "label_logprobs": [[-0.1, -0.2], [-2.0, -0.1]]}),
        "have probabilities summing above 1",
    ),
    (
        "answer-not-a-class",
        _chat_with(lambda rows: rows[0]["logprobs"]["content"][0].update(token="spam.")),
        "name labels outside the classes of the log-probabilities (ham, promo, spam), e.g. 'spam.'",
    ),
    (
        "y_pred-differs-from-the-answer",
        _chat_with(lambda rows: rows[1].update(y_pred="spam") or rows[0].update(y_pred="spam")),
        "column 'y_pred': 1 row differs from the answer in 'logprobs' (its tokens joined); "
        "expected the same label, first at row 2",
    ),
    (
        "empty-content",
        _chat_with(lambda rows: rows[0]["logprobs"].update(content=[])),
        "1 row holds an empty content list",
    ),
    (
        "class-lists-of-different-lengths",
        pl.DataFrame({"y_true": [0, 1, 0], "label_logprobs": [[-0.1, -3.0], [-2.0, -0.2], [-0.1]]}),
        "column 'label_logprobs': 1 row holds lists of another length than the usual 2, first at row 3",
    ),
    (
        "token-list-text-that-is-not-json",
        pl.DataFrame({"y_true": [0, 1], "y_pred": [0, 1], "token_logprobs": ["[-0.1]", "[-0.2,"]}),
        "column 'token_logprobs': row 2 is not JSON of the expected shape",
    ),
    (
        "two-log-likelihoods",
        pl.DataFrame(
            {"y_true": [0], "y_pred": [0], "answer_logprob": [-0.1], "token_logprobs": [[-0.1]]}
        ),
        "both answer_logprob and token_logprobs give the answer's log-likelihood; give one",
    ),
    (
        "distribution-in-multilabel",
        pl.DataFrame(
            {
                "sample_id": [0],
                "label": ["a"],
                "y_true": [1],
                "y_pred": [1],
                "label_logprobs": [[-0.1, -3.0]],
            }
        ),
        "label_logprobs gives a distribution over classes, which is for single-label files",
    ),
]


@pytest.mark.parametrize(("case", "content", "message"), BAD, ids=[c[0] for c in BAD])
def test_bad_llm_input_is_one_line_exit_2_and_changes_nothing(tmp_path, case, content, message):
    wh = tmp_path / "wh"
    relcol.open_warehouse(wh).create()
    if isinstance(content, list):
        path = tmp_path / "llm.jsonl"
        write_jsonl(path, content)
        extra = ["--classes", "ham,promo,spam"]
    else:
        path = tmp_path / "llm.parquet"
        content.write_parquet(path)
        extra = []
    before = checksums(wh)
    done = ingest(str(path), "--warehouse", str(wh), *extra)
    assert done.exit_code == 2, done.output
    assert done.stderr.startswith("relcol: error: ") and done.stderr.count("\n") == 1, done.stderr
    assert message in done.stderr, done.stderr
    assert checksums(wh) == before


def test_a_log_scale_margin_column_gets_the_log_hint_not_percentages():
    frame = pl.DataFrame(
        {"y_true": [0, 1, 1], "y_pred": [0, 1, 0], "confidence:margin": [0.3, 2.5, 4.1]}
    )
    with pytest.raises(InputError) as caught:
        read_predictions(frame)
    assert "a score on a log scale?" in str(caught.value)
    assert "percentages" not in str(caught.value)


# -- ensembles -------------------------------------------------------------------------------


def runs_frame(**extra) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "sample_id": [0, 0, 0, 1, 1, 1],
            "seed": [0, 1, 2, 0, 1, 2],
            "y_true": [0, 0, 0, 1, 1, 1],
            **extra,
        }
    )


def test_an_ensemble_of_probability_vectors_by_hand():
    frame = runs_frame(p_0=[0.9, 0.6, 0.3, 0.5, 0.2, 0.4], p_1=[0.1, 0.4, 0.7, 0.5, 0.8, 0.6])
    read = read_predictions(frame, model="m", ensemble=True)
    assert read.sources == ("m", "m:ensemble", "m:ensemble_var", "m:vote")
    assert _source(read, "m:ensemble")["y_pred"].to_list() == [0, 1]
    # sample 0: p(0) = 0.9, 0.6, 0.3: mean 0.6, variance 0.06; votes 0, 0, 1
    # sample 1: p(1) = 0.5, 0.8, 0.6: mean 0.6333, variance 0.0155556; run 0's tie votes 0
    assert _conf(read, "m:ensemble") == pytest.approx([0.6, 1.9 / 3])
    assert _conf(read, "m:ensemble_var") == pytest.approx([1 - 4 * 0.06, 1 - 4 * 0.14 / 9])
    assert _conf(read, "m:vote") == pytest.approx([2 / 3, 2 / 3])
    assert _source(read, "m:ensemble")["proba"].to_list()[0] == pytest.approx([0.6, 0.4])
    assert read.spec["source_kinds"]["m:ensemble_var"] == "score"


def test_an_ensemble_without_vectors_against_numpy():
    y_pred = np.array([[0, 2, 0], [1, 1, 2]])
    conf = np.array([[0.8, 0.9, 0.5], [0.6, 0.4, 0.7]])
    frame = runs_frame(y_pred=y_pred.ravel(), confidence=conf.ravel()).with_columns(
        y_true=pl.Series([0, 0, 0, 2, 2, 2])
    )
    read = read_predictions(frame, model="m", classes=["a", "b", "c"], ensemble=True)
    # three classes, no vector: a run puts c on its answer and 0 elsewhere (a lower bound)
    p = np.zeros((2, 3, 3))
    np.put_along_axis(p, y_pred[:, :, None], conf[:, :, None], axis=2)
    chosen = p.mean(axis=1).argmax(axis=1)
    assert chosen.tolist() == [0, 1]
    assert _source(read, "m:ensemble")["y_pred"].to_list() == chosen.tolist()
    assert _conf(read, "m:ensemble") == pytest.approx([1.3 / 3, 1.0 / 3])
    per_run = p[np.arange(2), :, chosen]
    assert _conf(read, "m:ensemble_var") == pytest.approx(1 - 4 * per_run.var(axis=1))
    assert _source(read, "m:ensemble")["correct"].to_list() == [True, False]


def test_a_multilabel_ensemble_averages_the_probability_of_presence():
    frame = pl.DataFrame(
        {
            "sample_id": [0, 0],
            "seed": [0, 1],
            "label": ["spam", "spam"],
            "y_true": [1, 1],
            "y_pred": [1, 0],
            "confidence": [0.9, 0.7],
        }
    )
    read = read_predictions(frame, model="m", ensemble=True)
    # P(present) = 0.9 and 0.3: mean 0.6 -> present, confidence 0.6, variance 0.09
    assert _source(read, "m:ensemble")["y_pred"].to_list() == [1]
    assert _conf(read, "m:ensemble") == pytest.approx([0.6])
    assert _conf(read, "m:ensemble_var") == pytest.approx([1 - 4 * 0.09])
    assert _conf(read, "m:vote") == pytest.approx([0.5])


def test_an_ensemble_of_llm_scores_through_the_cli(tmp_path):
    frame = runs_frame(
        y_pred=[0, 0, 1, 1, 1, 1], answer_logprob=[-0.1, -0.5, -2.0, -0.2, -0.3, -0.4]
    )
    path = tmp_path / "runs.parquet"
    frame.write_parquet(path)
    wh = tmp_path / "wh"
    done = ingest(str(path), "--warehouse", str(wh), "--model", "llm", "--ensemble", "--json")
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)
    sources = result["sources"]
    assert result["source_kinds"] == {
        "llm:loglik": "probability",
        "llm:loglik:ensemble": "probability",
        "llm:loglik:ensemble_var": "score",
        "llm:loglik:vote": "score",
    }
    assert sources == [
        "llm:loglik",
        "llm:loglik:ensemble",
        "llm:loglik:ensemble_var",
        "llm:loglik:vote",
    ]
    rows = relcol.open_warehouse(wh).predictions("runs").collect()
    ens = rows.filter(pl.col("model") == "llm:loglik:ensemble").sort("sample_id")
    e = math.exp
    # two classes: a run that answered 1 gives class 0 the probability 1 - c
    assert ens["confidence"].to_list() == pytest.approx(
        [(e(-0.1) + e(-0.5) + 1 - e(-2.0)) / 3, (e(-0.2) + e(-0.3) + e(-0.4)) / 3]
    )


def test_an_ensemble_needs_every_prediction_in_every_run(tmp_path):
    frame = runs_frame(y_pred=[0] * 6, confidence=[0.9] * 6).slice(0, 5)
    with pytest.raises(
        InputError, match=r"sample_id 1 of 'm' \(first at row 4\) has 2 runs, others 3"
    ):
        read_predictions(frame, model="m", ensemble=True)
    with pytest.raises(InputError, match="found 1 seed"):
        read_predictions(frame.filter(pl.col("seed") == 0), model="m", ensemble=True)


# -- soft agreement --------------------------------------------------------------------------


def test_soft_agreement_against_numpy_and_in_the_report_summary(tmp_path):
    rng = np.random.default_rng(3)
    n = 200
    conf = rng.uniform(0.34, 1.0, n)
    agreement = np.clip(conf + rng.normal(0, 0.2, n), 0, 1).round(1)
    y_true = rng.integers(0, 3, n)
    frame = pl.DataFrame(
        {"y_true": y_true, "y_pred": np.where(rng.random(n) < conf, y_true, (y_true + 1) % 3),
         "confidence": conf, "agreement": agreement}
    )  # fmt: skip
    path = tmp_path / "soft.parquet"
    frame.write_parquet(path)
    wh = tmp_path / "wh"
    assert ingest(str(path), "--warehouse", str(wh), "--model", "llm").exit_code == 0
    table = relcol.soft_agreement(wh, study="soft", bins=10)
    row = table.row(0, named=True)
    assert row["n"] == n
    assert row["mean_agreement"] == pytest.approx(agreement.mean())
    assert row["pearson_r"] == pytest.approx(pearsonr(conf, agreement).statistic)
    assert row["spearman_rho"] == pytest.approx(spearmanr(conf, agreement).statistic)
    assert row["brier_top"] == pytest.approx(((conf - agreement) ** 2).mean())
    bins = np.maximum(np.ceil(conf * 10).astype(int) - 1, 0)  # bins (m/M, (m+1)/M]
    ece = sum(
        abs(agreement[bins == b].mean() - conf[bins == b].mean()) * (bins == b).sum() / n
        for b in np.unique(bins)
    )
    assert row["ece"] == pytest.approx(ece)
    assert row["accuracy"] == pytest.approx(float((frame["y_pred"] == frame["y_true"]).mean()))
    assert row["gap"] == pytest.approx(conf.mean() - agreement.mean())
    in_sql = relcol.soft_agreement(wh, study="soft", bins=10, engine="duckdb")
    assert in_sql.columns == table.columns
    for column in table.columns[7:]:
        assert in_sql[column][0] == pytest.approx(row[column], abs=1e-9, rel=0), column
    done = CliRunner().invoke(
        main, ["report", "--warehouse", str(wh), "--out", str(tmp_path / "r"), "--bootstrap", "0"]
    )
    assert done.exit_code == 0, done.output
    assert f"soft agreement llm: mean agreement {agreement.mean():.3f}" in done.output
    page = (tmp_path / "r" / "index.html").read_text()
    assert "Confidence against annotator agreement" in page


def test_ensemble_rows_carry_the_split_and_the_agreement_of_a_run_that_predicted_their_label():
    frame = runs_frame(
        y_pred=[0, 0, 1, 1, 0, 0],
        confidence=[0.9, 0.6, 0.7, 0.55, 0.8, 0.9],
        agreement=[0.8, 0.8, 0.2, 0.6, 0.4, 0.4],
        split=["cal"] * 3 + ["test"] * 3,
        period=["w1"] * 3 + ["w2"] * 3,
    )
    read = read_predictions(frame, model="m", ensemble=True)
    # sample 0: p(0) = 0.9, 0.6, 0.3 -> 0, as runs 0 and 1 (agreement 0.8)
    # sample 1: p(1) = 0.55, 0.2, 0.1 -> 0, as runs 1 and 2 (agreement 0.4)
    assert _source(read, "m:vote")["y_pred"].to_list() == [0, 0]
    carried = read.annotations.filter(pl.col("model") == "m:vote").sort("sample_id")
    assert carried["agreement"].to_list() == [0.8, 0.4]
    assert carried["split"].to_list() == ["calibration", "evaluation"]
    assert carried["period"].to_list() == ["w1", "w2"]


def test_scores_get_no_verdict_and_the_probability_keeps_its_own(tmp_path):
    # 300 samples of an overconfident 3-class model: loglik is its probability, margin and
    # entropy are scores; only the probability may be judged on its calibration
    rng = np.random.default_rng(5)
    n = 300
    logits = rng.normal(0.0, 2.5, (n, 3))
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    truth = np.array([rng.choice(3, p=q) if rng.random() < 0.6 else rng.integers(3) for q in p])
    frame = pl.DataFrame(
        {"y_true": [CLASSES[k] for k in truth]}
        | {f"logp_{c}": np.log(p[:, j]) for j, c in enumerate(CLASSES)}
    )
    path = tmp_path / "llm.parquet"
    frame.write_parquet(path)
    wh = tmp_path / "wh"
    done = ingest(str(path), "--warehouse", str(wh), "--model", "llm")
    assert done.exit_code == 0, done.output
    tables = relcol.report_tables(relcol.open_warehouse(wh), "llm", bootstrap=200)
    verdicts = tables["thresholds"].sort("model")
    assert verdicts["model"].to_list() == ["llm:entropy", "llm:loglik", "llm:margin"]
    scores = verdicts.filter(pl.col("model") != "llm:loglik")
    assert scores["traffic_light"].null_count() == 2
    assert scores["break_point"].null_count() == 2
    assert scores["deciding_metric"].to_list() == ["score", "score"]
    assert scores["action"].str.contains("not a probability").all()
    # the estimates stay: Δ(0) of a score is still its mean confidence − accuracy
    clean = tables["calibration"].filter(pl.col("severity") == 0).sort("model")
    assert scores["clean_gap"].to_list() == pytest.approx(
        clean.filter(pl.col("model") != "llm:loglik")["gap"].to_list()
    )
    loglik = verdicts.filter(pl.col("model") == "llm:loglik").row(0, named=True)
    assert loglik["traffic_light"] in ("red", "amber", "green")
    assert loglik["deciding_metric"] != "score"
    grid = relcol.analysis.break_grid(tables["thresholds"]).sort("model")
    assert grid["state"].to_list()[0] == "score" and grid["state"].to_list()[2] == "score"
    assert grid["state"].to_list()[1] != "score"
