"""answer_asked: a word quiz scores what its question asks for (``spade_tasks.asked``)."""
import glob
import textwrap

import pytest

from spade_tasks import asked
from spade_tasks.answers import answer_of
from spade_tasks.config import ValidationConfig
from spade_tasks.regret import DUPLICATE_PROGRESS, rejection_progress
from spade_tasks.validation import (chain_verdict, env_class_name, probe_draws, read_draws,
                                    validate_source)

LISTS = [("kettle", "moon", "zebra"), ("fig", "sky", "apricot", "ladder"), ("oxen", "lilac"),
         ("quartz", "gnome", "breeze"), ("umbrella", "vivid", "harbor"), ("jasmine", "fig"),
         ("moon", "apricot", "sky"), ("ladder", "zebra", "kettle", "oxen")]


def _draws(question: str, answer) -> list[asked.Draw]:
    return [(question.format(", ".join(ws)), ws, tuple(str(a) for a in answer(ws)))
            for ws in LISTS]


def test_the_operation_a_quiz_scores_is_found_from_its_answers():
    draws = _draws("Write these words in reverse order: {}.", lambda ws: ws[::-1])
    assert [op.name for op in asked.computed(draws)] == ["the words in reverse order"]
    assert asked.unasked(draws) is None
    # first letters written as one word ("km") or as items ("k, m") are the same answer
    joined = _draws("Join the first letters of: {}.", lambda ws: ["".join(w[0] for w in ws)])
    assert "the words' first letters" in [op.name for op in asked.computed(joined)]
    together = _draws("Write {} together as one word.", lambda ws: ["".join(ws)])
    assert [op.name for op in asked.computed(together)] == ["the words written together as one"]
    assert asked.unasked(together) is None
    # fewer than MIN_DRAWS draws never identify an operation
    assert asked.computed(draws[:asked.MIN_DRAWS - 1]) == []


@pytest.mark.parametrize("question, answer, asks", [
    ("Write these words in alphabetical order: {}.", lambda ws: [w[0] for w in ws],
     "the words in alphabetical order"),
    ("Count the vowels of each word: {}.", lambda ws: [len(w) for w in ws],
     "each word's number of vowels"),
    ("Change the list {} to its sorted list.", lambda ws: ws[::-1],
     "the words in alphabetical order"),
    # learn-s45, generation 5: vowels removed asked, the words written together scored
    ("Remove the vowels (a, e, i, o, u) from '[{}]'.", lambda ws: ["".join(ws)],
     "each word's number of vowels, the number of vowels of all the words or the words "
     "without their vowels"),
])
def test_a_question_asking_for_another_operation_is_refused(question, answer, asks):
    """Designs of the kind learn-s22 to learn-s27 accepted: the answer is one
    operation, the question names another."""
    reason = asked.unasked(_draws(question, answer))
    assert reason is not None and f"asks for {asks}" in reason, reason


def test_a_tie_rule_does_not_stand_for_the_question():
    """learn-s33, generation 11, accepted: the tie rule's "alphabetical" counted as asking
    for the last word alphabetically, which the quiz scored instead of the longest."""
    question = ("Which of these words is longest: {}? On a tie, give the one first in "
                "alphabetical order.")
    reason = asked.unasked(_draws(question, lambda ws: [max(ws)]))
    assert reason is not None and "is the last word in alphabetical order" in reason, reason
    # read whole, the tie rule's "alphabetical" is asked: only the second reading refuses
    whole = asked.question_words(question.format("kettle, moon, zebra"),
                                 ("kettle", "moon", "zebra"))
    last = next(op for op in asked.OPERATIONS if op.name == "the last word in alphabetical order")
    assert last.asked_in(whole) and not last.asked_in(asked.without_tie_clauses(whole))
    # the same text, scored on what it asks (the seed longest_word.py's game), passes
    assert asked.unasked(_draws(question, lambda ws: [min(ws, key=lambda w: (-len(w), w))])) is None


@pytest.mark.parametrize("question, answer", [
    ("Write these words in reverse alphabetical order: {}.", lambda ws: sorted(ws)[::-1]),
    ("Which word is the longest: {}?", lambda ws: [max(ws, key=len)] if
     [len(w) for w in ws].count(max(map(len, ws))) == 1 else [ws[0]]),
    ("How many letters in each of: {}?", lambda ws: [len(w) for w in ws]),
    # "first" and "last" name letters too, but here they say which way to read
    ("Write each of {} from its last letter to its first.", lambda ws: [w[::-1] for w in ws]),
    # no operation of the lexicon computes it: not judged
    ("Swap the first two words of: {}.", lambda ws: [ws[1], ws[0], *ws[2:]]),
    # a question that names no operation of the lexicon: not judged
    ("Here are some words: {}. Go!", lambda ws: ws[::-1]),
])
def test_a_question_asking_for_what_it_scores_passes(question, answer):
    assert asked.unasked(_draws(question, answer)) is None


def test_shown_words_do_not_ask_for_anything():
    """A probe word inside the question ("ladder") is masked before the lexicon reads it,
    and so are numbers."""
    assert asked.question_words("Sort these: ladder, moon. Answer as \\boxed{...}.",
                                ("ladder", "moon")).split() == ["sort", "these:", ",", "."]


WORDS = ("kettle", "apricot", "zebra", "moon", "quartz", "lilac", "umbrella", "fig", "gnome")


def _one(question: str, answer) -> list[asked.Draw]:
    """Draws of a question that shows one word, as ``read_draws`` gives them."""
    return [(question.format(w), (w,), tuple(str(answer(w)).lower().split(", ")))
            for w in WORDS]


def test_a_refusal_names_every_reading_of_the_question():
    """learn-s44, generation 0: "Which letter of the word 'oxen' comes first in the
    alphabet?" scored on its vowels. The lexicon reads "letter" as its length too; a
    message naming only that reading told the designer's reader the wrong thing."""
    question = "Which letter of the word '{}' comes first in the alphabet?"
    reason = asked.unasked(_one(question, asked._vowels))
    assert reason is not None and "or the word's first letter (" in reason, reason
    assert reason.startswith("the question asks for the number of letters of the word, "), reason


@pytest.mark.parametrize("question, asks", [
    ("How many letters does '{}' have?", "the number of letters of the word"),
    ("How many different vowels are in '{}'?", "the number of vowels of the word"),
])
def test_different_letters_are_scored_only_where_asked(question, asks):
    """learn-s43, generations 3 and 4, once their inline word lists were probed: both
    scored a word's different letters, which the lexicon did not compute, so neither
    was judged. Asked for, the same answer passes."""
    distinct = lambda w: len(set(w))  # noqa: E731
    reason = asked.unasked(_one(question, distinct))
    assert reason is not None and reason.startswith(f"the question asks for {asks}"), reason
    assert reason.endswith("is the number of different letters of the word"), reason
    assert asked.unasked(_one("How many different letters does '{}' have?", distinct)) is None


@pytest.mark.parametrize("question, answer, kind", [
    # learn-s40, generation 5: a count scored on the word's largest letter
    ("How many letters does the word '{}' have?", max, "a number"),
    # learn-s40, generation 5: "Count the letters" scored on the word rotated by one
    ("Count the letters of '{}'.", lambda w: w[1:] + w[0], "a number"),
    # learn-s40, generations 5 and 7: an order asked for, the word scored as it is
    ("Spell out the word '{}' with its letters ordered alphabetically.",
     lambda w: "-".join(w), "something in alphabetical order"),
    ("Sort the letters of {} alphabetically.", lambda w: w[-1] + w,
     "something in alphabetical order"),
    # learn-s40, generation 7: a letter asked for, the word and its letters scored
    ("Which of these has the last letter: {}? What is the word's first letter?",
     lambda w: w + "-".join(w), "a letter"),
    # learn-s40's last weights at the probe: the first letter asked, the word rotated scored
    ("Write the first letter of the word '{}'.", lambda w: w[1:] + w[0], "a letter"),
    # learn-s41, generation 4: "What letter is left?" scored on the word and a number
    ("Write the letter '{}' on a given row. What letter is left?", lambda w: w + " 3",
     "a letter"),
    # learn-s43, generation 0: a letter asked, the letter and the place shown scored
    ("Which letter of the word '{}' at position 3 has 'e'?", lambda w: "e 3", "a letter"),
    # learn-s43, generation 1: "the letter of the word" scored on twice its length
    ("Write the letter of the word '{}' with a given number of letters.",
     lambda w: f"{2 * len(w)}.", "a letter"),
    # learn-s43: the word reversed asked, the word rotated by one scored
    ("Spell '{}' backwards.", lambda w: w[1:] + w[0], "something written in reverse"),
    # learn-s44, generation 2: the word asked for as it is, its letters rotated scored
    ("Write the word '{}' from the list.", lambda w: w[1:] + w[:3],
     "the word it shows, as it is"),
])
def test_an_answer_never_of_the_kind_asked_is_refused(question, answer, kind):
    """No operation of the lexicon computes these answers, so ``unasked`` does not judge
    them; the kind of answer the question asks for does."""
    draws = _one(question, answer)
    assert asked.computed(draws) == []
    reason = asked.misfit(draws)
    assert reason is not None and f"asks for {kind}" in reason, reason


def test_a_shown_word_is_not_a_letter():
    """learn-s41, generation 7: "Write the letter at place 2 in the words [...]" scored on
    the second word; a word is no longer than one letter from each word shown, but it is
    not a letter. The first letters of each word still answer a letter question."""
    draws = _draws("Write the letter at place 2 in the words {}.", lambda ws: [ws[1]])
    assert asked.computed(draws) == []
    reason = asked.misfit(draws)
    assert reason is not None and "asks for a letter" in reason, reason
    firsts = _draws("Write the first letter of each of {}.", lambda ws: [w[0] for w in ws])
    assert asked.misfit(firsts) is None


@pytest.mark.parametrize("question, answer", [
    ("How many times does the letter 'e' appear in '{}'?", lambda w: w.count("e")),
    ("How many vowels are in {}? Say it as 'N vowels'.",
     lambda w: f"{sum(c in 'aeiou' for c in w)} vowels"),
    ("Which letter of '{}' comes first in the alphabet?", min),
    ("What is the middle letter of {}? With an even count, give the left one.",
     lambda w: w[(len(w) - 1) // 2]),
    ("Which letter comes right after the first letter of {} in the alphabet?",
     lambda w: chr(ord(w[0]) + 1)),
    ("Which of these words ends with the letter 'e': {}?", lambda w: w),
    ("Write the word {} without its first letter.", lambda w: w[1:]),
    ("Write the letter 'k' as many times as {} has letters.", lambda w: "k" * len(w)),
    ("Spell {} from its last letter to its first.", lambda w: w[::-1]),
    ("Write the letters of {} in reverse alphabetical order.", lambda w: "".join(sorted(w))[::-1]),
    ("What is the place in the alphabet of the first letter of {}?",
     lambda w: ord(w[0]) - 96),
    # one draw that fits is enough: a yes/no order question answered "no" (and "yes")
    ("Are the letters of {} in alphabetical order?", lambda w: "yes" if w == "".join(sorted(w))
     else "no"),
    # instructions, not questions: "Count from 1", "with an even count"
    ("Which letter of {} is number 2? Count from 1.", lambda w: w[1]),
    # no kind asked: not judged
    ("Double the word {}.", lambda w: w * 2),
])
def test_an_answer_of_the_kind_asked_passes(question, answer):
    assert asked.misfit(_one(question, answer)) is None


def test_a_question_asking_only_for_a_shown_word_is_answered_by_it():
    """Only a question that says nothing else asks for the shown word as it is; the
    word itself fits (``answer_given`` judges that one)."""
    assert asked.misfit(_one("Write the word '{}' from the list.", lambda w: w)) is None
    assert asked.misfit(_one("Write the word '{}' in capitals.", str.upper)) is None
    assert asked.misfit(_one("Copy the word {} without its vowels.",
                             lambda w: "".join(c for c in w if c not in "aeiou"))) is None


def test_a_task_asking_for_nothing_is_refused():
    """learn-s44, generation 4: "Digit of the word 'X' is 'y'." scored on X's length."""
    draws = _one("Digit of the word '{}' is 'e'.", len)
    reason = asked.asks_nothing(draws)
    assert reason is not None and "asks for nothing" in reason, reason
    # A shown word that is a verb ("count") asks nothing either.
    shown = [(f"The word '{w}' is here.", (w,), (str(len(w)),))
             for w in ("count", "write", "sort", "spell", "name", "give", "find", "join")]
    assert asked.asks_nothing(shown) is not None
    for fair in ("Digit of the word '{}' is 'e'?", "Give the length of '{}'.",
                 "The word '{}': spell it backwards.", "Swap the ends of '{}'."):
        assert asked.asks_nothing(_one(fair, len)) is None, fair


def test_a_number_no_question_asks_for_is_refused():
    """learn-s44, generation 4: "Write the letter 'x' into 'X'." scored on the letter and
    X's different letters; no word of the question asks for a number."""
    draws = _one("Write the letter 'e' into '{}'.", lambda w: f"e {len(set(w))}")
    reason = asked.unasked_number(draws)
    assert reason is not None and "asks for no number" in reason, reason
    # A shown word that holds a number word's letters ("ladder" holds "add") asks nothing.
    shown = [(f"Write the letter 'e' into '{w}'.", (w,), (f"e {len(w)}",))
             for w in ("ladder", "toddler", "adder", "paddle", "saddle", "fiddle", "oxen",
                       "moon")]
    assert asked.unasked_number(shown) is not None


def test_a_letter_no_question_asks_for_is_refused():
    """The warm start's weights, 2026-12-07: "What is the snowdrop of 'X'?" scored on X's
    second letter."""
    draws = _one("What is the snowdrop of '{}'?", lambda w: w[1])
    reason = asked.unasked_letter(draws)
    assert reason is not None and "asks for no letter" in reason, reason
    # A shown word that holds a letter word ("lettered", "spelled") asks nothing.
    shown = [(f"What is the snowdrop of '{w}'?", (w,), (w[1],))
             for w in ("lettered", "spelled", "initials", "vowels", "ending", "starter",
                       "placed", "alphabets")]
    assert asked.unasked_letter(shown) is not None
    assert asked.unasked_letter(draws[:asked.MIN_DRAWS - 1]) is None


@pytest.mark.parametrize("question, answer", [
    ("Which letter of {} comes first in the alphabet?", min),
    ("What is the second character of {}?", lambda w: w[1]),
    ("What does {} start with?", lambda w: w[0]),
    ("What is the middle of {}?", lambda w: w[len(w) // 2]),
    ("Is 'e' in {}? Write 'y' or 'n'.", lambda w: "y" if "e" in w else "n"),
    ("What is the snowdrop of {}?", lambda w: w[:2]),  # not one letter: not judged here
])
def test_a_letter_asked_for_passes(question, answer):
    assert asked.unasked_letter(_one(question, answer)) is None


@pytest.mark.parametrize("question, answer", [
    ("How many letters does {} have?", len),
    ("What is the place in the alphabet of the first letter of {}?", lambda w: ord(w[0]) - 96),
    ("Add 2 to the length of {}.", lambda w: len(w) + 2),
    ("Write {} and its letters' count.", lambda w: f"{w} {len(w)}"),
    ("At which position of {} is its first vowel?",
     lambda w: next(i for i, c in enumerate(w, 1) if c in "aeiou")),
    ("Write the last letter of {} and the first.", lambda w: w[-1] + w[0]),  # no number
])
def test_a_number_asked_for_passes(question, answer):
    assert asked.unasked_number(_one(question, answer)) is None


def test_a_question_asking_which_word_is_answered_by_a_word():
    """learn-s43, generation 3: "Which of these words has 'e': a, b, c?" scored on how
    many times 'e' occurs in them all. A word shown, several, or "none" fits."""
    question = "Which of these words has 'e': {}?"
    counted = _draws(question, lambda ws: [sum(w.count("e") for w in ws)])
    reason = asked.misfit(counted)
    assert reason is not None and "asks for a word (" in reason, reason
    for fair in (lambda ws: [w for w in ws if "e" in w] or ["none"], lambda ws: [ws[0]]):
        assert asked.misfit(_draws(question, fair)) is None
    assert asked.misfit(_one("Which word is '{}' backwards?", lambda w: w)) is None


def test_a_list_asked_in_reverse_is_answered_by_its_words():
    """learn-s43, generation 1: "Write these words in reverse order" scored on each word
    with its first letter moved to its end; the words reversed, each word spelt
    backwards or the list spelt backwards fit."""
    question = "Write these words in reverse order: {}. Separate them with commas."
    rotated = _draws(question, lambda ws: [w[1:] + w[0] for w in ws])
    assert asked.computed(rotated) == []
    reason = asked.misfit(rotated)
    assert reason is not None and "asks for something written in reverse" in reason, reason
    for fair in (lambda ws: ws[::-1], lambda ws: [w[::-1] for w in ws],
                 lambda ws: ["".join(ws)[::-1]], lambda ws: [ws[-1]]):
        assert asked.misfit(_draws(question, fair)) is None


def test_a_word_picked_by_order_fits_only_among_several():
    """"Which comes first alphabetically" is answered by a shown word among two or more;
    the one word shown, returned unsorted, is not an order."""
    several = _draws("Which of {} comes first in alphabetical order?", lambda ws: [min(ws)])
    assert asked.misfit(several) is None
    assert asked.misfit(_one("Sort the letters of {} alphabetically.", lambda w: w)) is not None
    # fewer than MIN_DRAWS draws never refuse
    assert asked.misfit(_one("How many letters has {}?", max)[:asked.MIN_DRAWS - 1]) is None


def _raw(question: str, answer) -> list[tuple[str, str]]:
    """Draws (question, answer) as ``unstated_repeat`` reads them."""
    return [(question.format(w), str(answer(w))) for w in WORDS]


@pytest.mark.parametrize("question, answer", [
    # learn-s41, generations 4-5: told what to write, never how many times
    ("Write the letter '{}' at position {}.".replace("{}", "{0}"), lambda w: w[0] * 2),
    ("Spell the word '{}' as one word.", lambda w: w[-1] * 26 + "."),
    ("Write the letter '{}' at its place in the word. Repeat until the end.",
     lambda w: w[0] * 3),
    # learn-s41, generation 5: a number of times that changes with the draw, never said
    ("Write the letter '{}' in the place of its letters.", lambda w: w * (len(w) - 1)),
])
def test_an_answer_repeated_an_unstated_number_of_times_is_refused(question, answer):
    reason = asked.unstated_repeat(_raw(question, answer))
    assert reason is not None and "no question says" in reason, reason


def test_a_repeat_said_only_where_a_drawn_number_happens_to_be_it_is_refused():
    """learn-s44, generation 2: "Write the letter {n} times a specified number of
    times." scored on n (the word's length) written 10 times: digits, said as 10 only
    where the drawn word has 10 letters. Here 6 times, said where the word has 6."""
    draws = [(f"Write the letter {len(w)} times a specified number of times.",
              str(len(w)) * 6) for w in WORDS]
    assert any(q.startswith("Write the letter 6 ") for q, _ in draws)
    reason = asked.unstated_repeat(draws)
    assert reason is not None and reason.endswith("only 2 of 9 questions say 6"), reason
    said = [(q.replace("a specified number of times", "6 times"), a) for q, a in draws]
    assert asked.unstated_repeat(said) is None


@pytest.mark.parametrize("question, answer", [
    ("Write the letter '{}' 3 times in a row.".replace("{}", "{0[0]}"), lambda w: w[0] * 3),
    ("Write the word {} twice.", lambda w: w * 2),
    ("Write {} in capitals and then in lower case.", lambda w: w.upper() + w),
    # a count that changes with the draw is the task's, not a guess
    ("Write the first letter of {} as many times as it has letters.",
     lambda w: w[0] * len(w)),
    ("How many letters does {} have?", lambda w: len(w) * 11),  # digits are not text
])
def test_a_stated_or_drawn_repeat_passes(question, answer):
    assert asked.unstated_repeat(_raw(question, answer)) is None
    assert asked.states_count(3, "Write it three times") and not asked.states_count(
        3, "Write it 13 times")


@pytest.mark.parametrize("draws", [
    # learn-s41, generations 4 and 6: a count of something else than the question says
    _one("How many places is letter 'e' in word '{}'?", lambda w: len(w) - 1),
    _draws("Count all vowels: {}.", lambda ws: [len(set(w)) - 1 for w in ws]),
    _draws("How many letters does each word have: {}?", lambda ws: [len(w) + 1 for w in ws]),
    # learn-s43, generation 3: different letters asked, the number of words less one scored
    _draws("How many different letters does '{}' have?", lambda ws: [len(ws) - 1]),
    # learn-s43, generation 1: letters in common asked, the number of words scored
    _draws("How many of these letters do these letters have in common: {}?",
           lambda ws: [len(ws)]),
])
def test_a_count_of_nothing_shown_is_refused(draws):
    reason = asked.uncounted(draws)
    assert reason is not None and "is no count of the words it shows" in reason, reason
    # fewer than MIN_DRAWS judged draws never refuse
    assert asked.uncounted(draws[:asked.MIN_DRAWS - 1]) is None


@pytest.mark.parametrize("draws", [
    _one("How many letters has {}?", len),
    _one("How many times does 'e' occur in {}?", lambda w: w.count("e")),
    _one("How many letters are left once 2 are taken from {}?", lambda w: len(w) - 2),
    _draws("Count the vowels of each word: {}.",
           lambda ws: [sum(c in "aeiou" for c in w) for w in ws]),
    _draws("How many of these have more than 5 letters: {}?",
           lambda ws: [sum(len(w) > 5 for w in ws)]),
    _draws("How many letters do these words have in all: {}?",
           lambda ws: [sum(map(len, ws))]),
    _draws("Write these words backwards: {}.", lambda ws: [w[::-1] for w in ws]),  # no count
    _draws("How many different letters do these words use: {}?",
           lambda ws: [len(set("".join(ws)))]),
    _one("How many different letters does '{}' have?", lambda w: len(set(w))),
    _draws("How many letters do the first two of these share: {}?",
           lambda ws: [len(set(ws[0]) & set(ws[1]))]),
])
def test_a_count_of_the_words_shown_passes(draws):
    assert asked.count_misses(draws)[1] == 0
    assert asked.uncounted(draws) is None


def test_a_place_in_the_alphabet_is_a_letters_place():
    """learn-s43, generation 3: "At which place of the alphabet is 'x': k, e, t, ...?"
    scored on whether x is a vowel; the letter's place passes."""
    spelt = [(f"At which place of the alphabet is '{w[0]}': {', '.join(w)}?", w[0])
             for w in WORDS]
    vowel = [(q, str(int(c in "aeiou"))) for q, c in spelt]
    reason = asked.unplaced(vowel)
    assert reason is not None and "no place of a letter it shows" in reason, reason
    assert asked.unplaced([(q, str(ord(c) - 96)) for q, c in spelt]) is None
    assert asked.unplaced(vowel[:asked.MIN_DRAWS - 1]) is None


@pytest.mark.parametrize("question, answer", [
    # learn-s45, generation 5: told spaces, scored with commas
    ("Spell out the letters of the word {} separated by spaces.", ", ".join),
    ("Write the letters of {}, separated by commas.", " ".join),
    ("Separate the letters of {} with a dash.", " ".join),
    # a list [first, last]: its oracle writes it "f, l", and QuizEnv matches it at commas
    ("Give the first and last letter of {} with spaces between.",
     lambda w: answer_of(f"\\boxed{{{w[0]}, {w[-1]}}}")),
    # the warm start's weights, 2026-12-07: joined by a mark no question mentions
    ("Sort the letters in '{}' alphabetically.", lambda w: "-".join(sorted(w))),
    ("Write the letters of {} backwards.", lambda w: "/".join(w[::-1])),
])
def test_an_answer_joined_otherwise_than_said_is_refused(question, answer):
    reason = asked.unsaid_separator(_raw(question, answer))
    assert reason is not None and "joined otherwise than the question says" in reason, reason


@pytest.mark.parametrize("question, answer", [
    ("Spell out the letters of the word {} separated by spaces.", " ".join),
    ("Write the letters of {}, separated by commas.", ", ".join),
    ("Write the letters of {}, comma-separated.", ",".join),
    ("Separate the letters of {} with a dash.", "-".join),
    ("Join the letters of {} with hyphens.", "-".join),
    ("Write the letters of {} separated by a comma and a space.", ", ".join),  # two marks
    ("Write {} backwards, separated by spaces from nothing.", lambda w: w[::-1]),  # no parts
    ("Write the letters of {} in order.", ", ".join),  # no mark said: a comma is a list's
    ("Write the letters of {} in order.", " ".join),
    ("Sort the letters of {} alphabetically.", lambda w: "".join(sorted(w))),
    ("Which word is a compound: {}, ice-cream?", lambda w: "ice-cream"),  # shown as it is
    ("Write {} as w-o-r-d.", "-".join),  # the mark shown
])
def test_an_answer_joined_as_said_passes(question, answer):
    assert asked.unsaid_separator(_raw(question, answer)) is None


def test_one_answer_to_two_questions_for_opposite_ends_is_refused():
    """learn-s45, generation 6: "Rank order: Which word comes first a, b, c? Which word
    comes last in the alphabetical order?" scored on the first."""
    draws = _draws("Rank order: Which word comes first {}? Which word comes last in the "
                   "alphabetical order?", lambda ws: [min(ws)])
    reason = asked.asks_opposites(draws)
    assert reason is not None and "opposite ends of one order" in reason, reason
    for fair, answer in [
            ("Which word comes first in alphabetical order: {}?", lambda ws: [min(ws)]),
            ("Which word is longest: {}? On a tie, give the last one.",
             lambda ws: [max(ws, key=len)]),
            ("Which word comes first: {}? Which comes last?",  # two answers for two questions
             lambda ws: [min(ws), max(ws)]),
            ("Which are the first and the last word of {}?", lambda ws: [ws[0], ws[-1]])]:
        assert asked.asks_opposites(_draws(fair, answer)) is None, fair


SORTED_QUIZ = textwrap.dedent("""\
    from spade_env import QuizEnv

    WORDS = ["table", "chair", "lamp", "shelf", "sofa", "desk", "mirror", "carpet", "pillow"]


    class SortedEnv(QuizEnv):
        \"\"\"Words in alphabetical order.\"\"\"

        def questions(self, rng):
            shown = rng.sample(WORDS, 3)
            question = "Write these words in alphabetical order: " + ", ".join(shown) + "."
            return [(question, sorted(shown))]

        def hint(self):
            return "Compare first letters, then the next ones."
    """)


def test_validator_refuses_a_quiz_scoring_what_it_does_not_ask(sandbox):
    cfg = ValidationConfig()
    report = validate_source(SORTED_QUIZ, sandbox, cfg, run_all=True)
    (check,) = [c for c in report.checks if c.name == "answer_asked"]
    assert check.status == "pass" and "the words in alphabetical order" in check.detail
    assert report.accepted, report.reasons
    firsts = SORTED_QUIZ.replace("sorted(shown)", "[w[0] for w in shown]")
    report = validate_source(firsts, sandbox, cfg)
    assert not report.accepted
    assert report.reasons[0].startswith("answer_asked: the question asks for the words in "
                                        "alphabetical order"), report.reasons
    assert "the words' first letters" in report.reasons[0]
    # a refusal earns what a duplicate earns, not its place near the end of the order
    assert rejection_progress(report.reasons, firsts) == DUPLICATE_PROGRESS


def test_validator_refuses_a_quiz_scoring_a_number_it_does_not_ask_for(sandbox):
    """learn-s44, generation 4, as its designer wrote it."""
    source = textwrap.dedent("""\
        from spade_env import QuizEnv

        WORDS = ["royal", "commission", "collapse", "insurance", "giant", "resume", "sydney"]


        class WriteInStringEnv(QuizEnv):
            \"\"\"Write a single letter into a string.\"\"\"

            def questions(self, rng):
                word = rng.choice(WORDS)
                letter = rng.choice(["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"])
                question = f"Write the letter '{letter}' into '{word}'."
                answer = letter + " " + str(len(set(word)))
                return [(question, answer)]

            def hint(self):
                return "Write the letter in the order listed."
        """)
    report = validate_source(source, sandbox, ValidationConfig())
    assert not report.accepted
    assert report.reasons[0].startswith("answer_fits: on all 64 draws whose answer has a "
                                        "number, the question asks for no number"), report.reasons
    asked_for = source.replace("into '{word}'.", "into '{word}' and count its letters.")
    asked_for = asked_for.replace("str(len(set(word)))", "str(len(word))")
    report = validate_source(asked_for, sandbox, ValidationConfig(), run_all=True)
    (check,) = [c for c in report.checks if c.name == "answer_fits"]
    assert check.status == "pass", report.reasons


def test_validator_refuses_letters_joined_by_another_mark_than_said(sandbox):
    """learn-s45, generation 5, in its designer's words: told spaces, scored with commas."""
    source = textwrap.dedent("""\
        from spade_env import QuizEnv

        WORDS = ["harbor", "lantern", "meadow", "pebble", "saddle", "thistle", "willow"]


        class SpellOutEnv(QuizEnv):
            \"\"\"Spell out the letters of a word.\"\"\"

            def questions(self, rng):
                word = rng.choice(WORDS)
                question = f"Spell out the letters of the word '{word}' separated by spaces."
                return [(question, ", ".join(word))]

            def hint(self):
                return "Write one letter at a time."
        """)
    report = validate_source(source, sandbox, ValidationConfig())
    assert not report.accepted
    assert report.reasons[0].startswith("answer_fits: on all "), report.reasons
    assert "joined otherwise than the question says" in report.reasons[0], report.reasons
    spaced = source.replace('", ".join(word)', '" ".join(word)')
    report = validate_source(spaced, sandbox, ValidationConfig(), run_all=True)
    (check,) = [c for c in report.checks if c.name == "answer_fits"]
    assert check.status == "pass", report.reasons


def test_no_committed_quiz_is_refused(sandbox):
    """Every committed word quiz (seeds, held-out) asks for what it scores, and its answers
    are of the kind its questions ask for; 12 of them are identified as one operation of
    the lexicon, so the rule is not vacuous. A quiz of word steps is judged exactly
    (``validation.chain_verdict``): each of its answers is what its question's steps
    compute."""
    identified = chains = 0
    for path in sorted(glob.glob("environments_store/*/*.py")):
        source = open(path, encoding="utf-8").read()
        read = read_draws(probe_draws(sandbox, source, env_class_name(source)))
        if read is None:
            continue
        draws = probe_draws(sandbox, source, env_class_name(source))
        chained, wrong = chain_verdict(draws)
        assert wrong is None, path
        if chained:  # judged exactly, from the steps its questions name (test_word_steps)
            chains += 1
            continue
        assert asked.unasked(read) is None, path
        assert asked.misfit(read) is None, path
        assert asked.unasked_number(read) is None, path
        assert asked.asks_nothing(read) is None, path
        assert asked.asks_opposites(read) is None, path
        assert asked.unasked_letter(read) is None, path
        assert asked.unstated_repeat([(q, answer_of(a)) for q, a in draws]) is None, path
        assert asked.unplaced([(q, answer_of(a)) for q, a in draws]) is None, path
        assert asked.unsaid_separator([(q, answer_of(a)) for q, a in draws]) is None, path
        assert asked.count_misses(read)[1] == 0, path
        identified += bool(asked.computed(read))
    assert identified >= 12 and chains >= 8
