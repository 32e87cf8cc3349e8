"""<task>_postprocess: logits -> calibrated probabilities (softmax(logits / T)), label name.

T is the bundle's calibration temperature (1.0 when it has none): every variant and the
fp32 re-score share this step's formula, so their probabilities stay comparable. A bundle
with a lexical half (``ngrams_file``) also gets the text: ``ngrams.py``, the very module
training fitted it with, scores it and moves the logits before the softmax. A bundle with a
combiner (``combiner_file``) reads the symbols the gateway framed in front of the text and
``combiner.py`` sets the not-ham log-odds to its weighted sum of the transformer's, the
n-grams' and the symbols' evidence (the n-grams then enter only through it).
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import textgate_support as support

support.add_site_packages()

import numpy as np  # noqa: E402
import triton_python_backend_utils as pb_utils  # noqa: E402


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        settings = support.Settings(args)
        labels = json.loads(settings.get("labels"))
        labels_file = settings.params.get("labels_file")
        if labels_file:  # the bundle's labels.json must agree with the generated config
            support.verify_files(settings.version_dir, {labels_file: labels_file})
            with open(settings.path("labels_file"), encoding="utf-8") as fh:
                if json.load(fh) != labels:
                    raise RuntimeError(f"textgate: {labels_file} disagrees with the config")
        self.labels = np.array([str(x).encode("utf-8") for x in labels], dtype=np.object_)
        self.temperature = float(settings.params.get("temperature") or 1.0)
        self.lexical = None
        if settings.params.get("ngrams_file"):
            self.lexical = support.load_ngrams(settings)
        self.combiner = None
        combiner_file = settings.params.get("combiner_file")
        if combiner_file:
            support.verify_files(settings.version_dir, {combiner_file: combiner_file})
            import combiner  # copied beside this file: the code the build fitted it for

            self.combiner = combiner.Combiner.load(settings.path("combiner_file"))

    def join(self, logits: np.ndarray, request: object) -> np.ndarray:
        """The logits moved by the lexical half and/or the combiner (as they are if neither)."""
        if (self.lexical is None and self.combiner is None) or not logits.shape[0]:
            return logits
        raw = pb_utils.get_input_tensor_by_name(request, "text").as_numpy().reshape(-1)
        framed = [support.unframe(support.decode(v)) for v in raw]
        texts = [text for _, text in framed]
        if self.combiner is None:
            assert self.lexical is not None
            return self.lexical.adjust(logits, texts)
        import combiner

        content = combiner.not_negative_log_odds(logits, self.combiner.negative)
        lexical = np.zeros(len(texts)) if self.lexical is None else self.lexical.scores(texts)
        z = self.combiner.z(content, lexical, [symbols for symbols, _ in framed])
        return self.combiner.adjust(logits, z)

    def execute(self, requests: list) -> list:
        responses = []
        for request in requests:
            logits = pb_utils.get_input_tensor_by_name(request, "logits").as_numpy()
            logits = self.join(logits, request)
            probs = softmax(logits.astype(np.float64) / self.temperature).astype(np.float32)
            if probs.shape[0]:
                names = self.labels[np.argmax(probs, axis=1)].reshape(-1, 1)
            else:
                names = np.zeros((0, 1), dtype=np.object_)
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("label", names),
                        pb_utils.Tensor("probabilities", probs),
                    ]
                )
            )
        return responses


def softmax(x: np.ndarray) -> np.ndarray:
    shifted = x - x.max(axis=-1, keepdims=True) if x.size else x
    e = np.exp(shifted)
    return e / e.sum(axis=-1, keepdims=True)
