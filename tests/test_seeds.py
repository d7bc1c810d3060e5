"""Every hand-written seed environment satisfies the contract and its oracle solves it."""

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from spade_tasks.config import ValidationConfig
from spade_tasks.validation import (check_names, oracle_policy, play, validate_path,
                                    validate_source)

SEEDS = sorted(Path("environments_store/seeds").glob("*.py"))
SMALL = sorted(Path("environments_store/seeds_small").glob("*.py"))


def test_there_are_enough_seeds():
    assert len(SEEDS) >= 12


@pytest.mark.parametrize("path", SEEDS + SMALL, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_seed_is_accepted_and_oracle_solves_it(sandbox, path):
    report = validate_path(path, sandbox, ValidationConfig(seeds=[0, 1, 2]), run_all=True)
    assert report.accepted, report.reasons
    assert [c.name for c in report.checks] == check_names()  # every check reported
    assert {c.status for c in report.checks} <= {"pass", "skip"}
    assert report.meta.has_hint and report.meta.has_oracle
    assert report.meta.doc.strip(), "the docstring is what the memory shows designers"
    source = path.read_text()
    for seed in (7, 123):  # beyond the validator's own seeds
        p = play(sandbox, source, report.class_name, seed, oracle_policy, report.meta.max_turns)
        assert p.error is None and p.ret == pytest.approx(1.0), (seed, p.error, p.rewards)


def test_small_seeds_stay_valid_with_words_from_documents(sandbox):
    """The warm start teaches each small seed with its WORDS list taken from a document
    (``warmstart.ground_in_document``): those programs must be valid environments too,
    or the designer would learn to write rejected ones."""
    from spade_tasks.config import CorpusConfig
    from spade_tasks.corpus import draw_documents
    from spade_tasks.warmstart import ground_in_document

    assert len(SMALL) >= 12
    docs = draw_documents(len(SMALL), 5, CorpusConfig(max_words=80))
    grounded = {}
    for path, doc in zip(SMALL, docs):
        source = path.read_text()
        grounded[path.name, doc.doc_id] = ground_in_document(source, doc)
        assert grounded[path.name, doc.doc_id] != source, \
            f"{path.name}: no WORDS list filled from {doc.doc_id}"
    # Two at a time, as the flow's validation tasks run: each mostly waits on its
    # sandbox workers, so the second core halves this test's time.
    with ThreadPoolExecutor(2) as pool:
        reports = dict(zip(grounded, pool.map(
            lambda src: validate_source(src, sandbox, ValidationConfig(seeds=[0, 1, 2])),
            grounded.values())))
    refused = {key: r.reasons for key, r in reports.items() if not r.accepted}
    assert not refused


def test_a_small_seed_over_other_words_is_a_duplicate_of_it():
    """Swapping a program's data table (its WORDS) does not make a new game: the
    duplicate rule compares programs with their data set aside (``memory.without_data``).
    Another game over the same words is not a duplicate."""
    import re

    from spade_tasks.designer import duplicate_reason
    from spade_tasks.environments import EnvRecord, env_id_of

    def record(source):
        return EnvRecord(env_id_of(source), source, "X", "", "", 1, True, True, "designed", "")

    seed = (Path("environments_store/seeds_small") / "first_alphabetical.py").read_text()
    other = (Path("environments_store/seeds_small") / "longest_word.py").read_text()
    copy = re.sub(r"^WORDS = .*$", 'WORDS = ["river", "stone", "tree", "cloud"]', seed,
                  flags=re.M)
    assert copy != seed
    why = duplicate_reason(record(copy), [record(seed)], 0.9)
    assert why is not None and why.startswith("duplicate: the same game as"), why
    assert duplicate_reason(record(other), [record(seed)], 0.9) is None


@pytest.mark.parametrize("change, same", [
    # told differently: the same game
    (("First or last of two words", "One of a pair of words"), True),  # docstring
    (("Compare initial letters; break ties on subsequent letters.", "Look at letters."), True),
    (("FirstAlphabeticalEnv", "WordOrderEnv"), True),  # class name
    # a method nothing calls (learn-s11: `first_letters.py` reworded, plus a `tourney`)
    (("    def hint(self):", "    def spare(self, w):\n        return w[0]\n\n    def hint(self):"),
     True),
    (("rng.sample(WORDS, 2)", "rng.sample(WORDS, 3)"), True),  # a count (numbers masked)
    # a value computed and thrown away (learn-s19: an answer overwritten before it is
    # returned; a local never read)
    (("        answer = min(shown) if", "        answer = max(shown)\n        answer = min(shown) if"),
     True),
    (("        listed = ", "        spare = rng.random()\n        listed = "), True),
    # the question reworded, the same answer computed (learn-s7's first accepted design
    # was a seed whose question had a sentence added)
    (("Which word comes", "Which word is"), True),
    # a sentence added to the question (learn-s21: a reverse-spelling game it had, with
    # `question += " On each step, swap its letters."`)
    (("        return [(question, answer)]",
      '        question += " Take your time."\n        return [(question, answer)]'), True),
    # the same, written as an f-string with nothing in it (learn-s22: `sort_three.py` with
    # `question += f" Separate them with commas."`)
    (("        return [(question, answer)]",
      '        question += f" Take your time."\n        return [(question, answer)]'), True),
    # other words in the table a mode is drawn from (learn-s10's designs drew unused
    # modes such as `rng.choice(["next", "letter"])`): the same computations
    (('"first", "last"', '"first", "middle"'), True),
    (('"first", "last"', '"first"'), True),
    # played differently: another game
    (('which == "first"', 'which == "last"'), False),  # the word that picks behaviour
    (("min(shown) if", "min(shown, key=len) if"), False),  # another answer
    # another builtin computes another answer (names the program picks are masked,
    # the builtins', methods' and modules' names it calls are not)
    (("min(shown) if", "max(shown) if"), False),
    (("shown", "picked"), True),  # a local renamed everywhere
    (("shown", "count"), True),  # renamed to a method's name: still a name, not a call
    # the question shows more of the same draws: the same answer, told more fully
    (("{listed}?", "{listed} ({len(shown)} words)?"), True),
    (("        return [(question, answer)]",
      '        question += f" ({len(shown)} words)"\n        return [(question, answer)]'),
     True),
    # the question shows a drawn value the answer never reads (learn-s23: `reverse_list.py`
    # asked as "Swap the first {rng.randint(1, 3)} words of the list", scored reversed)
    (("comes {which} alphabetically", "comes {which} of the first {rng.randint(1, 3)}"),
     True),
])
def test_same_game_rule_sees_through_retelling_only(change, same):
    from spade_tasks.memory import game_shape

    seed = (Path("environments_store/seeds_small") / "first_alphabetical.py").read_text()
    old, new = change
    assert old in seed
    assert (game_shape(seed.replace(old, new)) == game_shape(seed)) == same


def test_same_game_rule_keeps_a_question_the_answer_reads():
    """The question's statements are dropped only where the answer does not read the
    question: an answer taken from the question's own text depends on how it is built."""
    from spade_tasks.memory import game_shape

    seed = (Path("environments_store/seeds_small") / "first_alphabetical.py").read_text()
    reads = seed.replace("        return [(question, answer)]",
                         "        answer = question.split()[-1]\n"
                         "        return [(question, answer)]")
    assert reads != seed
    other = reads.replace("alphabetically: {listed}?", "alphabetically: {listed} {which}")
    assert other != reads
    assert game_shape(reads) != game_shape(other)


def test_same_game_rule_keeps_the_helpers_a_quiz_calls():
    """Only methods nothing calls are dropped: a helper ``questions`` calls computes the
    answer, so helpers that compute other answers make other games."""
    from spade_tasks.memory import game_shape

    seed = (Path("environments_store/seeds_small") / "first_alphabetical.py").read_text()
    called = seed.replace('min(shown) if which == "first"', 'self.pick(shown) if which == "first"')
    assert called != seed

    def with_pick(source, body):
        return source.replace("    def hint(self):",
                              f"    def pick(self, shown):\n        return {body}\n\n"
                              "    def hint(self):")

    assert game_shape(with_pick(called, "min(shown)")) != game_shape(
        with_pick(called, "min(shown, key=len)"))
    assert game_shape(with_pick(seed, "min(shown)")) == game_shape(
        with_pick(seed, "min(shown, key=len)")) == game_shape(seed)


HELDOUT_SMALL = sorted(Path("environments_store/heldout_small").glob("*.py"))
REVERSE_LIST = (Path("environments_store/seeds_small") / "reverse_list.py").read_text()
# learn-s23's designs: `reverse_list.py`'s answer in other code, under a question that asks
# something else and over the document's own words; the text rules saw another game
REVERSE_RETOLD = REVERSE_LIST.replace(
    'WORDS = ["monday",', 'WORDS = ["police", "car", "stolen", "child", "inside", "monday",'
).replace("Write these words in reverse order: {listed}.",
          "Swap the first {rng.randint(1, 3)} words of the list: {listed}."
).replace("answer = shown[::-1]", "answer = list(reversed(shown))").replace(
    "ReverseListEnv", "SwapFirstEnv")


def _behaviour(sandbox, source):
    from spade_tasks.validation import answer_behaviour, env_class_name

    return answer_behaviour(sandbox, source, env_class_name(source))


def test_answer_behaviour_sees_the_same_answers_through_other_code_words_and_questions(sandbox):
    from spade_tasks.designer import duplicate_reason, same_answers_reason
    from spade_tasks.environments import EnvRecord, env_id_of

    def record(source):
        return EnvRecord(env_id_of(source), source, "X", "", "", 1, True, True, "designed", "")

    assert REVERSE_RETOLD.count("list(reversed(shown))") == 1 and "Swap the" in REVERSE_RETOLD
    assert _behaviour(sandbox, REVERSE_RETOLD) == _behaviour(sandbox, REVERSE_LIST) is not None
    # the text rules see another game; the behaviour rule does not
    known = [record(REVERSE_LIST)]
    assert duplicate_reason(record(REVERSE_RETOLD), known, 0.9) is None
    why = same_answers_reason(record(REVERSE_RETOLD), known, sandbox)
    assert why is not None and why.startswith("duplicate: the same game as"), why
    # another answer from the same draws, and the same answer from fewer words shown,
    # are other games
    sorted_ = REVERSE_RETOLD.replace("list(reversed(shown))", "sorted(shown)")
    assert _behaviour(sandbox, sorted_) != _behaviour(sandbox, REVERSE_LIST)
    hidden = REVERSE_LIST.replace('listed = ", ".join(shown)', 'listed = ", ".join(shown[1:])')
    assert hidden != REVERSE_LIST
    assert _behaviour(sandbox, hidden) != _behaviour(sandbox, REVERSE_LIST)
    assert same_answers_reason(record(sorted_), known, sandbox) is None


REVERSE_WORD = (Path("environments_store/seeds_small") / "reverse_word.py").read_text()
REVERSE_DRAWN = REVERSE_WORD.replace(
    "        word = rng.choice(WORDS)\n",
    "        shown = rng.sample(WORDS, rng.randint(3, 5))\n        word = shown[0]\n").replace(
    "ReverseWordEnv", "BackwardsEnv")
"""reverse_word.py with its word drawn another way (the first of a sample of 3 to 5): other
draws on every seed, so other questions seed by seed, but the same game (a designed
rewrite that `learn-s26` accepted in generation 2)."""


def test_a_quiz_computing_what_a_known_one_does_is_the_same_game(sandbox):
    """learn-s43, generation 2: "Write these words backwards: a, b, c, d" scored on the
    four reversed, `reverse_list.py`'s game over lists of 4 where it shows 3 or 4: the
    two seldom show the same words (no shared question), but both answer with the
    lexicon's "words in reverse order". The same draws sorted are another game."""
    from spade_tasks.designer import operations_of, same_answers_reason
    from spade_tasks.environments import EnvRecord, env_id_of
    from spade_tasks.validation import answer_items, env_class_name, shared_questions

    def record(source):
        return EnvRecord(env_id_of(source), source, "X", "", "", 1, True, True, "designed", "")

    def items(source):
        return answer_items(sandbox, source, env_class_name(source))

    four = REVERSE_LIST.replace("rng.randint(3, 4)", "4").replace(
        "Write these words in reverse order: {listed}.", "Write these words backwards: {listed}.")
    assert four.count("rng.sample(WORDS, 4)") == 1
    assert shared_questions(items(four), items(REVERSE_LIST)) < 3
    assert operations_of(items(four)) == {"the words in reverse order"}
    why = same_answers_reason(record(four), [record(REVERSE_LIST)], sandbox)
    assert why is not None and "both answer with the words in reverse order, from" in why, why
    sorted_ = four.replace("answer = shown[::-1]", "answer = sorted(shown)")
    assert same_answers_reason(record(sorted_), [record(REVERSE_LIST)], sandbox) is None


def test_a_quiz_drawn_another_way_is_the_same_game(sandbox):
    from spade_tasks.designer import same_answers_reason
    from spade_tasks.environments import EnvRecord, env_id_of
    from spade_tasks.validation import answer_items, env_class_name, shared_questions

    def record(source):
        return EnvRecord(env_id_of(source), source, "X", "", "", 1, True, True, "designed", "")

    def items(source):
        return answer_items(sandbox, source, env_class_name(source))

    assert REVERSE_DRAWN.count("shown[0]") == 1
    assert _behaviour(sandbox, REVERSE_DRAWN) != _behaviour(sandbox, REVERSE_WORD)  # other draws
    assert shared_questions(items(REVERSE_DRAWN), items(REVERSE_WORD)) >= 3
    why = same_answers_reason(record(REVERSE_DRAWN), [record(REVERSE_WORD)], sandbox)
    assert why is not None and "drawn another way" in why, why
    # Another answer to the same questions is another game.
    first = REVERSE_DRAWN.replace("answer = word[::-1]", "answer = word[0]")
    assert shared_questions(items(first), items(REVERSE_WORD)) == 0
    assert same_answers_reason(record(first), [record(REVERSE_WORD)], sandbox) is None


def test_a_quiz_failing_on_a_late_draw_is_compared_on_the_draws_before_it(sandbox):
    from spade_tasks.validation import PROBE_DRAWS, PROBE_SEEDS, answer_items, env_class_name

    def failing_on(word):
        src = REVERSE_WORD.replace("        question = ", f"        if word == '{word}':\n"
                                   "            raise ValueError(word)\n        question = ", 1)
        return answer_items(sandbox, src, env_class_name(src))

    late = failing_on("kettle")  # first drawn on seed 31 of the probe draws
    assert late is not None and PROBE_SEEDS <= len(late) < PROBE_DRAWS
    assert failing_on("apricot") is None  # drawn within the first PROBE_SEEDS: not a quiz


def test_shared_questions_counts_questions_both_answer_one_way():
    from spade_tasks.validation import shared_questions

    def q(*words):
        return (words, ())

    mine = [(q("fig"), "gif"), (q("sky"), "yks"), (q("moon"), "noom"), (q("fig"), "gif")]
    assert shared_questions(mine, [(q("sky"), "yks"), (q("fig"), "gif"), (q("zebra"), "a")]) == 2
    assert shared_questions(mine, [(q("sky"), "yks"), (q("fig"), "f")]) == 0  # one differs
    # A question answered two ways depends on something it does not show: not compared.
    assert shared_questions(mine + [(q("moon"), "noo")], [(q("moon"), "noo")]) == 0
    assert shared_questions(mine, [((("moon",), ("3",)), "noo")]) == 0  # a number shown too


def test_no_two_committed_quizzes_compute_the_same_answers(sandbox):
    """The behaviour rule refuses none of the committed games as a copy of another:
    every small seed and held-out quiz with a word table has its own answers."""
    behaviours = {p.name: _behaviour(sandbox, p.read_text()) for p in SMALL + HELDOUT_SMALL}
    measured = {name: b for name, b in behaviours.items() if b is not None}
    assert len(measured) >= 25, sorted(set(behaviours) - set(measured))
    assert len(set(measured.values())) == len(measured)
    # nor as one game drawn another way: no two agree on the questions both ask
    from spade_tasks.validation import (MIN_SHARED_QUESTIONS, answer_items, env_class_name,
                                        shared_questions)

    items = {p.name: answer_items(sandbox, p.read_text(), env_class_name(p.read_text()))
             for p in SMALL + HELDOUT_SMALL if p.name in measured}
    same = [(a, b) for a in items for b in items
            if a < b and shared_questions(items[a], items[b]) >= MIN_SHARED_QUESTIONS]
    assert same == []
    # not a quiz: nothing to compare
    seed = SEEDS[0].read_text()
    assert "QuizEnv" not in seed and _behaviour(sandbox, seed) is None
