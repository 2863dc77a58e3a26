"""What a question asks, read from its text: the full-text search terms every store shares,
and the people it names among the memories' speakers.

Stores stem and index documents with their own engines (FTS5's porter tokenizer, PostgreSQL's
english configuration); what they share is how a user's question becomes search terms. The
dates and periods a question names are :mod:`memorybank.rules.timeparse`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)

# Words so common that OR-ing them into a full-text query only makes it slower and noisier;
# BM25's IDF would give them almost no weight anyway.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can could did didn't do does doesn't doing don't
    down during each few for from further had hadn't has hasn't have haven't having he he'd
    he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've if
    in into is isn't it it's its itself let's me more most mustn't my myself no nor not of off
    on once only or other ought our ours ourselves out over own same shan't she she'd she'll
    she's should shouldn't so some such than that that's the their theirs them themselves then
    there there's these they they'd they'll they're they've this those through to too under
    until up very was wasn't we we'd we'll we're we've were weren't what what's when when's
    where where's which while who who's whom why why's with won't would wouldn't you you'd
    you'll you're you've your yours yourself yourselves
    user users
    """.split()
)
# "user" and "users" are listed because facts are written "User prefers …": the word is in
# nearly every memory, so it carries no weight in BM25 while making the index read its whole
# posting list (tens of milliseconds at a million memories).


def query_terms(text: str, *, max_terms: int = 32) -> list[str]:
    """The distinct, lower-cased content words of ``text``, in order.

    >>> query_terms("What did Caroline research about adoption agencies?")
    ['caroline', 'research', 'adoption', 'agencies']
    """
    seen: dict[str, None] = {}
    for match in _WORD.finditer(text.lower()):
        word = match.group(0).replace("’", "'")
        # Possessives index as the bare word ("Caroline's" → "caroline").
        if word.endswith("'s"):
            word = word[:-2]
        if word in STOPWORDS:
            continue
        word = word.replace("'", "")
        if word and word not in seen:
            seen[word] = None
        if len(seen) >= max_terms:
            break
    return list(seen)


def word_spans(text: str) -> list[tuple[str, int, int]]:
    """Every word of ``text``, stop words included, read as :func:`query_terms` reads it (lower
    case, a possessive "'s" dropped, no apostrophes), with where it stands in ``text``.

    >>> word_spans("User's sister")
    [('user', 0, 6), ('sister', 7, 13)]
    """
    spans = []
    for match in _WORD.finditer(text):
        word = match.group(0).lower().replace("’", "'")
        if word.endswith("'s"):
            word = word[:-2]
        spans.append((word.replace("'", ""), match.start(), match.end()))
    return spans


@functools.lru_cache(maxsize=1024)
def _name_pattern(name: str) -> re.Pattern[str]:
    """``name`` as whole words, with an optional possessive ("Caroline", "Caroline's")."""
    words = r"\s+".join(re.escape(part) for part in name.split())
    return re.compile(rf"(?<![^\W_])({words})(['’]s)?(?![^\W_])", re.IGNORECASE)


def speakers_named(query: str, speakers: Iterable[str | None]) -> list[str]:
    """Those of ``speakers`` (each a candidate's ``metadata["speaker"]``, or ``None``) that
    ``query`` names, each once.

    >>> speakers_named("What did Caroline's sister paint?", ["Melanie", "Caroline", None])
    ['Caroline']
    """
    distinct = dict.fromkeys(s for s in speakers if s is not None)
    return [s for s in distinct if _name_pattern(s).search(query)]


def neutral_query(query: str, names: Sequence[str]) -> str:
    """``query`` with the people it names replaced by "they"/"their".

    Who is asked about is matched through the memories' speaker (see ``speaker_weight``);
    the name in the text would match every turn that person said (stored as
    ``"<speaker>: …"``) and every greeting to them, and pull the query's embedding towards
    that person rather than towards what it asks.

    >>> neutral_query("What did Caroline's sister tell Melanie?", ["Caroline", "Melanie"])
    'What did their sister tell they?'
    """
    for name in names:
        query = _name_pattern(name).sub(lambda m: "their" if m.group(2) else "they", query)
    return query
