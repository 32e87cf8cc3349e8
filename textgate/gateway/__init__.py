"""The HTTP gateway in front of Triton: normalize, route, score, apply policy, record.

The front ends (each renders one protocol; none holds a step after scoring):

    app.py             create_app and the classify/models/health/metrics routes
    middleware.py      request id + trace, in-flight gauge, classify log line; the admin gate
    error_handlers.py  every error -> one JSON body (statuses: http_errors.py, by error kind)
    admin.py           /admin/*: release operations, Triton model control, reload
    corrections.py console.py apidocs.py   feedback, the review console (/ui/), /docs
    session.py panel.py    console sign-in sessions; the console's live panel
    mail_front.py      the mail protocols' Scanner (scan, learn) and their Listeners
    spamd.py milter.py listener.py   the wire protocols; the one TCP listener (cap, timeout)
    request_body.py    a classify body: size limit, media type, JSON/e-mail/text parsing
    schema.py          the wire format as the published schema states it

The runtime (imports point down this list, never up):

    runtime.py         Gateway: the runtime a reload swaps, start/stop, discovery, readiness
    release_hook.py    which version of a released task answers; canary watch, shadow copies
    desk.py            recent verdicts, corrections, explanations (one desk, every front end)

One request, the same path for every front end (``Service.run``):

    service.py         classify (normalize, queue, Triton, re-score, policy, steps) -> record
    context.py answer.py   Runtime and Context; the shape of one item's answer
    steps.py           the steps after the policy: sender lists, language policy
    prepare.py pool.py     text or raw e-mail -> what is scored; the killable parse workers
    routing.py         which Triton model answers a task (discovered from Triton; VersionPicker)
    rescore.py policy.py   fast -> fp32 re-score near a threshold; scores -> actions
    limiter.py coalesce.py campaign.py   bounded work; shared Triton calls; campaign memory
    explain.py marks.py    trigger-word spans; SpamAssassin-style marks and headers

What a request leaves behind:

    review_store.py review_records.py   the review store; what is kept, a person's decision
    event_sink.py events.py outbox/ publisher.py   events, durable, to Kafka
    prometheus.py      Prometheus metrics (textgate/metrics.py holds the classifier's metrics)
    logs.py replay.py  JSON logs with the request id; the replay store for anomalous outputs
"""
