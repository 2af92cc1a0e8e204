#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# test_deb.sh SOURCE_DIR: the Debian packages build (dpkg-buildpackage -b -us -uc, debian/) from a
# copy of the source, install into a scratch root (dpkg --root), and work from there: fi_info finds
# the installed provider under Debian's libfabric provider directory, `man fi_braid` and
# `man braid-stat` show the installed pages, braid-stat runs, the header and the dissector are in
# place, and each package declares what it needs.
set -u
src=$(cd "$1" && pwd)
for t in dpkg-buildpackage dh dpkg-deb fi_info; do
	command -v "$t" >/dev/null ||
		{ echo "SKIP: $t not found (tools/setup.sh installs debhelper, dpkg-dev and libfabric-bin)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: installing into a scratch root with dpkg --root needs root"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# a copy of the source as a checkout holds it (tracked and new files, no build directories)
mkdir "$work/braid-0.1.0"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$src" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 cp -a --parents -t "$work/braid-0.1.0" 2>/dev/null)
else
	(cd "$src" && tar --exclude='./build*' -cf - .) | tar -xf - -C "$work/braid-0.1.0"
fi
[ -f "$work/braid-0.1.0/debian/control" ] || fail "no debian/ in $src"

(cd "$work/braid-0.1.0" &&
	DEB_BUILD_OPTIONS="nocheck parallel=2" dpkg-buildpackage -b -us -uc >"$work/build.log" 2>&1) ||
	{ tail -25 "$work/build.log"; fail "dpkg-buildpackage -b -us -uc failed (log above)"; }
for p in libfabric-braid libfabric-braid-dev braid-wireshark; do
	ls "$work"/${p}_*.deb >/dev/null 2>&1 || fail "$p's .deb was not built"
done
deb=$(ls "$work"/libfabric-braid_*.deb)
dpkg-deb -f "$deb" Depends | grep -q 'libfabric1' ||
	fail "libfabric-braid does not depend on libfabric1: $(dpkg-deb -f "$deb" Depends)"
dpkg-deb -f "$deb" Depends | grep -q 'libsodium' ||
	fail "libfabric-braid's shlibs dependencies are missing: $(dpkg-deb -f "$deb" Depends)"

# install into a scratch root with its own dpkg database (the system's libfabric is not in it)
root=$work/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
dpkg --root="$root" --force-depends --force-script-chrootless -i "$work"/*.deb >"$work/install.log" 2>&1 ||
	{ cat "$work/install.log"; fail "dpkg --root -i failed"; }
dpkg --root="$root" -s libfabric-braid 2>/dev/null | grep -q '^Status: install ok installed' ||
	fail "libfabric-braid is not installed in the scratch root"

# the provider sits where Debian's libfabric looks for providers: $libdir/libfabric
libdir=$(pkg-config --variable=libdir libfabric 2>/dev/null || echo /usr/lib/"$(dpkg-architecture -qDEB_HOST_MULTIARCH)")
so=$root$libdir/libfabric/libbraid-fi.so
[ -f "$so" ] || fail "the provider is not at $libdir/libfabric/libbraid-fi.so: $(cd "$root" && find . -name 'libbraid-fi.so')"
out=$(FI_PROVIDER_PATH=$root$libdir/libfabric FI_LOG_LEVEL=info FI_LOG_PROV=core timeout 30 fi_info -p braid 2>&1)
echo "$out" | grep -q '^ *provider: braid' ||
	fail "fi_info -p braid does not list braid from the installed package: $(echo "$out" | tail -5)"
echo "$out" | grep -q "$root$libdir/libfabric" ||
	fail "fi_info did not load the installed provider (its log names no path under the scratch root)"

# the manual pages, braid-stat, the header, the dissector
mandir=$root/usr/share/man
MANWIDTH=100 man -M "$mandir" fi_braid 2>&1 | grep -q "fi_braid - The braid Fabric Provider" ||
	fail "man fi_braid does not show the installed page"
MANWIDTH=100 man -M "$mandir" braid-stat 2>&1 | grep -q "braid-stat - show the counters" ||
	fail "man braid-stat does not show the installed page"
"$root/usr/bin/braid-stat" --help >/dev/null 2>&1 || fail "the installed braid-stat --help failed"
[ -f "$root/usr/include/rdma/fi_braid.h" ] || fail "rdma/fi_braid.h is not installed"
lua=$(find "$root$libdir/wireshark/plugins" -name braid.lua 2>/dev/null | head -1)
[ -n "$lua" ] || fail "braid.lua is not in $libdir/wireshark/plugins"
if command -v tshark >/dev/null; then
	tshark -G protocols -X lua_script:"$lua" 2>/dev/null | grep -qi '^braid' ||
		fail "tshark does not load the installed dissector"
fi
echo "ok: $(cd "$work" && ls ./*.deb | tr '\n' ' ')built; installed in a scratch root: fi_info -p braid loads $libdir/libfabric/libbraid-fi.so, man fi_braid and man braid-stat show the pages"
