"""``textgate serve`` that dies right after an outbox commit, before anyone is answered.

Run as ``python kill_after_commit.py serve ...``. The writer thread calls ``os._exit(17)``
just after the COMMIT that brings the classification batches written so far to
``KILL_AFTER_PUTS`` (env): the events of that group are durable, its responses never
leave. Used by test_group_commit.py only.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from textgate.gateway.records import outbox
from textgate.gateway.records.outbox import writer

_put_batch = outbox.Outbox._put_batch
_commit = writer.Writer._commit
_seen = {"puts": 0}


def put_batch(self: Any, *args: Any, **kwargs: Any) -> Any:
    _seen["puts"] += 1
    return _put_batch(self, *args, **kwargs)


def commit(self: Any, conn: Any, group: Any) -> None:
    before = _seen["puts"]
    _commit(self, conn, group)
    if _seen["puts"] > before and _seen["puts"] >= int(os.environ["KILL_AFTER_PUTS"]):
        os._exit(17)


outbox.Outbox._put_batch = put_batch  # type: ignore[method-assign]
writer.Writer._commit = commit  # type: ignore[method-assign]

if __name__ == "__main__":
    from textgate.cli import main

    sys.exit(main(sys.argv[1:]))
