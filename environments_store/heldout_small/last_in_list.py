from spade_env import QuizEnv

WORDS = ["north", "south", "east", "west", "spring", "summer", "autumn", "winter", "dawn", "dusk"]


class LastInListEnv(QuizEnv):
    """The last word of a list.

    Three to six words are shown and the agent must name the one at the end."""

    def questions(self, rng):
        shown = rng.sample(WORDS, rng.randint(3, 6))
        return [(f"Which word comes last in this list: {', '.join(shown)}?", shown[-1])]

    def hint(self):
        return "Skip to the end of the list and take the word after the final comma."
