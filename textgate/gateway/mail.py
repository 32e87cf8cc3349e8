"""The gateway's side of the mail protocols: scanning, explanations, corrections, listeners.

    spamd.Server ──┐                      ┌─> Service.classify (normalize, route, Triton,
    milter.Server ─┴─> Mail.scan(raw, user) ┤    policy, events): the HTTP path's own code
                                          ├─> metrics, request id, Recent (for corrections)
                                          └─> explain (one more Triton request) -> Mark

``Mail`` is made in the app's lifespan after the gateway started and stopped before it, so
a listener never outlives the runtime it scans with. The ``User`` of spamc (or the milter's
``{auth_authen}`` macro) names a tenant only when a tenant of that name is configured: spamc
sends the local Unix user by default, which must not be an error. The mail sockets do not
carry API keys; bind them to loopback (the default) or a trusted network, like spamd. For
the same reason ``learn`` (spamc -L) is reached only through ``spamd.TellRule``: off unless
``mail.allow_tell``, and only from ``mail.tell_networks``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from prometheus_client import Counter

from textgate import feedback
from textgate.config import Config, PolicyConfig
from textgate.errors import InvalidInput, NotFound
from textgate.gateway import explain, headers, languages, logs, review
from textgate.gateway.service import Context, Runtime
from textgate.signals import wire

if TYPE_CHECKING:
    from textgate.gateway.lifecycle import Gateway

REQUEST_ID_HEADER = b"x-textgate-request-id"
_NOT_SPAM = ("allow", "uncertain", *headers.NEGATIVE_LABELS)


class Mail:
    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        cfg = gw.config
        self._store: feedback.FeedbackStore | None = None  # opened at the first correction
        self.recent = feedback.Recent(cfg.feedback.recent_requests, cfg.feedback.recent_bytes)
        self.commands = Counter(
            "textgate_mail_commands",
            "spamd commands and milter messages by protocol, command and answer code",
            ["protocol", "command", "code"],
            registry=gw.metrics.registry,
        )
        self._servers: list[Any] = []
        self.ports: dict[str, int] = {}

    # --- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        from textgate.gateway import milter, spamd

        cfg, max_bytes = self.gw.config.mail, self.gw.config.gateway.max_body_bytes
        if cfg.spamd_port is not None:
            s = spamd.Server(
                self,
                max_bytes=max_bytes,
                max_connections=cfg.max_connections,
                timeout_s=cfg.read_timeout_s,
                count=lambda c, code: self.commands.labels("spamd", c[:16], code).inc(),
                # the tenants as they are at each TELL: a reload may add or drop some
                tell=spamd.TellRule.of(cfg, lambda u: self.tenant(self.gw.runtime, u) is not None),
                strip_spam_headers=cfg.strip_spam_headers,
            )
            self.ports["spamd"] = await s.start(cfg.host, cfg.spamd_port)
            self._servers.append(s)
        if cfg.milter_port is not None:
            m = milter.Server(
                self,
                replies=milter.replies(cfg),
                max_bytes=max_bytes,
                max_connections=cfg.max_connections,
                timeout_s=cfg.read_timeout_s,
                count=lambda c, code: self.commands.labels("milter", c[:16], code).inc(),
                strip_spam_headers=cfg.strip_spam_headers,
            )
            self.ports["milter"] = await m.start(cfg.host, cfg.milter_port)
            self._servers.append(m)
        if self.ports:
            logs.event("mail listeners ready", host=cfg.host, **self.ports)

    async def stop(self) -> None:
        for s in self._servers:
            await s.stop()
        self._servers.clear()
        if self._store is not None:
            self._store.close()

    @property
    def store(self) -> feedback.FeedbackStore:
        if self._store is None:
            self._store = feedback.FeedbackStore.from_config(self.gw.config.feedback)
        return self._store

    # --- scanning -------------------------------------------------------------------------

    def tenant(self, rt: Runtime, user: str | None) -> str | None:
        names = {t.name for t in rt.config.policy.tenants}
        return user if user in names else None

    async def scan(
        self, raw: bytes, user: str | None, *, explain: bool, recipients: Sequence[str] = ()
    ) -> headers.Mark:
        gw = self.gw
        rt = gw.runtime
        task = rt.config.mail.task
        rid = logs.request_id(None)
        token = logs.request_id_var.set(rid)
        ctx = Context(request_id=rid, headers={"traceparent": logs.trace(None).traceparent})
        try:
            ctx.tenant = tenant_of_mail(rt.config.policy, user, recipients, raw)
            result = (await gw.service.classify(rt, task, [raw], ctx))[0]
            spans: Sequence[headers.Span] = ()
            if explain and rt.config.mail.explain:
                spans = await self.spans(rt, task, raw, ctx, rt.config.mail.explain)
        except Exception as exc:
            # The counter has a tenant label since the tenant metrics: the old three-label
            # call raised, so every spamd scan under a tenant-labelled counter failed.
            gw.metrics.failed_with(task, rt.router.public(), ctx.tenant, exc)
            raise
        finally:
            logs.request_id_var.reset(token)
        gw.metrics.classified(task, ctx.tenant, [result])
        gw.metrics.observe_stages(ctx.timings_ms, task)
        self.remember(task, [raw], ctx.tenant, [result])
        if gw.review is not None:
            actions = rt.config.review.actions
            await review.keep_results(
                gw.review, actions, task, [raw], ctx.tenant, [result], ctx.texts
            )
        return mark(rt.config, rt, task, ctx.tenant, result, spans)

    async def spans(
        self, rt: Runtime, task: str, raw: str | bytes, ctx: Context, n: int
    ) -> list[headers.Span]:
        """The top ``n`` spans of the input's first piece, in one Triton request."""
        item = rt.preparer.email(raw) if isinstance(raw, bytes) else rt.preparer.text(raw)
        route = rt.router.route(task)
        limit = min(explain.MAX_CANDIDATES, max(0, route.max_batch_size - 1))

        async def score(texts: Sequence[str]) -> list[float]:
            # each variant carries the message's symbols, as the verdict's pieces did
            sent = [wire.frame(item.symbols, t) if route.signals else t for t in texts]
            pred = await rt.client.infer(
                route.model, sent, request_id=ctx.request_id, headers=ctx.headers
            )
            return [
                rt.policy.decide(task, route.labels, [float(p) for p in row], ctx.tenant).score
                for row in pred.probabilities
            ]

        domains = tuple(item.notes.get("link_domains") or ())
        _, spans = await explain.explain(item.pieces[0], score, n, domains=domains, limit=limit)
        return spans

    def remember(
        self,
        task: str,
        raw: Sequence[str | bytes],
        tenant: str | None,
        results: Sequence[dict[str, Any]],
    ) -> None:
        for x, r in zip(raw, results, strict=True):
            self.recent.remember(
                r["request_id"],
                feedback.Seen(
                    task=task,
                    raw=x,
                    tenant=tenant,
                    labels=tuple(r["probabilities"]),
                    model=str(r["model"]["name"]),
                    model_version=str(r["model"]["version"]),
                    label=r["label"],
                    score=r["score"],
                    action=r["action"],
                ),
            )

    # --- corrections ----------------------------------------------------------------------

    async def learn(self, raw: bytes, label: str, user: str | None, *, remove: bool) -> None:
        """spamc -L spam|ham (Set) or forget (Remove)."""
        rt = self.gw.runtime
        task = rt.config.mail.task
        tenant = self.tenant(rt, user)
        item = rt.preparer.email(raw)
        if remove:
            await self.store.remove_async(text_sha256=feedback.sha256(item.text), tenant=tenant)
            return
        labels = rt.router.route(task).labels
        rid = _request_id_header(raw)
        await self.correct(
            task, spamc_label(label, labels), tenant, raw=raw, request_id=rid, source="spamd"
        )

    async def correct(
        self,
        task: str,
        label: str,
        tenant: str | None,
        *,
        raw: str | bytes | None = None,
        request_id: str | None = None,
        source: str,
    ) -> feedback.Correction:
        """One correction: by the message itself, or by the request id of a recent verdict."""
        rt = self.gw.runtime
        seen = self.recent.get(request_id) if request_id else None
        if raw is None:
            if seen is None:
                raise NotFound(
                    f"no recent verdict with request id {str(request_id)[:80]!r}",
                    field="request_id",
                    hint="the gateway keeps the last feedback.recent_requests verdicts in "
                    "memory; send the message itself instead",
                )
            raw, task = seen.raw, seen.task
        labels = seen.labels if seen is not None else rt.router.route(task).labels
        if label not in labels:
            raise InvalidInput(
                f"label {label[:40]!r} is not one of task '{task}': {', '.join(labels)}",
                field="label",
            )
        item = rt.preparer.email(raw) if isinstance(raw, bytes) else rt.preparer.text(raw)
        return await self.store.add_async(
            task=task,
            label=label,
            text=item.text,
            source=source,
            tenant=tenant if seen is None else (seen.tenant or tenant),
            raw=raw if isinstance(raw, bytes) else raw.encode("utf-8"),
            request_id=request_id,
            previous=seen,
        )


def spamc_label(label: str, labels: Sequence[str]) -> str:
    """spamc's ``spam``/``ham`` as the task's label (a three-label model has both too)."""
    if label in labels:
        return label
    negative = next((x for x in labels if x.lower() in headers.NEGATIVE_LABELS), labels[0])
    return negative if label == "ham" else labels[-1]


def _request_id_header(raw: bytes) -> str | None:
    """Our own X-Textgate-Request-Id, when the learned message went through us before."""
    head = raw[:65536].split(b"\n\n", 1)[0].split(b"\r\n\r\n", 1)[0]
    for line in head.splitlines():
        name, _, value = line.partition(b":")
        if name.strip().lower() == REQUEST_ID_HEADER:
            return value.strip().decode("ascii", "replace") or None
    return None


def mark(
    config: Config,
    rt: Runtime,
    task: str,
    tenant: str | None,
    result: dict[str, Any],
    spans: Sequence[headers.Span] = (),
) -> headers.Mark:
    """A service result as SpamAssassin-style points and rules."""
    cfg = config.mail
    rule = rt.policy.rule(task, tenant)
    score = result["score"]
    spam = result["action"] not in _NOT_SPAM
    if score is None or (isinstance(score, float) and math.isnan(score)):
        spam = True
    raw_points = headers.points(score, rule.review_at, cfg.required_points, cfg.max_points)
    model = result["model"]
    probs = dict(result["probabilities"])
    return headers.Mark(
        spam=spam,
        points=headers.shown_points(raw_points, spam, cfg.required_points),
        required=cfg.required_points,
        action=result["action"],
        label=result["label"],
        score=score,
        probabilities=probs,
        model=f"{model['name']}/{model['version']} ({result['precision_path']})",
        request_id=result["request_id"],
        tests=headers.tests_of(probs, result["label"], result["action"], spans),
        spans=tuple(spans),
        symbols=_symbols(result),
    )


def _symbols(result: dict[str, Any]) -> tuple[tuple[str, float], ...]:
    """The structure symbols with their weights, and the language policy's when it acted."""
    fired = tuple((x["symbol"], float(x["weight"])) for x in result.get("symbols", ()))
    if (result.get("language") or {}).get("unwanted"):
        fired += ((languages.SYMBOL, 0.0),)
    return fired


def tenant_of_mail(
    policy: PolicyConfig, user: str | None, recipients: Sequence[str], raw: bytes
) -> str | None:
    """The AUTH user or spamc User naming a tenant; else the tenant owning a recipient
    domain: the milter's envelope recipients, else the topmost Delivered-To (the receiving
    MTA's; lower ones and To are the sender's to write)."""
    if user and any(t.name == user for t in policy.tenants):
        return user
    if not any(t.domains for t in policy.tenants):
        return None
    for address in recipients or [delivered_to(raw)]:
        if "@" in address:
            found = policy.tenant_for_domain(address.rsplit("@", 1)[1])
            if found is not None:
                return found
    return None


def delivered_to(raw: bytes) -> str:
    """The topmost Delivered-To address of a raw message's header block ("" if none)."""
    head = raw[:65_536].split(b"\r\n\r\n", 1)[0].split(b"\n\n", 1)[0]
    for line in head.splitlines():
        name, sep, value = line.partition(b":")
        if sep and name.strip().lower() == b"delivered-to":
            text = value.decode("utf-8", "replace").strip()
            return text.removeprefix("<").removesuffix(">").strip()
    return ""
