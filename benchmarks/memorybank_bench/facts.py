"""Synthetic but realistic facts about users, and natural questions about them, for the
latency benchmark (:mod:`memorybank_bench.latency`): templates × vocabularies, seeded.

>>> text, category = FactGenerator(7).fact()
>>> 40 <= len(text) <= 200 and text.startswith("User")
True
"""

from __future__ import annotations

import random
import re

from memorybank.model import Category

_VOCAB_TEXT = """
first: Maria | Jonas | Aiko | Priya | Tomasz | Fatima | Lucas | Ingrid | Mateo | Chloe |
    Olusegun | Hana | Rafael | Sofia | Dmitri | Amara | Kenji | Elena | Omar | Freya | Nikolai
    | Leila | Pablo | Astrid | Ravi | Camille | Bruno | Yusuf | Greta | Diego | Mei | Henrik |
    Zainab | Luca | Noor | Anders | Isabela | Tariq | Yara | Felix | Anjali | Marco | Signe |
    Kwame | Rosa | Emil | Lina | Arjun | Clara | Hugo | Soraya | Viktor | Nadia | Thiago |
    Elif | Malik | Julia | Sven | Ayesha | Paolo
last: Silva | Novak | Tanaka | Sharma | Kowalski | Haddad | Moreau | Lindqvist | Garcia |
    Dubois | Adeyemi | Kim | Costa | Rossi | Petrov | Okafor | Sato | Popescu | Farouk |
    Hansen | Ivanova | Nasser | Ortega | Berg | Iyer | Laurent | Ferreira | Demir | Schmidt |
    Alvarez | Chen | Nilsson | Bello | Bianchi | Rahman | Larsen | Santos | Aziz | Jensen |
    Weber
relative: sister | brother | mother | father | wife | husband | partner | son | daughter |
    cousin | aunt | uncle | grandmother | grandfather | niece | nephew | best friend |
    roommate | sister-in-law | stepfather
role: manager | team lead | CTO | product manager | mentor | tech lead | designer | skip-level
    manager | on-call partner | co-founder | data scientist | QA lead
job: a pediatric nurse | a backend engineer | a high school teacher | an architect | a dentist
    | a data analyst | a pastry chef | a civil engineer | a pharmacist | a graphic designer |
    a lawyer | a physiotherapist | a veterinarian | a product designer | an accountant | a
    journalist | a firefighter | a university lecturer | an electrician | a software tester |
    a marine biologist | a translator | a carpenter | a radiologist | a site reliability
    engineer | a museum curator | an airline pilot | a social worker | a sommelier | a
    research chemist
company: Acme Logistics | Northwind | Globex | Initech | Umbrella Health | Stark Freight |
    Blue Harbor Bank | Pinecone Labs | Helios Energy | Orbital Media | Kestrel Games | Lumen
    Insurance | Tidewater Foods | Nimbus Cloud | Redwood Analytics | Copperleaf Studio | Fjord
    Robotics | Sunline Travel | Quartz Payments | Meridian Hospital
city: Porto | Lyon | Berlin | Kyoto | Toronto | Nairobi | Lisbon | Melbourne | Austin | Krakow
    | Seoul | Buenos Aires | Edinburgh | Bangalore | Oslo | Mexico City | Cape Town | Valencia
    | Vancouver | Istanbul | Hanoi | Dublin | Montreal | Lagos | Helsinki | Prague | Santiago
    | Osaka | Copenhagen | Marseille | Bologna | Tallinn | Reykjavik | Seville | Zurich |
    Denver | Singapore | Auckland | Tbilisi | Ljubljana
field: mechanical engineering | economics | computer science | biology | philosophy |
    architecture | statistics | linguistics | physics | music theory | nursing | political
    science
spoken: Portuguese | French | German | Japanese | Spanish | Polish | Korean | Hindi | Arabic |
    Swedish | Turkish | Italian | Dutch | Greek | Vietnamese
food: ramen | spicy tofu | grilled sardines | mushroom risotto | falafel wraps | pho | sushi |
    vegetable curry | tacos al pastor | shakshuka | pierogi | bibimbap | margherita pizza |
    lentil soup | pad thai | poke bowls | dark chocolate | greek salad | dumplings | paella |
    banh mi | oatmeal with berries
cuisine: Japanese | Ethiopian | Mexican | Lebanese | Thai | Georgian | Peruvian | Korean |
    Italian | Indian | Vietnamese | Portuguese
drink: black coffee | green tea | oat milk lattes | sparkling water | matcha | espresso |
    rooibos tea | kombucha | hot chocolate | chai
lang: Python | TypeScript | Rust | Go | Kotlin | Java | C# | Elixir | Swift | Scala | Haskell
    | Ruby | C++ | Clojure | Julia | Zig | OCaml | PHP
task: data pipelines | web backends | command-line tools | scripting | mobile apps |
    infrastructure code | machine learning experiments | game prototypes | embedded firmware |
    frontend work
tool: Neovim | VS Code | IntelliJ IDEA | Emacs | Sublime Text | Zed | Helix | PyCharm | Xcode
    | JetBrains Fleet
theme: dark | light | solarized | high-contrast | gruvbox | nord
music: lo-fi hip hop | baroque cello suites | synthwave | jazz piano | ambient drone |
    Brazilian bossa nova | post-rock | techno | film soundtracks | K-pop | Malian desert blues
    | classical guitar | drum and bass | Afrobeat
work: code reviews | deep work | writing documentation | debugging | planning | data analysis
    | design sketches
activity: go running | swim laps | climb at the bouldering gym | do yoga | play chess | bake
    bread | go cycling | practice the piano | hike | play padel | paint | read fiction
weekday: Monday | Tuesday | Wednesday | Thursday | Friday | Saturday | Sunday
daypart: morning | afternoon | evening | late evening | lunch break
hour: 7:30 | 8:00 | 9:15 | 10:00 | 11:30 | 13:00 | 14:45 | 16:00 | 17:30 | 19:00
month: January | February | March | April | May | June | July | August | September | October |
    November | December
pet: dog | cat | parrot | rabbit | tortoise | ferret | hamster | beagle
petname: Biscuit | Luna | Pixel | Mochi | Pepper | Ziggy | Olive | Nacho | Kiwi | Tofu | Socks
    | Maple
allergen: peanuts | shellfish | gluten | lactose | cat hair | pollen | penicillin | sesame |
    kiwi fruit | bee stings
sport: tennis | football | badminton | basketball | volleyball | squash | golf
comm: Slack messages | short video calls | voice notes | shared docs | SMS
team: payments | platform | search | mobile | growth | security | data | billing |
    infrastructure | checkout
project: the billing service | the mobile app | the customer portal | the data warehouse | the
    recommendation engine | the internal wiki | the checkout flow | the analytics dashboard |
    the notification service | the search backend | the onboarding funnel | the inventory
    system | the auth gateway | the reporting pipeline | the marketing site | the fraud
    detector | the chat widget | the pricing API | the scheduling tool | the design system
framework: Django | FastAPI | Flask | Rails | Spring Boot | Express | NestJS | Next.js |
    Laravel | Phoenix | ASP.NET Core | SvelteKit | Remix | Gin | Actix
database: PostgreSQL | MySQL | MongoDB | Redis | Cassandra | DynamoDB | ClickHouse | SQLite |
    Elasticsearch | BigQuery
cloud: AWS | Google Cloud | Azure | Hetzner | Fly.io | DigitalOcean | Kubernetes
deadline: March | the end of Q2 | the end of Q3 | Christmas | the summer release | the board
    meeting | June 30 | the next audit | the October launch | the end of the sprint | Black
    Friday | the spring conference
doc: design document | migration plan | postmortem | request for comments | runbook | roadmap
app_kind: habit tracker | budgeting app | recipe manager | podcast player | plant-watering
    reminder | sourdough calculator | bird-watching log | home automation dashboard | language
    flashcard app | trail map
meeting: one-on-one | design review | quarterly planning session | performance review |
    dentist appointment | job interview | parent-teacher meeting | sprint retro | customer
    demo | architecture review
event: PyCon | KubeCon | a friend's wedding | the company offsite | a hackathon | a family
    reunion | Web Summit | a jazz festival | a marathon | a product launch | RustConf | a
    climbing trip | a wine tasting course
topic: observability | vector search | accessibility | type systems | chaos engineering |
    privacy by design | event sourcing | on-call culture
"""


def _parse_vocab(text: str) -> dict[str, tuple[str, ...]]:
    """``slot: a | b | c`` lines (indented lines continue the previous one) → slot → values."""
    joined = re.sub(r"\n\s+", " ", text.strip())
    vocab: dict[str, tuple[str, ...]] = {}
    for line in joined.splitlines():
        slot, values = line.split(":", 1)
        vocab[slot.strip()] = tuple(v.strip() for v in values.split("|"))
    return vocab


#: Slot name → the values it is filled with.
VOCAB: dict[str, tuple[str, ...]] = {
    **_parse_vocab(_VOCAB_TEXT),
    "day": tuple(str(d) for d in range(1, 29)),
    "year": tuple(str(y) for y in range(1961, 2004)),
    "age": tuple(str(a) for a in range(21, 79)),
    "nights": tuple(str(n) for n in range(2, 15)),
}

FACT_TEMPLATES: tuple[tuple[Category, str], ...] = (
    (Category.IDENTITY, "User's full name is {first} {last} and friends call them {first2}"),
    (Category.IDENTITY, "User works as {job} at {company} in {city}"),
    (Category.IDENTITY, "User lives in {city} and works remotely for {company}"),
    (Category.IDENTITY, "User was born in {year} in {city} and grew up speaking {spoken}"),
    (Category.IDENTITY, "User is {age} years old and moved to {city} in {year}"),
    (Category.IDENTITY, "User studied {field} in {city} before joining {company}"),
    (Category.IDENTITY, "User's native language is {spoken} and they are learning {spoken2}"),
    (Category.PREFERENCE, "User prefers {food} over {food2} for lunch on workdays"),
    (Category.PREFERENCE, "User's favourite cuisine is {cuisine}, especially {food}"),
    (Category.PREFERENCE, "User prefers {lang} for {task} and avoids {lang2} when possible"),
    (Category.PREFERENCE, "User uses {tool} with a {theme} theme for all their {lang} work"),
    (Category.PREFERENCE, "User listens to {music} while doing {work}"),
    (Category.PREFERENCE, "User likes to {activity} on {weekday} {daypart}s"),
    (Category.PREFERENCE, "User prefers meetings in the {daypart} and keeps {weekday}s free"),
    (Category.PREFERENCE, "User drinks {drink} every morning and avoids {drink2} after {hour}"),
    (Category.PREFERENCE, "User is allergic to {allergen} and always checks menus for it"),
    (Category.PREFERENCE, "User prefers {comm} over email for quick questions from the team"),
    (Category.RELATIONSHIP, "User's {relative} {first} works as {job} in {city}"),
    (Category.RELATIONSHIP, "User's {relative} {first} lives in {city} and visits every {month}"),
    (Category.RELATIONSHIP, "User's {role} at {company} is {first} {last}"),
    (Category.RELATIONSHIP, "User's {relative} {first} turns {age} on {month} {day}"),
    (Category.RELATIONSHIP, "User has a {pet} named {petname} who is fond of long walks"),
    (Category.RELATIONSHIP, "User plays {sport} with their {relative} {first} every {weekday}"),
    (Category.RELATIONSHIP, "User's colleague {first} leads the {team} team at {company}"),
    (
        Category.PROJECT,
        "User is migrating {project} from {framework} to {framework2} before {deadline}",
    ),
    (Category.PROJECT, "User is building {project} with {framework} and {database}"),
    (Category.PROJECT, "User's team is moving {project} to {cloud} by {deadline}"),
    (Category.PROJECT, "User maintains {project}, which runs on {database} in {cloud}"),
    (Category.PROJECT, "User is writing a {doc} for {project}, due before {deadline}"),
    (
        Category.PROJECT,
        "User is working with {first} on {project}, aiming for a release in {month}",
    ),
    (Category.PROJECT, "User's side project is a {app_kind} written in {lang}"),
    (Category.CONTEXT, "User has a {meeting} with {first} on {weekday} at {hour}"),
    (
        Category.CONTEXT,
        "User is travelling to {city} for {event} on {month} {day} for {nights} nights",
    ),
    (Category.CONTEXT, "User attended {event} in {city} last {month} with their {relative}"),
    (Category.CONTEXT, "User is preparing a talk about {topic} for {event} in {month}"),
    (Category.CONTEXT, "User has a {meeting} on {month} {day} at {hour}"),
    (Category.CONTEXT, "User is on vacation in {city} until {month} {day}"),
    (Category.CONTEXT, "User's flight to {city} leaves on {month} {day} at {hour}"),
)

QUERY_TEMPLATES: tuple[str, ...] = (
    "what does the user's {relative} do for a living?",
    "where does the user's {relative} {first} live?",
    "which framework is {project} moving to?",
    "when is the deadline for {project}?",
    "what database does {project} use?",
    "which cloud is {project} deployed on?",
    "what food does the user like?",
    "does the user like {cuisine} food?",
    "which programming language does the user prefer for {task}?",
    "which editor does the user use?",
    "what music does the user listen to while working?",
    "when does the user {activity}?",
    "who is the user's {role}?",
    "where does the user work?",
    "where does the user live?",
    "how old is the user?",
    "when is the user going to {city}?",
    "what is the name of the user's {pet}?",
    "is the user allergic to {allergen}?",
    "what is the user doing on {weekday}?",
    "what is the user working on with {first}?",
    "when is {first}'s birthday?",
    "what talk is the user preparing for {event}?",
    "what does the user drink in the morning?",
    "which sport does the user play with their {relative}?",
    "who leads the {team} team?",
    "what languages does the user speak?",
    "what side project is the user building in {lang}?",
    "when is the user's {meeting}?",
    "what did the user do in {city}?",
)

_SLOT = re.compile(r"\{([a-z_]+?)(\d*)\}")
_SUFFIXES: tuple[str, ...] = (
    ", as mentioned on {month} {day}",
    ", according to a chat in {month}",
    ", which came up during a {meeting}",
    ", and they asked for a reminder about it every {weekday} {daypart}",
    ", which they brought up while talking about {topic} with their {relative} {first}",
    "; this matters to them because their {role} at {company} asked about it in {month}",
)
#: How often a fact gets an extra clause (besides when it is too short without one).
_SUFFIX_RATE = 0.3
FACT_MIN_CHARS, FACT_MAX_CHARS = 40, 200


class FactGenerator:
    """Seeded generator of varied third-person facts about a user (all five categories) and
    of natural questions about them, composed from templates × vocabularies.

    >>> gen = FactGenerator(7)
    >>> text, category = gen.fact()
    >>> 40 <= len(text) <= 200 and text.startswith("User")
    True
    """

    def __init__(self, seed: int | str) -> None:
        self.rng = random.Random(seed)

    def _fill(self, template: str) -> str:
        used: dict[str, set[str]] = {}

        def pick(match: re.Match[str]) -> str:
            slot = match.group(1)
            taken = used.setdefault(slot, set())
            options = [v for v in VOCAB[slot] if v not in taken] or list(VOCAB[slot])
            value = self.rng.choice(options)
            taken.add(value)
            return value

        return _SLOT.sub(pick, template)

    def fact(self) -> tuple[str, Category]:
        """One fact (40–200 characters) and its category."""
        category, template = self.rng.choice(FACT_TEMPLATES)
        text = self._fill(template)
        while len(text) < FACT_MIN_CHARS or (
            len(text) < FACT_MAX_CHARS // 2 and self.rng.random() < _SUFFIX_RATE
        ):
            text += self._fill(self.rng.choice(_SUFFIXES))
        return text[:FACT_MAX_CHARS], category

    def query(self) -> str:
        """One natural question a user might ask about such facts."""
        return self._fill(self.rng.choice(QUERY_TEMPLATES))

    def distinct_facts(self, count: int) -> list[tuple[str, Category]]:
        """``count`` facts with no two texts alike."""
        seen: dict[str, Category] = {}
        attempts = 0
        while len(seen) < count:
            text, category = self.fact()
            seen.setdefault(text, category)
            attempts += 1
            if attempts > 50 * count + 1000:
                raise RuntimeError(f"the fact generator cannot produce {count} distinct facts")
        return list(seen.items())


__all__ = ["FACT_TEMPLATES", "QUERY_TEMPLATES", "VOCAB", "FactGenerator"]
