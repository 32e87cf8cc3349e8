"""Python-backend models the repository builder copies into a model repository.

Each file here becomes a ``model.py`` (``textgate_support.py`` is copied next to it). They
run inside Triton's Python-backend stub, not inside textgate: they import only the standard
library, numpy, tokenizers, onnxruntime and ``triton_python_backend_utils``, and read their
settings from the ``parameters`` of their generated ``config.pbtxt``.
"""

TEMPLATES = {
    "tokenize": "tokenize_model.py",
    "model": "onnx_model.py",
    "fused": "fused_model.py",
    "postprocess": "postprocess_model.py",
    "cheap": "cheap_model.py",
}
SUPPORT = "textgate_support.py"
