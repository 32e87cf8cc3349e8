"""textgate: a text classifier as a production service on NVIDIA Triton."""

from textgate.errors import TextgateError

__version__ = "0.1.0"
__all__ = ["TextgateError", "__version__"]
