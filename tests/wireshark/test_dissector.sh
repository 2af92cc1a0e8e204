#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# test_dissector.sh: tools/wireshark/braid.lua, the Wireshark dissector of braid's packets
# (docs/wireshark.md), checked two ways with tshark:
#  1. crafted packets (synth.py): a valid one of every type and one of each malformation
#     braid's decoders drop (core/braid_hdr.c), each flagged with its drop reason as an
#     expert error, and 400 random mutations, none crashing the dissector (no Lua error);
#     a packet to RoCEv2's port 4791 is left to Wireshark's InfiniBand dissector;
#  2. real braid traffic on the emulated fabric (tools/fabric, 4 paths, 5% loss on one,
#     100 Mbit/s per path), captured by tshark on h2's eth0 while braid_ab runs from h1:
#     a 64 KiB stream (RD_DATA, RD_ACK, retransmissions), a 300 KB stream (rendezvous:
#     RD_CTS), 8-byte messages at full rate (coalesced in RD_BUNDLEs), RMA writes
#     (RD_RMA WRITE and RESP), an 8-byte ping-pong (ACKs riding in bundles), and a DGRAM
#     endpoint (examples/hello_dgram, on h1's loopback). check_capture.py then wants every
#     UDP packet decoded as braid, no malformed packet or expert error, the packet kinds of
#     each workload, and fields that match what was sent: each message's msg_len is the
#     size the benchmark sent and its packets cover all its bytes, as many messages as
#     it sent, PSNs and message ids without holes, a PSN sent once without RETX, an ACK's
#     cum_psn never past the highest data PSN seen + 1 and finally all of them, a CTS only
#     after its message's RDV packet.
#   usage: test_dissector.sh BUILD_DIR
# Exit: 0 pass, 1 fail, 77 skip (no tshark; part 2 also: not root, no namespaces).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
lua=$repo/tools/wireshark/braid.lua
fabric=$repo/tools/fabric
export BRAID_FABRIC_PREFIX=bfw2
test_name=test_dissector
build=${1:-}
[ -n "$build" ] || { echo "usage: test_dissector.sh BUILD_DIR"; exit 2; }
case $build in /*) ;; *) build=$PWD/$build ;; esac

for t in tshark python3; do
	if ! command -v $t >/dev/null; then
		echo "SKIP: $t not found (tools/setup.sh installs tshark)"
		exit 77
	fi
done
# tshark -X lua_script: needs a Wireshark built with Lua
if ! tshark -v 2>/dev/null | grep -q "with Lua"; then
	echo "SKIP: this tshark has no Lua (tshark -v does not say \"with Lua\")"
	exit 77
fi
ts() { tshark -X "lua_script:$lua" -o udp.try_heuristic_first:TRUE "$@"; }

# 1. crafted packets
syn=$(mktemp -d)
python3 "$here/synth.py" write "$syn/synth.pcap" "$syn/expect.tsv" &&
	ts -r "$syn/synth.pcap" -d udp.port==40009,braid -T fields -E occurrence=a \
		$(python3 "$here/synth.py" fields) >"$syn/fields.tsv" 2>"$syn/err" &&
	python3 "$here/synth.py" check "$syn/expect.tsv" "$syn/fields.tsv"
rc=$?
grep -v "^Running as user" "$syn/err" | sed 's/^/tshark: /'
rm -rf "$syn"
if [ $rc -ne 0 ]; then
	echo "$test_name: FAIL: the crafted packets did not decode as expected (above)"
	exit 1
fi

# 2. real traffic: the fabric (fabric_lib.sh skips without root or namespaces, makes $tmp
# and takes the fabric down on exit)
. "$repo/tests/fabric/fabric_lib.sh"
ab=$build/bench/braid_ab
[ -x "$ab" ] || { echo "SKIP: $ab not built (crafted packets: passed)"; exit 77; }
[ -e "$build/providers/libbraid-fi.so" ] || { echo "SKIP: $build/providers/libbraid-fi.so not built"; exit 77; }
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	"$fabric" down >/dev/null 2>&1
	rm -rf "$tmp"
}
env="env FI_PROVIDER_PATH=$build/providers"

"$fabric" up --paths 4 >"$tmp/up.out" 2>&1 || fail "fabric up: $(tail -3 "$tmp/up.out")"
"$fabric" set all rate=100 >/dev/null || fail "set all rate=100"
"$fabric" set 0 loss=5 >/dev/null || fail "set 0 loss=5"

# capture NAME HOST IFACE: tshark on HOST's IFACE into $tmp/NAME.pcap (bounded: 60 s), until
# stop_capture
capture() {
	"$fabric" exec "$2" -- timeout 90 tshark -q -B 32 -i "$3" -f udp -w "$tmp/$1.pcap" \
		-a duration:60 >/dev/null 2>"$tmp/$1.cap" &
	cap=$!
	pids+=("$cap")
	local _
	for _ in $(seq 100); do
		grep -q "Capturing on" "$tmp/$1.cap" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "tshark did not start capturing on $2's $3: $(cat "$tmp/$1.cap")"
}
stop_capture() {
	sleep 0.3
	kill -INT "$cap" 2>/dev/null
	wait "$cap" 2>/dev/null
	if grep -q "dropped" "$tmp/$1.cap" && ! grep -q " 0 packets dropped" "$tmp/$1.cap"; then
		echo "  (the capture lost packets: $(grep dropped "$tmp/$1.cap"))"
	fi
}

# ab NAME CLIENT_ARGS...: braid_ab's server on h2 and client on h1, captured on h2's eth0;
# the client's result line in $tmp/NAME.cli
ab() {
	local name=$1 port=$((28000 + RANDOM % 4000)) spid
	shift
	capture "$name" h2 eth0
	"$fabric" exec h2 -- timeout 60 $env "$ab" -p braid -a 10.77.2.2 -C $port -k 1 \
		>"$tmp/$name.srv" 2>&1 &
	spid=$!
	sleep 0.3
	"$fabric" exec h1 -- timeout 60 $env "$ab" -p braid -a 10.77.1.2 -c 10.77.2.2 -C $port \
		"$@" >"$tmp/$name.cli" 2>&1 ||
		fail "$name: braid_ab's client failed: $(tail -3 "$tmp/$name.cli")"
	wait $spid || fail "$name: braid_ab's server failed: $(tail -3 "$tmp/$name.srv")"
	grep -q 'prov=braid ' "$tmp/$name.cli" || fail "$name: not braid's native RDM: $(cat "$tmp/$name.cli")"
	stop_capture "$name"
}
sent() { sed -n 's/^result .* sent=\([0-9]*\).*/\1/p' "$tmp/$1.cli"; }

ab stream -m bw -s 65536 -t 1 -v
ab rdv -m bw -s 300000 -t 1 -v
ab rate -m rate -s 8 -t 0.2 -v
ab write -m write -s 4096 -t 0.5 -v
ab pingpong -m lat -s 8 -n 2000
dgram=no
if [ -x "$build/examples/hello_dgram" ]; then
	capture dgram h1 lo
	"$fabric" exec h1 -- timeout 30 $env "$build/examples/hello_dgram" >"$tmp/dgram.out" 2>&1 ||
		fail "examples/hello_dgram failed: $(cat "$tmp/dgram.out")"
	stop_capture dgram
	dgram=yes
else
	echo "  (examples/hello_dgram not built: no DGRAM capture)"
fi
"$fabric" status >"$tmp/status.out" 2>&1
"$fabric" down >/dev/null || fail "tools/fabric down failed"

# decode every capture with the plugin and check it
check() {	# check NAME HOST EXPECT...
	local name=$1
	shift
	ts -r "$tmp/$name.pcap" -T fields -E occurrence=a $(python3 "$here/check_capture.py" fields) \
		>"$tmp/$name.tsv" 2>"$tmp/$name.err" || fail "$name: tshark failed: $(cat "$tmp/$name.err")"
	grep -v "^Running as user" "$tmp/$name.err" | sed "s/^/  $name: tshark: /"
	python3 "$here/check_capture.py" check "$name" "$tmp/$name.tsv" "$@" || bad="$bad $name"
}
bad=
check stream 10.77.2.2 sizes_out=65536 msgs="$(sent stream)" need=RD_DATA,RD_ACK,RETX
check rdv 10.77.2.2 sizes_out=300000 msgs="$(sent rdv)" need=RD_DATA,RD_ACK,RD_CTS,RDV
check rate 10.77.2.2 sizes_out=8 msgs="$(sent rate)" need=RD_DATA,RD_ACK,RD_BUNDLE,BUNDLE_DATA
# the target's answer to a write and its ACK leave in one bundle: BUNDLE_ACK decoded here
check write 10.77.2.2 writes=4096 msgs="$(sent write)" need=RD_RMA,RD_ACK,RD_BUNDLE,BUNDLE_ACK
# the ping-pong: 2000 iterations and braid_ab's 100 warm-up ones, each way; the answer
# carries the held ACK (RD_BUNDLE with a BUNDLE_ACK) only when it comes within twice
# the ACK delay (20 us), which a sanitized build (AddressSanitizer, several times
# slower) on a loaded machine does not promise: there the bundles are checked in write
pp_need=RD_DATA,RD_ACK,RD_BUNDLE,BUNDLE_ACK
ldd "$build/providers/libbraid-fi.so" 2>/dev/null | grep -q libasan && pp_need=RD_DATA,RD_ACK
check pingpong 10.77.2.2 sizes_out=8 sizes_in=8 msgs=2100 need=$pp_need
[ $dgram = yes ] && check dgram 127.0.0.1 dgram=6 need=DGRAM
# the fabric's own count of what path 0 (5% loss) dropped, each way
awk '$1 == "p0" { n = 0; for (i = 1; i <= NF; i++) if ($i == "|") bar[++n] = i
	print "  fabric: path 0 dropped " $(bar[1] + 3) " packets h1->h2 and " $(bar[2] + 3) " h2->h1" }' \
	"$tmp/status.out"
[ -z "$bad" ] || { echo "$test_name: FAIL:$bad (above)"; exit 1; }
echo "$test_name: PASS"
