"""textgate: a text classifier as a production service on NVIDIA Triton."""

import os

# gRPC's fork handlers, on by default, run in every fork()ed child: the tritonserver we
# start (its preexec_fn needs fork, not vfork) aborted in them ("Check failed:
# next_worker->state == KICKED") while the gateway's gRPC client was busy in another
# thread. Our children exec at once or are spawned (the parse pool), so none needs them.
# Read when grpc is first imported, hence here, before any module can import it.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

from textgate.errors import TextgateError

__version__ = "0.1.0"
__all__ = ["TextgateError", "__version__"]
