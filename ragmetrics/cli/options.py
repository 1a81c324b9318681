"""The options several commands share, and the argparse types that check their values."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from typing import Any, TextIO

from ragmetrics.analysis import ppi, stats
from ragmetrics.engine.conventions import CHOICES, Conventions
from ragmetrics.engine.metrics import MAX_CUTOFF, expand_trec_eval_groups
from ragmetrics.engine.tokens import TOKENIZER_CHOICES
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.partitioned import ENGINES


def _top_level_commas(text: str) -> list[str]:
    """``text`` split at its commas outside parentheses and braces: ir_measures' ``nDCG(gains={0:0,1:1})@10`` stays
    one name (and is then answered as one)."""
    pieces, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch in "({") - (ch in ")}")
        if ch == "," and depth <= 0:
            pieces.append(text[start:i])
            start = i + 1
    return [*pieces, text[start:]]


class MetricList(argparse.Action):
    """``-m``: repeatable, and each value may list several metrics with commas (``-m ndcg@10,recall@100``, as
    ranx and ir_measures users write them); no metric name holds a comma. A bare number after a metric with a
    cut-off is another cut-off of it, as trec_eval reads ``-m P.5,10`` (``P.5`` and ``P.10``)."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option_string: Any = None) -> None:
        names: list[str] = []
        for name in (piece.strip() for piece in _top_level_commas(str(values))):
            if not name:
                raise argparse.ArgumentError(self, f"{values!r}: an empty metric name between commas")
            cut = re.fullmatch(r"(.*[._@])\d+", names[-1]) if names and name.isdigit() else None
            names.append(cut.group(1) + name if cut else name)
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), *names])


def expand_metric_groups(args: argparse.Namespace, err: TextIO) -> None:
    """``-m official`` (``set``, ``all_trec``): trec_eval's measure groups, as the metrics of each that ragmetrics
    computes (:func:`ragmetrics.engine.metrics.expand_trec_eval_groups`); the measures left out are noted."""
    if not isinstance(getattr(args, "metric", None), list):  # a command of one metric (history) takes no group
        return
    if getattr(args, "mode", "trec") == "llamaindex":  # LlamaIndex's names are its own ("recall" is its recall)
        return
    expansion = expand_trec_eval_groups(args.metric)
    args.metric = expansion.names
    note = expansion.note()
    if note:
        err.write(f"ragmetrics: note: {note}\n")


class Once(argparse.Action):
    """An option given at most once: a second one is refused, saying ``why`` (never the last silently taken)."""

    def __init__(self, *args: Any, why: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.why = why

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option_string: Any = None) -> None:
        given: set[str] = namespace.__dict__.setdefault("_given_once", set())  # an option with a default, too
        if self.dest in given:
            raise argparse.ArgumentError(self, f"given twice: {self.why}" if self.why else "given twice")
        given.add(self.dest)
        setattr(namespace, self.dest, values)


def add_metric_option(p: argparse.ArgumentParser, help_text: str) -> None:
    """The repeatable ``-m/--metric`` of :class:`MetricList`."""
    p.add_argument("-m", "--metric", action=MetricList, help=f"{help_text} (repeatable, or a comma-separated list)")


def _format_name(text: str) -> str:
    return "table" if text == "text" else text


def add_format_option(p: argparse.ArgumentParser, *others: str, help_text: str = "") -> None:
    """``--format``, spelled the same on every command: ``table`` (the default, the command's own human-readable
    output; ``text`` is read as ``table``) or one of ``others`` (``json``, ``csv``, ``markdown``, ``yaml``)."""
    choices = ["table", *others]
    p.add_argument(
        "--format",
        type=_format_name,
        choices=choices,
        default="table",
        help=help_text or f"{', '.join(choices[:-1])} or {choices[-1]} (default table)",
    )


MAX_RESAMPLES = 100_000
"""The most resamples a command draws: each holds a value per query and metric in memory."""


def whole_number(minimum: int, maximum: int = MAX_CUTOFF) -> Callable[[str], int]:
    """An argparse type: a whole number (ASCII digits) of at least ``minimum`` and at most ``maximum`` (by default
    the deepest cut-off, :data:`ragmetrics.engine.metrics.MAX_CUTOFF`: a count beyond it overflows what it sizes)."""

    def parse(text: str) -> int:
        if not re.fullmatch(r"\s*[+-]?[0-9]+\s*", text):
            raise argparse.ArgumentTypeError(f"expected a whole number, found {text!r}")
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected a whole number of at least {minimum}, found {value}")
        if value > maximum:
            raise argparse.ArgumentTypeError(f"expected a whole number of at most {maximum:,}, found {value:,}")
        return value

    return parse


def probability(text: str) -> float:
    """An argparse type: a significance level strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1 (e.g. 0.05), found {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number strictly between 0 and 1 (e.g. 0.05), found {text!r}")
    return value


def weight_list(text: str) -> list[float]:
    """An argparse type: comma-separated finite weights, none negative, at least one positive."""

    weights = []
    for part in text.split(","):
        try:
            weight = float(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated numbers (e.g. 1,0.5), found {part!r}") from None
        if not math.isfinite(weight) or weight < 0:
            raise argparse.ArgumentTypeError(f"expected finite weights of 0 or more, found {part!r}")
        weights.append(weight)
    if not any(weights):
        raise argparse.ArgumentTypeError(f"expected at least one weight above 0, found {text!r}")
    return weights


SCORING_DEFAULTS: dict[str, Any] = {"missing": "zero", "rel_level": 1, "tokenizer": "auto", "unjudged": "nonrelevant"}
"""The scoring conventions a command that scores nothing (``pool``) runs with, without offering them."""


def add_eval_options(parser: argparse.ArgumentParser, *, bounds: bool = True, scoring: bool = True) -> None:
    """The conventions' options; ``bounds``: the command has ``--bounds`` (its help names it only then);
    ``scoring`` False: a command that aligns runs but scores nothing offers only ``--level`` and the refusals'
    overrides (an option it would not read is not accepted)."""
    if not scoring:
        parser.set_defaults(**SCORING_DEFAULTS)
        _add_level_option(parser)
        _add_allow_options(parser)
        return
    parser.add_argument(
        "--missing",
        choices=CHOICES["missing"],
        default=SCORING_DEFAULTS["missing"],
        help="judged queries absent from a run: score 0 (trec_eval -c, default) or skip (pytrec_eval)",
    )
    parser.add_argument(
        "--rel-level",
        type=int,
        default=SCORING_DEFAULTS["rel_level"],
        help="smallest label counted as relevant (trec_eval -l)",
    )
    _add_level_option(parser)
    parser.add_argument(
        "--tokenizer",
        choices=TOKENIZER_CHOICES,
        default=SCORING_DEFAULTS["tokenizer"],
        help="what token budgets (recall@512tok) count with: auto (default: jieba when the texts are mostly Chinese "
        "or Japanese, written without spaces, else whitespace), whitespace, jieba",
    )
    add_judgment_options(parser, bounds=bounds)


def _add_level_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--level",
        choices=CHOICES["level"],
        default="auto",
        help="evaluate chunks at document level (auto: when the run names source documents)",
    )


def add_judgment_options(parser: argparse.ArgumentParser, *, bounds: bool = True) -> None:
    parser.add_argument(
        "--unjudged",
        choices=CHOICES["unjudged"],
        default=SCORING_DEFAULTS["unjudged"],
        help="retrieved documents the qrels do not label: non-relevant (trec_eval, default), skip (condensed lists: "
        "removed before scoring, negative labels too, as trec_eval -J), relevant (judged relevant within each "
        "cut-off" + ("; --bounds gives every metric's best and worst case)" if bounds else ")"),
    )
    _add_allow_options(parser)


def add_allow_no_overlap_option(parser: argparse.ArgumentParser) -> None:
    """``--allow-no-overlap``: what :func:`ragmetrics.cli.evaluating.refuse_no_overlap` reads."""
    parser.add_argument(
        "--allow-no-overlap",
        action="store_true",
        help="score a run whose ids do not meet the qrels, or an empty run file (refused by default: every metric "
        "would be 0)",
    )


def _add_allow_options(parser: argparse.ArgumentParser) -> None:
    add_allow_no_overlap_option(parser)
    parser.add_argument(
        "--allow-no-relevant",
        action="store_true",
        help="score qrels that judge no document relevant for any query (refused by default when a metric reads "
        "relevance: it would be 0 for every run, as trec_eval and ir_measures give), or an empty qrels file (no "
        "query has a value)",
    )


def add_bounds_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--bounds",
        nargs="?",
        const="all",
        metavar="DEPTH",
        help=f"also print what the unjudged documents leave open: {what} over every way of judging the unjudged "
        "documents the runs retrieved (non-relevant or relevant); with DEPTH, those in each run's top DEPTH (what "
        "judging `ragmetrics pool --depth DEPTH` can change)",
    )


def read_bounds_depth(value: str | None) -> int | None:
    """``--bounds``'s depth: None for every retrieved document (``--bounds`` alone)."""
    if value is None or value == "all":
        return None
    if not value.isdigit() or int(value) < 1:
        raise RagMetricsError(f"--bounds: expected a depth of at least 1 (e.g. --bounds 10) or nothing, got {value!r}")
    return int(value)


TEST_DEFAULTS: dict[str, Any] = {
    "test": "t", "correction": "holm", "alpha": 0.05, "seed": 0, "resamples": stats.DEFAULT_RESAMPLES
}  # fmt: skip
"""The paired tests' options when not given (``--test``, ``--correction``, ``--alpha``, ``--seed``, ``--resamples``)."""


def add_test_options(parser: argparse.ArgumentParser, *, defaults: bool = True) -> None:
    """The paired tests' options, :data:`TEST_DEFAULTS` when not given; ``defaults`` False: a command that reads them
    only under a condition (``evidence``, with ``--baseline``: :mod:`ragmetrics.cli.rules`) parses them to None when
    not given, and resolves them where it reads them (:func:`option_value`)."""
    given = TEST_DEFAULTS if defaults else dict.fromkeys(TEST_DEFAULTS)
    tests = "; ".join(f"{t.name}: {t.title}, of {t.null}" for t in stats.TESTS.values())
    parser.add_argument(
        "--test", choices=list(stats.TESTS), default=given["test"], help=f"paired significance test ({tests})"
    )
    parser.add_argument(
        "--correction",
        choices=list(stats.CORRECTIONS),
        default=given["correction"],
        help="multiple-comparison correction over the family of comparisons the command makes together (compare: "
        f"--family; docs/conventions.md says each command's) (default {TEST_DEFAULTS['correction']})",
    )
    parser.add_argument(
        "--alpha",
        type=probability,
        default=given["alpha"],
        help=f"significance level, in (0, 1) (default {TEST_DEFAULTS['alpha']})",
    )
    parser.add_argument(
        "--seed",
        type=whole_number(0),
        default=given["seed"],
        help="seed of the resampling tests and intervals (default 0)",
    )
    parser.add_argument(
        "--resamples",
        type=whole_number(1, MAX_RESAMPLES),
        default=given["resamples"],
        help=f"resamples for randomization and bootstrap (default {TEST_DEFAULTS['resamples']})",
    )


def add_data_options(parser: argparse.ArgumentParser, *, scoring: bool = True) -> None:
    """The dataset and what completes it; ``scoring`` False: a command that scores nothing takes no corpus size."""
    parser.add_argument(
        "--dataset", required=True, help="qrels (TREC, CSV, JSON), an evaluation set (JSON/JSONL) or a BEIR folder"
    )
    parser.add_argument("--queries", help="queries file to attach text to TREC qrels")
    if scoring:
        parser.add_argument(
            "--corpus",
            help="a corpus (a JSONL of documents or a folder of .md/.txt files): the documents' text (answer_in@k, "
            "keyword_recall@k, token budgets, diagnosis) and the corpus size (accuracy@k)",
        )
        parser.add_argument(
            "--corpus-size", type=whole_number(1), help="number of documents in the collection (accuracy@k)"
        )
    else:
        parser.add_argument(
            "--corpus", help="a corpus (a JSONL of documents or a folder of .md/.txt files): the documents' text"
        )
        parser.set_defaults(corpus_size=None)
    parser.add_argument("--chunk-mapping", help="chunk-to-document mapping file (CSV/TSV/JSONL)")
    parser.add_argument(
        "--chunk-pattern", help="regex with a group 'doc' (or the separator '#') taking the document id from a chunk id"
    )


def add_engine_options(p: argparse.ArgumentParser, per_query_out: bool = True) -> None:
    engines = "; ".join(f"{name}: {summary}" for name, (_, summary) in ENGINES.items())
    p.add_argument("--engine", choices=list(ENGINES), default="inprocess", help=f"where runs are evaluated ({engines})")
    p.add_argument(
        "--buckets",
        type=whole_number(1),
        help="duckdb, polars, spark: buckets the queries are hashed into (default: the engine's); stream: about this many slices of the run",
    )
    p.add_argument(
        "--memory-limit",
        help="duckdb: DuckDB's own memory limit, e.g. 2GB (default 2GB), beyond which it spills; stream: sets its "
        "slice (1/12 of it). It bounds the engine's working memory, not the process's peak (Python, Arrow and the "
        "per-query values come on top: docs/scale.md); refused by an engine with no such limit",
    )
    p.add_argument(
        "--work-dir", help="duckdb, polars: folder for their buckets and spills (default: a temporary folder)"
    )
    p.add_argument("--spark-master", help="spark: master URL of the session started here (default local[*])")
    if not per_query_out:
        return
    p.add_argument(
        "--per-query-out",
        help="write the per-query values to this Parquet file (spark: a Parquet folder) where the engine runs, "
        "instead of collecting them; several runs: RUN before the extension",
    )


def convention_changes(args: argparse.Namespace) -> dict[str, Any]:
    """The conventions the options change from trec_eval's: ``missing``, ``rel_level``, ``level``, ``unjudged``, and
    ``mode`` with ``--mode llamaindex`` (the keyword arguments of :func:`ragmetrics.evaluate`)."""
    changes = {"missing": args.missing, "rel_level": args.rel_level, "level": args.level, "unjudged": args.unjudged}
    if getattr(args, "mode", "trec") == "llamaindex":
        changes["mode"] = "llamaindex"
    return changes


def engine_arguments(args: argparse.Namespace) -> dict[str, Any]:
    """What every partitioned engine call takes from the options: the engine, its options, the conventions, how
    the run's chunks name their documents (``--chunk-pattern``) and the collection's size (``--corpus-size``)."""
    changes = convention_changes(args)
    conventions = Conventions.llamaindex() if changes.pop("mode", None) == "llamaindex" else Conventions()
    return {
        "engine": args.engine,
        "conventions": conventions.replace(**changes),
        "buckets": args.buckets,
        "memory_limit": args.memory_limit,
        "work_dir": args.work_dir,
        "spark_master": args.spark_master,
        "tokenizer": getattr(args, "tokenizer", SCORING_DEFAULTS["tokenizer"]),
        "chunk_pattern": getattr(args, "chunk_pattern", None),
        "corpus_size": getattr(args, "corpus_size", None),
    }


def refuse_too_few_resamples(args: argparse.Namespace) -> None:
    """Refuse resamples too few for a number to mean anything: a paired test whose p-value counts resamples that
    cannot reach ``--alpha`` (no difference could be significant). Called once after parsing, for every command
    (options a command lacks are not read)."""
    if not hasattr(args, "test") or not hasattr(args, "alpha"):
        return
    test = option_value(args, "test")
    resamples, alpha = option_value(args, "resamples"), option_value(args, "alpha")
    paired = stats.TESTS[test]
    merged = getattr(args, "engine", "inprocess") != "inprocess"  # the engines' merged sums count their own way
    floor = paired.merged_p_floor if merged else paired.p_floor
    if paired.smallest_p(resamples, merged=merged) >= alpha:  # significant is p < alpha
        fewest = math.floor(floor / alpha)  # the fewest B with floor / (B + 1) < alpha, made exact:
        while paired.smallest_p(fewest, merged=merged) >= alpha:
            fewest += 1
        while fewest > 1 and paired.smallest_p(fewest - 1, merged=merged) < alpha:
            fewest -= 1
        raise RagMetricsError(
            f"--resamples {resamples}: the {test} test's p-value cannot go below {floor}/{resamples + 1} = "
            f"{paired.smallest_p(resamples, merged=merged):.3g}, not below --alpha {alpha}: no difference could be significant; "
            f"give at least {fewest} (default {stats.DEFAULT_RESAMPLES:,})"
        )


def add_merged_options(p: argparse.ArgumentParser) -> None:
    """``eval``'s statistics that merge (:mod:`ragmetrics.analysis.merged`): equal for every engine and bucket
    count."""
    p.add_argument(
        "--ci",
        action="store_true",
        help=f"also print each mean's 95%% interval, as every command and page gives it: {stats.MEAN_INTERVAL_RULE}, "
        "read from exact sums every engine's buckets add up, so the interval is the same, bit for bit, for every "
        "engine and --buckets",
    )
    p.add_argument(
        "--seed",
        type=whole_number(0),
        help="seed of --plan's sample, with the label files (default 0; refused elsewhere)",
    )
    p.add_argument(
        "--fingerprint",
        action="store_true",
        help="also print each metric's fingerprint: a hash of every query's id and exact value, independent of "
        "order, equal for every engine and --buckets; one changed value changes it",
    )


def add_store_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store",
        help="store URL (sqlite:///path or postgresql+psycopg://...); default: RAGMETRICS_STORE_URL or ./data",
    )


def add_stored_dataset_option(p: argparse.ArgumentParser, *, required: bool, repeat: bool = False) -> None:
    p.add_argument(
        "--dataset",
        required=required,
        action="append" if repeat else "store",
        help="a stored dataset: its file (the content id is computed), its stored name, or its id"
        + ("; repeatable (default: every dataset, the newest qrels version of each)" if repeat else ""),
    )


LAMBDAS = {"tuned": None, "1": 1.0, "0": 0.0}
"""``--ppi-lambda``: tuned (PPI++, the default of the authors' library), 1 (plain PPI), 0 (the human sample alone)."""


def add_ppi_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--judge-qrels",
        help="a judge's labels (qrels: TREC lines, or a TSV query_id doc_id label), with --human-qrels: they fill "
        "the pairs the dataset leaves unjudged, and the estimates printed are corrected by the human sample "
        "(docs/ppi.md); with --plan alone, the queries to label next. The judge's numbers alone: judge merge its "
        "labels into the qrels, then eval",
    )
    p.add_argument(
        "--human-qrels",
        help="human labels of a random sample of queries (qrels; every sampled query named, 0 labels where nothing "
        "is relevant): the queries they name are the sample that corrects the judge",
    )
    p.add_argument(
        "--ppi-target",
        choices=list(ppi.POPULATIONS),
        help="what the corrected intervals are for: "
        + "; ".join(f"{name}: {text}" for name, text in ppi.POPULATIONS.items())
        + " (default queries)",
    )
    p.add_argument(
        "--ppi-lambda",
        choices=list(LAMBDAS),
        help="how much the judge is trusted: tuned to the data (PPI++, default), 1 (plain PPI), 0 (humans only)",
    )
    p.add_argument(
        "--strata",
        help="a query column (e.g. category) the human sample was drawn within; each group is weighted by its share",
    )
    p.add_argument(
        "--plan",
        type=whole_number(1),
        metavar="K",
        help="also print the next K queries to label (a random sample of the unlabelled drawn with --seed; within "
        "--strata)",
    )


PPI_DEFAULTS = {"ppi_target": "queries", "ppi_lambda": "tuned"}
"""The corrected estimates' options when not given (``--ppi-target``, ``--ppi-lambda``)."""


def wants_ppi(args: argparse.Namespace) -> bool:
    """Whether the corrected estimates are asked for: both label files given (one alone, or an option of theirs
    without them, is refused before the command runs: :mod:`ragmetrics.cli.rules`)."""
    return all(getattr(args, name, None) is not None for name in ("judge_qrels", "human_qrels"))


READ_DEFAULTS: dict[str, Any] = {**TEST_DEFAULTS, **PPI_DEFAULTS}
"""The defaults of the options a command reads only under a condition, filled in where they are read (they parse to
None when not given, so :mod:`ragmetrics.cli.rules` can tell them given): the paired tests' (``--seed`` 0), the
corrected estimates' (:data:`PPI_DEFAULTS`)."""


def resolve_read_defaults(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` with :data:`READ_DEFAULTS`'s value in every such option not given (a handler that reads them as
    attributes calls this once the rules have told them given or not)."""
    for name, default in READ_DEFAULTS.items():
        if hasattr(args, name) and getattr(args, name) is None:
            setattr(args, name, default)
    return args


def option_value(args: argparse.Namespace, name: str) -> Any:
    """The option ``name`` (its ``dest``: ``test``, ``seed``, ``ppi_target`` ...) as given, else
    :data:`READ_DEFAULTS`'s."""
    value = getattr(args, name, None)
    return READ_DEFAULTS[name] if value is None else value
