"""pytrec_eval as a whole process: read a TREC qrels and a TREC run file, evaluate measures, print their means.

    python benchmarks/pytrec_eval_cli.py QRELS RUN ndcg_cut_10 map recip_rank ...

pytrec_eval's own parsers read the files (``.gz`` opened with gzip); the means are over the queries
pytrec_eval evaluates; printed as JSON ``{measure: mean}``. The counterpart of ``ragmetrics eval`` in
``benchmarks/cli.py``.
"""

import gzip
import json
import sys

import pytrec_eval


def _open(path):
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def main() -> None:
    qrels_path, run_path, *measures = sys.argv[1:]
    with _open(qrels_path) as f:
        qrels = pytrec_eval.parse_qrel(f)
    with _open(run_path) as f:
        run = pytrec_eval.parse_run(f)
    asked = {m.rsplit("_", 1)[0] + "." + m.rsplit("_", 1)[1] if m[-1].isdigit() else m for m in measures}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, asked)
    per_query = evaluator.evaluate(run)
    # ragmetrics scores a judged query missing from the run as 0 (trec_eval -c): so do we, over all judged queries
    n = len(qrels)
    json.dump({m: sum(v[m] for v in per_query.values()) / n for m in measures}, sys.stdout)


if __name__ == "__main__":
    main()
