"""The HTTP gateway in front of Triton: normalize, route, score, apply policy, record.

app.py        the ASGI app (FastAPI): routes, request ids, the one error table's use
service.py    one classification: normalize -> queue -> Triton -> re-score -> policy -> event
http_errors.py the exception tree -> HTTP status table, and the gateway's own errors
policy.py     scores -> actions per task, per-tenant overrides
routing.py    which Triton model answers a task (discovered from Triton)
rescore.py    fast variant -> fp32 re-score inside the band around a threshold
limiter.py    bounded in-flight pieces and waiting queue (429 beyond)
prometheus.py Prometheus metrics (textgate/metrics.py is the classifier's metrics)
logs.py       JSON logs with the request id; X-Request-ID and traceparent handling
replay.py     the replay store for anomalous outputs
prepare.py    text or raw e-mail -> what is scored (textgate.normalize, the parse pool)
event_sink.py the outbox door: classification, release and review events; the publisher
server.py     `textgate serve`: embedded Triton + uvicorn, reload on SIGHUP
frontdoor.py  per-connection limits before the app: head size, read deadlines, caps
pool.py       e-mail parsing in killable worker processes, with a time budget
"""
