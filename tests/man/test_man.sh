#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test_man.sh BUILD_DIR MANDIR: `meson install` into a scratch DESTDIR puts fi_braid(7) and
# braid-stat(1) where man finds them, `man fi_braid` and `man braid-stat` show braid's pages (their
# NAME and a setting), and braid-stat and rdma/fi_braid.h are installed beside them.
set -u
build=$1 mandir=$2
command -v man >/dev/null || { echo "SKIP: man not installed"; exit 77; }
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
meson install -C "$build" --destdir "$dest" --no-rebuild >"$dest.log" 2>&1 ||
	{ echo "FAIL: meson install: $(tail -3 "$dest.log")"; rm -f "$dest.log"; exit 1; }
rm -f "$dest.log"
page=$dest$mandir/man7/fi_braid.7
[ -s "$page" ] || { echo "FAIL: $page not installed"; exit 1; }
out=$(MANWIDTH=100 man -M "$dest$mandir" fi_braid 2>&1)
echo "$out" | grep -q "fi_braid - The braid Fabric Provider" ||
	{ echo "FAIL: man fi_braid does not show the page's NAME: $(echo "$out" | head -5)"; exit 1; }
echo "$out" | grep -q "FI_BRAID_WIRE" ||
	{ echo "FAIL: man fi_braid lacks the settings"; exit 1; }
lines=$(echo "$out" | wc -l)
out=$(MANWIDTH=100 man -M "$dest$mandir" braid-stat 2>&1)
echo "$out" | grep -q "braid-stat - show the counters of braid endpoints" ||
	{ echo "FAIL: man braid-stat does not show the page's NAME: $(echo "$out" | head -5)"; exit 1; }
echo "$out" | grep -q "FI_BRAID_STAT_DIR" ||
	{ echo "FAIL: man braid-stat lacks its environment"; exit 1; }
# what the pages name is installed too: the program and the extension header
find "$dest" -path '*/bin/braid-stat' -type f | grep -q . ||
	{ echo "FAIL: braid-stat not installed"; exit 1; }
find "$dest" -path '*/include/rdma/fi_braid.h' -type f | grep -q . ||
	{ echo "FAIL: rdma/fi_braid.h not installed"; exit 1; }
echo "ok: man -M $mandir fi_braid shows fi_braid(7) ($lines lines), man braid-stat braid-stat(1); braid-stat and rdma/fi_braid.h installed"
