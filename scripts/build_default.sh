#!/usr/bin/env bash
# build_default TASK OUT: `textgate build TASK -o OUT` with the full fixed recipe; if the time
# budget (a safety net: 60 minutes for spam) cut its training, the build exits 75
# (BUDGET_CUT_EXIT in textgate/commands/bundles.py), caches nothing and marks its bundle, and
# this builds the small fixed recipe (`--recipe small`) in its place, so a demo never serves a
# partly trained model. Any other failure, or a cut small build, ends with the build's code.
# Sourced by scripts/demo.sh; needs BIN (the directory of the textgate script).

BUDGET_CUT_EXIT=75

build_default() {
    local task="$1" out="$2" rc=0
    "$BIN/textgate" build "$task" -o "$out" || rc=$?
    if [ "$rc" -ne "$BUDGET_CUT_EXIT" ]; then
        return "$rc"
    fi
    echo >&2
    echo "*** the time budget cut the full $task recipe on this machine (exit $rc): building" \
        "the small fixed recipe instead (textgate build $task -o $out --recipe small) ***" >&2
    echo >&2
    "$BIN/textgate" build "$task" -o "$out" --recipe small
}
