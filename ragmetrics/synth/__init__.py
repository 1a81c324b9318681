"""From a corpus to candidate evaluation queries: sources sampled across documents, generators (one per kind:
extractive without a model, or a registered model endpoint), and the filters a reviewer sees as flags.

Modules: :mod:`~ragmetrics.synth.base` (what a generator takes and gives), :mod:`~ragmetrics.synth.corpus`
(reading, chunkers, stratified sampling), :mod:`~ragmetrics.synth.extractive` (the generator without a model),
:mod:`~ragmetrics.synth.generators` (the registry), :mod:`~ragmetrics.synth.filters` (flags),
:mod:`~ragmetrics.synth.output` (the evaluation set written), :mod:`~ragmetrics.synth.pipeline` (sample, generate,
flag) and :mod:`~ragmetrics.synth.check` (``dataset check``: freshness, coverage, power). This package imports none
of them; bm25s, PyStemmer and jieba are loaded only when a corpus is tokenized.
"""
