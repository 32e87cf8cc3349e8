"""The gateway's side of the mail protocols: the scanner they call, and their listeners.

    spamd.Server ──┐
    milter.Server ─┴─> Scanner.scan(raw, user) ─> Service.run (the path every front end
                                                  takes: classify, explain, record) -> Mark
    spamc -L ─────────> Scanner.learn ──────────> the runtime's Desk (corrections)

``Listeners`` are made in the app's lifespan after the gateway started and stopped before
it, so a listener never outlives the runtime it scans with. The ``User`` of spamc (or the
milter's ``{auth_authen}`` macro) names a tenant only when a tenant of that name is
configured: spamc sends the local Unix user by default, which must not be an error. The
mail sockets do not carry API keys; bind them to loopback (the default) or a trusted
network, like spamd. For the same reason ``learn`` (spamc -L) is reached only through
``spamd.TellRule``: off unless ``mail.allow_tell``, and only from ``mail.tell_networks``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from prometheus_client import Counter

from textgate.config import Config, PolicyConfig
from textgate.gateway.mailproto import marks
from textgate.gateway.records import logs
from textgate.gateway.scoring import languages, policy
from textgate.gateway.scoring.explain import Span
from textgate.gateway.scoring.service import Context, Runtime

if TYPE_CHECKING:
    from textgate.gateway.runtime import Gateway

REQUEST_ID_HEADER = b"x-textgate-request-id"
_NOT_SPAM = ("allow", "uncertain", *policy.NEGATIVE_LABELS)


class Scanner:
    """What spamd and the milter ask of the gateway: a scan, and spamc's learn."""

    def __init__(self, gw: Gateway) -> None:
        self.gw = gw

    def tenant(self, rt: Runtime, user: str | None) -> str | None:
        names = {t.name for t in rt.config.policy.tenants}
        return user if user in names else None

    async def scan(
        self,
        raw: bytes,
        user: str | None,
        *,
        explain: bool,
        recipients: Sequence[str] = (),
        queue_id: str | None = None,
    ) -> marks.Mark:
        gw = self.gw
        rt = gw.runtime
        task = rt.config.mail.task
        rid = logs.request_id(None)
        token = logs.request_id_var.set(rid)
        ctx = Context(request_id=rid, headers={"traceparent": logs.trace(None).traceparent})
        ctx.queue_id = queue_id
        n = rt.config.mail.explain if explain else 0
        try:
            ctx.tenant = tenant_of_mail(rt.config.policy, user, recipients, raw)
            answer = await gw.service.run(rt, task, [raw], ctx, explain=n, attach=False)
        except Exception as exc:
            # HTTP's middleware counts its failures; the mail protocols count theirs here.
            gw.metrics.failed_with(task, rt.router.public(), ctx.tenant, exc)
            raise
        finally:
            logs.request_id_var.reset(token)
        spans = answer.spans[0] if answer.spans else ()
        return mark(rt.config, rt, task, ctx.tenant, answer.results[0], spans)

    async def learn(self, raw: bytes, label: str, user: str | None, *, remove: bool) -> None:
        """spamc -L spam|ham (Set) or forget (Remove)."""
        rt, desk = self.gw.runtime, self.gw.desk
        task = rt.config.mail.task
        tenant = self.tenant(rt, user)
        if remove:
            await desk.forget(task, raw, tenant, rt)
            return
        label = policy.spamc_label(label, rt.router.route(task).labels)
        rid = _request_id_header(raw)
        await desk.correct(rt, task, label, tenant, raw=raw, request_id=rid, source="spamd")


class Listeners:
    """The spamd and milter listeners of one app: started after the gateway, stopped
    before it, so a listener never outlives the runtime it scans with."""

    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self.scanner = Scanner(gw)
        self.commands = Counter(
            "textgate_mail_commands",
            "spamd commands and milter messages by protocol, command and answer code",
            ["protocol", "command", "code"],
            registry=gw.metrics.registry,
        )
        self._servers: list[Any] = []
        self.ports: dict[str, int] = {}

    async def start(self) -> None:
        from textgate.gateway.mailproto import milter, spamd

        cfg, max_bytes = self.gw.config.mail, self.gw.config.gateway.max_body_bytes
        scanner = self.scanner
        if cfg.spamd_port is not None:
            s = spamd.Server(
                scanner,
                max_bytes=max_bytes,
                max_connections=cfg.max_connections,
                timeout_s=cfg.read_timeout_s,
                count=lambda c, code: self.commands.labels("spamd", c[:16], code).inc(),
                # the tenants as they are at each TELL: a reload may add or drop some
                tell=spamd.TellRule.of(
                    cfg, lambda u: scanner.tenant(self.gw.runtime, u) is not None
                ),
                strip_spam_headers=cfg.strip_spam_headers,
            )
            self.ports["spamd"] = await s.start(cfg.host, cfg.spamd_port)
            self._servers.append(s)
        if cfg.milter_port is not None:
            m = milter.Server(
                scanner,
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

    def _is_tenant(self, user: str) -> bool:
        return self.scanner.tenant(self.gw.runtime, user) is not None

    async def stop(self) -> None:
        for s in self._servers:
            await s.stop()
        self._servers.clear()


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
    spans: Sequence[Span] = (),
) -> marks.Mark:
    """A service result as SpamAssassin-style points and rules."""
    cfg = config.mail
    rule = rt.policy.rule(task, tenant)
    score = result["score"]
    spam = result["action"] not in _NOT_SPAM
    if score is None or (isinstance(score, float) and math.isnan(score)):
        spam = True
    raw_points = marks.points(score, rule.review_at, cfg.required_points, cfg.max_points)
    model = result["model"]
    probs = dict(result["probabilities"])
    return marks.Mark(
        spam=spam,
        points=marks.shown_points(raw_points, spam, cfg.required_points),
        required=cfg.required_points,
        action=result["action"],
        label=result["label"],
        score=score,
        probabilities=probs,
        model=f"{model['name']}/{model['version']} ({result['precision_path']})",
        request_id=result["request_id"],
        tests=marks.tests_of(probs, result["label"], result["action"], spans),
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
