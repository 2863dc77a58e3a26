"""Third-person rephrasing of saved facts (seed 000): "I prefer TypeScript" becomes "User
prefers TypeScript", or is refused with guidance when the first person cannot be rephrased
unambiguously.

Pure functions, no I/O. :mod:`memorybank.rules.policy` re-exports the public names:

* :func:`is_first_person` tells whether text has a standalone first-person pronoun;
* :func:`strip_lead_in` removes "Remember that", "Save this:" and the like;
* :func:`to_third_person` rewrites a fact in the third person, or raises a
  :class:`~memorybank.errors.ValidationError` (``field="content"``) saying how to rephrase it.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from memorybank.errors import ValidationError

# --------------------------------------------------------------------------------------------
# First-person detection
# --------------------------------------------------------------------------------------------

# Only lower- or title-case forms count (plus the capital "I"): "US", "ME" and "MY" are far more
# often a country, a state or an illness than a shouted pronoun. "\w" boundaries and the extra
# characters keep "Iowa", "I/O", "I-95", "me@example.com", "about.me" and "determine" out.
_PRONOUN_RE = re.compile(
    r"(?<![\w/&@#\-])(?<!\w\.)"
    r"(I|[Mm]y|[Mm]e|[Mm]ine|[Mm]yself|[Ww]e|[Uu]s|[Oo]ur|[Oo]urs|[Oo]urselves)"
    r"(?![\w/&@#\-]|\.\w)"
)
_PLURAL_PRONOUNS = frozenset({"we", "us", "our", "ours", "ourselves"})
# A capital I after these words is a Roman numeral: "World War I", "Type I diabetes".
_NUMERAL_PREFIXES = frozenset(
    """type phase war part chapter class stage level grade act volume vol book article section
    tier round season episode title schedule appendix annex division league category""".split()
)
# "a gold mine", "the mine": a noun, not the pronoun.
_MINE_NOUN_PREFIXES = frozenset(
    """a an the this that these those his her its their your our my whose coal gold silver
    copper diamond salt iron land tin uranium open-pit abandoned old""".split()
)
_QUOTED_RE = re.compile(r'"[^"\n]*"|“[^“”\n]*”')
_PREV_WORD_RE = re.compile(r"([^\W\d_][\w'’-]*)[ \t]+$")
_NEXT_WORD_RE = re.compile(r"[ \t]+([^\W\d_][\w'’]*)")


@dataclass(frozen=True, slots=True)
class _Token:
    start: int
    end: int
    word: str


def _quoted_spans(text: str) -> list[tuple[int, int]]:
    """Double-quoted spans: titles and quotations keep their own pronouns ("I Will Survive").

    A quote spanning the whole text is the content itself, so it is not exempt.
    """
    whole = (len(text) - len(text.lstrip()), len(text.rstrip()))
    return [m.span() for m in _QUOTED_RE.finditer(text) if m.span() != whole]


def _prev_word(text: str, start: int) -> str | None:
    # A bounded window keeps this linear on long text; no useful word is longer.
    m = _PREV_WORD_RE.search(text, max(0, start - 64), start)
    return m.group(1) if m else None


def _next_word(text: str, end: int) -> str | None:
    m = _NEXT_WORD_RE.match(text, end)
    return m.group(1) if m else None


def _is_roman_numeral(text: str, start: int, end: int) -> bool:
    if text[end : end + 1] in ("'", "’"):
        return False  # "I'm", "I'd": a contraction is always the pronoun
    prev = _prev_word(text, start)
    if prev is None:
        return False
    if prev.lower() in _NUMERAL_PREFIXES:
        # "World War I ended" vs "the type I like": lower-case prefixes need a non-verb after.
        return prev[0].isupper() or not _looks_like_predicate(_next_word(text, end))
    # "Elizabeth I." or "Henry I, king": a capitalised word, then the numeral ends the phrase.
    return prev[0].isupper() and (end == len(text) or text[end] in ",.;:!?)")


def _pronoun_tokens(text: str) -> list[_Token]:
    masked = _quoted_spans(text)
    mask_starts = [a for a, _ in masked]  # spans are sorted and disjoint
    tokens = []
    for m in _PRONOUN_RE.finditer(text):
        start, end = m.span()
        word = m.group(1)
        i = bisect.bisect_right(mask_starts, start) - 1
        if i >= 0 and start < masked[i][1]:
            continue
        if word == "I" and _is_roman_numeral(text, start, end):
            continue
        if word.lower() == "mine":
            prev = _prev_word(text, start)
            if prev is not None and prev.lower() in _MINE_NOUN_PREFIXES:
                continue
        tokens.append(_Token(start, end, word))
    return tokens


def is_first_person(text: str) -> bool:
    """Whether ``text`` contains a standalone first-person pronoun (I, me, my, we, us, our …).

    Whole words only; "I" only as a capital; quoted titles, Roman numerals, "US" and nouns
    like "a gold mine" do not count.

    >>> is_first_person("I prefer tea"), is_first_person("We use Postgres")
    (True, True)
    >>> is_first_person("User lives in Iowa and studies World War I")
    False
    """
    return bool(_pronoun_tokens(text))


# --------------------------------------------------------------------------------------------
# Third-person rephrasing
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ThirdPersonResult:
    """The text to store, and whether :func:`to_third_person` changed it."""

    text: str
    rephrased: bool


def _words(s: str) -> frozenset[str]:
    return frozenset(s.split())


# Verbs in base form we conjugate after "I" ("I study" → "User studies"). A closed list: an
# unknown word after "I" may not be a verb at all ("I and my wife …"), and guessing would store
# broken text silently, while refusing costs the caller one retry.
_BASE_VERBS = _words(
    """
    accept admire adore advise agree aim allow analyse analyze answer appreciate approve argue
    arrange arrive ask aspire assist attend avoid bake begin believe belong bike blog borrow
    bowl box break breed brew bring build buy call camp care carry celebrate change chat check
    choose clean climb close coach code collect come commute compete complain consider consult
    contribute cook coordinate cover create cycle dance date deal debug decide defend deliver
    depend deploy design despise develop die disagree dislike do document donate draw dream
    dress drink drive earn eat edit email embed enjoy exercise expect experiment explain explore
    fancy favor favour fear feed feel fight find finish fish fix fly focus follow forget
    freelance game garden get give go golf grow guide handle hang hate have hear help hike hire
    hold hope host hunt identify ignore imagine intend invest jog join journal kayak keep kill
    knit know lack lead learn leave lecture lend lift like listen live look lose love maintain
    make manage marry meditate meet mentor message mind miss moderate moonlight need nurse
    observe obsess offer open operate organise organize oversee own pack paint park participate
    pay perform photograph plan play post practice practise pray prefer prepare present produce
    program promise protect publish race raise recommend record recycle refuse relax rely
    remember rent repair report represent require research rest review ride rock row run sail
    save say search see sell send serve share shop shred sing skate ski sleep smoke snowboard
    speak specialise specialize spend stand start stay stop stream struggle study suffer support
    surf swim take talk teach tend test text think train translate travel trust try turn tutor
    understand use value vape visit volunteer vote wait wake walk want watch wear win wish
    wonder work worry write
    """
)
_AMBIGUOUS_TENSE = _words(
    """read quit put cut set let hit shut hurt cost bet split spread upset cast broadcast
    forecast burst fit rid shed wed thrust"""
)
_IRREGULAR_PAST = _words(
    """ate became began bought brought built came caught chose did drank drove fell felt flew
    forgot fought found gave got grew had heard held kept knew led left lent lost made meant met
    paid ran rode said sang sat saw sold sent slept spent spoke stood stole swam taught thought
    threw told took understood went woke won wore wrote"""
)
_PAST_PARTICIPLES = _IRREGULAR_PAST | _words(
    """been better become begun chosen done driven eaten flown forgotten given gone gotten grown
    known seen spoken taken written"""
)
_ADVERBS = _words(
    """always never usually often sometimes rarely seldom generally typically normally mostly
    mainly really truly also just still definitely absolutely actually strongly only currently
    now frequently occasionally regularly primarily especially hardly barely even already
    personally genuinely totally"""
)
# Words after "I" that change for a third-person subject; the keys use a straight apostrophe.
_AUXILIARIES = {
    "am": "is",
    "have": "has",
    "do": "does",
    "don't": "doesn't",
    "haven't": "hasn't",
}
# Words after "I" that stay as they are: past tense, modals and their negations.
_UNCHANGED = _words(
    """was wasn't did didn't had hadn't can can't cannot could couldn't will won't would
    wouldn't shall shan't should shouldn't may might mightn't must mustn't"""
)
# Lead-ins people put before the fact ("Remember that …"), removed before rephrasing. A bare
# verb needs "that", a colon/dash/comma, or a first-person word next, so that "Note apps are
# handy" keeps its "Note".
# Matched only at the start of what is left (strip_lead_in); its runs of spaces and commas
# are taken possessively, so a text of 20,000 of them is read once (issue 44).
_LEAD_IN_RE = re.compile(
    r"\s*+(?:(?:please|pls|hey|oh|ok|okay|and|also)[\s,]++)*+"
    r"(?:remember(?:\s+this)?|save\s+this|don['’]?t\s+forget(?:\s+this)?"
    r"|do\s+not\s+forget(?:\s+this)?|keep\s+in\s+mind(?:\s+this)?|note(?:\s+this)?"
    r"|note\s+down|fyi|for\s+the\s+record|just\s+so\s+you\s+know)"
    r"(?:\s*+[:,\-–—]\s*+|\s++that\s++|\s++(?=(?-i:I|[Mm]y)\b))",
    re.IGNORECASE,
)
# A run of punctuation is read once, from its first character (linear: issue 44).
_SENTENCE_END_RE = re.compile(r"(?<![.!?…])[.!?…]++[\"”’')\]]*+[ \t]+|\n[ \t\r\n]*")
_BULLET_RE = re.compile(r"[ \t]*(?:[-*•][ \t]+)?")
_CONTRACTION_RE = re.compile(r"['’](m|ve|d|ll)\b", re.IGNORECASE)
_PREDICATE_RE = re.compile(r"[ \t]+([A-Za-z]+(?:['’][A-Za-z]+)?)\b(?!['’])")
_BE_AFTER_I_RE = re.compile(r"[ \t]+(am|was|wasn['’]t)\b")


def _third_person_s(verb: str) -> str:
    """'study' → 'studies', 'watch' → 'watches', 'go' → 'goes', 'play' → 'plays'."""
    special = {"have": "has", "do": "does", "go": "goes", "be": "is"}
    if verb in special:
        return special[verb]
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(verb) > 1 and verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _match_case(source: str, word: str) -> str:
    """``word`` in the case style of ``source`` ("PREFER" → "PREFERS", "Prefer" → "Prefers")."""
    if len(source) > 1 and source.isupper():
        return word.upper()
    if source[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def _looks_like_predicate(word: str | None) -> bool:
    if word is None:
        return False
    key = word.lower().replace("’", "'")
    return (
        key in _AUXILIARIES
        or key in _UNCHANGED
        or key in _BASE_VERBS
        or key in _AMBIGUOUS_TENSE
        or key in _IRREGULAR_PAST
        or key in _ADVERBS
        or (key.endswith("ed") and len(key) > 3)
    )


_VERB_WORD_RE = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
# Who takes a verb's bare form: "I walk", "can walk" (not "ten minutes walk").
_BARE_SUBJECTS = _words("i we you they can could will would should must may might do don't")
_DETERMINERS = _words("a an the my your his her its our their this that these those")
_BE_FORMS = _words("is are was were be been am isn't aren't wasn't weren't")
# "it's", "that's": a verb after these; "Meera's" is a possessive.
_POINTING = _words("it that he she there what who here this everything something nothing")


def finite_verb(word: str) -> bool:
    """Whether ``word`` is a verb a clause can turn on (a form of "be", an auxiliary, a
    known verb in any person or tense, a contraction that carries one), as far as this
    module's closed lists tell.

    >>> [finite_verb(w) for w in ("studies", "it's", "Meera's", "walk", "salary")]
    [True, True, False, True, False]
    """
    key = word.lower().replace("’", "'")
    stem, apostrophe, tail = key.partition("'")
    if apostrophe:
        return tail in ("m", "re", "ve", "ll", "d", "t") or (tail == "s" and stem in _POINTING)
    if key in _BE_FORMS or _looks_like_predicate(key) and key not in _ADVERBS:
        return True
    if key.endswith("ies"):
        return key[:-3] + "y" in _BASE_VERBS
    if key.endswith("es") and key[:-2] in _BASE_VERBS:
        return True
    return key.endswith("s") and key[:-1] in _BASE_VERBS


def has_verb(text: str) -> bool:
    """Whether ``text`` has a finite verb: it says something of someone, where a fragment
    ("not yet", "september 1", "less salary") only answers or names. A verb's bare form
    counts after a subject that takes it ("I walk"): "ten minutes walk" names a distance; a
    form in -ed after "a" or "the" describes ("a hired hall").

    >>> has_verb("my shifts are long"), has_verb("Ten minutes walk"), has_verb("I also have two")
    (True, False, True)
    """
    words = [word.lower() for word in _VERB_WORD_RE.findall(text)]
    # The word before a verb, past any adverbs: "I also have", "we really like".
    before = [""] * len(words)
    for index in range(1, len(words)):
        prior = words[index - 1]
        before[index] = before[index - 1] if prior in _ADVERBS else prior
    return any(
        finite_verb(word)
        and (word not in _BASE_VERBS or before[index] in _BARE_SUBJECTS)
        and not (word.endswith("ed") and before[index] in _DETERMINERS)
        for index, word in enumerate(words)
    )


def _first_person_error(
    quoted: str, reason: str = "", example: str = "'User prefers …' or 'User's name is …'"
) -> ValidationError:
    return ValidationError(
        f"content is written in the first person ('{quoted}'){reason}; rephrase it in the "
        f"third person, e.g. {example}",
        field="content",
    )


def _pronoun_error(token: _Token) -> ValidationError:
    word = token.word if token.word == "I" else token.word.lower()
    if word in _PLURAL_PRONOUNS:
        # "we" hides who is meant; the fix is naming the group, not just the grammar.
        return _first_person_error(
            word, "", "'User prefers …' or, for a group, 'User's team uses Postgres'"
        )
    return _first_person_error(word)


_Edit = tuple[int, int, str]


@dataclass(frozen=True, slots=True)
class _Head:
    edits: list[_Edit]
    end: int


def _rephrase_i_head(text: str, token: _Token) -> _Head | ValidationError:
    """Rewrite a sentence that starts with "I …", or say why it cannot be done."""
    contraction = _CONTRACTION_RE.match(text, token.end)
    if contraction is not None:
        kind = contraction.group(1).lower()
        end = contraction.end()
        if kind == "d":
            # "I'd like" is "would"; "I'd been", "I'd better", "I'd moved" are "had".
            after = end
            while (m := _PREDICATE_RE.match(text, after)) and m.group(1).lower() in _ADVERBS:
                after = m.end()
            nxt = _PREDICATE_RE.match(text, after)
            word = nxt.group(1).lower() if nxt else ""
            past = word in _PAST_PARTICIPLES or (
                word.endswith("ed") and len(word) > 3 and word not in _BASE_VERBS
            )
            verb = "had" if past else "would"
        else:
            verb = {"m": "is", "ve": "has", "ll": "will"}[kind]
        return _Head([(token.start, end, f"User {verb}")], end)

    pos = token.end
    while True:
        m = _PREDICATE_RE.match(text, pos)
        if m is None:
            return _first_person_error("I", " with no verb after 'I' to rephrase")
        word = m.group(1)
        if word.lower() not in _ADVERBS:
            break
        pos = m.end()
    apostrophe = "’" if "’" in word else "'"
    key = word.lower().replace("’", "'")
    start, end = m.span(1)
    if key in _AUXILIARIES:
        replacement = _AUXILIARIES[key].replace("'", apostrophe)
    elif key in _UNCHANGED:
        replacement = key
    elif key in _BASE_VERBS:
        replacement = _third_person_s(key)
    elif key in _AMBIGUOUS_TENSE:
        return _first_person_error(
            f"I {word}",
            f" and '{word}' may be past or present tense",
            f"'User {key} …' (past) or 'User {_third_person_s(key)} …' (present)",
        )
    elif key in _IRREGULAR_PAST or (key.endswith("ed") and len(key) > 3):
        replacement = key
    else:
        return _first_person_error(f"I {word}", " and cannot be rephrased automatically")
    edits: list[_Edit] = [(token.start, token.end, "User")]
    if replacement != key:
        edits.append((start, end, _match_case(word, replacement)))
    return _Head(edits, end)


def _rephrase_head(text: str, token: _Token) -> _Head | ValidationError:
    if token.word == "I":
        return _rephrase_i_head(text, token)
    if token.word.lower() == "my" and re.match(r"[ \t]+\w", text[token.end :]):
        return _Head([(token.start, token.end, "User's")], token.end)
    return _pronoun_error(token)


def _replace_pronoun(text: str, token: _Token, at_head: bool) -> _Edit:
    """Rewrite a first-person pronoun once the sentence's subject is already "User"."""
    lower = token.word.lower()
    if lower in _PLURAL_PRONOUNS:
        raise _pronoun_error(token)
    end = token.end
    if token.word == "I":
        contraction = _CONTRACTION_RE.match(text, end)
        be = _BE_AFTER_I_RE.match(text, end)
        if contraction is not None:
            kind = contraction.group(1).lower()
            end = contraction.end()
            tail = "'" if "'" in contraction.group(0) else "’"
            replacement = "they are" if kind == "m" else f"they{tail}{kind}"
        elif be is not None:
            end = be.end()
            verb = be.group(1).lower()
            replacement = "they " + {"am": "are", "was": "were"}.get(
                verb, verb.replace("wasn", "weren")
            )
        else:
            replacement = "they"
    else:
        replacement = {"my": "their", "me": "them", "mine": "theirs", "myself": "themselves"}[lower]
    if at_head or token.word[:1].isupper() and token.word != "I":
        replacement = replacement[:1].upper() + replacement[1:]
    return token.start, end, replacement


def _sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence. A full stop before a lower-case word ("e.g. my") is not
    treated as a sentence end, since the next word would not start a sentence."""
    spans = []
    start = 0
    for m in _SENTENCE_END_RE.finditer(text):
        following = text[m.end() : m.end() + 1]
        if m.group(0)[0] != "\n" and following.islower():
            continue
        spans.append((start, m.end()))
        start = m.end()
    spans.append((start, len(text)))
    return spans


def strip_lead_in(text: str) -> str:
    """``text`` without leading "Remember that", "Save this:", "Don't forget that" and the like.

    >>> strip_lead_in("Remember that I prefer dark mode")
    'I prefer dark mode'
    >>> strip_lead_in("Note apps are handy")
    'Note apps are handy'
    """
    # Where the last letter or digit is: a lead-in that reaches it would leave nothing.
    last = next((i for i in range(len(text) - 1, -1, -1) if text[i].isalnum()), -1)
    start = 0
    # From one position to the next, never a copy of the rest per lead-in (issue 44: text
    # of thousands of lead-ins was copied once for each).
    while (m := _LEAD_IN_RE.match(text, start)) is not None and m.end() <= last:
        start = m.end()
    return text[start:]


def to_third_person(content: str) -> ThirdPersonResult:
    """Rephrase first-person content in the third person, or refuse with guidance.

    Lead-ins such as "Remember that" are removed. A sentence starting with "I …" or "My …"
    gets "User" as its subject; later pronouns become they/them/their. Content without
    first-person pronouns passes unchanged. Anything else in the first person ("We should …",
    "Call me …", "Honestly I think …") raises :class:`ValidationError` (``field="content"``).

    >>> to_third_person("I prefer using TypeScript for all my projects").text
    'User prefers using TypeScript for all their projects'
    >>> to_third_person("Save this: I'm building a SaaS product")
    ThirdPersonResult(text='User is building a SaaS product', rephrased=True)
    >>> to_third_person("User likes tea")
    ThirdPersonResult(text='User likes tea', rephrased=False)
    """
    text = strip_lead_in(content)
    stripped = text != content
    tokens = _pronoun_tokens(text)
    if not tokens:
        if stripped:
            text = text[:1].upper() + text[1:]
            if is_first_person(text):  # capitalising a stray "i" made it a pronoun
                raise _first_person_error("I")
        return ThirdPersonResult(text=text, rephrased=stripped)

    edits: list[_Edit] = []
    anchored = False  # whether "User" is already the subject, so "they" has a referent
    index = 0
    for start, end in _sentences(text):
        first_index = index
        while index < len(tokens) and tokens[index].start < end:
            index += 1
        sentence_tokens = tokens[first_index:index]
        if not sentence_tokens:
            continue
        head = _BULLET_RE.match(text, start)
        head_pos = head.end() if head else start
        first = sentence_tokens[0]
        rest = sentence_tokens
        if first.start == head_pos:
            result = _rephrase_head(text, first)
            if isinstance(result, _Head):
                edits += result.edits
                anchored = True
                rest = [t for t in sentence_tokens if t.start >= result.end]
            elif not anchored:
                raise result
            # Anchored and unparseable ("I frobnicate …"): singular "They" needs no
            # conjugation, so plain pronoun replacement below is still correct.
        elif not anchored:
            raise _pronoun_error(first)
        edits += [_replace_pronoun(text, t, t.start == head_pos) for t in rest]

    pieces: list[str] = []
    cursor = 0
    for a, b, replacement in sorted(edits):
        pieces += [text[cursor:a], replacement]
        cursor = b
    out = "".join(pieces) + text[cursor:]
    out = out[:1].upper() + out[1:]
    # Rewriting can shift what a neighbouring word means ("Me I." loses the capitalised word
    # that made "I" a numeral); never hand back text that still reads as first person.
    if is_first_person(out):
        raise _pronoun_error(_pronoun_tokens(out)[0])
    return ThirdPersonResult(text=out, rephrased=True)


# Chat is often typed in lower case: a lone "i" is the pronoun.
_LOWER_I_RE = re.compile(r"(?<![\w/&@#\-.'’])i(?=['’](?:m|ve|d|ll)\b|[^\w/&@#\-'’]|$)")


# "we'd", "we're": the plural verb stays as it is, only the pronoun is named.
_PLURAL_CONTRACTION_RE = re.compile(r"['’](re|ve|d|ll)\b", re.IGNORECASE)
_PLURAL_VERBS = {"re": "are", "ve": "have", "d": "would", "ll": "will"}


def _said_edit(text: str, token: _Token, group: str, alone: bool) -> list[_Edit]:
    """How one pronoun of something the user said names its person: the user ("User",
    "User's") or the user with the people they speak for (``group``)."""
    lower = token.word.lower()
    if token.word == "I":
        head = _rephrase_i_head(text, token)
        return head.edits if isinstance(head, _Head) else [(token.start, token.end, "User")]
    if lower in ("we", "us"):
        contraction = _PLURAL_CONTRACTION_RE.match(text, token.end)
        if lower == "we" and contraction is not None:
            verb = _PLURAL_VERBS[contraction.group(1).lower()]
            return [(token.start, contraction.end(), f"User and {group} {verb}")]
        return [(token.start, token.end, f"User and {group}")]
    if lower in ("our", "ours"):
        named = "User's" if group == "others" else f"User and {group}'s"
        return [(token.start, token.end, named)]
    if lower in ("myself", "ourselves"):
        return [(token.start, token.end, "themselves")]
    if alone:  # "User loves their job": "User" said before it, and no one else to mean
        return [(token.start, token.end, {"my": "their", "mine": "theirs"}.get(lower, "them"))]
    return [(token.start, token.end, "User" if lower == "me" else "User's")]


def said_in_third_person(sentence: str, group: str = "others", *, alone: bool = True) -> str:
    """Something the user said in passing, in the third person, never refused: each
    first-person pronoun names its person, the first person plural the user with ``group``,
    the people they speak for ("their partner"; "others" when no one is known). Every "I" is
    "User" with its verb agreeing, so that a sentence with someone else in it never leaves a
    "they" to guess at; "my" and "me" are "their" and "them" only once the user is named
    and when no one else is (``alone``), else "User's" and "User".
    A lone lower-case "i" is the pronoun (chat is often typed so).

    >>> said_in_third_person("we moved to Leeds last year", "their partner")
    'User and their partner moved to Leeds last year'
    >>> said_in_third_person("training until 5:30, i'm on the volleyball varsity")
    'Training until 5:30, User is on the volleyball varsity'
    >>> said_in_third_person("Our budget is about £300", "their partner")
    "User and their partner's budget is about £300"
    >>> said_in_third_person("I prefer tea for my mornings")
    'User prefers tea for their mornings'
    >>> said_in_third_person("my uncle sends money and I design logos for my clients", alone=False)
    "User's uncle sends money and User designs logos for User's clients"
    """
    text = _LOWER_I_RE.sub("I", sentence.strip())
    tokens = _pronoun_tokens(text)
    first_i = next((t.start for t in tokens if t.word.lower() not in _PLURAL_PRONOUNS), len(text))
    edits = [
        edit
        for token in tokens
        for edit in _said_edit(text, token, group, alone and token.start > first_i)
    ]
    pieces: list[str] = []
    cursor = 0
    for a, b, replacement in sorted(edits):
        if a < cursor:
            continue  # a contraction already consumed
        pieces += [text[cursor:a], replacement]
        cursor = b
    out = "".join(pieces) + text[cursor:]
    return out[:1].upper() + out[1:]


__all__ = [
    "ThirdPersonResult",
    "is_first_person",
    "finite_verb",
    "has_verb",
    "said_in_third_person",
    "strip_lead_in",
    "to_third_person",
]
