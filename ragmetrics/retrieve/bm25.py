"""The built-in lexical baseline: BM25 over a dataset's corpus, made as the project's shared BM25 runs were.

``bm25s`` (Lucene BM25, k1=1.2, b=0.75); a document's text is its title and text joined by a space. English:
``bm25s.tokenize`` (lowercased, tokens of two or more word characters), stopwords "en", PyStemmer's English
(Snowball) stemmer. Chinese: ``jieba`` search-mode tokens of the lowercased text, keeping those with a word
character. The language is chosen by the corpus text (its CJK share, over an even sample of documents) unless
given. A query's ranking: the documents scoring above 0, by score, ties by doc_id, cut at k.

The index is built once per corpus content and kept on disk under ``<cache dir>/bm25/<key>``, the key a
SHA-256 of the corpus (ids, titles, texts) and the parameters, so a second run loads it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.foundation.scripts import HAN_CHARACTER, quiet_jieba
from ragmetrics.retrieve.adapters import Adapter, Hit

if TYPE_CHECKING:
    import pandas as pd

    from ragmetrics.foundation.model import Dataset

K1 = 1.2
B = 0.75
METHOD = "lucene"
CJK_SHARE = 0.3
NO_WORDS = "the corpus holds no word to index (every text is empty, or stopwords only): BM25 has nothing to rank by"
"""A corpus whose letters are at least this share CJK ideographs is tokenized as Chinese."""
SAMPLE_DOCUMENTS = 2000
INDEX_VERSION = 1
_LATIN = re.compile(r"[A-Za-z]")
_WORD = re.compile(r"\w", re.UNICODE)


def document_texts(documents: pd.DataFrame) -> list[str]:
    """Title + " " + text (stripped; the text alone when there is no title), as make_runs.py does."""
    titles = documents["title"].fillna("").astype(str) if "title" in documents else [""] * len(documents)
    texts = documents["text"].fillna("").astype(str) if "text" in documents else [""] * len(documents)
    out = []
    for title, text in zip(titles, texts):
        title, text = title.strip(), text.strip()
        out.append(f"{title} {text}".strip() if title else text)
    return out


def detect_language(texts: list[str]) -> tuple[str, float]:
    """``("zh" or "en", CJK share)`` over an even sample of the texts."""
    step = max(1, len(texts) // SAMPLE_DOCUMENTS)
    cjk = latin = 0
    for text in texts[::step]:
        cjk += len(HAN_CHARACTER.findall(text))
        latin += len(_LATIN.findall(text))
    share = cjk / (cjk + latin) if cjk + latin else 0.0
    return ("zh" if share >= CJK_SHARE else "en"), share


def zh_tokens(text: str) -> list[str]:
    return [w for w in quiet_jieba().lcut_for_search(text.lower()) if _WORD.search(w)]


def corpus_key(doc_ids: list[str], texts: list[str], params: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(params, sort_keys=True).encode())
    for doc, text in zip(doc_ids, texts):
        digest.update(doc.encode("utf-8", "surrogatepass") + b"\0" + text.encode("utf-8", "surrogatepass") + b"\1")
    return digest.hexdigest()[:32]


def _versions() -> dict[str, str]:

    out = {}
    for package in ("bm25s", "PyStemmer", "jieba"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            out[package] = "absent"
    return out


def _quiet_jieba() -> None:
    quiet_jieba().initialize()


class BM25(Adapter):
    """BM25 over ``documents`` (a frame ``doc_id, title, text``). Build it with :meth:`from_dataset` or
    :meth:`from_documents`; ``cache_dir=None`` keeps the index in memory only."""

    kind = "bm25"
    native_timeout = True  # in-process and never waits on anything: no watcher thread per call

    def __init__(self, model: Any, doc_ids: list[str], *, language: str, key: str, info: dict[str, Any]) -> None:
        self.model = model
        self.doc_ids = np.array(doc_ids)
        self.language = language
        self.key = key
        self.info = info
        self._local = threading.local()

    @classmethod
    def from_dataset(
        cls, dataset: Dataset, *, cache_dir: str | os.PathLike[str] | None = None, language: str = "auto"
    ) -> BM25:
        if dataset.documents is None or not len(dataset.documents):
            raise RagMetricsError("the bm25 retriever needs the dataset's corpus (--corpus corpus.jsonl)")
        return cls.from_documents(dataset.documents, cache_dir=cache_dir, language=language)

    @classmethod
    def from_documents(
        cls,
        documents: pd.DataFrame,
        *,
        cache_dir: str | os.PathLike[str] | None = None,
        language: str = "auto",
        k1: float = K1,
        b: float = B,
    ) -> BM25:
        import bm25s  # noqa: PLC0415 (the retrieve extra, loaded on use)

        doc_ids = [str(d) for d in documents["doc_id"]]
        texts = document_texts(documents)
        share = None
        if language == "auto":
            language, share = detect_language(texts)
        if language not in ("en", "zh"):
            raise RagMetricsError(f"bm25 language {language!r}: expected auto, en or zh")
        params = {"k1": k1, "b": b, "method": METHOD, "language": language, "version": INDEX_VERSION, **_versions()}
        key = corpus_key(doc_ids, texts, params)
        info: dict[str, Any] = {"documents": len(doc_ids), "language": language, "k1": k1, "b": b, "method": METHOD}
        if share is not None:
            info["cjk_share"] = round(share, 4)
        folder = Path(cache_dir) / "bm25" / key if cache_dir is not None else None
        started = time.perf_counter()
        if language == "zh":
            _quiet_jieba()
        if folder is not None and (folder / "doc_ids.json").exists():
            model = bm25s.BM25.load(str(folder), show_progress=False)
            stored = json.loads((folder / "doc_ids.json").read_text(encoding="utf-8"))
            info["index"] = "loaded"
            if stored != doc_ids:  # a hash collision cannot happen in practice; a torn folder might
                model, info["index"] = cls._build(texts, language, k1, b), "rebuilt"
        else:
            model = cls._build(texts, language, k1, b)
            info["index"] = "built"
            if folder is not None:
                _save(model, doc_ids, folder)
        info["index_seconds"] = round(time.perf_counter() - started, 3)
        return cls(model, doc_ids, language=language, key=key, info=info)

    @staticmethod
    def _build(texts: list[str], language: str, k1: float, b: float) -> Any:
        import bm25s  # noqa: PLC0415 (the retrieve extra, loaded on use)

        if language == "en":
            import Stemmer  # noqa: PLC0415 (the retrieve extra, loaded on use)

            tokens: Any = bm25s.tokenize(texts, stopwords="en", stemmer=Stemmer.Stemmer("english"), show_progress=False)
        else:
            tokens = [zh_tokens(t) for t in texts]
        if not (tokens.vocab if language == "en" else any(tokens)):
            raise RagMetricsError(NO_WORDS)
        model = bm25s.BM25(k1=k1, b=b, method=METHOD)
        model.index(tokens, show_progress=False)
        return model

    @property
    def identity(self) -> str:
        return f"bm25:{self.key}"

    @property
    def default_name(self) -> str:
        return "bm25-stem" if self.language == "en" else "bm25-jieba"

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "model": "bm25s", **self.info, "index_key": self.key}

    def tokens(self, query: str) -> list[str]:
        if self.language == "zh":
            return zh_tokens(query)
        import bm25s  # noqa: PLC0415 (the retrieve extra, loaded on use)

        stemmer = getattr(self._local, "stemmer", None)
        if stemmer is None:  # a PyStemmer stemmer is not to be shared between threads
            import Stemmer  # noqa: PLC0415 (the retrieve extra, loaded on use)

            stemmer = self._local.stemmer = Stemmer.Stemmer("english")
        found = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)
        return [t for t in found[0] if t]

    def search(self, query: str, k: int, timeout: float | None) -> list[Hit]:
        tokens = self.tokens(query)
        if not tokens:
            return []
        scores = np.asarray(self.model.get_scores(tokens), dtype=np.float64)
        positive = np.flatnonzero(scores > 0)
        order = positive[np.lexsort((self.doc_ids[positive], -scores[positive]))][:k]
        return [Hit(str(self.doc_ids[i]), float(scores[i])) for i in order]


def _save(model: Any, doc_ids: list[str], folder: Path) -> None:
    """Write the index beside its final place, then rename it there (a reader never sees half an index)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        model.save(str(staging), show_progress=False)
        (staging / "doc_ids.json").write_text(json.dumps(doc_ids, ensure_ascii=False), encoding="utf-8")
        with contextlib.suppress(OSError):  # another process saved the same index first
            os.replace(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
