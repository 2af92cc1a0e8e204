#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# test_leafspine_braid.sh: braid on a small leaf-spine (2 leaves, 4 spines, 4 hosts, tools/fabric)
# through tools/leafspine: a permutation with spine link l1-s1 black-holed once every flow sends,
# and a 3-to-1 incast into h1. Every flow's payload is checked byte by byte and its provider is
# braid's own RDM endpoint (braid_ab takes only the provider named braid); each run must end
# clean, and every flow must deliver in the last half of the time after the black hole (the
# figures are printed, not judged: speed is for benchmarks).
#
# usage: test_leafspine_braid.sh BUILD_DIR
# Exit: 0 pass, 1 fail, 77 skip (not root, no ip netns, nft, tc or python3).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
fabric=$here/../../tools/fabric
export BRAID_FABRIC_PREFIX=bflb
test_name=test_leafspine_braid
. "$(dirname "$0")/fabric_lib.sh"

"$here/../../tools/leafspine" --out "$tmp/out" --build "$build" --prefix "$BRAID_FABRIC_PREFIX" \
	--leaves 2 --spines 4 --hosts 4 --scenarios spinedown,incast --contenders braid \
	--reps 1 --seconds 6 >"$tmp/log" 2>&1
rc=$?
cat "$tmp/log"
[ $rc = 77 ] && exit 77
[ $rc = 0 ] || fail "tools/leafspine exited $rc"
csv=$tmp/out/results.csv
[ -f "$csv" ] || fail "no results.csv"
python3 - "$csv" <<'PY' || fail "the runs are not what they should be"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
want = {("spinedown", "braid"), ("incast", "braid")}
got = {(r["scenario"], r["contender"]) for r in rows}
if got != want:
    sys.exit("runs: %s, want %s" % (sorted(got), sorted(want)))
for r in rows:
    if r["status"] != "ok":
        sys.exit("%s: status %s (%s)" % (r["scenario"], r["status"], r["note"]))
    if not r["gbps"] or float(r["gbps"]) <= 0:
        sys.exit("%s: no goodput" % r["scenario"])
    if r["scenario"] == "spinedown":
        if r["stall_ms"] == "" or r["gap_before_ms"] == "" or r["after_gbps"] == "" or \
                r["flows_after"] != r["flows"]:
            sys.exit("spinedown: not every flow delivered after the black hole: %s" % r)
    if r["scenario"] == "incast" and (r["busy"] == "" or r["resent"] == ""):
        sys.exit("incast: no busy or resent figure: %s" % r)
print("runs ok: " + "; ".join("%s %s Gbit/s" % (r["scenario"], r["gbps"]) for r in rows))
PY
[ -z "$(ip netns list | awk '$1 ~ /^bflb-/')" ] || fail "tools/leafspine left namespaces"
echo "test_leafspine_braid: PASS"
