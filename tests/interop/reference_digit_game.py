# Reference-code single-task game form with math_verify (not in the sandbox) for the
# answer check, `random`/`re` not imported, and a solution() oracle.
from math_verify import parse, verify


def verify_answer(player_answer, solution):
    if str(player_answer).strip() == str(solution).strip():
        return True
    try:
        return verify(parse(player_answer), parse(solution))
    except Exception:
        return False


class DigitSumGameEnv:
    """Sum the digits of a product of two numbers."""

    def __init__(self, max_turns=4, **kwargs):
        self.max_turns = max_turns
        self.turn_count = 0
        self.reset()

    def reset(self, seed=None):
        if seed is not None:
            random.seed(seed)
        self.turn_count = 0
        self.a, self.b = random.randint(100, 999), random.randint(100, 999)
        return f"What is the sum of the digits of {self.a} x {self.b}? Answer in \\boxed{{}}.", {}

    def solution(self):
        return str(sum(int(d) for d in str(self.a * self.b)))

    def step(self, action):
        self.turn_count += 1
        m = re.search(r"\\boxed\{([^}]+)\}", action)
        if m and verify_answer(m.group(1), self.solution()):
            return "Correct!", 1.0, True, False, {}
        if self.turn_count >= self.max_turns:
            return "Time's up.", 0.0, False, True, {}
        return "Wrong. Try again.", 0.0, False, False, {}
