# SPDX-License-Identifier: BSD-2-Clause
# fabric_lib.sh: what every fabric test starts with: skip (exit 77) where the fabric
# cannot be made, a scratch directory, the fabric taken down on exit, fail(), in_host() and csv().
# Source it after setting BRAID_FABRIC_PREFIX, $fabric (tools/fabric) and $test_name.

if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (network namespaces, nftables, tc)"
	exit 77
fi
for t in ip nft tc python3 timeout; do
	if ! command -v $t >/dev/null; then
		echo "SKIP: $t not found (Debian: iproute2, nftables, python3)"
		exit 77
	fi
done
if ! ip netns list >/dev/null 2>&1 || ! unshare -n true 2>/dev/null; then
	echo "SKIP: cannot create network namespaces here"
	exit 77
fi

tmp=$(mktemp -d)
cleanup() {
	"$fabric" down >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
	echo "$test_name: FAIL: $*"
	"$fabric" status 2>&1 | sed 's/^/  /'
	exit 1
}

# in_host hX CMD...: CMD in host hX of the fabric (bounded: 60 s)
in_host() { local h=$1; shift; timeout 60 "$fabric" exec "$h" -- "$@"; }

# csv NAME: the fabric's counters now into $tmp/NAME.csv
csv() { "$fabric" status --csv >"$tmp/$1.csv" || fail "status --csv failed"; }

# wait_file FILE: until a helper process says it is ready (bounded: 10 s)
wait_file() {
	local _
	for _ in $(seq 100); do
		[ -f "$1" ] && return 0
		sleep 0.1
	done
	fail "$(basename "$1"): the helper did not come up in 10 s"
}
