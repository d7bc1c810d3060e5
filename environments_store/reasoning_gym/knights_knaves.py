from spade_env import ReasoningGymEnv


class KnightsKnavesEnv(ReasoningGymEnv):
    """Knights and knaves: decide who tells the truth.

    Inhabitants of an island either always tell the truth or always lie; from their
    statements the agent must say which kind each one is. One turn; the answer goes
    inside <answer>...</answer> and is scored by reasoning-gym's own ``score_answer``
    for the "knights_knaves" dataset (reward 1 only for a fully correct answer). Part of
    the fixed-environment baseline pool."""

    dataset = "knights_knaves"
    hint_text = ("Assume one person is truthful, derive what their statement forces for the "
                 "others, and discard any assumption that leads to a contradiction.")
