"""GEM text-game form: subclasses gem.core.Env, draws from the global `random` (GEM's
wrappers seed it), calls super().reset(seed), and uses GEM's reward constants and
boxed-answer parser."""

import random
from typing import Any, Dict, Optional, Tuple

from gem.core import Env
from gem.utils.constants import LanguageGameReward
from gem.utils.parsing import extract_last_boxed_answer


class LetterCountEnv(Env):
    """Count how often a letter occurs in a random string."""

    def __init__(self, max_turns: Optional[int] = 3, **_):
        super().__init__()
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed: Optional[int] = None) -> Tuple[str, Dict[str, Any]]:
        super().reset(seed)
        self.text = "".join(random.choice("abcde") for _ in range(30))
        self.letter = random.choice("abcde")
        self.turn_count = 0
        return (f"How many times does '{self.letter}' occur in {self.text}? "
                "Answer in \\boxed{N}."), {}

    def step(self, action: str) -> Tuple[str, float, bool, bool, Dict[str, Any]]:
        self.turn_count += 1
        guess = extract_last_boxed_answer(action)
        if guess is None:
            return "No \\boxed{} answer.", LanguageGameReward.format_error_reward, True, False, {}
        if guess.strip() == str(self.text.count(self.letter)):
            return "Correct!", LanguageGameReward.success_reward, True, False, {}
        done = self.turn_count >= self.max_turns
        return "Wrong.", LanguageGameReward.internal_step_reward, False, done, {}

    def sample_random_action(self) -> str:
        return "\\boxed{" + str(random.randint(0, 30)) + "}"
