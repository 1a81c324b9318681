"""Coverage-guided fuzzing of the loaders with atheris (libFuzzer), optional.

Run one family for a while (crashes, including a segmentation fault inside a
C extension, are written by libFuzzer as ``crash-*`` files in the work folder)::

    pip install atheris
    python tests/test_fuzz_atheris.py trec_run -max_total_time=300 -workers=2 -jobs=2

Inputs: the first byte picks the loader (run / dataset) and the file name
(extension, gzip), the rest is the file. The seed corpus is drawn from the
generators of ``tests/test_fuzz_loaders.py``; the property is its
``check_case`` (our error type, the file named, a line inside the file, no
stray warning, bounded time). The pytest test below runs a short, bounded
session per family when atheris is installed, and is skipped otherwise.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _seed_corpus(family: str, folder: Path, count: int = 64) -> None:
    from tests.test_fuzz_loaders import FAMILIES, RandomDraw, make_case

    folder.mkdir(parents=True, exist_ok=True)
    fam = FAMILIES[family]
    for i in range(count):
        case = make_case(RandomDraw(random.Random(f"atheris-{family}-{i}")), fam)
        if len(case.data) > 200_000:
            continue
        selector = (fam.filenames.index(case.filename) * 2 + (case.kind != fam.kinds[0])) & 0xFF
        (folder / f"seed-{i}").write_bytes(bytes([selector]) + case.data)


def main(argv: list[str]) -> None:
    import atheris

    family = argv[1]
    with atheris.instrument_imports(include=["ragmetrics"]):
        from ragmetrics.io import load_dataset, load_run  # noqa: F401 - instrumented for coverage
    from tests.test_fuzz_loaders import FAMILIES, LIMITS, Case, check_case

    fam = FAMILIES[family]

    def one_input(data: bytes) -> None:
        if not data:
            return
        selector, body = data[0], data[1:]
        filename = fam.filenames[(selector >> 1) % len(fam.filenames)]
        kind = fam.kinds[(selector & 1) % len(fam.kinds)]
        check_case(Case(family, body, kind, filename, LIMITS, {}))

    corpus = Path(os.environ.get("RAGMETRICS_ATHERIS_CORPUS", tempfile.gettempdir())) / f"ragmetrics-atheris-{family}"
    if not corpus.exists() or not any(corpus.iterdir()):
        _seed_corpus(family, corpus)
    args = [argv[0], *argv[2:], str(corpus)]
    if not any(a.startswith("-max_len") for a in args):
        args.insert(1, "-max_len=65536")
    if not any(a.startswith("-timeout") for a in args):
        args.insert(1, "-timeout=20")
    atheris.Setup(args, one_input)
    atheris.Fuzz()


FAMILIES = ["trec_run", "trec_qrels", "evalset", "jsonl_run", "table", "parquet", "dict_json", "beir_zip"]


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_atheris_smoke(family: str, tmp_path: Path) -> None:
    """A short coverage-guided session per family: opt-in with ``RAGMETRICS_ATHERIS_RUNS=N``."""
    runs = os.environ.get("RAGMETRICS_ATHERIS_RUNS")
    if not runs:
        pytest.skip("set RAGMETRICS_ATHERIS_RUNS=N (and pip install atheris) to run the coverage-guided fuzzer")
    pytest.importorskip("atheris")
    result = subprocess.run(
        [sys.executable, __file__, family, f"-runs={runs}", "-max_total_time=60", "-print_final_stats=1"],
        cwd=tmp_path,
        env={**os.environ, "RAGMETRICS_ATHERIS_CORPUS": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    crashes = list(tmp_path.glob("crash-*")) + list(tmp_path.glob("timeout-*"))
    assert result.returncode == 0 and not crashes, (result.stderr[-3000:], crashes)


if __name__ == "__main__":
    main(sys.argv)
