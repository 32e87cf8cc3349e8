"""What the gateway writes through the review store (review_store.py):

    every answered request ─> keep_results ─> the items whose action a person reviews
    a person's decision    ─> decide       ─> feedback row + review event + the mark

``decide`` is one transaction under the store's ``deciding`` lock: two reviewers deciding
the same message at once get one decision and one conflict, never two feedback rows.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from textgate import feedback
from textgate.errors import Conflict, InvalidInput
from textgate.gateway.records.event_sink import EventSink
from textgate.gateway.records.review_store import DECISIONS, Held, ReviewStore


def envelope(raw: str | bytes, notes: dict[str, Any]) -> tuple[str, str]:
    """(subject, sender) of a raw message, from its header block only; a text has none."""
    if not isinstance(raw, bytes):
        return "", ""
    import email.parser
    import email.policy

    try:
        head = email.parser.BytesHeaderParser(policy=email.policy.default).parsebytes(raw[:65536])
        subject = str(head.get("subject", "") or "")
    except Exception:  # a hostile header block: the queue shows no subject, never fails
        subject = ""
    return " ".join(subject.split()), str(notes.get("sender") or "")


async def keep_results(
    store: ReviewStore,
    actions: Sequence[str],
    task: str,
    raw: Sequence[str | bytes],
    tenant: str | None,
    results: Sequence[dict[str, Any]],
    texts: Sequence[str],
    *,
    queue_id: str | None = None,
) -> int:
    """Keep the items whose action is in ``actions``; how many were new. ``queue_id``: the
    MTA's for the one message a milter scan holds (``held_mail``)."""
    if len(texts) != len(results):  # an idempotent replay: kept the first time
        return 0
    added = 0
    for x, r, text in zip(raw, results, texts, strict=True):
        if r["action"] not in actions:
            continue
        subject, sender = envelope(x, r.get("normalization") or {})
        added += await store.keep_async(
            request_id=r["request_id"],
            task=task,
            tenant=tenant,
            result=r,
            text=text,
            raw=x if isinstance(x, bytes) else x.encode("utf-8", "surrogatepass"),
            subject=subject,
            sender=sender,
            queue_id=queue_id,
        )
    return added


async def decide(
    store: ReviewStore,
    corrections: feedback.FeedbackStore,
    events: EventSink,
    held: Held,
    decision: str,
    *,
    label: str,
    by: str,
    release: Callable[[str], Awaitable[None]] | None = None,
) -> int | None:
    """A person's decision on a held message, as one transaction: the feedback row (the
    next training set), the review event, then the mark. The feedback row's id; None for a
    repeat of the decision already made. ``release`` (the MTA's release command, called with
    the queue id) runs first for a release of mail the MTA holds: when it fails nothing is
    written, and the reviewer can release again."""
    if decision not in DECISIONS:
        raise InvalidInput(f"must be one of {', '.join(DECISIONS)}", field="decision")
    if decision == "release" and held.action != "quarantine":
        raise InvalidInput("only quarantined mail is released", field="decision")
    async with store.deciding:
        now = store.get(held.request_id) or held
        if now.decision == decision:
            return None
        if now.decision is not None:
            raise Conflict(
                f"already decided {now.decision!r} by {now.decided_by}", field="decision"
            )
        if decision == "release" and release is not None and held.queue_id:
            await release(held.queue_id)
        correction = await corrections.add_async(
            task=held.task,
            label=label,
            text=held.text,
            source="console",
            tenant=held.tenant,
            raw=held.raw,
            request_id=held.request_id,
            previous=_seen(held),
        )
        await events.put_review(
            request_id=held.request_id,
            task=held.task,
            decision=decision,
            label=label,
            tenant=held.tenant,
            previous_action=held.action,
            previous_label=held.label,
            previous_score=held.score,
            model_version=held.model_version,
            reviewer=by,
            feedback_id=correction.id,
        )
        store.mark(held.request_id, decision, by)
        store.metrics.decisions.labels(held.task, decision).inc()
    return correction.id


def _seen(held: Held) -> feedback.Seen:
    """The verdict a decision corrects, as a feedback row records it."""
    return feedback.Seen(
        task=held.task,
        raw=held.raw,
        tenant=held.tenant,
        labels=tuple(held.probabilities),
        model=held.model,
        model_version=held.model_version,
        label=held.label,
        score=held.score,
        action=held.action,
    )
