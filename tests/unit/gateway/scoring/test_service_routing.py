"""The request path's decisions without Triton: ``Service.classify`` and ``routing`` against a
fake scorer. Which ensemble answers (task, tenant, version), when the fp32 re-score runs,
what the policy makes of the scores, and which error (and status) a failure becomes."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable, Sequence
from typing import Any

import jsonschema
import numpy as np
import pytest

from textgate.config import Config
from textgate.errors import EmptyText, TritonTimeout, TritonUnavailable, UnknownTask
from textgate.gateway.http.http_errors import status_of
from textgate.gateway.records.events import EVENT_SCHEMA, Event
from textgate.gateway.records.prometheus import Metrics
from textgate.gateway.scoring.limiter import Limiter
from textgate.gateway.scoring.policy import NON_FINITE_OUTPUT, Policy
from textgate.gateway.scoring.prepare import Preparer
from textgate.gateway.scoring.routing import Route, Router, discover
from textgate.gateway.scoring.service import Context, Runtime, Service
from textgate.triton_client import Prediction

Scores = Callable[[str, str], Sequence[float]]  # (model, text) -> probabilities


class FakeScorer:
    """Triton's place: answers each text by ``scores(model, text)`` and records the calls."""

    def __init__(self, scores: Scores, fail: Exception | None = None) -> None:
        self.scores = scores
        self.fail = fail
        self.calls: list[tuple[str, list[str]]] = []

    async def infer(self, model: str, texts: Sequence[str], **_: Any) -> Prediction:
        self.calls.append((model, list(texts)))
        if self.fail is not None:
            raise self.fail
        rows = [list(self.scores(model, t)) for t in texts]
        return Prediction(np.array(rows, dtype=np.float32), "fake:8001")

    def models(self) -> list[str]:
        return [model for model, _ in self.calls]


class RecordingSink:
    """The outbox's place: keeps each request's events as the outbox would store them."""

    enabled = True

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def lookup(self, tenant: str | None, client_id: str) -> None:
        return None

    async def put_batch(self, items: list[dict[str, Any]], record: Any = None) -> None:
        self.events += [Event.of(**fields) for fields in items]


class Picker:
    """A release state: ``spam`` serves v1; the canary keys in ``canary`` get v2."""

    def __init__(self, key: str = "request_id", canary: Sequence[str] = ()) -> None:
        self.key = key
        self.canary = set(canary)
        self.observed: list[dict[str, Any]] = []

    def tasks(self) -> list[str]:
        return ["spam"]

    def pick(self, task: str, key: str) -> int | None:
        if task != "spam":
            return None
        return 2 if key in self.canary else 1

    def canary_key(self, task: str) -> str:
        return self.key

    def observe(self, route: Route, **outcome: Any) -> None:
        self.observed.append({"model": route.model, **outcome})


def _route(name: str, labels: tuple[str, ...] = ("ham", "spam"), **kw: Any) -> Route:
    fields: dict[str, Any] = {"version": "1", "variant": "int8", "max_batch_size": 8}
    return Route(task=name, model=name, labels=labels, **{**fields, **kw})


SPAM = _route("spam", precise="spam_fp32", precise_variant="fp32")
ROUTES = {
    "spam": SPAM,
    "sentiment": _route("sentiment", ("negative", "positive")),
}
CONFIG = {
    "policy": {
        "tasks": [
            {"task": "spam", "kind": "threshold", "positive_label": "spam"},
            {"task": "sentiment", "kind": "label"},
        ],
        "tenants": [{"name": "strict", "tasks": [{"task": "spam", "review_at": 0.3}]}],
    },
}


def runtime(scorer: FakeScorer, router: Router | None = None, **gateway: Any) -> Runtime:
    config = Config.from_dict({**CONFIG, "gateway": {"parse_workers": 0, **gateway}})
    return Runtime(
        config=config,
        policy=Policy(config.policy),
        limiter=Limiter(config.gateway),
        router=router or Router(ROUTES),
        client=scorer,  # type: ignore[arg-type]
        preparer=Preparer(max_body_bytes=config.gateway.max_body_bytes),
    )


def classify(
    rt: Runtime, task: str, texts: Sequence[str | bytes], **ctx: Any
) -> tuple[list[dict[str, Any]], RecordingSink, Service]:
    sink = RecordingSink()
    service = Service(Metrics(), sink)  # type: ignore[arg-type]
    results = asyncio.run(service.classify(rt, task, list(texts), Context(request_id="r1", **ctx)))
    return results, sink, service


def spam_at(p: float) -> Scores:
    return lambda model, text: (1.0 - p, p)


# --- routing: task, tenant, version -------------------------------------------------------------


def test_each_task_goes_to_its_own_ensemble() -> None:
    scorer = FakeScorer(lambda model, text: (0.2, 0.8) if model == "sentiment" else (0.9, 0.1))
    rt = runtime(scorer)
    (pos,), _, _ = classify(rt, "sentiment", ["what a lovely film"])
    (ham,), _, _ = classify(rt, "spam", ["lunch at noon?"])
    assert scorer.models() == ["sentiment", "spam"]
    assert pos["action"] == "positive" and pos["label"] == "positive"
    assert ham["action"] == "allow" and ham["model"] == SPAM.describe()


def test_an_unknown_task_is_a_404_before_any_scoring() -> None:
    scorer = FakeScorer(spam_at(0.5))
    with pytest.raises(UnknownTask) as err:
        classify(runtime(scorer), "nope", ["hello"])
    assert status_of(err.value) == 404 and err.value.field == "task"
    assert "served: sentiment, spam" in err.value.message and scorer.calls == []


def _released(picker: Picker) -> Router:
    routes = {
        "spam_v1": _route("spam_v1"),
        "spam_v2": _route("spam_v2", version="2"),
        "spam": _route("spam_v1"),
    }
    return Router(routes, picker)


def test_the_release_state_picks_the_version_by_its_canary_key() -> None:
    picker = Picker(canary=["r1"])  # keyed by request id: this request is in the canary
    scorer = FakeScorer(spam_at(0.1))
    (item,), _, _ = classify(runtime(scorer, _released(picker)), "spam", ["hi"])
    assert scorer.models() == ["spam_v2"]
    assert item["model"] == {"name": "spam_v2", "version": "2", "variant": "int8"}
    (seen,) = picker.observed  # the canary watch hears how the request went
    assert seen["model"] == "spam_v2" and seen["ok"] is True and seen["texts"] == ["hi"]


def test_a_tenant_keyed_canary_follows_the_tenant() -> None:
    picker = Picker(key="tenant", canary=["strict"])
    scorer = FakeScorer(spam_at(0.1))
    rt = runtime(scorer, _released(picker))
    classify(rt, "spam", ["a"], tenant="strict")
    classify(rt, "spam", ["b"])  # no tenant: the request id is the key, not in the canary
    assert scorer.models() == ["spam_v2", "spam_v1"]


def test_a_version_pinned_name_is_not_a_task() -> None:
    with pytest.raises(UnknownTask):
        classify(runtime(FakeScorer(spam_at(0.1)), _released(Picker())), "spam_v2", ["x"])


# --- the fp32 re-score ---------------------------------------------------------------------------


def test_a_score_near_a_threshold_is_rescored_by_fp32() -> None:
    scorer = FakeScorer(lambda model, text: (0.03, 0.97) if model == "spam_fp32" else (0.14, 0.86))
    (item,), sink, service = classify(runtime(scorer), "spam", ["win cash"])
    assert scorer.models() == ["spam", "spam_fp32"]
    assert item["rescored"] is True and item["precision_path"] == "fp32"
    assert item["score"] == pytest.approx(0.97) and item["action"] == "quarantine"
    assert sink.events[0].variant == "fp32"
    assert service.metrics.rescores.labels("spam", "false")._value.get() == 1  # same label


@pytest.mark.parametrize("gateway", [{}, {"rescore": False}], ids=["far", "off"])
def test_no_rescore_far_from_thresholds_or_when_off(gateway: dict[str, Any]) -> None:
    p = 0.2 if not gateway else 0.86
    scorer = FakeScorer(spam_at(p))
    (item,), _, _ = classify(runtime(scorer, **gateway), "spam", ["lunch"])
    assert scorer.models() == ["spam"] and item["rescored"] is False
    assert item["precision_path"] == "int8"


# --- the policy ---------------------------------------------------------------------------------


ACTIONS = [(0.97, None, "quarantine"), (0.9, None, "review"), (0.5, None, "allow")]


@pytest.mark.parametrize(("p", "tenant", "action"), [*ACTIONS, (0.5, "strict", "review")])
def test_the_policy_turns_scores_into_actions(p: float, tenant: str | None, action: str) -> None:
    (item,), sink, _ = classify(runtime(FakeScorer(spam_at(p))), "spam", ["x"], tenant=tenant)
    assert item["action"] == action and item["score"] == pytest.approx(p)
    assert sink.events[0].action == action and sink.events[0].tenant == tenant


def test_a_batch_gets_one_verdict_and_one_event_per_text() -> None:
    scores = {"a": 0.1, "b": 0.97}
    scorer = FakeScorer(lambda model, text: (1 - scores[text], scores[text]))
    results, sink, _ = classify(runtime(scorer), "spam", ["a", "b"])
    assert [r["action"] for r in results] == ["allow", "quarantine"]
    assert [r["request_id"] for r in results] == ["r1/0", "r1/1"]
    assert [e.request_id for e in sink.events] == ["r1/0", "r1/1"]


# --- a model that answers NaN or inf (a defect, never a score) ----------------------------------


@pytest.mark.parametrize("bad", [math.nan, math.inf], ids=["nan", "inf"])
def test_a_non_finite_output_is_a_review_with_the_defect_and_a_valid_event(bad: float) -> None:
    scorer = FakeScorer(lambda model, text: (bad, bad))
    rt = runtime(scorer, rescore=False)
    (item,), sink, _ = classify(rt, "spam", ["x"])
    assert item["action"] == "review" and item["defects"] == [NON_FINITE_OUTPUT]
    assert item["score"] is None and json.dumps(item, allow_nan=False)  # JSON has no NaN
    (event,) = sink.events
    jsonschema.validate(json.loads(event.to_json()), EVENT_SCHEMA)
    assert event.score is None and event.action == "review"


def test_fp32_answering_where_the_fast_variant_gave_nan_clears_the_defect() -> None:
    scorer = FakeScorer(lambda model, text: (0.9, 0.1) if model == "spam_fp32" else (0.5, math.nan))
    (item,), _, _ = classify(runtime(scorer), "spam", ["x"])
    assert item["rescored"] is True and item["action"] == "allow" and "defects" not in item


def test_an_ordinary_answer_has_no_defects_key() -> None:
    (item,), _, _ = classify(runtime(FakeScorer(spam_at(0.1))), "spam", ["x"])
    assert "defects" not in item


# --- errors on the request path -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("fail", "code"),
    [(TritonUnavailable("Triton unavailable (down)"), 503), (TritonTimeout("slow"), 504)],
)
def test_a_triton_failure_keeps_its_status_and_is_observed(fail: Exception, code: int) -> None:
    picker = Picker()
    rt = runtime(FakeScorer(spam_at(0.1), fail=fail), _released(picker))
    with pytest.raises(type(fail)) as err:
        classify(rt, "spam", ["x"])
    assert status_of(err.value) == code
    assert [o["ok"] for o in picker.observed] == [False]  # the canary watch counts it


def test_empty_text_is_a_422_without_a_triton_call() -> None:
    scorer = FakeScorer(spam_at(0.1))
    with pytest.raises(EmptyText) as err:
        classify(runtime(scorer), "spam", [" \x00 "])
    assert status_of(err.value) == 422 and scorer.calls == []


# --- discovery ----------------------------------------------------------------------------------


class FakeIndex:
    """What Triton's repository API says about a spam ensemble, its fp32 twin and v1/v2."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)

    async def repository_index(self) -> list[dict[str, Any]]:
        return [{"name": n, "version": "1", "state": "READY"} for n in self.names]

    async def model_config(self, name: str) -> dict[str, Any]:
        if name.endswith("_postprocess"):
            return {"parameters": {"labels": {"string_value": '["ham", "spam"]'}}}
        if name.endswith(("_model", "_model_fp32")):
            variant = "fp32" if name.endswith("_fp32") else "int8"
            return {"parameters": {"variant": {"string_value": variant}}}
        steps = [{"model_name": f"{name}_model"}, {"model_name": f"{name}_postprocess"}]
        return {"platform": "ensemble", "max_batch_size": 16,
                "ensemble_scheduling": {"step": steps}}  # fmt: skip


def _ensemble(name: str) -> list[str]:
    return [name, f"{name}_model", f"{name}_postprocess"]


def test_discovery_finds_tasks_labels_variants_and_the_fp32_twin() -> None:
    index = FakeIndex(_ensemble("spam") + _ensemble("spam_fp32") + ["spam_model_fp32"])
    router = asyncio.run(discover(index))  # type: ignore[arg-type]
    spam = router.route("spam")
    assert spam.labels == ("ham", "spam") and spam.variant == "int8"
    assert spam.precise == "spam_fp32" and spam.precise_variant == "fp32"
    assert spam.max_batch_size == 16 and "spam" in router.models()


def test_discovery_routes_a_released_task_to_its_serving_version() -> None:
    index = FakeIndex(_ensemble("spam_v1") + _ensemble("spam_v2"))
    router = asyncio.run(discover(index, releases=Picker(canary=["r9"])))  # type: ignore[arg-type]
    assert router.public() == ["spam"]
    assert router.route("spam").model == "spam_v1" and router.route("spam", "r9").version == "2"


def test_discovery_names_a_configured_task_triton_lacks() -> None:
    with pytest.raises(TritonUnavailable, match="no ready task sentiment") as err:
        asyncio.run(discover(FakeIndex(_ensemble("spam")), ["spam", "sentiment"]))  # type: ignore[arg-type]
    assert status_of(err.value) == 503


# --- one path: classify -> explain -> record, whichever front end asks --------------------------


class FakeDesk:
    """The runtime's desk: what it was asked to remember, and one span an explanation."""

    def __init__(self) -> None:
        self.remembered: list[list[str]] = []

    def remember(self, task: str, raw: Any, tenant: Any, results: Sequence[Any]) -> None:
        self.remembered.append([r["request_id"] for r in results])

    async def spans(
        self, rt: Runtime, task: str, raw: Any, ctx: Context, n: int, cheap: bool = False
    ) -> list[Any]:
        from textgate.gateway.scoring.explain import Span

        return [Span("money", "word", 0.5)][:n]

    async def learned(self) -> None:  # per-tenant learning off, as by default
        return None


class FakeReviewStore:
    def __init__(self) -> None:
        self.kept: list[str] = []

    async def keep_async(self, **kw: Any) -> bool:
        self.kept.append(kw["request_id"])
        return True


def test_run_records_every_front_ends_answer_once() -> None:
    rt = runtime(FakeScorer(spam_at(0.99)))
    desk, store, metrics = FakeDesk(), FakeReviewStore(), Metrics()
    service = Service(metrics, RecordingSink(), desk=desk, review_store=lambda: store)  # type: ignore[arg-type]

    def run(rid: str, **kw: Any) -> Any:
        ctx = Context(request_id=rid)
        return asyncio.run(service.run(rt, "spam", ["win money"], ctx, explain=1, **kw))

    http, mail = run("h"), run("m", attach=False)  # HTTP attaches; spamd renders the spans
    span = {"span": "money", "kind": "word", "contribution": 0.5}
    assert http.results[0]["explanation"] == [span]
    assert "explanation" not in mail.results[0] and mail.spans[0][0].as_dict() == span
    assert desk.remembered == [["h"], ["m"]] and store.kept == ["h", "m"]
    counted = [
        s.value
        for f in metrics.registry.collect()
        if f.name == "textgate_requests"
        for s in f.samples
        if s.name == "textgate_requests_total"
    ]
    assert sum(counted) == 2
