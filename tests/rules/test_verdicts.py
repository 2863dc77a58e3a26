"""The decisions made from a judge's scores (pure: no model here; the shipped model's answers
are tested in tests/providers/test_judge_local.py and on the product path in
tests/core/test_newest_wins.py), and the one-definition rule for similarity thresholds."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from memorybank.rules.verdicts import (
    THRESHOLDS,
    PairScores,
    Relation,
    is_candidate,
    needs_reconciling,
    same_slot,
    surely_replaces,
    unsure,
    verdict,
    weighed,
)


def test_a_sure_duplicate_is_refused_and_a_weaker_one_only_reported() -> None:
    assert verdict(PairScores(0.99, 0.005, 0.005), "a b", "a c", 0.8).relation is Relation.DUPLICATE
    weak = verdict(PairScores(0.3, 0.1, 0.6), "a b", "a c", 0.8)
    assert weak.relation is Relation.DISTINCT


def test_a_number_the_stored_fact_lacks_is_never_refused() -> None:
    # As the shipped model's scores are read (``weighed``), before the verdict.
    scores = PairScores(0.99, 0.005, 0.005)
    old, new = "User's flat is number 11", "User's flat is number 12"
    said = verdict(weighed(scores, old, new), new, old, 0.8)
    assert said.relation is Relation.CONFLICT  # still shown beside the other
    old, new = "User's office is on floor 3 of the tower", "User's office is on floor 3"
    same = verdict(weighed(scores, old, new), new, old, 0.8)
    assert same.relation is Relation.DUPLICATE


def test_a_likely_update_is_a_conflict_and_only_a_sure_one_is_retired() -> None:
    likely = PairScores(0.05, THRESHOLDS.conflict + 0.05, 0.6)
    assert verdict(likely, "x", "y", 0.8).relation is Relation.CONFLICT
    assert same_slot(likely)
    assert surely_replaces([likely]) == [False]
    assert surely_replaces([PairScores(0.0, THRESHOLDS.sure, 0.0)]) == [True]


def test_one_new_fact_retires_one_stored_fact_at_most() -> None:
    both = [PairScores(0.0, 0.97, 0.03), PairScores(0.0, 0.9995, 0.0005), PairScores(0, 0.1, 0.9)]
    assert surely_replaces(both) == [False, True, False]
    assert surely_replaces([]) == []


def test_unsure_pairs_are_the_ones_an_llm_is_asked() -> None:
    assert unsure(PairScores(0.45, 0.3, 0.25))
    assert not unsure(PairScores(0.02, 0.9, 0.08))


def test_thresholds_choose_the_pairs_each_step_sees() -> None:
    t = THRESHOLDS
    assert 0.0 < t.candidate < t.reconcile < t.same <= 1.0
    assert 0.0 < t.conflict < t.duplicate < 1.0 and t.conflict < t.sure < 1.0
    assert is_candidate(t.candidate) and not is_candidate(t.candidate - 0.01)
    assert needs_reconciling(t.reconcile) and not needs_reconciling(t.same + 0.01)


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
