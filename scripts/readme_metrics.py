"""Print the README's metrics table, generated from the registry (``ragmetrics.engine.metrics.METRICS``).

    python scripts/readme_metrics.py

One row per metric: its name (with ``@k`` as its ``k`` rule says), the formula, the trec_eval measure it
equals or "(none)", and the first sentence of its conventions. The README holds this output verbatim
between ``<!-- metrics table: python scripts/readme_metrics.py -->`` and ``<!-- end metrics table -->``;
``tests/test_readme.py`` checks that the two agree, so after changing the registry run

    python scripts/readme_metrics.py

and paste its output between the markers.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from ragmetrics.engine.metrics import METRICS, MetricInfo, trec_eval_names

BEGIN = "<!-- metrics table: python scripts/readme_metrics.py -->"
END = "<!-- end metrics table -->"

_SENTENCE_END = re.compile(r"(?<=[.)])\s+(?=[A-Z])")


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").strip()


def names(info: MetricInfo) -> str:
    """``precision@k``; ``mrr``, ``mrr@k`` when the cut-off is optional; ``rprec`` when it takes none."""
    if info.k == "required":
        return f"`{info.name}@k`"
    if info.k == "optional":
        return f"`{info.name}`, `{info.name}@k`"
    return f"`{info.name}`"


def trec_eval(info: MetricInfo) -> str:
    """The trec_eval measures (:func:`ragmetrics.engine.metrics.trec_eval_names`), or "(none)"."""
    return ", ".join(f"`{n}`" for n in trec_eval_names(info)) or "(none)"


def convention(info: MetricInfo) -> str:
    """The first sentence of the registry's conventions (the rest is on the dashboard's definitions page)."""
    first = _SENTENCE_END.split(info.conventions.strip(), maxsplit=1)[0]
    return first.rstrip(".")


def table() -> str:
    rows = ["| metric | formula | trec_eval | convention |", "|---|---|---|---|"]
    for info in METRICS.values():
        cells = [names(info), _cell(info.formula), trec_eval(info), _cell(convention(info))]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def main() -> None:
    sys.stdout.write(table())


if __name__ == "__main__":
    main()
