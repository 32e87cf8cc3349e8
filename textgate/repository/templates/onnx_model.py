"""<task>_model (target embedded): ONNX Runtime inside the Python backend.

The Python backend hands execute() a list of requests without concatenating them; requests
of one length are stacked into a single ONNX Runtime call and the logits split back.
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
        self.classifier = support.OnnxClassifier(settings)
        self.num_labels = int(settings.get("num_labels"))

    def execute(self, requests: list) -> list:
        inputs = [
            (
                pb_utils.get_input_tensor_by_name(r, "input_ids").as_numpy(),
                pb_utils.get_input_tensor_by_name(r, "attention_mask").as_numpy(),
            )
            for r in requests
        ]
        by_length: dict[int, list[int]] = {}
        for index, (ids, _mask) in enumerate(inputs):
            by_length.setdefault(ids.shape[1], []).append(index)
        logits: list = [None] * len(requests)
        for indices in by_length.values():
            ids = np.concatenate([inputs[i][0] for i in indices])
            mask = np.concatenate([inputs[i][1] for i in indices])
            out = self.classifier.logits(ids, mask) if len(ids) else self._empty()
            start = 0
            for i in indices:
                n = inputs[i][0].shape[0]
                logits[i] = out[start : start + n]
                start += n
        return [
            pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("logits", x)])
            for x in logits
        ]

    def _empty(self) -> np.ndarray:
        # A zero-row request: answer with zero rows rather than run the session on nothing.
        return np.zeros((0, self.num_labels), dtype=np.float32)
