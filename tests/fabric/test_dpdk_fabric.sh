#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# test_dpdk_fabric.sh: braid over its DPDK wire on both hosts of the emulated fabric
# (tools/fabric): each host's braid drives a net_af_packet port on its eth0 (the
# kernel keeps the interface: braid takes its address and default gateway, answers
# ARP for it and resolves the router by ARP), no hugepages. Through the routers'
# ECMP paths at 1% loss on every path, both ways:
#  - a 1 MiB stream for 3 s, every byte checked, no error;
#  - 8-byte ping-pongs, every one answered;
# and on each host braid's own log says its domain was the DPDK port
# (net_af_packet0), not a kernel interface.
#   usage: test_dpdk_fabric.sh BUILD_DIR
# Exit: 0 pass, 1 fail, 77 skip (not root, no namespaces, no DPDK wire, or the EAL
# cannot start an af_packet port here: said why).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fabric=$here/../../tools/fabric
export BRAID_FABRIC_PREFIX=bfd
build=${1:-}
case $build in /*) ;; *) build=$PWD/$build ;; esac
test_name=test_dpdk_fabric
. "$(dirname "$0")/fabric_lib.sh"
ab=$build/bench/braid_ab
[ -x "$ab" ] || { echo "SKIP: $ab not built"; exit 77; }

"$fabric" up --paths 4 >"$tmp/up.out" 2>&1 || fail "fabric up: $(tail -3 "$tmp/up.out")"

eal="--no-huge --no-shconf -m 512 --no-pci --no-telemetry --log-level=3"
# on host hX: braid_ab with the DPDK wire on an af_packet port over eth0
on() {
	local h=$1
	shift
	"$fabric" exec "$h" -- timeout 60 env FI_PROVIDER_PATH="$build/providers" \
		FI_BRAID_WIRE=dpdk FI_LOG_LEVEL=info \
		FI_BRAID_DPDK_ARGS="$eal --file-prefix=$BRAID_FABRIC_PREFIX-$h --vdev=net_af_packet0,iface=eth0" \
		"$ab" "$@"
}

# fi_info is not sanitized: under ASan (build-asan) the provider needs its runtime preloaded
asan=$(ldd "$build/providers/libbraid-fi.so" 2>/dev/null | awk '/libasan\.so/ { print $3 }')
probe=$("$fabric" exec h1 -- env ${asan:+LD_PRELOAD=$asan ASAN_OPTIONS=detect_leaks=0} \
	FI_PROVIDER_PATH="$build/providers" FI_BRAID_WIRE=dpdk \
	FI_LOG_LEVEL=warn FI_BRAID_DPDK_ARGS="$eal --file-prefix=$BRAID_FABRIC_PREFIX-probe --vdev=net_af_packet0,iface=eth0" \
	timeout 30 fi_info -p braid -t FI_EP_RDM 2>&1)
if ! grep -q 'domain: net_af_packet0' <<<"$probe"; then
	if grep -q 'no such wire' <<<"$probe"; then
		echo "SKIP: braid was built without the DPDK wire (libdpdk-dev missing)"
	else
		echo "SKIP: the DPDK wire cannot start an af_packet port here:"
		grep -i 'dpdk\|EAL' <<<"$probe" | head -5 | sed 's/^/  /'
	fi
	exit 77
fi

"$fabric" set all loss=1 >/dev/null || fail "set all loss=1"

# run NAME WANT CLIENT_ARGS...: braid_ab's receiver on h2, the client on h1; its result
# line must say WANT
run() {
	local name=$1 want=$2 port=$((24000 + RANDOM % 4000))

	shift 2
	on h2 -p braid -a 10.77.2.2 -C $port -k 1 >"$tmp/$name.srv" 2>&1 &
	local spid=$!
	sleep 1
	on h1 -p braid -a 10.77.1.2 -c 10.77.2.2 -C $port -T 20 "$@" >"$tmp/$name.cli" 2>&1
	local rc=$?
	wait $spid
	local src=$?
	[ $rc -eq 0 ] || fail "$name: the client failed (rc $rc): $(grep -v '^EAL\|^libfabric' "$tmp/$name.cli" | tail -3)"
	[ $src -eq 0 ] || fail "$name: the server failed (rc $src): $(grep -v '^EAL\|^libfabric' "$tmp/$name.srv" | tail -3)"
	for f in "$tmp/$name.cli" "$tmp/$name.srv"; do
		grep -q 'domain net_af_packet0 opened' "$f" ||
			fail "$name: $(basename "$f"): braid's domain was not the DPDK port"
		grep -q 'dpdk wire: port 0 net_af_packet0 (net_af_packet), 10.77.' "$f" ||
			fail "$name: $(basename "$f"): the DPDK wire did not take eth0's address"
	done
	grep -q "^result .*prov=braid .*$want" "$tmp/$name.cli" ||
		fail "$name: not braid's native RDM, or not '$want': $(grep '^result' "$tmp/$name.cli")"
	echo "ok: $name: $(grep '^result' "$tmp/$name.cli" | cut -c1-160)"
}

run stream 'errors=0 dups=0' -m bw -s 1048576 -t 3 -v
run pingpong 'iters=2000 ' -m lat -s 8 -n 2000 -v

"$fabric" down >/dev/null || fail "tools/fabric down failed"
echo "test_dpdk_fabric: PASS"
