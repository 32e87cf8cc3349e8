"""The gateway in front of Triton: normalize, route, score, apply policy, record.

Rooms, one concern each (``lint-imports`` holds the order: a room imports only the rooms
below it, and the front ends never import each other; docs/architecture.md draws it):

    server.py      ``textgate serve``: Triton, the front door, uvicorn
    app.py         create_app: starts the runtime and the front ends, wires them together
    http/          front end: routes, middleware, body parsing, schema, admin, feedback,
                   the front door; ``http_errors`` (an error's kind -> HTTP status)
    mailproto/     front end: spamd and milter on one listener, the Scanner they call,
                   SpamAssassin-style marks
    console/       front end: the review console (/ui/), sign-in sessions, live panel
    runtime.py     Gateway: the runtime a reload swaps, start/stop, discovery, readiness
    scoring/       one request, the same for every front end (``Service.run``): normalize,
                   route, Triton, re-score, policy, the steps after it, explain, record
    records/       what a request leaves behind: events (outbox, publisher), the review
                   store, metrics, logs, the replay store
"""
