"""Write ``ranx-cli-cases.json``: ranx's means on the CLI parity cases of ``tests/test_parity_peers.py``.

    python tests/data/ranx/make_ranx_cli_cases.py      # needs ranx (pip install ranx)

ranx compiles its metrics with numba on first use (about a minute in each test worker on a fresh machine), so the
test compares against ranx's output kept here rather than run it. The file keeps each case's qrels and run as they
were given to ranx, so the test can check that it still belongs to the cases it names; a mean ranx gives as NaN is
written as null.
"""

from __future__ import annotations

import json
import math
import sys
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "ranx-cli-cases.json"


def _json(value: float) -> float | None:
    return None if math.isnan(value) else value


def main() -> int:
    import ranx  # noqa: PLC0415 (needed by this script only)

    sys.path.insert(0, str(HERE.parents[2]))
    from tests.test_parity_peers import RANX_CASES, RANX_METRICS  # noqa: PLC0415 (run from anywhere)

    cases = {}
    for name, (qrels, run, _) in RANX_CASES.items():
        means = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), RANX_METRICS)
        cases[name] = {"qrels": qrels, "run": run, "means": {m: _json(float(means[m])) for m in RANX_METRICS}}
    payload = {"ranx": version("ranx"), "metrics": RANX_METRICS, "cases": cases}
    OUT.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes, ranx {version('ranx')})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
