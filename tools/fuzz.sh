#!/bin/bash
# fuzz.sh: build the RD engine's libFuzzer target with clang (ASan + UBSan) and run it.
# Usage: tools/fuzz.sh [SECONDS]   (default 60). Needs clang and libclang-rt-14-dev (Debian).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
out=build/fuzz
mkdir -p "$out/corpus"
# pointer-overflow off: liburcu's cds_lfht_for_each_entry applies container_of to NULL at the end
clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-fno-sanitize=pointer-overflow \
	-D_GNU_SOURCE -Iinclude -Icore -o "$out/fuzz_rd_input" tests/fuzz/fuzz_rd_input.c \
	core/braid_*.c $(pkg-config --cflags --libs liburcu-memb liburcu-cds libfabric) -lpthread -lm
"$out/fuzz_rd_input" -max_total_time="$secs" -max_len=4096 "$out/corpus"
