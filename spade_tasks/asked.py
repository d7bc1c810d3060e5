"""What a word quiz's question asks, read by a lexicon rather than a model.

A quiz that asks one thing and scores another ("Write these words in alphabetical
order", scored on their first letters) runs, decides its answer from its text and gives
nothing away, so every check that plays a program accepts it, and no player can win it
by doing what it says. It was most of what the 135M designer got accepted
(docs/learning.md, learn-s22 to learn-s27: "asks one thing and scores another"). No
model here reads a question well enough to judge it, but the word games share a small
vocabulary of operations (reverse, sort, count the vowels, the longest word, ...), each
computable from the words a question shows and each named by a few words of English.

So the rule has two halves, both conservative:

- ``computed``: the operations whose result equals the oracle's answer on every probe
  draw they apply to (at least ``MIN_DRAWS``). An answer no operation here computes is
  not judged.
- an operation is *asked for* when its words appear in the question (``Operation.asks``,
  wide on purpose: "length" asks for the longest word as well as for a count of
  letters). The question must ask for one of the computed operations wherever it asks
  for any operation here; ``unasked`` reports a draw where it asks only for others.

The lexicon is English and covers the word-game family of the small seeds; a game
outside it passes unjudged."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

VOWELS = frozenset("aeiou")
MIN_DRAWS = 8
"""Probe draws an operation must agree with the oracle on before the rule trusts that a
quiz computes it: fewer could be a coincidence (two words whose reverse and sorted
orders agree)."""

Words = tuple[str, ...]
Draw = tuple[str, Words, tuple[str, ...]]
"""One probe draw: the question as shown, the probe words it shows (in order, each
once), and the oracle's answer as items (lower case, split at commas)."""


@dataclass(frozen=True)
class Operation:
    name: str
    asks: tuple[str, ...]
    """Patterns the question (lower case, without its probe words and numbers) must all
    match to ask for this operation."""
    compute: Callable[[Words], tuple[str, ...] | None]
    """The answer's items from the shown words, or None where it does not apply."""

    def asked_in(self, question: str) -> bool:
        return all(re.search(p, question) for p in self.asks)


def _one(f: Callable[[str], object]) -> Callable[[Words], tuple[str, ...] | None]:
    """An operation on a question that shows one word."""
    def compute(words: Words):
        if len(words) != 1:
            return None
        out = f(words[0])
        return None if out is None else (str(out),)
    return compute


def _list(f: Callable[[Words], object]) -> Callable[[Words], tuple[str, ...] | None]:
    """An operation on a question that shows several words; a list result is its items."""
    def compute(words: Words):
        if len(words) < 2:
            return None
        out = f(words)
        if out is None:
            return None
        return tuple(str(x) for x in out) if isinstance(out, (list, tuple)) else (str(out),)
    return compute


def _unique(words: Words, key) -> str | None:
    """The one word with the highest ``key``, None on a tie (then no single answer)."""
    best = max(key(w) for w in words)
    top = [w for w in words if key(w) == best]
    return top[0] if len(top) == 1 else None


def _vowels(w: str) -> int:
    return sum(c in VOWELS for c in w)


def _middle(w: str) -> str | None:
    return w[len(w) // 2] if len(w) % 2 else None


_BACK = (r"revers|backward|mirror|right to left|invert|flip|opposite"
         r"|last\b.*\bfirst|\bend\b.*\bstart")  # "from the last letter to the first"
# "first" and "last" ask for a letter only beside "letter": "Swap the first 2 words" does not.
_FIRST, _LAST, _LETTER = r"first|start|begin|initial", r"last|end|final", r"letter|initial|char"
_ALPHA = r"alphabet|sort|a to z|abc|dictionary|lexicograph"
_LETTERS = r"letter|long|length|character|size"
_DIFFERENT = r"different|distinct|unique"

OPERATIONS: tuple[Operation, ...] = (
    Operation("the word spelt backwards", (_BACK,), _one(lambda w: w[::-1])),
    Operation("the number of letters of the word", (_LETTERS,), _one(len)),
    Operation("the number of vowels of the word", (r"vowel",), _one(_vowels)),
    Operation("the number of consonants of the word", (r"consonant",),
              _one(lambda w: len(w) - _vowels(w))),
    # learn-s43's designs, once probed (``validation.hoist_word_lists``): "How many
    # letters does X have?" and "How many different vowels are in X?" both scored on
    # X's different letters, which no operation here computed, so neither was judged.
    Operation("the number of different letters of the word", (_DIFFERENT, _LETTER),
              _one(lambda w: len(set(w)))),
    Operation("the number of different vowels of the word", (_DIFFERENT, r"vowel"),
              _one(lambda w: len(set(w) & set(VOWELS)))),
    Operation("the word without its vowels", (r"vowel",),
              _one(lambda w: "".join(c for c in w if c not in VOWELS))),
    Operation("the word's letters in alphabetical order", (_ALPHA + r"|order",),
              _one(lambda w: "".join(sorted(w)))),
    Operation("the word's first letter", (_FIRST, _LETTER), _one(lambda w: w[0])),
    Operation("the word's last letter", (_LAST, _LETTER), _one(lambda w: w[-1])),
    Operation("the word's middle letter", (r"middle|cent",), _one(_middle)),
    Operation("the words in reverse order",
              (_BACK + r"|end to",), _list(lambda ws: ws[::-1])),
    Operation("the words in alphabetical order", (_ALPHA,), _list(sorted)),
    Operation("the words in reverse alphabetical order",
              (_ALPHA, _BACK + r"|descend|z to a|last"),
              _list(lambda ws: sorted(ws, reverse=True))),
    Operation("each word spelt backwards", (_BACK + r"|spell",),
              _list(lambda ws: [w[::-1] for w in ws])),
    Operation("the whole list spelt backwards", (_BACK + r"|spell",),
              _list(lambda ws: ["".join(ws)[::-1]])),
    Operation("each word's number of letters", (_LETTERS,), _list(lambda ws: [len(w) for w in ws])),
    Operation("each word's number of vowels", (r"vowel",), _list(lambda ws: [_vowels(w) for w in ws])),
    Operation("the number of letters of all the words", (_LETTERS + r"|total|sum|together",),
              _list(lambda ws: sum(map(len, ws)))),
    Operation("the number of vowels of all the words", (r"vowel",),
              _list(lambda ws: sum(map(_vowels, ws)))),
    Operation("the words' first letters", (_FIRST, _LETTER), _list(lambda ws: [w[0] for w in ws])),
    Operation("the words' last letters", (_LAST, _LETTER), _list(lambda ws: [w[-1] for w in ws])),
    # learn-s45, generation 5: "Remove the vowels from '[a, b, c]'." scored on the words
    # written together, vowels and all, which no operation here computed.
    Operation("the words written together as one", (r"join|together|one word|compound|concat",),
              _list(lambda ws: ["".join(ws)])),
    Operation("the words without their vowels", (r"vowel",),
              _list(lambda ws: ["".join(c for c in w if c not in VOWELS) for w in ws])),
    Operation("the longest word", (r"long|length|letter|big|large|great|size",),
              _list(lambda ws: _unique(ws, len))),
    Operation("the shortest word", (r"short|length|letter|small|little|size",),
              _list(lambda ws: _unique(ws, lambda w: -len(w)))),
    Operation("the word with the most vowels", (r"vowel",), _list(lambda ws: _unique(ws, _vowels))),
    Operation("the first word in alphabetical order", (_ALPHA,),
              _list(min)),
    Operation("the last word in alphabetical order", (_ALPHA,),
              _list(max)),
)


def _same(items: tuple[str, ...], out: tuple[str, ...]) -> bool:
    """The oracle's items against an operation's: as items, or as one text written
    without separators ("k, m" and "km" both answer the first letters of two words)."""
    if items == out:
        return True
    return "".join(items).replace(" ", "") == "".join(out)


def computed(draws: Sequence[Draw]) -> list[Operation]:
    """The operations that give the oracle's answer on every draw they apply to, and
    apply to at least ``MIN_DRAWS``."""
    found = []
    for op in OPERATIONS:
        applied = 0
        for _, words, items in draws:
            out = op.compute(words)
            if out is None:
                continue
            if not _same(items, out):
                break
            applied += 1
        else:
            if applied >= MIN_DRAWS:
                found.append(op)
    return found


def without_shown(question: str, words: Words) -> str:
    """The question in lower case, without the answer format ``QuizEnv`` adds and
    without the probe words it shows (a shown word such as "ladder" must not ask for
    anything)."""
    text = question.lower().replace("answer as \\boxed{...}.", "")
    for w in words:
        text = re.sub(rf"\b{re.escape(w)}\b", " ", text)
    return text


def question_words(question: str, words: Words) -> str:
    """The question as the lexicon reads it: ``without_shown``, and without numbers."""
    return re.sub(r"\d+", " ", without_shown(question, words))


TIE_CLAUSE = re.compile(r"[^.?!]*\bties?\b[^.?!]*[.?!]?")
"""A sentence about ties ("On a tie, give the one first in alphabetical order"): it says
how to break a tie, not what the quiz asks."""


def without_tie_clauses(text: str) -> str:
    return TIE_CLAUSE.sub(" ", text)


def unasked(draws: Sequence[Draw], scored: Sequence[Operation] | None = None) -> str | None:
    """Why the quiz asks one thing and scores another, or None: a draw whose question asks
    for operations of the lexicon that apply to the words it shows, none of them one the
    oracle's answers compute (``scored``: ``computed(draws)``, where the caller has it).

    The question is read twice, whole and without its tie clauses, and refused if either
    reading is: a tie rule's "alphabetical" must not stand for what the main sentence
    asks ("Which word is longest? On a tie, the first alphabetically", scored on the
    last word alphabetically: learn-s33, generation 11), and dropping a clause only
    ever adds a refusal."""
    scored = computed(draws) if scored is None else scored
    if not scored:
        return None
    for question, words, _ in draws:
        whole = question_words(question, words)
        for text in dict.fromkeys((whole, without_tie_clauses(whole))):
            if any(op.asked_in(text) for op in scored):
                continue
            asked = [op for op in OPERATIONS
                     if op.asked_in(text) and op.compute(words) is not None]
            if asked:
                # Every reading the lexicon finds: "Which letter ... comes first in the
                # alphabet?" reads as three, and naming one of them misleads.
                names = [op.name for op in asked]
                read = names[0] if len(names) == 1 else \
                    f"{', '.join(names[:-1])} or {names[-1]}"
                return (f"the question asks for {read} ({question.strip()[:80]!r}) "
                        f"but the answer on every draw is {scored[0].name}")
    return None


# What a question's kind of answer is, read apart from the lexicon's operations: the rule
# above judges only answers an operation computes, and learn-s40's designer came to score
# "How many letters ...?" on a letter and "Sort the letters of X" on X rotated by one,
# answers no operation computes and no player can reach by doing the task.
COUNT_ASK = re.compile(r"how many|\bcount (?:the|all|each|every|its)\b|\bthe number of")
"""A question with these words asks for a number ("Count from 1" and "with an even count"
do not: they say how to read the task)."""
ORDER_ASK = re.compile(_ALPHA)
"""A question with these words asks for something put in order (or picked by it)."""
LETTER_ASK = re.compile(r"\b(?:which|what) letter\b"
                        r"|\bwhat(?: is|'s) (?:the )?(?:[a-z]+(?:'s)? ){0,2}letter\b"
                        r"|\b(?:write|give|name|say|spell)(?: out)? the (?:[a-z]+(?:'s)? ){1,2}"
                        r"letter\b"
                        r"|\bletter (?:at|in) (?:which |what |the )?(?:place|position|spot)\b"
                        r"|\bwrite the letter of\b")
"""A question with these words asks for a letter ("What is the word's first letter?",
"Write the first letter of X", "the letter at place 3", "Write the letter of the word X
with ..."; not "Write the word without its first letter", nor "Write the letter 'k' 3
times", which gives the letter)."""
WORD_ASK = re.compile(r"\bwhich (?:one )?(?:of (?:these|the|those|all) )?(?:\w+ )?words?\b"
                      r"|\bwhat word\b")
"""A question with these words asks for a word ("Which of these words is longest?",
"Which word comes first?")."""
BACK_ASK = re.compile(r"revers|backward|right to left")
"""A question with these words asks for something written in reverse (the narrow part of
the lexicon's ``_BACK``: "opposite" and "flip" name other things too)."""
_NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                 "fourteen fifteen sixteen seventeen eighteen nineteen twenty").split()
NUMBER = re.compile(r"\d|\b(?:none|" + "|".join(_NUMBER_WORDS) + r")\b")


def _in_order(seq: Sequence[str]) -> bool:
    seq = list(seq)
    return len(seq) >= 2 and (seq == sorted(seq) or seq == sorted(seq, reverse=True))


def fits_count(answer: str) -> bool:
    """A count is written as a number, in digits or in words."""
    return bool(NUMBER.search(answer))


def fits_order(answer: str, words: Words) -> bool:
    """Something put in order, or picked by it: its letters or its words in alphabetical
    (or reverse) order, a single letter, one of two or more shown words, or a number
    (a letter's place in the alphabet)."""
    tokens = re.findall(r"[a-z]+", answer)
    letters = "".join(tokens)
    return (fits_count(answer) or len(letters) == 1 or _in_order(letters)
            or _in_order(tokens) or (len(words) >= 2 and answer.strip() in words))


def fits_letter(answer: str, words: Words) -> bool:
    """A letter: no more letters than the words shown (one from each) and not one of
    those words, or a number alone (a letter's place: "What is the letter's place in the
    alphabet?"). learn-s41's designer showed ten words and scored "Write the letter at
    place 3" on the third word, which is no longer than the ten letters one from each
    word would be."""
    answer = answer.strip()
    if answer.isdigit():
        return True
    # A letter written with a number is neither: learn-s43's designer asked "Which letter
    # of the word X at position 3 has 'l'?" and scored "l 3", the question's own parts.
    return (not re.search(r"\d", answer)
            and 0 < len(re.sub(r"[^a-z]", "", answer)) <= max(1, len(words))
            and (len(answer) == 1 or answer not in words))


def fits_back(answer: str, words: Words) -> bool:
    """Something written in reverse: shown words (a list in reverse order, or picked by
    it), shown words spelt backwards, or the letters of a shown word or of the whole
    list backwards; or a single letter, a number or yes/no (a question about the
    reversal). learn-s43's designer asked "Write these words in reverse order: a, b, c"
    and scored each word with its first letter moved to its end, in the order shown."""
    tokens = re.findall(r"[a-z]+", answer)
    joined = "".join(tokens)
    shown = set(words) | {w[::-1] for w in words}
    return (fits_count(answer) or len(joined) == 1 or answer.strip() in ("yes", "no")
            or (bool(tokens) and all(t in shown for t in tokens))
            or joined in shown or joined == "".join(words)[::-1])


COPY_ASK = re.compile(r"^(?:please )?(?:write|type|copy|say|give|spell)(?: out| down)?"
                      r" (?:the |this |that )?word(?: (?:from|in|of|on) (?:the |this )?"
                      r"(?:list|text|document|story|page))?$")
"""A question that asks only for a shown word written as it is ("Write the word 'X'
from the list."), read without its shown words and punctuation. learn-s44's designer
asked it and scored the word's letters rotated: an answer shown in the question is
refused by ``answer_given``, so the question asks for nothing any other check reads."""


def asks_copy(text: str) -> bool:
    return bool(COPY_ASK.match(" ".join(re.findall(r"[a-z]+", text))))


def fits_copy(answer: str, words: Words) -> bool:
    """The shown word itself (one of them), as the question asks."""
    return answer.strip() in words


def fits_word(answer: str, words: Words) -> bool:
    """A word or words, not a number: letters and no digit ("Which word do these
    letters spell: o x e n?" is answered by a word no question shows). learn-s43's
    designer asked "Which of these words has 'e': a, b, c?" and scored how many times 'e'
    occurs in them all."""
    return bool(re.search(r"[a-z]", answer)) and not re.search(r"\d", answer)


KINDS: tuple[tuple[str, re.Pattern, Callable[[str, Words], bool]], ...] = (
    ("a number", COUNT_ASK, lambda answer, words: fits_count(answer)),
    ("something in alphabetical order", ORDER_ASK, fits_order),
    ("a letter", LETTER_ASK, fits_letter),
    ("something written in reverse", BACK_ASK, fits_back),
    ("a word", WORD_ASK, fits_word),
)
"""The kinds a question's words ask for: a search of its text for each pattern."""
WHOLE_KINDS: tuple[tuple[str, Callable[[str], bool], Callable[[str, Words], bool]], ...] = (
    ("the word it shows, as it is", asks_copy, fits_copy),
)
"""Kinds read from the whole question: what it asks when it says nothing else."""


def misfit(draws: Sequence[Draw]) -> str | None:
    """Why the quiz's answers are never of the kind its question asks for, or None.

    A question asks for a kind of answer by its words (``KINDS``: "how many" asks for a
    number, "alphabetical" for something in order), or by saying nothing else
    (``WHOLE_KINDS``: "Write the word X" asks for X). A draw is a misfit when its question
    asks for one or more kinds and the answer is of none of them; the quiz is refused when
    every draw whose question asks for a kind is a misfit, and there are at least
    ``MIN_DRAWS`` of them. A question may ask for several kinds; an answer of any of
    them fits. Each kind is wide (any number answers a count, a single letter
    or a picked word answers an order), so a fair game outside the lexicon ("Which letter
    of X comes first in the alphabet?", "How many times does 'e' appear in X?") fits, and
    one draw that fits is enough to pass (a yes/no order question answered "no")."""
    asked_draws, example = 0, None
    for question, words, items in draws:
        text = without_tie_clauses(question_words(question, words))
        kinds = [(name, fits) for name, pattern, fits in KINDS if pattern.search(text)]
        kinds += [(name, fits) for name, asks, fits in WHOLE_KINDS if asks(text)]
        if not kinds:
            continue
        answer = ", ".join(items)
        if any(fits(answer, words) for _, fits in kinds):
            return None
        asked_draws += 1
        example = example or (question.strip()[:80], answer[:40], kinds[0][0])
    if asked_draws < MIN_DRAWS:
        return None
    question, answer, kind = example
    return f"the question asks for {kind} ({question!r}) but the answer is not one ({answer!r})"


_ASK_VERBS = (
    "write type copy repeat say give name spell tell state answer list print output return "
    "count add sum subtract multiply divide double halve compute calculate solve find "
    "choose pick select guess identify determine decide work figure "
    "sort order arrange rank reverse flip rotate shift swap move remove drop delete "
    "replace change turn convert translate decode encode unscramble rearrange capitalize "
    "take join combine split separate put make form build complete fill match compare "
    "check show read enter keep mark circle underline")
ASK_VERB = re.compile(r"\?|\b(?:" + "|".join(sorted(set(_ASK_VERBS.split()))) + r")\b")
"""A task with a question mark or one of these verbs asks for something. Wide on purpose:
``asks_nothing`` refuses only a task with none."""


def asks_nothing(draws: Sequence[Draw]) -> str | None:
    """Why the quiz's task asks for nothing, or None: on every draw (at least
    ``MIN_DRAWS``) the task, read without the words it shows, is a statement with no
    question mark and no verb of ``ASK_VERB``. learn-s44's designer wrote "Digit of the
    word 'X' is 'y'." and scored X's length: a player told a fact cannot know what
    answer is wanted."""
    if len(draws) < MIN_DRAWS:
        return None
    for question, words, _ in draws:
        if ASK_VERB.search(question_words(question, words)):
            return None
    return (f"on all {len(draws)} draws the task asks for nothing: no question mark and no "
            f"verb saying what to do ({draws[0][0].strip()[:80]!r})")


def never_fits(judged: Iterable[tuple[bool | None, str, str]]) -> tuple[int, str, str] | None:
    """The rule of ``unasked_number``, ``unasked_letter`` and ``unsaid_separator`` over
    ``(fits, question, answer)`` per draw, ``fits`` None where the rule does not judge the
    draw: None where one judged draw fits or fewer than ``MIN_DRAWS`` are judged, else
    how many are and the first one's question and answer (shortened)."""
    count, example = 0, None
    for fits, question, answer in judged:
        if fits is None:
            continue
        if fits:
            return None
        count += 1
        example = example or (question.strip()[:80], answer[:40])
    return None if count < MIN_DRAWS else (count, *example)


def _unasked(draws: Sequence[Draw], of_kind: Callable[[str], bool], asks: re.Pattern,
             answer_is: str, kind: str) -> str | None:
    """``unasked_number`` and ``unasked_letter``: over the draws whose answer (its items
    joined) is ``of_kind``, refused by ``never_fits`` where no question, read without the
    words it shows, matches ``asks``."""
    found = never_fits((bool(asks.search(without_shown(question, words)))
                        if of_kind(answer) else None, question, answer)
                       for question, words, answer in
                       ((q, w, ", ".join(items)) for q, w, items in draws))
    if found is None:
        return None
    judged, question, answer = found
    return (f"on all {judged} draws whose answer {answer_is}, the question asks for no "
            f"{kind} ({question!r} -> {answer!r})")


NUMBER_ASK = re.compile(
    r"\d|\bhow (?:many|much|long|old|far|often)\b|count|numb|digit|sum\b|total|add|plus"
    r"|minus|subtract|times|multipl|divid|product|differen|score|length|long|size|place"
    r"|position|index|rank|order|percent|value|result|solv|calculat|comput|equation|math"
    r"|amount|age\b|year|price|cost|point|distance|steps?\b|[-+*/=%]|\b(?:"
    + "|".join(_NUMBER_WORDS) + r")\b")
"""A question with any of these asks for a number or gives one to work with: a digit,
an operator, a number word, a word about counting, measuring or placing. Wide on
purpose: ``unasked_number`` refuses only questions with none of them."""


def unasked_number(draws: Sequence[Draw]) -> str | None:
    """Why the quiz's answers hold a number no question asks for, or None. Over the draws
    whose answer has a digit: the quiz is refused when there are at least ``MIN_DRAWS``
    of them and no question among them, read without the words it shows ("ladder" asks
    nothing), has a word of ``NUMBER_ASK``. learn-s44's designer asked "Write the letter
    'x' into 'X'." and scored the letter with the number of X's different letters: no
    word asks for the number, so a player can only guess that one is wanted, and which."""
    return _unasked(draws, lambda answer: bool(re.search(r"\d", answer)), NUMBER_ASK,
                    "has a number", "number")


LETTER_WORDS = re.compile(
    r"letter|character|\bchar\b|initial|spell|alphabet|vowel|consonant|\bstart|\bbegin|\bend"
    r"|first|last|second|third|fourth|fifth|middle|position|place|index"
    r"|['\"‘’“”][a-z]['\"‘’“”]")
"""A question with any of these asks for a letter or names one: a word about letters,
spelling or a place in a word, or a quoted letter. Wide on purpose: ``unasked_letter``
refuses only questions with none of them."""


def unasked_letter(draws: Sequence[Draw]) -> str | None:
    """Why the quiz's answers are a single letter no question asks for, or None. Over the
    draws whose answer is one letter: the quiz is refused when there are at least
    ``MIN_DRAWS`` of them and no question among them, read without the words it shows,
    has a word of ``LETTER_WORDS``. At the warm start's weights (2026-12-07) the designer
    asked "What is the snowdrop of 'X'?" and scored X's second letter: nothing in the
    question says a letter is wanted, let alone which."""
    return _unasked(draws, lambda answer: bool(re.fullmatch(r"[a-z]", answer)), LETTER_WORDS,
                    "is one letter", "letter")


_SEPARATOR_NAMES = r"(spaces?|commas?|dash(?:es)?|hyphens?)"
SAYS_SEPARATOR = re.compile(
    r"\b(?:separated?|split|divided|apart)\b[^.?!]{0,30}?\b(?:by|with)\s+"
    r"(?:an?\s+|one\s+|single\s+)?" + _SEPARATOR_NAMES + r"\b"
    r"|\b(space|comma|dash|hyphen)[- ]separated\b"
    r"|\bwith (?:an?\s+|one\s+|single\s+)?" + _SEPARATOR_NAMES + r" between\b")
"""How a question says what to put between the parts of its answer: "separated by
spaces", "Separate the letters with a dash", "comma-separated", "with spaces between"."""

SEPARATOR_MARKS = {"space": " ", "comma": ",", "dash": "-", "hyphen": "-"}


def said_separator(question: str) -> str | None:
    """The one mark ``question`` says to put between the answer's parts, or None where it
    says none or several ("separated by a comma and a space")."""
    marks = set()
    for sentence in re.findall(r"[^.?!]+", question.lower()):
        if SAYS_SEPARATOR.search(sentence):  # every mark its sentence names: "a comma and a space"
            marks |= {mark for name, mark in SEPARATOR_MARKS.items()
                      if re.search(rf"\b{name}", sentence)}
    return marks.pop() if len(marks) == 1 else None


MARK_NAMES = {"-": r"dash|hyphen", "/": r"slash", "|": r"bar|pipe", ";": r"semicolon",
              "_": r"underscore", "+": r"plus"}
"""Marks a player writes between an answer's parts only when told to, and their names."""


def used_separators(answer: str) -> set[str]:
    """The marks between the parts of ``answer``: a comma (with or without the space
    after it), a mark of ``MARK_NAMES`` between two letters or digits, a space elsewhere."""
    text = answer.strip()
    marks = {m for m in MARK_NAMES if re.search(rf"\w\s*{re.escape(m)}\s*\w", text)}
    if "," in text:
        marks.add(",")
    if " " in re.sub(r"\s*[,;/|+-]\s*", "", text):
        marks.add(" ")
    return marks


def _mentions(question: str, mark: str) -> bool:
    text = question.lower()
    return mark in text or bool(re.search(rf"\b(?:{MARK_NAMES[mark]})", text))


def _joined_as_told(question: str, answer: str) -> bool | None:
    """Whether the answer's parts are joined as the question says: by the one mark it
    names (``said_separator``), or, where it names none, by a comma, a space or a mark it
    shows or names. None where the answer has no parts to judge."""
    said, used = said_separator(question), used_separators(answer)
    if not used:
        return None
    if said is not None:
        return said in used
    odd = used - {",", " "}
    if not odd:
        return None
    return all(_mentions(question, m) for m in odd)


def unsaid_separator(draws: Sequence[tuple[str, str]]) -> str | None:
    """Why the quiz's answers join their parts otherwise than the question says, or None.
    Over the draws (question, answer) whose answer has parts joined by a mark the question
    names one of, or by a mark of ``MARK_NAMES`` (``_joined_as_told``): the quiz is refused
    when there are at least ``MIN_DRAWS`` of them and none is joined as told. learn-s45's
    designer asked "Spell out the letters of X separated by spaces." and scored the
    letters separated by commas, and at its warm start's weights "Sort the letters in X
    alphabetically." with the letters joined by dashes; ``QuizEnv`` matches a text whole
    and a list at its commas, so a player who writes what it is told loses every time."""
    found = never_fits((_joined_as_told(question, answer), question, answer)
                       for question, answer in draws)
    if found is None:
        return None
    judged, question, answer = found
    return (f"on all {judged} draws the answer's parts are joined otherwise than the "
            f"question says ({question!r} -> {answer!r})")


OPPOSITES = (("first", "last"), ("longest", "shortest"), ("most", "fewest|least"),
             ("earliest", "latest"), ("largest|biggest", "smallest"), ("highest", "lowest"))
"""Words that ask for opposite ends of one order."""


def asks_opposites(draws: Sequence[Draw]) -> str | None:
    """Why the quiz asks for both ends of one order with one answer, or None. A draw does
    when two of its questions (sentences ending in "?", read without the words shown and
    without tie clauses) each ask for one end of a pair of ``OPPOSITES`` and not the
    other, and its answer is one item. The quiz is refused when every draw does, at least
    ``MIN_DRAWS``. learn-s45's designer asked "Which word comes first a, b, c? Which word
    comes last in the alphabetical order?" and scored the first: a player cannot tell
    which of the two questions the one answer is for."""
    if len(draws) < MIN_DRAWS:
        return None
    for question, words, items in draws:
        text = without_tie_clauses(without_shown(question, words))
        asks = re.findall(r"[^.?!]*\?", text)
        if len(items) != 1 or not any(_opposed(asks, a, b) for a, b in OPPOSITES):
            return None
    return (f"on all {len(draws)} draws the task asks two questions for opposite ends of "
            f"one order and takes one answer ({draws[0][0].strip()[:80]!r})")


def _opposed(questions: Sequence[str], one: str, other: str) -> bool:
    """Whether one of ``questions`` asks for ``one`` and not ``other``, and another the
    reverse."""
    has = [(bool(re.search(rf"\b(?:{one})\b", q)), bool(re.search(rf"\b(?:{other})\b", q)))
           for q in questions]
    return (True, False) in has and (False, True) in has


_TIMES_WORDS = {2: ("twice", "double", "pair", "again"), 3: ("thrice", "triple")}


def states_count(k: int, question: str) -> bool:
    """Whether ``question`` says ``k``: in digits, as a number word, or as "twice"."""
    words = ((_NUMBER_WORDS[k],) if k < len(_NUMBER_WORDS) else ()) + _TIMES_WORDS.get(k, ())
    text = question.lower()
    return bool(re.search(rf"\b{k}\b", text)) or any(re.search(rf"\b{w}\b", text) for w in words)


def period(text: str) -> tuple[str, int] | None:
    """``text`` as its shortest unit written ``k >= 2`` times, or None."""
    n = len(text)
    for size in range(1, n // 2 + 1):
        if n % size == 0 and text[:size] * (n // size) == text:
            return text[:size], n // size
    return None


SAYS_REPEAT = re.compile(r"times|as many|repeat|\beach\b|\bevery|\bonce\b|\bper\b|twice"
                         r"|double|triple|again")
"""Words that tell a player to write something more than once; where the number of
times changes with the draw, one of them must be in a question."""


DIGITS_REPEATED = 3
"""Times a unit of digits only must be written for ``unstated_repeat`` to read it as a
text repeated: "22" may be a count, "7777777777" on every draw is none (learn-s44:
"Write the letter {n} times a specified number of times." scored on n written 10
times)."""


def unstated_repeat(draws: Sequence[tuple[str, str]]) -> str | None:
    """Why the quiz's answer is text written a number of times no question states, or
    None. Over the draws (question, answer), letters and digits of each answer only: on
    every draw the answer is one unit with a letter in it (a letter, a word) written
    ``k >= 2`` times, and no question says ``k``. learn-s41's designer wrote "Write
    the letter 'r' at position r." scored on "rr", and "Spell the word 'x' as one word."
    on 'x' written 26 times: the player is told what to write but never how many times.
    "Write the letter 'k' 3 times" and "Write X twice" say it on every draw and pass (a
    question that says it on some draws only, where a drawn number happens to be it, does
    not: learn-s44); a unit of digits counts from ``DIGITS_REPEATED`` times; a count that
    changes with the draw passes where a question says to repeat ("as many times as the
    word has letters", "for each letter"), and is refused where none does (learn-s41:
    "Write the letter 'X' in the place of 'x, y, z'" scored on X written one time fewer
    than it has letters)."""
    counts, example = set(), None
    for question, answer in draws:
        found = period(re.sub(r"[\W_]", "", answer))
        if found is None or not (any(c.isalpha() for c in found[0])
                                 or found[1] >= DIGITS_REPEATED):
            return None
        counts.add(found[1])
        example = example or (question.strip()[:80], answer[:40])
    if len(draws) < MIN_DRAWS:
        return None
    question, answer = example
    if len(counts) > 1:
        if any(SAYS_REPEAT.search(q.lower()) for q, _ in draws):
            return None
        return (f"the answer is one text written {min(counts)} to {max(counts)} times "
                f"({question!r} -> {answer!r}) and no question says to repeat anything")
    (k,) = counts
    stated = sum(states_count(k, q) for q, _ in draws)
    if stated == len(draws):
        return None
    says = "no question says" if not stated else f"only {stated} of {len(draws)} questions say"
    return (f"the answer is one text written {k} times on every draw ({question!r} -> "
            f"{answer!r}) and {says} {k}")


# A count no operation of the lexicon computes is judged by neither rule above: learn-s41's
# designer asked "How many places is letter 'x' in word X?" and scored the word's length
# less one, and "Count all vowels: ..." scored each word's different letters less one.
# A number answers the question's kind, so ``misfit`` passes it too.
QUOTED_LETTER = re.compile(r"['\"‘’“”]([a-z])['\"‘’“”]|\bletter ([a-z])\b")


COUNT_MISS_SHARE = 0.25
"""The share of judged draws a quiz's counts may miss before it is refused: every
committed count quiz misses none, learn-s41's two unfair ones 28 and 64 of 64."""


def _quoted_letters(question: str) -> set[str]:
    return {a or b for a, b in QUOTED_LETTER.findall(question.lower())}


def word_counts(word: str, letters: set[str]) -> set[int]:
    """The counts a question can ask of one word: its letters, vowels, consonants and
    different letters; for each letter the question names, how often it occurs, where
    it first and last stands, and its place in the alphabet."""
    counts = {len(word), _vowels(word), len(word) - _vowels(word), len(set(word))}
    for c in letters:
        counts |= {word.count(c), ord(c) - ord("a") + 1}
        if c in word:
            counts |= {word.index(c) + 1, word.rindex(c) + 1}
    return counts


def list_counts(words: Words, letters: set[str], numbers: set[int]) -> set[int]:
    """The counts a question can ask of several words: how many there are, their totals,
    the difference of two lengths, the letters two share or all use, how many are
    longer, shorter or as long as a number the question gives, and how many have a
    letter it names."""
    counts = {len(words), len(set("".join(words)))}
    for f in (len, _vowels, lambda w: len(w) - _vowels(w), *(
            (lambda w, c=c: w.count(c)) for c in letters)):
        counts.add(sum(map(f, words)))
    for i, a in enumerate(words):
        for b in words[i + 1:]:
            counts |= {abs(len(a) - len(b)), len(set(a) & set(b))}
    for n in numbers:
        counts |= {sum(len(w) > n for w in words), sum(len(w) < n for w in words),
                   sum(len(w) >= n for w in words), sum(len(w) <= n for w in words),
                   sum(len(w) == n for w in words)}
    counts |= {sum(c in w for w in words) for c in letters}
    return counts


DISTINCT_ASK = re.compile(r"\b(?:different|distinct|unique) letters?\b")
"""A how-many question with these words counts different letters, and nothing else of
``word_counts`` or ``list_counts`` answers it: learn-s43's designer asked "How many
different letters does 'a, b, c' have?" and scored the number of words less one, which
some small count of the wide families matched on most draws."""


COMMON_ASK = re.compile(r"\bin common\b|\bshared?\b")
"""A how-many question with these words counts letters words have in common: learn-s43's
designer asked "How many of these letters do these letters have in common: a, b, c?"
and scored how many words it showed."""


def common_counts(words: Words) -> tuple[list[set[int]], set[int]]:
    """The letters in common: none of a word alone; of the list, all its words' and any
    two's."""
    of_list = {len(set.intersection(*map(set, words)))} if words else set()
    for i, a in enumerate(words):
        for b in words[i + 1:]:
            of_list.add(len(set(a) & set(b)))
    return [set() for _ in words], of_list


def distinct_counts(words: Words) -> tuple[list[set[int]], set[int]]:
    """The different-letter counts of each word, and of the list: all its words', and
    any two's together or in common."""
    per_word = [{len(set(w))} for w in words]
    of_list = {len(set("".join(words)))}
    for i, a in enumerate(words):
        for b in words[i + 1:]:
            of_list |= {len(set(a) & set(b)), len(set(a) | set(b))}
    return per_word, of_list


def _stated(counts: set[int], numbers: set[int]) -> set[int]:
    """``counts`` and each of them changed by a number the question gives ("How many
    letters are left once 2 are taken from X?")."""
    return counts | {c + s * n for c in counts for n in numbers for s in (1, -1)}


def count_misses(draws: Sequence[Draw]) -> tuple[int, int, tuple[str, str] | None]:
    """Over the draws whose question asks how many (``COUNT_ASK``), shows probe words and
    is answered by whole numbers only: how many there are, how many are answered by no
    count of ``word_counts`` or ``list_counts``, and the first such (question, answer).

    An answer of one number per shown word must be one of ``word_counts`` of its word;
    any other, one of the counts of any shown word or of the list; either may differ by
    a number the question gives."""
    judged, missed, example = 0, 0, None
    for question, words, items in draws:
        if not words or not all(i.isdigit() for i in items):
            continue
        asks = without_tie_clauses(question_words(question, words))
        if not COUNT_ASK.search(asks):
            continue
        letters = _quoted_letters(question)
        numbers = {int(n) for n in re.findall(r"\d+", question)}
        answer = [int(i) for i in items]
        if DISTINCT_ASK.search(asks):
            each, of_list = distinct_counts(words)
        elif COMMON_ASK.search(asks) and len(words) >= 2:
            each, of_list = common_counts(words)
        else:
            each = [word_counts(w, letters) for w in words]
            of_list = list_counts(words, letters, numbers)
        per_word = [_stated(c, numbers) for c in each]
        any_count = set().union(*per_word) | _stated(of_list, numbers)
        if len(words) >= 2 and len(answer) == len(words):
            ok = all(a in c for a, c in zip(answer, per_word))
        else:
            ok = all(a in any_count for a in answer)
        judged += 1
        if not ok:
            missed += 1
            example = example or (question.strip()[:80], ", ".join(items)[:40])
    return judged, missed, example


def uncounted(draws: Sequence[Draw]) -> str | None:
    """Why the quiz's answers to its how-many questions are no count of the words it
    shows, or None (``count_misses``). The families of counts are wide, so a draw of an
    unfair quiz often matches one by chance (learn-s41's length less one was the place of
    the letter it named, or a vowel count, on 36 of 64 draws); the quiz is refused when
    at least ``COUNT_MISS_SHARE`` of at least ``MIN_DRAWS`` judged draws match none. A
    fair count of these families never misses; one outside them ("How many letters of X
    come before 'm'?") is refused, the price of the rule."""
    judged, missed, example = count_misses(draws)
    if judged < MIN_DRAWS or missed < COUNT_MISS_SHARE * judged:
        return None
    question, answer = example
    return (f"on {missed} of {judged} draws the answer to a how-many question is no count "
            f"of the words it shows ({question!r} -> {answer!r})")


ALPHABET_PLACE_ASK = re.compile(r"\b(?:place|position|spot|number)s? (?:of|in) the alphabet\b"
                                r"|\balphabet(?:ical)? (?:place|position|number)\b")
"""A question with these words asks where a letter stands in the alphabet (a = 1)."""


def unplaced(draws: Sequence[tuple[str, str]]) -> str | None:
    """Why the quiz's answers to where-in-the-alphabet questions are no letter's place,
    or None. Over the draws (question, answer) whose question asks it
    (``ALPHABET_PLACE_ASK``) and whose answer is whole numbers: each must be the place
    of a letter the question holds (a = 1, ..., z = 26); the quiz is refused when
    ``COUNT_MISS_SHARE`` of at least ``MIN_DRAWS`` judged draws miss. learn-s43's
    designer asked "At which place of the alphabet is 'k': k, e, t, t, l, e?" and scored
    whether 'k' is a vowel, a question whose letters, spelt out, no probe word shows."""
    judged, missed, example = 0, 0, None
    for question, answer in draws:
        text = question.lower()
        numbers = re.findall(r"\d+", answer)
        if not ALPHABET_PLACE_ASK.search(text) or not numbers \
                or re.sub(r"[\d\s,.]", "", answer):
            continue
        places = {ord(c) - ord("a") + 1 for c in re.sub(r"[^a-z]", "", text)}
        judged += 1
        if not all(int(n) in places for n in numbers):
            missed += 1
            example = example or (question.strip()[:80], answer[:40])
    if judged < MIN_DRAWS or missed < COUNT_MISS_SHARE * judged:
        return None
    question, answer = example
    return (f"on {missed} of {judged} draws the answer to where a letter stands in the "
            f"alphabet is no place of a letter it shows ({question!r} -> {answer!r})")
