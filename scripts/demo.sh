#!/usr/bin/env bash
# `make demo`: build the default spam model (cached), serve it through real Triton behind
# the gateway, show two verdicts on real e-mail, then keep serving until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
PORT="${PORT:-8080}"
ARTIFACTS="${ARTIFACTS:-artifacts}"
# shellcheck source=scripts/wait_ready.sh
. scripts/wait_ready.sh
# shellcheck source=scripts/build_default.sh
. scripts/build_default.sh

# The full recipe (fixed steps, cached); the small fixed one only if the time budget cut it.
build_default spam "$ARTIFACTS/spam"

# The review console (/ui/) keeps review/quarantine mail: on in the demo, off by default.
export TEXTGATE_REVIEW__PATH="${TEXTGATE_REVIEW__PATH:-$ARTIFACTS/review.sqlite3}"
export TEXTGATE_FEEDBACK__PATH="${TEXTGATE_FEEDBACK__PATH:-$ARTIFACTS/feedback.sqlite3}"
export TEXTGATE_GATEWAY__ADMIN_TOKEN="${TEXTGATE_GATEWAY__ADMIN_TOKEN:-demo-admin-token-change-me}"

"$BIN/textgate" serve --bundle "$ARTIFACTS/spam" --port "$PORT" &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server 2>/dev/null' EXIT INT TERM

echo "waiting for the gateway on :$PORT to be ready (Triton loads the models) ..."
wait_ready "$server" "$PORT" 300

for mail in examples/spam.eml examples/ham.eml; do
    echo
    echo "\$ curl -s localhost:$PORT/v1/classify/spam -H 'content-type: message/rfc822' --data-binary @$mail"
    "$BIN/python" - "$PORT" "$mail" <<'PY'
import json, sys, urllib.request
port, path = sys.argv[1], sys.argv[2]
req = urllib.request.Request(
    f"http://127.0.0.1:{port}/v1/classify/spam",
    data=open(path, "rb").read(),
    headers={"content-type": "message/rfc822"},
)
result = json.load(urllib.request.urlopen(req, timeout=30))["results"][0]
keep = ("label", "score", "action", "model", "precision_path", "timings_ms")
print(json.dumps({k: result[k] for k in keep if k in result}, indent=2))
PY
done

text='Your Amazon order #123-456 has shipped'
echo
echo "\$ curl -s localhost:$PORT/v1/classify/spam -H 'content-type: application/json' -d '{\"text\": \"$text\"}'"
"$BIN/python" - "$PORT" "$text" <<'PY'
import json, sys, urllib.request
port, text = sys.argv[1], sys.argv[2]
req = urllib.request.Request(
    f"http://127.0.0.1:{port}/v1/classify/spam",
    data=json.dumps({"text": text}).encode(),
    headers={"content-type": "application/json"},
)
result = json.load(urllib.request.urlopen(req, timeout=30))["results"][0]
print(json.dumps({k: result[k] for k in ("label", "score", "action") if k in result}, indent=2))
PY

echo
echo "serving on http://127.0.0.1:$PORT (API: /v1/classify/{task}, /v1/models, /metrics); Ctrl-C stops"
echo "review console: http://127.0.0.1:$PORT/ui/ (log in with \$TEXTGATE_GATEWAY__ADMIN_TOKEN: $TEXTGATE_GATEWAY__ADMIN_TOKEN)"
wait $server
