"""More kinds of fact pairs for the judge than the slot templates hold
(:mod:`memorybank_bench.judge_slots`): changes said with a verb of their own, paraphrases that
share few words, two facts of one kind that are both true, and the near misses of each.

* **changes** (update): "owns a car" / "sold their car", "teaches yoga" / "doesn't teach yoga
  anymore", "is 41" / "turned 42", "charges 40 euros" / "raised the price to 55 euros", "is a
  junior designer" / "was made senior designer", "takes the bus to work" / "walks to work these
  days", "likes jazz" / "has gone off jazz";
* **paraphrases** (duplicate): voice, nominalisation, synonyms, reordering, numbers written out,
  abbreviations, denials said two ways ("doesn't drink milk" / "avoids drinking milk");
* **both true** (distinct): two medicines, two jobs, two handles, a work and a home phone, two
  appointments the same day, two savings goals, two languages learnt (even "now"), two homes,
  two dates; another person's fact in the same slot; a fact next to one on a related topic
  ("is learning Portuguese" / "moved to Lisbon");
* **the written profiles** (``benchmarks/data/profiles_*.jsonl``): two facts of one user are
  distinct; the same fact with another number, or ended ("no longer"), is an update.

Everything is written here in general English about everyday lives; no sentence comes from a
scored set (``judge_data.training_set`` drops any pair that says one all the same).

>>> pairs = variety_pairs(seed=2, count=300)
>>> sorted({p.label for p in pairs})
['distinct', 'duplicate', 'update']
>>> variety_pairs(seed=2, count=300) == pairs
True
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from pathlib import Path

from memorybank_bench.judge_slots import TrainingPair
from memorybank_bench.judge_vocab import NAMES, PLACES, RELATIVES, SLOTS

Make = Callable[[random.Random, str], TrainingPair]

# (third person, base form, -ing form) of things people do.
ACTIVITIES = [
    ("plays tennis", "play tennis", "playing tennis"),
    ("teaches yoga classes", "teach yoga classes", "teaching yoga classes"),
    ("gives guitar lessons", "give guitar lessons", "giving guitar lessons"),
    (
        "coaches a youth football team",
        "coach a youth football team",
        "coaching a youth football team",
    ),
    ("smokes", "smoke", "smoking"),
    (
        "drinks coffee in the morning",
        "drink coffee in the morning",
        "drinking coffee in the morning",
    ),
    ("eats meat", "eat meat", "eating meat"),
    ("goes to the gym before work", "go to the gym before work", "going to the gym before work"),
    (
        "volunteers at an animal shelter",
        "volunteer at an animal shelter",
        "volunteering at an animal shelter",
    ),
    ("sings in a church choir", "sing in a church choir", "singing in a church choir"),
    ("tutors maths students", "tutor maths students", "tutoring maths students"),
    ("writes a weekly newsletter", "write a weekly newsletter", "writing a weekly newsletter"),
    ("runs a podcast about films", "run a podcast about films", "running a podcast about films"),
    ("bakes cakes to order", "bake cakes to order", "baking cakes to order"),
    ("works night shifts", "work night shifts", "working night shifts"),
    (
        "drives for a ride-hailing app",
        "drive for a ride-hailing app",
        "driving for a ride-hailing app",
    ),
    (
        "swims laps on Sunday mornings",
        "swim laps on Sunday mornings",
        "swimming laps on Sunday mornings",
    ),
    (
        "plays the violin in an orchestra",
        "play the violin in an orchestra",
        "playing the violin in an orchestra",
    ),
    ("sells jewellery online", "sell jewellery online", "selling jewellery online"),
    ("walks the neighbour's dog", "walk the neighbour's dog", "walking the neighbour's dog"),
    ("takes sleeping pills", "take sleeping pills", "taking sleeping pills"),
    (
        "keeps chickens in the garden",
        "keep chickens in the garden",
        "keeping chickens in the garden",
    ),
    ("rents out a spare room", "rent out a spare room", "renting out a spare room"),
    (
        "commutes to the city every day",
        "commute to the city every day",
        "commuting to the city every day",
    ),
    ("cooks dinner for the family", "cook dinner for the family", "cooking dinner for the family"),
    ("plays in a darts league", "play in a darts league", "playing in a darts league"),
    ("fasts during the week", "fast during the week", "fasting during the week"),
    (
        "streams video games at night",
        "stream video games at night",
        "streaming video games at night",
    ),
    ("mentors junior engineers", "mentor junior engineers", "mentoring junior engineers"),
    (
        "lifts weights three times a week",
        "lift weights three times a week",
        "lifting weights three times a week",
    ),
    ("wears glasses", "wear glasses", "wearing glasses"),
    ("uses a standing desk", "use a standing desk", "using a standing desk"),
    ("drinks alcohol at weekends", "drink alcohol at weekends", "drinking alcohol at weekends"),
    ("rides a motorbike to work", "ride a motorbike to work", "riding a motorbike to work"),
    (
        "cleans offices in the evening",
        "clean offices in the evening",
        "cleaning offices in the evening",
    ),
    (
        "grows tomatoes on the balcony",
        "grow tomatoes on the balcony",
        "growing tomatoes on the balcony",
    ),
]
ENDED = [
    "{s} no longer {third}",
    "{s} doesn't {base} anymore",
    "{s} does not {base} any more",
    "{s} stopped {ing}",
    "{s} gave up {ing}",
    "{s} has quit {ing}",
    "{s} quit {ing} last year",
    "{s} has stopped {ing} for good",
    "{s} isn't {ing} these days",
]
RESUMED = ["{s} {third} again", "{s} started {ing} again", "{s} went back to {ing}"]

# Things a person owns (with and without the article) and how they part with them.
OWNED = [
    ("a car", "car"),
    ("a motorbike", "motorbike"),
    ("a flat in the city centre", "flat"),
    ("a boat", "boat"),
    ("a piano", "piano"),
    ("a horse", "horse"),
    ("a food truck", "food truck"),
    ("a vintage camera", "camera"),
    ("a caravan", "caravan"),
    ("a cafe", "cafe"),
    ("an allotment", "allotment"),
    ("a holiday cottage", "cottage"),
    ("an electric scooter", "scooter"),
    ("a gaming PC", "gaming PC"),
    ("a dog", "dog"),
    ("a bicycle", "bicycle"),
]
HAS = ["{s} owns {a}", "{s} has {a}", "{s} bought {a}", "{s} is the owner of {a}"]
PARTED = [
    "{s} sold their {n}",
    "{s} sold the {n}",
    "{s} got rid of their {n}",
    "{s} gave away their {n}",
    "{s} no longer has {a}",
    "{s} doesn't own {a} anymore",
    "{s} had to sell their {n}",
    "{s} doesn't have {a} any more",
]

COMMUTE = [  # (third person, -ing form)
    ("takes the bus", "taking the bus"),
    ("takes the train", "taking the train"),
    ("takes a boda boda", "taking a boda boda"),
    ("takes a minibus taxi", "taking a minibus taxi"),
    ("cycles", "cycling"),
    ("walks", "walking"),
    ("drives", "driving"),
    ("gets a lift", "getting a lift"),
    ("takes the tram", "taking the tram"),
    ("rides a scooter", "riding a scooter"),
    ("takes the ferry", "taking the ferry"),
    ("runs", "running"),
]
DESTINATIONS = ["work", "the office", "the market", "school", "university", "the gym", "the shop"]
COMMUTE_CHANGED = [
    "{s} {mode} to {to} these days",
    "{s} {mode} to {to} now",
    "{s} has started {ing} to {to}",
    "{s} switched to {ing} to {to}",
    "{s} now {mode} to {to}",
    "These days {s} {mode} to {to}",
]
HABIT_TIMES = ["every morning", "every day", "on weekdays", "most days", ""]

NUMBER_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
).split()
TENS = {
    20: "twenty",
    30: "thirty",
    40: "forty",
    50: "fifty",
    60: "sixty",
    70: "seventy",
    80: "eighty",
}


def words(n: int) -> str:
    """A number written out ("forty-two")."""
    if n < 21:
        return NUMBER_WORDS[n]
    tens, ones = divmod(n, 10)
    return TENS[tens * 10] + ("" if not ones else "-" + NUMBER_WORDS[ones])


def ordinal(n: int) -> str:
    """42 → "42nd"."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


PRICED = [
    ("charges {m} for a haircut", "raised the price of a haircut to {m}", "haircut"),
    ("charges {m} an hour for tutoring", "raised their tutoring rate to {m} an hour", "tutoring"),
    ("sells their bread for {m} a loaf", "now sells a loaf for {m}", "bread"),
    ("pays {m} a month for the gym", "pays {m} a month for the gym now", "gym"),
    ("earns {m} a month", "got a raise and earns {m} a month", "salary"),
    ("pays {m} in rent each month", "now pays {m} in rent", "rent"),
    ("charges {m} per lesson", "put their lesson price up to {m}", "lessons"),
    ("spends {m} a week on groceries", "spends about {m} a week on groceries now", "groceries"),
]
CURRENCIES = ["euros", "dollars", "pounds", "rand", "shillings", "pesos", "cedis", "rupees"]

COUNTED = [  # (stored with {n}, said again with {n})
    ("{s} runs {n} km every Saturday", "{s} runs {n} km on Saturdays now"),
    ("{s} has {n} grandchildren", "{s} now has {n} grandchildren"),
    ("{s} works {n} hours a week", "{s} works {n} hours a week these days"),
    ("{s} has {n} cats", "{s} has {n} cats now"),
    ("{s}'s team has {n} people", "{s}'s team grew to {n} people"),
    ("{s} sleeps {n} hours a night", "{s} sleeps about {n} hours a night now"),
    ("{s} owns {n} bikes", "{s} is down to {n} bikes"),
]

RANKS = [  # (before, after, field)
    ("junior", "senior", "designer"),
    ("junior", "senior", "developer"),
    ("assistant", "associate", "professor"),
    ("associate", "full", "professor"),
    ("trainee", "qualified", "accountant"),
    ("sous", "head", "chef"),
    ("deputy", "head", "teacher"),
    ("staff", "charge", "nurse"),
    ("second", "first", "officer"),
    ("lecturer", "senior lecturer", ""),
    ("sergeant", "inspector", ""),
    ("analyst", "team lead", ""),
    ("associate", "partner", ""),
    ("intern", "full-time engineer", ""),
    ("assistant", "branch", "manager"),
]
RANK_HELD = [
    "{s} is a {r}",
    "{s} works as a {r}",
    "{s}'s job title is {r}",
    "{s} is employed as a {r}",
]
RANK_CHANGED = [
    "{s} was made {r}",
    "{s} was promoted to {r}",
    "{s} got promoted to {r}",
    "{s} is now a {r}",
    "{s} became a {r}",
    "{s} has been made {r}",
]

FIELDS = (
    "economics|statistics|history|biology|law|nursing|computer science|philosophy|chemistry|"
    "geography|accounting|music|sociology|engineering|journalism|psychology"
).split("|")
MAJOR = ["{s} is majoring in {f}", "{s} studies {f} at university", "{s} is doing a degree in {f}"]
MAJOR_CHANGED = [
    "{s} switched their major to {f}",
    "{s} changed their degree to {f}",
    "{s} transferred to the {f} programme",
    "{s} now studies {f}",
]
MAJOR_NEAR = [
    "{s} is taking an elective in {f}",
    "{s} is minoring in {f}",
    "{s} went to a talk about {f}",
]

LIKED = (
    "jazz|horror films|spicy food|camping|reality TV|running|crowded bars|cold weather|"
    "podcasts|board games|opera|sushi"
).split("|")
LIKES = ["{s} loves {x}", "{s} really likes {x}", "{s} is a big fan of {x}", "{s} enjoys {x}"]
GONE_OFF = [
    "{s} has gone off {x}",
    "{s} can't stand {x} anymore",
    "{s} doesn't like {x} these days",
    "{s} no longer enjoys {x}",
    "{s} has lost interest in {x}",
]
DISLIKES = ["{s} hates {x}", "{s} can't stand {x}", "{s} dislikes {x}"]
COME_ROUND = [
    "{s} has come round to {x}",
    "{s} actually enjoys {x} now",
    "{s} likes {x} these days",
]

STATUS = [  # (before, after): one person's status, changed
    ("{s} is engaged to {n}", "{s} married {n}"),
    ("{s} is engaged to {n}", "{s} and {n} got married"),
    ("{s} is dating {n}", "{s} and {n} broke up"),
    ("{s} is married to {n}", "{s} and {n} divorced"),
    ("{s} is pregnant", "{s} had the baby"),
    ("{s} is expecting a baby", "{s} gave birth to a son"),
    ("{s} is single", "{s} started seeing {n}"),
    ("{s} is renting a flat", "{s} bought their first house"),
    ("{s} is looking for a job", "{s} found a job at a bakery"),
    ("{s} is unemployed", "{s} got a job as a cashier"),
    ("{s} is a student", "{s} graduated last month"),
    ("{s} is training for a half marathon", "{s} ran the half marathon"),
    ("{s} is recovering from knee surgery", "{s} has fully recovered from the knee surgery"),
    ("{s} is waiting for a visa", "{s} got their visa"),
    ("{s} is on parental leave", "{s} went back to work after parental leave"),
    ("{s} eats meat", "{s} has gone vegan"),
    ("{s} eats meat", "{s} went vegetarian last year"),
    ("{s} is vegetarian", "{s} started eating fish again"),
    ("{s} drinks a lot of coffee", "{s} switched to decaf"),
    ("{s} works in an office", "{s} works from home now"),
    ("{s} works full-time", "{s} went part-time"),
    ("{s} lives with their parents", "{s} moved out of their parents' house"),
]

# Facts of one kind that are both true (a person holds many of them).
MANY = [
    (
        "{s} takes {x}",
        "metformin|lisinopril|an inhaler|vitamin D|insulin|statins|blood thinners|"
        "antihistamines|iron tablets|thyroid medication",
    ),
    (
        "{s} is learning {x}",
        "Spanish|Portuguese|Japanese|Arabic|Swahili|French|Korean|Mandarin|German|Italian|Turkish|Greek",
    ),
    (
        "{s} plays {x}",
        "the guitar|the piano|chess|tennis|volleyball|the drums|cricket|the saxophone|poker|bridge",
    ),
    ("{s} has a {x}", "dog|cat|parrot|rabbit|tortoise|goldfish|hamster|pony"),
    (
        "{s} is saving up for {x}",
        "a gaming laptop|a new bike|a trip to Japan|a wedding|a deposit on a flat|a car|"
        "driving lessons|a sofa",
    ),
    ("{s} is allergic to {x}", "peanuts|penicillin|cats|shellfish|pollen|latex|bee stings|dust"),
    (
        "{s} has {x}",
        "asthma|eczema|migraines|high blood pressure|type 2 diabetes|a bad back|arthritis|insomnia",
    ),
    (
        "{s} volunteers at {x}",
        "a food bank|a library|a hospice|a soup kitchen|a youth club|an animal shelter",
    ),
    ("{s} speaks {x}", "Hindi|Polish|Yoruba|Dutch|Tagalog|Zulu|Russian|Portuguese|Amharic"),
    (
        "{s} follows {x} on social media",
        "a cooking channel|a chess streamer|a news site|a climbing gym",
    ),
    (
        "{s} has a subscription to {x}",
        "a streaming service|a meal kit|a gym|a newspaper|a cloud drive",
    ),
    ("{s} collects {x}", "stamps|vinyl records|coins|comic books|postcards|sneakers"),
]
NOW_OR_ALSO = ["", "", " now", " these days", " as well", " too"]

JOBS2 = (
    "barista|tutor|delivery driver|nurse|bookkeeper|translator|photographer|cleaner|"
    "lifeguard|web designer|waiter|dog walker"
).split("|")
TWO_JOBS = [
    ("{s} works as a {a} on weekdays", "{s} works as a {b} at weekends"),
    ("{s} is a {a}", "{s} has a second job as a {b}"),
    ("{s} works as a {a}", "{s} also works part-time as a {b}"),
    ("{s} is a part-time {a}", "{s} is a part-time {b}"),
]
PLATFORMS = ["GitHub", "Instagram", "Twitter", "Discord", "Steam", "LinkedIn", "Reddit", "TikTok"]
APPOINTMENTS = [
    "a dentist appointment",
    "a haircut",
    "a job interview",
    "a parents' evening",
    "a physio session",
    "a driving lesson",
    "a vet appointment",
    "a call with the bank",
]
WEEKDAYS = "Monday Tuesday Wednesday Thursday Friday Saturday".split()
HOMES = ["a flat in {c}", "a holiday home in {c}", "a cabin near {c}", "a room in {c}"]
DATES = [
    "{p} birthday is on {d}",
    "{p} wedding anniversary is on {d}",
    "{p} son's birthday is on {d}",
    "{p} daughter's birthday is on {d}",
    "{p} mother's birthday is on {d}",
    "{p} lease ends on {d}",
]
MONTHS = (
    "January February March April May June July August September October November December".split()
)

# Two facts on a related topic, both true (a near miss of a change).
RELATED = [
    ("{s} is learning {lang}", "{s} moved to {city}"),
    ("{s} is saving up for {goal}", "{s} is learning to play chess online"),
    ("{s} takes the {mode} to work", "{s} likes hiking in the mountains"),
    ("{s} is a nurse", "{s} works at the regional hospital"),
    ("{s} is vegetarian", "{s} loves Italian food"),
    ("{s} plays the piano", "{s} listens to jazz while working"),
    ("{s} works as a teacher", "{s} is studying for a master's degree"),
    ("{s} has a dog", "{s} goes running in the park"),
    ("{s} lives in {city}", "{s} is learning {lang}"),
    ("{s} drives to work", "{s} is afraid of flying"),
    ("{s} moved to {city}", "{s} is looking for a new dentist"),
    ("{s} works at a bank", "{s} is saving up for {goal}"),
]
LANGS = "Portuguese|Spanish|French|German|Italian|Dutch|Polish|Japanese|Korean|Swahili".split("|")
GOALS = "a gaming laptop|a new bike|a trip to Peru|a wedding|a deposit|a camera".split("|")
MODES = "train|bus|tram|metro|ferry".split("|")

# Paraphrases: each group is one fact said in ways that share few words.
SAME = [
    [
        "{s} was raised by their grandparents",
        "{s}'s grandparents brought them up",
        "{s} grew up with their grandparents",
    ],
    ["{s} doesn't drink milk", "{s} avoids drinking milk", "{s} never drinks milk"],
    ["{s} doesn't eat beef", "{s} avoids eating beef", "{s} never eats beef"],
    ["{s} doesn't eat sugar", "{s} avoids sugar", "{s} cut sugar out of their diet"],
    ["{s} plays the violin", "{s} is a violinist"],
    ["{s} teaches chemistry", "{s} is a chemistry teacher"],
    ["{s} is a keen cyclist", "{s} loves cycling", "{s} is passionate about cycling"],
    ["{s} smokes", "{s} is a smoker"],
    ["{s} writes novels", "{s} is a novelist", "{s} is an author of novels"],
    ["{s} has three children", "{s} has 3 kids", "{s} is a parent of three"],
    ["{s} has two sisters", "{s} has 2 sisters"],
    ["{s} is 35 years old", "{s} is thirty-five", "{s} is aged 35"],
    ["{s} runs 10 km a day", "{s} runs ten kilometres every day"],
    [
        "{s} goes to church on Sundays",
        "On Sundays {s} goes to church",
        "{s} attends church every Sunday",
    ],
    ["{s} is a certified public accountant", "{s} is a CPA", "{s} works as a chartered accountant"],
    ["{s} works as a GP", "{s} is a family doctor", "{s} is a general practitioner"],
    ["{s} has a PhD in physics", "{s} holds a doctorate in physics"],
    ["{s} lives in New York City", "{s} lives in NYC", "{s} is a New Yorker"],
    ["{s} works for the NHS", "{s} is employed by the National Health Service"],
    ["{s} is a big fan of science fiction", "{s} loves sci-fi", "{s} enjoys science fiction a lot"],
    ["{s} is afraid of dogs", "{s} has a fear of dogs", "Dogs scare {s}"],
    ["{s} is terrified of spiders", "Spiders frighten {s}", "{s} has a phobia of spiders"],
    [
        "{s} prefers tea to coffee",
        "{s} would rather drink tea than coffee",
        "{s} likes tea more than coffee",
    ],
    ["{s} is fluent in Italian", "{s} speaks Italian fluently", "{s} speaks perfect Italian"],
    [
        "{s} was born in 1987",
        "{s}'s year of birth is 1987",
        "{s} was born in nineteen eighty-seven",
    ],
    ["{s} got married in 2015", "{s}'s wedding was in 2015", "{s} has been married since 2015"],
    ["{s} commutes by train", "{s} takes the train to work", "{s} goes to work by rail"],
    ["{s} works the night shift", "{s} works nights", "{s} is on night shifts"],
    ["{s} is a paramedic on night duty", "{s} works night shifts as a paramedic"],
    ["{s} owns a small bakery", "{s} runs their own bakery", "{s} is the owner of a little bakery"],
    [
        "{s} builds furniture as a hobby",
        "{s}'s hobby is making furniture",
        "In their free time {s} makes furniture",
    ],
    [
        "{s} loves cooking curry more than anything",
        "{s}'s favourite dish to cook is curry",
        "Curry is what {s} most likes to cook",
    ],
    [
        "{s} has a labrador named Biscuit",
        "{s}'s dog Biscuit is a labrador",
        "Biscuit, {s}'s dog, is a labrador",
    ],
    ["{s} is a Buddhist and meditates daily", "{s} practises Buddhism and meditates every day"],
    [
        "{s} is a teacher at a primary school",
        "{s} teaches at a primary school",
        "{s} works as a primary school teacher",
    ],
    [
        "{s} is a software engineer at a fintech startup",
        "{s} writes software for a fintech startup",
        "{s} works as a developer at a fintech start-up",
    ],
    [
        "{s} is a lawyer at a big firm in Chicago",
        "{s} works as an attorney for a large Chicago firm",
    ],
    ["{s} is a nurse at a hospital in Leeds", "{s} works as a hospital nurse in Leeds"],
    ["{s} hates waking up early", "{s} is not a morning person", "{s} dislikes early mornings"],
    ["{s} doesn't like crowds", "{s} avoids crowded places", "{s} finds crowds stressful"],
    ["{s} is colour blind", "{s} cannot tell some colours apart"],
    ["{s} is left-handed", "{s} writes with their left hand", "{s} is a lefty"],
    ["{s} is vegan", "{s} eats no animal products", "{s} follows a plant-based diet"],
    [
        "{s} has been sober for five years",
        "{s} stopped drinking alcohol five years ago",
        "{s} hasn't had a drink in 5 years",
    ],
    [
        "{s}'s mother passed away last year",
        "{s} lost their mum last year",
        "{s}'s mum died last year",
    ],
    ["{s} sold their car", "{s} got rid of their car", "{s}'s car was sold"],
    ["{s} quit smoking", "{s} gave up cigarettes", "{s} stopped smoking"],
    ["{s} moved to Berlin", "{s} relocated to Berlin", "{s} now lives in Berlin"],
    ["{s} got a puppy", "{s} has a new puppy", "{s} adopted a puppy"],
    [
        "{s} is allergic to penicillin",
        "Penicillin gives {s} an allergic reaction",
        "{s} has a penicillin allergy",
    ],
    [
        "{s} earns 3,000 euros a month",
        "{s}'s monthly salary is 3000 euros",
        "{s} makes three thousand euros a month",
    ],
    ["{s} wakes up at 6am", "{s} gets up at six in the morning", "{s} is up at 6 every morning"],
    ["{s} is the eldest of four siblings", "{s} is the oldest of four children"],
    [
        "{s} studied medicine at university",
        "{s} has a medical degree",
        "{s} went to medical school",
    ],
    ["{s} prefers short answers", "{s} likes answers to be brief", "{s} wants replies kept short"],
    ["{s} is married to Kofi", "{s}'s husband is Kofi", "Kofi is {s}'s husband"],
    ["{s}'s daughter is called Amara", "{s} has a daughter named Amara", "Amara is {s}'s daughter"],
    ["{s} is learning to drive", "{s} is taking driving lessons"],
    ["{s} is saving for a house", "{s} is putting money aside to buy a home"],
    ["{s} usually cycles to the office", "{s} bikes to work most days"],
    ["{s} keeps bees", "{s} is a beekeeper", "{s} looks after beehives"],
    [
        "{s} works remotely for a Dutch company",
        "{s} works from home for a company in the Netherlands",
    ],
    ["{s} takes insulin for diabetes", "{s} is diabetic and uses insulin"],
    ["{s} rarely eats out", "{s} hardly ever goes to restaurants"],
    ["{s} can't swim", "{s} never learned to swim", "{s} does not know how to swim"],
    ["{s} is retired", "{s} no longer works", "{s} has retired from work"],
    ["{s} visits their parents every weekend", "Every weekend {s} goes to see their parents"],
]


def _someone(rng: random.Random) -> str:
    relative = rng.choice(RELATIVES)
    return f"User's {relative} {rng.choice(NAMES)}" if rng.random() < 0.6 else f"User's {relative}"


def _cap(text: str) -> str:
    text = " ".join(text.split())
    return text[0].upper() + text[1:]


def _fill(template: str, **values: str) -> str:
    return _cap(template.format(**values))


def _ended(rng: random.Random, s: str) -> TrainingPair:
    third, base, ing = rng.choice(ACTIVITIES)
    a = _fill("{s} {third}", s=s, third=third)
    roll = rng.random()
    if roll < 0.2:  # someone else stopped: the user still does
        other = _someone(rng)
        b = _fill(rng.choice(ENDED), s=other, third=third, base=base, ing=ing)
        return TrainingPair(a, b, "distinct", "variety:ended:someone-else")
    if roll < 0.35:  # another activity ended: this one stays
        t2, b2, i2 = rng.choice([x for x in ACTIVITIES if x[0] != third])
        b = _fill(rng.choice(ENDED), s=s, third=t2, base=b2, ing=i2)
        return TrainingPair(a, b, "distinct", "variety:ended:another")
    b = _fill(rng.choice(ENDED), s=s, third=third, base=base, ing=ing)
    if roll < 0.5:  # taken up again
        return TrainingPair(
            b, _fill(rng.choice(RESUMED), s=s, third=third, ing=ing), "update", "variety:resumed"
        )
    if roll < 0.58:  # the ending said twice
        other = _fill(rng.choice(ENDED), s=s, third=third, base=base, ing=ing)
        if other != b:
            return TrainingPair(b, other, "duplicate", "variety:ended:twice")
    return TrainingPair(a, b, "update", "variety:ended")


def _parted(rng: random.Random, s: str) -> TrainingPair:
    a_, n = rng.choice(OWNED)
    a = _fill(rng.choice(HAS), s=s, a=a_)
    roll = rng.random()
    if roll < 0.15:
        b = _fill(rng.choice(PARTED), s=_someone(rng), a=a_, n=n)
        return TrainingPair(a, b, "distinct", "variety:parted:someone-else")
    if roll < 0.3:
        a2, n2 = rng.choice([x for x in OWNED if x[1] != n])
        b = _fill(rng.choice(PARTED), s=s, a=a2, n=n2)
        return TrainingPair(a, b, "distinct", "variety:parted:another")
    if roll < 0.4:  # owning one more thing
        a2, _ = rng.choice([x for x in OWNED if x[1] != n])
        return TrainingPair(a, _fill(rng.choice(HAS), s=s, a=a2), "distinct", "variety:owns-more")
    b = _fill(rng.choice(PARTED), s=s, a=a_, n=n)
    return TrainingPair(a, b, "update", "variety:parted")


def _commute(rng: random.Random, s: str) -> TrainingPair:
    (m1, _), (m2, i2) = rng.sample(COMMUTE, 2)
    to = rng.choice(DESTINATIONS)
    when = rng.choice(HABIT_TIMES)
    a = _fill("{s} {m} to {to} {when}", s=s, m=m1, to=to, when=when)
    roll = rng.random()
    if roll < 0.2:  # another destination: both true
        to2 = rng.choice([d for d in DESTINATIONS if d != to])
        b = _fill("{s} {m} to {to}", s=s, m=m2, to=to2)
        return TrainingPair(a, b, "distinct", "variety:commute:elsewhere")
    if roll < 0.32:
        b = _fill(rng.choice(COMMUTE_CHANGED), s=_someone(rng), mode=m2, ing=i2, to=to)
        return TrainingPair(a, b, "distinct", "variety:commute:someone-else")
    if roll < 0.4:
        b = _fill("{s} gets to {to} by {how}", s=s, to=to, how=m1.split()[-1])
        if m1.startswith("takes"):
            return TrainingPair(a, b, "duplicate", "variety:commute:same")
    b = _fill(rng.choice(COMMUTE_CHANGED), s=s, mode=m2, ing=i2, to=to)
    return TrainingPair(a, b, "update", "variety:commute")


def _age(rng: random.Random, s: str) -> TrainingPair:
    n = rng.randint(18, 79)
    a = _fill(rng.choice(["{s} is {n}", "{s} is {n} years old", "{s}'s age is {n}"]), s=s, n=str(n))
    roll = rng.random()
    if roll < 0.25:
        b = _fill(
            rng.choice(
                ["{s} is {w}", "{s} is {w} years old", "{s} is aged {n}", "{s} is {n} years of age"]
            ),
            s=s,
            w=words(n),
            n=str(n),
        )
        return TrainingPair(a, b, "duplicate", "variety:age:same")
    if roll < 0.4:
        other = _someone(rng)
        b = _fill(
            rng.choice(["{s} turned {n}", "{s} is {n}"]), s=other, n=str(n + rng.randint(1, 3))
        )
        return TrainingPair(a, b, "distinct", "variety:age:someone-else")
    m = n + rng.choice([1, 1, 1, 2])
    b = _fill(
        rng.choice(
            [
                "{s} turned {m}",
                "{s} just turned {w}",
                "{s} celebrated their {o} birthday",
                "{s} had their {o} birthday last week",
                "{s} is {m} now",
            ]
        ),
        s=s,
        m=str(m),
        w=words(m),
        o=ordinal(m),
    )
    return TrainingPair(a, b, "update", "variety:age")


def _money(rng: random.Random) -> str:
    amount = rng.choice([rng.randint(2, 99), rng.randint(1, 40) * 50, rng.randint(1, 9) * 1000])
    return f"{amount:,} {rng.choice(CURRENCIES)}"


def _price(rng: random.Random, s: str) -> TrainingPair:
    held, changed, _ = rng.choice(PRICED)
    m1, m2 = _money(rng), _money(rng)
    a = _fill("{s} " + held, s=s, m=m1)
    if rng.random() < 0.15:
        return TrainingPair(
            a, _fill("{s} " + held, s=_someone(rng), m=m2), "distinct", "variety:price:someone-else"
        )
    if rng.random() < 0.15:
        other = rng.choice([p for p in PRICED if p[0] != held])
        return TrainingPair(
            a, _fill("{s} " + other[0], s=s, m=m2), "distinct", "variety:price:another"
        )
    return TrainingPair(a, _fill("{s} " + changed, s=s, m=m2), "update", "variety:price")


def _count(rng: random.Random, s: str) -> TrainingPair:
    held, changed = rng.choice(COUNTED)
    n = rng.randint(2, 12)
    m = n + rng.choice([-1, 1, 2, 3]) if n > 2 else n + 2
    a = _fill(held, s=s, n=str(n))
    roll = rng.random()
    if roll < 0.25:
        return TrainingPair(
            a, _fill(held, s=s, n=words(n)), "duplicate", "variety:count:written-out"
        )
    if roll < 0.35:
        return TrainingPair(
            a, _fill(held, s=_someone(rng), n=str(m)), "distinct", "variety:count:someone-else"
        )
    b = _fill(rng.choice([held, changed]), s=s, n=rng.choice([str(m), words(m)]))
    return TrainingPair(a, b, "update", "variety:count")


def _rank(rng: random.Random, s: str) -> TrainingPair:
    before, after, field = rng.choice(RANKS)
    r1, r2 = f"{before} {field}".strip(), f"{after} {field}".strip()
    a = _fill(rng.choice(RANK_HELD), s=s, r=r1)
    if rng.random() < 0.15:
        b = _fill(rng.choice(RANK_CHANGED), s=_someone(rng), r=r2)
        return TrainingPair(a, b, "distinct", "variety:rank:someone-else")
    b = _fill(rng.choice(RANK_CHANGED), s=s, r=r2)
    return TrainingPair(a, b, "update", "variety:rank")


def _major(rng: random.Random, s: str) -> TrainingPair:
    f1, f2 = rng.sample(FIELDS, 2)
    a = _fill(rng.choice(MAJOR), s=s, f=f1)
    roll = rng.random()
    if roll < 0.25:
        return TrainingPair(
            a, _fill(rng.choice(MAJOR_NEAR), s=s, f=f2), "distinct", "variety:major:near"
        )
    if roll < 0.35:
        b = _fill(rng.choice(MAJOR_CHANGED), s=_someone(rng), f=f2)
        return TrainingPair(a, b, "distinct", "variety:major:someone-else")
    return TrainingPair(a, _fill(rng.choice(MAJOR_CHANGED), s=s, f=f2), "update", "variety:major")


def _taste(rng: random.Random, s: str) -> TrainingPair:
    x = rng.choice(LIKED)
    if rng.random() < 0.5:
        a, b = _fill(rng.choice(LIKES), s=s, x=x), _fill(rng.choice(GONE_OFF), s=s, x=x)
    else:
        a, b = _fill(rng.choice(DISLIKES), s=s, x=x), _fill(rng.choice(COME_ROUND), s=s, x=x)
    if rng.random() < 0.2:
        y = rng.choice([v for v in LIKED if v != x])
        return TrainingPair(a, b.replace(x, y), "distinct", "variety:taste:another")
    return TrainingPair(a, b, "update", "variety:taste")


def _status(rng: random.Random, s: str) -> TrainingPair:
    before, after = rng.choice(STATUS)
    n = rng.choice(NAMES)
    a, b = _fill(before, s=s, n=n), _fill(after, s=s, n=n)
    if rng.random() < 0.15:
        return TrainingPair(
            a, _fill(after, s=_someone(rng), n=n), "distinct", "variety:status:someone-else"
        )
    return TrainingPair(a, b, "update", "variety:status")


def _many(rng: random.Random, s: str) -> TrainingPair:
    frame, values = rng.choice(MANY)
    x, y = rng.sample(values.split("|"), 2)
    a = _fill(frame, s=s, x=x)
    b = _fill(frame, s=s, x=y) + rng.choice(NOW_OR_ALSO)
    if rng.random() < 0.3:
        a, b = b, a
    return TrainingPair(a, b, "distinct", "variety:many")


def _two_jobs(rng: random.Random, s: str) -> TrainingPair:
    first, second = rng.choice(TWO_JOBS)
    x, y = rng.sample(JOBS2, 2)
    return TrainingPair(
        _fill(first, s=s, a=x), _fill(second, s=s, b=y), "distinct", "variety:two-jobs"
    )


def _handle(rng: random.Random, s: str) -> TrainingPair:
    one, two = rng.sample(PLATFORMS, 2)
    h1, h2 = (f"@{rng.choice(NAMES).lower()}{rng.randint(1, 999)}" for _ in range(2))
    a = _fill("{s}'s {p} handle is {h}", s=s, p=one, h=h1)
    roll = rng.random()
    if roll < 0.5:
        return TrainingPair(
            a, _fill("{s}'s {p} handle is {h}", s=s, p=two, h=h2), "distinct", "variety:handles"
        )
    if roll < 0.65:
        b = _fill("{s} is {h} on {p}", s=s, p=one, h=h1)
        return TrainingPair(a, b, "duplicate", "variety:handle:same")
    b = _fill(
        rng.choice(["{s} changed their {p} handle to {h}", "{s}'s {p} handle is now {h}"]),
        s=s,
        p=one,
        h=h2,
    )
    return TrainingPair(a, b, "update", "variety:handle:changed")


def _phones(rng: random.Random, s: str) -> TrainingPair:
    n1, n2 = (f"555-{rng.randint(100, 9999):04d}" for _ in range(2))
    kinds = ["", "work ", "home ", "mobile ", "office "]
    k1, k2 = rng.sample(kinds, 2)
    a = _fill("{s}'s {k}phone number is {n}", s=s, k=k1, n=n1)
    roll = rng.random()
    if roll < 0.4:
        return TrainingPair(
            a, _fill("{s}'s {k}phone number is {n}", s=s, k=k2, n=n2), "distinct", "variety:phones"
        )
    if roll < 0.55:
        other = _someone(rng)
        return TrainingPair(
            a,
            _fill("{s}'s {k}phone number is {n}", s=other, k=k1, n=n2),
            "distinct",
            "variety:phones:someone-else",
        )
    b = _fill(
        rng.choice(
            [
                "{s}'s {k}phone number is {n}",
                "{s}'s new {k}number is {n}",
                "{s} changed their {k}number to {n}",
            ]
        ),
        s=s,
        k=k1,
        n=n2,
    )
    return TrainingPair(a, b, "update", "variety:phone:changed")


def _appointments(rng: random.Random, s: str) -> TrainingPair:
    x, y = rng.sample(APPOINTMENTS, 2)
    day = rng.choice(WEEKDAYS)
    t1, t2 = rng.sample(["9am", "10:30", "11am", "1pm", "2:30pm", "4pm", "5pm", "6:15pm"], 2)
    a = _fill("{s} has {x} on {d} at {t}", s=s, x=x, d=day, t=t1)
    if rng.random() < 0.6:
        return TrainingPair(
            a,
            _fill("{s} has {x} on {d} at {t}", s=s, x=y, d=day, t=t2),
            "distinct",
            "variety:appointments",
        )
    b = _fill(
        rng.choice(["{s}'s {n} was moved to {t}", "{s} moved {x} to {t}"]),
        s=s,
        n=x.split(" ", 1)[1],
        x=x,
        t=t2,
    )
    return TrainingPair(a, b, "update", "variety:appointment:moved")


def _homes(rng: random.Random, s: str) -> TrainingPair:
    c1, c2 = rng.sample(PLACES, 2)
    h1, h2 = rng.sample(HOMES, 2)
    return TrainingPair(
        _fill("{s} has " + h1, s=s, c=c1),
        _fill("{s} also has " + h2, s=s, c=c2)
        if rng.random() < 0.5
        else _fill("{s} owns " + h2, s=s, c=c2),
        "distinct",
        "variety:homes",
    )


def _dates(rng: random.Random, s: str) -> TrainingPair:
    d1, d2 = (f"{rng.randint(1, 28)} {rng.choice(MONTHS)}" for _ in range(2))
    f1, f2 = rng.sample(DATES, 2)
    a = _fill(f1, p=f"{s}'s", d=d1)
    if rng.random() < 0.7:
        return TrainingPair(a, _fill(f2, p=f"{s}'s", d=d2), "distinct", "variety:dates")
    return TrainingPair(a, _fill(f1, p=f"{s}'s", d=d2), "update", "variety:date:changed")


def _related(rng: random.Random, s: str) -> TrainingPair:
    a, b = rng.choice(RELATED)
    values = {
        "lang": rng.choice(LANGS),
        "city": rng.choice(PLACES),
        "goal": rng.choice(GOALS),
        "mode": rng.choice(MODES),
    }
    pair = [_fill(a, s=s, **values), _fill(b, s=s, **values)]
    if rng.random() < 0.5:
        pair.reverse()
    return TrainingPair(pair[0], pair[1], "distinct", "variety:related")


#: The slots a person holds one value of at a time (where they live, whom they work for, who
#: manages them, …), for ``_new_value``: named, since a slot the vocabulary calls single may
#: well hold two values (a drink, a dish, a show), and those pairs are not changes.
_ONE_VALUE_NAMES = (
    "city employer job manager partner car school position home_type timezone phone_model diet "
    "commute team os editor"
).split()
_ONE_VALUE = [
    slot
    for slot in SLOTS
    if slot.name in _ONE_VALUE_NAMES
    and len(slot.pool()) >= 2
    and not any("{q}" in w for w in slot.wordings + slot.changes)
]


def _new_value(rng: random.Random, s: str) -> TrainingPair:
    """A new value of a one-value slot, said as plainly as the old one ("lives in Denver" /
    "lives in Austin") or with a verb of change: an update. The slots' own pairs hold too
    few of them beside the families of two facts of one kind that are both true (two homes,
    two jobs), and the model read every plain swap of a city or an employer as two facts."""
    slot = rng.choice(_ONE_VALUE)
    old, new = rng.sample(slot.pool(), 2)
    first = rng.choice(slot.wordings)
    second = first if rng.random() < 0.5 else rng.choice(slot.wordings + slot.changes)
    p = f"{s}'s"
    return TrainingPair(
        _fill(first, s=s, p=p, v=old, q=""),
        " ".join(_fill(second, s=s, p=p, v=new, q="").split()),
        "update",
        f"variety:new-value:{slot.name}",
    )


def _same(rng: random.Random, s: str) -> TrainingPair:
    group = rng.choice(SAME)
    if rng.random() < 0.75:
        a, b = rng.sample(group, 2)
        return TrainingPair(_fill(a, s=s), _fill(b, s=s), "duplicate", "variety:paraphrase")
    # A near miss: another person, or the fact of another group (its own wording).
    if rng.random() < 0.5:
        a, b = rng.sample(group, 2)
        b = _fill(b, s=_someone(rng))
        return TrainingPair(_fill(a, s=s), b, "distinct", "variety:paraphrase:someone-else")
    other = rng.choice([g for g in SAME if g is not group])
    return TrainingPair(
        _fill(rng.choice(group), s=s),
        _fill(rng.choice(other), s=s),
        "distinct",
        "variety:paraphrase:another",
    )


FAMILIES: list[tuple[Make, float]] = [
    (_ended, 2.5),
    (_parted, 1.5),
    (_commute, 1.3),
    (_age, 0.8),
    (_price, 0.8),
    (_count, 0.8),
    (_rank, 0.8),
    (_major, 0.6),
    (_taste, 0.8),
    (_status, 1.5),
    (_many, 0.9),
    (_two_jobs, 0.3),
    (_handle, 0.5),
    (_phones, 0.6),
    (_appointments, 0.3),
    (_homes, 0.2),
    (_new_value, 2.5),
    (_dates, 0.5),
    (_related, 0.6),
    (_same, 3.0),
]


def variety_pairs(seed: int, count: int) -> list[TrainingPair]:
    """``count`` pairs drawn from the families above (deterministic for a ``seed``)."""
    rng = random.Random(seed)
    makers, weights = zip(*FAMILIES, strict=True)
    out: list[TrainingPair] = []
    for _ in range(count):
        make = rng.choices(makers, weights=weights)[0]
        subject = "User" if rng.random() < 0.85 else _someone(rng)
        pair = make(rng, subject)
        if pair.a != pair.b:
            out.append(pair)
    return out


_NUMBER = re.compile(r"\b\d+\b")
_VERB = re.compile(r"^User (\w+s) ")


def profile_pairs(seed: int, root: Path) -> list[TrainingPair]:
    """The written profiles' facts (a file of users, each with facts): two facts of one user
    are distinct (each with the one sharing most of its words), the same fact with another
    number or ended ("User no longer lives …", "User is no longer …") an update."""
    rng = random.Random(seed)
    users = [
        json.loads(line)
        for path in sorted(root.glob("profiles_*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
        if line
    ]
    out: list[TrainingPair] = []
    for user in users:
        facts = [f["fact"] for f in user["facts"]]
        words = [
            set(f.lower().split()) - {"user", "user's", "the", "a", "is", "in", "to", "and", "of"}
            for f in facts
        ]
        for i, fact in enumerate(facts):
            others = [j for j in range(len(facts)) if j != i]
            if not others:
                continue
            closest = max(others, key=lambda j: (len(words[i] & words[j]), -j))
            out.append(TrainingPair(facts[closest], fact, "distinct", "profiles:close"))
            numbers = list(_NUMBER.finditer(fact))
            if numbers:
                found = rng.choice(numbers)
                new = str(int(found.group()) + rng.choice([1, 2, 3, 5, 10]))
                changed = fact[: found.start()] + new + fact[found.end() :]
                out.append(TrainingPair(fact, changed, "update", "profiles:number"))
            verb = _VERB.match(fact)
            if fact.startswith("User is ") and rng.random() < 0.6:
                out.append(
                    TrainingPair(
                        fact,
                        fact.replace("User is ", "User is no longer ", 1),
                        "update",
                        "profiles:ended",
                    )
                )
            elif verb and verb.group(1) not in {"is", "has", "was"} and rng.random() < 0.6:
                out.append(
                    TrainingPair(
                        fact,
                        fact.replace("User ", "User no longer ", 1),
                        "update",
                        "profiles:ended",
                    )
                )
    return out


__all__ = ["profile_pairs", "variety_pairs", "words", "ordinal"]
