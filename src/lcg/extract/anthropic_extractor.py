"""The Anthropic extractor: the official ``anthropic`` SDK, forced tool use.

Each call offers exactly one tool (``extract_entities``, ``extract_edges`` or ``classify``)
and forces the model to use it, so the answer is the tool's JSON input. The model comes from
``LCG_EXTRACTION_LLM``, optionally ``primary:fallback``: after the primary's first failure
``llm_fallback`` is emitted once and the fallback answers every later call. 429 and 529 are
retried three times (1/2/4 s); the SDK's own retries are off so that the policy is ours.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Final

import anthropic
from anthropic.types import (
    Message,
    MessageParam,
    TextBlockParam,
    ToolChoiceToolParam,
    ToolParam,
)

from lcg import telemetry
from lcg.errors import ConfigError
from lcg.extract.cost import CostTable
from lcg.extract.extractor import (
    DEFAULT_RETRY_DELAYS,
    CallReply,
    CallSpec,
    LlmExtractor,
    LlmFallback,
    ProviderCallError,
    parse_json_tolerant,
)

__all__ = ["DEFAULT_MODEL", "AnthropicExtractor", "parse_model_spec"]

#: The model used when ``LCG_EXTRACTION_LLM`` is unset.
DEFAULT_MODEL: Final = "claude-haiku-4-5-20251001"
#: HTTP statuses worth backing off for: rate limited, overloaded.
RETRY_STATUSES: Final = frozenset({429, 529})


def parse_model_spec(spec: str) -> tuple[str, str | None]:
    """``"primary:fallback"`` → ``(primary, fallback)``; ``"m"`` → ``(m, None)``."""
    primary, _, fallback = spec.strip().partition(":")
    primary = primary.strip() or DEFAULT_MODEL
    fallback = fallback.strip()
    return primary, (fallback if fallback and fallback != primary else None)


class AnthropicExtractor(LlmExtractor):
    """Extraction and classification through the Anthropic Messages API (forced tool use)."""

    provider = "anthropic"

    def __init__(
        self,
        *,
        api_key: str,
        model: str = DEFAULT_MODEL,
        fallback_model: str | None = None,
        base_url: str | None = None,
        timeout_s: float = 600.0,
        max_tokens_ceiling: int = 32768,
        cost_table: CostTable | None = None,
        retry_delays: Sequence[float] = DEFAULT_RETRY_DELAYS,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not api_key:
            raise ConfigError("the Anthropic extractor needs ANTHROPIC_API_KEY")
        super().__init__(
            max_tokens_ceiling=max_tokens_ceiling,
            cost_table=cost_table,
            retry_delays=retry_delays,
            sleep=sleep,
        )
        self._primary = model
        self._fallback = fallback_model
        self._use_fallback = False
        self._switch_lock = threading.Lock()
        self._where = base_url or "https://api.anthropic.com"
        try:
            # max_retries=0: backoff is ours (429/529 only, injectable delays). anthropic 2.x
            # runs on httpx2, so no httpx client is passed; it sends Authorization: Bearer.
            # An explicit timeout also keeps the SDK from refusing large non-streaming
            # budgets (it insists on streaming when it guesses a call may pass 10 minutes).
            self._client = anthropic.Anthropic(
                api_key=api_key,
                base_url=base_url,
                timeout=timeout_s,
                max_retries=0,
                open_telemetry=False,
            )
        except (anthropic.AnthropicError, ValueError, TypeError) as exc:
            raise ConfigError(f"cannot set up the Anthropic client: {exc}") from exc

    @classmethod
    def from_spec(cls, spec: str, **kwargs: Any) -> AnthropicExtractor:
        """Build from an ``LCG_EXTRACTION_LLM`` value (``model`` or ``primary:fallback``)."""
        primary, fallback = parse_model_spec(spec)
        return cls(model=primary, fallback_model=fallback, **kwargs)

    @property
    def endpoint(self) -> str:
        """Where requests go (``ANTHROPIC_BASE_URL``, else the hosted API)."""
        return self._where

    @property
    def model_id(self) -> str:
        """The primary model, or the fallback once it has taken over."""
        return self._fallback if self._use_fallback and self._fallback else self._primary

    @property
    def models(self) -> tuple[str, str | None]:
        """``(primary, fallback)`` as configured."""
        return self._primary, self._fallback

    @property
    def base_url(self) -> str:
        """The API base URL the client talks to."""
        return str(self._client.base_url)

    @property
    def fallback_active(self) -> bool:
        """Whether the fallback model has taken over."""
        return self._use_fallback

    def close(self) -> None:
        """Close the SDK client's connections."""
        self._client.close()

    def _send(self, spec: CallSpec) -> CallReply:
        model = self.model_id
        try:
            return self._with_retries(lambda: self._attempt(model, spec))
        except ProviderCallError as exc:
            fallback = self._fallback
            # Only a refused or failed call switches models; an unreadable answer does not.
            if fallback is None or model == fallback or exc.classification != "http_error":
                raise
            with self._switch_lock:
                first = not self._use_fallback
                self._use_fallback = True
            if first:
                telemetry.emit(
                    LlmFallback(
                        role="extraction",
                        primary_model=self._primary,
                        fallback_model=fallback,
                        error_reason=str(exc),
                    )
                )
            return self._with_retries(lambda: self._attempt(fallback, spec))

    def _attempt(self, model: str, spec: CallSpec) -> CallReply:
        system: str | list[TextBlockParam] = spec.system
        if "sonnet" in model:
            # Sonnet-class models cache the (long, stable) system prompt across chunks.
            system = [{"type": "text", "text": spec.system, "cache_control": {"type": "ephemeral"}}]
        tool: ToolParam = {
            "name": spec.tool_name,
            "description": spec.tool_description,
            "input_schema": spec.schema,
        }
        choice: ToolChoiceToolParam = {"type": "tool", "name": spec.tool_name}
        messages: list[MessageParam] = [{"role": "user", "content": spec.user}]
        raw_body = ""
        try:
            # with_raw_response keeps the complete body for the failure sidecar.
            raw = self._client.messages.with_raw_response.create(
                model=model,
                max_tokens=spec.max_tokens,
                system=system,
                messages=messages,
                tools=[tool],
                tool_choice=choice,
            )
            raw_body = raw.text()
            message = raw.parse()
            return _reply(message, spec.tool_name, model, raw_body)
        except anthropic.APIStatusError as exc:
            raise ProviderCallError(
                f"Anthropic at {self._where} answered HTTP {exc.status_code} for model "
                f"{model}: {exc.message}",
                raw_body=_response_text(exc),
                model=model,
                retryable=exc.status_code in RETRY_STATUSES,
            ) from exc
        except anthropic.APITimeoutError as exc:
            raise ProviderCallError(
                f"Anthropic at {self._where} timed out (model {model})", model=model
            ) from exc
        except anthropic.APIConnectionError as exc:
            raise ProviderCallError(
                f"Anthropic at {self._where} is unreachable: {exc}", model=model
            ) from exc
        except anthropic.AnthropicError as exc:
            raise ProviderCallError(
                f"Anthropic call failed (model {model}): {exc}", model=model
            ) from exc
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            # A 200 whose body is not a readable message (not JSON, wrong shape).
            raise ProviderCallError(
                f"Anthropic at {self._where} sent a response that is not a message: {exc!r}",
                raw_body=raw_body,
                model=model,
                classification="malformed",
            ) from exc


def _response_text(exc: anthropic.APIStatusError) -> str:
    try:
        return exc.response.text
    except Exception:  # a streamed/closed body: the message is all there is
        return str(exc.message)


def _reply(message: Message, tool_name: str, requested_model: str, raw_body: str) -> CallReply:
    payload: Any = None
    outcome: Any = "malformed"
    texts: list[str] = []
    for block in message.content:
        if block.type == "tool_use" and block.name == tool_name:
            payload, outcome = block.input, "clean"
            break
        if block.type == "text":
            texts.append(block.text)
    else:
        # No tool call (a refusal, or a model ignoring tool_choice): try the text.
        if texts:
            payload, outcome = parse_json_tolerant("\n".join(texts))
    usage = message.usage
    return CallReply(
        payload=payload,
        outcome=outcome,
        raw_body=raw_body,
        truncated=message.stop_reason == "max_tokens",
        finish_reason=message.stop_reason,
        model=message.model or requested_model,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_input_tokens or 0,
        cache_creation_tokens=usage.cache_creation_input_tokens or 0,
    )
