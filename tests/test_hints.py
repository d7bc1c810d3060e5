"""Hints: from hint() in the sandbox or written by the model; leaks of the answer refused."""

import pytest

from spade_tasks.environments import EnvRecord, env_id_of
from spade_tasks.hints import answer_of, clean_hint, leaks, model_hints
from spade_tasks.llm.base import Completion


LEAKY = '''import random

from spade_env import extract_boxed


class AddPairEnv:
    """Add two numbers.

    The agent sees two integers and must write their sum as \\\\boxed{N}."""

    max_turns = 3

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        self.a, self.b = rng.randint(10, 99), rng.randint(10, 99)
        self.done = False
        return f"What is {self.a} + {self.b}? Answer as \\\\boxed{{N}}.", {}

    def step(self, action):
        if self.done:
            return "Over.", 0.0, True, False, {}
        got = extract_boxed(action if isinstance(action, str) else "")
        if got is not None and got.strip() == str(self.a + self.b):
            self.done = True
            return "Correct.", 1.0, True, False, {}
        return "Wrong, try again.", 0.0, False, False, {}

    def hint(self):
        return f"The sum is {self.a + self.b}."

    def oracle(self):
        return "\\\\boxed{%d}" % (self.a + self.b)
'''


def record(source, class_name, has_hint=True, has_oracle=True, max_turns=3):
    return EnvRecord(env_id_of(source), source, class_name, "t", "t", max_turns, has_hint,
                     has_oracle, "designed", "")


class ScriptedBackend:
    """Answers each generate call from a list of scripted replies (by env title)."""

    def __init__(self, replies):
        self.replies = replies  # list per call: list of texts, one per conversation
        self.calls = []

    def generate(self, conversations, params, tools=None):
        self.calls.append((conversations, params))
        texts = self.replies[len(self.calls) - 1]
        assert len(texts) == len(conversations)
        return [Completion(t, [1, 2], [3], [-0.5], "stop") for t in texts]


def test_answer_of():
    assert answer_of("<answer> 1848 </answer>") == "1848"
    assert answer_of("so \\boxed{12} and \\boxed{42}") == "42"
    assert answer_of(" fill A ") == "fill A"


@pytest.mark.parametrize("hint,answers,found", [
    ("The sum is 117.", ["117"], "117"),
    ("Try 1170 first.", ["117"], None),
    ("Keep 7 guesses in mind", ["17"], None),
    ("The word is BLUE", ["blue"], "blue"),
    ("Point (3, 4) works", ["(3,  4)"], "(3, 4)"),
    ("anything", ["", None], None),
])
def test_leaks(hint, answers, found):
    assert leaks(hint, answers) == found


def test_clean_hint():
    assert clean_hint("Hint: Do A. Then B! Then C? Then D.") == "Do A. Then B! Then C?"
    assert clean_hint("```python\nx=1\n```") == ""


def test_model_hints_retry_once_then_drop():
    recs = [record(f"# {i}\n" + LEAKY, "AddPairEnv") for i in range(3)]
    backend = ScriptedBackend([
        ["Work it out column by column.", "The answer is 117.", "It is 117."],
        ["Add the tens, then the ones.", "Surely 117."],
    ])
    answers = {r.env_id: ["117"] for r in recs}
    out = model_hints(backend, recs, seed=1, answers=answers)
    assert len(backend.calls) == 2 and len(backend.calls[0][0]) == 3  # one batched call
    a, b, c = (out[r.env_id] for r in recs)
    assert (a.source, a.attempts, a.text) == ("model", 1, "Work it out column by column.")
    assert (b.source, b.attempts) == ("model", 2) and "leak" in b.reason
    assert c.source == "dropped" and c.text is None and "117" in c.reason
    # the prompt shows the program's source, never an oracle answer
    assert "class AddPairEnv" in backend.calls[0][0][0][1]["content"]
