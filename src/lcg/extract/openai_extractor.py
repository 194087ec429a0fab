"""The OpenAI-compatible extractor: ``POST /v1/chat/completions`` in JSON mode, over HTTP or a
Unix socket (httpx). This is the reference's local adapter (``--extractor-http`` /
``--extractor-uds``, ``LCG_EXTRACTION_URL``), for llama.cpp, vLLM, Ollama and the like.

JSON mode promises JSON but no schema, so the system prompt ends with the exact shape wanted
and the answer is parsed tolerantly (code fences and prose around the object are dropped).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Final

import httpx
import msgspec

from lcg.extract import prompts
from lcg.extract._openai_embed import _UdsTransport, openai_endpoint
from lcg.extract.cost import CostTable
from lcg.extract.extractor import (
    DEFAULT_RETRY_DELAYS,
    CallReply,
    CallSpec,
    LlmExtractor,
    ProviderCallError,
    parse_json_tolerant,
)

__all__ = ["OpenAICompatExtractor", "chat_endpoint"]

_PATH: Final = "/v1/chat/completions"
#: Statuses worth backing off for: rate limited, overloaded, still loading the model.
RETRY_STATUSES: Final = frozenset({429, 503, 529})
#: Connections kept per extractor (the reference pooled four on its socket).
POOL_SIZE: Final = 4


class _Message(msgspec.Struct, frozen=True):
    role: str
    content: str


class _ResponseFormat(msgspec.Struct, frozen=True):
    type: str = "json_object"


class _ChatRequest(msgspec.Struct, frozen=True):
    model: str
    max_tokens: int
    response_format: _ResponseFormat
    messages: list[_Message]


class _ChoiceMessage(msgspec.Struct, frozen=True):
    content: str | None = None


class _Choice(msgspec.Struct, frozen=True):
    message: _ChoiceMessage
    finish_reason: str | None = None


class _Usage(msgspec.Struct, frozen=True):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class _ChatResponse(msgspec.Struct, frozen=True):
    choices: list[_Choice]
    model: str | None = None
    usage: _Usage | None = None


_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder(_ChatResponse).decode


def chat_endpoint(url: str) -> str:
    """The full endpoint for ``url``: a base URL gets ``/v1/chat/completions`` appended."""
    return openai_endpoint(url, "chat/completions")


class OpenAICompatExtractor(LlmExtractor):
    """Extraction and classification through an OpenAI-compatible chat endpoint (JSON mode).

    Give ``url`` for HTTP, or ``uds`` (a socket path) for a Unix socket; ``model`` is sent as
    is (``LCG_EXTRACTION_MODEL``, default ``local``).
    """

    provider = "local"

    def __init__(
        self,
        *,
        url: str | None = None,
        uds: str | None = None,
        model: str = "local",
        timeout_s: float = 300.0,
        max_tokens_ceiling: int = 32768,
        cost_table: CostTable | None = None,
        retry_delays: Sequence[float] = DEFAULT_RETRY_DELAYS,
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if (url is None) == (uds is None):
            raise ValueError("give exactly one of url or uds")
        super().__init__(
            max_tokens_ceiling=max_tokens_ceiling,
            cost_table=cost_table,
            retry_delays=retry_delays,
            sleep=sleep,
        )
        self._model = model
        if uds is not None:
            # The embedder's Unix transport: four pooled connections, and a failed connect
            # closes its socket (httpcore's own backend leaks it).
            transport = transport or _UdsTransport(uds)
            self._url = "http://localhost" + _PATH
            self._where = f"unix:{uds}"
        else:
            assert url is not None
            transport = transport or httpx.HTTPTransport(
                retries=1, limits=httpx.Limits(max_connections=POOL_SIZE)
            )
            self._url = chat_endpoint(url)
            self._where = self._url
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)), transport=transport
        )

    @property
    def model_id(self) -> str:
        """The model name sent with every request."""
        return self._model

    @property
    def endpoint(self) -> str:
        """Where requests go: the URL, or ``unix:<path>``."""
        return self._where

    def close(self) -> None:
        """Close the pooled connections."""
        self._client.close()

    def _send(self, spec: CallSpec) -> CallReply:
        return self._with_retries(lambda: self._attempt(spec))

    def _attempt(self, spec: CallSpec) -> CallReply:
        body = _encode(
            _ChatRequest(
                model=self._model,
                max_tokens=spec.max_tokens,
                response_format=_ResponseFormat(),
                messages=[
                    _Message(
                        "system", spec.system + prompts.json_mode_instruction(spec.json_shape)
                    ),
                    _Message("user", spec.user),
                ],
            )
        )
        where = f"extractor at {self._where}"
        response = None
        # Two tries: one re-dial when a pooled connection turns out dead (a restarted
        # server), as the reference did; a timeout is not re-sent.
        for attempt in (1, 2):
            try:
                response = self._client.post(
                    self._url, content=body, headers={"content-type": "application/json"}
                )
                break
            except httpx.TimeoutException as exc:
                raise ProviderCallError(f"{where} timed out: {exc}", model=self._model) from exc
            except httpx.TransportError as exc:
                if attempt == 2:
                    raise ProviderCallError(
                        f"{where} is unreachable: {exc}", model=self._model
                    ) from exc
            except (httpx.HTTPError, RuntimeError) as exc:  # RuntimeError: client closed
                raise ProviderCallError(f"{where} failed: {exc}", model=self._model) from exc
        assert response is not None
        text = response.text
        if response.status_code != 200:
            raise ProviderCallError(
                f"{where} answered HTTP {response.status_code}: {text[:200].strip()}",
                raw_body=text,
                model=self._model,
                retryable=response.status_code in RETRY_STATUSES,
            )
        try:
            parsed = _decode(response.content)
        except msgspec.DecodeError as exc:
            raise ProviderCallError(
                f"{where} sent a response that is not a chat completion: {exc}",
                raw_body=text,
                model=self._model,
                classification="malformed",
            ) from exc
        if not parsed.choices:
            raise ProviderCallError(
                f"{where} sent no choices",
                raw_body=text,
                model=self._model,
                classification="malformed",
            )
        choice = parsed.choices[0]
        content = choice.message.content or ""
        payload, outcome = parse_json_tolerant(content)
        usage = parsed.usage or _Usage()
        return CallReply(
            payload=payload,
            outcome=outcome,
            raw_body=text,
            truncated=choice.finish_reason == "length",
            finish_reason=choice.finish_reason,
            model=parsed.model or self._model,
            input_tokens=usage.prompt_tokens,
            output_tokens=usage.completion_tokens,
        )
