"""Model endpoints the deployer registers: an OpenAI-compatible chat-completions endpoint (hosted APIs, vLLM,
Ollama, llama.cpp's server) or a Python callable ``module:attr``, looked up by name, never by an address a user
typed. The generators of :mod:`ragmetrics.synth` and the judges of :mod:`ragmetrics.judges` call them through
:class:`ragmetrics.models.base.ChatModel`.

Modules: :mod:`~ragmetrics.models.base` (:class:`Message`, :class:`Reply`, :class:`ChatModel`);
:mod:`~ragmetrics.models.registry` (``$RAGMETRICS_MODELS``, :func:`get_model`);
:mod:`~ragmetrics.models.openai_chat` and :mod:`~ragmetrics.models.callable` (the two kinds);
:mod:`~ragmetrics.models.cache` (replies on disk, keyed by the request). httpx is imported on the first call.
"""
