"""The generators by name (:data:`GENERATORS`): the one place a generator is added; the CLI's choices and help
come from here.

A factory takes the chunked :class:`~ragmetrics.synth.corpus.Corpus` and the options (``model``: a registered
model's name) and returns a :class:`~ragmetrics.synth.base.Generator`. The ``model`` entry imports
:mod:`ragmetrics.synth.model_generator` and the model registry only when it is used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.synth.base import DEFAULT_CATEGORIES, Generator
from ragmetrics.synth.corpus import Corpus
from ragmetrics.synth.extractive import CATEGORIES as EXTRACTIVE_CATEGORIES
from ragmetrics.synth.extractive import ExtractiveGenerator


@dataclass(frozen=True)
class GeneratorEntry:
    help: str
    factory: Callable[[Corpus, Mapping[str, Any]], Generator]
    needs_model: bool = False
    categories: tuple[str, ...] = DEFAULT_CATEGORIES
    """The categories it writes (the default mix of the Build dataset page)."""


def _extractive(corpus: Corpus, options: Mapping[str, Any]) -> Generator:
    if options.get("model"):
        raise RagMetricsError("the extractive generator uses no model: drop --model, or use --generator model")
    return ExtractiveGenerator(corpus)


def _model(corpus: Corpus, options: Mapping[str, Any]) -> Generator:
    name = options.get("model")
    if not name:
        raise RagMetricsError("the model generator needs a registered model: --model NAME")
    try:
        module = importlib.import_module("ragmetrics.synth.model_generator")
        registry = importlib.import_module("ragmetrics.models.registry")
    except ModuleNotFoundError as exc:
        raise RagMetricsError(
            f"the model generator is not available in this installation ({exc.name} is missing)"
        ) from None
    model = registry.get_model(name)
    built: Generator = module.ModelGenerator(model)
    return built


GENERATORS: dict[str, GeneratorEntry] = {
    "extractive": GeneratorEntry(
        "no model: known-item, cloze, summary (lead) and negative queries cut from the sources' words (weaker than "
        "a model: a lexical retriever finds them too easily)",
        _extractive,
        categories=EXTRACTIVE_CATEGORIES,
    ),
    "model": GeneratorEntry("a registered model writes queries per category (--model NAME)", _model, True),
}


def make_generator(name: str, corpus: Corpus, **options: Any) -> Generator:
    """The generator ``name`` over ``corpus``."""
    entry = GENERATORS.get(name)
    if entry is None:
        raise RagMetricsError(f"generator {name!r}: expected one of {', '.join(GENERATORS)}")
    return entry.factory(corpus, options)
