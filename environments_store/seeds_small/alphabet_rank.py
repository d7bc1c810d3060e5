from spade_env import QuizEnv

WORDS = ["zebra", "lion", "tiger", "bear", "wolf", "moose", "otter", "panda", "koala", "camel"]


class AlphabetRankEnv(QuizEnv):
    """The place a word takes when a list is sorted."""

    def questions(self, rng):
        shown = rng.sample(WORDS, 4)
        word = rng.choice(shown)
        listed = ", ".join(shown)
        question = f"Sort these words alphabetically: {listed}."
        question += f" At which place, counting from 1, is '{word}'?"
        answer = str(sorted(shown).index(word) + 1)
        return [(question, answer)]

    def hint(self):
        return "Compare first letters, then second letters on ties."
