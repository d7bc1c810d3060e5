"""Broken programs are rejected for the right named reason; a good one is accepted."""

import textwrap

import pytest

from spade_tasks.config import ValidationConfig
from spade_tasks.regret import DUPLICATE_PROGRESS, rejection_progress
from spade_tasks.validation import validate_source

GOOD = '''
import random

class PickEnv:
    """Pick the hidden number.

    The agent names a number from 1 to 9 and is told higher or lower."""

    max_turns = 6

    def reset(self, seed=None, options=None):
        self.n = random.Random(seed).randint(1, 9)
        self.lo, self.hi = 1, 9
        return "Guess a number from 1 to 9. Reply with the number only.", {}

    def step(self, action):
        try:
            g = int(action.strip())
        except ValueError:
            return "Reply with a number.", 0.0, False, False, {}
        if g == self.n:
            return "Correct!", 1.0, True, False, {}
        if g < self.n:
            self.lo = max(self.lo, g + 1)
            return "Higher.", 0.0, False, False, {}
        self.hi = min(self.hi, g - 1)
        return "Lower.", 0.0, False, False, {}

    def hint(self):
        return "Halve the interval each turn."

    def oracle(self):
        return str((self.lo + self.hi) // 2) if (self.lo + self.hi) // 2 == self.n else str(self.n)
'''


def mutate(old: str, new: str) -> str:
    assert old in GOOD, old
    return GOOD.replace(old, new)


CASES = {
    "parse": GOOD + "\ndef broken(:\n",
    "env_class": GOOD.replace("class PickEnv:", "class Picker:"),
    "imports": "import os\n" + GOOD,
    "max_turns": mutate("max_turns = 6", "max_turns = 0"),
    "reset_return": mutate('return "Guess a number from 1 to 9. Reply with the number only.", {}',
                           'return "Guess"'),
    "step_return": mutate('return "Reply with a number.", 0.0, False, False, {}',
                          'return "Reply with a number.", float("nan"), False, False, {}'),
    "reward_well_formed": mutate('return "Correct!", 1.0, True, False, {}',
                                 'return "Correct!", 1.0, False, False, {}'),
    "oracle_feasible": mutate("return str((self.lo + self.hi) // 2) if (self.lo + self.hi) // 2 == self.n else str(self.n)",
                              "return str(10)"),
    # Unseeded, over a range wide enough that a replay never draws the same number by
    # chance (from 1 to 9, one run in nine passed the check).
    "determinism": mutate("self.n = random.Random(seed).randint(1, 9)",
                          "self.n = random.randint(1, 10**9)"),
    "non_trivial": mutate('return "Reply with a number.", 0.0, False, False, {}',
                          'return "Solved anyway.", 1.0, True, False, {}'),
    "hint": mutate('return "Halve the interval each turn."', 'return ""'),
    # A counter that survives reset(): the second episode on one instance differs.
    "episode_isolation": mutate('return "Guess a number from 1 to 9. Reply with the number only.", {}',
                                'self.games = getattr(self, "games", 0) + 1\n'
                                '        return f"Game {self.games}: guess a number from 1 to 9.", {}'),
    # oracle() changes the state it is asked about: its play "solves" every seed, the same
    # actions without it do not.
    "replayability": mutate("return str((self.lo + self.hi) // 2) if (self.lo + self.hi) // 2 == self.n else str(self.n)",
                            "self.n = 7\n        return '7'"),
    # Any well-formed wrong guess earns 0.6: empty text and echoing get nothing, another
    # seed's oracle actions get 0.6.
    "floor_gap": mutate("        if g < self.n:\n            self.lo = max(self.lo, g + 1)",
                        "        if g != self.n:\n"
                        '            return "Close enough.", 0.6, True, False, {}\n'
                        "        if g < self.n:\n            self.lo = max(self.lo, g + 1)"),
    "limits": mutate("        self.lo, self.hi = 1, 9\n", "        self.lo, self.hi = 1, 9\n        while seed == 2: pass\n"),
    "load": GOOD + "\nraise RuntimeError('boom at import')\n",
}


@pytest.fixture(scope="module")
def cfg():
    return ValidationConfig(seeds=[0, 1, 2])


def test_good_program_is_accepted(sandbox, cfg):
    report = validate_source(GOOD, sandbox, cfg)
    assert report.accepted, report.reasons
    assert report.class_name == "PickEnv" and report.meta.has_oracle and report.meta.has_hint


@pytest.mark.parametrize("reason", sorted(CASES))
def test_broken_program_rejected_for_named_reason(sandbox, cfg, reason):
    report = validate_source(CASES[reason], sandbox, cfg)
    assert not report.accepted
    assert report.reasons[0].split(":")[0] == reason, report.reasons


def test_slow_calls_and_memory_are_reported_and_bounded(sandbox):
    """resource_bounds: a call slower than max_call_seconds, a worker heavier than
    max_peak_memory_mb; the good program's numbers are reported in the check's detail."""
    slow = mutate("            g = int(action.strip())\n",
                  "            g = int(action.strip())\n"
                  "            if g == 42:\n"
                  "                sum(i * i for i in range(3 * 10**6))\n")
    report = validate_source(slow, sandbox, ValidationConfig(seeds=[0, 1], max_call_seconds=0.1))
    assert not report.accepted and report.reasons[0].startswith("resource_bounds: a step call took")
    assert "probe 'number'" in report.reasons[0], report.reasons
    heavy = mutate("        self.lo, self.hi = 1, 9\n",
                   "        self.lo, self.hi = 1, 9\n        self.ballast = b'x' * (100 << 20)\n")
    report = validate_source(heavy, sandbox, ValidationConfig(seeds=[0, 1], max_peak_memory_mb=64))
    assert not report.accepted and "memory peaked at" in report.reasons[0], report.reasons
    good = validate_source(GOOD, sandbox, ValidationConfig(seeds=[0, 1]))
    detail = next(c.detail for c in good.checks if c.name == "resource_bounds")
    assert "slowest" in detail and "peak memory" in detail and "MB" in detail


def test_run_all_reports_every_check_and_every_failure(sandbox, cfg):
    from spade_tasks.validation import check_names

    bad = CASES["floor_gap"].replace('return "Halve the interval each turn."', 'return ""')
    report = validate_source(bad, sandbox, cfg, run_all=True)
    assert [c.name for c in report.checks] == check_names()
    status = {c.name: c.status for c in report.checks}
    assert status["floor_gap"] == "fail" and status["hint"] == "fail"
    assert status["resource_bounds"] == "pass" and status["oracle_feasible"] == "pass"
    assert [r.split(":")[0] for r in report.reasons] == ["floor_gap", "hint"]
    assert all(c.seconds >= 0 for c in report.checks)
    # The default stops at the first failure: the checks after it are not run.
    first = validate_source(bad, sandbox, cfg)
    assert [c.name for c in first.checks][-1] == "floor_gap" and len(first.reasons) == 1
    # A failed gate skips what depends on it.
    broken = validate_source(CASES["load"], sandbox, cfg, run_all=True)
    names = check_names()
    after = [c for c in broken.checks if names.index(c.name) > names.index("load")]
    assert {c.status for c in after} == {"skip"} and after[0].detail == "needs load"


def test_determinism_is_checked_on_every_seed(sandbox, cfg):
    """Nondeterministic on the middle validation seed only: checking one seed missed it."""
    src = mutate("self.n = random.Random(seed).randint(1, 9)",
                 "self.n = random.Random(seed).randint(1, 9) if seed != 1 else "
                 "random.randint(1, 10**9)")
    report = validate_source(src, sandbox, cfg)
    assert report.reasons[0].startswith("determinism: seed 1"), report.reasons


def test_imports_allow_future_annotations():
    from spade_tasks.validation import Static, check_imports, check_parse

    st = Static()
    src = "from __future__ import annotations\nimport random\n"
    assert check_parse(src, st) == [] and check_imports(src, st) == []
    st = Static()
    assert check_parse("from os import path\n", st) == []
    assert check_imports("from os import path\n", st)[0].startswith("imports:")


def test_reference_style_program_is_accepted(sandbox, cfg):
    """The reference code's form: `...Env`, max_turns kwarg, reset(seed) and solution()."""
    src = textwrap.dedent('''
        import random

        class EchoWordEnv:
            """Repeat the secret word backwards.

            A single-turn string task."""

            def __init__(self, max_turns=10, **kwargs):
                self.max_turns = max_turns

            def reset(self, seed=None):
                self.word = random.Random(seed).choice(["apple", "river", "stone"])
                return f"Write the word {self.word} backwards.", {}

            def step(self, action):
                ok = action.strip() == self.word[::-1]
                return ("right" if ok else "wrong"), float(ok), True, False, {}

            def solution(self):
                return self.word[::-1]
    ''')
    report = validate_source(src, sandbox, cfg)
    assert report.accepted, report.reasons
    assert report.meta.max_turns == 10


def test_acceptances_are_cached_by_program_checker_and_config(sandbox, cfg, tmp_path, monkeypatch):
    import spade_tasks.validation as v

    first = v.validate_source_cached(GOOD, sandbox, cfg, cache_dir=tmp_path)
    assert first.accepted and len(list(tmp_path.glob("*.json"))) == 1

    played = []
    real = v.validate_source
    monkeypatch.setattr(v, "validate_source", lambda *a, **k: played.append(1) or real(*a, **k))
    again = v.validate_source_cached(GOOD, sandbox, cfg, cache_dir=tmp_path)
    assert played == [] and again.accepted and again.meta == first.meta  # from the cache

    # Another config, program or verdict is a different key: validated for real.
    assert v.validate_source_cached(GOOD, sandbox, ValidationConfig(seeds=[5]), cache_dir=tmp_path).accepted
    bad = v.validate_source_cached(CASES["hint"], sandbox, cfg, cache_dir=tmp_path)
    assert not bad.accepted and len(played) == 2
    assert len(list(tmp_path.glob("*.json"))) == 2  # rejections are not kept
    assert v.verdict_key(GOOD, sandbox, cfg) != v.verdict_key(GOOD + "\n", sandbox, cfg)


# -- designer-reward integrity: each way to game the reward has a named check ------------

GAMING = {
    # Neither oracle() nor solution(): nothing shows that the environment can be won.
    "oracle_missing": [
        GOOD.split("    def oracle(self):")[0],
        GOOD.replace("def oracle(self):", "def _oracle(self):"),
    ],
    # reset() ignores its seed: every episode is the same puzzle.
    "seed_ignored": [
        mutate("self.n = random.Random(seed).randint(1, 9)", "self.n = 7"),
        mutate("self.n = random.Random(seed).randint(1, 9)",
               "self.n = random.Random(12345).randint(1, 9)"),
    ],
    # hint() gives the answer away (the hinted arm would win by being told).
    "hint_leak": [
        mutate('return "Halve the interval each turn."', 'return f"The number is {self.n}."'),
        mutate('return "Halve the interval each turn."',
               'return f"Halve the interval; it ends at {self.n}, so say {self.n}."'),
    ],
    # Pays past 1.0 on some tried policy, or penalises past -1.0 (six empty replies at
    # -0.5 total -3): every total must stay within [-1, 1] (the rollout's own flag for a
    # live environment that pays past 1.0 is reward_overflow).
    "reward_well_formed": [
        mutate('return "Correct!", 1.0, True, False, {}', 'return "Correct!", 2.0, True, False, {}'),
        mutate('return "Reply with a number.", 0.0, False, False, {}',
               'return "Reply with a number.", 0.4, False, False, {}'),
        mutate('return "Reply with a number.", 0.0, False, False, {}',
               'return "Reply with a number.", -0.5, False, False, {}'),
    ],
}


@pytest.mark.parametrize("reason,source", [(r, s) for r, ss in GAMING.items() for s in ss],
                         ids=[f"{r}-{i}" for r, ss in GAMING.items() for i in range(len(ss))])
def test_gaming_program_rejected_for_named_reason(sandbox, cfg, reason, source):
    report = validate_source(source, sandbox, cfg)
    assert not report.accepted
    assert report.reasons[0].split(":")[0] == reason, report.reasons


def test_hidden_state_game_with_equal_first_observations_passes_seed_control(sandbox, cfg):
    """GOOD's first observation is the same on every seed (the number is hidden); its
    whole episodes differ, so ``seed_ignored`` accepts it."""
    from spade_tasks.validation import constant_policy, play

    firsts = {play(sandbox, GOOD, "PickEnv", s, constant_policy(""), 1).observations[0]
              for s in cfg.seeds}
    assert len(firsts) == 1
    assert validate_source(GOOD, sandbox, cfg).accepted


def test_fixed_pool_may_opt_out_of_oracle_missing(sandbox, cfg):
    no_oracle = GAMING["oracle_missing"][0]
    report = validate_source(no_oracle, sandbox, cfg, allow_unverified=True)
    assert report.accepted, report.reasons
    assert not report.meta.has_oracle


def test_fingerprint_is_behaviour_not_text(sandbox, cfg):
    """Same episodes -> same fingerprint, whatever the text; other episodes -> another."""
    renamed = GOOD.replace("Pick the hidden number.", "Find the secret value.").replace(
        "PickEnv", "SecretEnv").replace("self.n", "self.secret")
    other = mutate('"Correct!"', '"Right!"')
    fps = [validate_source(s, sandbox, cfg).fingerprint for s in (GOOD, renamed, other)]
    assert fps[0] and fps[0] == fps[1] and fps[0] != fps[2]


def test_validator_return_is_capped_to_plus_minus_one():
    from spade_tasks.validation import Played, capped_return

    assert [capped_return(t) for t in (-3.0, -1.0, 0.25, 1.0, 2.5)] == [-1.0, -1.0, 0.25, 1.0, 1.0]
    assert Played(0, rewards=[0.7, 0.7, 0.7]).ret == 1.0


# -- spade_env bases: reset/step inherited -------------------------------------------------


@pytest.mark.parametrize("source, ok", [
    ("from spade_env import ReasoningGymEnv\n\nclass GcdEnv(ReasoningGymEnv):\n"
     "    dataset = 'gcd'\n", True),
    ("import spade_env\n\nclass GcdEnv(spade_env.ReasoningGymEnv):\n    dataset = 'gcd'\n", True),
    ("from spade_env import QuizEnv\n\nclass SumEnv(QuizEnv):\n    def questions(self, rng):\n"
     "        return [('1+1?', '2')]\n", True),
    ("from spade_env import ToolEnv\n\nclass LockEnv(ToolEnv):\n    pass\n", False),  # own reset
    ("class GcdEnv(dict):\n    dataset = 'gcd'\n", False),
])
def test_env_class_accepts_reset_and_step_inherited_from_reasoning_gym_env(source, ok):
    from spade_tasks.validation import Static, check_env_class, check_parse

    st = Static()
    assert check_parse(source, st) == []
    reasons = check_env_class(source, st)
    assert (reasons == []) == ok, reasons


QUIZ = textwrap.dedent("""\
    from spade_env import QuizEnv


    class SumEnv(QuizEnv):
        \"\"\"Add two numbers.\"\"\"

        def questions(self, rng):
            a, b = rng.randint(10, 99), rng.randint(10, 99)
            return [(f"What is {a} + {b}?", str(a + b))]

        def hint(self):
            return "Add the tens, then the ones."
""")
QUIZ_GAMING = {
    # no questions(): the base raises when the probe episodes start, never an empty game
    "step_return": QUIZ.replace("def questions", "def asked"),
    # a hint that gives the answer away
    "hint_leak": QUIZ.replace('return "Add the tens, then the ones."', "return self.asked[0][1]"),
    # a constant answer whatever the seed
    "seed_ignored": QUIZ.replace("rng.randint(10, 99), rng.randint(10, 99)", "20, 22"),
    # the question names its own answer (learn-s11: "Spell out the word 'X'", answer X):
    # the player that boxes the first quoted text wins (here at a place that moves, which
    # answer_given, before it, would find otherwise)
    "floor_gap": QUIZ.replace('f"What is {a} + {b}?"',
                           'f"{\'So, \' * (a % 3)}write \'{a + b}\'{\' now\' * (b % 3)}."'),
    # the question does not show what it asks about: the same text needs other answers
    "answer_determined": QUIZ.replace('f"What is {a} + {b}?"',
                                      'f"What is {a % 2} + the number I picked?"'),
    # the question names its answer, unquoted, always at the same place (learn-s12:
    # "Which of these words is X in the list?", answer X)
    "answer_given": QUIZ.replace('f"What is {a} + {b}?"', 'f"Which number is {a + b}: {a}, {b}?"'),
    # one answer right on nearly every draw (learn-s44: "How many letters is 'x' right
    # next to 'y'?" scored on 1 on 63 of 64 seeds); floor_gap's players borrow another
    # of three seeds' answers and miss it whenever one of them draws the rare other
    "answer_constant": QUIZ.replace('f"What is {a} + {b}?"', 'f"Is {a} + {b} more than 30?"')
    .replace("str(a + b)", '"yes" if a + b > 30 else "no"'),
}

ANY_EVEN = textwrap.dedent(r"""
    import random

    from spade_env import extract_boxed


    class AnyEvenEnv:
        '''Name an even number below ten.'''

        max_turns = 1

        def reset(self, seed=None, options=None):
            self.pick = random.Random(seed).choice([2, 4, 6, 8])
            return "Give an even number below 10 as \\boxed{n}.", {}

        def step(self, action):
            got = extract_boxed(action) or ""
            ok = got.isdigit() and int(got) < 10 and int(got) % 2 == 0
            return "done", (1.0 if ok else 0.0), True, False, {}

        def oracle(self):
            return "\\boxed{%d}" % self.pick
""")


def test_answer_determined_passes_a_task_with_several_right_answers(sandbox, cfg):
    """The same text, other oracle answers, each right on the other's seed: no guessing."""
    report = validate_source(ANY_EVEN, sandbox, cfg, run_all=True)
    (check,) = [c for c in report.checks if c.name == "answer_determined"]
    assert check.status == "pass", check.detail
    assert "1 distinct first tasks" in check.detail


COIN_FLIP = textwrap.dedent("""\
    from spade_env import QuizEnv

    WORDS = ["table", "chair", "lamp", "shelf", "sofa", "desk", "mirror", "carpet", "pillow"]


    class MissingOrWordEnv(QuizEnv):
        \"\"\"Pick a word.\"\"\"

        def questions(self, rng):
            shown = rng.sample(WORDS, 5)
            answer = rng.choice(["missing", "word"])
            return [(f"The words: {', '.join(shown)}. Which one?", answer)]

        def hint(self):
            return "Read the words."
""")


def test_answer_determined_finds_a_coin_flip_answer_under_questions_that_never_repeat(
        sandbox, cfg):
    """learn-s10 accepted a quiz whose answer was ``rng.choice(["missing", "word"])``
    under questions that no two of 64 seeds repeat, so no two seeds could be compared.
    Changing the coin's draw alone leaves the text as it was and needs the other
    answer: rejected. The same quiz with the coin's result in its text passes."""
    report = validate_source(COIN_FLIP, sandbox, cfg)
    assert not report.accepted
    assert report.reasons[0].startswith("answer_determined:"), report.reasons
    assert "changed" in report.reasons[0]
    shown = COIN_FLIP.replace("Which one?", "Say {answer}.")
    report = validate_source(shown, sandbox, cfg, run_all=True)
    (check,) = [c for c in report.checks if c.name == "answer_determined"]
    assert check.status == "pass", check.detail
    assert "with a draw changed" in check.detail and "(0 with" not in check.detail


def test_answer_given_passes_an_answer_shown_at_a_place_that_moves(sandbox, cfg):
    """The larger of two shown numbers is in the text, but not at one place on every
    seed: copying a fixed word does not win."""
    larger = QUIZ.replace('f"What is {a} + {b}?", str(a + b)', 'f"Which is larger: {a} or {b}?", str(max(a, b))')
    report = validate_source(larger, sandbox, cfg, run_all=True)
    (check,) = [c for c in report.checks if c.name == "answer_given"]
    assert check.status == "pass", check.detail
    assert report.accepted, report.reasons
    # the same game asked about the later number only: always the last word but one
    last = larger.replace("str(max(a, b))", "str(b)")
    report = validate_source(last, sandbox, cfg)
    assert report.reasons[0].startswith("answer_given:"), report.reasons
    assert "word 4 from the end" in report.reasons[0], report.reasons  # before "Answer as ..."


SHOWN_LIST = textwrap.dedent("""\
    from spade_env import QuizEnv

    WORDS = ["table", "chair", "lamp", "shelf", "sofa", "desk", "mirror", "carpet", "pillow"]


    class FirstWordsEnv(QuizEnv):
        \"\"\"The words of a list.\"\"\"

        def questions(self, rng):
            shown = rng.sample(WORDS, rng.randint(3, 5))
            listed = ", ".join(shown)
            question = f"First these words: {listed}. Count from 1."
            answer = [w for w in shown]
            return [(question, answer)]

        def hint(self):
            return "Read the words."
""")


def test_answer_given_finds_an_answer_of_several_words_copied_as_shown(sandbox, cfg):
    """learn-s19 accepted a quiz scored on the list its question shows, as shown: the
    answer is several words, always starting at the same place of the text, so copying
    the text from there wins. The same list asked reversed passes."""
    report = validate_source(SHOWN_LIST, sandbox, cfg)
    assert not report.accepted
    assert report.reasons[0].startswith("answer_given:"), report.reasons
    assert "the words from word 4 of the task text on" in report.reasons[0], report.reasons
    reversed_ = SHOWN_LIST.replace("[w for w in shown]", "shown[::-1]")
    report = validate_source(reversed_, sandbox, cfg, run_all=True)
    (check,) = [c for c in report.checks if c.name == "answer_given"]
    assert check.status == "pass", check.detail


TWO_LETTERS = textwrap.dedent("""\
    from spade_env import QuizEnv

    WORDS = ["table", "chair", "lamp", "shelf", "sofa", "desk", "mirror", "carpet", "pillow"]


    class LetterLetterEnv(QuizEnv):
        \"\"\"A letter of a word and a letter of another.\"\"\"

        def questions(self, rng):
            a, b = rng.sample(WORDS, 2)
            x, y = rng.choice(a), rng.choice(b)
            question = f"Find the letter '{x}' of '{a}' that is a letter of '{y}'. What is it?"
            return [(question, f"{x} {y}")]

        def hint(self):
            return "Read the letters."
""")


def test_answer_given_finds_an_answer_copied_word_by_word_from_places_apart(sandbox, cfg):
    """learn-s42, generation 4: "Find the letter of the 'x' that is a letter of 'y'"
    scored on "x y", two words each copied from its own place. Written the other way
    round where no question asks for another order (learn-s43, generation 0: "Which
    letter of the word X at position 3 has 'l'?" scored on "l 3") they are copied too;
    asked for in reverse, they are a task (of a kind) and pass."""
    report = validate_source(TWO_LETTERS, sandbox, cfg)
    assert not report.accepted
    assert report.reasons[0].startswith("answer_given:"), report.reasons
    assert "the task text's word 4, word 7 from the end, in the order shown" in \
        report.reasons[0], report.reasons
    swapped = TWO_LETTERS.replace('f"{x} {y}"', 'f"{y} {x}"')
    report = validate_source(swapped, sandbox, cfg)
    assert not report.accepted
    assert "in an order no question asks for" in report.reasons[0], report.reasons
    asked_back = swapped.replace("What is it?", "Write both in reverse order.")
    report = validate_source(asked_back, sandbox, cfg, run_all=True)
    (check,) = [c for c in report.checks if c.name == "answer_given"]
    assert check.status == "pass", check.detail


SOME_EMPTY = textwrap.dedent("""\
    from spade_env import QuizEnv

    WORDS = ["unions", "workers", "have", "warned", "industrial", "action", "company"]


    class LetterOfTheWordEnv(QuizEnv):
        \"\"\"A letter written at a place.\"\"\"

        def questions(self, rng):
            word = rng.choice(WORDS)
            letter = rng.choice(["", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"])
            question = f"Write the letter '{letter}' at the given place '{word[1]}'"
            return [(question, word[1] + " " + letter)]

        def hint(self):
            return "Write the letter at the given place."
""")


def test_answer_given_finds_a_copy_whose_drawn_word_is_sometimes_empty(sandbox, cfg):
    """learn-s43, generation 1: "Write the letter 'x' at the given place 'y'" scored on
    "y x", where x is drawn empty one time in twelve: then the answer is "y" alone and
    the text lacks x too. The copy is the same; the seeds' answers differ in length."""
    report = validate_source(SOME_EMPTY, sandbox, cfg)
    assert not report.accepted
    assert report.reasons[0].startswith("answer_given:"), report.reasons
    assert "in an order no question asks for" in report.reasons[0], report.reasons


def test_a_filter_of_the_words_shown_is_not_a_copy():
    """Answers of fewer words under texts as long pick some of the words shown (the
    words with an 'a'): a task, even where every word shown is picked on most seeds.
    Answers that lack a word their texts lack too are copies."""
    from spade_tasks.validation import copied_from

    shown = ["lamp", "sofa", "desk", "chair"]
    texts = [["which", "have", "an", "a", *shown]] * 6
    spans = [shown] * 4 + [["lamp", "sofa", "chair"], ["sofa"]]
    assert copied_from([(t, " ".join(s)) for t, s in zip(texts, spans)]) is None

    pairs = [("b", "e"), ("c", "f"), ("d", "g"), ("h", "k"), ("", "m"), ("", "n")]
    seen = [(["write", *([x] if x else []), "at", "place", y, "now"], f"{x} {y}".strip())
            for x, y in pairs]
    assert copied_from(seen) == ("the task text's word 2, word 2 from the end, in the "
                                 "order shown", "those words")


ECHOED = textwrap.dedent("""\
    from spade_env import QuizEnv

    WORDS = ["table", "chair", "lamp", "shelf", "sofa", "desk", "mirror", "carpet", "pillow"]


    class OneVowelEnv(QuizEnv):
        \"\"\"A list written with one vowel.\"\"\"

        def questions(self, rng):
            shown = rng.sample(WORDS, rng.randint(3, 4))
            listed = ", ".join(shown)
            question = f"Write the words '{listed}' with exactly one vowel, from the first letter."
            return [(question, f"The {listed}.{question}")]

        def hint(self):
            return "Read the words."
""")


def test_answer_given_finds_the_question_written_back(sandbox, cfg):
    """min-p's probe (2026-12-07): an answer of the shown list and then the question
    itself, no word of it from one fixed place in order. Scored on the list reversed,
    the same question passes."""
    report = validate_source(ECHOED, sandbox, cfg)
    assert not report.accepted
    assert report.reasons[0].startswith(
        "answer_given: on all 64 seeds looked at, the answer is the task text itself"), \
        report.reasons
    fair = ECHOED.replace('f"The {listed}.{question}"', "shown[::-1]")
    report = validate_source(fair, sandbox, cfg, run_all=True)
    (check,) = [c for c in report.checks if c.name == "answer_given"]
    assert check.status == "pass", check.detail


def test_quiz_env_subclass_is_accepted(sandbox, cfg):
    report = validate_source(QUIZ, sandbox, cfg)
    assert report.accepted, report.reasons
    assert report.meta.has_oracle and report.meta.has_hint and report.meta.max_turns == 1


def test_answer_constant_passes_a_fair_yes_or_no_question(sandbox, cfg):
    """Right on about half the draws, either answer: a question, not a free win."""
    even = QUIZ_GAMING["answer_constant"].replace("more than 30?", "even?").replace(
        "a + b > 30", "(a + b) % 2 == 0")
    report = validate_source(even, sandbox, cfg, run_all=True)
    (check,) = [c for c in report.checks if c.name == "answer_constant"]
    assert check.status == "pass", check.detail
    assert "of 64 seeds" in check.detail


@pytest.mark.parametrize("reason", sorted(QUIZ_GAMING))
def test_quiz_env_subclass_gets_no_pass_from_its_base(sandbox, cfg, reason):
    report = validate_source(QUIZ_GAMING[reason], sandbox, cfg)
    assert not report.accepted
    assert report.reasons[0].split(":")[0] == reason, report.reasons


PADDED_ANSWER = textwrap.dedent("""\
    from spade_env import QuizEnv

    WORDS = ["table", "chair", "lamp", "shelf", "sofa", "desk", "mirror", "carpet", "pillow"]


    class VowelCountEnv(QuizEnv):
        \"\"\"The number of vowels in a word.\"\"\"

        def questions(self, rng):
            word = rng.choice(WORDS)
            answer = str(sum(c in "aeiou" for c in word))
            answer += " for each word. Keep the counts of consonants only."
            return [(f"How many vowels are in the word '{word}'?", answer)]

        def hint(self):
            return "Count a, e, i, o and u."
""")


def test_answer_unshown_refuses_an_answer_padded_with_words_no_question_shows(sandbox, cfg):
    """learn-s40's designer appended sentences to its answers ("3 for each word. Keep
    the counts of consonants only." for "How many vowels are in X?"): every other check
    accepts such a quiz, and no player can know the words. The same quiz without the
    sentence passes, and so does one whose answer's words change with the draw."""
    report = validate_source(PADDED_ANSWER, sandbox, cfg)
    assert not report.accepted
    assert report.reasons[0].startswith("answer_unshown:"), report.reasons
    assert "'consonants'" in report.reasons[0] and "'for'" in report.reasons[0]
    # The same sentence glued on without its spaces (learn-s40 generation 5, design 14).
    glued = PADDED_ANSWER.replace(
        'answer += " for each word. Keep the counts of consonants only."',
        'answer += " for each word. Keep the counts.".replace(" ", "").replace(".", "")')
    report = validate_source(glued, sandbox, cfg)
    assert report.reasons[0].startswith("answer_unshown:"), report.reasons
    assert "in a row" in report.reasons[0]
    plain = PADDED_ANSWER.replace(
        '        answer += " for each word. Keep the counts of consonants only."\n', "")
    assert "consonants" not in plain
    reversed_ = plain.replace('str(sum(c in "aeiou" for c in word))', "word[::-1]").replace(
        "How many vowels are in the word", "Spell backwards the word")
    for source in (plain, reversed_):
        report = validate_source(source, sandbox, cfg, run_all=True)
        (check,) = [c for c in report.checks if c.name == "answer_unshown"]
        assert check.status == "pass", check.detail
    # The question's own words may appear in the answer: "N vowels" asked and answered.
    counted = plain.replace("How many vowels are in the word '{word}'?",
                            "How many vowels (say N vowels) are in '{word}'?").replace(
        'answer = str(sum(c in "aeiou" for c in word))',
        'answer = str(sum(c in "aeiou" for c in word)) + " vowels"')
    assert '+ " vowels"' in counted
    report = validate_source(counted, sandbox, cfg, run_all=True)
    (check,) = [c for c in report.checks if c.name == "answer_unshown"]
    assert check.status == "pass", check.detail


def _unpadded(old: str, new: str) -> str:
    """``PADDED_ANSWER`` without its padding, with ``old`` replaced by ``new``."""
    plain = PADDED_ANSWER.replace(
        '        answer += " for each word. Keep the counts of consonants only."\n', "")
    assert old in plain
    return plain.replace(old, new)


def _refused_and_fair(sandbox, cfg, check: str, unfair: str, prefix: str, fair: str):
    """``unfair`` is refused by ``check`` first, with a reason starting ``prefix`` and a
    duplicate's reward; ``fair``, its twin that asks what it scores, passes ``check``."""
    report = validate_source(unfair, sandbox, cfg)
    assert not report.accepted
    assert report.reasons[0].startswith(f"{check}: {prefix}"), report.reasons
    assert rejection_progress(report.reasons, unfair) == DUPLICATE_PROGRESS
    report = validate_source(fair, sandbox, cfg, run_all=True)
    (found,) = [c for c in report.checks if c.name == check]
    assert found.status == "pass", found.detail


def test_answer_fits_refuses_a_count_scored_on_a_letter(sandbox, cfg):
    """learn-s40, generation 5: "How many letters ...?" scored on the word's largest
    letter. No operation of ``asked``'s lexicon computes the answer, so ``answer_asked``
    passes it, and so does every other check; the count, answered, passes."""
    letter = _unpadded('str(sum(c in "aeiou" for c in word))', "max(word)")
    counted = letter.replace("max(word)", "str(len(word))").replace("How many vowels",
                                                                     "How many letters")
    _refused_and_fair(sandbox, cfg, "answer_fits", letter,
                      "the question asks for a number", counted)


def test_answer_counts_refuses_a_count_of_nothing_the_question_shows(sandbox, cfg):
    """learn-s41, generation 4: "How many places is letter 'x' in word X?" scored on the
    word's length less one. The answer is a number, as asked, and no operation of the
    lexicon computes it, so every other check accepts it; the same count with the one
    it takes away said in the question passes."""
    less = _unpadded('str(sum(c in "aeiou" for c in word))', "str(len(word) - 1)")
    stated = less.replace("How many vowels are in the word '{word}'?",
                          "How many letters are left once 1 is taken from '{word}'?")
    _refused_and_fair(sandbox, cfg, "answer_counts", less, "on ", stated)


def test_answer_repeated_refuses_a_letter_written_an_unstated_number_of_times(sandbox, cfg):
    """learn-s41, generation 5: "Write the letter 'r' at position r." scored on "rr";
    the same quiz saying "2 times" passes."""
    doubled = _unpadded('str(sum(c in "aeiou" for c in word))', "word[0] * 2").replace(
        "How many vowels are in the word '{word}'?", "Write the letter at the start of '{word}'.")
    stated = doubled.replace("Write the letter at the start of '{word}'.",
                             "Write the letter at the start of '{word}' 2 times.")
    _refused_and_fair(sandbox, cfg, "answer_repeated", doubled,
                      "the answer is one text written 2 times", stated)


def test_words_ignored_refuses_a_quiz_drawing_from_words_of_its_own(sandbox, cfg):
    """learn-s41, generation 5: a quiz with a WORDS table that draws from words written
    inside questions() ("Which letter of X is first?" scored on the second letter): the
    probe words never reach its questions, so the checks that read them cannot. Words
    in one string stay out of reach and are refused; a list of four or more words
    inside questions() is probed as a table (``hoist_word_lists``), so it is read: the
    count it asks for passes, and the same list scored on another thing is refused by
    the check that reads it, not left unread. The same quiz drawing from WORDS passes."""
    in_text = _unpadded("word = rng.choice(WORDS)",
                        'word = rng.choice("sky lamp table carpet".split())')
    report = validate_source(in_text, sandbox, cfg)
    assert not report.accepted
    assert report.reasons[0].startswith("words_ignored: with its word tables replaced"), \
        report.reasons
    inline = in_text.replace('"sky lamp table carpet".split()',
                             '["sky", "lamp", "table", "carpet"]')
    report = validate_source(inline, sandbox, cfg, run_all=True)
    (check,) = [c for c in report.checks if c.name == "words_ignored"]
    assert check.status == "pass", check.detail
    assert report.accepted, report.reasons
    unasked = inline.replace('answer = str(sum(c in "aeiou" for c in word))',
                             "answer = str(len(word))")
    report = validate_source(unasked, sandbox, cfg)
    assert report.reasons[0].startswith("answer_asked:"), report.reasons
    plain = inline.replace('rng.choice(["sky", "lamp", "table", "carpet"])', "rng.choice(WORDS)")
    report = validate_source(plain, sandbox, cfg, run_all=True)
    (check,) = [c for c in report.checks if c.name == "words_ignored"]
    assert check.status == "pass", check.detail
    assert report.accepted, report.reasons


def test_word_lists_inside_functions_are_probed_as_tables():
    """``hoist_word_lists`` moves lists of four or more words out of functions, read as a
    fresh copy each call; letters, short option lists and module tables stay."""
    from spade_tasks.validation import HOISTED, hoist_word_lists

    source = textwrap.dedent("""\
        from spade_env import QuizEnv

        class E(QuizEnv):
            def questions(self, rng):
                words = ["table", "chair", "lamp", "shelf"]
                rng.shuffle(words)
                vowels = ["a", "e", "i", "o", "u"]
                pick = rng.choice(("first", "last"))
                return [(f"{pick}: {', '.join(words)}", words[0])]
        """)
    hoisted = hoist_word_lists(source)
    assert f"{HOISTED}0 = ['table', 'chair', 'lamp', 'shelf']" in hoisted, hoisted
    assert f"words = list({HOISTED}0)" in hoisted, hoisted
    assert f"{HOISTED}1" not in hoisted  # the vowels and the two options stay
    assert hoisted.index(f"{HOISTED}0 =") < hoisted.index("class E")
    namespace: dict = {}
    exec(hoisted.replace("from spade_env import QuizEnv", "QuizEnv = object"), namespace)
    import random
    env = namespace["E"]()
    firsts = {env.questions(random.Random(s))[0][1] for s in range(20)}
    assert len(firsts) > 1 and namespace[f"{HOISTED}0"] == ["table", "chair", "lamp", "shelf"]
    nothing = source.replace('["table", "chair", "lamp", "shelf"]', "list(WORDS)")
    assert hoist_word_lists(nothing) == nothing
    assert hoist_word_lists("def broken(:") == "def broken(:"


def test_a_list_of_names_a_quiz_dispatches_on_is_left_as_it_is(sandbox):
    """Read as data, four kinds of question named in a list become probe words and the
    quiz raises on every draw; the probe then reads the quiz as it is written, so it is
    judged as before over its WORDS table instead of escaping the checks unread."""
    from spade_tasks.validation import PROBE_WORDS, hoist_word_lists, probe_draws

    source = textwrap.dedent("""\
        from spade_env import QuizEnv

        WORDS = ["table", "chair", "lamp", "shelf", "sofa", "desk"]


        class KindsEnv(QuizEnv):
            def questions(self, rng):
                kind = rng.choice(["first", "last", "second", "length"])
                word = rng.choice(WORDS)
                answers = {"first": word[0], "last": word[-1], "second": word[1],
                           "length": str(len(word))}
                return [(f"What is the {kind} letter of '{word}'?", answers[kind])]

            def hint(self):
                return "Read the word."
        """)
    assert hoist_word_lists(source) != source
    draws = probe_draws(sandbox, source, "KindsEnv")
    assert draws and all(any(w in q for w in PROBE_WORDS) for q, _ in draws), draws
