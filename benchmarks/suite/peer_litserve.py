"""The batching peer: LitServe serving the same ONNX variant with ONNX Runtime.

    python benchmarks/suite/peer_litserve.py BUNDLE --variant int8 --port 8102 \
        --max-batch-size 16 --batch-timeout-ms 10 --threads 2

``POST /predict {"text": ...}`` -> ``{"label", "probabilities"}``. Batching is LitServe's own
(``max_batch_size``, ``batch_timeout``); each batch is tokenized with the bundle's fast
tokenizer in one call and padded to its longest text, as a LitServe user would write it.
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import litserve as ls  # module level: LitServe pickles the API into its worker


class ClassifierAPI(ls.LitAPI):  # type: ignore[misc]
    def __init__(self, bundle: Path, variant: str, threads: int, **batching: Any) -> None:
        super().__init__(**batching)
        self.bundle, self.variant, self.threads = bundle, variant, threads

    def setup(self, device: str) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        manifest = json.loads((self.bundle / "manifest.json").read_text())
        self.labels = manifest["labels"]
        self.tok = Tokenizer.from_file(str(self.bundle / "tokenizer.json"))
        self.tok.enable_truncation(int(manifest["max_length"]))
        self.tok.enable_padding(pad_id=self.tok.token_to_id("[PAD]") or 0)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self.threads
        opts.inter_op_num_threads = 1
        model = self.bundle / manifest["variants"][self.variant]["file"]
        self.sess = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
        self.names = [i.name for i in self.sess.get_inputs()]

    def decode_request(self, request: dict[str, Any]) -> str:
        return str(request["text"])

    def predict(self, texts: Any) -> Any:
        import numpy as np

        batch = texts if isinstance(texts, list) else [texts]
        enc = self.tok.encode_batch(batch)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        feed = {n: feed.get(n, np.zeros_like(ids)) for n in self.names}
        logits = self.sess.run(None, feed)[0]
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs = e / e.sum(axis=1, keepdims=True)
        return probs if isinstance(texts, list) else probs[0]

    def unbatch(self, output: Any) -> list[Any]:
        return list(output)

    def encode_response(self, probs: Any) -> dict[str, Any]:
        return {"label": self.labels[int(probs.argmax())], "probabilities": probs.tolist()}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("bundle", type=Path)
    p.add_argument("--variant", default="int8")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--threads", type=int, default=2, help="ONNX Runtime threads per worker")
    p.add_argument("--workers", type=int, default=1, help="LitServe inference workers")
    p.add_argument("--max-batch-size", type=int, default=16)
    p.add_argument("--batch-timeout-ms", type=float, default=10.0)
    args = p.parse_args()
    api = ClassifierAPI(
        args.bundle.resolve(),
        args.variant,
        args.threads,
        max_batch_size=args.max_batch_size,
        batch_timeout=args.batch_timeout_ms / 1000,
    )
    server = ls.LitServer(api, accelerator="cpu", workers_per_device=args.workers, timeout=60)
    server.run(host="127.0.0.1", port=args.port, generate_client_file=False, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
