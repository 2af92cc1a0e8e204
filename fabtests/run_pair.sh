#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# run_pair.sh: run one fabtests-style program as a server and a client on a free local port.
#
# usage: run_pair.sh [--timeout SEC] [--addr ADDR] PROGRAM [--] ARGS...
#
# Starts "PROGRAM ARGS -B PORT" (the server), waits until it has bound
# PORT (ss(8): a UDP or TCP socket on that port), then starts
# "PROGRAM ARGS -P PORT ADDR" (the client; ADDR defaults to 127.0.0.1).
# PORT is picked at random among the ports ss shows unused in 20000-40000
# (less the kernel's ephemeral range; RUN_PAIR_PORTS=LO-HI overrides) and
# reserved among concurrent runners (a directory per port under
# $TMPDIR/run_pair_ports), so many pairs can run at once; a server that finds its port taken after
# all is restarted on another. Both sides share one deadline (default
# 50 s); on timeout, or once the client has failed, the server is
# stopped. Prints both outputs prefixed "server: " and "client: ".
# Exits 0 only if both sides exit 0, else the client's non-zero status,
# else the server's (124 = timeout; 2 = usage error of this script).
set -u

timeout_sec=50
addr=127.0.0.1
usage() {
	echo "usage: $0 [--timeout SEC] [--addr ADDR] PROGRAM [--] ARGS..." >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case "$1" in
	--timeout) [ $# -ge 2 ] || usage; timeout_sec=$2; shift 2 ;;
	--timeout=*) timeout_sec=${1#*=}; shift ;;
	--addr) [ $# -ge 2 ] || usage; addr=$2; shift 2 ;;
	--addr=*) addr=${1#*=}; shift ;;
	-h|--help) sed -n '2,/^set -u/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	--) shift; break ;;
	-*) echo "run_pair.sh: unknown option $1" >&2; usage ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || usage
case "$timeout_sec" in
''|*[!0-9]*) echo "run_pair.sh: --timeout needs whole seconds" >&2; exit 2 ;;
esac
prog=$1
shift
[ "${1-}" = "--" ] && shift
if [ ! -x "$prog" ]; then
	echo "run_pair.sh: $prog is not an executable file" >&2
	exit 2
fi

have_ss=0
command -v ss >/dev/null 2>&1 && have_ss=1

tmp=$(mktemp -d "${TMPDIR:-/tmp}/run_pair.XXXXXX") || exit 2
server_pid=
client_pid=
# Ports this runner reserved: a directory per port, made atomically with
# mkdir, so two runners started at the same moment never pick the same one
# (ss alone cannot tell them apart before either server has bound it).
port_dir="${TMPDIR:-/tmp}/run_pair_ports"
mkdir -p "$port_dir" 2>/dev/null
reserved=
cleanup() {
	for pid in $client_pid $server_pid; do
		kill -TERM "$pid" 2>/dev/null
	done
	for p in $reserved; do
		rmdir "$port_dir/$p" 2>/dev/null
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

now_ms() { date +%s%3N; }
deadline=$(( $(now_ms) + timeout_sec * 1000 ))
remaining() {   # whole seconds left, at least 1
	local r=$(( (deadline - $(now_ms) + 999) / 1000 ))
	[ "$r" -ge 1 ] && echo "$r" || echo 1
}

# Is anything (TCP or UDP, listening or not) bound to this port?
port_used() {
	[ "$have_ss" = 1 ] || return 1
	[ -n "$(ss -Hantu "sport = :$1" 2>/dev/null)" ]
}
# Ports 20000-40000, minus the kernel's ephemeral range (where clients'
# source ports come from) when that leaves enough.
port_lo=20000
port_hi=40000
if read -r eph_lo _ 2>/dev/null </proc/sys/net/ipv4/ip_local_port_range; then
	if [ "$eph_lo" -gt $((port_lo + 1000)) ] && [ "$eph_lo" -le "$port_hi" ]; then
		port_hi=$((eph_lo - 1))
	fi
fi
if [ -n "${RUN_PAIR_PORTS-}" ]; then
	case "$RUN_PAIR_PORTS" in
	[0-9]*-[0-9]*) port_lo=${RUN_PAIR_PORTS%-*}; port_hi=${RUN_PAIR_PORTS#*-} ;;
	*) echo "run_pair.sh: RUN_PAIR_PORTS must be LO-HI" >&2; exit 2 ;;
	esac
	if [ "$port_lo" -lt 1 ] || [ "$port_hi" -gt 65535 ] || [ "$port_lo" -gt "$port_hi" ]; then
		echo "run_pair.sh: RUN_PAIR_PORTS $RUN_PAIR_PORTS is not a port range" >&2
		exit 2
	fi
fi
pick_port() {
	local p i
	for i in $(seq 1 50); do
		p=$(( port_lo + (RANDOM * 32768 + RANDOM) % (port_hi - port_lo + 1) ))
		port_used "$p" && continue
		# a reservation left by a runner that was killed: stale after 10 minutes
		find "$port_dir/$p" -maxdepth 0 -mmin +10 -exec rmdir {} \; 2>/dev/null
		mkdir "$port_dir/$p" 2>/dev/null && { echo "$p"; return 0; }
	done
	echo "run_pair.sh: no free port found in $port_lo-$port_hi" >&2
	return 1
}

# Start the server; wait until its port is bound. Retries with another
# port if the one picked was taken in the meantime.
ready=0
for attempt in 1 2 3; do
	port=$(pick_port) || exit 1
	reserved="$reserved $port"
	timeout -k 2 "$(remaining)" "$prog" "$@" -B "$port" </dev/null >"$tmp/server.out" 2>&1 &
	server_pid=$!
	while [ "$(now_ms)" -lt "$deadline" ]; do
		if ! kill -0 "$server_pid" 2>/dev/null; then
			break
		fi
		if [ "$have_ss" = 1 ]; then
			port_used "$port" && { ready=1; break; }
		elif grep -q 'server: provider' "$tmp/server.out"; then
			ready=1
			break
		fi
		sleep 0.02
	done
	[ "$ready" = 1 ] && break
	kill -0 "$server_pid" 2>/dev/null && break   # deadline passed
	# The server exited before binding: retry only if the port was taken.
	wait "$server_pid"
	server_rc=$?
	server_pid=
	grep -qi 'address already in use' "$tmp/server.out" || break
	[ "$attempt" -lt 3 ] && echo "run_pair.sh: port $port was taken, retrying" >&2
done

client_rc=
if [ "$ready" = 1 ]; then
	timeout -k 2 "$(remaining)" "$prog" "$@" -P "$port" "$addr" </dev/null \
		>"$tmp/client.out" 2>&1 &
	client_pid=$!
	wait "$client_pid"
	client_rc=$?
	client_pid=
	if [ "$client_rc" -ne 0 ]; then
		# Give the server a moment to report its own view, then stop it.
		for i in $(seq 1 25); do
			kill -0 "$server_pid" 2>/dev/null || break
			sleep 0.02
		done
		kill -TERM "$server_pid" 2>/dev/null
	fi
fi
if [ -n "$server_pid" ]; then
	wait "$server_pid"
	server_rc=$?
	server_pid=
fi

echo "run_pair.sh: $prog $* (port ${port:-none})"
[ -s "$tmp/server.out" ] && sed 's/^/server: /' "$tmp/server.out"
[ -f "$tmp/client.out" ] && [ -s "$tmp/client.out" ] && sed 's/^/client: /' "$tmp/client.out"
describe() {   # side rc
	case "$2" in
	0) echo "$1: exit 0" ;;
	124) echo "$1: TIMEOUT after ${timeout_sec} s (killed)" ;;
	137) echo "$1: killed (SIGKILL after the timeout)" ;;
	143) echo "$1: stopped (SIGTERM) after the other side failed" ;;
	*) echo "$1: exit $2" ;;
	esac
}
describe server "$server_rc"
if [ -z "$client_rc" ]; then
	echo "client: not started (the server did not become ready)"
	echo "run_pair.sh: FAIL"
	[ "$server_rc" -ne 0 ] && exit "$server_rc"
	exit 1
fi
describe client "$client_rc"
if [ "$server_rc" -eq 0 ] && [ "$client_rc" -eq 0 ]; then
	echo "run_pair.sh: PASS"
	exit 0
fi
if [ "$client_rc" -eq 77 ] && { [ "$server_rc" -eq 77 ] || [ "$server_rc" -eq 0 ]; }; then
	echo "run_pair.sh: SKIP (the provider lacks what the test needs)"
	exit 77
fi
echo "run_pair.sh: FAIL"
[ "$client_rc" -ne 0 ] && exit "$client_rc"
exit "$server_rc"
