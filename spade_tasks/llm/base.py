"""One generation interface for every role, a registry of backends, and shared helpers.

Every model call in SPADE goes through :class:`Backend.generate`. What it returns is
what the RL trainer consumes, so the contract is exact:

- ``Completion.prompt_token_ids`` are the ids the model was conditioned on (the chat
  template rendered with ``add_generation_prompt=True``, tokenised once);
- ``Completion.token_ids`` are the sampled ids exactly as generated, never re-tokenised
  from text; a generated EOS token is kept as the last id (the policy chose to stop,
  and training must see that choice), padding never appears;
- ``Completion.logprobs[i]`` is ``log_softmax(logits)[token_ids[i]]`` of the *unmodified*
  model (temperature 1, no top-p), so a teacher-forced forward pass over
  ``prompt_token_ids + token_ids`` reproduces it; sampling temperature and top-p change
  which token is drawn, never the reported log-prob;
- ``Completion.text`` is ``token_ids`` decoded with special tokens skipped, cut before a
  matched stop string (the ids keep the token that completed the stop string).

A conversation whose last message is the assistant's is a *prefill*: the model continues
that message instead of starting a new one. Its text is part of the prompt
(``prompt_token_ids`` end with it, so training conditions on it and never learns it) and
is returned as ``Completion.prefill``; ``Completion.full_text`` is the answer as a reader
sees it, prefill then generated text.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from spade_tasks.errors import UnknownBackend  # noqa: F401 - raised by get_backend
from spade_tasks.registry import BACKENDS
from spade_tasks.seeds import derive

if TYPE_CHECKING:
    from spade_tasks.config import ModelConfig


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one ``generate`` call."""

    max_new_tokens: int = 256
    """Cap on generated tokens per completion (also capped by the model's context)."""
    temperature: float = 1.0
    """0 means greedy (argmax)."""
    top_p: float = 1.0
    """Nucleus mass; 1.0 samples from the whole distribution."""
    min_p: float = 0.0
    """Drops tokens less likely than ``min_p`` times the step's most likely one (after
    temperature); 0.0 is off."""
    seed: int = 0
    """Completion ``i`` of a call draws from a stream derived from ``(seed, i)``."""
    stop: list[str] | None = None
    """Strings that end a completion (finish_reason ``"stop"``)."""
    first_index: int = 0
    """Position of this call's first conversation in a larger request split over engines
    (``spade_tasks/engines.py``): completion ``i`` draws from ``(seed, first_index + i)``,
    so each part samples as it would in the whole."""

    @classmethod
    def from_config(cls, cfg: ModelConfig, **overrides) -> SamplingParams:
        """Defaults from the run's model config; keyword overrides win."""
        base = dict(max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature,
                    top_p=cfg.top_p, min_p=cfg.min_p)
        return cls(**{**base, **overrides})


@dataclass(frozen=True)
class Completion:
    """One generated answer; see the module docstring for the exact meaning of each field."""

    text: str
    prompt_token_ids: list[int]
    token_ids: list[int]
    logprobs: list[float]
    """Raw-model log-prob (log_softmax of unmodified logits) of each id in token_ids."""
    finish_reason: str
    """``"stop"`` (EOS or a stop string) or ``"length"`` (max_new_tokens or context end)."""
    prefill: str = ""
    """The assistant text the prompt ended with (see the module docstring); not generated."""

    @property
    def full_text(self) -> str:
        """The whole assistant answer: the prefill, then the generated text."""
        return self.prefill + self.text


def with_prefill(messages: list[dict], prefill: str) -> list[dict]:
    """The chat with the assistant's answer started as ``prefill`` (unchanged when "")."""
    return [*messages, {"role": "assistant", "content": prefill}] if prefill else messages


def prefill_of(conversation: list[dict]) -> str:
    """The prefilled start of the assistant's answer: the content of a final assistant
    message, or "" when the conversation ends with another role."""
    last = conversation[-1] if conversation else {}
    return last.get("content") or "" if last.get("role") == "assistant" else ""


def with_prefills(completions: list[Completion], conversations: list[list[dict]]) -> list[Completion]:
    """``completions`` with each one's ``prefill`` set from its conversation."""
    from dataclasses import replace

    return [replace(c, prefill=prefill_of(conv)) if prefill_of(conv) else c
            for c, conv in zip(completions, conversations)]


class Backend(ABC):
    """An inference engine holding one model; every role generates through it.

    An engine implements ``tokenizer``, ``load_weights`` and ``generate_from_ids`` (it
    samples from token ids; ``generate`` renders the chat for it), or ``generate`` itself
    where it takes conversations whole."""

    name: str = ""

    @property
    @abstractmethod
    def tokenizer(self):
        """The Hugging Face tokenizer whose chat template renders the prompts."""

    def generate(
        self,
        conversations: list[list[dict]],
        params: SamplingParams,
        tools: list[dict] | None = None,
    ) -> list[Completion]:
        """One completion per conversation, in order (chat messages, rendered with the
        tokenizer's chat template and ``add_generation_prompt=True``; ``tools`` are passed
        to the template). A conversation ending in an assistant prefill is continued, and
        its completion carries the prefill."""
        prompts = render_prompts(self.tokenizer, conversations, tools)
        return with_prefills(self.generate_from_ids(prompts, params), conversations)

    def generate_from_ids(self, prompts: list[list[int]], params: SamplingParams) -> list[Completion]:
        """``generate`` on already tokenised prompts (benchmarks, tests): what an engine
        that samples from token ids implements."""
        raise NotImplementedError(f"{type(self).__name__} generates from conversations only")

    @abstractmethod
    def load_weights(self, checkpoint_dir: str | Path) -> None:
        """Replace the weights with a Hugging Face-format checkpoint (same tokenizer)."""

    def close(self) -> None:
        """Free the engine; the backend is unusable afterwards."""

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def register_backend(name: str, factory: Callable[[ModelConfig], Backend] | str) -> None:
    """Register ``factory(model_config) -> Backend`` (or a lazy ``"module:attribute"``)
    under ``name``; a taken name raises DuplicateName."""
    BACKENDS.register(name, factory)


def get_backend(name: str) -> Callable[[ModelConfig], Backend]:
    """The factory registered under ``name``; an unknown name raises UnknownBackend."""
    return BACKENDS.get(name)


def make_backend(cfg: ModelConfig) -> Backend:
    """Build the backend a run's model config selects."""
    return get_backend(cfg.backend)(cfg)


# The built-in engines by module path: torch or vLLM is imported only when one is selected.
register_backend("transformers", "spade_tasks.llm.transformers_backend:TransformersBackend")
register_backend("vllm", "spade_tasks.llm.vllm_backend:VLLMBackend")


# --- helpers shared by the backends -------------------------------------------------


def render_prompts(tokenizer, conversations: list[list[dict]], tools: list[dict] | None) -> list[list[int]]:
    """Token ids of each conversation's chat-template rendering, ready for generation.

    The template already writes any BOS it wants, so the text is tokenised without
    adding special tokens a second time.
    """
    out = []
    for conv in conversations:
        prefill = prefill_of(conv)
        if prefill:
            # The template's own generation prompt opens the assistant turn and the prefill
            # follows verbatim: no template-specific handling of an unfinished message.
            conv = conv[:-1]
        text = tokenizer.apply_chat_template(
            conv, tools=tools, add_generation_prompt=True, tokenize=False
        ) + prefill
        out.append(tokenizer(text, add_special_tokens=False)["input_ids"])
    return out


def request_seed(seed: int, index: int) -> int:
    """A 63-bit seed for completion ``index`` of a call seeded with ``seed``.

    Keyed by position, so identical conversations in one call (a GRPO group) still get
    different samples, and the result does not depend on how requests are batched.
    """
    return derive("request", seed, index, bits=63)


def eos_token_ids(tokenizer, generation_config=None) -> set[int]:
    """Every id that ends a completion: the tokenizer's EOS plus the model's generation EOS."""
    ids = set()
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    extra = getattr(generation_config, "eos_token_id", None)
    if isinstance(extra, int):
        ids.add(extra)
    elif extra:
        ids.update(int(i) for i in extra)
    return ids


def find_stop(text: str, stop: list[str] | None) -> int:
    """Index of the earliest stop string in ``text``, or -1."""
    hits = [i for i in (text.find(s) for s in stop or ()) if i >= 0]
    return min(hits) if hits else -1


def cut_at_stop(tokenizer, token_ids: list[int], stop: list[str]) -> tuple[int, str] | None:
    """Where the first stop string ends the completion: ``(n_ids_to_keep, text_before_stop)``.

    ``n_ids_to_keep`` is the shortest prefix of ids whose decoding contains a stop string,
    so the ids keep the token that completed it; None when no stop string occurs.
    """
    full = tokenizer.decode(token_ids, skip_special_tokens=True)
    if find_stop(full, stop) < 0:
        return None
    lo, hi = 1, len(token_ids)
    # Containment is monotone in the prefix length, so bisect for the shortest prefix.
    while lo < hi:
        mid = (lo + hi) // 2
        if find_stop(tokenizer.decode(token_ids[:mid], skip_special_tokens=True), stop) >= 0:
            hi = mid
        else:
            lo = mid + 1
    text = tokenizer.decode(token_ids[:lo], skip_special_tokens=True)
    return lo, text[: find_stop(text, stop)]
