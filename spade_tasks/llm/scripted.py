"""A scripted backend for tests: answers come from a function or a list, not a model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from spade_tasks.llm.base import Backend, Completion, SamplingParams, find_stop, prefill_of, render_prompts


class _ByteTokenizer:
    """Just enough tokenizer for code that only counts or echoes ids: one id per UTF-8 byte."""

    eos_token_id = 256
    pad_token_id = 256

    def encode(self, text: str) -> list[int]:
        return list(text.encode())

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict:
        return {"input_ids": self.encode(text)}

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        return bytes(i for i in ids if i < 256).decode(errors="replace")

    def apply_chat_template(self, conv, tools=None, add_generation_prompt=True, tokenize=False):
        text = "".join(f"<{m['role']}>{m['content']}\n" for m in conv) + ("<assistant>" if add_generation_prompt else "")
        return self.encode(text) if tokenize else text


class ScriptedBackend(Backend):
    """Replies with ``script(conversation)`` or the next string of a list (cycling).

    Every call is recorded in ``calls`` as ``(conversations, params, tools)``. Token ids
    are the reply's UTF-8 bytes plus an EOS id, log-probs are 0.0, stop strings apply; a
    conversation ending with an assistant message is a prefill, as in the real backends.
    """

    name = "scripted"

    def __init__(self, script: Callable[[list[dict]], str] | list[str]):
        self._script = script
        self._next = 0
        self._tok = _ByteTokenizer()
        self.calls: list[tuple[list[list[dict]], SamplingParams, list[dict] | None]] = []
        self.loaded: list[Path] = []

    @property
    def tokenizer(self):
        return self._tok

    def _reply(self, conv: list[dict]) -> str:
        if callable(self._script):
            return self._script(conv)
        text = self._script[self._next % len(self._script)]
        self._next += 1
        return text

    def generate(self, conversations, params: SamplingParams, tools=None) -> list[Completion]:
        self.calls.append((conversations, params, tools))
        out = []
        for conv in conversations:
            text = self._reply(conv)
            finish = "stop"
            cut = find_stop(text, params.stop)
            if cut >= 0:
                text = text[:cut]
            ids = self._tok.encode(text)
            if len(ids) >= params.max_new_tokens:
                ids, finish = ids[: params.max_new_tokens], "length"
                text = self._tok.decode(ids)
            else:
                ids = ids + [self._tok.eos_token_id]
            prompt = render_prompts(self._tok, [conv], tools)[0]
            out.append(Completion(text, prompt, ids, [0.0] * len(ids), finish, prefill_of(conv)))
        return out

    def load_weights(self, checkpoint_dir) -> None:
        self.loaded.append(Path(checkpoint_dir))
