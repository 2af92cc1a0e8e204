#!/bin/bash
# test.sh: run braid's whole test suite (unit, provider API, fabtests pairs, examples) and print
# "N passed, N failed, N skipped" as the last line.
set -uo pipefail
cd "$(dirname "$0")/.."

log=$(mktemp)
meson test -C build --print-errorlogs --num-processes 2 "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
ok=$(sed -n 's/^Ok: *\([0-9]*\).*/\1/p' "$log" | tail -1)
fail=$(sed -n 's/^Fail: *\([0-9]*\).*/\1/p' "$log" | tail -1)
timeout=$(sed -n 's/^Timeout: *\([0-9]*\).*/\1/p' "$log" | tail -1)
skip=$(sed -n 's/^Skipped: *\([0-9]*\).*/\1/p' "$log" | tail -1)
rm -f "$log"
echo "${ok:-0} passed, $(( ${fail:-0} + ${timeout:-0} )) failed, ${skip:-0} skipped"
exit "$rc"
