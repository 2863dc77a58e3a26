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
from memorybank.rules.third_person import has_verb, said_in_third_person, strip_lead_in

# Linear on any text (issue 44): a run of punctuation is taken whole, possessively, and only
# from its first character, so a run of 20,000 "!" not followed by a space is read once,
# not once from each of its characters (which took 10 s).
_SENTENCE_END_RE = re.compile(r"(?<![.!?…])[.!?…]++[\"”’')\]]*+\s+|\n+")
# A full stop after these is part of a name or phrase ("Dr. Lee"), not a sentence end.
_ABBREVIATIONS = frozenset("dr mr mrs ms prof st jr sr mt vs etc e.g i.e inc ltd co no".split())
# Who may open a clause of its own: a pronoun or "my …". A clause starts after a comma or a
# dash before one ("training until 5:30, i'm on the varsity"), or before a name and its verb;
# and after "and", "but" or "so" before one when what comes before is a clause too (it has a
# verb): "my uncle sends money and i design logos" is two facts, "my sister and I" one subject.
_SUBJECT = r"(?:i|we|my|our|she|he|they)(?:['’](?:m|re|s|ll|d|ve))?\b"
# Every pattern that opens on white space starts at the first space of a run ("(?<!\s)"):
# a long run of spaces is then read once, not once from each of its spaces.
_CLAUSE_RE = re.compile(
    r"(?<!\s)\s*(?:[,;:]|\s[-–—])\s+(?=(?i:" + _SUBJECT + r")|[A-Z][a-z]+\s+(?:is|was|left|works"
    r"|lives|has|had)\b)"
)
# "…, so no snacks at the party": after a comma, "so" opens a consequence whatever follows;
# without one, when a subject or the words that open a clause follow it ("so probably a hall",
# not "so tired").
_JOINED_RE = re.compile(
    r",\s*so\s+|(?<!\s),?\s+(?:and|but|so)\s+(?="
    + _SUBJECT
    + r")|(?<!\s)\s+so\s+(?=(?:it|there|the|no"
    r"|probably|maybe|that)\b)",
    re.IGNORECASE,
)
# A question can carry a statement: after its "that" ("how do I say that I was a pharmacist
# for 35 years?"), or before the comma of a question tagged on ("I teach on Tuesdays, does
# that count?").
_STATED_RE = re.compile(r"\bthat\s+(?=(?:i|i['’]m|we|we['’]re|my|our)\b)", re.IGNORECASE)
# Where a question tagged on may start (its comma), and where the non-word characters that
# end a text start (only from the start of a run: linear); see _tagged.
_TAG_RE = re.compile(r",\s++(?=(?:" + QUESTION_HEAD_RE.pattern + r"))", re.IGNORECASE)
_TRAILING_RE = re.compile(r"(?<!\W)\W*+\Z")
# Discourse markers, English's closed class rather than any chat's words: what opens a chat
# sentence ("ok so", "oh and"), closes it ("lol", "tho") or sits between its commas ("funny
# enough") without saying anything.
_OPENERS = frozenset(
    """ok okay so also oh ah and but well yeah yes yep no nah hmm um uh lol haha btw actually
    honestly anyway then plus like right true sorry wait correction update basically alright
    hi hey hello hola great cool perfect nice sure good""".split()
)
_OPENING_PHRASES = ("i mean ", "by the way", "fun fact", "one more thing", "hold on", "of course")
_CLOSERS = frozenset(
    "lol lmao haha hahaha tho though obviously honestly anyway btw actually too".split()
)
_CLOSING_PHRASES = ("i guess", "to be fair", "funny enough", "at least", "i think")
_ASIDE_RE = re.compile(
    r",\s?(?:funny enough|to be fair|obviously|honestly|of course|i guess|i think|lol),",
    re.IGNORECASE,
)
# "The big thing is I'm saving …": a cleft that only announces the statement after it.
_CLEFT_RE = re.compile(
    r"(?:the|my)\s+(?:\w+\s+)?(?:thing|problem|issue|point|catch|reason)\s+is\s+(?:that\s+)?",
    re.IGNORECASE,
)
_LEAD_WORD_RE = re.compile(r"([A-Za-z]+)[\s,:;!.-]*")
_PREPOSITIONS = frozenset("in at on since for from after before during with by near".split())
# A reaction to what was just said ("makes sense", "that's practical", "sounds good"): it
# opens on words that point back at it, and names no one and nothing.
_REACTION_RE = re.compile(r"(?:that|this)(?:['’]s|\s|$)|(?:sounds|makes|looks|seems)\b", re.I)
_NAME_RE = re.compile(r"(?<=[\w,;:] )(?!I\b|I['’])[A-Z]")
_NAMES_SOMETHING_RE = re.compile(r"\d|(?<=\s)[A-Z]|\b(?i:i|my|me|we|our|us)\b")
_PIECE_MIN_WORDS = 2
# "May" with a capital is the month.
_MAY_BE_RE = re.compile(r"\b(?:could|might|may)\b")
_GUESSES = frozenset("maybe perhaps probably possibly".split())
# A clause that opens on a verb in the past has lost its subject ("bought it second hand").
# Starts only where a word starts: linear on any text, not only on the one word it is given.
_PAST_HEAD_RE = re.compile(r"(?<![A-Za-z])(?i:[a-z]+ed|bought|got|went|took|made|found|had|did)$")
_POINTS_BACK_RE = re.compile(
    r"\b(?:it|this|that|them|there|these|those)$|\b(?:that|this)\s+one\b"
    r"|\b(?:up|over|down|out)\s+there\b",
    re.IGNORECASE,
)
# The people of a user's life they may go on to call "she", "he" or "they": "my daughter
# Mia", "our son", "the boys" (a word for a person, with a name when one follows). Which
# pronoun fits a word is English grammar: these few words are the gendered ones.
_FEMALE = frozenset(
    """mother mom mum mama wife daughter sister aunt auntie niece granddaughter grandmother
    grandma gran nan girlfriend fiancée stepdaughter stepmother""".split()
)
_MALE = frozenset(
    """father dad papa husband son brother uncle nephew grandson grandfather grandpa granddad
    boyfriend fiancé stepson stepfather""".split()
)
_NEUTRAL = frozenset(
    """partner spouse friend boss manager supervisor colleague coworker neighbour neighbor
    roommate flatmate housemate teacher coach doctor client kid child baby toddler cousin
    dog cat puppy kitten pet horse""".split()
)
_PLURAL = frozenset("parents kids children boys girls twins grandchildren grandkids".split())
_GROUPS = frozenset("family team band orchestra class club company business staff".split())
# Whom the user names together with themselves: "me and my partner", "my wife and I".
_TOGETHER_RE = re.compile(
    r"\b(?:me|i)\s+and\s+my\s+([\w-]+)|\bmy\s+([\w-]+)\s+and\s+(?:i|me)\b", re.IGNORECASE
)
_PERSON_RE = re.compile(
    r"\b((?i:my|our|the))\s+(?:[a-z]+\s+)?((?i:"
    + "|".join(sorted(_FEMALE | _MALE | _NEUTRAL | _PLURAL | _GROUPS, key=len, reverse=True))
    + r")s?(?:-in-law)?)\b(?:\s+([A-Z][\w-]*))?"
)
_HEAD_PRONOUN_RE = re.compile(
    r"(she|he|they)(?:['’](s|re|ll|d|ve))?\b|(her|his|their)\s+(?=[a-z])", re.IGNORECASE
)
_HEAD_NAME_RE = re.compile(r"\w[\w-]*\b(?!['’])")
_CONTRACTED = {"s": "is", "re": "are", "ll": "will", "d": "would", "ve": "have"}
_FITS = {"she": "fn", "her": "fn", "he": "mn", "his": "mn", "they": "p", "their": "p"}
_HEDGES = frozenset("just mostly only about around maybe probably".split())
_DETERMINERS = frozenset(
    """the a an this that these those it it's its there here some most all both each every
    no one two three many much""".split()
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
# Statements that say outright what a memory is for: kept whatever the learned model says.
_OUTRIGHT: list[tuple[re.Pattern[str], Category]] = [
    (re.compile(r"my\s+name\s+is\b", re.IGNORECASE), Category.IDENTITY),
    (
        re.compile(r"I\s+(?:really\s+|strongly\s+|usually\s+|generally\s+)?prefer\b"),
        Category.PREFERENCE,
    ),
    (re.compile(r"I\s+work\b"), Category.IDENTITY),
]
# "I am …" names a category but says as often how the user is today ("I'm always tired"):
# the model decides.
_STATEMENTS = [*_OUTRIGHT, (re.compile(r"I(?:\s+am|['’]m)\s+" + _PASSING), Category.IDENTITY)]


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
    """The pieces of a message that may each state one fact: its sentences, cut where a
    clause with a subject of its own begins, without the discourse markers around them ("ok
    so", "oh and", "lol", "funny enough") or a cleft's announcement ("the big thing is"), at
    least two words each.

    >>> pieces("maybe, the jeep leaves at 6 tho. also saturdays are out, i work at a milk tea shop")
    ['the jeep leaves at 6', 'saturdays are out', 'i work at a milk tea shop']
    >>> pieces("I'm the treasurer, funny enough, so I should be better at this lol")
    ["I'm the treasurer", 'I should be better at this']
    """
    out = []
    for sentence in sentences(text):
        for clause in _clauses(_ASIDE_RE.sub(",", sentence)):
            clause = _stated(_trimmed(clause))
            if len(clause.split()) >= _PIECE_MIN_WORDS:
                out.append(clause)
    return out


def _clauses(sentence: str) -> list[str]:
    """``sentence`` cut where a clause of its own begins (see ``_CLAUSE_RE``, ``_JOINED_RE``)."""
    out = []
    for clause in _CLAUSE_RE.split(sentence):
        start = 0
        for joint in _JOINED_RE.finditer(clause):
            if has_verb(clause[start : joint.start()]):
                out.append(clause[start : joint.start()])
                start = joint.end()
        out.append(clause[start:])
    return out


def _trimmed(clause: str) -> str:
    """``clause`` without the discourse markers that open or close it, a cleft's
    announcement, or a short opening aside with no verb ("One more thing, I take …").

    >>> _trimmed("Ah, and correction, the shop moved last year lol")
    'the shop moved last year'
    >>> _trimmed("The big thing is I'm saving for a laptop")
    "I'm saving for a laptop"
    >>> _trimmed("my wife handles most of it to be fair")
    'my wife handles most of it'

    """
    text = clause.strip()
    while True:
        lower = text.lower()
        phrase = next((p for p in _OPENING_PHRASES if lower.startswith(p)), None)
        word = _LEAD_WORD_RE.match(text)
        aside, comma, rest = text.partition(",")
        if phrase is not None:
            text = text[len(phrase) :].lstrip(" ,:;!.-")
        elif word is not None and word.group(1).lower() in _OPENERS:
            text = text[word.end() :]
        elif (cleft := _CLEFT_RE.match(text)) is not None:
            text = text[cleft.end() :]
        elif comma and _aside(aside) and has_verb(rest) and len(rest.split()) >= 3:
            text = rest.strip()
        else:
            break
    return _without_closers(text)


def _aside(words: str) -> bool:
    """Whether an opening chunk before a comma is an aside: at most four words, no verb, not
    a place or a time ("One problem,", "Ten minutes walk,"; not "In Lagos,")."""
    split = words.split()
    return 0 < len(split) <= 4 and not has_verb(words) and split[0].lower() not in _PREPOSITIONS


def _without_closers(text: str) -> str:
    """``text`` without the discourse markers that close it ("obviously lol", "I guess")."""
    words = text.split()
    cut = len(words)
    while cut:
        tail = [" ".join(words[max(cut - n, 0) : cut]).lower().strip(",.!…:;") for n in (3, 2)]
        if tail[0] in _CLOSING_PHRASES:
            cut -= 3
        elif tail[1] in _CLOSING_PHRASES:
            cut -= 2
        elif words[cut - 1].lower().strip(",.!…:;") in _CLOSERS:
            cut -= 1
        else:
            break
    return text if cut == len(words) else " ".join(words[:cut]).rstrip(" ,;:-")


def is_reaction(piece: str) -> bool:
    """Whether ``piece`` only reacts to what was said ("makes sense", "that's practical"):
    it opens on words that point back, and names no one, no number and nothing of the user's.
    Never a fact.

    >>> is_reaction("that makes sense"), is_reaction("That's my sister Ana")
    (True, False)
    """
    text = piece.strip()
    return _REACTION_RE.match(text) is not None and _NAMES_SOMETHING_RE.search(text) is None


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
    """Whom "we" includes beside the user, from their last two messages (newest last): the
    person they named together with themselves ("me and my partner", "my wife and I"), else
    "others". Someone merely mentioned is not "we": "so my wife isn't stuck with it … we're
    off to Estonia" is the user's unit, not their wife.

    >>> group_of(["just me and my partner", "hi"])
    'their partner'
    >>> group_of(["my wife and I moved"]), group_of(["my wife handles it. we're off to Estonia"])
    ('their wife', 'others')
    """
    for text in reversed(said_before[-2:]):
        found = _TOGETHER_RE.findall(text)
        if found:
            return f"their {next(w for w in found[-1] if w).lower()}"
    return "others"


def _kind(word: str) -> str:
    """Which pronoun may stand for a person word: f(emale), m(ale), p(lural), n(either)."""
    word = word.lower().removesuffix("-in-law")
    if word in _FEMALE:
        return "f"
    if word in _MALE:
        return "m"
    if word in _PLURAL or word in _GROUPS or (word.endswith("s") and word[:-1] in _NEUTRAL):
        return "p"
    if word.endswith("s") and word[:-1] in _FEMALE | _MALE:
        return "p"
    return "n"


def _named(mention: re.Match[str]) -> str:
    """A mention of someone as a fact names them: "my daughter Mia" → "User's daughter Mia"."""
    owner = "the" if mention.group(1).lower() == "the" else "User's"
    name = f" {mention.group(3)}" if mention.group(3) else ""
    return f"{owner} {mention.group(2).lower()}{name}"


def resolved(piece: str, before: Sequence[str]) -> str:
    """``piece`` with the "she", "he" or "they" that opens it named: the nearest person whom
    the pronoun fits in what the user said ``before`` it (their messages, the last one up to
    the piece), "she" → "User's daughter Mia"; a name they gave someone of theirs, with whose
    the person is. As it is when no one fits.

    >>> resolved("she loves dinosaurs", ["my daughter Mia turns 6. my husband bakes"])
    "User's daughter Mia loves dinosaurs"
    >>> resolved("they're twins", ["The boys are the hard part,"])
    'The boys are twins'
    >>> resolved("Zoe is lactose intolerant", ["a party for my daughter Zoe", "hi", "ok", ""])
    "User's daughter Zoe is lactose intolerant"
    """
    head = _HEAD_PRONOUN_RE.match(piece)
    if head is None:
        return _by_name(piece, "\n".join(before))
    pronoun = (head.group(1) or head.group(3)).lower()
    # "she" and "he" mean the nearest person they fit; "they" is as often a firm or a
    # hospital as people, so only a group the same message named is meant.
    near = "\n".join(before[-1:] if pronoun in ("they", "their") else before)
    fits = [m for m in _PERSON_RE.finditer(near) if _kind(m.group(2)) in _FITS[pronoun]]
    if not fits:
        return piece
    name = _named(fits[-1])
    name = name[:1].upper() + name[1:]
    if head.group(3):
        return f"{name}'s {piece[head.end() :]}"
    verb = _CONTRACTED.get((head.group(2) or "").lower())
    if verb == "is" and re.match(r"\s+(?:been|got|gone|had)\b", piece[head.end() :]):
        verb = "has"
    return f"{name}{' ' + verb if verb else ''}{piece[head.end() :]}"


def _by_name(piece: str, before: str) -> str:
    """``piece`` opening on a name the user gave someone of theirs before ("my daughter Zoe
    … Zoe is lactose intolerant"; chat may type it in lower case), with whose the person is
    said: "User's daughter Zoe"."""
    name = _HEAD_NAME_RE.match(piece)
    if name is None:
        return piece
    for mention in _PERSON_RE.finditer(before):
        named = mention.group(3) or ""
        if named.lower() == name.group(0).lower() and mention.group(1).lower() != "the":
            return _named(mention) + piece[name.end() :]
    return piece


def unresolved(piece: str) -> bool:
    """Whether ``piece`` still opens on "she" or "he" (or "her", "his"): whom it is about is
    not said, so it is no fact on its own. ("They" is left to the model: it is as often a
    firm whose doing is the user's news, "they extended it to nine months".)

    >>> unresolved("she loves dinosaurs"), unresolved("they moved it to April")
    (True, False)
    """
    head = _HEAD_PRONOUN_RE.match(piece)
    return head is not None and (head.group(1) or head.group(3)).lower() not in ("they", "their")


def points_back(piece: str) -> bool:
    """Whether ``piece`` means little out of its chat: it ends on a word that points at what
    was said ("I have a stall there", "I haven't bought it") or names a thing only by
    pointing ("that one", "up there"). Never a fact on its own.

    >>> points_back("my sister lives there"), points_back("my sister lives in Leeds")
    (True, False)
    """
    return _POINTS_BACK_RE.search(_without_closers(piece.rstrip(" .!?…"))) is not None


def tentative(piece: str) -> bool:
    """Whether ``piece`` only says what may be, or says it by halves: a possibility ("we
    could practise duets", "she might join", an answer that is a guess: "maybe the slow
    ones"), a verb with nothing after it ("he isn't", "he played"), a verb with no one before
    it ("bought it last year"). Never a fact.

    >>> tentative("my wife might join on Sundays"), tentative("he isn't"), tentative("she's 12")
    (True, True, False)
    """
    words = piece.strip(" .!?…").split()
    halves = len(words) <= 2 and _HEAD_PRONOUN_RE.match(piece) is not None
    guess = bool(words) and words[0].lower().strip(",") in _GUESSES and not has_verb(piece)
    return (
        _MAY_BE_RE.search(piece) is not None
        or guess
        or (halves and not any(ch.isdigit() for ch in piece))
        or (bool(words) and _PAST_HEAD_RE.match(words[0]) is not None)
    )


def asks_to_remember(piece: str) -> bool:
    """Whether ``piece`` asks to be remembered ("remember that …", "don't forget …") or says
    outright what a memory is for ("my name is …", "I prefer …", "I work …"): kept whatever
    the learned model says.

    >>> asks_to_remember("please remember that I'm vegan"), asks_to_remember("I prefer tea")
    (True, True)
    >>> asks_to_remember("I'm always tired")
    False
    """
    return _EXPLICIT_RE.match(piece) is not None or any(p.match(piece) for p, _ in _OUTRIGHT)


def as_fact(piece: str, group: str, said_at: datetime | None, before: Sequence[str] = ()) -> str:
    """``piece`` rephrased as a fact: third person, "we" named, a "she" or "he" that opens it
    named from what the user said ``before`` it, a trailing full stop or question mark
    dropped, the user named when the piece does not name them, and the day it was said when it
    dates itself ("last year").

    >>> from datetime import datetime
    >>> as_fact("we moved to Leeds last year.", "their partner", datetime(2023, 5, 8))
    'User and their partner moved to Leeds last year (said on 8 May 2023)'
    >>> as_fact("i'm a nurse", "others", None)
    'User is a nurse'
    >>> as_fact("The shop is in Yaba.", "others", None)
    'User mentioned that the shop is in Yaba'
    >>> as_fact("Chidi left last month", "others", None)
    'User mentioned that Chidi left last month'
    >>> as_fact("he studies agronomy", "others", None, before=["My son can help"])
    "User's son studies agronomy"
    """
    piece = resolved(piece, before)
    alone = _PERSON_RE.search(piece) is None and _NAME_RE.search(piece) is None
    text = said_in_third_person(piece, group, alone=alone).rstrip(" .!…,")
    if "User" not in text:
        # "the shop is in Yaba" is about the user's life too: the fact names whose words they
        # are, as every fact does, and never guesses whose the thing is ("the jeep leaves at
        # 6" is not the user's jeep). A name keeps its capital ("Seo-yeon is 7 months"): only
        # a word typed in lower case, or a determiner, is written in lower case after "that".
        first = text.split(" ", 1)[0].lower()
        if piece[:1].islower() or first in _DETERMINERS:
            text = text[:1].lower() + text[1:]
        text = f"User mentioned that {text}"
    if said_at is not None and _RELATIVE_TIME_RE.search(piece):
        text += f" (said on {said_at.day} {said_at:%B %Y})"
    return text


def as_answer(question: str, piece: str, group: str = "others") -> str:
    """A fragment the user gave as the answer to the assistant's ``question``, as a fact
    that quotes the question it answers (the fragment alone, "a kettlebell", says nothing),
    in the third person like any fact (``group``: see :func:`as_fact`).

    >>> as_answer("What equipment do you have?", "Just a kettlebell and a bar.")
    'User, asked "What equipment do you have?", said: just a kettlebell and a bar'
    >>> print(as_answer("How do you ship?", "our van", "their wife"))
    User, asked "How do you ship?", said: User and their wife's van
    """
    alone = _PERSON_RE.search(piece) is None and _NAME_RE.search(piece) is None
    answer = said_in_third_person(piece, group, alone=alone).rstrip(" .!…,")
    if answer.split(" ", 1)[0].lower() in _DETERMINERS | _HEDGES:
        answer = answer[:1].lower() + answer[1:]
    quoted = question.strip().replace('"', "'")
    return f'User, asked "{quoted}", said: {answer}'


__all__ = [
    "as_answer",
    "as_fact",
    "asks_to_remember",
    "confirms",
    "explicit_category",
    "group_of",
    "is_question",
    "is_reaction",
    "pieces",
    "points_back",
    "resolved",
    "sentences",
    "tentative",
    "unresolved",
    "word_before",
]
