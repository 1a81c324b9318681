"""The package's version, where every module that records it (run metadata, exports) reads it."""

__version__ = "0.1.0"
