"""The auto-recall and calibration benchmarks, on a tiny LoCoMo-format file."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from test_bench_locomo import SAMPLE, _quiet, _write

from memorybank.providers.embedders.local import LocalEmbedder
from memorybank.rules.ranking import Ranking
from memorybank_bench.calibrate import run_calibration
from memorybank_bench.recall import run_recall


def _two(tmp_path: Path) -> Path:
    other = copy.deepcopy(SAMPLE)
    other["sample_id"] = "conv-other"
    other["conversation"]["session_1"][2]["text"] = "I bought a red kayak for the lake."
    other["qa"][0]["question"] = "What did Ann buy for the lake?"
    return _write(tmp_path / "two.json", [SAMPLE, other])


def test_run_recall(tmp_path: Path, embedder: LocalEmbedder) -> None:
    report = run_recall(_two(tmp_path), budget=200, cutoffs=(0.0, 0.15), console=_quiet())
    assert report.questions == 2 and [r.min_relevance for r in report.results] == [0.0, 0.15]
    everything, cut = report.results
    assert everything.evidence_recall == 1.0  # each evidence turn is quoted in the block
    assert 0 < everything.own_tokens <= 200 and everything.other_not_empty == 1.0
    assert cut.other_tokens <= everything.other_tokens
    assert json.loads(json.dumps(report.as_dict()))["budget"] == 200
    assert report.table().row_count == 2


def test_run_calibration(tmp_path: Path, embedder: LocalEmbedder) -> None:
    folder, own = tmp_path / "data", tmp_path / "own"
    (folder / "locomo").mkdir(parents=True)
    (folder / "facts").mkdir()
    own.mkdir()
    (folder / "locomo" / "locomo_dev.json").write_text(_two(tmp_path).read_text())
    pairs = [
        {"a": "User lives in Leeds", "b": "User is based in Leeds", "label": "duplicate"},
        {"a": "User has a dog named Biscuit", "b": "User's dog is Biscuit", "label": "duplicate"},
        {"a": "User plays the cello", "b": "User no longer plays the cello", "label": "update"},
        {"a": "User runs marathons", "b": "User ran the Berlin marathon", "label": "distinct"},
    ]
    (folder / "facts" / "pairs_dev.jsonl").write_text("\n".join(json.dumps(p) for p in pairs))
    profiles = [
        {
            "profile": name,
            "facts": [
                {"fact": f"User works as a {job}", "questions": ["what is my job?"]},
                {"fact": f"User lives in {city}", "questions": ["where do I live?"]},
                {"fact": f"User's dog is called {dog}", "questions": ["what's my dog's name?"]},
            ],
        }
        for name, job, city, dog in (
            ("nurse", "nurse", "Leeds", "Biscuit"),
            ("pilot", "pilot", "Oslo", "Pepper"),
        )
    ]
    for part in ("profiles_b.jsonl", "profiles_c.jsonl"):
        (own / part).write_text("\n".join(json.dumps(p) for p in profiles))
    sources = ("profiles", "fact pairs", "observations")
    report = run_calibration(folder, console=_quiet(), sources=sources, own=own)
    assert isinstance(report.ranking, Ranking)
    assert [s.source for s in report.rows] == [name for name in sources for _ in range(2)]
    assert [s.order for s in report.rows[:2]] == ["cosine alone", "ranking"]
    profiles_row = report.rows[1]
    assert profiles_row.questions == 12 and 0.0 <= profiles_row.top1 <= 1.0
    assert json.loads(json.dumps(report.as_dict()))["ranking"]["cosine"] > 0
    assert report.table().row_count == len(report.rows) + len(report.across) == 10
