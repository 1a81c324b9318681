"""What the numbers mean: evaluation over runs (:mod:`.evaluate`), paired comparison (:mod:`.compare`) and its
statistics (:mod:`.stats`), fusion, diagnosis, targets, stability, judging, means corrected by a human sample
(:mod:`.ppi`), history, per-query results, and the checks and verdicts every front end (the CLI, the dashboard)
reads (:mod:`.verdicts`). It stands on the engine and the loaders, and knows nothing of the store, the partitioned
engines, the retrievers or the CLI."""
