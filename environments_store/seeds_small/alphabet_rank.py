from spade_env import QuizEnv

WORDS = ["zebra", "lion", "tiger", "bear", "wolf", "moose", "otter", "panda", "koala", "camel"]


class AlphabetRankEnv(QuizEnv):
    """The place a word takes when a list is sorted."""

    def questions(self, rng):
        shown = rng.sample(WORDS, 4)
        word = rng.choice(shown)
        return [(f"Sort these words alphabetically: {', '.join(shown)}. At which position, counting from 1, does '{word}' end up?", str(sorted(shown).index(word) + 1))]

    def hint(self):
        return "Compare first letters, then second letters on ties, and order the list."
