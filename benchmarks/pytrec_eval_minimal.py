"""The least a pytrec_eval user writes: read a TREC qrels and a TREC run with a plain ``split()`` loop, evaluate
measures, print their means (the floor of the whole-process comparison in ``benchmarks/cli.py``).

    python benchmarks/pytrec_eval_minimal.py QRELS RUN ndcg_cut_10 map recip_rank ...

No checks of the input (a malformed line raises), ``.gz`` opened with gzip; the means are over the judged queries,
a judged query missing from the run scored 0, as ``ragmetrics eval`` does; printed as JSON ``{measure: mean}``.
"""

import gzip
import json
import sys

import pytrec_eval


def _lines(path):
    with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as f:
        yield from f


def main() -> None:
    qrels_path, run_path, *measures = sys.argv[1:]
    qrels: dict[str, dict[str, int]] = {}
    for line in _lines(qrels_path):
        query, _, doc, label = line.split()
        qrels.setdefault(query, {})[doc] = int(label)
    run: dict[str, dict[str, float]] = {}
    for line in _lines(run_path):
        query, _, doc, _, score, _ = line.split()
        run.setdefault(query, {})[doc] = float(score)
    asked = {m.rsplit("_", 1)[0] + "." + m.rsplit("_", 1)[1] if m[-1].isdigit() else m for m in measures}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, asked).evaluate(run)
    json.dump({m: sum(v[m] for v in per_query.values()) / len(qrels) for m in measures}, sys.stdout)


if __name__ == "__main__":
    main()
