"""Model endpoints the deployer registers: an OpenAI-compatible chat-completions endpoint (hosted APIs, vLLM,
Ollama, llama.cpp's server) or a Python callable ``module:attr``, looked up by name, never by an address a user
typed. The generators of :mod:`ragmetrics.synth` and the judges of :mod:`ragmetrics.judges` call them through
:class:`ragmetrics.models.base.ChatModel`."""
