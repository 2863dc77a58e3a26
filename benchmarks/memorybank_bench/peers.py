"""``memorybank bench peers``: memorybank and mem0 side by side in one run, on the same LoCoMo
facts and questions, each system in a process of its own (so each peak RSS is that system's),
one after the other; one table with both and the ratios.

What each process does is :func:`memorybank_bench.peers_run.measure`: open the system fresh
in a temp dir (memorybank: a SQLite file, default settings; mem0: ``infer=False``, the same
bundled MiniLM embedder, local Qdrant files), ingest every fact one call each (memorybank's
save runs its judge against the similar stored facts; mem0 with infer off stores as given),
search every question for 10 results, score recall@10. The parent reads each child's peak RSS
from the kernel (``wait4``'s ``ru_maxrss``).

With ``--ref COMMIT`` a third process measures memorybank as it was at that commit (its
``src/`` taken with ``git archive`` and put first on the child's path; the benchmark code is
this checkout's), so a change is compared with what it changed, in the same run.

``memorybank bench peers --data ../shared/data/locomo/locomo_dev.json --limit-conversations 2``

>>> report = run_peers(Path("locomo_dev.json"), limit_conversations=1)  # doctest: +SKIP
>>> console.print(report.table())  # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

import memorybank
import memorybank_bench
from memorybank.errors import MemoryBankError, ValidationError
from memorybank_bench.latency_report import machine_info, machine_line
from memorybank_bench.peers_mem0 import check_mem0_installed
from memorybank_bench.peers_run import SYSTEMS, TOP_K, load_workload

_MIB = 1024 * 1024
#: Issue 43's goals for memorybank against mem0, in one run: search p50 at most a third of
#: mem0's (p95 at most half), ingest at least half mem0's rate, MRR and recall@10 at least
#: 0.06 above mem0's.
GOAL_SEARCH_SPEEDUP = 3.0
GOAL_SEARCH_P95_SPEEDUP = 2.0
GOAL_INGEST_SPEEDUP = 0.5
GOAL_QUALITY_MARGIN = 0.06
#: The name of the reference commit's system in a report.
REF = "memorybank@ref"


def _max_rss_bytes(maxrss: int) -> int:
    """``ru_maxrss`` in bytes: kibibytes on Linux, bytes on macOS."""
    return maxrss if sys.platform == "darwin" else maxrss * 1024


def _child_env(src: Path | None = None) -> dict[str, str]:
    """This environment, with the folders this process imports memorybank and the benchmarks
    from first on the child's path (it must measure the same code; ``src``: another
    memorybank to measure, before them), and mem0 kept offline."""
    roots = sorted(
        str(Path(module.__file__ or "").resolve().parents[1])
        for module in (memorybank, memorybank_bench)
    )
    first = [] if src is None else [str(src)]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*first, *roots, *filter(None, [env.get("PYTHONPATH")])])
    env["MEM0_TELEMETRY"] = "False"
    return env


def measure_in_child(
    system: str,
    data: Path,
    workdir: Path,
    *,
    limit_conversations: int | None,
    limit_questions: int | None,
    src: Path | None = None,
) -> dict[str, Any]:
    """Run :mod:`memorybank_bench.peers_run` for ``system`` in a fresh Python process (with
    ``src``: the memorybank package found there); its result with ``peak_rss_mib``, that
    process's peak resident set as the kernel counted it."""
    out, log = workdir / "result.json", workdir / "output.log"
    command = [sys.executable, "-m", "memorybank_bench.peers_run", "--system", system]
    command += ["--data", str(data), "--workdir", str(workdir), "--out", str(out)]
    if limit_conversations is not None:
        command += ["--limit-conversations", str(limit_conversations)]
    if limit_questions is not None:
        command += ["--limit-questions", str(limit_questions)]
    with log.open("wb") as sink:
        env = _child_env(src)
        child = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env)
        # wait4, not wait: the resource usage of this child alone, not of all children so far.
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        tail = "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-15:])
        raise MemoryBankError(f"the {system} run failed (exit {child.returncode}):\n{tail}")
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    result["peak_rss_mib"] = _max_rss_bytes(usage.ru_maxrss) / _MIB
    return result


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator > 0 else float("nan")


def _mark(ok: bool, goal: str) -> str:
    return f"[green]✓ {goal}[/]" if ok else f"[red]✗ {goal}[/]"


_CELLS: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
    ("search p50 ms", lambda r: f"{r['search_ms']['p50']:.1f}"),
    ("search p95 ms", lambda r: f"{r['search_ms']['p95']:.1f}"),
    ("query embedding p50 ms", lambda r: f"{r['query_embed_ms']['p50']:.1f}"),
    ("ingest facts/s", lambda r: f"{r['ingest_per_s']:,.1f}"),
    ("ingest p50 / p95 ms", lambda r: f"{r['add_ms']['p50']:.1f} / {r['add_ms']['p95']:.1f}"),
    ("facts stored", lambda r: f"{r['stored']:,} of {r['facts']:,}"),
    ("recall@10", lambda r: f"{r['recall_at_10']:.3f}"),
    ("MRR", lambda r: f"{r['mrr']:.3f}"),
    ("peak RSS MiB", lambda r: f"{r['peak_rss_mib']:,.0f}"),
    ("open s", lambda r: f"{r['open_seconds']:.1f}"),
    ("load average, start → end", lambda r: "{:.1f} → {:.1f}".format(*r["load_avg"])),
]


def _versus(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """memorybank against mem0 per measure: the comparison and issue 43's goal."""
    ratios = _ratios(ours, theirs)
    p50, p95, ingest = (
        ratios["search_p50_speedup"],
        ratios["search_p95_speedup"],
        ratios["ingest_speedup"],
    )
    recall = ratios["recall_at_10_difference"]
    mrr = ratios["mrr_difference"]
    margin = GOAL_QUALITY_MARGIN
    return {
        "search p50 ms": (
            f"{p50:.1f}× faster",
            _mark(p50 >= GOAL_SEARCH_SPEEDUP, f"≥ {GOAL_SEARCH_SPEEDUP:g}×"),
        ),
        "search p95 ms": (
            f"{p95:.1f}× faster",
            _mark(p95 >= GOAL_SEARCH_P95_SPEEDUP, f"≥ {GOAL_SEARCH_P95_SPEEDUP:g}×"),
        ),
        "ingest facts/s": (
            f"{ingest:.2f}×",
            _mark(ingest >= GOAL_INGEST_SPEEDUP, f"≥ {GOAL_INGEST_SPEEDUP:g}×"),
        ),
        "recall@10": (f"{recall:+.3f}", _mark(recall >= margin, f"≥ +{margin:g}")),
        "MRR": (f"{mrr:+.3f}", _mark(mrr >= margin, f"≥ +{margin:g}")),
        "peak RSS MiB": (f"{ratios['peak_rss_ratio']:.2f}×", ""),
    }


def _ratios(ours: dict[str, Any], theirs: dict[str, Any]) -> dict[str, float]:
    """``ours`` against ``theirs``: speed-ups (above 1: ours faster), the recall@10 and MRR
    differences (above 0: ours finds more) and the peak-RSS ratio."""
    return {
        "search_p50_speedup": _ratio(theirs["search_ms"]["p50"], ours["search_ms"]["p50"]),
        "search_p95_speedup": _ratio(theirs["search_ms"]["p95"], ours["search_ms"]["p95"]),
        "ingest_speedup": _ratio(ours["ingest_per_s"], theirs["ingest_per_s"]),
        "recall_at_10_difference": ours["recall_at_10"] - theirs["recall_at_10"],
        "mrr_difference": ours["mrr"] - theirs["mrr"],
        "peak_rss_ratio": _ratio(ours["peak_rss_mib"], theirs["peak_rss_mib"]),
    }


@dataclass
class PeersReport:
    """Both systems' results from one run, and how memorybank compares."""

    data: str
    limit_conversations: int | None
    limit_questions: int | None
    conversations: int
    results: dict[str, dict[str, Any]]
    machine: dict[str, Any] = field(default_factory=dict)
    ref: str | None = None

    def ratios(self) -> dict[str, float]:
        """memorybank against mem0: speed-ups (above 1: memorybank faster), the recall@10 and
        MRR differences (above 0: memorybank finds more) and the peak-RSS ratio."""
        return _ratios(self.results["memorybank"], self.results["mem0"])

    def table(self) -> Table:
        """One row per measure: memorybank (and the reference commit's), mem0, the comparison
        and issue 43's goal."""
        ours, theirs = self.results["memorybank"], self.results["mem0"]
        systems = [name for name in ("memorybank", REF, "mem0") if name in self.results]
        ref = f", reference {self.ref}" if self.ref else ""
        table = Table(
            title="memorybank and mem0 on the same LoCoMo facts and questions (one run)",
            caption=(
                f"{self.conversations} conversations, {ours['facts']:,} facts ingested one call "
                f"each, {ours['questions']} questions searched for {TOP_K}; each system in its "
                "own process. Query embedding: each question embedded alone, the share of a search "
                "both pay alike. Ingest: memorybank's save runs its judge (each fact compared with "
                "the similar stored ones; refused duplicates are not stored), mem0 with "
                f"infer=False stores as given. mem0 {theirs['version']}, memorybank "
                f"{ours['version']}{ref}. Machine: {machine_line(self.machine)}"
            ),
        )
        table.add_column("measure", justify="left")
        for column in (*systems, "memorybank vs mem0", "goal"):
            table.add_column(column, justify="right")
        versus = _versus(ours, theirs)
        for name, cell in _CELLS:
            cells = [cell(self.results[system]) for system in systems]
            table.add_row(name, *cells, *versus.get(name, ("", "")))
        return table

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable form of the whole report."""
        return {
            "data": self.data,
            "limit_conversations": self.limit_conversations,
            "limit_questions": self.limit_questions,
            "conversations": self.conversations,
            "machine": self.machine,
            "systems": self.results,
            "ratios": self.ratios(),
            "ref": self.ref,
        }


def run_peers(
    data: Path,
    *,
    limit_conversations: int | None = None,
    limit_questions: int | None = None,
    console: Console | None = None,
    ref: str | None = None,
) -> PeersReport:
    """Measure memorybank (and with ``ref``, memorybank at that commit of this checkout's
    repository), then mem0, each in its own process on the same slice of ``data``: the first
    ``limit_conversations`` conversations, the first ``limit_questions`` scored questions of
    each."""
    console = console or Console(stderr=True)
    check_mem0_installed()
    if not data.exists():
        raise ValidationError(
            f"{data} does not exist: give locomo_dev.json or its folder", field="data"
        )
    scopes = load_workload(  # here too: a bad file or slice fails before any process starts
        data, limit_conversations=limit_conversations, limit_questions=limit_questions
    )
    machine = machine_info()
    machine["load_avg"] = os.getloadavg()[0]
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
        runs: list[tuple[str, str, Path | None]] = [(s, s, None) for s in SYSTEMS]
        if ref is not None:
            runs.insert(1, (REF, "memorybank", _checkout_src(ref, Path(tmp) / "ref")))
        for name, system, src in runs:
            workdir = Path(tmp) / name
            workdir.mkdir()
            with console.status(f"measuring {name} in its own process …"):
                results[name] = measure_in_child(
                    system,
                    data.resolve(),
                    workdir,
                    limit_conversations=limit_conversations,
                    limit_questions=limit_questions,
                    src=src,
                )
    machine["load_avg_end"] = os.getloadavg()[0]
    return PeersReport(
        data=str(data),
        limit_conversations=limit_conversations,
        limit_questions=limit_questions,
        conversations=len(scopes),
        results=results,
        machine=machine,
        ref=ref,
    )


def _checkout_src(ref: str, into: Path) -> Path:
    """The ``src/`` of commit ``ref`` of the repository this benchmark runs from, extracted
    into ``into`` (``git archive``: the working tree is not touched)."""
    root = Path(memorybank_bench.__file__).resolve().parents[2]
    into.mkdir(parents=True)
    try:
        archive = subprocess.run(
            ["git", "-C", str(root), "archive", ref, "src"], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise ValidationError(
            f"cannot take src/ of {ref!r} from the git repository at {root}: {exc}", field="ref"
        ) from exc
    return into / "src"


__all__ = ["PeersReport", "machine_line", "measure_in_child", "run_peers"]
