# Sourced by the demo scripts: wait_ready PID PORT TRIES — poll the gateway's /readyz once a
# second until it answers, failing early when the server process has exited.
wait_ready() {
    local server=$1 port=$2 tries=$3
    for _ in $(seq 1 "$tries"); do
        if ! kill -0 "$server" 2>/dev/null; then echo "the server exited" >&2; return 1; fi
        if "$BIN/python" - "$port" <<'PY' 2>/dev/null; then return 0; fi
import sys, urllib.request
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/readyz", timeout=2)
PY
        sleep 1
    done
    echo "the gateway on :$port was not ready after $tries s" >&2
    return 1
}
