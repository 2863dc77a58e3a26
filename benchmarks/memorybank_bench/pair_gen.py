"""Generated fact pairs for training and checking the duplicate judge's pair model.

Each pair is ``(a, b, label, family)``: save ``a``, then ``b``; the label says what ``b`` is to
``a`` (``duplicate``, ``update`` or ``distinct``, as in the data folder's README) and the family
names the template that made it. The vocabulary is written here, in general English about a
person's life (relatives, jobs, hobbies, places, tools, days, numbers): none of it is taken
from SICK or the development pairs. Every pool is split in two disjoint halves, so a model
trained on one half can be scored on words it never saw (:func:`generate` with ``half``).

>>> pairs = generate(seed=1, per_family=2)
>>> sorted({p.label for p in pairs})
['distinct', 'duplicate', 'update']
>>> generate(seed=1, per_family=2) == pairs
True
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class GeneratedPair:
    """One generated pair: save ``a``, then ``b``."""

    a: str
    b: str
    label: str
    family: str


_RELATIVES = (
    "brother cousin aunt uncle nephew niece grandmother grandfather neighbour roommate "
    "stepmother godson landlady flatmate sister-in-law mentor"
).split()
_JOBS = (
    "nurse pharmacist architect carpenter electrician librarian pilot accountant plumber "
    "journalist chemist translator surveyor dentist baker welder"
).split()
_CITIES = (
    "Lyon Porto Quebec Tallinn Osaka Adelaide Nairobi Lima Bergen Valencia Krakow Calgary "
    "Leipzig Hobart Accra Tampere"
).split()
_NAMES = (
    "Ingrid Mateo Farah Kenji Olu Greta Rafael Yusuf Leila Bram Nadia Tomas Signe Anouk "
    "Dmitri Keanu"
).split()
_TOOLS = (
    "Emacs Figma Notion Blender Trello Obsidian Godot Terraform Haskell Elixir Kotlin Julia "
    "Ansible Svelte Zig Clojure"
).split()
_DAYS = "Mondays Tuesdays Wednesdays Thursdays Fridays Saturdays Sundays weekends".split()
_HOBBIES = [
    ("collects", "vintage stamps"),
    ("builds", "model trains"),
    ("grows", "orchids"),
    ("knits", "wool scarves"),
    ("restores", "old radios"),
    ("paints", "watercolour landscapes"),
    ("brews", "ginger beer"),
    ("bakes", "sourdough loaves"),
    ("repairs", "antique clocks"),
    ("carves", "wooden spoons"),
    ("writes", "short poems"),
    ("trains", "sheepdogs"),
    ("photographs", "old bridges"),
    ("sews", "patchwork quilts"),
    ("keeps", "honey bees"),
    ("records", "bird songs"),
]
_DRINKS = (
    "oat milk|sparkling water|rooibos|mango juice|cold brew|kefir|lemonade|barley tea|"
    "cider|hot cocoa|tomato juice|kombucha|mint tea|soy milk|espresso|buttermilk"
).split("|")
_SPORTS = (
    "badminton squash rowing fencing archery curling bouldering lacrosse handball surfing "
    "judo cricket netball kayaking polo snooker"
).split()
_THINGS = (
    "bicycle|laptop|kettle|tent|camera|piano stool|toolbox|blender|scooter|backpack|"
    "printer|lawnmower|telescope|sewing machine|drone|microwave"
).split("|")
_ROOMS = (
    "attic garage cellar hallway pantry porch studio shed loft balcony basement workshop "
    "veranda greenhouse conservatory closet"
).split()
# Words that mean the same in a fact (for paraphrases) and values that cannot both hold.
_SYNONYM_VERBS = [
    ("enjoys", "likes"),
    ("adores", "loves"),
    ("purchased", "bought"),
    ("began", "started"),
    ("assists", "helps"),
    ("fixes", "repairs"),
    ("phones", "calls"),
    ("selected", "chose"),
    ("detests", "hates"),
    ("studies", "learns"),
    ("desires", "wants"),
    ("utilises", "uses"),
]
_SYNONYM_NOUNS = [
    ("flat", "apartment"),
    ("holiday", "vacation"),
    ("film", "movie"),
    ("sofa", "couch"),
    ("present", "gift"),
    ("physician", "doctor"),
    ("shop", "store"),
    ("job", "occupation"),
    ("automobile", "car"),
    ("infant", "baby"),
    ("pupil", "student"),
    ("journey", "trip"),
]
_SYNONYM_ADJECTIVES = [
    ("large", "big"),
    ("tiny", "small"),
    ("rapid", "quick"),
    ("costly", "expensive"),
    ("difficult", "hard"),
    ("glad", "happy"),
    ("ill", "sick"),
    ("silent", "quiet"),
]
_OPPOSITES = [
    ("quiet", "noisy"),
    ("early", "late"),
    ("warm", "cold"),
    ("cheap", "expensive"),
    ("indoor", "outdoor"),
    ("weekday", "weekend"),
    ("paper", "digital"),
    ("public", "private"),
]
_TIMES = [  # (before the noun, as a phrase after it)
    ("morning", "in the morning"),
    ("evening", "in the evening"),
    ("weekend", "at the weekend"),
    ("winter", "in winter"),
    ("summer", "in summer"),
    ("lunchtime", "at lunchtime"),
    ("night", "at night"),
    ("spring", "in spring"),
]
_ACTIVITIES = (
    "walks calls lectures swims rehearsals classes shifts lessons runs meetings trips workouts"
).split()
_COLOURS = "teal maroon beige olive navy crimson amber lilac".split()
_ORDINALS = "second third fourth fifth sixth seventh eighth ninth".split()

Family = Callable[[random.Random, dict[str, list[str]]], tuple[str, str, str]]


def _pick(rng: random.Random, pool: list[str], k: int = 1) -> list[str]:
    return rng.sample(pool, k)


def _hobby(rng: random.Random, pools: dict[str, list[str]]) -> tuple[str, str]:
    verb, obj = pools["hobbies"][rng.randrange(len(pools["hobbies"]))].split("|")
    return verb, obj


# -- duplicates ------------------------------------------------------------------------------


def _dup_verb_synonym(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    one, two = _pick(rng, p["verb_synonyms"])[0].split("|")
    thing = rng.choice([*p["drinks"], *p["sports"]])
    a, b = f"User {one} {thing}", f"User {two} {thing}"
    return (a, b, "duplicate") if rng.random() < 0.5 else (b, a, "duplicate")


def _dup_noun_synonym(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    one, two = _pick(rng, p["noun_synonyms"])[0].split("|")
    rel = rng.choice(p["relatives"])
    frame = rng.choice(
        [
            "User's {rel} mentioned the {n} last week",
            "User is saving up for a new {n}",
            "User's {rel} recommended the {n}",
        ]
    )
    a, b = frame.format(rel=rel, n=one), frame.format(rel=rel, n=two)
    return (a, b, "duplicate") if rng.random() < 0.5 else (b, a, "duplicate")


def _dup_adjective_synonym(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    one, two = _pick(rng, p["adjective_synonyms"])[0].split("|")
    thing = rng.choice(p["things"])
    frame = rng.choice(["User's {t} is {a}", "User owns a {a} {t}", "User wants a {a} {t}"])
    a, b = frame.format(t=thing, a=one), frame.format(t=thing, a=two)
    return (a, b, "duplicate") if rng.random() < 0.5 else (b, a, "duplicate")


def _dup_reorder(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    verb, obj = _hobby(rng, p)
    day, room = rng.choice(p["days"]), rng.choice(p["rooms"])
    a = f"User {verb} {obj} in the {room} on {day}"
    b = rng.choice(
        [f"User {verb} {obj} on {day} in the {room}", f"On {day} User {verb} {obj} in the {room}"]
    )
    return a, b, "duplicate"


def _dup_time_phrase(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    before, after = rng.choice(_TIMES)
    activity = rng.choice(p["activities"])
    verb = rng.choice(["prefers", "likes", "enjoys", "avoids", "schedules"])
    a = f"User {verb} {before} {activity}"
    b = rng.choice([f"User {verb} {activity} {after}", f"User {verb} to have {activity} {after}"])
    return (a, b, "duplicate") if rng.random() < 0.5 else (b, a, "duplicate")


def _dup_light(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    verb, obj = _hobby(rng, p)
    light = rng.choice(["currently", "really", "usually", "also", "actually", "generally"])
    a, b = f"User {verb} {obj}", f"User {light} {verb} {obj}"
    return (a, b, "duplicate") if rng.random() < 0.5 else (b, a, "duplicate")


def _dup_part(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    (v1, o1), (v2, o2) = (h.split("|") for h in _pick(rng, p["hobbies"], 2))
    return (
        f"User {v1} {o1} and {v2} {o2}",
        f"User {rng.choice([f'{v1} {o1}', f'{v2} {o2}'])}",
        ("duplicate"),
    )


def _dup_copula(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    kind, value = rng.choice(
        [("sport", rng.choice(p["sports"])), ("drink", rng.choice(p["drinks"]))]
        + [("editor", rng.choice(p["tools"])), ("city", rng.choice(p["cities"]))]
    )
    a, b = f"User's favourite {kind} is {value}", f"{value} is User's favourite {kind}"
    if value[0].islower():
        b = b[0].upper() + b[1:]
    return (a, b, "duplicate") if rng.random() < 0.5 else (b, a, "duplicate")


def _dup_passive(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    rel, thing = rng.choice(p["relatives"]), rng.choice(p["things"])
    verb, participle = rng.choice(
        [("repaired", "repaired"), ("sold", "sold"), ("built", "built"), ("painted", "painted")]
    )
    a = f"User's {rel} {verb} the {thing}"
    b = f"The {thing} was {participle} by User's {rel}"
    return (a, b, "duplicate") if rng.random() < 0.5 else (b, a, "duplicate")


def _dup_have(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    rel, name = rng.choice(p["relatives"]), rng.choice(p["names"])
    a = f"User's {rel} is named {name}"
    b = rng.choice([f"User has a {rel} named {name}", f"User has a {rel} called {name}"])
    return (a, b, "duplicate") if rng.random() < 0.5 else (b, a, "duplicate")


def _dup_progressive(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    tool, rel = rng.choice(p["tools"]), rng.choice(p["relatives"])
    a = f"User's {rel} is learning {tool}"
    b = f"User's {rel} learns {tool}"
    return (a, b, "duplicate") if rng.random() < 0.5 else (b, a, "duplicate")


# -- updates ---------------------------------------------------------------------------------


def _upd_value(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    rel = rng.choice(p["relatives"])
    frame, pool = rng.choice(
        [
            ("User's {rel} works as a {v}", p["jobs"]),
            ("User's {rel} lives in {v}", p["cities"]),
            ("User's favourite editor is {v}", p["tools"]),
            ("User drives a {v} van", p["colours"]),
            ("User's {rel} visits on {v}", p["days"]),
            ("User keeps the {v} key in the drawer", p["rooms"]),
        ]
    )
    one, two = _pick(rng, pool, 2)
    return frame.format(rel=rel, v=one), frame.format(rel=rel, v=two), "update"


def _upd_number(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    n, m = _pick(rng, [str(x) for x in range(2, 60)], 2)
    rel, thing = rng.choice(p["relatives"]), rng.choice(p["things"])
    frame = rng.choice(
        [
            "User's {rel} is {n} years old",
            "User paid {n} pounds for the {t}",
            "User lives on the {o} floor",
            "User's {rel} has {n} grandchildren",
            "User's locker number is {n}",
        ]
    )
    o1, o2 = _pick(rng, p["ordinals"], 2)
    return (
        frame.format(rel=rel, n=n, t=thing, o=o1),
        frame.format(rel=rel, n=m, t=thing, o=o2),
        "update",
    )


def _upd_negation(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    verb, obj = _hobby(rng, p)
    base = verb[:-2] if verb.endswith("shes") else verb[:-1]
    b = rng.choice(
        [
            f"User does not {base} {obj}",
            f"User no longer {verb} {obj}",
            f"User never {verb} {obj}",
            f"User doesn't {base} {obj} anymore",
        ]
    )
    return f"User {verb} {obj}", b, "update"


def _upd_ended(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    sport, tool = rng.choice(p["sports"]), rng.choice(p["tools"])
    c1, c2 = _pick(rng, p["cities"], 2)
    return rng.choice(
        [
            (f"User plays {sport} every week", f"User quit {sport}", "update"),
            (f"User plays {sport} every week", f"User stopped playing {sport}", "update"),
            (f"User lives in {c1}", f"User moved to {c2}", "update"),
            (f"User uses {tool} at work", f"User switched from {tool} to Vim at work", "update"),
            (
                f"User's {sport} club meets on Fridays",
                f"User's {sport} club was cancelled",
                "update",
            ),
        ]
    )


def _upd_opposite(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    one, two = rng.choice(_OPPOSITES)
    activity = rng.choice(p["activities"])
    frame = rng.choice(["User prefers {v} {a}", "User wants {v} {a} only"])
    a, b = frame.format(v=one, a=activity), frame.format(v=two, a=activity)
    return (a, b, "update") if rng.random() < 0.5 else (b, a, "update")


def _upd_time(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    (_, one), (_, two) = rng.sample(_TIMES, 2)
    verb, obj = _hobby(rng, p)
    rel = rng.choice(p["relatives"])
    frame = rng.choice(["User {v} {o} {t}", "User's {r} {v} {o} {t}"])
    return (
        frame.format(v=verb, o=obj, t=one, r=rel),
        frame.format(v=verb, o=obj, t=two, r=rel),
        "update",
    )


# -- distinct --------------------------------------------------------------------------------


def _dis_sibling(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    frame, pool = rng.choice(
        [
            ("User plays {v} on Sundays", p["sports"]),
            ("User drinks {v} with lunch", p["drinks"]),
            ("User has visited {v}", p["cities"]),
            ("User is learning {v}", p["tools"]),
            ("User owns a {v}", p["things"]),
            ("User cleaned the {v} yesterday", p["rooms"]),
        ]
    )
    one, two = _pick(rng, pool, 2)
    return frame.format(v=one), frame.format(v=two), "distinct"


def _dis_relative(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    r1, r2 = _pick(rng, p["relatives"], 2)
    job, city = rng.choice(p["jobs"]), rng.choice(p["cities"])
    frame = rng.choice(["User's {r} works as a {j}", "User's {r} lives in {c}"])
    return frame.format(r=r1, j=job, c=city), frame.format(r=r2, j=job, c=city), "distinct"


def _dis_added(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    verb, obj = _hobby(rng, p)
    extra = rng.choice(
        [
            f" on {rng.choice(p['days'])}",
            f" with their {rng.choice(p['relatives'])}",
            f" and drinks {rng.choice(p['drinks'])}",
            f" in the {rng.choice(p['rooms'])}",
        ]
    )
    return f"User {verb} {obj}", f"User {verb} {obj}{extra}", "distinct"


def _dis_roles(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    n1, n2 = _pick(rng, p["names"], 2)
    r1, r2 = _pick(rng, p["relatives"], 2)
    verb = rng.choice(["tutors", "drives", "phones", "visits", "coaches", "pays"])
    return rng.choice(
        [
            (f"{n1} {verb} {n2} every week", f"{n2} {verb} {n1} every week", "distinct"),
            (f"User's {r1} {verb} User's {r2}", f"User's {r2} {verb} User's {r1}", "distinct"),
            (
                f"User's {r1} is older than the {r2}",
                f"User's {r2} is older than the {r1}",
                "distinct",
            ),
        ]
    )


def _dis_attributes(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    c1, c2 = _pick(rng, p["colours"], 2)
    t1, t2 = _pick(rng, p["things"], 2)
    return (
        f"User has a {c1} {t1} and a {c2} {t2}",
        f"User has a {c2} {t1} and a {c1} {t2}",
        ("distinct"),
    )


def _dis_place(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    thing, room = rng.choice(p["things"]), rng.choice(p["rooms"])
    one, two = rng.sample(["under the bed in", "on the shelf in", "behind the door of", "near"], 2)
    return (
        f"User keeps the {thing} {one} the {room}",
        f"User keeps the {thing} {two} the {room}",
        ("distinct"),
    )


def _dis_topic(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    (v1, o1), (v2, o2) = (h.split("|") for h in _pick(rng, p["hobbies"], 2))
    day = rng.choice(p["days"])
    return f"User {v1} {o1} on {day}", f"User {v2} {o2} on {day}", "distinct"


def _dis_summary(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    (v1, o1), (v2, o2) = (h.split("|") for h in _pick(rng, p["hobbies"], 2))
    rel, room, day = rng.choice(p["relatives"]), rng.choice(p["rooms"]), rng.choice(p["days"])
    old = f"User {v1} {o1} in the {room} with their {rel} on {day}"
    new = rng.choice([f"User {v1} {o2}", f"User {v2} {o1}", f"User's {rel} {v1} {o1}"])
    return old, new, "distinct"


def _dis_mixed(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    (v1, o1), (v2, o2) = (h.split("|") for h in _pick(rng, p["hobbies"], 2))
    r1, r2 = _pick(rng, p["relatives"], 2)
    old = f"User's {r1} {v1} {o1} and User's {r2} {v2} {o2}"
    return old, rng.choice([f"User's {r1} {v2} {o2}", f"User's {r2} {v1} {o1}"]), "distinct"


def _dis_sibling_passive(rng: random.Random, p: dict[str, list[str]]) -> tuple[str, str, str]:
    t1, t2 = _pick(rng, p["things"], 2)
    rel = rng.choice(p["relatives"])
    verb = rng.choice(["repaired", "sold", "painted", "cleaned"])
    return f"The {t1} was {verb} by User's {rel}", f"User's {rel} {verb} the {t2}", "distinct"


FAMILIES: dict[str, Family] = {
    "dup_verb_synonym": _dup_verb_synonym,
    "dup_noun_synonym": _dup_noun_synonym,
    "dup_adjective_synonym": _dup_adjective_synonym,
    "dup_reorder": _dup_reorder,
    "dup_time_phrase": _dup_time_phrase,
    "dup_light": _dup_light,
    "dup_part": _dup_part,
    "dup_copula": _dup_copula,
    "dup_passive": _dup_passive,
    "dup_have": _dup_have,
    "dup_progressive": _dup_progressive,
    "upd_value": _upd_value,
    "upd_number": _upd_number,
    "upd_negation": _upd_negation,
    "upd_ended": _upd_ended,
    "upd_opposite": _upd_opposite,
    "upd_time": _upd_time,
    "dis_sibling": _dis_sibling,
    "dis_relative": _dis_relative,
    "dis_added": _dis_added,
    "dis_roles": _dis_roles,
    "dis_attributes": _dis_attributes,
    "dis_place": _dis_place,
    "dis_topic": _dis_topic,
    "dis_summary": _dis_summary,
    "dis_mixed": _dis_mixed,
    "dis_sibling_passive": _dis_sibling_passive,
}


def _pools(half: int | None) -> dict[str, list[str]]:
    """Every vocabulary pool, or the even (``half=0``) or odd (``half=1``) half of each."""
    raw: dict[str, list[str]] = {
        "relatives": _RELATIVES,
        "jobs": _JOBS,
        "cities": _CITIES,
        "names": _NAMES,
        "tools": _TOOLS,
        "days": _DAYS,
        "hobbies": [f"{v}|{o}" for v, o in _HOBBIES],
        "drinks": _DRINKS,
        "sports": _SPORTS,
        "things": _THINGS,
        "rooms": _ROOMS,
        "verb_synonyms": [f"{a}|{b}" for a, b in _SYNONYM_VERBS],
        "noun_synonyms": [f"{a}|{b}" for a, b in _SYNONYM_NOUNS],
        "adjective_synonyms": [f"{a}|{b}" for a, b in _SYNONYM_ADJECTIVES],
        "activities": _ACTIVITIES,
        "colours": _COLOURS,
        "ordinals": _ORDINALS,
    }
    if half is None:
        return {k: list(v) for k, v in raw.items()}
    return {k: list(v)[half::2] for k, v in raw.items()}


def generate(seed: int = 0, per_family: int = 60, half: int | None = None) -> list[GeneratedPair]:
    """``per_family`` pairs from each family (duplicates repeated in the same draw dropped),
    reproducible from ``seed``; with ``half`` 0 or 1, from that half of every word pool."""
    rng = random.Random(seed)
    pools = _pools(half)
    seen: set[tuple[str, str]] = set()
    out: list[GeneratedPair] = []
    for name, family in FAMILIES.items():
        for _ in range(per_family):
            a, b, label = family(rng, pools)
            if (a, b) in seen or a == b:
                continue
            seen.add((a, b))
            out.append(GeneratedPair(a, b, label, name))
    return out


__all__ = ["FAMILIES", "GeneratedPair", "generate"]
