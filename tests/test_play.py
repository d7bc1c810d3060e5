"""`spade play`'s policies as functions: the model plays as a rollout plays (scripted
backend here; the real model in the slow CLI test)."""

import random

import pytest

from spade_tasks.config import RolloutConfig
from spade_tasks.errors import UserError
from spade_tasks.llm.base import SamplingParams
from spade_tasks.llm.scripted import ScriptedBackend
from spade_tasks.play import load_program, play_human, play_model, play_oracle
from spade_tasks.rollout import HINT_FORMAT, agent_system_prompt
from tests.test_validation import GOOD


@pytest.fixture
def good(tmp_path):
    path = tmp_path / "good.py"
    path.write_text(GOOD)
    return path


def test_model_plays_the_rollout_chat_and_records_the_transcript(sandbox, good):
    n = random.Random(7).randint(1, 9)
    replies = iter(["I think 0", str(n)])
    backend = ScriptedBackend(lambda conv: next(replies))
    prog = load_program(good, sandbox)
    t = play_model(backend, sandbox, prog, 7, True, RolloutConfig(max_new_tokens=16),
                   SamplingParams(temperature=0.5))
    assert t.actions == ["I think 0", str(n)] and t.rewards == [0.0, 1.0]
    assert t.observations == ["Guess a number from 1 to 9. Reply with the number only.",
                              "Reply with a number.", "Correct!"]
    assert t.terminated and t.end_reason == "terminated" and t.ret == 1.0
    assert t.hint == "Halve the interval each turn."
    # The chat a rollout shows: its system prompt, the hint appended to the first observation.
    first, params, _ = backend.calls[0]
    assert first[0][0] == {"role": "system", "content": agent_system_prompt()}
    assert first[0][1]["content"] == HINT_FORMAT.format(observation=t.observations[0], hint=t.hint)
    assert params.max_new_tokens == 16 and params.temperature == 0.5
    assert len(backend.calls[1][0][0]) == 4  # system, observation, action, observation


def test_model_turns_are_capped_like_a_rollout(sandbox, good):
    backend = ScriptedBackend(["no idea"])
    prog = load_program(good, sandbox)
    t = play_model(backend, sandbox, prog, 0, False, RolloutConfig(max_turns=3), None)
    assert t.turns == 3 and t.end_reason == "max_turns" and t.ret == 0.0
    assert len(t.observations) == 4


def test_model_hint_needs_a_hint_method(sandbox, tmp_path):
    path = tmp_path / "nohint.py"
    path.write_text(GOOD.replace("    def hint(self):\n        return \"Halve the interval each turn.\"\n", ""))
    prog = load_program(path, sandbox)
    with pytest.raises(UserError, match="defines no hint"):
        play_model(ScriptedBackend(["1"]), sandbox, prog, 0, True, RolloutConfig(), None)


def test_oracle_and_human_transcripts(sandbox, good):
    prog = load_program(good, sandbox)
    o = play_oracle(sandbox, prog, 4, False)
    assert o.ret == 1.0 and o.end_reason == "terminated" and len(o.observations) == o.turns + 1
    said = []
    answers = iter(["5", o.actions[-1]])
    h = play_human(sandbox, prog, 4, False, ask=lambda prompt: next(answers), say=said.append)
    assert h.actions[-1] == o.actions[-1] and h.ret == 1.0 and h.end_reason == "terminated"
    assert any("reward 1 (return so far 1)" in s for s in said)


def test_model_is_never_shown_a_hint_that_holds_the_answer(sandbox, tmp_path):
    path = tmp_path / "leak.py"
    path.write_text(GOOD.replace('return "Halve the interval each turn."',
                                 'return f"The number is {self.n}."'))
    backend = ScriptedBackend(["5"])
    t = play_model(backend, sandbox, load_program(path, sandbox), 3, True, RolloutConfig(), None)
    assert t.end_reason == "hint_refused" and t.turns == 0 and not backend.calls
    assert t.error.startswith("hint_leak:")
