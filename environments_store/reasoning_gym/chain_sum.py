import reasoning_gym
from reasoning_gym.utils import extract_answer


class ChainSumEnv:
    """Add and subtract a chain of integers.

    The agent gets a chain of integers joined by + and - and must give the result. One
    turn; the answer goes inside <answer>...</answer> and is scored by reasoning-gym's
    own ``score_answer`` for the "chain_sum" dataset (reward 1 only for a fully correct
    answer). Part of the fixed-environment baseline pool."""

    max_turns = 1

    def reset(self, seed=None, options=None):
        # Item 0 of a size-1 dataset is generated from Random(seed): one item per seed.
        seed = 0 if seed is None else int(seed)
        self.dataset = reasoning_gym.create_dataset("chain_sum", seed=seed, size=1)
        self.entry = self.dataset[0]
        self.done = False
        obs = (self.entry["question"]
               + "\n\nGive only the final answer inside <answer>...</answer>.")
        return obs, {}

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {}
        self.done = True
        answer = extract_answer(action if isinstance(action, str) else "")
        if answer is None:
            return "No <answer>...</answer> found.", 0.0, True, False, {"correct": False}
        correct = self.dataset.score_answer(answer, self.entry) == 1.0
        reply = "Correct!" if correct else "Incorrect."
        return reply, float(correct), True, False, {"correct": correct}

    def hint(self):
        return ("Go strictly left to right, keeping a running total; double-check each carry "
                "and borrow.")

    def oracle(self):
        return "<answer>" + str(self.entry["answer"]) + "</answer>"
