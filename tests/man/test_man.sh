#!/bin/sh
# test_man.sh BUILD_DIR MANDIR: `meson install` into a scratch DESTDIR puts fi_braid(7)
# where man finds it, and `man fi_braid` shows braid's page (its NAME and a setting).
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
echo "ok: man -M $mandir fi_braid shows fi_braid(7) ($(echo "$out" | wc -l) lines)"
