"""<task>_tokenize: text -> input_ids, attention_mask, each request padded to its bucket.

Triton's dynamic batcher merges only requests of equal shape; padding every request to the
smallest configured bucket length that holds it lets the model step batch within a bucket.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import textgate_support as support

support.add_site_packages()

import triton_python_backend_utils as pb_utils  # noqa: E402


class TritonPythonModel:
    def initialize(self, args: dict[str, str]) -> None:
        self.encoder = support.TextEncoder(support.Settings(args))

    def execute(self, requests: list) -> list:
        texts = []
        for request in requests:
            raw = pb_utils.get_input_tensor_by_name(request, "text").as_numpy().reshape(-1)
            texts.append([support.text_of(v) for v in raw])
        # One batched tokenizer call for every text of every request in this execution.
        flat = [t for group in texts for t in group]
        ids = self.encoder.encode(flat)
        responses = []
        start = 0
        for group in texts:
            rows = ids[start : start + len(group)]
            start += len(group)
            input_ids, mask = self.encoder.pad(rows)
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[
                        pb_utils.Tensor("input_ids", input_ids),
                        pb_utils.Tensor("attention_mask", mask),
                    ]
                )
            )
        return responses
