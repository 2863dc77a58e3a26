"""``memorybank bench …``: the benchmarks of :mod:`memorybank_bench`, which ship beside the
runtime package and need the ``bench`` extra. Without them, a benchmark command exits 1 with
one line saying how to install them."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Protocol

import typer
from rich.console import Console, RenderableType
from rich.text import Text

from memorybank.cli._common import FAILED_EXIT, handles_errors, stdout
from memorybank.cli._help import App
from memorybank.errors import ConfigurationError

bench_app = App(
    help="Benchmarks of a real bank on this machine.",
    no_args_is_help=True,
)

#: Top-level modules the benchmarks need beyond the runtime package's dependencies.
BENCH_MODULES = frozenset({"memorybank_bench", "psutil", "matplotlib"})
BENCH_INSTALL = "pip install 'memorybank[bench]'"


def missing_bench_message(module: str) -> str:
    """The one line a benchmark command prints when ``module`` cannot be imported."""
    return f"the benchmarks are not installed ({module} is missing): {BENCH_INSTALL}"


@contextmanager
def bench_installed() -> Iterator[None]:
    """Turn a missing benchmark package or ``bench`` extra, met while importing within,
    into a :class:`ConfigurationError` saying how to install them; other import errors pass."""
    try:
        yield
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").partition(".")[0]
        if missing not in BENCH_MODULES:
            raise
        raise ConfigurationError(missing_bench_message(missing)) from exc


def _parse_sizes(raw: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in raw.split(",") if part.strip()]
    except ValueError as exc:
        raise typer.BadParameter(f"{raw!r} is not a comma-separated list of integers") from exc
    if not sizes or any(size < 1 for size in sizes):
        raise typer.BadParameter("give one or more positive sizes, e.g. 10000,100000")
    return sizes


# The options several benchmarks share.
JsonOutOption = Annotated[
    Path | None, typer.Option("--json", help="Also write the report as JSON to this file.")
]
LocomoDataOption = Annotated[
    Path,
    typer.Option("--data", help="locomo_dev.json, or a folder of LoCoMo-format .json files."),
]
WorkdirOption = Annotated[
    Path | None,
    typer.Option("--workdir", help="Where to build the database (default: a temp dir)."),
]


class _Report(Protocol):
    """What every benchmark's report offers."""

    def table(self) -> RenderableType: ...

    def as_dict(self) -> dict[str, Any]: ...


def _show_report(
    console: Console, report: _Report, json_out: Path | None, notes: Sequence[Text] = ()
) -> None:
    """Print the report's table (then ``notes``) and, with ``--json``, write it to that file."""
    console.print(report.table())
    for note in notes:
        console.print(note)
    if json_out is not None:
        json_out.write_text(json.dumps(report.as_dict(), indent=2) + "\n", encoding="utf-8")
        console.print(f"Wrote {json_out}.")


@bench_app.command("latency")
@handles_errors
def bench_latency(
    sizes: Annotated[
        str,
        typer.Option("--sizes", help="Comma-separated database sizes (memories) to measure."),
    ] = "10000,100000,1000000",
    per_user: Annotated[
        int, typer.Option("--per-user", help="Memories per user in the generated databases.")
    ] = 10_000,
    pool: Annotated[
        int, typer.Option("--pool", help="How many distinct generated texts to draw from.")
    ] = 20_000,
    samples: Annotated[
        int, typer.Option("--samples", help="Timed operations per measurement.")
    ] = 200,
    workdir: Annotated[
        Path | None,
        typer.Option("--workdir", help="Where to build the databases (default: a temp dir)."),
    ] = None,
    json_out: JsonOutOption = None,
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            help="Measure on this PostgreSQL database (postgresql://…), grown in place; also "
            "reports the HNSW index's recall@10 against exact search.",
        ),
    ] = None,
) -> None:
    """Measure search, save and list latency at growing database sizes."""
    with bench_installed():
        from memorybank_bench.latency import run_latency

    console = stdout()
    report = run_latency(
        sizes=_parse_sizes(sizes),
        per_user=per_user,
        pool_size=min(pool, max(_parse_sizes(sizes))),
        samples=samples,
        workdir=workdir,
        console=console,
        url=url,
    )
    _show_report(console, report, json_out, notes=[Text(n) for n in report.notes()])


@bench_app.command("locomo")
@handles_errors
def bench_locomo(
    data: LocomoDataOption,
    ks: Annotated[
        str, typer.Option("--k", help="Comma-separated cut-offs for recall@k.")
    ] = "1,5,10",
    ablate: Annotated[
        bool,
        typer.Option(
            "--ablate", help="Also run vector-only and BM25-only beside the default.", metavar=""
        ),
    ] = False,
    json_out: JsonOutOption = None,
    chart: Annotated[
        Path | None, typer.Option("--chart", help="Also draw recall@k as a PNG (needs matplotlib).")
    ] = None,
    workdir: WorkdirOption = None,
    bare: Annotated[
        bool,
        typer.Option("--bare", help="Save the turns without session_id and speaker metadata."),
    ] = False,
) -> None:
    """Retrieval quality on LoCoMo: every turn ingested, every question searched."""
    with bench_installed():
        from memorybank_bench.locomo import run_locomo

    console = stdout()
    report = run_locomo(
        data, ks=_parse_sizes(ks), ablate=ablate, workdir=workdir, console=console, bare=bare
    )
    _show_report(console, report, json_out)
    if chart is not None:
        console.print(f"Wrote {report.chart(chart)}.")


@bench_app.command("calibrate")
@handles_errors
def bench_calibrate(
    data: Annotated[
        Path,
        typer.Option("--data", help="The data folder holding locomo/ and facts/."),
    ],
    json_out: JsonOutOption = None,
) -> None:
    """Fit the ranking on the project's own profiles and chats, and score it beside cosine
    alone on every source (LoCoMo, the shared chats and fact pairs: never fitted on)."""
    with bench_installed():
        from memorybank_bench.calibrate import run_calibration

    console = stdout()
    report = run_calibration(data, console=console)
    _show_report(console, report, json_out)


@bench_app.command("recall")
@handles_errors
def bench_recall(
    data: LocomoDataOption,
    budget: Annotated[int, typer.Option("--budget", help="Tokens of the memory block.")] = 500,
    cutoffs: Annotated[
        str, typer.Option("--min-relevance", help="Comma-separated cut-offs to measure.")
    ] = "0,0.15",
    json_out: JsonOutOption = None,
) -> None:
    """Auto-recall on LoCoMo: evidence in the memory block, tokens spent on the wrong user."""
    with bench_installed():
        from memorybank_bench.recall import run_recall

    try:
        levels = [float(part) for part in cutoffs.split(",") if part.strip()]
    except ValueError as exc:
        raise typer.BadParameter(f"{cutoffs!r} is not a comma-separated list of numbers") from exc
    console = stdout()
    report = run_recall(data, budget=budget, cutoffs=levels, console=console)
    _show_report(console, report, json_out)


@bench_app.command("facts")
@handles_errors
def bench_facts(
    data: LocomoDataOption,
    limit_conversations: Annotated[
        int | None,
        typer.Option("--limit-conversations", min=1, help="Score only the first N conversations."),
    ] = None,
    max_sessions: Annotated[
        int | None,
        typer.Option("--max-sessions", min=1, help="Save only the first N sessions' facts."),
    ] = None,
    json_out: JsonOutOption = None,
) -> None:
    """The product path on LoCoMo: observations saved as facts, then search and the block."""
    with bench_installed():
        from memorybank_bench.locomo_facts import run_facts

    console = stdout()
    report = run_facts(
        data,
        limit_conversations=limit_conversations,
        max_sessions=max_sessions,
        console=console,
    )
    _show_report(console, report, json_out)


@bench_app.command("peers")
@handles_errors
def bench_peers(
    data: LocomoDataOption,
    limit_conversations: Annotated[
        int | None,
        typer.Option("--limit-conversations", min=1, help="Only the first N conversations."),
    ] = None,
    limit_questions: Annotated[
        int | None,
        typer.Option(
            "--limit-questions", min=1, help="Search only the first N questions of each one."
        ),
    ] = None,
    ref: Annotated[
        str | None,
        typer.Option("--ref", help="Also measure memorybank at this git commit (same run)."),
    ] = None,
    json_out: JsonOutOption = None,
) -> None:
    """memorybank and mem0 (infer off, the same embedder) side by side on LoCoMo's facts, each
    in its own process: search p50/p95, ingest rate, recall@10, MRR, peak RSS; needs the
    mem0-compat-test extra."""
    with bench_installed():
        from memorybank_bench.peers import run_peers

    console = stdout()
    report = run_peers(
        data,
        limit_conversations=limit_conversations,
        limit_questions=limit_questions,
        console=console,
        ref=ref,
    )
    _show_report(console, report, json_out)


@bench_app.command("lifecycle")
@handles_errors
def bench_lifecycle(
    scenarios: Annotated[
        Path, typer.Argument(help="Fact-lifecycle scenarios (JSON lines: lifecycle_dev.jsonl).")
    ],
    json_out: JsonOutOption = None,
) -> None:
    """A fact's life through the default tools: updates, distinct facts, paraphrases."""
    with bench_installed():
        from memorybank_bench.lifecycle import run_lifecycle

    console = stdout()
    report = run_lifecycle(scenarios, console=console)
    _show_report(console, report, json_out, notes=report.failure_notes())


@bench_app.command("integrity")
@handles_errors
def bench_integrity(
    pairs: Annotated[Path, typer.Option("--pairs", help="Fact pairs (JSON lines: a, b, label).")],
    sick: Annotated[
        Path, typer.Option("--sick", help="SICK pairs (tab-separated, with a header).")
    ],
    sick_limit: Annotated[
        int | None, typer.Option("--sick-limit", min=1, help="Score only the first N SICK pairs.")
    ] = None,
    json_out: JsonOutOption = None,
    workdir: WorkdirOption = None,
) -> None:
    """Duplicates caught, updates and distinct facts kept or surfaced, beside the goals."""
    with bench_installed():
        from memorybank_bench.integrity import run_integrity

    console = stdout()
    report = run_integrity(pairs, sick, sick_limit=sick_limit, workdir=workdir, console=console)
    _show_report(console, report, json_out)


@bench_app.command("consolidate")
@handles_errors
def bench_consolidate(
    sizes: Annotated[
        str,
        typer.Option("--sizes", help="Comma-separated scope sizes (near-duplicate facts)."),
    ] = "1000,2000,20000",
    old_max: Annotated[
        int,
        typer.Option(
            "--old-max", min=0, help="Largest size to also run the all-pairs approach at."
        ),
    ] = 2000,
    workdir: WorkdirOption = None,
    json_out: JsonOutOption = None,
) -> None:
    """Time and peak memory of consolidation: one call, a whole pass, and all pairs before."""
    with bench_installed():
        from memorybank_bench.consolidate import run_consolidate_bench

    console = stdout()
    report = run_consolidate_bench(
        _parse_sizes(sizes), old_max=old_max, workdir=workdir, console=console
    )
    _show_report(console, report, json_out, notes=[Text(n) for n in report.notes()])


@bench_app.command("train-judge")
@handles_errors
def bench_train_judge(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Write the model here (default: the shipped src/memorybank/_model/judge)."
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of data, order and weights.")] = 0,
    epochs: Annotated[
        float, typer.Option("--epochs", min=0.01, help="Passes over the data.")
    ] = 1.2,
    limit: Annotated[
        int | None,
        typer.Option("--limit", min=10, help="Train on the first N examples only (a smoke run)."),
    ] = None,
    layers: Annotated[
        int, typer.Option("--layers", min=1, max=6, help="MiniLM's first N layers (speed).")
    ] = 3,
    json_out: JsonOutOption = None,
) -> None:
    """Train the judge (cross-encoder from all-MiniLM-L6-v2's first layers, ONNX with int8
    weights computed in float32) on generated facts and the written profiles; needs the
    [train] extra."""
    with bench_installed():
        from memorybank_bench.train_judge import OUT, TrainConfig, train

    console = stdout()
    config = TrainConfig(seed=seed, epochs=epochs, limit=limit, out=out or OUT, layers=layers)
    summary = train(config)
    console.print(
        f"trained on {summary['examples']} examples in {summary['train_seconds']} s · "
        f"held-out pair accuracy {summary['held_out_pair_accuracy']} · wrote {config.out}"
    )
    if json_out is not None:
        json_out.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        console.print(f"Wrote {json_out}.")


@bench_app.command("conversations")
@handles_errors
def bench_conversations(
    chats: Annotated[
        Path,
        typer.Argument(
            help="Chats (JSON lines: messages, facts [{fact, question, expect}]), e.g. "
            "benchmarks/data/conversations_own.jsonl."
        ),
    ],
    locomo: Annotated[
        Path | None,
        typer.Option(
            "--locomo",
            help="Also LoCoMo through remember (locomo_dev.json): evidence of questions about "
            "the user in the block.",
        ),
    ] = None,
    limit_conversations: Annotated[
        int | None,
        typer.Option("--limit-conversations", min=1, help="Only the first N LoCoMo conversations."),
    ] = None,
    labels: Annotated[
        Path | None,
        typer.Option(
            "--labels",
            help="A person's labels of the kept facts (JSON lines: chat, fact, label useful / "
            "junk / wrong_subject), e.g. benchmarks/data/conversations_own_labels.jsonl: "
            "reports junk and wrong subjects, and lists the kept facts no label names.",
        ),
    ] = None,
    json_out: JsonOutOption = None,
) -> None:
    """Chats remembered without an LLM: facts kept, in the block, first line right, invented,
    and with --labels their precision."""
    with bench_installed():
        from memorybank_bench.conversations import run_conversations
        from memorybank_bench.conversations_locomo import run_locomo_conversations

    console = stdout()
    report = run_conversations(chats, labels=labels, console=console)
    notes = [Text(f"miss: {m}") for m in report.misses]
    notes += [Text(f"unlabelled: {json.dumps(u, ensure_ascii=False)}") for u in report.unlabelled]
    if locomo is not None:
        with console.status("remembering LoCoMo"):
            found = run_locomo_conversations(locomo, limit_conversations=limit_conversations)
        notes.append(
            Text(
                f"LoCoMo through remember: {found.conversations} conversations, "
                f"{found.questions} questions about the user, evidence in the block "
                f"{found.in_block}/{found.evidence} ({found.share:.3f}), "
                f"{found.facts_stored} facts stored"
            )
        )
    _show_report(console, report, json_out, notes=notes)


@bench_app.command("train-extractor")
@handles_errors
def bench_train_extractor(
    chats: Annotated[
        list[Path],
        typer.Option(
            "--chats", help="Chats to train on (JSON lines, as bench conversations reads)."
        ),
    ],
    score: Annotated[
        list[Path] | None,
        typer.Option("--score", help="Chats only scored, never trained on (the shared dev chats)."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Write the weights here (the shipped file: src/memorybank/rules/keep_model.json).",
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the threshold's folds.")] = 0,
    json_out: JsonOutOption = None,
) -> None:
    """Train the model that keeps facts said in passing (seeded) and cross-validate it."""
    with bench_installed():
        from memorybank_bench.train_extractor import run_training

    console = stdout()
    document = run_training(chats, out, score=score or [], seed=seed, console=console)
    console.print(f"threshold {document['threshold']} · trained on {document['trained_on']}")
    if json_out is not None:
        json_out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        console.print(f"Wrote {json_out}.")


@bench_app.command("load")
@handles_errors
def bench_load(
    url: Annotated[
        str | None,
        typer.Option("--url", help="A running server (default: start one on a temp database)."),
    ] = None,
    seconds: Annotated[float, typer.Option("--seconds", help="How long to drive it.")] = 30.0,
    clients: Annotated[int, typer.Option("--clients", help="Concurrent clients.")] = 16,
    workers: Annotated[
        int | None,
        typer.Option("--workers", min=1, help="Server processes to start (default: one per core)."),
    ] = None,
    repeat: Annotated[
        float,
        typer.Option(
            "--repeat",
            min=0.0,
            max=1.0,
            help="Share of a client's searches that repeat one of its recent questions.",
        ),
    ] = 0.3,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key", envvar="MEMORYBANK_API_KEY", help="Key for a server in auth mode."
        ),
    ] = None,
    json_out: JsonOutOption = None,
) -> None:
    """Throughput and latency under load: 80% search, 15% save, 5% other, over loopback."""
    with bench_installed():
        from memorybank_bench.load import run_load

    console = stdout()
    report = run_load(
        url=url,
        seconds=seconds,
        clients=clients,
        workers=workers,
        repeat=repeat,
        api_key=api_key,
        console=console,
    )
    _show_report(
        console,
        report,
        json_out,
        notes=[Text(sample, style="red") for sample in report.error_samples],
    )
    if report.errors:
        raise typer.Exit(FAILED_EXIT)


@bench_app.command("fairness")
@handles_errors
def bench_fairness(
    seconds: Annotated[
        float, typer.Option("--seconds", min=0.1, help="How long each phase lasts.")
    ] = 8.0,
    loops: Annotated[
        int, typer.Option("--loops", min=1, help="Concurrent loops of the flooding tenant.")
    ] = 4,
    bob_facts: Annotated[
        int,
        typer.Option("--bob-facts", min=0, help="Facts of the flooding tenant's (previews)."),
    ] = 1000,
    workers: Annotated[
        int, typer.Option("--workers", min=1, help="Server processes to start.")
    ] = 1,
    json_out: JsonOutOption = None,
) -> None:
    """Another tenant's search and save latency while one tenant floods searches,
    consolidation previews and writes: ratios to its latency alone, in one run."""
    with bench_installed():
        from memorybank_bench.fairness import run_fairness

    console = stdout()
    report = run_fairness(
        seconds=seconds, loops=loops, bob_facts=bob_facts, workers=workers, console=console
    )
    notes = [Text(note) for note in report.notes()]
    _show_report(
        console,
        report,
        json_out,
        notes=notes + [Text(sample, style="red") for sample in report.error_samples],
    )
    if report.server_errors or report.lost:
        raise typer.Exit(FAILED_EXIT)
