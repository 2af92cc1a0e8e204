#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# fuzz.sh: build the libFuzzer targets of tests/fuzz (clang, ASan + UBSan) in build-fuzz/ and run them.
# Usage: tools/fuzz.sh [--smoke] [SECONDS] [TARGET...]
#   SECONDS per target (default 60; --smoke: 30, what CI runs); TARGETs default to all of them.
# Each runs from build-fuzz/corpus/TARGET/ (its seeds, tests/fuzz/corpus/TARGET/, copied in; what
# the fuzzer adds stays there for the next run). One line per target: its runs, coverage and
# features, and ok, or FAILED with the input that crashed (build-fuzz/artifacts/); the log is
# build-fuzz/fuzz-TARGET.log. Exit 77 without clang or its fuzzer runtime, 1 when a target failed.
set -euo pipefail
all=(fuzz_rd_input fuzz_rc fuzz_cm fuzz_dgram fuzz_auth fuzz_shm)
CLI_NAME=fuzz.sh
usage() {
	cat <<USAGE
usage: tools/fuzz.sh [--smoke] [SECONDS] [TARGET...]
Builds tests/fuzz's libFuzzer targets with clang (ASan + UBSan) in build-fuzz/ and runs
each for SECONDS (default 60; --smoke: 30, what CI runs); a line per target, ok or FAILED.
Exit 77 without clang or its fuzzer runtime, 1 when a target failed.
  TARGET     one of: ${all[*]} (default: all)
  -h, --help this text
USAGE
}
. "$(dirname "$0")/cli.sh"
secs=60
case ${1:-} in -h | --help) usage; exit 0 ;; esac
if [ "${1:-}" = --smoke ]; then
	secs=30
	shift
fi
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then
	secs=$1
	shift
fi
targets=("${all[@]}")
[ $# -eq 0 ] || targets=("$@")
for t in "${targets[@]}"; do
	case $t in
	-h | --help) usage; exit 0 ;;
	-*) cli_usage_error "unknown option '$t'" ;;
	esac
	[[ " ${all[*]} " == *" $t "* ]] || cli_usage_error "no target '$t'"
done
[ "$secs" -ge 1 ] || cli_usage_error "SECONDS must be 1 or more"
cd "$(dirname "$0")/.."

# the largest input worth trying: a few packets of each target's MTU, one datagram for the decoders
max_len() {
	case $1 in
	fuzz_rd_input) echo 8192 ;;
	fuzz_rc | fuzz_shm) echo 4096 ;;
	fuzz_cm) echo 2048 ;;
	fuzz_dgram | fuzz_auth) echo 1600 ;;
	esac
}

if ! command -v clang > /dev/null; then
	echo "fuzz.sh: skipped: no clang (libFuzzer comes with it; Debian: apt-get install clang)" >&2
	exit 77
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' > "$probe/p.c"
if ! clang -fsanitize=fuzzer,address,undefined -o "$probe/p" "$probe/p.c" 2> "$probe/err"; then
	echo "fuzz.sh: skipped: clang cannot link -fsanitize=fuzzer,address,undefined" \
		"(Debian: apt-get install libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev):" >&2
	head -3 "$probe/err" >&2
	exit 77
fi

out=build-fuzz
# the C compiler build-fuzz/ was configured with (its compile command), and its fuzz option
cc_of() {
	sed -n '/^rule c_COMPILER$/{n;s/^ *command = \(.*\) \$ARGS.*/\1/p;q}' "$out/build.ninja"
}
fuzz_opt() {
	meson introspect --buildoptions "$out" |
		python3 -c 'import json, sys; print([o["value"] for o in json.load(sys.stdin) if o["name"] == "fuzz"][0])'
}
if [ ! -f "$out/build.ninja" ]; then
	CC=clang meson setup "$out" -Dfuzz=enabled > "$probe/setup.log" 2>&1 ||
		{ tail -30 "$probe/setup.log" >&2; exit 1; }
elif [[ "$(cc_of)" != *clang* ]]; then
	echo "fuzz.sh: $out/ was configured with $(cc_of), not clang: remove it (rm -rf $out)" >&2
	exit 1
elif [ "$(fuzz_opt)" != enabled ]; then
	meson configure "$out" -Dfuzz=enabled > "$probe/setup.log" 2>&1 ||
		{ tail -30 "$probe/setup.log" >&2; exit 1; }
fi
meson compile -C "$out" "${targets[@]}" > "$out/fuzz-build.log" 2>&1 ||
	{ tail -30 "$out/fuzz-build.log" >&2; exit 1; }

failed=0
for t in "${targets[@]}"; do
	corpus=$out/corpus/$t
	log=$out/fuzz-$t.log
	mkdir -p "$corpus" "$out/artifacts"
	cp tests/fuzz/corpus/"$t"/* "$corpus"/
	start=$SECONDS
	rc=0
	"$out/tests/fuzz/$t" -max_total_time="$secs" -max_len="$(max_len "$t")" -timeout=20 \
		-print_final_stats=1 -artifact_prefix="$out/artifacts/$t-" "$corpus" > "$log" 2>&1 || rc=$?
	took=$((SECONDS - start))
	# libFuzzer's last status line: "#RUNS DONE cov: C ft: F corp: ..." at the end (another
	# kind before a crash)
	read -r runs cov ft < <(sed -nE 's/^#([0-9]+)[[:space:]]+[A-Z]+[[:space:]]+cov: ([0-9]+) ft: ([0-9]+).*/\1 \2 \3/p' \
		"$log" | tail -1) || true
	crash=$(sed -nE 's/.*Test unit written to (.*)$/\1/p' "$log" | tail -1)
	if [ "$rc" -eq 0 ] && [ -n "${runs:-}" ] && [ -z "$crash" ]; then
		echo "fuzz $t: $runs runs in $took s, cov $cov, ft $ft: ok"
	else
		echo "fuzz $t: ${runs:-?} runs in $took s, cov ${cov:-?}, ft ${ft:-?}: FAILED (exit $rc)" \
			"${crash:+crash file $crash,} log $log"
		grep -m3 -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|.*check failed)' "$log" | sed 's/^/    /' || true
		failed=1
	fi
	runs='' cov='' ft=''
done
exit $failed
