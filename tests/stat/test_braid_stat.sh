#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test_braid_stat.sh BUILD_DIR: braid-stat shows a live run. A braid_ab stream over native braid
# on loopback (4 paths) publishes into a private FI_BRAID_STAT_DIR; braid-stat --json must show
# both endpoints, each the other as its peer, the sender's paths adding up to its peer and its
# peer to its endpoint; the text view (-w, twice) its rates, peer and path table; the files go
# when the processes close; a process killed with its endpoints open is left out as stale, and
# the next process to publish removes its file. Nothing goes beyond 127.0.0.1.
set -u
build=$1
ab=$build/bench/braid_ab stat=$build/tools/braid-stat
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
dir=$(mktemp -d /tmp/braid-stat-test.XXXXXX)
pids=""
cleanup() {
	for p in $pids; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
export FI_PROVIDER_PATH=$build/providers FI_BRAID_STAT_DIR=$dir FI_BRAID_STAT_MS=50 FI_BRAID_PATHS=4
port=$((20000 + $$ % 20000))

out=$("$stat" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "braid-stat with nothing running: exit $rc, want 1"
echo "$out" | grep -q "no braid process is running" || fail "no clear message: $out"

"$ab" -p braid -a 127.0.0.1 -C $port -k 1 >"$dir/server.log" 2>&1 &
srv=$!; pids="$pids $srv"
"$ab" -p braid -a 127.0.0.1 -c 127.0.0.1 -C $port -m bw -s 65536 -t 4 >"$dir/client.log" 2>&1 &
cli=$!; pids="$pids $cli"

# the stream is going once both have published something with data
i=0
while :; do
	"$stat" --json >"$dir/j.json" 2>/dev/null &&
		python3 - "$dir/j.json" <<'PY' && break
import json, sys
eps = json.load(open(sys.argv[1]))["endpoints"]
sys.exit(0 if len(eps) == 2 and all(e["counters"]["rd.msgs_received"] + e["counters"]["rd.msgs_sent"] > 100 for e in eps) else 1)
PY
	i=$((i + 1))
	[ $i -lt 60 ] || fail "braid-stat never showed the two endpoints streaming: $(cat "$dir/j.json" 2>&1 | head -c 600)"
	sleep 0.05
done

python3 - "$dir/j.json" "$cli" "$srv" <<'PY' || exit 1
import json, sys
doc = json.load(open(sys.argv[1]))
cli, srv = int(sys.argv[2]), int(sys.argv[3])
eps = {e["pid"]: e for e in doc["endpoints"]}
def fail(msg):
    print("FAIL:", msg); sys.exit(1)
if set(eps) != {cli, srv}:
    fail("endpoints of pids %s, want the client %d and the server %d" % (sorted(eps), cli, srv))
c, s = eps[cli], eps[srv]
for e in (c, s):
    if e["type"] != "RDM" or e["comm"] != "braid_ab":
        fail("endpoint %s: type %s comm %s" % (e["addr"], e["type"], e["comm"]))
    if len(e["peers"]) != 1 or e["peers_total"] != 1:
        fail("endpoint %s: %d peer records, %d peers" % (e["addr"], len(e["peers"]), e["peers_total"]))
if c["peers"][0]["addr"] != s["addr"] or s["peers"][0]["addr"] != c["addr"]:
    fail("peers: client %s sees %s, server %s sees %s" % (c["addr"], c["peers"][0]["addr"],
         s["addr"], s["peers"][0]["addr"]))
p = c["peers"][0]
if len(p["paths"]) != 4:
    fail("the sender's peer has %d path rows, want 4 (FI_BRAID_PATHS)" % len(p["paths"]))
for name in ("rd.tx_data", "rd.tx_bytes", "rd.retx_pkts", "rd.acked_pkts", "rd.lost_pkts"):
    total = sum(row[name] for row in p["paths"])
    if total != p["counters"][name] or p["counters"][name] != c["counters"][name]:
        fail("%s: paths %d, peer %d, endpoint %d" % (name, total, p["counters"][name], c["counters"][name]))
busy = [i for i, row in enumerate(p["paths"]) if row["rd.tx_data"] > 0]
if len(busy) < 2:
    fail("data went on paths %s only: not sprayed" % busy)
if any(row["rd.path.srtt_ns"] == 0 for row in p["paths"] if row["rd.tx_data"] > 100):
    fail("a busy path without an RTT")
if s["counters"]["rd.msgs_received"] < 1 or s["peers"][0]["counters"]["rd.rx_bytes"] != s["counters"]["rd.rx_bytes"]:
    fail("the receiver's counters")
print("ok: json: client %s -> server %s, %d data packets over paths %s, %d received" %
      (c["addr"], s["addr"], c["counters"]["rd.tx_data"],
       [row["rd.tx_data"] for row in p["paths"]], s["counters"]["rd.rx_data"]))
PY

"$stat" -w 0.3 -n 2 >"$dir/text.txt" 2>&1 || fail "braid-stat -w: exit $? $(head -5 "$dir/text.txt")"
grep -q "^braid_ab\[$cli\] endpoint 0 RDM" "$dir/text.txt" || fail "no endpoint line: $(head -5 "$dir/text.txt")"
grep -q "rate: sent" "$dir/text.txt" || fail "no rates on the second sample"
grep -q "  peer 127.0.0.1:.* proven" "$dir/text.txt" || fail "no peer line"
grep -q "path  entropy  state" "$dir/text.txt" || fail "no path table"
[ "$(grep -c '^braid-stat .* every 0.3s' "$dir/text.txt")" -eq 2 ] || fail "not two samples"
echo "ok: text: $(grep -c 'path  entropy' "$dir/text.txt") path tables, $(grep -c 'rate: sent' "$dir/text.txt") rate lines"

# both close normally: their files go
wait $cli || fail "the client failed: $(tail -3 "$dir/client.log")"
wait $srv || fail "the server failed: $(tail -3 "$dir/server.log")"
pids=""
[ -z "$(ls "$dir")" ] || [ "$(ls "$dir" | grep -c '\.stat$')" -eq 0 ] ||
	fail "files left after both closed: $(ls "$dir")"
out=$("$stat" 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "no braid process" || fail "after the run: exit $rc: $out"

# a process killed with its endpoint open: its file stays, braid-stat leaves it out as stale
"$ab" -p braid -a 127.0.0.1 -C $((port + 1)) -k 1 >/dev/null 2>&1 &
srv=$!
"$ab" -p braid -a 127.0.0.1 -c 127.0.0.1 -C $((port + 1)) -m bw -s 65536 -t 20 >/dev/null 2>&1 &
cli=$!; pids="$srv $cli"
i=0
until [ -e "$dir/braid-$srv.stat" ] && [ -e "$dir/braid-$cli.stat" ]; do
	i=$((i + 1)); [ $i -lt 100 ] || fail "the second pair never published"; sleep 0.05
done
kill -9 $cli; wait $cli 2>/dev/null
[ -e "$dir/braid-$cli.stat" ] || fail "the killed process's file vanished by itself"
# the server sees its client's control connection close and closes normally: its file goes
wait $srv 2>/dev/null; pids=""
[ ! -e "$dir/braid-$srv.stat" ] || fail "the server's file stayed after it closed"
out=$("$stat" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "a dead process's file shown as live: exit $rc: $out"
echo "$out" | grep -q "1 file of processes that are gone" || fail "the stale file not reported: $out"
# the next process to publish removes it
"$ab" -p braid -a 127.0.0.1 -C $((port + 2)) -k 1 >/dev/null 2>&1 &
srv=$!
"$ab" -p braid -a 127.0.0.1 -c 127.0.0.1 -C $((port + 2)) -m bw -s 4096 -t 1 >/dev/null 2>&1 &
cli=$!; pids="$srv $cli"
wait $cli || fail "the third client failed"
wait $srv || fail "the third server failed"
pids=""
[ "$(ls "$dir" | grep -c '\.stat$')" -eq 0 ] || fail "stale files not swept: $(ls "$dir")"
echo "ok: a killed process's file is left out as stale and swept by the next process"
