"""The slots, wordings and values the judge's generated training facts are made of
(:mod:`memorybank_bench.judge_slots`): everyday facts about people, written for this project.

A wording holds ``{s}`` (who: "User", "User's sister Ama"), ``{p}`` (their possessive), ``{v}``
(the value) and maybe ``{q}`` (a qualifier: a day, a time of day); ``changes`` are wordings
that say the value changed; ``denials`` deny the value; ``questions`` are what the user asks
to find the user's own fact of the slot.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

NAMES = (
    "Marco Priya Tomasz Aiko Kwame Ingrid Mateo Farah Kenji Olu Greta Rafael Yusuf Leila Bram "
    "Nadia Signe Anouk Dmitri Keanu Chidi Ximena Wanjiru Haruto Sione Ayesha Lars Mei Tunde "
    "Camila Bilal Sakura Emeka Zofia Thandi Ravi Ines Kofi Lucia Omar Esi Jonas Mariam"
).split()
RELATIVES = (
    "brother|sister|cousin|aunt|uncle|nephew|niece|grandmother|grandfather|neighbour|roommate|"
    "flatmate|mother|father|son|daughter|wife|husband|partner|boss|colleague|best friend|"
    "stepdaughter|godson|mother-in-law|bandmate|teammate|landlord|business partner|older sister"
).split("|")
PLACES = (
    "Lisbon|Madrid|Berlin|Toronto|Rotterdam|Nairobi|Accra|Lagos|Kumasi|Lima|Cusco|Osaka|Pune|"
    "Hanoi|Leeds|Glasgow|Kraków|Gdańsk|Monterrey|Porto|Tallinn|Adelaide|Bergen|Valencia|"
    "Calgary|Leipzig|Hobart|Tampere|Manila|Cebu|Durban|Kigali|Quito|Medan|Izmir|Oaxaca|"
    "Da Nang|Chiang Mai|Mombasa|Arusha|Salvador|Recife|Bogotá|Cali|Ghent|Lyon|Turin|Sapporo"
).split("|")
COMPANIES = (
    "Initech|Hooli|Globex|Stanbic Bank|Ecobank|Fidelity Bank|Tata Motors|Shopify|Siemens|"
    "a local bakery|the city council|a logistics startup|the regional hospital|a law firm|"
    "Safaricom|Unilever|a design agency|the post office|a call centre|Acme Corp|Nedbank|Absa|"
    "a solar energy company|a shipping company|the university library|a fintech startup|"
    "Vodafone|Petronas|a vineyard|a supermarket chain|the national museum|an NGO"
).split("|")
JOBS = (
    "nurse|pharmacist|architect|carpenter|electrician|librarian|pilot|accountant|plumber|"
    "journalist|chemist|translator|surveyor|dentist|baker|welder|data analyst|backend developer|"
    "product manager|teacher|paramedic|tailor|bus driver|chef|social worker|midwife|"
    "graphic designer|civil engineer|lab technician|barista|real-estate agent|physiotherapist"
).split("|")
LANGUAGES = (
    "Python|TypeScript|Rust|Go|Java|Kotlin|Swift|C#|Ruby|Elixir|Haskell|Scala|PHP|Julia|"
    "Clojure|Dart|Zig|OCaml|Lua|R"
).split("|")
SPOKEN = (
    "Spanish|French|Portuguese|Swahili|Japanese|German|Yoruba|Polish|Hindi|Mandarin|Arabic|"
    "Tagalog|Dutch|Korean|Turkish|Italian|Twi|Zulu|Vietnamese|Greek"
).split("|")
CARS = (
    "a Toyota Corolla|a Honda Civic|a Tesla Model 3|a Ford Fiesta|a Nissan Leaf|a VW Golf|"
    "a Kia Picanto|a Mazda 3|a Subaru Outback|a Suzuki Swift|a Hyundai i20|a Renault Clio|"
    "a Land Rover Defender|a Fiat Panda|a BMW 3 Series|a motorbike"
).split("|")
PETS = (
    "a beagle|a tabby cat|two goldfish|a parrot|a border collie|a rabbit|a hamster|"
    "a tortoise|a labrador|a Siamese cat|a gecko|three hens|a Shiba Inu|a cockatiel|"
    "a greyhound|a ferret"
).split("|")
HOBBIES = (
    "rock climbing|pottery|birdwatching|salsa dancing|chess|woodworking|knitting|"
    "trail running|beekeeping|playing the ukulele|calligraphy|scuba diving|gardening|"
    "photography|baking bread|kayaking|stargazing|origami|fishing|cycling|yoga|"
    "painting watercolours|playing drums|sewing|skateboarding|volunteering at a shelter"
).split("|")
FOODS = (
    "pizza|sushi|jollof rice|ramen|tacos|biryani|pho|pad thai|paella|injera|dumplings|"
    "lasagne|ceviche|falafel|goulash|pierogi|curry|pozole|feijoada|kimchi stew"
).split("|")
DRINKS = (
    "black coffee|green tea|oat milk lattes|rooibos|sparkling water|espresso|kombucha|"
    "mint tea|hot chocolate|chai|orange juice|cold brew"
).split("|")
SPORTS_TEAMS = (
    "Arsenal|Boca Juniors|Kaizer Chiefs|FC Porto|the Lakers|Celtic|Ajax|Galatasaray|"
    "the Blue Jays|Al Ahly|Flamengo|the All Blacks"
).split("|")
INSTRUMENTS = (
    "guitar|piano|violin|cello|trumpet|saxophone|drums|bass|flute|trombone|kora|harmonica|"
    "ukulele|clarinet|accordion|marimba"
).split("|")
MEDICINES = (
    "metformin|atorvastatin|lisinopril|levothyroxine|an inhaler|insulin|vitamin D|iron tablets|"
    "omeprazole|antihistamines"
).split("|")
ALLERGIES = (
    "peanuts|shellfish|penicillin|cats|pollen|latex|gluten|eggs|bee stings|dust mites|sesame|dairy"
).split("|")
COMMUTES = (
    "takes the bus|cycles|drives|walks|takes the train|takes the metro|rides a scooter|"
    "takes a boda boda|carpools with a colleague|takes the ferry|takes a tuk-tuk"
).split("|")
DIETS = (
    "vegetarian|vegan|pescatarian|on a keto diet|gluten-free|halal|kosher|dairy-free|"
    "on a low-salt diet"
).split("|")
DAYS = "on Mondays|on Tuesdays|on Wednesdays|on Thursdays|on Fridays|on Saturdays|on Sundays|at weekends|on weekday mornings|in the evenings".split(
    "|"
)
EDITORS = "VS Code|Vim|Emacs|PyCharm|Neovim|Sublime Text|IntelliJ|Zed|Helix|Xcode".split("|")
OSES = "macOS|Windows 11|Ubuntu|Fedora|Arch Linux|ChromeOS|Debian".split("|")
PHONES = "an iPhone 15|a Pixel 8|a Samsung Galaxy S23|a Nokia flip phone|a Fairphone|an iPhone 12|a Xiaomi phone|a OnePlus".split(
    "|"
)
SCHOOLS = "primary school|secondary school|university|a coding bootcamp|night school|college|a language school".split(
    "|"
)
STUDIES = "nursing|law|computer science|history|economics|architecture|medicine|music|biology|accounting|fashion design|agriculture".split(
    "|"
)
GENRES = "jazz|hip-hop|K-pop|classical music|afrobeats|country|metal|reggaeton|folk|techno|highlife|bossa nova".split(
    "|"
)
BOOKS = "science fiction|crime novels|poetry|biographies|fantasy|romance novels|history books|manga|self-help books".split(
    "|"
)
SHOWS = "Breaking Bad|The Office|Squid Game|Bridgerton|Succession|Dark|Money Heist|The Crown|Ted Lasso|Narcos".split(
    "|"
)


def _number(low: int, high: int) -> Callable[[random.Random], str]:
    return lambda rng: str(rng.randint(low, high))


def _phone(rng: random.Random) -> str:
    style = rng.random()
    if style < 0.4:
        return f"555-{rng.randint(100, 9999):04d}"
    if style < 0.7:
        return f"+{rng.randint(20, 99)} {rng.randint(100, 999)} {rng.randint(1000, 9999)}"
    return f"0{rng.randint(700, 799)} {rng.randint(100, 999)} {rng.randint(100, 999)}"


def _money(rng: random.Random) -> str:
    unit = rng.choice(["£", "$", "€", "", ""])
    amount = rng.choice([rng.randint(2, 99) * 10, rng.randint(1, 40) * 100, rng.randint(5, 95)])
    if unit:
        return f"{unit}{amount}"
    return f"{amount} {rng.choice(['dollars', 'euros', 'pounds', 'rand', 'cedis', 'shillings'])}"


def _time(rng: random.Random) -> str:
    hour = rng.randint(5, 11)
    return rng.choice([f"{hour}am", f"{hour}:30", f"{hour + 12}:00", f"{hour}pm"])


def _date(rng: random.Random) -> str:
    month = rng.choice(
        "January February March April May June July August September October November "
        "December".split()
    )
    return rng.choice([f"{rng.randint(1, 28)} {month}", f"{month} {rng.randint(2019, 2027)}"])


@dataclass
class Slot:
    """One thing a fact can say about a person, and the ways it is said."""

    name: str
    wordings: list[str]
    values: list[str] | Callable[[random.Random], str]
    single: bool = True
    changes: list[str] = field(default_factory=list)
    denials: list[str] = field(default_factory=list)
    resumes: list[str] = field(default_factory=list)
    qualifiers: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)

    def pool(self) -> list[str]:
        return self.values if isinstance(self.values, list) else []

    def value(self, rng: random.Random) -> str:
        if isinstance(self.values, list):
            return rng.choice(self.values)
        return self.values(rng)


SLOTS: list[Slot] = [
    Slot(
        "city",
        [
            "{s} lives in {v}",
            "{s} is based in {v}",
            "{p} home is in {v}",
            "{s} resides in {v}",
            "{s} rents a flat in {v}",
            "{s} has a house in {v}",
            "{s} calls {v} home",
        ],
        PLACES,
        changes=[
            "{s} moved to {v}",
            "{s} now lives in {v}",
            "{s} relocated to {v}",
            "{s} has just moved to {v}",
            "{s} lives in {v} these days",
            "{s} is living in {v} now",
        ],
        details=["with their partner", "near the river", "since 2019", "in a shared flat"],
        questions=[
            "Where do I live?",
            "Which city am I in?",
            "Where is my home?",
            "What town do I live in?",
            "Where am I based?",
        ],
    ),
    Slot(
        "employer",
        [
            "{s} works at {v}",
            "{s} is employed by {v}",
            "{s} has a job at {v}",
            "{p} employer is {v}",
            "{s} works for {v}",
        ],
        COMPANIES,
        changes=[
            "{s} now works at {v}",
            "{s} joined {v}",
            "{s} started a new job at {v}",
            "{s} switched jobs and works for {v}",
            "{s} got hired by {v}",
            "{s} left their old job and joined {v}",
        ],
        denials=[
            "{s} no longer works at {v}",
            "{s} quit {v}",
            "{s} left {v}",
            "{s} doesn't work at {v} anymore",
        ],
        details=["as a contractor", "part-time", "since last spring", "in the finance team"],
        questions=[
            "Where do I work?",
            "Who employs me?",
            "Which company am I at?",
            "Who is my employer?",
        ],
    ),
    Slot(
        "job",
        [
            "{s} works as a {v}",
            "{s} is a {v}",
            "{p} job is {v}",
            "{s} is employed as a {v}",
            "{p} profession is {v}",
        ],
        JOBS,
        changes=[
            "{s} now works as a {v}",
            "{s} became a {v}",
            "{s} retrained as a {v}",
            "{s} is a {v} now",
            "{s} got promoted to senior {v}",
        ],
        details=["at a clinic", "for ten years", "on night shifts", "at a small firm"],
        questions=[
            "What do I do for a living?",
            "What is my job?",
            "What's my profession?",
            "What kind of work do I do?",
        ],
    ),
    Slot(
        "manager",
        [
            "{p} manager is {v}",
            "{s} reports to {v}",
            "{p} boss is {v}",
            "{s} is managed by {v}",
            "{v} is {p} line manager",
        ],
        NAMES,
        changes=[
            "{s} now reports to {v}",
            "{p} new manager is {v}",
            "{s} has a new boss, {v}",
            "{v} took over as {p} manager",
        ],
        questions=["Who is my manager?", "Who do I report to?", "Who's my boss?"],
    ),
    Slot(
        "partner",
        [
            "{p} partner is {v}",
            "{s} is married to {v}",
            "{p} spouse is named {v}",
            "{s} is dating {v}",
            "{s} is in a relationship with {v}",
        ],
        NAMES,
        changes=["{s} is now seeing {v}", "{s} got engaged to {v}", "{s} started dating {v}"],
        denials=[
            "{s} broke up with {v}",
            "{s} and {v} split up",
            "{s} is no longer with {v}",
            "{s} divorced {v}",
        ],
        questions=["Who is my partner?", "Am I seeing anyone?", "Who am I married to?"],
    ),
    Slot(
        "phone",
        [
            "{p} phone number is {v}",
            "{s} can be reached on {v}",
            "{p} mobile number is {v}",
            "{p} number is {v}",
        ],
        _phone,
        changes=[
            "{p} new phone number is {v}",
            "{s} changed their number to {v}",
            "{p} mobile is now {v}",
            "{s} got a new number: {v}",
        ],
        questions=[
            "What is my phone number?",
            "What's my mobile number?",
            "Which number can I be reached on?",
        ],
    ),
    Slot(
        "email",
        ["{p} email address is {v}", "{s} uses the email {v}", "{p} email is {v}"],
        lambda rng: (
            f"{rng.choice(NAMES).lower()}{rng.randint(1, 99)}@"
            f"{rng.choice(['mail.com', 'example.org', 'proton.me', 'work.io'])}"
        ),
        changes=["{p} new email address is {v}", "{s} switched to the email {v}"],
        questions=["What's my email address?", "Which email do I use?"],
    ),
    Slot(
        "age",
        ["{s} is {v} years old", "{p} age is {v}", "{s} is aged {v}"],
        _number(3, 90),
        changes=["{s} turned {v}", "{s} just had their {v}th birthday", "{s} is {v} now"],
        questions=["How old am I?", "What is my age?"],
    ),
    Slot(
        "children",
        ["{s} has {v} children", "{s} is a parent of {v} kids", "{s} has {v} kids"],
        lambda rng: rng.choice(["2", "3", "4", "two", "three", "one", "five"]),
        changes=["{s} now has {v} children", "{s} has {v} kids since the baby was born"],
        questions=["How many children do I have?", "How many kids do I have?"],
    ),
    Slot(
        "car",
        ["{s} drives {v}", "{p} car is {v}", "{s} owns {v}", "{s} has {v} as their car"],
        CARS,
        changes=[
            "{s} sold their car and bought {v}",
            "{s} now drives {v}",
            "{s} traded in their car for {v}",
            "{p} new car is {v}",
        ],
        questions=["What car do I drive?", "What do I drive?", "What's my car?"],
    ),
    Slot(
        "language",
        [
            "{s} prefers {v}",
            "{s} likes programming in {v}",
            "{p} favourite language is {v}",
            "{s} codes mostly in {v}",
            "{s} prefers {v} for their projects",
            "{s} writes most of their code in {v}",
        ],
        LANGUAGES,
        changes=[
            "{s} switched to {v}",
            "{s} prefers {v} now",
            "{s} has moved over to {v}",
            "{s} mostly writes {v} these days",
        ],
        questions=[
            "Which language do I prefer?",
            "What programming language do I use?",
            "What do I like to code in?",
            "What's my favourite language?",
        ],
    ),
    Slot(
        "spoken",
        ["{s} speaks {v}", "{s} is fluent in {v}", "{s} can speak {v}"],
        SPOKEN,
        single=False,
        questions=["Which languages do I speak?", "What languages do I know?"],
    ),
    Slot(
        "learning",
        ["{s} is learning {v}", "{s} takes {v} lessons", "{s} is studying {v} on an app"],
        SPOKEN,
        single=False,
        denials=["{s} gave up learning {v}", "{s} stopped taking {v} lessons"],
        questions=["What am I learning?", "Which language am I studying?"],
    ),
    Slot(
        "pet",
        ["{s} has {v}", "{s} owns {v}", "{s} lives with {v}", "{s} adopted {v}"],
        PETS,
        single=False,
        details=["from a rescue shelter", "that is very shy", "named after a singer"],
        questions=["What pets do I have?", "Do I have any animals?", "Tell me about my pets"],
    ),
    Slot(
        "pet_name",
        [
            "{p} dog is called {v}",
            "{p} dog is named {v}",
            "{s} has a dog named {v}",
            "{s} has a dog called {v}",
        ],
        NAMES,
        single=False,
        questions=["What is my dog called?", "What's my dog's name?"],
    ),
    Slot(
        "hobby",
        [
            "{s} enjoys {v}",
            "{s} likes {v}",
            "{s} loves {v}",
            "{p} hobby is {v}",
            "{s} is into {v}",
            "{s} spends free time on {v}",
        ],
        HOBBIES,
        single=False,
        denials=[
            "{s} gave up {v}",
            "{s} no longer does {v}",
            "{s} lost interest in {v}",
            "{s} doesn't enjoy {v} anymore",
            "{s} stopped {v}",
        ],
        qualifiers=DAYS,
        questions=[
            "What are my hobbies?",
            "What do I do for fun?",
            "What do I do in my free time?",
        ],
    ),
    Slot(
        "food",
        [
            "{p} favourite food is {v}",
            "{s} loves eating {v}",
            "{s} really likes {v}",
            "{s} could eat {v} every day",
            "{s}'s go-to meal is {v}",
        ],
        FOODS,
        changes=["{p} favourite food is now {v}", "{s} prefers {v} these days"],
        denials=["{s} went off {v}", "{s} doesn't like {v} anymore"],
        questions=["What is my favourite food?", "What should I cook for dinner?"],
    ),
    Slot(
        "drink",
        ["{s} drinks {v}", "{s} has {v} every morning", "{s} likes {v}", "{p} usual drink is {v}"],
        DRINKS,
        changes=["{s} switched to {v}", "{s} drinks {v} now", "{s} only drinks {v} these days"],
        denials=[
            "{s} quit {v}",
            "{s} no longer drinks {v}",
            "{s} gave up {v}",
            "{s} doesn't drink {v} anymore",
            "{s} stopped drinking {v}",
        ],
        resumes=["{s} is back on {v}", "{s} started drinking {v} again"],
        questions=["What do I drink in the morning?", "What's my usual drink?"],
    ),
    Slot(
        "diet",
        ["{s} is {v}", "{s} eats {v}", "{s} follows a diet that is {v}", "{s} keeps {v}"],
        DIETS,
        changes=["{s} has gone {v}", "{s} is {v} now", "{s} became {v}"],
        denials=["{s} is no longer {v}", "{s} stopped being {v}"],
        questions=["What is my diet?", "Are there foods I avoid?", "What can I eat?"],
    ),
    Slot(
        "eats",
        ["{s} eats {v} every week", "{s} has {v} most days", "{s} cooks {v} often"],
        ["meat", "fish", "red meat", "chicken", "pork", "eggs", "rice", "bread", "cheese"],
        single=False,
        denials=[
            "{s} doesn't eat {v} anymore",
            "{s} stopped eating {v}",
            "{s} cut out {v}",
            "{s} no longer eats {v}",
        ],
        qualifiers=DAYS,
        questions=["What do I eat?", "What should I make for supper?"],
    ),
    Slot(
        "allergy",
        ["{s} is allergic to {v}", "{s} has an allergy to {v}", "{s} reacts badly to {v}"],
        ALLERGIES,
        single=False,
        denials=["{s} is not allergic to {v}", "{s} outgrew the allergy to {v}"],
        questions=["What am I allergic to?", "Do I have any allergies?"],
    ),
    Slot(
        "medicine",
        ["{s} takes {v}", "{s} is on {v}", "{s} uses {v} daily"],
        MEDICINES,
        single=False,
        qualifiers=["with breakfast", "at bedtime", "twice a day", "every morning"],
        denials=["{s} stopped taking {v}", "{s} is off {v} now", "{s} no longer takes {v}"],
        questions=["What medication do I take?", "Which pills am I on?"],
    ),
    Slot(
        "commute",
        ["{s} {v} to work", "{s} {v} to the office", "{s} usually {v} to work"],
        COMMUTES,
        changes=[
            "{s} {v} to work now",
            "These days {s} {v} to work",
            "{s} has started to {v} to work",
        ],
        questions=["How do I get to work?", "How do I commute?"],
    ),
    Slot(
        "team",
        ["{s} supports {v}", "{p} favourite team is {v}", "{s} is a fan of {v}"],
        SPORTS_TEAMS,
        questions=["Which team do I support?", "Who do I cheer for?"],
    ),
    Slot(
        "instrument",
        [
            "{s} plays the {v}",
            "{s} plays {v} in a band",
            "{s} is learning the {v}",
            "{s} practises the {v}",
        ],
        INSTRUMENTS,
        single=False,
        qualifiers=["in a jazz trio", "in a church band", "in a brass quintet", "at home"],
        denials=["{s} gave up the {v}", "{s} stopped playing the {v}"],
        questions=["What instrument do I play?", "What do I play in the band?"],
    ),
    Slot(
        "editor",
        ["{s} uses {v}", "{s} codes in {v}", "{p} editor is {v}", "{s} prefers {v} as an editor"],
        EDITORS,
        changes=["{s} switched to {v}", "{s} moved to {v}", "{s} uses {v} now"],
        questions=["Which editor do I use?", "What's my code editor?"],
    ),
    Slot(
        "os",
        ["{s} runs {v}", "{p} laptop runs {v}", "{s} is a {v} user", "{s} works on {v}"],
        OSES,
        changes=["{s} switched to {v}", "{s} moved their laptop to {v}"],
        questions=["What operating system do I use?", "What does my laptop run?"],
    ),
    Slot(
        "phone_model",
        ["{s} has {v}", "{p} phone is {v}", "{s} uses {v}"],
        PHONES,
        changes=["{s} upgraded to {v}", "{s} bought {v}", "{p} new phone is {v}"],
        questions=["What phone do I have?", "Which phone do I use?"],
    ),
    Slot(
        "studies",
        [
            "{s} studies {v}",
            "{s} is studying {v}",
            "{s} is doing a degree in {v}",
            "{s} is a {v} student",
        ],
        STUDIES,
        changes=["{s} switched their degree to {v}", "{s} now studies {v}"],
        denials=["{s} dropped out of {v}", "{s} no longer studies {v}"],
        questions=["What do I study?", "What is my degree in?"],
    ),
    Slot(
        "school",
        ["{s} goes to {v}", "{s} attends {v}", "{s} is enrolled at {v}"],
        SCHOOLS,
        questions=["Where do I study?"],
    ),
    Slot(
        "music",
        ["{s} listens to {v}", "{s} loves {v}", "{p} favourite music is {v}", "{s} is into {v}"],
        GENRES,
        single=False,
        qualifiers=["while working", "when cooking", "on the train", "at the gym"],
        questions=["What music do I like?", "What should I listen to?"],
    ),
    Slot(
        "reading",
        ["{s} reads {v}", "{s} enjoys {v}", "{p} favourite books are {v}"],
        BOOKS,
        single=False,
        qualifiers=["before bed", "on the commute", "on holiday"],
        questions=["What do I like to read?", "What books do I enjoy?"],
    ),
    Slot(
        "show",
        ["{s} is watching {v}", "{p} favourite show is {v}", "{s} is hooked on {v}"],
        SHOWS,
        changes=["{s} finished {v}", "{s} started watching {v}"],
        questions=["What show am I watching?", "What's my favourite series?"],
    ),
    Slot(
        "budget",
        [
            "{p} budget is {v}",
            "{s} wants to spend at most {v}",
            "{s} can afford about {v}",
            "{p} budget for the trip is {v}",
        ],
        _money,
        changes=[
            "{p} budget is now {v}",
            "{s} raised their budget to {v}",
            "{s} cut their budget to {v}",
        ],
        questions=["What is my budget?", "How much can I spend?"],
    ),
    Slot(
        "rent",
        ["{s} pays {v} a month in rent", "{p} rent is {v} a month", "{p} monthly rent is {v}"],
        _money,
        changes=["{p} rent went up to {v}", "{s} now pays {v} a month in rent"],
        questions=["How much is my rent?", "What do I pay for my flat?"],
    ),
    Slot(
        "salary",
        ["{s} earns {v} a month", "{p} salary is {v} a month", "{s} makes {v} a month"],
        _money,
        changes=["{s} got a raise to {v} a month", "{p} salary went up to {v}"],
        questions=["How much do I earn?", "What's my salary?"],
    ),
    Slot(
        "schedule",
        ["{s} works from {v} {q}", "{s} is at {v} {q}", "{s} spends {q} at {v}"],
        ["home", "the office", "a coworking space", "the library", "the lab", "the shop"],
        qualifiers=DAYS,
        changes=["{s} now works from {v} {q}", "{s} works from {v} {q} these days"],
        questions=["Where do I work from?", "Am I in the office?"],
    ),
    Slot(
        "wake",
        ["{s} wakes up at {v}", "{s} gets up at {v}", "{s} starts the day at {v}"],
        _time,
        qualifiers=DAYS,
        changes=["{s} now wakes up at {v}", "{s} gets up at {v} these days"],
        questions=["What time do I wake up?", "When do I get up?"],
    ),
    Slot(
        "appointment",
        ["{s} has a {v} appointment {q}", "{s} sees the {v} {q}", "{s} has to visit the {v} {q}"],
        ["dentist", "doctor", "optician", "physio", "vet", "bank", "lawyer", "barber"],
        single=False,
        qualifiers=["on Thursday", "next Monday", "on Friday morning", "tomorrow", "on the 14th"],
        questions=["Do I have any appointments?", "What's on my calendar?"],
    ),
    Slot(
        "event_date",
        ["{p} wedding is on {v}", "{p} wedding is planned for {v}"],
        _date,
        changes=["{p} wedding was moved to {v}", "{p} wedding is now on {v}"],
        questions=["When is my wedding?", "What date is the wedding?"],
    ),
    Slot(
        "birthday",
        ["{p} birthday is on {v}", "{s} was born on {v}", "{s} celebrates their birthday on {v}"],
        _date,
        questions=["When is my birthday?"],
    ),
    Slot(
        "goal",
        ["{s} is training for {v}", "{s} is preparing for {v}", "{p} goal is to finish {v}"],
        [
            "a marathon",
            "a half marathon",
            "a triathlon",
            "a 10k race",
            "a cycling sportive",
            "a swim across the bay",
            "a mountain trek",
        ],
        single=False,
        questions=["What am I training for?", "What's my fitness goal?"],
    ),
    Slot(
        "sport",
        ["{s} plays {v}", "{s} plays {v} every week", "{s} is on a {v} team"],
        [
            "football",
            "basketball",
            "tennis",
            "cricket",
            "netball",
            "badminton",
            "volleyball",
            "rugby",
            "hockey",
            "table tennis",
            "padel",
        ],
        single=False,
        qualifiers=DAYS,
        denials=[
            "{s} stopped playing {v}",
            "{s} quit the {v} team",
            "{s} doesn't play {v} anymore",
        ],
        questions=["What sports do I play?", "What do I play at weekends?"],
    ),
    Slot(
        "position",
        ["{s} plays as a {v}", "{s} is the team's {v}", "{s} plays {v} for their club"],
        [
            "goalkeeper",
            "striker",
            "defender",
            "midfielder",
            "winger",
            "point guard",
            "centre",
            "wicketkeeper",
            "fly-half",
        ],
        changes=["{s} plays as a {v} now", "{s} moved to {v}", "{s} switched to playing {v}"],
        questions=["What position do I play?"],
    ),
    Slot(
        "home_type",
        ["{s} lives in {v}", "{s} rents {v}", "{p} home is {v}"],
        [
            "a studio flat",
            "a two-bedroom flat",
            "a terraced house",
            "a bungalow",
            "a houseboat",
            "a shared house",
            "a farmhouse",
            "a high-rise apartment",
        ],
        changes=["{s} moved into {v}", "{s} now lives in {v}", "{s} bought {v}"],
        questions=["What kind of home do I have?", "Do I live in a flat or a house?"],
    ),
    Slot(
        "handle",
        ["{p} Instagram handle is {v}", "{s} posts on Instagram as {v}"],
        lambda rng: (
            f"@{rng.choice(NAMES).lower()}_{rng.choice(['art', 'eats', 'runs', 'travels', 'codes'])}"
        ),
        changes=["{p} new Instagram handle is {v}", "{s} renamed their Instagram to {v}"],
        questions=["What's my Instagram handle?"],
    ),
    Slot(
        "volunteer",
        ["{s} volunteers at {v}", "{s} helps out at {v}", "{s} gives time to {v}"],
        [
            "a food bank",
            "an animal shelter",
            "a hospice",
            "a youth club",
            "a library",
            "a community garden",
            "a refugee centre",
            "the local school",
        ],
        single=False,
        qualifiers=DAYS,
        denials=["{s} stopped volunteering at {v}", "{s} no longer helps at {v}"],
        questions=["Where do I volunteer?"],
    ),
    Slot(
        "smoking",
        ["{s} smokes {v}", "{s} smokes {v} a day"],
        ["cigarettes", "a pack", "cigars", "a pipe", "ten cigarettes", "a few cigarettes"],
        denials=["{s} quit smoking {v}", "{s} no longer smokes {v}", "{s} gave up {v}"],
        questions=["Do I smoke?"],
    ),
    Slot(
        "style",
        [
            "{s} prefers {v} answers",
            "{s} likes {v} replies",
            "{s} wants answers to be {v}",
            "{s} asks for {v} responses",
        ],
        [
            "short",
            "detailed",
            "bullet-point",
            "formal",
            "casual",
            "step-by-step",
            "concise",
            "thorough",
        ],
        changes=["{s} now prefers {v} answers", "{s} would rather have {v} answers now"],
        questions=["How should you answer me?", "What kind of replies do I like?"],
    ),
    Slot(
        "units",
        ["{s} prefers {v} units", "{s} measures things in {v} units", "{s} uses {v} units"],
        ["metric", "imperial"],
        changes=["{s} switched to {v} units"],
        questions=["Which units should you use?"],
    ),
    Slot(
        "timezone",
        ["{s} is in the {v} time zone", "{p} time zone is {v}", "{s} works on {v} time"],
        ["UTC", "CET", "EST", "PST", "IST", "JST", "EAT", "WAT", "AEST", "GMT"],
        changes=["{s} is on {v} time now", "{p} time zone changed to {v}"],
        questions=["What time zone am I in?"],
    ),
    Slot(
        "shop_hours",
        [
            "{p} shop closes at {v} {q}",
            "{p} shop opens until {v} {q}",
            "{s} closes the shop at {v} {q}",
        ],
        _time,
        qualifiers=DAYS,
        changes=["{p} shop now closes at {v} {q}"],
        questions=["When does my shop close?"],
    ),
    Slot(
        "owns_business",
        ["{s} runs {v}", "{s} owns {v}", "{s} manages {v}", "{s} is the owner of {v}"],
        [
            "a bakery",
            "a tailoring shop",
            "a hostel",
            "a food truck",
            "a hair salon",
            "a bike repair shop",
            "a small farm",
            "a recording studio",
            "a bookshop",
            "a cafe",
        ],
        single=False,
        denials=["{s} sold {v}", "{s} closed {v}", "{s} no longer runs {v}"],
        questions=["What business do I run?", "What do I own?"],
    ),
    Slot(
        "siblings",
        ["{s} has {v} siblings", "{s} grew up with {v} siblings"],
        lambda rng: rng.choice(["two", "three", "four", "2", "3", "5", "no"]),
        questions=["How many siblings do I have?"],
    ),
    Slot(
        "height",
        ["{s} is {v} tall", "{p} height is {v}"],
        lambda rng: rng.choice(
            [f"{rng.randint(150, 199)} cm", f"{rng.randint(5, 6)} foot {rng.randint(1, 11)}"]
        ),
        questions=["How tall am I?"],
    ),
    Slot(
        "weight_goal",
        ["{s} weighs {v}", "{p} weight is {v}"],
        lambda rng: f"{rng.randint(45, 120)} kg",
        changes=["{s} is down to {v}", "{s} now weighs {v}"],
        questions=["How much do I weigh?"],
    ),
    Slot(
        "room",
        ["{s} keeps {v} in the garage", "{p} {v} is stored in the shed"],
        ["a kayak", "a bicycle", "a lawnmower", "a workbench", "camping gear", "a freezer"],
        single=False,
        questions=["What's in my garage?"],
    ),
]

BANKS = "Nedbank|Absa|Barclays|HSBC|Santander|ING|Monzo|Revolut|Equity Bank|BDO|Itaú|a credit union".split(
    "|"
)
PEOPLE_FAMOUS = "Lionel Messi|Serena Williams|Chimamanda Ngozi Adichie|Hayao Miyazaki|Frida Kahlo|Usain Bolt|Burna Boy|Haruki Murakami|Simone Biles|Ed Sheeran|Greta Gerwig|Sachin Tendulkar".split(
    "|"
)
WANTS = "a motorbike|a new laptop|a trip to Japan|a wedding|a house deposit|a used car|a sewing machine|a camera|university fees|a holiday in Zanzibar|a drum kit|a sofa".split(
    "|"
)

SLOTS += [
    Slot(
        "favourite_person",
        [
            "{p} favourite {q} is {v}",
            "{s} admires {v} more than any other {q}",
            "{s} thinks {v} is the best {q}",
        ],
        PEOPLE_FAMOUS,
        qualifiers=[
            "footballer",
            "singer",
            "author",
            "film director",
            "athlete",
            "painter",
            "cricketer",
            "tennis player",
        ],
        changes=["{p} favourite {q} is now {v}"],
        questions=["Who do I admire?", "Who is my favourite star?"],
    ),
    Slot(
        "loan",
        ["{s} has a {q} with {v}", "{p} {q} is with {v}", "{s} pays off a {q} to {v}"],
        BANKS,
        qualifiers=[
            "mortgage",
            "car loan",
            "student loan",
            "credit card",
            "business loan",
            "savings account",
            "current account",
        ],
        changes=["{s} moved their {q} to {v}", "{p} {q} is now with {v}"],
        questions=["Which bank do I owe money to?", "Who is my bank?"],
    ),
    Slot(
        "saving",
        ["{s} is saving up for {v}", "{s} puts money aside for {v}", "{s} is saving for {v}"],
        WANTS,
        single=False,
        denials=["{s} stopped saving for {v}", "{s} gave up saving for {v}"],
        questions=["What am I saving for?", "What is my money going towards?"],
    ),
    Slot(
        "relative_home",
        ["{p} {q} lives in {v}", "{p} {q} is based in {v}", "{p} {q} has a flat in {v}"],
        PLACES,
        qualifiers=[
            "mother",
            "father",
            "brother",
            "sister",
            "grandmother",
            "uncle",
            "aunt",
            "son",
            "daughter",
            "cousin",
            "father-in-law",
            "mother-in-law",
        ],
        changes=["{p} {q} moved to {v}", "{p} {q} now lives in {v}"],
        questions=["Where does my family live?", "Where are my relatives?"],
    ),
]

#: Wordings of one fact that share few words; the pairs within a group are duplicates.
EQUIVALENTS: list[list[str]] = [
    ["{s} is vegan", "{s} eats no animal products", "{s} follows a plant-based diet"],
    ["{s} is vegetarian", "{s} doesn't eat meat", "{s} avoids meat and fish"],
    ["{s} is gluten intolerant", "{s} can't eat gluten", "{s} gets ill from wheat"],
    ["{s} is allergic to nuts", "{s} can't have nuts", "{s} reacts badly to nuts"],
    ["{s} is teetotal", "{s} doesn't drink alcohol", "{s} never drinks"],
    ["{s} is a night owl", "{s} works best late at night", "{s} stays up late working"],
    ["{s} is an early riser", "{s} gets up at dawn", "{s} is up before sunrise"],
    ["{s} is retired", "{s} no longer works", "{s} stopped working for good"],
    ["{s} is unemployed", "{s} is between jobs", "{s} is looking for work"],
    ["{s} is self-employed", "{s} works for themselves", "{s} runs their own business"],
    ["{s} is single", "{s} isn't seeing anyone", "{s} is not in a relationship"],
    ["{s} is married", "{s} has a husband or wife", "{s} is wed"],
    ["{s} is left-handed", "{s} writes with their left hand"],
    ["{s} is colour blind", "{s} can't tell red from green"],
    ["{s} is hard of hearing", "{s} wears a hearing aid", "{s} can't hear well"],
    ["{s} is Muslim", "{s} practises Islam", "{s} follows the Islamic faith"],
    ["{s} is Catholic", "{s} is a member of the Catholic church", "{s} goes to Mass"],
    ["{s} is Jewish and keeps Shabbat", "{s} observes the Sabbath as a Jew"],
    ["{s} doesn't own a car", "{s} has no car", "{s} gets around without a car"],
    ["{s} works from home", "{s} works remotely", "{s} has no office to go to"],
    ["{s} lives alone", "{s} has no flatmates", "{s} lives on their own"],
    ["{s} is afraid of flying", "{s} hates getting on planes", "{s} has a fear of flying"],
    ["{s} can't swim", "{s} never learned to swim"],
    ["{s} is a nurse at a children's hospital", "{s} works as a children's nurse in a hospital"],
    [
        "{s} is a retired teacher",
        "{s} taught school before retiring",
        "{s} used to be a teacher and is now retired",
    ],
    ["{s} has twins", "{s} is a parent of twins", "{s} has two children born on the same day"],
    ["{s} is an only child", "{s} has no brothers or sisters", "{s} has no siblings"],
    [
        "{s} dislikes long meetings",
        "{s} finds long meetings draining",
        "{s} prefers meetings to be short",
    ],
    [
        "{s} wants short answers",
        "{s} likes replies kept brief",
        "{s} prefers answers that get to the point",
    ],
    ["{s} owns a bakery", "{s} runs a bakery of their own", "{s} is the owner of a bakery"],
    ["{s} is training for a marathon", "{s} is preparing to run a marathon"],
    ["{s} has diabetes", "{s} is diabetic", "{s} lives with diabetes"],
    ["{s} is pregnant", "{s} is expecting a baby"],
    ["{s} commutes by bike", "{s} cycles to work", "{s} rides a bicycle to the office"],
    ["{s} is fluent in French", "{s} speaks French fluently", "{s} has fluent French"],
    ["{s} grew up on a farm", "{s} was raised on a farm", "{s} spent their childhood on a farm"],
]
