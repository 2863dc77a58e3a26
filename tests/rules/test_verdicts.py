"""The verifier behind the duplicate decision: one group of cases per rule and for the pair
model, written for this file (other people, values and verbs than the benchmark's pairs), judged
with the real embedding model as a save judges them."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from memorybank.providers.embedders.base import Embedder, Vectors
from memorybank.rules import verdicts
from memorybank.rules.pair_model import load_model
from memorybank.rules.verdicts import (
    THRESHOLDS,
    Relation,
    Verdict,
    _features,  # its cache counts the texts tokenised
    borderline,
    is_candidate,
    judge,
    needs_reconciling,
    refusable,
)

DUPLICATE, CONFLICT, DISTINCT = Relation.DUPLICATE, Relation.CONFLICT, Relation.DISTINCT


@pytest.fixture(scope="module")
def judged(embedder: Embedder) -> Callable[[str, str], Verdict]:
    """The judge as a save runs it: the pair's real cosine and the embedder's word vectors."""
    cache: dict[str, Vectors] = {}

    def vectors(texts: Sequence[str]) -> Vectors:
        missing = [t for t in dict.fromkeys(texts) if t not in cache]
        if missing:
            cache.update(zip(missing, embedder.embed(missing), strict=True))
        return np.stack([cache[t] for t in texts])

    def run(new: str, old: str) -> Verdict:
        pair = vectors([new, old])
        return judge(new, old, float(pair[0] @ pair[1]), vectors)

    return run


def test_interface() -> None:
    assert 0.0 < THRESHOLDS.candidate < 0.95
    assert THRESHOLDS.candidates >= 1
    assert 0.5 <= THRESHOLDS.duplicate < 1.0  # a probability, biased toward storing
    assert THRESHOLDS.duplicate == load_model().threshold
    verdict = judge("User enjoys hiking", "User enjoys hiking", 1.0)
    assert verdict == Verdict(DUPLICATE, verdict.why)
    assert verdict.why


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("User enjoys hiking in the Alps", "User enjoys hiking in the Alps"),
        # a part of the old fact
        ("User keeps bees and grows tomatoes", "User keeps bees"),
        ("User loves Italian food, especially risotto", "User loves Italian food"),
        # light words and inflections
        ("User's brother is named Omar", "User's brother is called Omar"),
        ("User owns three bicycles", "User has three bicycles"),
        ("User plays chess every weekend", "User is playing chess every weekend"),
        ("User is currently learning Portuguese", "User is learning Portuguese"),
        # a paraphrase with other words the embedding model finds close (no word list says so)
        (
            "User is building a budgeting app called Tally with Flutter 3",
            "User is developing Tally, a budgeting application, using Flutter 3",
        ),
        # the same words in another order, no role changed (issue 26's miss)
        ("User works remotely from home", "User works from home remotely"),
        # passive voice keeps the roles
        ("A mechanic is repairing the truck", "The truck is being repaired by a mechanic"),
        ("A nurse is helping an old man", "An old man is being helped by a nurse"),
        # "X is Y" / "Y is X"
        ("User's favourite band is Radiohead", "Radiohead is User's favourite band"),
    ],
)
def test_covered_facts_are_duplicates(
    judged: Callable[[str, str], Verdict], old: str, new: str
) -> None:
    assert judged(new, old).relation is DUPLICATE


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("User's locker code is 4417", "User's locker code is 4471"),
        ("User runs 10 km on Sundays", "User runs 21 km on Sundays"),
        ("User's dentist appointment is on June 9", "User's dentist appointment is on June 16"),
        ("User has two sisters", "User has three sisters"),
    ],
)
def test_different_numbers_conflict(
    judged: Callable[[str, str], Verdict], old: str, new: str
) -> None:
    verdict = judged(new, old)
    assert verdict.relation is CONFLICT
    assert "number" in verdict.why


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # a number word counts as its digits, and the counted thing is the same
        ("User has 2 monitors", "User added a third monitor to their desk"),
        ("User has 2 kids", "User's third kid was born in May"),
        ("User has two cats", "User has 3 cats"),
    ],
)
def test_another_count_of_the_same_thing_conflicts(
    judged: Callable[[str, str], Verdict], old: str, new: str
) -> None:
    verdict = judged(new, old)
    assert verdict.relation is CONFLICT and "number" in verdict.why


def test_counts_of_other_things_are_other_facts(judged: Callable[[str, str], Verdict]) -> None:
    assert judged("User has 3 cats", "User has two dogs").relation is DISTINCT
    # another activity counted the same way is a value to ask about, never surely replaced
    assert verdicts.replaces("User runs 3 days a week", [("User works 4 days a week", 0.84)]) == [
        False
    ]


def test_a_stem_extends_another_by_two_letters_at_most(
    judged: Callable[[str, str], Verdict],
) -> None:
    # "veget" (vegetable) is the start of "vegetarian", another word
    assert (
        judged(
            "User is vegetarian", "User keeps a vegetable garden with tomatoes and beans"
        ).relation
        is not DUPLICATE
    )
    assert judged("User is allergic to cats", "User has a cat allergy").relation is not CONFLICT


def test_may_update_is_a_near_conflict() -> None:
    fridays = "User now works from home on Fridays"
    assert verdicts.may_update(fridays, "User works from the office five days a week", 0.68)
    # a conflict only by its "now", about something else: too far to be an earlier note
    assert not verdicts.may_update(fridays, "User keeps a journal every evening", 0.45)
    # near, but both can be true
    assert not verdicts.may_update("User has 3 cats", "User has two dogs", 0.72)


def test_a_number_added_is_not_a_duplicate(judged: Callable[[str, str], Verdict]) -> None:
    assert judged("User has 4 grandchildren", "User has grandchildren").relation is not DUPLICATE
    assert not refusable("User has 4 grandchildren", "User has grandchildren")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("User eats gluten", "User does not eat gluten"),
        ("User owns a car", "User doesn't own a car"),
        ("User has never been to Japan", "User has been to Japan"),
        ("A boy is climbing a tree", "Nobody is climbing a tree"),
    ],
)
def test_negation_conflicts(judged: Callable[[str, str], Verdict], old: str, new: str) -> None:
    verdict = judged(new, old)
    assert verdict.relation is CONFLICT
    assert "negat" in verdict.why


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("User teaches at Riverside High", "User no longer teaches at Riverside High"),
        ("User smokes", "User quit smoking"),
        ("User lives in Oslo", "User moved to Bergen"),
        ("User's yoga class is on Thursdays", "User cancelled the yoga class"),
        ("User plays bass in a band", "User stopped playing bass"),
        ("User is vegan", "User started eating fish again"),
        ("User uses Jira for tickets", "User switched to Linear for tickets"),
        ("User has a parrot called Kiwi", "User's parrot Kiwi died"),
    ],
)
def test_ended_or_changed_state_conflicts(
    judged: Callable[[str, str], Verdict], old: str, new: str
) -> None:
    verdict = judged(new, old)
    assert verdict.relation is CONFLICT, verdict
    assert "state" in verdict.why or "negat" in verdict.why


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # opposite values, found as one value swapped in the same place (no list of opposites)
        ("User wants the light theme", "User wants the dark theme"),
        ("User's subscription is active", "User's subscription is expired"),
        ("User prefers morning meetings", "User prefers evening meetings"),
        ("User's doctor is Dr. Alvarez", "User's doctor is Dr. Okafor"),
        ("User's car is a Honda Civic", "User's car is a Tesla"),
        ("User writes backend code in Java", "User writes backend code in Elixir"),
    ],
)
def test_one_value_swapped_conflicts(
    judged: Callable[[str, str], Verdict], old: str, new: str
) -> None:
    verdict = judged(new, old)
    assert verdict.relation is CONFLICT
    assert "different value" in verdict.why


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # another person, another verb, more detail: both can be true
        ("User's nephew Tariq studies law", "User's niece Lena plays violin in an orchestra"),
        ("User bakes bread on Sundays", "User cycles to the office on Mondays"),
        ("User likes jazz", "User likes jazz and plays saxophone in a quartet"),
        # proper nouns are not covered by other proper nouns
        ("User visited Kyoto with Hana", "User visited Kyoto with Hana and Mark"),
        # the same attribute of another kind of thing, a value the embedding finds close
        ("User is single", "User is married"),
        ("User has two cats", "User has two children"),
        # the same stem in another role ("slicing" / "slices")
        ("A man is slicing a potato", "A man is eating potato slices"),
    ],
)
def test_other_facts_are_kept(judged: Callable[[str, str], Verdict], old: str, new: str) -> None:
    assert judged(new, old).relation is not DUPLICATE


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("A cat is chasing a mouse", "A mouse is chasing a cat"),
        ("User's sister tutors User's brother", "User's brother tutors User's sister"),
        ("A girl is jumping into the pool", "A girl is jumping out of the pool"),
        ("The woman is sitting on the bench", "The woman is sitting under the bench"),
        ("A van is parked in front of the bakery", "A van is parked in the bakery"),
        # an adjective moved to another noun
        ("A tall man is holding a red umbrella", "A red man is holding a tall umbrella"),
        ("User has a red bike and a blue car", "User has a blue bike and a red car"),
    ],
)
def test_other_roles_or_places_are_never_refused(
    judged: Callable[[str, str], Verdict], old: str, new: str
) -> None:
    """The pair model may find these close (same words); the rules keep it from being asked."""
    assert judged(new, old).relation is not DUPLICATE
    assert not refusable(new, old)


def test_a_longer_difference_is_another_fact_not_a_conflict() -> None:
    verdict = judge("User's cousin teaches maths in Leeds", "User's cousin plays golf", 0.6)
    assert verdict.relation is DISTINCT


def test_without_word_vectors_the_judge_refuses_less(
    judged: Callable[[str, str], Verdict],
) -> None:
    """The words that differ ("developing" / "building", "application" / "app") are close only
    to the embedding model: a caller with no embedder (consolidation) stores the fact."""
    old = "User is building a budgeting app called Tally with Flutter 3"
    new = "User is developing Tally, a budgeting application, using Flutter 3"
    assert judged(new, old).relation is DUPLICATE
    assert judge(new, old, 0.95).relation is not DUPLICATE


def test_one_value_swapped_is_never_refused(judged: Callable[[str, str], Verdict]) -> None:
    """A synonym ("big" / "large") and a sibling ("sister" / "brother") look alike to word
    vectors, so one word for another in the same place is kept, whatever the model says."""
    for old, new in [
        ("User has a big garden", "User has a large garden"),
        ("User has a sister", "User has a brother"),
        ("User drinks tea in the morning", "User drinks tea in the evening"),
    ]:
        assert not refusable(new, old)
        assert refusable(new, old, swaps=False)  # what the model is trained on
        assert judged(new, old).relation is not DUPLICATE


def test_bounds_skip_the_word_vectors_when_they_cannot_matter() -> None:
    """A pair the model refuses or keeps however close the differing words are never embeds
    them (a save stays one embedding pass)."""
    asked: list[str] = []

    def words(texts: Sequence[str]) -> Vectors:
        asked.extend(texts)
        return np.eye(len(texts), 8, dtype=np.float32)

    assert judge("User bakes bread on Sundays", "User knits scarves", 0.5, words).relation is (
        DISTINCT
    )
    assert judge("User keeps bees", "User keeps bees and grows tomatoes", 0.82, words).relation is (
        DUPLICATE
    )
    assert asked == []


def relation(new: str, old: str, similarity: float) -> Relation:
    return judge(new, old, similarity).relation


def test_pairs_without_content_words_fall_back_on_similarity() -> None:
    assert relation("It is what it is", "It is what it is", 0.99) is DUPLICATE
    assert relation("It is what it is", "That is that", 0.6) is DISTINCT
    # Seed 000's rule: strictly above 0.95 is the same.
    assert THRESHOLDS.same == 0.95
    assert relation("It is what it is", "That is that", 0.951) is DUPLICATE
    assert relation("It is what it is", "That is that", 0.95) is DISTINCT


def test_borderline_pairs_are_the_ones_the_rules_are_unsure_of() -> None:
    assert not borderline(judge("User likes tea", "User likes tea", 1.0), 1.0)
    swapped = judge("User's car is a Tesla", "User's car is a Honda", 0.8)
    assert borderline(swapped, 0.8)  # a one-word "different value"
    assert borderline(Verdict(DISTINCT), 0.9) and not borderline(Verdict(DISTINCT), 0.5)
    assert borderline(Verdict(DISTINCT), THRESHOLDS.borderline)
    negated = judge("User is not allergic to nuts", "User is allergic to nuts", 0.97)
    assert negated.relation is CONFLICT and not borderline(negated, 0.97)  # the rules are sure


def test_thresholds_choose_the_pairs_each_step_sees() -> None:
    t = THRESHOLDS
    assert 0.0 < t.candidate < t.reconcile < t.borderline < t.same <= 1.0
    assert is_candidate(t.candidate) and not is_candidate(t.candidate - 0.01)
    # remember asks its LLM from `reconcile` up to `same`, both included.
    assert needs_reconciling(t.reconcile) and needs_reconciling(t.same)
    assert not needs_reconciling(t.reconcile - 0.01) and not needs_reconciling(t.same + 0.001)


def test_each_text_is_read_once_however_many_pairs_it_is_in() -> None:
    """Judging is cheap in work done: no settler, no model, and every text tokenised once (the
    speed per pair is a figure of ``memorybank bench integrity``, not a timed test)."""
    olds = [f"User's gate code is {n + 1} and it changed on May {n}" for n in range(1000)]
    news = [f"User's gate code is {n}" for n in range(1000)]
    _features.cache_clear()
    verdicts = [judge(new, old, 0.9) for new in news for old in olds[:2]]
    verdicts += [judge(news[0], old, 0.9) for old in olds]
    assert len(verdicts) == 3000 and all(isinstance(v, Verdict) for v in verdicts)
    assert _features.cache_info().misses == len(set(olds) | set(news))  # 2000 texts, once each


# -- one definition: no other place of src/ holds a similarity threshold ---------------------
#
# A threshold is a number a similarity is compared with. Outside ``Thresholds`` in verdicts.py,
# src/ may compare a similarity only with a value it was handed (a parameter, such as the
# store's ``floor``) or with ``THRESHOLDS``: never with a number, a constant of its own module
# or a setting named like a threshold; and nothing named like a threshold is given a number.

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "memorybank"
_SIMILARITY = re.compile(r"simil|cosine|(?:^|_)sims?(?:$|_)", re.IGNORECASE)
_THRESHOLD = re.compile(r"threshold|dedup|duplicate|borderline|simil|cosine", re.IGNORECASE)
# A name of a threshold: the old ones (duplicate_threshold, _BORDERLINE_SIMILARITY,
# CANDIDATE_SIMILARITY) all said what they were about; ADD_BELOW is caught where it is used.
_Scope = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


def _names(node: ast.AST) -> set[str]:
    """The identifiers an expression mentions (names, attributes, parameters)."""
    found: set[str] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            found.add(child.id)
        elif isinstance(child, ast.Attribute):
            found.add(child.attr)
        elif isinstance(child, ast.arg):
            found.add(child.arg)
    return found


def _similarities(scope: ast.AST) -> set[str]:
    """The names in ``scope`` that hold a similarity: named so, or assigned from an expression
    that mentions one (``best = max(h.vector_similarity …)``), to a fixed point."""
    held = {n for n in _names(scope) if _SIMILARITY.search(n)}
    while True:
        more = set(held)
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value:
                if _names(node.value) & held:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    more |= {n for t in targets for n in _names(t)}
            elif isinstance(node, ast.For | ast.comprehension) and _names(node.iter) & held:
                more |= _names(node.target)
        if more == held:
            return held
        held = more


def _fraction(node: ast.AST) -> bool:
    """Whether ``node`` is a number a cosine could be compared with: a float in [-1, 1], not 0
    (counts, codes and overflow guards are whole numbers or out of range)."""
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, float)
        and 0.0 < abs(node.value) <= 1.0
    )


def _own_threshold(node: ast.AST, constants: set[str]) -> bool:
    """Whether ``node`` is a threshold of the module's own: a fraction, a module constant that
    is one, or a setting named like a threshold (``policy.duplicate_threshold``) that is not
    one of ``THRESHOLDS``."""
    if _fraction(node):
        return True
    if isinstance(node, ast.Name):
        return node.id in constants
    if isinstance(node, ast.Attribute):
        root: ast.AST = node
        while isinstance(root, ast.Attribute):
            root = root.value
        ours = isinstance(root, ast.Name) and root.id == "THRESHOLDS"
        return not ours and bool(_THRESHOLD.search(node.attr))
    return False


def _compare_sites(tree: ast.Module, skip: set[int]) -> list[tuple[int, str]]:
    """Comparisons of a similarity with a threshold of the module's own."""
    constants = {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value and _fraction(node.value)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }
    scope_of: dict[int, _Scope] = {}
    for scope in ast.walk(tree):
        if isinstance(scope, _Scope):
            for child in ast.walk(scope):  # inner scopes come later in the walk and win
                scope_of[id(child)] = scope
    held: dict[int, set[str]] = {}
    sites = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare) or id(node) in skip:
            continue
        if not all(isinstance(op, ast.Lt | ast.LtE | ast.Gt | ast.GtE) for op in node.ops):
            continue  # a threshold orders; "is None" or "==" is no threshold
        scope = scope_of[id(node)]
        names = held.setdefault(id(scope), _similarities(scope))
        sides = [node.left, *node.comparators]
        similar = [s for s in sides if _names(s) & names]
        if similar and any(_own_threshold(s, constants) for s in sides if s not in similar):
            sites.append((node.lineno, f"compares a similarity: {ast.unparse(node)}"))
    return sites


def _definition_sites(tree: ast.Module, skip: set[int]) -> list[tuple[int, str]]:
    """Names of thresholds given a number: variables, fields, parameters' defaults."""
    sites = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            named = sorted(n for t in targets for n in _names(t) if _THRESHOLD.search(n))
            value = node.value
            if isinstance(value, ast.Call) and value.args:  # Field(0.95, ge=…)
                value = value.args[0]
            if named and _fraction(value):
                sites.append((node.lineno, f"gives {named[0]} a number"))
        elif isinstance(node, ast.arguments):
            positional = [*node.posonlyargs, *node.args]
            pairs = list(
                zip(positional[len(positional) - len(node.defaults) :], node.defaults, strict=True)
            )
            pairs += [
                (a, d)
                for a, d in zip(node.kwonlyargs, node.kw_defaults, strict=True)
                if d is not None
            ]
            for param, default in pairs:
                if _fraction(default) and _THRESHOLD.search(param.arg):
                    sites.append((param.lineno, f"gives the parameter {param.arg} a number"))
    return sites


def threshold_sites(source: str) -> list[tuple[int, str]]:
    """(line, what) for each place in ``source`` that holds a similarity threshold of its own
    (the body of a class named ``Thresholds``, the one definition, aside)."""
    tree = ast.parse(source)
    skip = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.name == "Thresholds"
        for inner in ast.walk(node)
    }
    return sorted(_compare_sites(tree, skip) + _definition_sites(tree, skip))


def test_the_threshold_scan_finds_the_old_sites() -> None:
    """The kinds of site issue 24 removed, written as they were, and what replaced them."""
    old = """
ADD_BELOW = 0.55
class PolicySettings:
    duplicate_threshold: float = Field(0.95, ge=-1.0, le=1.0)
def reconcile(hits, bank):
    best = max((h.vector_similarity or 0.0 for h in hits), default=0.0)
    return best < ADD_BELOW or best > bank.policy.duplicate_threshold
def judge(new, old, similarity):
    if similarity > 0.95:
        return True
def insert(memories, *, dedup_threshold=0.95):
    pass
"""
    assert [line for line, _ in threshold_sites(old)] == [4, 7, 7, 9, 11]
    now = """
class Thresholds:
    same: float = 0.95
    borderline: float = 0.85
def borderline(similarity):
    return similarity >= THRESHOLDS.borderline
def near(store, floor):
    return [sim for sim in store.sims() if sim >= floor]
def reconcile(hits):
    best = max((h.vector_similarity or 0.0 for h in hits), default=0.0)
    return needs_reconciling(best)
"""
    assert threshold_sites(now) == []


def test_no_other_place_holds_a_similarity_threshold() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE.parent).as_posix()}:{line} {what}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, what in threshold_sites(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, (
        "similarity thresholds outside memorybank.rules.verdicts.Thresholds (use THRESHOLDS):\n"
        + "\n".join(offenders)
    )


def test_codes_of_letters_and_digits_are_compared_whole() -> None:
    # Ids, plates and flats that differ only in their letters are different values.
    for new, old in [
        ("User's licence plate is XY12ZZE", "User's licence plate is AB12CDE"),
        ("User lives in apartment 4C", "User lives in apartment 4B"),
        ("Counter of mem_01M8EJTTB9KY is at 3", "Counter of mem_01M8EJTTA9KY is at 3"),
    ]:
        assert judge(new, old, 0.95).relation is Relation.CONFLICT, (new, old)
    # A number with its unit or ordinal still states just the number.
    same = judge("User's office is on the 3rd floor", "User's office is on the 3rd floor", 0.99)
    assert same.relation is Relation.DUPLICATE


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # the facts share only the person they are about
        ("Priya has been learning the cello this year", "Priya can't eat gluten"),
        ("Omar enjoys meeting new people at conferences", "Omar hasn't been to Japan yet"),
        # the "not" denies a clause of its own, not the old fact
        ("Lena coaches a youth football team", "Lena encourages her team not to give up"),
        ("User likes camping with friends", "User goes camping often but has never tried climbing"),
    ],
)
def test_a_denial_elsewhere_is_not_sure_to_replace(old: str, new: str) -> None:
    assert verdicts.replaces(new, [(old, 0.6)]) == [False]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("User eats meat", "User doesn't eat meat"),
        ("User has a car", "User has no car"),
        ("User drinks coffee", "User does not drink coffee"),
    ],
)
def test_a_denial_of_the_same_claim_replaces_it(old: str, new: str) -> None:
    assert verdicts.replaces(new, [(old, 0.8)]) == [True]


def test_a_fact_of_several_claims_is_never_surely_replaced() -> None:
    # nine content words: several claims, whatever one of them says
    long = (
        "User's team faced tough opponents this season but they do not quit and back each "
        "other up to get better at basketball"
    )
    assert verdicts.replaces(long, [("User's team had a tough season", 0.7)]) == [False]
