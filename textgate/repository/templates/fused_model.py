"""<task>_model (shape strategy fused): text -> logits in one Python model.

Tokenizing where the model runs saves one inter-process hop per request, and the whole
dynamic batch can be regrouped: texts are grouped by bucket and each group is padded only
to its own longest row, so one long text no longer pads every short one.
"""

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
        self.encoder = support.TextEncoder(settings)
        self.classifier = support.OnnxClassifier(settings)
        self.num_labels = int(settings.get("num_labels"))

    def execute(self, requests: list) -> list:
        counts = []
        texts: list[str] = []
        for request in requests:
            raw = pb_utils.get_input_tensor_by_name(request, "text").as_numpy().reshape(-1)
            counts.append(len(raw))
            texts.extend(support.text_of(v) for v in raw)
        ids = self.encoder.encode(texts)
        logits = np.zeros((len(ids), self.num_labels), dtype=np.float32)
        groups: dict[int, list[int]] = {}
        for i, row in enumerate(ids):
            groups.setdefault(support.bucket_for(len(row), self.encoder.buckets), []).append(i)
        for indices in groups.values():
            width = max(len(ids[i]) for i in indices)
            input_ids, mask = self.encoder.pad([ids[i] for i in indices], width)
            logits[indices] = self.classifier.logits(input_ids, mask)
        responses = []
        start = 0
        for n in counts:
            tensor = pb_utils.Tensor("logits", logits[start : start + n])
            responses.append(pb_utils.InferenceResponse(output_tensors=[tensor]))
            start += n
        return responses
