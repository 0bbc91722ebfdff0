"""`relcol ingest`: run a study into the warehouse, or ingest a file of predictions made elsewhere."""

from __future__ import annotations

import contextlib
import sys

import click
from relcol.cli._common import (
    backend_option,
    json_option,
    quiet_option,
    replace_option,
    say,
    say_written,
    user_errors,
    warehouse_option,
)

#: Options that only mean something with a study (name -> its flag).
_STUDY_OPTIONS = {"jobs": "--jobs", "backend": "--backend", "max_rows": "--max-rows"}
#: Options that only mean something with --predictions (name -> its flag).
_PREDICTION_OPTIONS = {
    "name": "--name",
    "columns": "--column",
    "period": "--period",
    "classes": "--classes",
    "model": "--model",
    "dataset": "--dataset",
    "proba_prefix": "--proba-prefix",
    "tolerance": "--tolerance",
    "ensemble": "--ensemble",
}


@click.command()
@click.option(
    "--study",
    "study_file",
    type=click.Path(dir_okay=False),
    help="Study spec (TOML). Default: the built-in study.",
)
@click.option(
    "--predictions",
    "predictions_files",
    type=click.Path(dir_okay=False),
    multiple=True,
    help="A file of predictions made elsewhere (CSV, TSV, Parquet, JSON lines) to ingest "
    "instead of running a study; repeat for several files of one study, each with its own "
    "models.",
)
@click.option(
    "--name",
    help="Study name for --predictions (default: the file's name, no suffix; required with "
    "several files).",
)
@click.option(
    "--column",
    "columns",
    multiple=True,
    metavar="ROLE=COLUMN",
    help="The file's column for a role, e.g. y_true=true_label; repeat for more. Roles: y_true, "
    "y_pred, confidence, confidence:<method> (another score: the model <model>:<method>), "
    "probability (multi-label P(present)), proba (a list column), sample_id, label, model, "
    "dataset, corruption, severity, seed, repeat, agreement, split, period, y_clean; an LLM's "
    "label_logprobs, answer_logprob, answer_tokens, token_logprobs, logprobs (chat-completion "
    "JSON).",
)
@click.option(
    "--period",
    metavar="COLUMN",
    help="The file's collection-period column (a week, a date, a number): the axis of "
    "`relcol monitor` (same as --column period=COLUMN).",
)
@click.option(
    "--classes",
    help="Class (multi-label: label) names in code order, comma-separated; labels outside "
    "them are refused.",
)
@click.option(
    "--model",
    multiple=True,
    help="Model name of a file without a model column (default: --name; refused for a file "
    "with one). With several files, once per --predictions, in the same order (default: each "
    "file's name, no suffix).",
)
@click.option(
    "--dataset",
    help="Dataset name when the file has no dataset column (default: the file's name; with "
    "several files, --name, so that their samples pair).",
)
@click.option(
    "--proba-prefix",
    default=None,
    metavar="PREFIX",
    help="Prefix of the per-class probability columns.  [default: p_]",
)
@click.option(
    "--tolerance",
    type=float,
    default=None,
    help="How far a probability vector may sum from 1.  [default: 0.001]",
)
@click.option(
    "--ensemble",
    is_flag=True,
    default=None,
    help="The seed column numbers runs of one system: add per source its ensemble (mean "
    "probability), ensemble_var (1 - 4 x variance over runs) and vote (share of runs agreeing) "
    "as sources of their own.",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Local processes for the (dataset, model, seed) fits; 1 runs them in this process. "
    "The rows are the same whatever N; more than 1 is faster only on free cores.  "
    "[default: one per core this process may use]",
)
@backend_option("the fits")
@click.option(
    "--max-rows",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Refuse, before any fit, a study that would write more than N rows (the estimate is "
    "test samples × models × seeds × severities × repeats); raise it to run a larger study.  "
    "[default: 50,000,000]",
)
@click.option(
    "--allow-outside-paths",
    is_flag=True,
    help="Let the study read dataset files outside the spec's folder (by default a spec, "
    "perhaps from someone else, reads only files beside it).",
)
@click.option(
    "--portable",
    is_flag=True,
    help="Pin the numeric code paths (OpenBLAS's generic kernel, glibc's plain libm, numpy's "
    "baseline loops) so the predictions are byte-identical on any x86-64 Linux machine with "
    "the same packages; the fits run in a child process with those settings.",
)
@warehouse_option
@replace_option
@quiet_option("No progress bar and no summary line.")
@json_option("Print what was written as JSON on stdout.")
@user_errors
def ingest(
    study_file: str | None,
    predictions_files: tuple[str, ...],
    warehouse: str | None,
    replace: bool,
    quiet: bool,
    as_json: bool,
    portable: bool,
    allow_outside_paths: bool,
    **reading: object,
) -> None:
    """Fit each model once on clean data, corrupt the test set at every severity, store every prediction.

    With --predictions, ingest predictions made elsewhere instead: y_true plus either a
    probability vector (a list column, or one p_<class> column per class) or y_pred and
    confidence, or an LLM's log-probabilities (scores derived from them: docs/llm.md);
    a label column makes the file multi-label (one row per sample × label).
    Everything is checked before anything is written.

    \b
    Examples:
      relcol ingest                              # the built-in study into ./warehouse
      relcol ingest --study my_study.toml --warehouse /data/wh --jobs 2
      relcol ingest --portable                   # the same bytes on any x86-64 Linux machine
      relcol ingest --predictions resnet110_cifar10.csv --name resnet110-c10 \\
          --column y_true=true_label --column y_pred=pred_label
      relcol ingest --predictions llm.parquet --name email-llm \\
          --column confidence:margin=margin_score --classes spam,ham
      relcol ingest --predictions chat_logprobs.jsonl --model llm --classes spam,ham,promo
      relcol ingest --predictions runs.parquet --model llm --ensemble   # seed = run
      relcol ingest --predictions resnet110.csv --predictions densenet40.csv \\
          --name cifar10 --column y_true=true_label --column y_pred=pred_label
      relcol ingest --predictions a/preds.csv --model resnet110 \\
          --predictions b/preds.csv --model densenet40 --name cifar10
    """
    from relcol.errors import ParameterError

    if predictions_files:
        if study_file is not None:
            raise ParameterError("give --study or --predictions, not both.")
        study_only = [f for key, f in _STUDY_OPTIONS.items() if reading.pop(key) is not None]
        study_only += ["--portable"] if portable else []
        study_only += ["--allow-outside-paths"] if allow_outside_paths else []
        if study_only:
            verb = "apply" if len(study_only) > 1 else "applies"
            raise ParameterError(
                f"{', '.join(study_only)} {verb} only to a study, not --predictions."
            )
        _ingest_predictions(predictions_files, warehouse, replace, quiet, as_json, reading)
        return
    given = [
        flag for key, flag in _PREDICTION_OPTIONS.items() if reading.get(key) not in (None, ())
    ]
    if given:
        verb = "apply" if len(given) > 1 else "applies"
        raise ParameterError(f"{', '.join(given)} {verb} only with --predictions FILE.")
    _ingest_study(
        study_file,
        warehouse,
        replace,
        quiet,
        as_json,
        reading["jobs"],  # None: one per available core
        reading["backend"] or "local",
        reading["max_rows"],
        allow_outside_paths,
        portable,
    )


def _ingest_study(
    study_file: str | None,
    warehouse: str | None,
    replace: bool,
    quiet: bool,
    as_json: bool,
    jobs: int | None,
    backend: str,
    max_rows: int | None,
    allow_outside_paths: bool,
    portable: bool,
) -> None:
    import relcol
    from relcol.study import MAX_ROWS, n_fits

    study = relcol.load_study(study_file, allow_outside_paths=allow_outside_paths)
    wh = relcol.open_warehouse(warehouse)
    show = not quiet and not as_json
    with contextlib.ExitStack() as stack:
        bar = None

        def advance(n: int) -> None:
            # The bar starts with the first fit, after every check has passed: an invalid
            # study prints its one error line and nothing else.
            nonlocal bar
            if bar is None:
                bar = stack.enter_context(
                    click.progressbar(
                        length=n_fits(study),
                        label=f"ingest {study.name}",
                        file=sys.stderr,
                        hidden=not show,
                        show_pos=True,
                    )
                )
            bar.update(n)

        result = relcol.ingest(
            study,
            wh,
            replace=replace,
            progress=advance,
            jobs=jobs,
            backend=backend,
            max_rows=MAX_ROWS if max_rows is None else max_rows,
            portable=portable,
        )
    say_written(result, as_json=as_json, quiet=quiet)


def _ingest_predictions(
    paths: tuple[str, ...],
    warehouse: str | None,
    replace: bool,
    quiet: bool,
    as_json: bool,
    reading: dict,
) -> None:
    import relcol

    result = relcol.ingest_predictions(
        list(paths),  # one file is read as that file
        warehouse,
        name=reading["name"],
        columns=parse_columns(reading["columns"] + _period_item(reading["period"])),
        classes=reading["classes"],
        model=list(reading["model"]) or None,  # one name per file, in the files' order
        dataset=reading["dataset"],
        proba_prefix="p_" if reading["proba_prefix"] is None else reading["proba_prefix"],
        tolerance=1e-3 if reading["tolerance"] is None else reading["tolerance"],
        ensemble=bool(reading["ensemble"]),
        replace=replace,
    )
    if as_json or quiet:
        say_written(result, as_json=as_json, quiet=quiet)
        return
    kind = "multi-label " if result.multilabel else ""
    sources = len(result.sources)
    say(
        f"wrote {result.rows:,} {kind}rows in {result.cells:,} cell{'s' if result.cells != 1 else ''} "
        f"of study {result.study!r} "
        f"({sources} confidence source{'s' if sources != 1 else ''}: {', '.join(result.sources)}; "
        f"{len(result.classes)} {'labels' if result.multilabel else 'classes'}), "
        f"run {result.run_id}, to {result.warehouse} in {result.seconds:.1f} s"
    )
    scores = [s for s, kind in result.source_kinds.items() if kind == "score"]
    if scores:
        say(
            f"relcol: note: {', '.join(scores)} "
            f"{'are scores' if len(scores) > 1 else 'is a score'} mapped into [0, 1], not "
            "probabilities: compare them by discrimination (AUROC, AURC) and run relcol "
            "recalibrate before reading their calibration metrics",
            err=True,
        )
    _say_clean_reference(result.clean_reference)
    if result.ignored:
        say(
            f"relcol: note: ignored columns {', '.join(map(repr, result.ignored))}; map one with "
            "--column ROLE=COLUMN",
            err=True,
        )


def _say_clean_reference(clean: dict[str, list[list[str]]]) -> None:
    """Which curves the clean rows gave a severity 0, and which had none to take."""
    from relcol.text import plural

    def curves(keys: list[list[str]]) -> str:
        named = [f"{key[2]} of {key[1]}" + (f" ({key[3]})" if len(key) > 3 else "") for key in keys]
        return ", ".join(named[:6]) + (f" and {len(named) - 6} more" if len(named) > 6 else "")

    def their(keys: list[list[str]]) -> str:
        return "their" if len(keys) > 1 else "its"

    served, without = clean["served"], clean["without"]
    if served:
        say(
            f"relcol: note: {plural(len(served), 'curve')} had no severity 0 of {their(served)} "
            f"own ({curves(served)}); the clean rows (corruption 'none', severity 0) of the same "
            "model are stored as that severity 0 too, so each curve starts at the clean model",
            err=True,
        )
    if without:
        say(
            f"relcol: note: {plural(len(without), 'curve')} had no severity 0 and no clean rows "
            f"(corruption 'none', severity 0) of {their(without)} model ({curves(without)}): "
            "nothing is compared with the clean model there, so the clean columns, the break "
            "point and d* are left empty (rows with corruption 'none' and severity 0 would "
            "serve as every such curve's severity 0)",
            err=True,
        )


def _period_item(column: str | None) -> tuple[str, ...]:
    """``--period COLUMN`` as the ``--column`` item it abbreviates."""
    return () if column is None else (f"period={column}",)


def parse_columns(items: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``ROLE=COLUMN`` items as a mapping (split at the first ``=``)."""
    from relcol.errors import ParameterError

    out: dict[str, str] = {}
    for item in items:
        role, sep, column = item.partition("=")
        role, column = role.strip(), column.strip()
        if not sep or not role or not column:
            raise ParameterError(
                f"--column must be ROLE=COLUMN (e.g. y_true=true_label). Got {item!r}."
            )
        if role in out:
            raise ParameterError(f"--column gives role {role!r} twice.")
        out[role] = column
    return out
