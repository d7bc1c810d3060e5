import random

from spade_env import extract_boxed, math_equal


class WordListRecallEnv:
    """Memory test: recall facts about a word list that is shown only once.

    The first observation shows an ordered list of eight words; later observations
    never repeat it. The agent then answers four questions, one per turn, about
    positions, neighbours and letter counts in the list, each as \\boxed{ANSWER}.
    Each correct answer is worth 0.25, so all four solve the episode."""

    max_turns = 4

    WORDS = ["amber", "basil", "cedar", "delta", "ember", "falcon", "garnet", "harbor",
             "island", "jasper", "kettle", "lantern", "meadow", "nectar", "orchid", "pepper",
             "quartz", "raven", "saddle", "thistle", "umber", "velvet", "willow", "yonder"]

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        self.words = rng.sample(self.WORDS, 8)
        kinds = rng.sample(["position", "after", "before", "long", "letter"], 4)
        self.questions = []
        for kind in kinds:
            if kind == "position":
                k = rng.randint(1, 8)
                self.questions.append((f"What was word number {k} in the list?", self.words[k - 1]))
            elif kind == "after":
                k = rng.randint(0, 6)
                self.questions.append((f"Which word came right after '{self.words[k]}'?", self.words[k + 1]))
            elif kind == "before":
                k = rng.randint(1, 7)
                self.questions.append((f"Which word came right before '{self.words[k]}'?", self.words[k - 1]))
            elif kind == "long":
                n = rng.randint(5, 6)
                count = sum(len(w) > n for w in self.words)
                self.questions.append((f"How many words in the list had more than {n} letters?", str(count)))
            else:
                letter = rng.choice(sorted({ch for w in self.words for ch in w}))
                count = sum(letter in w for w in self.words)
                self.questions.append((f"How many words in the list contain the letter '{letter}'?", str(count)))
        self.index, self.total, self.done = 0, 0.0, False
        obs = ("Memorise this list of words, in order. It will not be shown again.\n"
               + "\n".join(f"{i + 1}. {w}" for i, w in enumerate(self.words))
               + "\nYou will get four questions about it, one per turn. Answer each as "
               "\\boxed{ANSWER} (a word or a number).\nQuestion 1: " + self.questions[0][0])
        return obs, {}

    def step(self, action):
        if self.done:
            return "The episode is over.", 0.0, True, False, {}
        raw = extract_boxed(action if isinstance(action, str) else "")
        expected = self.questions[self.index][1]
        if raw is None:
            reward, verdict = max(-0.1, -1.0 - self.total), "No \\boxed{...} answer found; counted as wrong."
        elif math_equal(raw, expected):
            reward, verdict = 0.25, "Correct."
        else:
            reward, verdict = 0.0, "Wrong."
        self.total += reward
        self.index += 1
        if self.index >= len(self.questions):
            self.done = True
            return verdict + " That was the last question.", reward, True, False, {}
        return (f"{verdict}\nQuestion {self.index + 1}: {self.questions[self.index][0]} "
                "Answer as \\boxed{ANSWER}."), reward, False, False, {}

    def hint(self):
        return ("Before answering the first question, restate the whole list with its numbers "
                "in your reply so you can refer to it later.")

    def oracle(self):
        return f"\\boxed{{{self.questions[self.index][1]}}}" if not self.done else ""
