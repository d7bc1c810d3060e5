"""Word steps (``spade_env.chain``): the question and answer they build, the host's
reading of a chain's question, and the validator's exact judgement of chain quizzes."""

import itertools
import sys
import textwrap
from pathlib import Path

import pytest

from spade_tasks import memory, word_steps
from spade_tasks.config import ValidationConfig
from spade_tasks.regret import DUPLICATE_PROGRESS, rejection_progress
from spade_tasks.validation import chain_verdict, validate_source

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "spade_tasks" / "sandbox" / "envlib"))

import spade_env  # noqa: E402
from spade_env import (chain, count_letters, drop_vowels, first_letter,  # noqa: E402
                       letter_place, odd_letters, reverse, sort_letters)


def test_chain_asks_the_steps_in_order_and_answers_what_they_compute():
    question, answer = chain("Garden", drop_vowels, reverse)
    assert question == ("Take the word 'garden'. First remove every vowel (a, e, i, o, u) "
                        "from it. Then spell it backwards. What do you get?")
    assert answer == "ndrg"
    assert chain("garden", first_letter, letter_place) == (
        "Take the word 'garden'. First take its first letter. Then give the letter's place "
        "in the alphabet (a = 1, b = 2, ...). What do you get?", "7")
    assert chain("garden", count_letters)[0].endswith("Count its letters. What do you get?")
    assert chain("garden", first_letter, reverse)[1] == "g"  # a letter is a word
    # a step called alone computes, for a question a program words itself
    assert drop_vowels("garden") == "grdn" and letter_place("c") == 3
    assert [s.name for s in spade_env.STEPS] == [
        s for s in spade_env.__all__ if isinstance(getattr(spade_env, s), spade_env.WordStep)]


@pytest.mark.parametrize("args, error, message", [
    (("garden",), ValueError, "1 to 5 steps, not 0"),
    (("garden",) + (reverse,) * 6, ValueError, "1 to 5 steps, not 6"),
    (("garden", count_letters, reverse), TypeError, "reverse takes a word, but the step "
                                                    "before it gives a number"),
    (("garden", letter_place), TypeError, "letter_place takes a letter"),
    (("garden", "reverse"), TypeError, "word steps such as reverse, not 'reverse'"),
    (("aeiou", drop_vowels), ValueError, "drop_vowels leaves nothing of 'aeiou'"),
    (("it's", reverse), ValueError, "a word of letters"),
])
def test_chain_refuses_steps_that_do_not_go_together(args, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        chain(*args)


def test_host_reads_back_every_chain_of_up_to_two_steps():
    steps = spade_env.STEPS
    read = 0
    for n in (1, 2):
        for combo in itertools.product(steps, repeat=n):
            try:
                question, answer = chain("bookkeeper", *combo)
            except (TypeError, ValueError):
                continue
            assert word_steps.read_chain(question) == ("bookkeeper", tuple(s.name for s in combo))
            assert word_steps.read_chain(question + " Answer as \\boxed{...}.") is not None
            assert word_steps.chain_answer(question) == answer
            read += 1
    assert read > 150
    q, _ = chain("garden", odd_letters, sort_letters, reverse, first_letter, letter_place)
    assert word_steps.read_chain(q) == ("garden", ("odd_letters", "sort_letters", "reverse",
                                                   "first_letter", "letter_place"))


@pytest.mark.parametrize("text", [
    "Take the word 'garden'. Spell it backwards. What do you get? Give it in capitals.",
    "Take the word 'garden'. First spell it backwards. What do you get?",  # one step, "First"
    "Take the word 'garden'. Spell it backwards. Then sort it. What do you get?",
    "Take the word 'garden'. Then spell it backwards. First count its letters. What do you get?",
    "Take the words 'garden'. Spell it backwards. What do you get?",
    "Spell 'garden' backwards.",
])
def test_host_reads_no_other_text_as_a_chain(text):
    assert word_steps.read_chain(text) is None and word_steps.chain_answer(text) is None


def test_chain_verdict_recomputes_the_answer_from_the_question():
    q, a = chain("garden", drop_vowels, reverse)
    assert chain_verdict([(q, a), (q, "\\boxed{NDRG}")]) == (True, None)
    chained, wrong = chain_verdict([(q, a), (q, "grdn")])
    assert chained and wrong == ("the question asks for drop_vowels, then reverse of 'garden', "
                                 "which gives 'ndrg', but the answer is 'grdn'")
    assert chain_verdict([(q, a), ("Spell 'garden' backwards.", "nedrag")]) == (False, None)


CHAIN_QUIZ = textwrap.dedent("""\
    from spade_env import QuizEnv, chain, drop_vowels, reverse

    WORDS = ["planet", "garden", "silver", "rocket", "basket", "window", "marble"]


    class VowellessBackwardsEnv(QuizEnv):
        \"\"\"A word without its vowels, spelled backwards.\"\"\"

        def questions(self, rng):
            word = rng.choice(WORDS)
            return [chain(word, drop_vowels, reverse)]

        def hint(self):
            return "Cross out the vowels first, then read from the right."
    """)


def test_validator_judges_a_chain_quiz_exactly(sandbox):
    cfg = ValidationConfig()
    report = validate_source(CHAIN_QUIZ, sandbox, cfg, run_all=True)
    assert report.accepted, report.reasons
    for name in ("answer_asked", "answer_unshown", "answer_fits", "answer_repeated",
                 "answer_counts"):
        (check,) = [c for c in report.checks if c.name == name]
        assert check.status == "pass" and "chain of word steps" in check.detail, check

    # A chain's question scored on something else, however it is done: another answer
    # returned beside the question, a step changed from inside the sandbox (the host
    # computes with its own copy), the question written by hand in a chain's words.
    for gamed in (
            CHAIN_QUIZ.replace("return [chain(word, drop_vowels, reverse)]",
                               "question, _ = chain(word, drop_vowels, reverse)\n"
                               "        return [(question, word[::-1])]"),
            CHAIN_QUIZ.replace("return [chain(", "reverse.compute = lambda w: w\n"
                                                 "        return [chain("),
            CHAIN_QUIZ.replace("return [chain(word, drop_vowels, reverse)]",
                               "question = f\"Take the word '{word}'. Spell it backwards. "
                               "What do you get?\"\n"
                               "        return [(question, word[::-1].upper()[:-1])]")):
        report = validate_source(gamed, sandbox, cfg)
        assert not report.accepted
        assert report.reasons[0].startswith("answer_asked: the question asks for "), \
            report.reasons
        assert "but the answer is" in report.reasons[0], report.reasons
        assert rejection_progress(report.reasons, gamed) == DUPLICATE_PROGRESS


def test_a_chain_with_a_step_that_changes_nothing_is_the_shorter_game(sandbox):
    """learn-s49's designer wrote ``chain(word, drop_last, first_letter)``: the first
    letter, with a step in front that changes nothing. Refused as a retold game (what a
    duplicate earns); a chain whose every step counts passes (and so does every committed
    chain seed: tests/test_seeds.py)."""
    cfg = ValidationConfig()
    padded = CHAIN_QUIZ.replace("drop_vowels, reverse", "drop_last, first_letter")
    report = validate_source(padded, sandbox, cfg)
    assert not report.accepted
    assert report.reasons[0].startswith(
        "chain_padded: drop_last, then first_letter answers as first_letter does"), report.reasons
    assert rejection_progress(report.reasons, padded) == DUPLICATE_PROGRESS
    # Order-blind steps before a sort or a count change nothing either; a step whose
    # answer differs on some shape of word is kept.
    for names, padding in ((("reverse", "sort_letters"), True),
                           (("double", "count_distinct"), True),
                           (("drop_vowels", "first_letter"), False),
                           (("drop_first", "sort_letters"), False),
                           (("drop_vowels", "reverse"), False)):
        assert (word_steps.idle_step(names) == 0) == padding, names
    report = validate_source(CHAIN_QUIZ, sandbox, cfg, run_all=True)
    (check,) = [c for c in report.checks if c.name == "chain_padded"]
    assert check.status == "pass" and "changes its answer" in check.detail


def test_chains_of_other_steps_are_other_games():
    other = CHAIN_QUIZ.replace("drop_vowels, reverse", "sort_letters, reverse")
    assert memory.game_shape(CHAIN_QUIZ) != memory.game_shape(other)
    assert {"reverse", "drop_vowels", "letter_place"} <= memory.STEP_NAMES
    assert memory.STEP_NAMES == {s.name for s in spade_env.STEPS}
    # the same steps over other words stay one game
    words = CHAIN_QUIZ.replace('"planet", "garden"', '"lemon", "cherry"')
    assert memory.game_shape(CHAIN_QUIZ) == memory.game_shape(words)
