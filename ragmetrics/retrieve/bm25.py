"""The built-in lexical baseline: BM25 over a dataset's corpus, made as the project's shared BM25 runs were.

``bm25s`` (Lucene BM25, k1=1.2, b=0.75); a document's text is its title and text joined by a space. English:
``bm25s.tokenize`` (lowercased, tokens of two or more word characters), stopwords "en", PyStemmer's English
(Snowball) stemmer. Chinese: ``jieba`` search-mode tokens of the lowercased text, keeping those with a word
character. Mixed (a corpus of English documents and Chinese ones): each run of CJK ideographs as Chinese, the rest
of the text as English, so a Chinese query finds the Chinese documents and an English one the English documents (a
text of one script is tokenized as that language alone). The language is chosen by the corpus text unless given:
over an even sample of documents, Chinese when their CJK share of letters is at least :data:`CJK_SHARE`, else
English; mixed when the sample holds documents of both, the fewer at least :data:`ragmetrics.foundation.scripts.MIXED_SHARE` of them. A query's
ranking: the documents scoring above 0, by score, ties by doc_id, cut at k.

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
from ragmetrics.foundation.scripts import HAN, HAN_CHARACTER, MIXED_SHARE, quiet_jieba
from ragmetrics.retrieve.adapters import Adapter, Hit

if TYPE_CHECKING:
    import pandas as pd

    from ragmetrics.foundation.model import Dataset

K1 = 1.2
B = 0.75
METHOD = "lucene"
CJK_SHARE = 0.3
"""A corpus whose letters are at least this share CJK ideographs is tokenized as Chinese."""
NO_WORDS = "the corpus holds no word to index (every text is empty, or stopwords only): BM25 has nothing to rank by"
SAMPLE_DOCUMENTS = 2000
LANGUAGES = ("en", "zh", "mixed")
DEFAULT_NAMES = {"en": "bm25-stem", "zh": "bm25-jieba", "mixed": "bm25-stem-jieba"}
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


def detect_language(texts: list[str], *, mixed: bool = False) -> tuple[str, float]:
    """``("zh" or "en", CJK share)`` over an even sample of the texts; ``mixed``: ``"mixed"`` too, when the sample
    holds English and Chinese documents, the fewer at least :data:`ragmetrics.foundation.scripts.MIXED_SHARE` of them."""
    step = max(1, len(texts) // SAMPLE_DOCUMENTS)
    cjk = latin = 0
    by_language = {"en": 0, "zh": 0}
    for text in texts[::step]:
        own_cjk, own_latin = len(HAN_CHARACTER.findall(text)), len(_LATIN.findall(text))
        cjk, latin = cjk + own_cjk, latin + own_latin
        if own_cjk + own_latin:
            by_language["zh" if own_cjk >= CJK_SHARE * (own_cjk + own_latin) else "en"] += 1
    share = cjk / (cjk + latin) if cjk + latin else 0.0
    fewer = min(by_language.values())
    if mixed and fewer and fewer >= MIXED_SHARE * sum(by_language.values()):
        return "mixed", share
    return ("zh" if share >= CJK_SHARE else "en"), share


def zh_tokens(text: str) -> list[str]:
    return [w for w in quiet_jieba().lcut_for_search(text.lower()) if _WORD.search(w)]


_HAN_RUN = re.compile(f"[{HAN}]+")


def mixed_tokens(texts: list[str], stemmer: Any) -> list[list[str]]:
    """Each text's tokens in the mixed mode (see the module): its CJK runs as :func:`zh_tokens`, the rest as the
    English mode's ``bm25s.tokenize``."""
    import bm25s  # noqa: PLC0415 (the retrieve extra, loaded on use)

    rest = [_HAN_RUN.sub(" ", text) for text in texts]
    english = bm25s.tokenize(rest, stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False)
    return [
        [w for run in _HAN_RUN.findall(text) for w in zh_tokens(run)] + [t for t in words if t]
        for text, words in zip(texts, english)
    ]


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
            language, share = detect_language(texts, mixed=True)
        if language not in LANGUAGES:
            raise RagMetricsError(f"bm25 language {language!r}: expected auto, {', '.join(LANGUAGES)}")
        params = {"k1": k1, "b": b, "method": METHOD, "language": language, "version": INDEX_VERSION, **_versions()}
        key = corpus_key(doc_ids, texts, params)
        info: dict[str, Any] = {"documents": len(doc_ids), "language": language, "k1": k1, "b": b, "method": METHOD}
        if share is not None:
            info["cjk_share"] = round(share, 4)
        folder = Path(cache_dir) / "bm25" / key if cache_dir is not None else None
        started = time.perf_counter()
        if language != "en":
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
        elif language == "mixed":
            import Stemmer  # noqa: PLC0415 (the retrieve extra, loaded on use)

            tokens = mixed_tokens(texts, Stemmer.Stemmer("english"))
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
        return DEFAULT_NAMES[self.language]

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
        if self.language == "mixed":
            return mixed_tokens([query], stemmer)[0]
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
