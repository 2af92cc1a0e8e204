#!/bin/bash
# test_ab.sh: tools/ab end to end, its smallest scenario: the namespace fabric (2 hosts,
# 4 paths), 1% loss on one path (the one carrying most of the run's data, from about 0.5 s
# on), one short streaming run per contender (braid, braid;ofi_rxm, braid;ofi_rxd,
# tcp;ofi_rxm) with every payload byte checked exactly once at the receiver (braid_ab -v),
# the fabric down again. Fails if any contender fails; skips (77) where the fabric cannot
# run (not root, no namespaces) or braid_ab is not built. Speed is not checked.
#   usage: tests/ab/test_ab.sh [BUILD_DIR]
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${1:-${MESON_BUILD_ROOT:-build}}
case $build in /*) ;; *) build=$PWD/$build ;; esac

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
[ -x tools/fabric ] || skip "tools/fabric not found"
[ -x "$build/bench/braid_ab" ] || skip "$build/bench/braid_ab not built"
command -v python3 >/dev/null || skip "python3 not found"
# the fabric's delay stage is not needed: this test uses loss only
export BRAID_FABRIC_PREFIX=abt$$	# our own namespaces, apart from any other fabric
[ ${#BRAID_FABRIC_PREFIX} -le 12 ] || export BRAID_FABRIC_PREFIX=abt$((RANDOM))

out=$(mktemp -d /tmp/test_ab.XXXXXX)
trap 'rm -rf "$out"' EXIT
# tools/ab brings the fabric up and down itself (down also when it fails or is killed)
timeout -k 10 150 tools/ab --scenarios loss1 --measures bw64k -r 1 --seconds 1.5 \
	--verify --stuck-timeout 15 --braid-ab "$build/bench/braid_ab" \
	--provider-path "$build/providers" -o "$out" >"$out/log" 2>&1
rc=$?
grep -E '^(ab:|\[|--)' "$out/log"
if [ $rc -eq 77 ]; then
	skip "$(grep -m1 SKIP "$out/log" || echo 'tools/ab: nothing could run')"
fi
# every contender's row: status ok, and the run was on the lossy fabric with data checked
fails=0
for c in braid 'braid;ofi_rxm' 'braid;ofi_rxd' 'tcp;ofi_rxm'; do
	line=$(python3 - "$out/results.csv" "$c" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["contender"] == sys.argv[2]]
if not rows:
    print("missing")
else:
    r = rows[0]
    print("%s %s Gbit/s, %s packets dropped by the fabric; %s" % (
        r["status"], r["goodput_gbps"] or "-", r["fabric_drops"] or "-", r["note"].strip()))
PY
	)
	echo "$c: $line"
	case $line in ok*) ;; *) fails=$((fails + 1)) ;; esac
done
if ip netns list 2>/dev/null | grep -q "^$BRAID_FABRIC_PREFIX-"; then
	echo "FAIL: the fabric's namespaces are still there"
	BRAID_FABRIC_PREFIX=$BRAID_FABRIC_PREFIX tools/fabric down >/dev/null 2>&1
	fails=$((fails + 1))
fi
if [ $rc -ne 0 ] || [ $fails -ne 0 ]; then
	echo "FAIL: tools/ab exit $rc, $fails contender(s) failed"
	tail -20 "$out/log"
	exit 1
fi
echo "PASS: every contender moved its data over the lossy fabric, every byte checked"
