"""The HTTP gateway in front of Triton: normalize, route, score, apply policy, record.

The app and its rooms (imports point down this list, never up):

    app.py             create_app and the classify/models/health/metrics routes
    middleware.py      request id + trace, in-flight gauge, classify log line; the admin gate
    error_handlers.py  every error -> one JSON body (statuses from http_errors.py)
    admin.py           /admin/*: release operations, Triton model control, reload
    corrections.py console.py apidocs.py   feedback, the review console (/ui/), /docs
    lifecycle.py       Gateway: the runtime a reload swaps, start/stop, discovery, readiness
    release_hook.py    which version of a released task answers; canary watch, shadow copies
    request_body.py    a classify body: size limit, media type, JSON/e-mail/text parsing
    schema.py          the wire format as the published schema states it

One request, below the app:

    service.py         one classification: normalize, queue, Triton, re-score, policy, event
    prepare.py         text or raw e-mail -> what is scored (textgate.normalize, the parse pool)
    routing.py         which Triton model answers a task (discovered from Triton; VersionPicker)
    rescore.py         fast variant -> fp32 re-score inside the band around a threshold
    policy.py          scores -> actions per task, per-tenant overrides
    limiter.py coalesce.py   bounded in-flight work; concurrent requests share Triton calls
    event_sink.py      the outbox door: classification, release and review events; the publisher
    http_errors.py     exception class -> HTTP status (one table) and the HTTP-only errors
    prometheus.py      Prometheus metrics (textgate/metrics.py holds the classifier's metrics)
    logs.py replay.py  JSON logs with the request id; the replay store for anomalous outputs

Around it: server.py (`textgate serve`), frontdoor.py (per-connection limits before the
app), pool.py (e-mail parsing in killable workers), spamd.py / milter.py / mail.py (mail
listeners), events.py / outbox.py / publisher.py (events to Kafka), review.py (the store).
"""
