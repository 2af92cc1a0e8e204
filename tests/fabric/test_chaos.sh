#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# test_chaos.sh: braid's native RDM through everything the fabric can do to it at once
# (tools/fabric, 3 hosts, 4 paths), every message checked by tests/fabric/chaos:
#  - path 0 loses 3% of its packets, path 1 delays them 1 ms with 1 ms of jitter
#    (reordering), path 2 is clean, path 3 flaps (down and up every 400 ms);
#  - garbage: random datagrams, half of them with a well-formed braid common header
#    (magic, version, a random type), sprayed at every UDP port of the receiver;
#  - two senders stream to one receiver: h3 (incarnation 3) for the whole run, and h1
#    (incarnation 1), which is killed (SIGKILL) mid-stream and restarted at the same
#    address and port (incarnation 2).
# Passes when: the survivor's and the restarted sender's every send completed without
# error and the receiver got each of their messages exactly once and intact; no message
# of the killed incarnation was delivered after the first of its successor, none
# duplicated or corrupt; nothing crashed.
#   usage: test_chaos.sh BUILD_DIR
# Exit: 0 pass, 1 fail, 77 skip (not root, no namespaces, or the programs not built).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fabric=$here/../../tools/fabric
export BRAID_FABRIC_PREFIX=bfc
build=${1:-}
case $build in /*) ;; *) build=$PWD/$build ;; esac
test_name=test_chaos
. "$(dirname "$0")/fabric_lib.sh"
chaos=$build/tests/fabric/chaos
[ -x "$chaos" ] || { echo "SKIP: $chaos not built"; exit 77; }
# path 1's delay needs the fabric's delay stage: the one built beside the test
[ -x "$build/tools/braid_fabric_delay" ] ||
	{ echo "SKIP: $build/tools/braid_fabric_delay not built (libnetfilter-queue-dev)"; exit 77; }
export BRAID_FABRIC_DELAY=$build/tools/braid_fabric_delay
env="env FI_PROVIDER_PATH=$build/providers FI_BRAID_PEER_TIMEOUT_MS=1500"

"$fabric" up --paths 4 --hosts 3 >"$tmp/up.out" 2>&1 || fail "fabric up: $(tail -3 "$tmp/up.out")"
"$fabric" set 0 loss=3 >/dev/null && "$fabric" set 1 delay=1/1 >/dev/null ||
	fail "setting the paths"

# the receiver on h2 for 11 s
"$fabric" exec h2 -- timeout 40 $env "$chaos" recv 10.77.2.2 "$tmp/name" 11 >"$tmp/recv.out" 2>&1 &
rpid=$!
wait_file "$tmp/name"
# path 3 flaps for the whole run; garbage at the receiver's UDP ports from its own host
( for i in $(seq 25); do "$fabric" set 3 down >/dev/null; sleep 0.2; "$fabric" set 3 up >/dev/null;
  sleep 0.2; done ) &
flap=$!
ports=$("$fabric" exec h2 -- ss -uanp | awk '/"chaos"/ { n = split($4, a, ":"); print a[n] }' | sort -u | tr '\n' ' ')
[ -n "$ports" ] || fail "no UDP port of the receiver found"
"$fabric" exec h2 -- timeout 30 python3 - "$ports" <<'PY' >"$tmp/garbage.out" 2>&1 &
import os, random, socket, struct, sys, time
ports = [int(p) for p in sys.argv[1].split()]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
rng = random.Random(15)
sent, end = 0, time.time() + 8
while time.time() < end:
    n = rng.randrange(0, 1400)
    body = os.urandom(n)
    if rng.random() < 0.5 and n >= 8:
        # a braid common header: magic, version 1, a type 0..9, flags, a port, a header length
        body = struct.pack("!BBBBHH", 0xBD, 1, rng.randrange(10), rng.randrange(256),
                           rng.randrange(65536), rng.randrange(8, 64)) + body[8:]
    try:
        s.sendto(body, ("10.77.2.2", rng.choice(ports)))
        sent += 1
    except OSError:
        pass
    if sent % 200 == 0:
        time.sleep(0.01)
print("garbage datagrams sent:", sent)
PY
gpid=$!

# the survivor on h3 (incarnation 3), 9 s; the victim on h1 (incarnation 1), killed at 2 s
# and back at the same port at 3 s (incarnation 2) for 6 s
"$fabric" exec h3 -- timeout 40 env BENCH_SERVICE=40003 $env "$chaos" send 10.77.3.2 "$tmp/name" 3 9 \
	>"$tmp/s3.out" 2>&1 &
s3=$!
"$fabric" exec h1 -- timeout 40 env BENCH_SERVICE=40001 $env "$chaos" send 10.77.1.2 "$tmp/name" 1 9 \
	>"$tmp/s1.out" 2>&1 &
sleep 2
pkill -KILL -f "$chaos send 10.77.1.2" ; wait $! 2>/dev/null
sleep 1
"$fabric" exec h1 -- timeout 40 env BENCH_SERVICE=40001 $env "$chaos" send 10.77.1.2 "$tmp/name" 2 6 \
	>"$tmp/s2.out" 2>&1
rc2=$?
wait $s3
rc3=$?
wait $rpid
rrc=$?
wait $flap $gpid
"$fabric" set 3 up >/dev/null

cat "$tmp/recv.out" "$tmp/s3.out" "$tmp/s2.out" "$tmp/garbage.out" | sed 's/^/  /'
[ $rc3 -eq 0 ] || fail "the survivor (incarnation 3) failed (rc $rc3): $(tail -2 "$tmp/s3.out")"
[ $rc2 -eq 0 ] || fail "the restarted sender (incarnation 2) failed (rc $rc2): $(tail -2 "$tmp/s2.out")"
[ $rrc -eq 0 ] || fail "the receiver failed (rc $rrc): $(tail -3 "$tmp/recv.out")"
python3 - "$tmp" <<'PY' || fail "the receiver's count disagrees with the senders'"
import re, sys
d = sys.argv[1]
recv = {int(m[0]): dict(got=int(m[1]), dups=int(m[2]), corrupt=int(m[3]), first=float(m[4]), last=float(m[5]))
        for m in re.findall(r"inc=(\d+) got=(\d+) dups=(\d+) corrupt=(\d+) first=([\d.]+) last=([\d.]+)",
                            open(d + "/recv.out").read())}
sent = {}
for f in ("s3.out", "s2.out"):
    for m in re.findall(r"inc=(\d+) sent=(\d+)", open(d + "/" + f).read()):
        sent[int(m[0])] = int(m[1])
ok = True
for inc in (2, 3):
    if inc not in sent or inc not in recv or recv[inc]["got"] != sent[inc]:
        print("incarnation %d: sent %s, received %s" % (inc, sent.get(inc), recv.get(inc, {}).get("got")))
        ok = False
for inc, r in recv.items():
    if r["dups"] or r["corrupt"]:
        print("incarnation %d: %d duplicates, %d corrupt" % (inc, r["dups"], r["corrupt"]))
        ok = False
if 1 in recv and 2 in recv and recv[1]["last"] > recv[2]["first"]:
    print("a message of the killed incarnation delivered after its successor's first (stale)")
    ok = False
if 1 not in recv:
    print("the killed sender delivered nothing before it died: the run did not test a restart")
    ok = False
sys.exit(0 if ok else 1)
PY
echo "ok: survivor and restarted sender: every message once and intact; nothing stale, duplicated or corrupt"
"$fabric" down >/dev/null || fail "tools/fabric down failed"
echo "test_chaos: PASS"
