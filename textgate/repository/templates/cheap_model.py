"""<task>_cheap: the cascade's first stage — the bundle's n-gram half alone, no transformer.

It answers in the ensemble's shape (``label``, ``probabilities``) from P(not negative) =
sigmoid(the n-gram score): the negative label gets 1 - p and the other labels share p
evenly, because the lexical half does not tell them apart (spam from phishing). The gateway
takes this answer only where it is sure (at or below the bundle's ``allow_at_or_below``, and
below every threshold of the tenant's policy, so no split of p could change the action);
everything else goes to the full ensemble. The bounds sit in this model's parameters, where
the gateway's router reads them (docs/gateway.md, "Confidence cascade").
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import textgate_support as support

support.add_site_packages()

import json  # noqa: E402

import numpy as np  # noqa: E402
import triton_python_backend_utils as pb_utils  # noqa: E402


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        settings = support.Settings(args)
        labels = json.loads(settings.get("labels"))
        self.labels = np.array([str(x).encode("utf-8") for x in labels], dtype=np.object_)
        self.lexical = support.load_ngrams(settings)
        self.negative = int(self.lexical.negative)
        if not 0 <= self.negative < len(labels) or len(labels) < 2:
            raise RuntimeError("textgate: the n-gram half's negative label is not a label")

    def answer(self, texts: list[str]) -> np.ndarray:
        n, k = len(texts), self.labels.shape[0]
        probs = np.zeros((n, k), dtype=np.float64)
        if n:
            z = np.clip(self.lexical.scores(texts), -50.0, 50.0)
            p = 1.0 / (1.0 + np.exp(-z))
            probs[:, :] = (p / (k - 1))[:, None]
            probs[:, self.negative] = 1.0 - p
        return probs.astype(np.float32)

    def execute(self, requests: list) -> list:
        responses = []
        for request in requests:
            raw = pb_utils.get_input_tensor_by_name(request, "text").as_numpy().reshape(-1)
            texts = [support.unframe(support.decode(v))[1] for v in raw]
            probs = self.answer(texts)
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
