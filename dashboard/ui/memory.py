"""Memory bounded in bytes: the budgets, the cap on the bytes a session's uploads hold, and the release of what a
session held once it ended.

* Budgets (environment first, then the ``[ragmetrics]`` table of ``.streamlit/secrets.toml``; sizes such as
  ``512MB`` or ``2GiB``): ``RAGMETRICS_UPLOAD_SESSION_BYTES`` (``upload_session_bytes``, default 1 GiB) is what the
  files in one session's uploaders may hold together, ``RAGMETRICS_UPLOAD_TOTAL_BYTES`` (``upload_total_bytes``,
  4 GiB) what all sessions' may, ``RAGMETRICS_CACHE_BYTES`` (``cache_bytes``, 2 GiB) what the caches of loaded
  runs, alignments and derived frames keep together (half for alignments, 3/10 for loaded datasets and runs, 1/5
  for frames).
* :class:`UploadBudget`, an ASGI middleware in front of Streamlit's upload route, refuses (413, with the reason)
  an upload that would take its session or the server past the budget, before its body is read, and runs the
  session's page again so it says why (:func:`last_refusal`); a request without ``Content-Length`` is refused
  (411). Streamlit keeps an upload's bytes while its uploader shows it.
* What an upload inflates to (a gzip) counts against the same budgets while it is read (:func:`counted_inflation`):
  the decompression stops, and the file is refused, as soon as the session's or the server's uploads would pass
  theirs, however far below its own size limit (``RAGMETRICS_MAX_BYTES``) it still is.
* :class:`Sweeper` looks every few seconds for sessions that ended (Streamlit forgets a disconnected session
  ``server.disconnectedSessionTTL`` seconds after it left, but keeps its uploaded files): it drops their
  uploaded files and what the caches held only for them, and hands freed memory back to the system.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from dashboard.ui import settings
from ragmetrics.foundation.errors import RagMetricsError
from ragmetrics.io.limits import human_bytes, metered_inflation, parse_size

GiB = 1 << 30

SETTINGS = {  # field: (environment variable, secrets key)
    "upload_session": ("RAGMETRICS_UPLOAD_SESSION_BYTES", "upload_session_bytes"),
    "upload_total": ("RAGMETRICS_UPLOAD_TOTAL_BYTES", "upload_total_bytes"),
    "cache": ("RAGMETRICS_CACHE_BYTES", "cache_bytes"),
}


@dataclass(frozen=True)
class Budgets:
    """Bytes the server may hold (see the module documentation)."""

    upload_session: int = 1 * GiB
    upload_total: int = 4 * GiB
    cache: int = 2 * GiB

    @property
    def alignments(self) -> int:
        return self.cache // 2

    @property
    def objects(self) -> int:
        return self.cache * 3 // 10

    @property
    def frames(self) -> int:
        return self.cache - self.alignments - self.objects

    @classmethod
    def read(cls) -> Budgets:
        """The deployment's budgets: the environment, then the secrets, then the defaults."""
        table = settings.secrets_table()
        values = {}
        for name, (env, key) in SETTINGS.items():
            text = settings.setting(env, key, table)
            if text:
                values[name] = parse_size(text, env)
        return cls(**values)


_budgets: Budgets | None = None


def budgets() -> Budgets:
    """:meth:`Budgets.read`, once per process."""
    global _budgets
    if _budgets is None:
        _budgets = Budgets.read()
    return _budgets


def current_session() -> str | None:
    """The id of the Streamlit session running this thread's script (None outside one)."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    return None if ctx is None else ctx.session_id


def _runtime() -> Any:
    from streamlit.runtime import Runtime

    return Runtime.instance() if Runtime.exists() else None


def upload_bytes() -> dict[str, int]:
    """``{session id: bytes}`` of the uploaded files Streamlit holds, per session."""
    runtime = _runtime()
    if runtime is None:
        return {}
    manager = runtime.uploaded_file_mgr
    with manager._lock:
        return {sid: sum(len(f.data) for f in files.values()) for sid, files in manager.file_storage.items()}


def _file_bytes(session: str, file_id: str) -> int:
    """Bytes of the one uploaded file an upload would replace (0 when it is new)."""
    runtime = _runtime()
    if runtime is None:
        return 0
    manager = runtime.uploaded_file_mgr
    with manager._lock:
        found = manager.file_storage.get(session, {}).get(file_id)
        return 0 if found is None else len(found.data)


def over_budget(session: str, incoming: int, held: dict[str, int], limits: Budgets) -> str | None:
    """Why an upload of ``incoming`` bytes in ``session`` is refused, or None. ``held`` is what each session's
    uploads hold, those on their way included."""
    mine, everyone = held.get(session, 0) + incoming, sum(held.values()) + incoming
    if mine > limits.upload_session:
        return (
            f"This upload ({human_bytes(incoming)}) would take the files of this session's uploaders to "
            f"{human_bytes(mine)}; a session may hold {human_bytes(limits.upload_session)} "
            f"({SETTINGS['upload_session'][0]}). Remove files from the uploaders (x) and try again."
        )
    if everyone > limits.upload_total:
        return (
            f"The server holds {human_bytes(everyone - incoming)} of uploads; this one ({human_bytes(incoming)}) would "
            f"pass its limit of {human_bytes(limits.upload_total)} ({SETTINGS['upload_total'][0]}). Try again when "
            "other sessions have finished, or remove files from the uploaders."
        )
    return None


Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Any]
_UPLOAD = re.compile(r"/_stcore/upload_file/([^/]+)/([^/]+)$")


class UploadBudget:
    """The ASGI middleware that keeps uploads within :class:`Budgets` (see the module documentation).
    ``refusals`` keeps the last refusal per session (at most 1,000 sessions), for the upload page to show."""

    def __init__(self, app: ASGIApp, *, limits: Callable[[], Budgets] = budgets) -> None:
        self.app = app
        self._limits = limits
        self._lock = threading.Lock()
        self._coming: dict[str, int] = {}
        self._inflating: dict[str, int] = {}  # bytes uploads are being decompressed to, per session
        self.refusals: OrderedDict[str, str] = OrderedDict()
        UploadBudget.latest = self

    latest: UploadBudget | None = None
    """The middleware the server made (the upload page reads its refusals)."""

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        match = _UPLOAD.search(scope.get("path", "")) if scope["type"] == "http" else None
        if match is None or scope.get("method") != "PUT":
            await self.app(scope, receive, send)
            return
        session, file_id = match.groups()
        headers = dict(scope.get("headers", []))
        length = headers.get(b"content-length", b"")
        if not length.isdigit() or b"transfer-encoding" in headers:
            # with a Transfer-Encoding the server frames the body by it, whatever Content-Length says: the budget
            # would count the length stated, not the bytes sent (browsers state the length of a file they upload)
            await _respond(send, 411, "An upload must state its Content-Length, and no Transfer-Encoding.")
            return
        incoming = int(length)
        with self._lock:
            held = upload_bytes()
            held[session] = held.get(session, 0) - _file_bytes(session, file_id)
            for counts in (self._coming, self._inflating):
                for sid, coming in counts.items():
                    held[sid] = held.get(sid, 0) + coming
            reason = over_budget(session, incoming, held, self._limits())
            if reason is None:
                self._coming[session] = self._coming.get(session, 0) + incoming
            else:
                self.refusals[session] = reason
                self.refusals.move_to_end(session)
                while len(self.refusals) > 1000:
                    self.refusals.popitem(last=False)
        if reason is not None:
            await _respond(send, 413, reason)
            _rerun(session)  # the uploader only says "status code 413": the page says why
            return
        try:
            await self.app(scope, receive, send)
        finally:
            with self._lock:
                left = self._coming.pop(session, 0) - incoming
                if left > 0:
                    self._coming[session] = left


def _inflation_refusal(source: str, session: str, produced: int, held: dict[str, int], limits: Budgets) -> str | None:
    """Why decompressing ``produced`` bytes more of ``source`` in ``session`` is refused, or None. ``held``: the
    bytes each session's uploads hold, and are being decompressed to."""
    mine, everyone = held.get(session, 0) + produced, sum(held.values()) + produced
    if mine > limits.upload_session:
        return (
            f"{source}: decompressed, it takes this session's uploads past {human_bytes(limits.upload_session)} "
            f"({SETTINGS['upload_session'][0]}), the files in the uploaders counted; it was refused there. Remove "
            "files from the uploaders, or upload it in smaller parts."
        )
    if everyone > limits.upload_total:
        return (
            f"{source}: decompressed, it takes the server's uploads past {human_bytes(limits.upload_total)} "
            f"({SETTINGS['upload_total'][0]}); it was refused there. Try again when other sessions have finished."
        )
    return None


@contextlib.contextmanager
def counted_inflation(session: str | None) -> Iterator[None]:
    """Within the block, what the loaders decompress in this thread counts against ``session``'s and the server's
    upload budgets (beside the uploaded files and the uploads on their way), and a step past either stops the
    decompression with a :class:`~ragmetrics.foundation.errors.RagMetricsError` saying why; released at the end of the block."""
    gate = UploadBudget.latest
    if gate is None or session is None:
        yield
        return
    counted = 0

    def meter(source: str, produced: int) -> None:
        nonlocal counted
        with gate._lock:
            held = upload_bytes()
            for counts in (gate._coming, gate._inflating):
                for sid, coming in counts.items():
                    held[sid] = held.get(sid, 0) + coming
            reason = _inflation_refusal(source, session, produced, held, gate._limits())
            if reason is not None:
                raise RagMetricsError(reason)
            gate._inflating[session] = gate._inflating.get(session, 0) + produced
            counted += produced

    try:
        with metered_inflation(meter):
            yield
    finally:
        with gate._lock:
            left = gate._inflating.pop(session, 0) - counted
            if left > 0:
                gate._inflating[session] = left


def _rerun(session: str) -> None:
    """Run the session's page again with the state it has (as Streamlit does when its source changes)."""
    runtime = _runtime()
    info = None if runtime is None else runtime._session_mgr.get_active_session_info(session)
    if info is not None:
        with contextlib.suppress(Exception):
            info.session.request_rerun(info.session._client_state)


def last_refusal(session: str | None) -> str | None:
    """The upload this session was last refused, and why (taken: shown once)."""
    gate = UploadBudget.latest
    if gate is None or session is None:
        return None
    with gate._lock:
        return gate.refusals.pop(session, None)


async def _respond(send: Any, status: int, text: str) -> None:
    body = text.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class Held(Protocol):
    """A cache that knows the sessions using its entries (:class:`dashboard.data.bounded.ByteLRU`). One with a true
    ``while_connected`` attribute is released as soon as a session's browser is gone (a reload, a closed tab), not
    when the session ends (:class:`dashboard.data.workspace.ClaimHolders`)."""

    while_connected: bool

    def users(self) -> set[str]: ...

    def release(self, user: str) -> int: ...


def end_expired_sessions() -> int:
    """Shut down the disconnected sessions whose time to reconnect is over; how many.

    Streamlit's store of disconnected sessions drops an expired one only when it is next written to, and never
    shuts it down: until then the session's state (its uploads, its page's objects) stays in memory."""
    runtime = _runtime()
    storage = None if runtime is None else getattr(runtime._session_mgr, "_session_storage", None)
    expire = getattr(getattr(storage, "_cache", None), "expire", None)
    if expire is None:
        return 0
    ended = expire()
    for _, info in ended:
        with contextlib.suppress(Exception):
            info.session.shutdown()
    return len(ended)


def live_sessions() -> set[str] | None:
    """Ids of the sessions Streamlit still has (connected, or disconnected and resumable); None without a runtime."""
    runtime = _runtime()
    if runtime is None:
        return None
    return {info.session.id for info in runtime._session_mgr.list_sessions()}


def connected_sessions() -> set[str] | None:
    """Ids of the sessions with a browser connected now; None without a runtime."""
    runtime = _runtime()
    if runtime is None:
        return None
    return {info.session.id for info in runtime._session_mgr.list_active_sessions()}


def give_back_memory() -> None:
    """Hand memory freed in the allocators back to the system (Arrow's pools; glibc's heap where there is one)."""
    import pyarrow as pa

    from ragmetrics.foundation.memory import reading_pool

    pa.default_memory_pool().release_unused()
    reading_pool().release_unused()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


class Sweeper:
    """Every ``interval`` seconds, release what the ended sessions held (see the module documentation)."""

    def __init__(self, caches: Callable[[], Sequence[Held]], *, interval: float = 5.0) -> None:
        self._caches, self.interval = caches, interval
        self._stop = threading.Event()
        self._seen: set[str] = set()
        self._gone: dict[int, set[str]] = {}  # by cache: the sessions seen without a browser at the last sweep
        self.released = 0  # bytes released so far (logs and tests)
        self._thread = threading.Thread(target=self._loop, name="ragmetrics-sweeper", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.sweep()
            except Exception:  # a sweep must never end the thread; the next one tries again
                continue

    def sweep(self) -> int:
        """Release the ended sessions' uploads and cache entries now; the bytes released."""
        end_expired_sessions()
        live = live_sessions()
        if live is None:
            return 0
        ended, self._seen = self._seen - live, live
        freed = 0
        runtime = _runtime()
        for session, size in upload_bytes().items():
            if session not in live:
                runtime.uploaded_file_mgr.remove_session_files(session)
                freed += size
        for cache in self._caches():
            if cache.while_connected:
                users = cache.users()  # before the connected sessions: one that connects meanwhile is kept
                gone = users - (connected_sessions() or set())
                for session in gone & self._gone.get(id(cache), set()):  # gone on two sweeps: not a blip
                    freed += cache.release(session)
                self._gone[id(cache)] = gone
                continue
            for session in cache.users() - live:
                freed += cache.release(session)
        if freed or ended:
            # a forgotten session's objects hold reference cycles (its state, its script's frames), and the
            # server runs no collection after script runs (runner.postScriptGC): collect them now
            gc.collect()
            give_back_memory()
            self.released += freed
        return freed

    def stop(self) -> None:
        self._stop.set()
