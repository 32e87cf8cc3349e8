"""Quarantined mail that the MTA holds, handed back when a reviewer releases it.

The milter answers quarantine with ``SMFIR_QUARANTINE``: Postfix keeps the message in its
hold queue under a queue id, which it tells the milter in the ``i`` macro. The review store
keeps that id beside the message; a console "release" runs ``review.release_command`` with
it (docs/operators.md, "Releasing held mail"):

    review.release_command: ["/usr/local/sbin/textgate-release", "{queue_id}"]

Restricted by construction: the command is an argv (no shell) whose program is an absolute
path, fixed in the configuration; the only value from outside is the queue id, and only one
of letters and digits (Postfix's short and long ids, Sendmail's) is ever passed.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

from textgate.errors import MailReleaseError

QUEUE_ID = re.compile(r"[0-9A-Za-z]{5,32}")
PLACEHOLDER = "{queue_id}"
_TAIL = 300  # characters of the command's stderr quoted in the error


def queue_id(value: str | None) -> str | None:
    """The MTA's queue id when it is one (letters and digits), else None."""
    return value if value is not None and QUEUE_ID.fullmatch(value) else None


def argv(command: Sequence[str], held_id: str) -> list[str]:
    if queue_id(held_id) is None:
        raise MailReleaseError(f"{held_id[:40]!r} is not an MTA queue id; nothing was run")
    return [arg.replace(PLACEHOLDER, held_id) for arg in command]


async def release(command: Sequence[str], held_id: str, timeout_s: float) -> None:
    """Run the release command for one held message; MailReleaseError unless it exits 0."""
    args = argv(command, held_id)
    try:
        proc = await asyncio.create_subprocess_exec(
            *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        raise MailReleaseError(
            f"cannot run the release command {args[0]}: {exc.strerror or exc}",
            hint="review.release_command names the program by its absolute path",
        ) from exc
    try:
        _, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise MailReleaseError(
            f"the release command {args[0]} did not finish in {timeout_s:g} s; it was stopped",
            hint="raise review.release_timeout_s, or look at the MTA",
        ) from None
    if proc.returncode != 0:
        said = err.decode("utf-8", "replace").strip()[-_TAIL:]
        raise MailReleaseError(
            f"the release command {args[0]} exited {proc.returncode} for {held_id}: {said}"
        )
