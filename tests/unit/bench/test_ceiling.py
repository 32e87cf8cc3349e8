"""The ceiling's pre-tokenized workload is cut as the bundle's tokenize step cuts it."""

from __future__ import annotations

from tests.helpers.fixtures_models import minilm_tokenizer_dir
from textgate import window
from textgate.bench import ceiling


def test_encode_cuts_by_the_bundle_window() -> None:
    from transformers import AutoTokenizer

    tok_file = minilm_tokenizer_dir() / "tokenizer.json"
    texts = ["the plot starts slowly " * 20 + "overall i would never buy this again", "fine"]
    hf = AutoTokenizer.from_pretrained(str(minilm_tokenizer_dir()))
    for tail in (0, 10):
        enc = ceiling.encode(tok_file, texts, 32, tail)
        assert [list(r) for r in enc.ids] == window.hf_ids(hf, texts, 32, tail)
        assert enc.pad_id == hf.pad_token_id
