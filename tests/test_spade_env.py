"""Tests for the sandbox helper module spade_env (run in-process: it is our own code)."""

import json
import random
import sys
from pathlib import Path
from typing import Literal

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "spade_tasks" / "sandbox" / "envlib"))

import spade_env  # noqa: E402
from spade_env import (  # noqa: E402
    ToolEnv,
    ToolUseBaseEnv,
    extract_answer_tag,
    extract_boxed,
    math_equal,
    normalize_answer,
    parse_number,
)


class LockerEnv(ToolEnv):
    """Find the code of a locker: look up its owner, then the owner's code."""

    max_turns = 5

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        self.owner = rng.choice(["ann", "bob"])
        self.codes = {"ann": rng.randint(100, 999), "bob": rng.randint(100, 999)}
        self.expected_answer = self.codes[self.owner]
        return "Which code opens locker 7?\n" + self.describe_tools(), {}

    def tool_owner(self, locker: int) -> str:
        """Who owns a locker.

        Args:
            locker: locker number
        """
        if locker != 7:
            raise KeyError(locker)
        return self.owner

    def tool_code(self, person: Literal["ann", "bob"], verbose: bool = False) -> dict:
        """A person's code."""
        return {"person": person, "code": self.codes[person]}

    def solution(self):
        return [{"name": "owner", "arguments": {"locker": 7}},
                {"name": "code", "arguments": {"person": self.owner}},
                str(self.expected_answer)]


def call(name, **arguments):
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


@pytest.fixture
def env():
    e = LockerEnv()
    e.reset(seed=3)
    return e


# ----------------------------------------------------------------------------- protocol


def test_a_valid_tool_call_returns_the_tool_result_with_zero_reward(env):
    obs, reward, terminated, truncated, info = env.step(call("owner", locker=7))
    assert (obs, reward, terminated, truncated) == (env.owner, 0.0, False, False)
    obs, *_ = env.step(call("code", person="ann"))
    assert json.loads(obs) == {"person": "ann", "code": env.codes["ann"]}
    assert [c["name"] for c in env._call_history] == ["owner", "code"]


def test_tool_arguments_may_come_as_a_json_string(env):
    obs, reward, *_ = env.step('<tool_call>{"name": "owner", "arguments": "{\\"locker\\": 7}"}</tool_call>')
    assert (obs, reward) == (env.owner, 0.0)


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("", "Format error"),
        ("I think the answer is 5", "Format error"),
        ("<tool_call>{not json}</tool_call>", "not valid JSON"),
        ('<tool_call>["owner"]</tool_call>', "Format error"),
        (call("teleport"), "Unknown tool"),
        (call("owner", room=7), "Bad arguments"),
        (call("owner"), "Bad arguments"),
        ('<tool_call>{"name": "owner", "arguments": [7]}</tool_call>', "JSON object"),
        (call("owner", locker=8), "Error calling owner"),
        (call("schemas"), "Unknown tool"),
    ],
)
def test_a_malformed_action_costs_a_tenth_and_says_why(env, action, message):
    obs, reward, terminated, truncated, info = env.step(action)
    assert message in obs and reward == pytest.approx(-0.1)
    assert not terminated and not truncated and info["format_error"]


def test_penalties_never_take_the_return_below_minus_one():
    e = LockerEnv(max_turns=30)
    e.reset(seed=0)
    rewards = [e.step("garbage")[1] for _ in range(30)]
    assert sum(rewards) == pytest.approx(-1.0) and min(rewards) >= -0.1 - 1e-12


def test_a_right_answer_ends_the_episode_with_one(env):
    obs, reward, terminated, truncated, info = env.step(f"<answer> {env.expected_answer} </answer>")
    assert (reward, terminated, truncated, info["correct"]) == (1.0, True, False, True)
    assert env.step(call("owner", locker=7))[1:4] == (0.0, False, True)  # nothing after the end


def test_a_wrong_answer_ends_the_episode_with_zero(env):
    obs, reward, terminated, truncated, info = env.step("<answer>1</answer>")
    assert (obs, reward, terminated, truncated) == ("Incorrect.", 0.0, True, False)


def test_the_answer_wins_over_a_tool_call_and_think_blocks_are_ignored(env):
    right = f"<think><answer>0</answer></think>{call('owner', locker=7)}<answer>{env.expected_answer}</answer>"
    assert env.step(right)[1] == 1.0


def test_the_episode_is_truncated_at_max_turns(env):
    for _ in range(env.max_turns - 1):
        assert env.step(call("owner", locker=7))[3] is False
    obs, reward, terminated, truncated, _ = env.step(call("owner", locker=7))
    assert truncated and not terminated and "Out of turns" in obs


def test_the_constructor_keeps_the_class_max_turns_unless_given():
    assert LockerEnv().max_turns == 5 and LockerEnv(max_turns=9).max_turns == 9
    assert ToolEnv.max_turns == 10


def test_reset_clears_the_episode_without_calling_super(env):
    env.step(call("owner", locker=7))
    env.step("<answer>1</answer>")
    env.reset(seed=3)
    assert env.turn_count == 0 and env._call_history == [] and env.step(call("owner", locker=7))[1] == 0.0


def test_same_seed_and_actions_give_the_same_transcript():
    def transcript():
        e = LockerEnv()
        out = [e.reset(seed=11)]
        out += [e.step(a) for a in (call("owner", locker=7), "junk", call("code", person="bob"))]
        return out

    assert transcript() == transcript()


# ----------------------------------------------------------------------------- schemas


def test_tool_schemas_come_from_docstrings_and_annotations(env):
    schemas = {s["function"]["name"]: s for s in env.tool_schemas()}
    assert set(schemas) == {"owner", "code"}
    owner = schemas["owner"]
    assert owner["type"] == "function"
    assert owner["function"]["description"] == "Who owns a locker."
    assert owner["function"]["parameters"] == {
        "type": "object",
        "properties": {"locker": {"type": "integer", "description": "locker number"}},
        "required": ["locker"],
    }
    code = schemas["code"]["function"]["parameters"]
    assert code["properties"]["person"] == {"enum": ["ann", "bob"], "type": "string"}
    assert code["properties"]["verbose"] == {"type": "boolean"} and code["required"] == ["person"]
    assert env.get_tools() == env.tool_schemas()
    assert "owner(locker: integer)" in env.describe_tools()


def test_explicit_reference_style_schemas_win(env):
    env._tools = {"owner": {"description": "custom", "parameters": {"type": "object", "properties": {}}}}
    owner = next(s for s in env.tool_schemas() if s["function"]["name"] == "owner")
    assert owner["function"]["description"] == "custom"


# ----------------------------------------------------------------------------- oracle


def test_the_default_oracle_plays_the_solution_one_item_per_turn():
    for seed in range(10):
        e = LockerEnv()
        e.reset(seed=seed)
        total, actions = 0.0, []
        for _ in range(e.max_turns):
            actions.append(e.oracle())
            _, reward, terminated, truncated, _ = e.step(actions[-1])
            total += reward
            if terminated or truncated:
                break
        assert total == 1.0
        assert actions[0].startswith("<tool_call>") and actions[-1].startswith("<answer>")


REFERENCE_STYLE = '''
import json
import random


class DeskEnv(ToolUseBaseEnv):
    def reset(self, seed=None):
        self.turn_count = 0
        self._call_history = []
        random.seed(seed)
        self._state = {"drawer": random.randint(1, 9), "opened": False}
        self._tools = {
            "open_drawer": {"description": "Open the drawer", "parameters": {"type": "object", "properties": {}}},
            "count": {"description": "Count pens", "parameters": {"type": "object", "properties": {"where": {"type": "string"}}}},
        }
        self._expected_answer = str(self._state["drawer"])
        return "How many pens are in the drawer? " + self._obs_suffix(), {}

    def tool_open_drawer(self):
        self._state["opened"] = True
        return "opened"

    def tool_count(self, where="drawer"):
        return str(self._state["drawer"]) if self._state["opened"] else "Error: drawer closed"

    def _check_answer(self, answer):
        return self._state["opened"] and answer.strip() == self._expected_answer

    def solution(self):
        return '1. open_drawer() 2. count(where="drawer") ANSWER: ' + self._expected_answer
'''


def test_reference_code_programs_load_and_their_string_solution_is_played():
    ns = {"ToolUseBaseEnv": ToolUseBaseEnv}
    exec(REFERENCE_STYLE, ns)
    e = ns["DeskEnv"](max_turns=6)
    obs, info = e.reset(seed=4, options=None)  # options dropped: their reset has none
    assert obs.startswith("How many pens") and info == {}
    plays = []
    for _ in range(3):
        plays.append(e.oracle())
        result = e.step(plays[-1])
    assert result[1:3] == (1.0, True)
    assert plays[1] == call("count", where="drawer")
    assert {t["function"]["name"] for t in e.get_tools()} == {"open_drawer", "count"}
    assert e.execute_tool("count", {}) == {"output": str(e._state["drawer"]), "returncode": 0}
    assert e.execute_tool("nope", {})["returncode"] == 1


def test_the_reference_name_is_the_same_class():
    assert ToolUseBaseEnv is ToolEnv and "ToolUseBaseEnv" in spade_env.__all__


# ----------------------------------------------------------------------------- answers


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("so \\boxed{42}.", "42"),
        ("\\boxed{1} then \\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
        ("\\boxed{x^{2} + {y}}", "x^{2} + {y}"),
        ("\\boxed {7}", "7"),
        ("\\boxed{3} and an unclosed \\boxed{4", "3"),
        ("no box here", None),
        ("\\boxed", None),
        (None, None),
        # The instructions' placeholder copied back, or an empty box, is no answer.
        ("\\boxed{...}", None),
        ("\\boxed{ \u2026 }", None),
        ("\\boxed{}", None),
        ("\\boxed{7} then \\boxed{...}", "7"),
        ("\\boxed{1.5}", "1.5"),
        ("\\boxed{...and more}", "...and more"),
    ],
)
def test_extract_boxed(text, expected):
    assert extract_boxed(text) == expected


def test_extract_answer_tag_takes_the_last_one():
    assert extract_answer_tag("<answer> a </answer> <ANSWER>b\n</ANSWER>") == "b"
    assert extract_answer_tag("<answer>open") is None and extract_answer_tag(3) is None


def test_normalize_answer_removes_cosmetic_differences():
    assert normalize_answer("  $\\text{Paris}$. ") == "paris"
    assert normalize_answer("x = 5") == "5"
    assert normalize_answer("\\boxed{ Hello   World }") == "hello world"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("3/4", "0.75"),
        ("\\frac{3}{4}", ".75"),
        ("\\dfrac{6}{8}", "3/4"),
        ("-\\frac{1}{2}", "-0.5"),
        ("1,234,567", "1234567"),
        ("$12", "12.0"),
        ("50%", "1/2"),
        ("1e3", "1000"),
        ("x = 5", "5"),
        ("Paris", "paris."),
    ],
)
def test_math_equal_accepts_equivalent_answers(a, b):
    assert math_equal(a, b) and math_equal(b, a)


@pytest.mark.parametrize(
    ("a", "b"),
    [("0.333", "1/3"), ("1,2", "12"), ("3", "4"), ("1/0", "0"), (None, "1"), ("paris", "london"), ("", "0")],
)
def test_math_equal_rejects_different_answers(a, b):
    assert not math_equal(a, b)


def test_math_equal_tolerance_and_exact_parsing():
    assert math_equal("3.14", "3.141", tol=0.01) and not math_equal("3.14", "3.141")
    assert parse_number("\\frac{1}{3}") == parse_number("1/3") and parse_number("abc") is None


# ----------------------------------------------------------------------------- multi-turn


class ThermostatMTEnv(ToolEnv):
    """Follow three requests about a smart home, revealed one at a time."""

    max_turns = 8

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        self.rooms = {r: rng.randint(15, 19) for r in ("hall", "study", "attic")}
        self.room = rng.choice(sorted(self.rooms))
        self.target = rng.randint(20, 24)
        self.locked = False
        self.user_messages = [f"Set the {self.room} to {self.target} degrees.",
                              "Now lock the front door.",
                              "What is the average temperature of the three rooms now?"]
        self.message_criteria = [lambda: self.rooms[self.room] == self.target,
                                 lambda: self.locked,
                                 lambda: self.read_all]
        self.read_all = False
        self.expected_answer = round((sum(self.rooms.values()) - self.rooms[self.room]
                                      + self.target) / 3, 2)
        return self.user_messages[0], {}

    def tool_set_temperature(self, room: str, degrees: int) -> str:
        """Set a room's thermostat."""
        self.rooms[room] = degrees
        return f"{room} set to {degrees}"

    def tool_lock(self) -> str:
        """Lock the front door."""
        self.locked = True
        return "locked"

    def tool_temperatures(self) -> dict:
        """Every room's temperature."""
        self.read_all = True
        return dict(self.rooms)

    def solution(self):
        return [{"name": "set_temperature", "arguments": {"room": self.room, "degrees": self.target}},
                {"name": "lock", "arguments": {}},
                {"name": "temperatures", "arguments": {}},
                str(self.expected_answer)]


def play_oracle(e, seed):
    e.reset(seed=seed)
    total, actions, observations = 0.0, [], []
    for _ in range(e.max_turns):
        actions.append(e.oracle())
        obs, reward, terminated, truncated, _ = e.step(actions[-1])
        observations.append(obs)
        total += reward
        if terminated or truncated:
            break
    return total, actions, observations


def test_the_next_message_is_shown_only_when_the_criterion_holds():
    e = ThermostatMTEnv()
    obs, _ = e.reset(seed=1)
    assert obs == e.user_messages[0] and "lock" not in obs
    obs, *_ = e.step(call("lock"))  # the second request, done too early
    assert "Next request" not in obs and e.current_message == 0
    obs, *_ = e.step(call("set_temperature", room=e.room, degrees=e.target))
    # the lock already holds, but each tool call checks one criterion: request 2 is shown
    assert "Next request: Now lock the front door." in obs and e.current_message == 1
    obs, *_ = e.step(call("lock"))
    assert "Next request: What is the average" in obs and e.current_message == 2


def test_the_answer_counts_only_after_every_request():
    e = ThermostatMTEnv()
    e.reset(seed=2)
    e.step(call("set_temperature", room=e.room, degrees=e.target))
    obs, reward, terminated, *_ = e.step(f"<answer>{e.expected_answer}</answer>")
    assert (reward, terminated) == (0.0, True) and "Request 2 of 3 was not complete" in obs


def test_the_oracle_plays_every_request_then_answers():
    for seed in range(6):
        total, actions, observations = play_oracle(ThermostatMTEnv(), seed)
        assert total == 1.0, (seed, actions, observations)
        assert "[All requests are complete]" in observations[-2]


def test_reset_forgets_the_last_episodes_progress():
    e = ThermostatMTEnv()
    play_oracle(e, 3)
    e.reset(seed=3)
    assert e.current_message == 0 and not e.messages_done()


# The reference code's multi-turn form, written here for the test: tools call the
# program's own _advance_if_done(), criteria read self._state, the answer is "done"
# and solution() is prose ending in an <answer> tag.
REFERENCE_MULTI_TURN = '''
import random


class LibraryLoansMTEnv(ToolUseBaseEnv):
    def reset(self, seed=None):
        random.seed(seed)
        titles = random.sample(["Dune", "Emma", "Ulysses", "Beloved", "Walden"], 3)
        self._state = {"shelf": list(titles), "loans": [], "reader": None}
        self._tools = {
            "find": {"description": "Search the shelf", "parameters": {"type": "object", "properties": {"title": {"type": "string"}}}},
            "card": {"description": "Open a reader card", "parameters": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "lend": {"description": "Lend a book to the open card", "parameters": {"type": "object", "properties": {"title": {"type": "string"}}}},
        }
        self.book = titles[1]
        self._user_messages = ["Open the card of reader Ada.",
                               f"Lend her the book {self.book}."]
        self._message_criteria = [lambda s: s["reader"] == "Ada",
                                  lambda s: self.book in s["loans"]]
        self._current_msg = 0
        self._expected_answer = "done"
        return self._user_messages[0], {}

    def _advance_if_done(self):
        if self._current_msg >= len(self._user_messages):
            return ""
        if self._message_criteria[self._current_msg](self._state):
            self._current_msg += 1
            if self._current_msg >= len(self._user_messages):
                return " ALL DONE: submit <answer>done</answer>."
            return " NEXT: " + self._user_messages[self._current_msg]
        return ""

    def _check_answer(self, answer):
        return answer.strip().lower() == "done" and self._current_msg >= len(self._user_messages)

    def tool_find(self, title=""):
        return ("on shelf" if title in self._state["shelf"] else "missing") + self._advance_if_done()

    def tool_card(self, name=""):
        self._state["reader"] = name
        return "card open" + self._advance_if_done()

    def tool_lend(self, title=""):
        if self._state["reader"] is None or title not in self._state["shelf"]:
            return "Error: cannot lend" + self._advance_if_done()
        self._state["shelf"].remove(title)
        self._state["loans"].append(title)
        return "lent" + self._advance_if_done()

    def solution(self):
        return (f"1. card(name='Ada') 2. find(title='{self.book}') "
                f"3. lend(title='{self.book}') 4. <answer>done</answer>")
'''


def test_reference_multi_turn_programs_are_solved_by_their_prose_solution():
    ns = {"ToolUseBaseEnv": ToolUseBaseEnv}
    exec(REFERENCE_MULTI_TURN, ns)
    for seed in range(4):
        e = ns["LibraryLoansMTEnv"](max_turns=6)
        total, actions, observations = play_oracle(e, seed)
        assert total == 1.0, (actions, observations)
        assert actions[-1] == "<answer>done</answer>" and len(actions) == 4
        assert "NEXT: Lend her the book" in observations[0]
    e = ns["LibraryLoansMTEnv"](max_turns=6)
    e.reset(seed=0)
    assert e.step("<answer>done</answer>")[1] == 0.0  # not before the requests are met


# -- ReasoningGymEnv ------------------------------------------------------------------------


class GcdEnv(spade_env.ReasoningGymEnv):
    dataset = "gcd"
    hint_text = "Use Euclid's algorithm."


def test_reasoning_gym_env_plays_one_seeded_item():
    env = GcdEnv()
    obs, info = env.reset(seed=3)
    assert obs.endswith("inside <answer>...</answer>.") and info == {}
    assert GcdEnv().reset(seed=3)[0] == obs and GcdEnv().reset(seed=4)[0] != obs
    assert env.hint() == "Use Euclid's algorithm."
    _, reward, terminated, truncated, info = env.step(env.oracle())
    assert (reward, terminated, truncated, info) == (1.0, True, False, {"correct": True})
    assert env.step(env.oracle())[1:3] == (0.0, True)  # the episode is over


@pytest.mark.parametrize("action, reply", [("<answer>-1</answer>", "Incorrect."),
                                           ("no tags", "No <answer>...</answer> found."),
                                           (None, "No <answer>...</answer> found.")])
def test_reasoning_gym_env_wrong_or_malformed_answers_earn_nothing(action, reply):
    env = GcdEnv()
    env.reset(seed=1)
    assert env.step(action)[:3] == (reply, 0.0, True)


# -- QuizEnv ---------------------------------------------------------------------------


class _TwoQuestions(spade_env.QuizEnv):
    max_turns = 2

    def questions(self, rng):
        word = rng.choice(["north", "south"])
        return [(f"First letter of {word}?", word[0]),
                (f"Letters of {word}, sorted?", sorted(word))]


def test_quiz_env_pays_each_right_answer_its_share():
    env = _TwoQuestions()
    obs, info = env.reset(seed=3)
    assert obs.endswith("Answer as \\boxed{...}.") and info == {}
    first = env.oracle()[len("\\boxed{"):-1]
    obs, r, done, trunc, _ = env.step("\\boxed{" + first.upper() + "}")  # case does not matter
    assert (r, done, trunc) == (0.5, False, False) and "Correct!" in obs and "sorted" in obs
    letters = env.oracle()[len("\\boxed{"):-1].split(", ")
    _, r, done, _, _ = env.step("\\boxed{" + " ,".join(letters) + "}")  # spaces around items
    assert (r, done) == (0.5, True)
    assert env.step("\\boxed{x}")[1:3] == (0.0, True)  # after the end: nothing more to earn


def test_quiz_env_scores_wrong_and_malformed_answers_apart():
    env = _TwoQuestions()
    env.reset(seed=1)
    assert env.step("\\boxed{...}")[1] == spade_env.FORMAT_PENALTY  # the placeholder
    assert env.step("\\boxed{zzz}")[1:3] == (0.0, True)


def test_quiz_env_without_questions_fails_loudly():
    class Empty(spade_env.QuizEnv):
        def questions(self, rng):
            return []

    with pytest.raises(NotImplementedError):
        spade_env.QuizEnv().reset(seed=0)
    with pytest.raises(ValueError, match="no questions"):
        Empty().reset(seed=0)


def test_nudged_random_changes_one_draw_and_counts_them():
    """``answer_determined`` changes one draw of a quiz's stream at a time: the draws
    before it are the seed's own, the nudged one differs, and the count is exact."""
    import random

    def draws(rng):
        return [rng.random(), rng.choice("abcdefgh"), rng.randint(0, 10 ** 6),
                rng.sample(range(1000), 2)]

    plain = draws(random.Random(5))
    assert draws(spade_env.NudgedRandom(5)) == plain  # no nudge: the same stream
    counted = spade_env.NudgedRandom(5)
    draws(counted)
    assert counted.draws >= 5
    first = draws(spade_env.NudgedRandom(5, nudge=0))
    assert first[0] != plain[0]
    later = draws(spade_env.NudgedRandom(5, nudge=1))
    assert later[0] == plain[0] and later[1:] != plain[1:]


def test_quiz_env_reset_draws_from_a_nudged_stream_only_when_asked():
    env = _TwoQuestions()
    plain = env.reset(seed=3)
    assert plain[1] == {}
    same = env.reset(seed=3, options={spade_env.NUDGE_OPTION: -1})
    assert same == (plain[0], {"draws": 1})  # one choice: one draw
    flips = {env.reset(seed=s, options={spade_env.NUDGE_OPTION: 0})[0] != env.reset(seed=s)[0]
             for s in range(8)}
    assert True in flips  # the one draw, changed, picks the other word for some seeds


WORDS_TABLE = ["north", "south", "east"]
NOT_A_TABLE = ["one"]


class _FromTable(spade_env.QuizEnv):
    def questions(self, rng):
        shown = rng.sample(WORDS_TABLE, 2)
        return [(f"Which comes first: {', '.join(shown)}?", min(shown))]


def test_quiz_env_draws_from_other_words_only_when_asked_and_restores_its_tables():
    env = _FromTable()
    assert env.reset(seed=1)[1] == {}
    probe = ["kettle", "zebra", "moon"]
    obs, info = env.reset(seed=1, options={spade_env.WORDS_OPTION: probe})
    assert info == {"tables": 1}  # WORDS_TABLE; NOT_A_TABLE has one word only
    assert env.oracle()[len("\\boxed{"):-1] in probe and any(w in obs for w in probe)
    assert WORDS_TABLE == ["north", "south", "east"] and NOT_A_TABLE == ["one"]
    assert not any(w in env.reset(seed=1)[0] for w in probe)  # restored for the next draw


@pytest.mark.parametrize("answer", [{"a", "b"}, {"a": 1}, ["a", {"b"}], object(),
                                    str({"a", "b"}), "{'a': 1}", ["a", " {'b', 'c'} "]])
def test_quiz_env_refuses_an_answer_no_player_can_write(answer):
    """learn-s44, generation 4: an answer scored on ``set(word)``, a Python form whose
    order no player can know. Strings, numbers and lists of them are answers."""
    class Quiz(spade_env.QuizEnv):
        def questions(self, rng):
            return [("Which?", answer)]

    with pytest.raises(TypeError, match="an answer is a string, a number or a list"):
        Quiz().reset(seed=0)
    for fine in ("a", 3, 2.5, ["a", 1], ("a", "b"), "{a, b}", "{x}", "{", "{1 + 1}"):
        Quiz.questions = lambda self, rng, fine=fine: [("Which?", fine)]
        assert Quiz().reset(seed=0)[0].startswith("Which?")
