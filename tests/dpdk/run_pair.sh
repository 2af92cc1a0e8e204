#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# run_pair.sh DPDK_PAIR SCENARIO: run one dpdk_pair scenario in a fresh
# directory of its own (the memif socket), removed afterwards; exit 77 = skip.
set -u
dir=$(mktemp -d /tmp/braid-dpdk.XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT
"$1" "$2" "$dir"
