"""The product-path benchmark on LoCoMo's observations saved as facts: loading, scoring, the
report's shape on a tiny file and on a slice of the development data, and the CLI command.

Today's values are not asserted (ranking and the prompt block are being changed): only that
the report is well formed and its numbers are shares that agree with each other."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest
from test_bench_locomo import SAMPLE, _quiet, _write
from tests.shared_data import shared_file
from typer.testing import CliRunner

from memorybank.cli import app
from memorybank.providers.embedders.local import LocalEmbedder
from memorybank_bench.locomo_facts import (
    FactScores,
    FactsReport,
    fact_recall_at,
    fact_reciprocal_rank,
    load_observations,
    run_facts,
)

OBSERVATION: dict[str, Any] = {
    "session_1_observation": {
        "Ann": [
            ["Ann adopted a greyhound named Biscuit from a shelter in Leeds.", "D1:03"],
            ["Ann adopted a greyhound named Biscuit from a shelter in Leeds.", "D1:3"],
            ["Hi", "D1:1"],
        ],
        "Bob": [["Bob has a busy week with many meetings at work.", ["D1:2", "D1:4"]]],
    },
    "session_2_observation": {
        "Bob": [["Bob started learning the cello last month.", "D2:1"]],
        "Ann": [["Ann is training for a marathon in Berlin in late September.", "D2:2; D2:4"]],
    },
}


def _sample() -> dict[str, Any]:
    sample = copy.deepcopy(SAMPLE)
    sample["observation"] = OBSERVATION
    return sample


def _check(report: FactsReport) -> None:
    """Well formed: shares in [0, 1], R@10 ≥ R@5, counts that add up, JSON round trip."""
    groups = [report.overall, *report.per_category.values()]
    for scores in groups:
        for value in (scores.recall_at_5, scores.recall_at_10, scores.mrr, scores.block_recall):
            assert 0.0 <= value <= 1.0
        assert scores.recall_at_10 >= scores.recall_at_5
        assert (scores.mrr > 0) == (scores.recall_at_10 > 0)  # both look at the same 10 facts
    assert report.questions == report.overall.questions
    assert sum(s.questions for s in report.per_category.values()) == report.questions
    refused = report.refused_duplicate + report.refused_invalid
    assert report.saved + refused + report.skipped_length == report.observations
    assert report.search.count == report.block.count == report.questions
    assert report.save.count == report.observations - report.skipped_length
    for latency in (report.save, report.search, report.block):
        assert latency.count == 0 or 0 < latency.p50 <= latency.p95
    as_dict = json.loads(json.dumps(report.as_dict()))
    assert as_dict["counts"]["questions"] == report.questions
    assert len(as_dict["refused"]) == report.refused_duplicate + report.refused_invalid
    assert report.table().row_count == 1 + sum(
        bool(s.questions) for s in report.per_category.values()
    )


def test_load_observations(tmp_path: Path) -> None:
    observations = load_observations(_write(tmp_path / "tiny.json", [_sample()]))
    found = observations["conv-test"]
    assert [o.dia_ids for o in found] == [
        ("D1:3",),
        ("D1:3",),
        ("D1:1",),
        ("D1:2", "D1:4"),
        ("D2:1",),
        ("D2:2", "D2:4"),
    ]
    assert [o.session for o in found] == [1, 1, 1, 1, 2, 2]
    assert found[3].speaker == "Bob"


def test_fact_scoring() -> None:
    ranked = [frozenset({"D1:1"}), frozenset(), frozenset({"D2:1", "D2:2"})]
    assert fact_recall_at(ranked, ["D2:1", "D2:2", "D3:1"], 2) == 0.0
    assert fact_recall_at(ranked, ["D2:1", "D2:2", "D3:1"], 3) == pytest.approx(2 / 3)
    assert fact_recall_at([], ["D1:1"], 5) == 0.0 and fact_recall_at(ranked, [], 5) == 0.0
    assert fact_reciprocal_rank(ranked, ["D2:2"]) == pytest.approx(1 / 3)
    assert fact_reciprocal_rank(ranked, ["D9:9"]) == 0.0


def test_run_facts_tiny(tmp_path: Path, embedder: LocalEmbedder) -> None:
    report = run_facts(_write(tmp_path / "tiny.json", [_sample()]), console=_quiet())
    assert (report.observations, report.skipped_length) == (6, 1)  # "Hi" is too short
    assert report.refused_duplicate == 1  # the same observation twice
    assert report.saved == 4 and report.refused_invalid == 0
    # The greyhound question (D1:3) is the only scored one of categories 1–4.
    assert report.questions == 1 and report.per_category["single-hop"].questions == 1
    assert report.overall.block_recall == 1.0  # four short facts fit in 500 tokens
    _check(report)


def test_run_facts_dev_slice(embedder: LocalEmbedder) -> None:
    dev = shared_file("data/locomo/locomo_dev.json")
    report = run_facts(dev, limit_conversations=1, max_sessions=3, console=_quiet())
    assert report.conversations == 1 and report.observations > 10
    assert report.questions > 5  # questions whose evidence the first sessions cover
    _check(report)


def test_cli_bench_facts(tmp_path: Path, embedder: LocalEmbedder) -> None:
    data = _write(tmp_path / "tiny.json", [_sample(), {**_sample(), "sample_id": "conv-two"}])
    out = tmp_path / "facts.json"
    # Wide enough that Rich does not fold the temporary path; words compared across wraps.
    result = CliRunner().invoke(
        app,
        ["bench", "facts", "--data", str(data), "--limit-conversations", "1", "--json", str(out)],
        env={"COLUMNS": "300"},
    )
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "block recall" in said and f"Wrote {out}" in said
    written = json.loads(out.read_text())
    assert written["counts"]["conversations"] == 1
    assert set(written["per_category"]) == {"multi-hop", "temporal", "open-domain", "single-hop"}
    assert not math.isnan(written["latency_ms"]["search"]["p50"])


def test_empty_scores() -> None:
    empty = FactScores(0, 0.0, 0.0, 0.0, 0.0)
    assert empty.as_dict()["questions"] == 0
