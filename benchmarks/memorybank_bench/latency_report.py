"""The latency benchmark's report: targets, percentiles, one row per database size and the
machine it was measured on."""

from __future__ import annotations

import math
import os
import platform
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import psutil
from rich.table import Table

import memorybank

_MIB = 1024 * 1024


@dataclass(frozen=True)
class Targets:
    """Goals on the reference 2-core machine, at ``at_n`` stored memories."""

    at_n: int = 1_000_000
    search_p50_ms: float = 15.0
    search_p95_ms: float = 40.0
    save_p50_ms: float = 20.0
    bulk_ratio: float = 0.85
    peak_rss_mib: float = 2048.0
    recall: float = 0.95

    def check(self, row: LatencyRow) -> dict[str, bool]:
        """Each target's name → whether ``row`` meets it."""
        checks = {
            "search p50": row.search.p50 <= self.search_p50_ms,
            "search p95": row.search.p95 <= self.search_p95_ms,
            "save p50": row.save.p50 <= self.save_p50_ms,
            "bulk import": row.bulk_ratio >= self.bulk_ratio,
            "peak RSS": row.peak_rss_mib <= self.peak_rss_mib,
        }
        if row.recall is not None:
            checks["vector recall"] = row.recall >= self.recall
        return checks


#: The PostgreSQL targets: a network round trip per query, so more latency is allowed.
POSTGRES_TARGETS = Targets(search_p50_ms=25.0, search_p95_ms=60.0)


@dataclass(frozen=True)
class Percentiles:
    """p50/p95/p99 of a latency sample, in milliseconds."""

    p50: float
    p95: float
    p99: float
    mean: float
    count: int

    @classmethod
    def of(cls, seconds: Sequence[float]) -> Percentiles:
        """Percentiles of durations given in seconds."""
        if not seconds:
            return cls(math.nan, math.nan, math.nan, math.nan, 0)
        ms = np.asarray(seconds, dtype=np.float64) * 1000.0
        p50, p95, p99 = (float(v) for v in np.percentile(ms, [50, 95, 99]))
        return cls(p50, p95, p99, float(ms.mean()), len(ms))


@dataclass
class BuildStats:
    """How the database of one size came to be."""

    path: str
    rows_written: int = 0
    seconds: float = 0.0
    reused: bool = False
    copied_from: str | None = None
    #: PostgreSQL: time spent (re)building the search indexes after a bulk load.
    index_seconds: float = 0.0

    @property
    def rows_per_s(self) -> float:
        return self.rows_written / self.seconds if self.seconds > 0 else 0.0


@dataclass
class LatencyRow:
    """Measurements at one database size."""

    n: int
    users: int
    in_scope: int
    search: Percentiles
    save: Percentiles
    save_duplicates: int
    bulk_items: int
    bulk_per_s: float
    raw_embed_per_s: float
    peak_rss_mib: float
    rss_mib: float
    db_bytes: int
    build: BuildStats
    #: 1-minute load average when the size was measured (other work skews the numbers).
    load_avg: float = 0.0
    #: PostgreSQL: mean recall@10 of the store's vector search against exact search (what a
    #: search gets), and of the HNSW index alone on the same queries (the store reads small
    #: scopes exactly, so the two differ).
    recall: float | None = None
    hnsw_recall: float | None = None
    #: ``MemoryBank.auto_recall`` (auto-recall: the always-loaded memories plus those relevant
    #: to the query, a 500-token block) for the same queries as ``search``.
    auto_recall: Percentiles | None = None
    #: p50 ms of each part of a search and of what the block adds (``measure_breakdown``).
    breakdown: dict[str, float] | None = None

    @property
    def bulk_ratio(self) -> float:
        """Bulk import rate as a fraction of the raw embedder throughput."""
        return self.bulk_per_s / self.raw_embed_per_s if self.raw_embed_per_s > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        data = asdict(self)
        data["bulk_ratio"] = self.bulk_ratio
        data["build"]["rows_per_s"] = self.build.rows_per_s
        return data


def machine_info() -> dict[str, Any]:
    """The machine and library versions a report was measured with."""
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 1
    import onnxruntime

    return {
        "cpu_count": os.cpu_count(),
        "usable_cpus": usable,
        "cpu_model": _cpu_model(),
        "memory_mib": round(psutil.virtual_memory().total / _MIB),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "sqlite": apsw.sqlite_lib_version(),
        "onnxruntime": onnxruntime.__version__,
        "numpy": np.__version__,
        "memorybank": memorybank.__version__,
    }


def machine_line(info: dict[str, Any]) -> str:
    """One line naming the machine and the libraries a report was measured with.

    >>> line = machine_line({"cpu_model": "AMD EPYC", "usable_cpus": 2, "cpu_count": 2,
    ...     "memory_mib": 24576, "python": "3.11.7", "sqlite": "3.54.1",
    ...     "onnxruntime": "1.32.0", "numpy": "2.4.6", "load_avg": 1.5})
    >>> line[:49], line[-16:]
    ('AMD EPYC, 2 of 2 cores, 24 GiB, Python 3.11.7, SQ', 'load average 1.5')
    """
    load = f"{info['load_avg']:.1f}"
    if "load_avg_end" in info:  # other work on the machine skews the numbers: say how much
        load += f" at the start, {info['load_avg_end']:.1f} at the end"
    return (
        f"{info['cpu_model']}, {info['usable_cpus']} of {info['cpu_count']} cores, "
        f"{info['memory_mib'] / 1024:.0f} GiB, Python {info['python']}, SQLite {info['sqlite']}, "
        f"onnxruntime {info['onnxruntime']}, numpy {info['numpy']}; "
        f"load average {load}"
    )


def _ratios(row: LatencyRow) -> str:
    """ "block / search, save / search" of one row's p50s: the goals are ratios (issue 36)."""
    block = "–" if row.auto_recall is None else f"{row.auto_recall.p50 / row.search.p50:.2f}×"
    return f"{block} / {row.save.p50 / row.search.p50:.2f}×"


def _recalls(row: LatencyRow) -> str:
    """ "search / HNSW" recall@10 of a PostgreSQL row, or "–"."""
    if row.recall is None:
        return "–"
    hnsw = "–" if row.hnsw_recall is None else f"{row.hnsw_recall:.3f}"
    return f"{row.recall:.3f} / {hnsw}"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@dataclass
class LatencyReport:
    """Rows per size plus what they were measured on and against."""

    rows: list[LatencyRow]
    settings: dict[str, Any]
    machine: dict[str, Any] = field(default_factory=machine_info)
    targets: Targets = field(default_factory=Targets)

    def verdict(self, row: LatencyRow) -> str:
        """``"pass"``, or ``"fail: …"`` naming the missed targets."""
        missed = [name for name, ok in self.targets.check(row).items() if not ok]
        return "pass" if not missed else "fail: " + ", ".join(missed)

    def table(self) -> Table:
        """The results as a rich table."""
        t = self.targets
        table = Table(
            title="memorybank latency",
            caption=(
                f"targets at N = {t.at_n:,}: search p50 ≤ {t.search_p50_ms:g} ms, "
                f"p95 ≤ {t.search_p95_ms:g} ms; save p50 ≤ {t.save_p50_ms:g} ms; bulk import "
                f"≥ {t.bulk_ratio:.0%} of raw embedder; peak RSS ≤ {t.peak_rss_mib:,.0f} MiB "
                "(marks on smaller N are indicative)"
            ),
        )
        for name in (
            "N",
            "in scope",
            "search p50 ms",
            "search p95 ms",
            "save p50 ms",
            "save p95 ms",
            "bulk import/s",
            "% of raw embedder",
            "peak RSS MiB",
        ):
            table.add_column(name, justify="right")
        with_auto = any(row.auto_recall is not None for row in self.rows)
        if with_auto:
            table.add_column("auto-recall p50 / p95 ms", justify="right")
            table.add_column("p50 ÷ search: auto-recall / save", justify="right")
        with_recall = any(row.recall is not None for row in self.rows)
        if with_recall:
            table.add_column("recall@10 search / HNSW", justify="right")
        table.add_column("targets")
        for row in self.rows:
            recall = [_recalls(row)] if with_recall else []
            if with_auto:
                auto = row.auto_recall
                recall[:0] = ["-" if auto is None else f"{auto.p50:.1f} / {auto.p95:.1f}"]
                recall.insert(1, _ratios(row))
            table.add_row(
                f"{row.n:,}",
                f"{row.in_scope:,}",
                f"{row.search.p50:.1f}",
                f"{row.search.p95:.1f}",
                f"{row.save.p50:.1f}",
                f"{row.save.p95:.1f}",
                f"{row.bulk_per_s:,.0f}",
                f"{row.bulk_ratio:.0%}",
                f"{row.peak_rss_mib:,.0f}",
                *recall,
                self._mark(row),
            )
        return table

    def notes(self) -> list[str]:
        """The machine line, and each size's breakdown of a search and a block (p50 ms)."""
        load = {"load_avg": max((r.load_avg for r in self.rows), default=0.0)}
        lines = [f"Machine: {machine_line({**self.machine, **load})}"]
        for row in self.rows:
            if row.breakdown:
                parts = ", ".join(f"{k} {v:.1f}" for k, v in row.breakdown.items())
                lines.append(f"N={row.n:,}, p50 ms: {parts}")
        return lines

    def _mark(self, row: LatencyRow) -> str:
        verdict = self.verdict(row)
        mark = "[green]✓ pass[/]" if verdict == "pass" else f"[red]✗ {verdict}[/]"
        return mark if row.n >= self.targets.at_n else f"[dim]{verdict}[/]"

    def as_dict(self) -> dict[str, Any]:
        """JSON-serialisable form of the whole report."""
        return {
            "machine": self.machine,
            "targets": asdict(self.targets),
            "settings": self.settings,
            "rows": [{**row.as_dict(), "verdict": self.verdict(row)} for row in self.rows],
        }


__all__ = [
    "POSTGRES_TARGETS",
    "BuildStats",
    "LatencyReport",
    "LatencyRow",
    "Percentiles",
    "Targets",
    "machine_info",
    "machine_line",
]
