"""``memorybank bench peers``: the workload both systems get, and one real run of memorybank and
mem0 (each in its own process) on a slice of the LoCoMo development data, through the CLI.

Which system is faster is not asserted (that is what the bench reports, on the machine it runs
on): only that both were measured on the same work and the report's numbers are sane."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from test_bench_facts import _sample
from test_bench_locomo import _write
from tests.shared_data import shared_file
from typer.testing import CliRunner

from memorybank import MemoryBankError, ValidationError
from memorybank.cli import app
from memorybank_bench.peers import machine_line, measure_in_child, run_peers
from memorybank_bench.peers_run import load_workload


def test_the_workload_keeps_facts_of_fit_length_and_questions_with_covered_gold(
    tmp_path: Path,
) -> None:
    data = _write(tmp_path / "tiny.json", [_sample(), {**_sample(), "sample_id": "conv-two"}])
    scopes = load_workload(data)
    assert [s.user for s in scopes] == ["conv-test", "conv-two"]
    facts = scopes[0].facts
    assert len(facts) == 5  # "Hi" is under 10 characters; the repeated fact is offered twice
    assert facts[0].dia_ids == ("D1:3",) and facts[0].occurred_at is not None
    assert [(p.question, p.gold) for p in scopes[0].probes] == [
        ("What is the name of the greyhound Ann adopted?", ("D1:3",))
    ]
    assert len(load_workload(data, limit_conversations=1)) == 1


def test_a_file_without_searchable_questions_is_refused(tmp_path: Path) -> None:
    data = _write(tmp_path / "tiny.json", [{**_sample(), "qa": []}])
    with pytest.raises(ValidationError, match="no question with covered evidence"):
        load_workload(data)
    with pytest.raises(ValidationError, match="does not exist"):
        run_peers(tmp_path / "missing.json")


def test_a_failed_child_run_says_how_it_ended(tmp_path: Path) -> None:
    data = _write(tmp_path / "tiny.json", [_sample()])
    # An unknown system: the child's own argument check ends it with exit 2 and says why.
    with pytest.raises(
        MemoryBankError, match=r"the nope run failed \(exit 2\)[\s\S]*invalid choice"
    ):
        measure_in_child("nope", data, tmp_path, limit_conversations=None, limit_questions=None)


def test_the_machine_line_names_cores_and_load() -> None:
    info = {
        "cpu_model": "AMD EPYC",
        "usable_cpus": 2,
        "cpu_count": 4,
        "memory_mib": 24576,
        "python": "3.11.7",
        "sqlite": "3.54.1",
        "onnxruntime": "1.32.0",
        "numpy": "2.4.6",
        "load_avg": 1.25,
        "load_avg_end": 2.0,
    }
    line = machine_line(info)
    assert line.startswith("AMD EPYC, 2 of 4 cores, 24 GiB, Python 3.11.7, SQLite 3.54.1")
    assert line.endswith("load average 1.2 at the start, 2.0 at the end")


@pytest.mark.slow  # two processes, each loading the model and ingesting a conversation
def test_cli_bench_peers_measures_both_systems_on_the_same_slice(tmp_path: Path) -> None:
    pytest.importorskip("mem0")
    pytest.importorskip("langchain_core.embeddings")
    dev = shared_file("data/locomo/locomo_dev.json")
    out = tmp_path / "peers.json"
    arguments = ["bench", "peers", "--data", str(dev), "--limit-conversations", "1"]
    arguments += ["--limit-questions", "5", "--json", str(out)]
    result = CliRunner().invoke(app, arguments, env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "memorybank vs mem0" in said and "recall@10" in said and "load average" in said
    report = json.loads(out.read_text())
    systems = report["systems"]
    assert set(systems) == {"memorybank", "mem0"}
    facts = systems["memorybank"]["facts"]
    assert facts > 100  # conv-26's observations of 10–500 characters
    for system in systems.values():
        assert system["facts"] == facts and system["questions"] == 5  # the same work for both
        assert 0 < system["stored"] <= facts
        assert 0.0 <= system["recall_at_10"] <= 1.0 and 0.0 <= system["mrr"] <= 1.0
        assert 0 < system["search_ms"]["p50"] <= system["search_ms"]["p95"]
        assert system["search_ms"]["count"] == 5 and system["add_ms"]["count"] == facts
        assert system["query_embed_ms"]["count"] == 5
        assert len(system["load_avg"]) == 2 and min(system["load_avg"]) >= 0
        assert system["ingest_per_s"] > 0
        # A Python process with an ONNX model loaded holds tens of MiB at the very least.
        assert 50 < system["peak_rss_mib"] < 8192
        assert system["rss_after_ingest_mib"] <= system["peak_rss_mib"] + 1
    assert systems["mem0"]["stored"] == facts  # infer off: stored as given
    ratios = report["ratios"]
    assert ratios["search_p50_speedup"] == pytest.approx(
        systems["mem0"]["search_ms"]["p50"] / systems["memorybank"]["search_ms"]["p50"]
    )
    assert not any(math.isnan(value) for value in ratios.values())
    assert report["machine"]["usable_cpus"] >= 1


def test_a_reference_commit_is_measured_from_its_own_source(tmp_path: Path) -> None:
    from memorybank_bench.peers import _checkout_src

    src = _checkout_src("HEAD", tmp_path / "ref")
    assert (src / "memorybank" / "core" / "bank.py").is_file()
    with pytest.raises(ValidationError, match="cannot take src/ of 'no-such-commit'"):
        _checkout_src("no-such-commit", tmp_path / "none")
