"""An OpenAI-compatible ``POST /v1/embeddings`` client over HTTP or a Unix socket (httpx).

This is the reference's ``--embedder-http`` / ``--embedder-uds``. A request for one text (the
probe, a query) is the reference's own body, ``{"input": "<text>", "model": …}``. Several texts
go in one request as a list (``batch_size`` at most; OpenAI-compatible servers take either
shape), and a server that refuses a list (HTTP 400/422, or one vector for several texts) is
sent one string per request from then on, as the reference always did (ADR 0171).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable, Sequence
from typing import Any, Final
from urllib.parse import urlsplit

import httpcore
import httpx
import msgspec
import numpy as np
import numpy.typing as npt

from lcg.errors import EmbedderError

__all__ = [
    "REFERENCE_MIN_SCORE",
    "REFERENCE_MODEL",
    "HttpEmbedder",
    "UdsEmbedder",
    "embeddings_endpoint",
    "openai_endpoint",
]

_PATH: Final = "/v1/embeddings"
#: The text the startup probe embeds (as the reference).
PROBE_TEXT: Final = "probe"


#: The model asked for when none is configured (the reference's default, lcg-api.md §9).
REFERENCE_MODEL: Final = "bge-base-en-v1.5"
#: The reference's ``min_score`` default, chosen for its ``bge-base-en-v1.5``: the default
#: floor of a server's model, whose scale lcg cannot know (ADR 0198).
REFERENCE_MIN_SCORE: Final = 0.5
# The answers that mean "this server takes no list as ``input``".
_LIST_REFUSED: Final = frozenset({400, 422})


class _EmbeddingRequest(msgspec.Struct, frozen=True):
    """The request body of ``POST /v1/embeddings``: one string, or a list for a batch."""

    input: str | list[str]
    model: str


class _EmbeddingItem(msgspec.Struct, frozen=True):
    """One vector of an embeddings response."""

    embedding: list[float]
    index: int | None = None


class _EmbeddingResponse(msgspec.Struct, frozen=True):
    """The part of an embeddings response lcg reads."""

    data: list[_EmbeddingItem]
    model: str | None = None


class _ListRefused(Exception):
    """The server refused (or misread) a list as ``input``: send one string per request."""


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(_EmbeddingResponse).decode


def openai_endpoint(url: str, resource: str) -> str:
    """The full endpoint of ``resource`` (``embeddings``, ``chat/completions``) for ``url``.

    A URL already ending in the resource is kept; one ending in ``/v1`` gets the resource, and
    a base URL gets ``/v1/<resource>`` appended.
    """
    path = urlsplit(url).path.rstrip("/")
    if path.endswith("/" + resource):
        return url
    if path.endswith("/v1"):
        return url.rstrip("/") + "/" + resource
    return url.rstrip("/") + "/v1/" + resource


def embeddings_endpoint(url: str) -> str:
    """The full endpoint for ``url``: a base URL gets ``/v1/embeddings`` appended."""
    return openai_endpoint(url, "embeddings")


class HttpEmbedder:
    """An OpenAI-compatible embeddings endpoint over HTTP; vectors are re-normalised to unit.

    ``dim`` and ``model_id`` come from a probe (embedding ``"probe"``) made by ``probe()`` or
    lazily on first use; a configured ``dim`` must match what the server returns.
    """

    def __init__(
        self,
        url: str,
        model: str,
        *,
        dim: int | None = None,
        batch_size: int = 64,
        timeout_s: float = 60.0,
        transport: httpx.BaseTransport | None = None,
        where: str | None = None,
    ) -> None:
        self._url = embeddings_endpoint(url)
        self._where = where or self._url
        self._model = model
        self._configured_dim = dim
        self._batch_size = max(1, batch_size)
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
            transport=transport,
        )
        self._lock = threading.Lock()
        self._probed: tuple[str, int] | None = None
        self._closed = False
        #: The server refused a list as ``input``: one string per request from now on.
        self.one_per_request = False

    @property
    def where(self) -> str:
        """The endpoint, as errors name it (a URL, or ``unix:<path>``)."""
        return self._where

    @property
    def default_min_score(self) -> float:
        """The reference's floor: servers serve the reference's model by default (ADR 0198)."""
        return REFERENCE_MIN_SCORE

    @property
    def requested_model(self) -> str:
        """The ``model`` every request asks for (the server may report another name)."""
        return self._model

    @property
    def model_id(self) -> str:
        """The model name the server reports (the configured one if it reports none)."""
        return self.probe()[0]

    @property
    def dim(self) -> int:
        """The vector length, learnt from the probe."""
        return self.probe()[1]

    def probe(self) -> tuple[str, int]:
        """Embed ``"probe"`` once to learn ``(model_id, dim)``; cached after the first success."""
        probed = self._probed
        if probed is not None:
            return probed
        with self._lock:
            if self._probed is None:
                self._probed = self._probe_once()
            return self._probed

    def reprobe(self) -> tuple[str, int]:
        """Probe again now (the server may have come back, or changed); the new identity."""
        with self._lock:
            self._probed = self._probe_once()
            return self._probed

    def _probe_once(self) -> tuple[str, int]:
        vectors, model = self._request([PROBE_TEXT], self._configured_dim)
        return (model or self._model, int(vectors.shape[1]))

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts`` in requests of at most ``batch_size``; unit rows in input order."""
        _, dim = self.probe()
        out = np.zeros((len(texts), dim), dtype=np.float32)
        size = 1 if self.one_per_request else self._batch_size
        start = 0
        while start < len(texts):
            chunk = list(texts[start : start + size])
            try:
                out[start : start + len(chunk)] = self._request(chunk, dim)[0]
            except _ListRefused:
                self.one_per_request = True
                size = 1
                continue
            start += len(chunk)
        return out

    def _request(
        self, texts: list[str], dim: int | None
    ) -> tuple[npt.NDArray[np.float32], str | None]:
        if self._closed:
            raise EmbedderError(f"embedder at {self._where} is closed")
        batch = len(texts) > 1
        body = _encode(_EmbeddingRequest(input=texts if batch else texts[0], model=self._model))
        try:
            response = self._client.post(
                self._url, content=body, headers={"content-type": "application/json"}
            )
        except httpx.TimeoutException as exc:
            raise EmbedderError(f"embedder at {self._where} timed out: {exc}") from exc
        except httpx.TransportError as exc:
            raise EmbedderError(f"embedder at {self._where} is unreachable: {exc}") from exc
        except (httpx.HTTPError, RuntimeError) as exc:  # RuntimeError: client closed
            raise EmbedderError(f"embedder at {self._where} failed: {exc}") from exc
        if batch and response.status_code in _LIST_REFUSED:
            raise _ListRefused
        if response.status_code != 200:
            snippet = response.text[:200].strip()
            raise EmbedderError(
                f"embedder at {self._where} answered HTTP {response.status_code}: {snippet}"
            )
        try:
            parsed = _decode(response.content)
        except msgspec.DecodeError as exc:
            raise EmbedderError(
                f"embedder at {self._where} sent an unreadable response: {exc}"
            ) from exc
        if batch and len(parsed.data) == 1:
            raise _ListRefused  # it embedded the list as one text, or only its first
        return self._vectors(parsed, len(texts), dim), parsed.model

    def _vectors(
        self, parsed: _EmbeddingResponse, n: int, dim: int | None
    ) -> npt.NDArray[np.float32]:
        items = parsed.data
        if len(items) != n:
            raise EmbedderError(
                f"embedding response shape mismatch: asked for {n} vectors, got {len(items)}"
            )
        if all(item.index is not None for item in items):
            # Servers may answer out of order; ``index`` says which input each row is.
            items = sorted(items, key=lambda item: item.index or 0)
            if [item.index for item in items] != list(range(n)):
                raise EmbedderError("embedding response shape mismatch: bad `index` values")
        width = dim if dim is not None else len(items[0].embedding)
        if width <= 0:
            raise EmbedderError("embedding response shape mismatch: empty vector")
        for item in items:
            if len(item.embedding) != width:
                raise EmbedderError(
                    f"embedding response shape mismatch: expected {width} dimensions, "
                    f"got {len(item.embedding)}"
                )
        vectors = np.asarray([item.embedding for item in items], dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if not np.all(np.isfinite(norms)) or not np.all(norms > 0):
            raise EmbedderError(f"embedder at {self._where} returned a zero or non-finite vector")
        result: npt.NDArray[np.float32] = (vectors / norms).astype(np.float32, copy=False)
        return result

    def close(self) -> None:
        """Close the connection pool; later calls raise ``EmbedderError``."""
        self._closed = True
        self._client.close()


class _UnixStream(httpcore.NetworkStream):
    """A connected Unix socket as an httpcore stream."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            self._sock.settimeout(timeout)
            return self._sock.recv(max_bytes)
        except TimeoutError as exc:
            raise httpcore.ReadTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.ReadError(str(exc)) from exc

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        try:
            self._sock.settimeout(timeout)
            self._sock.sendall(buffer)
        except TimeoutError as exc:
            raise httpcore.WriteTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.WriteError(str(exc)) from exc

    def close(self) -> None:
        self._sock.close()

    def get_extra_info(self, info: str) -> Any:
        return self._sock if info == "socket" else None


class _UnixBackend(httpcore.SyncBackend):
    """httpcore's sync backend, but a failed Unix-socket connect closes its socket.

    (httpcore 1.0's own backend leaves the socket to the garbage collector, which shows up
    as a ResourceWarning on every failed connect to a dead embedder socket.)
    """

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            for option in socket_options or ():
                sock.setsockopt(*option)
            sock.settimeout(timeout)
            sock.connect(path)
        except TimeoutError as exc:
            sock.close()
            raise httpcore.ConnectTimeout(str(exc)) from exc
        except OSError as exc:
            sock.close()
            raise httpcore.ConnectError(str(exc)) from exc
        return _UnixStream(sock)


class _UdsTransport(httpx.HTTPTransport):
    """httpx's transport over a Unix socket, with the connect fix of ``_UnixBackend``."""

    def __init__(self, path: str) -> None:
        super().__init__(uds=path)
        # httpx takes no network backend, so swap in a pool built with ours; httpx's
        # request/response mapping stays as it is. Four kept-alive connections, as the
        # reference pools.
        limits = httpx.Limits(max_connections=16, max_keepalive_connections=4)
        self._pool = httpcore.ConnectionPool(
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            uds=path,
            network_backend=_UnixBackend(),
        )


class UdsEmbedder(HttpEmbedder):
    """The same OpenAI-compatible endpoint, served on a Unix domain socket."""

    def __init__(
        self,
        path: str,
        model: str,
        *,
        dim: int | None = None,
        batch_size: int = 64,
        timeout_s: float = 60.0,
    ) -> None:
        super().__init__(
            "http://localhost" + _PATH,
            model,
            dim=dim,
            batch_size=batch_size,
            timeout_s=timeout_s,
            transport=_UdsTransport(path),
            where=f"unix:{path}",
        )
