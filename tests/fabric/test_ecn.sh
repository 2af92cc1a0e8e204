#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# test_ecn.sh: the fabric (tools/fabric) marks ECN Congestion Experienced as a router does, so
# braid's congestion control can meet CE on the real wire. Up with 4 paths; ecn=50 on every path:
# UDP datagrams sent ECT(0) (IP TOS 0b10, as braid's UDP wire sends data) from h1 to h2 over all
# paths arrive, about half of them CE (read with IP_RECVTOS, as braid reads them), ECT(1) ones
# too, Not-ECT ones (TOS 0) never, and the per-path ce counters add up to the CE received; ecn=0:
# none. ecnq (the path's rate-limited queue marks): below the rate nothing is marked; a burst on
# one path passes the limiter's burst plus K packets unmarked, then is marked; Not-ECT bursts and
# ecnq=off never. Every datagram that arrives at all also proves the IP checksum was rewritten
# with the ECN bits (the receiving kernel drops a bad one). Then, given the build directory,
# braid itself over ecn=30 on every path: a 64 KiB stream, every byte checked, whose receiver
# reads CE on data (braid's UDP wire sends ECT(0)) and whose sender hears the CE echoes in its
# ACKs (what its congestion control reacts to; tests/core/test_rd_scenarios.c shows the
# reaction keeping a marking queue short).
#
# usage: test_ecn.sh [BUILD_DIR]
# Exit: 0 pass, 1 fail, 77 skip (not root, no ip netns, nft, tc or python3, or this kernel's nft
# cannot rewrite the ECN bits).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fabric=$here/../../tools/fabric
# its own namespaces (bfe-*), so a fabric someone has up (bf-*, test_fabric's bft-*) is left alone
export BRAID_FABRIC_PREFIX=bfe

test_name=test_ecn
. "$(dirname "$0")/fabric_lib.sh"

# The traffic: ECT/Not-ECT datagrams out, their ECN field on arrival read as braid does.
cat >"$tmp/ecn.py" <<'EOF'
"""ecn.py recv PORT --expect N [--idle S] [--ready FILE]
       counts what arrived (waiting up to 30 s for the first datagram, then S after each), one
       line per kind: "SENT_ECN RECV_ECN COUNT" (ECN = TOS & 3: 0 Not-ECT, 1 ECT(1), 2 ECT(0),
       3 CE), then "first_ce SEQ" (the sequence number of the first to arrive CE, -1 if none)
       and "unmarked_before_ce N" (how many arrived unmarked before it)
   ecn.py send DST PORT --tos T --count N --sports A:B [--size BYTES] [--pps R]
       N datagrams with IP TOS T, round robin over source ports A..B, R a second if given"""
import argparse
import errno
import os
import select
import socket
import struct
import sys
import time

IP_RECVTOS = getattr(socket, "IP_RECVTOS", 13)


def cmd_recv(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE (root)
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.setsockopt(socket.IPPROTO_IP, IP_RECVTOS, 1)
    s.bind(("0.0.0.0", a.port))
    if a.ready:
        with open(a.ready + ".tmp", "w") as f:
            f.write("ready\n")
        os.rename(a.ready + ".tmp", a.ready)
    counts, n, first_ce, unmarked_before = {}, 0, -1, 0
    deadline = time.monotonic() + 30  # for the first datagram
    while n < a.expect:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([s], [], [], left)[0]:
            break
        deadline = time.monotonic() + a.idle
        data, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(4))
        tos = None
        for level, kind, d in anc:
            if level == socket.IPPROTO_IP and kind == socket.IP_TOS and d:
                tos = d[0]
        if tos is None:
            sys.exit("ecn.py: a datagram without its TOS (IP_RECVTOS) in the ancillary data")
        sent, seq = struct.unpack("!BI", data[:5])
        key = (sent & 3, tos & 3)
        counts[key] = counts.get(key, 0) + 1
        if tos & 3 == 3 and sent & 3 != 3 and first_ce < 0:
            first_ce = seq
        elif first_ce < 0:
            unmarked_before += 1
        n += 1
    for (sent, got), c in sorted(counts.items()):
        print(sent, got, c)
    print("first_ce", first_ce)
    print("unmarked_before_ce", unmarked_before)


def cmd_send(a):
    first, last = (int(x) for x in a.sports.split(":"))
    socks = []
    for port in range(first, last + 1):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, a.tos)
        s.bind(("0.0.0.0", port))
        socks.append(s)
    pad = b"e" * max(0, a.size - 5)
    due = time.monotonic()
    for seq in range(a.count):
        if a.pps:  # one every 1/R s; late (a busy machine) is not made up for with a burst
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
            due = max(due, now) + 1 / a.pps
        msg = struct.pack("!BI", a.tos, seq) + pad
        for _ in range(1000):
            try:
                socks[seq % len(socks)].sendto(msg, (a.dst, a.port))
                break
            except OSError as e:  # ENOBUFS, EAGAIN: the device queue is full for now
                if e.errno not in (errno.ENOBUFS, errno.EAGAIN):
                    raise
                time.sleep(0.001)
        else:
            sys.exit("ecn.py: cannot send")


p = argparse.ArgumentParser()
sub = p.add_subparsers(dest="cmd", required=True)
r = sub.add_parser("recv")
r.add_argument("port", type=int)
r.add_argument("--expect", type=int, required=True)
r.add_argument("--idle", type=float, default=1.0)
r.add_argument("--ready")
w = sub.add_parser("send")
w.add_argument("dst")
w.add_argument("port", type=int)
w.add_argument("--tos", type=int, required=True)
w.add_argument("--count", type=int, required=True)
w.add_argument("--sports", required=True)
w.add_argument("--size", type=int, default=200)
w.add_argument("--pps", type=float, default=0)
a = p.parse_args()
cmd_recv(a) if a.cmd == "recv" else cmd_send(a)
EOF

# marks BEFORE AFTER COLUMN: the growth of a status --csv column (by name), summed over the paths
marks() {
	awk -F, -v col="$3" 'FNR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i; next }
		NR == FNR { s -= $c; next } { s += $c } END { print s + 0 }' "$tmp/$1.csv" "$tmp/$2.csv"
}

# flow NAME EXPECT SEND_ARGS...: h2 receives on 9000 while h1 sends (ecn.py send ARGS), with
# counter snapshots NAME.0 / NAME.1 around it; got SENT RECV: how many arrived so (0 if none)
flow() {
	local name=$1 expect=$2 rpid
	shift 2
	rm -f "$tmp/ready"
	in_host h2 python3 "$tmp/ecn.py" recv 9000 --expect "$expect" --idle 1 \
		--ready "$tmp/ready" >"$tmp/$name.recv" &
	rpid=$!
	wait_file "$tmp/ready"
	csv "$name.0"
	in_host h1 python3 "$tmp/ecn.py" send 10.77.2.2 9000 "$@" || fail "the sender failed"
	wait $rpid || fail "the receiver failed"
	csv "$name.1"
	cur=$name
}
got() { awk -v s="$1" -v r="$2" '$1 == s && $2 == r { n = $3 } END { print n + 0 }' "$tmp/$cur.recv"; }
field() { awk -v k="$1" '$1 == k { print $2 }' "$tmp/$cur.recv"; }

# --- up; ecn=50 on every path ---
"$fabric" up --paths 4 >"$tmp/up.out" 2>&1
rc=$?
cat "$tmp/up.out"
[ $rc -eq 77 ] && exit 77
[ $rc -eq 0 ] || fail "tools/fabric up failed ($rc)"
"$fabric" set all ecn=50 >"$tmp/set.out" 2>&1
rc=$?
if [ $rc -eq 77 ]; then
	echo "SKIP: $(cat "$tmp/set.out")"
	exit 77
fi
[ $rc -eq 0 ] || fail "set all ecn=50 failed ($rc): $(cat "$tmp/set.out")"

# 2000 ECT(0) datagrams from 64 source ports, so over every path
flow ect0 2000 --tos 2 --count 2000 --sports 20000:20063
ce=$(got 2 3) plain=$(got 2 2) other=$(($(awk '{ n += $3 } END { print n + 0 }' "$tmp/ect0.recv") - ce - plain))
counted=$(marks ect0.0 ect0.1 r1_r2_ce_marks)
back=$(marks ect0.0 ect0.1 r2_r1_ce_marks)
echo "  ecn=50, 2000 ECT(0) sent: $ce arrived CE, $plain ECT(0), $other otherwise; r1->r2 ce counters +$counted"
[ $((ce + plain)) = 2000 ] && [ "$other" = 0 ] ||
	fail "of 2000 ECT(0) datagrams $ce arrived CE, $plain ECT(0), $other otherwise (lost or bad checksum?)"
awk -v c="$ce" 'BEGIN { exit !(c > 0.4 * 2000 && c < 0.6 * 2000) }' ||
	fail "ecn=50 marked $ce of 2000 ECT(0) datagrams, want about 1000"
[ "$counted" = "$ce" ] || fail "the r1->r2 ce counters grew by $counted, but $ce arrived CE"
[ "$back" = 0 ] || fail "the r2->r1 ce counters grew by $back with no traffic that way"
used=$(awk -F, 'FNR == 1 { for (i = 1; i <= NF; i++) if ($i == "r1_r2_ce_marks") c = i; next }
	NR == FNR { b[$1] = $c; next } $c - b[$1] > 0 { n++ } END { print n + 0 }' "$tmp/ect0.0.csv" "$tmp/ect0.1.csv")
[ "$used" = 4 ] || fail "CE marks on $used of 4 paths (64 flows should cross all)"
echo "ok: ecn=50 marked $ce of 2000 ECT(0) datagrams CE on all 4 paths, none lost; ce counters agree"

# ECT(1) is ECN-capable too; Not-ECT never marked
flow ect1 500 --tos 1 --count 500 --sports 20000:20063
ce1=$(got 1 3) plain1=$(got 1 1)
[ $((ce1 + plain1)) = 500 ] || fail "of 500 ECT(1) datagrams $ce1 arrived CE, $plain1 ECT(1)"
awk -v c="$ce1" 'BEGIN { exit !(c > 0.35 * 500 && c < 0.65 * 500) }' ||
	fail "ecn=50 marked $ce1 of 500 ECT(1) datagrams, want about 250"
flow notect 2000 --tos 0 --count 2000 --sports 20000:20063
n0=$(got 0 0) counted=$(marks notect.0 notect.1 r1_r2_ce_marks)
[ "$n0" = 2000 ] || fail "of 2000 Not-ECT datagrams $n0 arrived Not-ECT: $(tr '\n' ' ' <"$tmp/notect.recv")"
[ "$counted" = 0 ] || fail "the ce counters grew by $counted on Not-ECT traffic"
echo "ok: ECT(1): $ce1 of 500 marked; Not-ECT: 2000 of 2000 arrived unmarked, ce counters still"

# --- ecn=0: none ---
"$fabric" set all ecn=0 || fail "set all ecn=0 failed"
flow off 2000 --tos 2 --count 2000 --sports 20000:20063
[ "$(got 2 2)" = 2000 ] ||
	fail "ecn=0: of 2000 ECT(0) datagrams $(got 2 2) arrived unmarked: $(tr '\n' ' ' <"$tmp/off.recv")"
[ "$(marks off.0 off.1 r1_r2_ce_marks)" = 0 ] || fail "ecn=0: the ce counters still grow"
echo "ok: ecn=0: 2000 of 2000 ECT(0) datagrams arrived unmarked"

# --- ecnq: the rate-limited queue marks ---
# 10 Mbit/s is 825 full-size frames a second per path; the limiter's burst is 4 frames; K = 4
K=4
"$fabric" set all rate=10 ecnq=$K >"$tmp/set.out" 2>&1
rc=$?
if [ $rc -eq 77 ]; then
	echo "note: ecnq not checked: $(cat "$tmp/set.out")"
else
	[ $rc -eq 0 ] || fail "set all rate=10 ecnq=$K failed ($rc): $(cat "$tmp/set.out")"
	# below the rate (200 full-size datagrams a second, one flow): no mark
	flow slow 300 --tos 2 --count 300 --sports 21000:21000 --size 1472 --pps 200
	[ "$(got 2 2)" = 300 ] || fail "ecnq, below the rate: $(tr '\n' ' ' <"$tmp/slow.recv")"
	sleep 0.2
	# a burst of 200 on one path: the limiter's 4 + K pass unmarked, then marks (the limiter
	# itself drops what finds its 31 KB queue full)
	flow burst 200 --tos 2 --count 200 --sports 21000:21000 --size 1472
	bce=$(got 2 3) bplain=$(got 2 2) first=$(field first_ce) before=$(field unmarked_before_ce)
	q=$(marks burst.0 burst.1 r1_r2_ceq_marks)
	echo "  ecnq=$K, 200 back to back on one path: $bplain arrived ECT(0), $bce CE (first CE: #$first," \
		"after $before unmarked); ceq counters +$q"
	[ "$bce" -ge 5 ] || fail "ecnq=$K: a burst of 200 on a 10 Mbit/s path got $bce CE marks"
	[ "$q" -ge "$bce" ] || fail "ecnq=$K: $bce arrived CE but the ceq counters grew by $q"
	[ "$before" -ge $((4 + K - 1)) ] && [ "$before" -le $((4 + K + 3)) ] ||
		fail "ecnq=$K: $before packets before the first mark, want about 4 + $K"
	sleep 0.2
	flow nburst 200 --tos 0 --count 200 --sports 21000:21000 --size 1472
	[ "$(got 0 3)" = 0 ] && [ "$(got 0 0)" -gt 0 ] ||
		fail "ecnq: a Not-ECT burst: $(tr '\n' ' ' <"$tmp/nburst.recv")"
	"$fabric" set all ecnq=off || fail "set all ecnq=off failed"
	sleep 0.2
	flow qoff 200 --tos 2 --count 200 --sports 21000:21000 --size 1472
	[ "$(got 2 3)" = 0 ] && [ "$(got 2 2)" -gt 0 ] ||
		fail "ecnq=off: a burst: $(tr '\n' ' ' <"$tmp/qoff.recv")"
	echo "ok: ecnq=$K: below the rate no mark; a burst: $before unmarked, then $bce of $((bce + bplain))" \
		"arrived CE; Not-ECT and ecnq=off bursts: none"
fi

build=${1:-}
if [ -n "$build" ] && [ -x "$build/bench/braid_ab" ] && [ -f "$build/providers/libbraid-fi.so" ]; then
	"$fabric" set all ecn=30 ecnq=off >/dev/null || fail "set all ecn=30 failed"
	env="env FI_PROVIDER_PATH=$build/providers FI_LOG_LEVEL=info FI_LOG_PROV=braid"
	port=$((23000 + RANDOM % 2000))
	"$fabric" exec h2 -- timeout 40 $env "$build/bench/braid_ab" -p braid -a 10.77.2.2 -C $port \
		-k 1 >"$tmp/srv.out" 2>&1 &
	spid=$!
	sleep 0.3
	"$fabric" exec h1 -- timeout 40 $env "$build/bench/braid_ab" -p braid -a 10.77.1.2 \
		-c 10.77.2.2 -C $port -m bw -s 65536 -t 1 -w 32 -T 15 -v >"$tmp/cli.out" 2>&1 ||
		fail "braid over the marking fabric: $(grep -v libfabric "$tmp/cli.out" | tail -3)"
	wait $spid || fail "braid's receiver: $(grep -v libfabric "$tmp/srv.out" | tail -3)"
	grep -q 'prov=braid ' "$tmp/cli.out" || fail "the run was not braid's native RDM"
	ce=$(sed -n 's/.*ECN: \([0-9]*\) data packets arrived CE.*/\1/p' "$tmp/srv.out" | head -1)
	echoes=$(sed -n 's/.*arrived CE, \([0-9]*\) ACKs echoed CE.*/\1/p' "$tmp/cli.out" | head -1)
	echo "  braid, ecn=30: receiver read ${ce:-?} data packets CE, sender heard ${echoes:-?} CE echoes"
	[ "${ce:-0}" -gt 0 ] || fail "braid's receiver read no CE mark"
	[ "${echoes:-0}" -gt 0 ] || fail "braid's sender heard no CE echo"
	echo "ok: braid over ecn=30: every byte checked; CE read by the receiver, echoed to the sender"
else
	echo "  (braid over the marking fabric not run: no build directory given or braid_ab not built)"
fi

"$fabric" down >/dev/null || fail "tools/fabric down failed"
[ -z "$(ip netns list | awk '$1 ~ /^bfe-/')" ] || fail "namespaces left after down"
echo "test_ecn: PASS"
