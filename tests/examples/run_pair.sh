#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# run_pair.sh: runs a two-process example on loopback, as its tests do:
#   run_pair.sh PROGRAM [PATTERN...]
# starts "PROGRAM -s -p 0" (the server picks a free port and prints
# "port N"), then, once that line is out, "PROGRAM -p N 127.0.0.1". Passes
# when both exit 0 and each PATTERN (grep -E) matches a line of both outputs.
set -u
prog=$1
shift
dir=$(mktemp -d)
server_pid=
cleanup() {
	[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

mkfifo "$dir/server.pipe"
timeout 30 "$prog" -s -p 0 >"$dir/server.pipe" 2>"$dir/server.err" &
server_pid=$!
exec 3<"$dir/server.pipe"
# wait (at most 10 s) for the server's first line, its port
if ! read -r -t 10 word port <&3 || [ "$word" != port ]; then
	echo "FAIL: the server announced no port"; cat "$dir/server.err"; exit 1
fi
cat <&3 >"$dir/server.out" &
cat_pid=$!

timeout 30 "$prog" -p "$port" 127.0.0.1 >"$dir/client.out" 2>&1
client_rc=$?
wait "$server_pid"
server_rc=$?
server_pid=
wait "$cat_pid"
cat "$dir/server.err" >>"$dir/server.out"

sed 's/^/server: /' "$dir/server.out"
sed 's/^/client: /' "$dir/client.out"
fail=0
[ "$server_rc" = 0 ] || { echo "FAIL: the server exited $server_rc"; fail=1; }
[ "$client_rc" = 0 ] || { echo "FAIL: the client exited $client_rc"; fail=1; }
for pattern in "$@"; do
	for side in server client; do
		grep -Eq -- "$pattern" "$dir/$side.out" ||
			{ echo "FAIL: $side printed no line matching '$pattern'"; fail=1; }
	done
done
exit $fail
