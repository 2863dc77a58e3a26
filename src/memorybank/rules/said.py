"""What a user said in passing, made ready to keep as facts: the pieces of their messages
that may state one, the people "we" stands for, and a date for "last year".

Pure functions, no I/O. Which pieces are worth keeping is the learned model's decision
(:mod:`memorybank.rules.keep_model`); this module only cuts, names and dates them.

>>> pieces("ok wait no. we're four staff now, Chidi left last month")
["we're four staff now", 'Chidi left last month']
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from memorybank.model import Category
from memorybank.rules.keep_model import QUESTION_HEAD_RE
from memorybank.rules.policy import infer_category
from memorybank.rules.third_person import said_in_third_person, strip_lead_in

# Linear on any text (issue 44): a run of punctuation is taken whole, possessively, and only
# from its first character, so a run of 20,000 "!" not followed by a space is read once,
# not once from each of its characters (which took 10 s).
_SENTENCE_END_RE = re.compile(r"(?<![.!?…])[.!?…]++[\"”’')\]]*+\s+|\n+")
# A full stop after these is part of a name or phrase ("Dr. Lee"), not a sentence end.
_ABBREVIATIONS = frozenset("dr mr mrs ms prof st jr sr mt vs etc e.g i.e inc ltd co no".split())
# A clause of its own starts after a comma or a dash when a new subject follows: "training
# until 5:30, i'm on the varsity", "the power is off, we run the generator". Every pattern
# over what people say is linear in it (issue 44): runs of spaces or punctuation are taken
# possessively, and a match starts only where a run starts (``(?<!\s)``), so no run is read
# again from each of its characters.
_CLAUSE_RE = re.compile(
    r"(?<!\s)(?:\s*+[,;:]|\s++[-–—])\s++(?=(?:i|i['’]m|we|we['’]re|my|our|she|he|they"
    r"|[A-Z][a-z]++\s++(?:is|was|left|works|lives|has|had))\b)"
)
# A question can carry a statement: after its "that" ("how do I say that I was a pharmacist
# for 35 years?"), or before the comma of a question tagged on ("I teach on Tuesdays, does
# that count?").
_STATED_RE = re.compile(r"\bthat\s+(?=(?:i|i['’]m|we|we['’]re|my|our)\b)", re.IGNORECASE)
# Where a question tagged on may start (its comma), and where the non-word characters that
# end a text start (only from the start of a run: linear); see _tagged.
_TAG_RE = re.compile(r",\s++(?=(?:" + QUESTION_HEAD_RE.pattern + r"))", re.IGNORECASE)
_TRAILING_RE = re.compile(r"(?<!\W)\W*+\Z")
# Words that open a chat sentence without saying anything: dropped before rephrasing.
_FILLER_RE = re.compile(
    r"^(?:(?:ok(?:ay)?|so|also|oh|and|but|well|yeah|yes|yep|no|nah|hmm|um|uh|lol|haha|btw"
    r"|actually|honestly|anyway|then|plus|like|right|true|sorry|wait|correction|basically"
    r"|i\s+mean|by\s+the\s+way|oh\s+and|fun\s+fact)\b[\s,:!.-]*)+",
    re.IGNORECASE,
)
_PIECE_MIN_WORDS = 2
# The people a user speaks for when they say "we": the nearest "my <relation>" they named.
_GROUP_RE = re.compile(
    r"\bmy\s+(partner|husband|wife|boyfriend|girlfriend|fianc[ée]e?|spouse|family|kids"
    r"|children|son|daughter|parents|mum|mom|dad|team|band|orchestra|flatmate|roommate"
    r"|housemate|friends?|brother|sister|colleagues?|staff|class|club|company|business)\b",
    re.IGNORECASE,
)
_RELATIVE_TIME_RE = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|(?:last|next|this)\s+(?:week|weekend|month|year"
    r"|summer|winter|spring|autumn|fall|monday|tuesday|wednesday|thursday|friday|saturday"
    r"|sunday)|\w+\s+(?:days?|weeks?|months?|years?)\s+ago|recently|just|now)\b",
    re.IGNORECASE,
)


_CONFIRMS_RE = re.compile(
    r"^\W*(?:yes|yeah|yep|yup|exactly|correct|right|that['’]?s\s+(?:right|correct|it)|true"
    r"|indeed|spot\s+on)\b",
    re.IGNORECASE,
)


_EXPLICIT_RE = re.compile(
    r"(?:(?:please|pls|oh|ok|okay|and|also|hey)[\s,]++)*+"
    r"(?:remember|don['’]?t\s+forget|do\s+not\s+forget)\b",
    re.IGNORECASE,
)
# "I am sorry", "I'm not sure", "I'm going to …" describe the moment, not the user.
_PASSING = (
    r"(?!(?:not|just|so|sorry|glad|happy|sure|going|trying|looking|wondering|thinking|afraid"
    r"|here|back|done|fine|ok|okay|good|great)\b)"
)
_STATEMENTS: list[tuple[re.Pattern[str], Category]] = [
    (re.compile(r"my\s+name\s+is\b", re.IGNORECASE), Category.IDENTITY),
    (
        re.compile(r"I\s+(?:really\s+|strongly\s+|usually\s+|generally\s+)?prefer\b"),
        Category.PREFERENCE,
    ),
    (re.compile(r"I(?:\s+am|['’]m)\s+" + _PASSING), Category.IDENTITY),
    (re.compile(r"I\s+work\b"), Category.IDENTITY),
]


def explicit_category(sentence: str) -> Category | None:
    """The category of an explicit statement about the user, ``None`` for any other
    sentence: one that starts with "my name is", "I prefer", "I am"/"I'm" (not a passing
    state like "I'm not sure"), "I work", or asks to be remembered ("remember that", "don't
    forget"); the last kind takes the category the bank infers from its body unless the body
    is one of the others. Such a sentence is always kept, whatever the learned model says.

    >>> explicit_category("Remember that my dentist is Dr. Lee")
    <Category.CONTEXT: 'context'>
    >>> explicit_category("I'm not sure") is None
    True
    """
    explicit = _EXPLICIT_RE.match(sentence) is not None
    body = strip_lead_in(sentence) if explicit else sentence
    category = next((c for p, c in _STATEMENTS if p.match(body)), None)
    if category is None and explicit and body != sentence:
        category = infer_category(body)  # as bank.save infers it
    return category


def confirms(reply: str) -> bool:
    """Whether the user's ``reply`` opens by confirming what the assistant just said.

    >>> confirms("Yes, exactly that"), confirms("no, Tuesdays")
    (True, False)
    """
    return _CONFIRMS_RE.match(reply) is not None


def word_before(text: str, start: int, end: int) -> str:
    """The last word of ``text[start:end]`` (``""`` if it has none), found from ``end``
    back: splitting the whole span at each full stop was quadratic on a message of many
    stops that end no sentence ("e.g. e.g. e.g. …", issue 44).

    >>> word_before("Hi Dr. Lee", 0, 5)
    'Dr'
    >>> word_before("  ", 0, 2)
    ''
    """
    stop = end
    while stop > start and text[stop - 1].isspace():
        stop -= 1
    begin = stop
    while begin > start and not text[begin - 1].isspace():
        begin -= 1
    return text[begin:stop]


def sentences(text: str) -> list[str]:
    """``text`` split into sentences, keeping "Dr. Lee", "J. Smith" and "e.g. tea" whole.

    >>> sentences("Hi! I prefer tea. Dr. Lee agrees.")
    ['Hi!', 'I prefer tea.', 'Dr. Lee agrees.']
    """
    out: list[str] = []
    start = 0
    for m in _SENTENCE_END_RE.finditer(text):
        last = word_before(text, start, m.start()).lower().rstrip(".")
        # Chat is often typed in lower case: a small letter after a full stop still starts
        # a sentence, unless the stop ends an abbreviation or an initial.
        if m.group(0)[0] == "." and (last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha())):
            continue
        out.append(text[start : m.end()].strip())
        start = m.end()
    out.append(text[start:].strip())
    return [s for s in out if s]


def pieces(text: str) -> list[str]:
    """The pieces of a message that may each state one fact: its sentences, a sentence cut
    where a clause with a subject of its own begins, without opening filler ("ok so", "oh
    and"), at least two words each.

    >>> pieces("maybe, the jeep leaves at 6 tho. also saturdays are out, i work at a milk tea shop")
    ['maybe, the jeep leaves at 6 tho.', 'saturdays are out', 'i work at a milk tea shop']
    """
    out = []
    for sentence in sentences(text):
        for clause in _CLAUSE_RE.split(sentence):
            clause = _stated(_FILLER_RE.sub("", clause.strip()).strip())
            if len(clause.split()) >= _PIECE_MIN_WORDS:
                out.append(clause)
    return out


def is_question(piece: str) -> bool:
    """Whether ``piece`` is a question (it opens as one and ends with a question mark): never
    a fact, whatever else it says.

    >>> is_question("Where do I start?"), is_question("I'm a nurse, you?")
    (True, False)
    """
    text = piece.strip()
    return text.endswith("?") and QUESTION_HEAD_RE.match(text) is not None


def _stated(clause: str) -> str:
    """The statement a question carries (see ``_STATED_RE``), else ``clause`` as it is.

    >>> _stated("how do I say that I was a pharmacist for 35 years?")
    'I was a pharmacist for 35 years'
    >>> _stated("I also have two cows, can I use the manure on the coffee?")
    'I also have two cows'
    """
    if not clause.endswith("?"):
        return clause
    if is_question(clause):
        stated = _STATED_RE.search(clause)
        return clause[stated.end() :].rstrip(" ?") if stated else clause
    tagged = _tagged(clause)
    return clause if tagged is None else clause[:tagged]


def _tagged(clause: str) -> int | None:
    """Where the question tagged on ``clause`` starts: the first comma, followed by how a
    question opens, after which no other comma comes before the "?" that ends the clause
    (commas among the marks after that "?" aside). Found in linear time: the pattern
    ``,\\s+(?=<opening>)[^,]*\\?\\W*$`` it replaces was quadratic on a run of "?" (issue 44).

    >>> clause = "I teach on Tuesdays, does that count?"
    >>> clause[: _tagged(clause)]
    'I teach on Tuesdays'
    >>> _tagged("I teach, then rest, ok?") is None
    True
    """
    marks = _TRAILING_RE.search(clause)
    end = len(clause) if marks is None else marks.start()
    for opening in _TAG_RE.finditer(clause):
        comma = clause.find(",", opening.end())
        if comma == -1 or (comma >= end and "?" in clause[end:comma]):
            return opening.start()
    return None


def group_of(said_before: Sequence[str]) -> str:
    """Whom "we" includes beside the user, from what they said so far (newest last): "their
    partner" after "my partner", else "others".

    >>> group_of(["My husband Emeka does the books", "hi"])
    'their husband'
    >>> group_of(["hello there"])
    'others'
    """
    for text in reversed(said_before):
        found = _GROUP_RE.findall(text)
        if found:
            return f"their {found[-1].lower()}"
    return "others"


def as_fact(piece: str, group: str, said_at: datetime | None) -> str:
    """``piece`` rephrased as a fact: third person, "we" named, a trailing full stop or
    question mark dropped, the user named when the piece does not name them, and the day it
    was said when it dates itself ("last year").

    >>> from datetime import datetime
    >>> as_fact("we moved to Leeds last year.", "their partner", datetime(2023, 5, 8))
    'User and their partner moved to Leeds last year (said on 8 May 2023)'
    >>> as_fact("i'm a nurse", "others", None)
    'User is a nurse'
    >>> as_fact("The shop is in Yaba.", "others", None)
    'User mentioned that the shop is in Yaba'
    """
    text = said_in_third_person(piece, group).rstrip(" .!…")
    if "User" not in text:
        # "the shop is in Yaba" is about the user's life too: the fact names whose it is, as
        # every other fact does, and a question asked of the user ("where is my shop?")
        # finds it.
        text = f"User mentioned that {text[:1].lower()}{text[1:]}"
    if said_at is not None and _RELATIVE_TIME_RE.search(piece):
        text += f" (said on {said_at.day} {said_at:%B %Y})"
    return text


__all__ = [
    "as_fact",
    "confirms",
    "explicit_category",
    "group_of",
    "is_question",
    "pieces",
    "sentences",
    "word_before",
]
