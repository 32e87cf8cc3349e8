"""The Triton model repository builder: bundles + config -> config.pbtxt and version dirs.

spec.py       what the repository holds, as data (one TaskSpec per bundle)
render.py     spec -> Triton ModelConfig protobuf -> config.pbtxt text, per target
builder.py    writes the directories, copying bundle files and the model templates
templates/    the Python-backend models (tokenize, model, fused, postprocess)
"""

from textgate.repository.builder import BuildResult, build
from textgate.repository.render import parse, render, to_text
from textgate.repository.spec import RepositorySpec, TaskSpec, describe

__all__ = [
    "BuildResult",
    "RepositorySpec",
    "TaskSpec",
    "build",
    "describe",
    "parse",
    "render",
    "to_text",
]
