#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# setup.sh: install what is missing (Debian bookworm, apt), then configure and build braid in ./build.
set -euo pipefail
CLI_NAME=setup.sh
usage() {
	cat <<'USAGE'
usage: tools/setup.sh
Installs the Debian packages braid's build, tests and tools need that are missing (apt,
with sudo unless root; with CI=true also clang for the fuzzers), then configures and
builds braid in ./build. Takes no arguments.
  -h, --help this text
USAGE
}
. "$(dirname "$0")/cli.sh"
cli_operands 0 0 "$@"
cd "$(dirname "$0")/.."

PKGS="gcc meson ninja-build pkg-config libfabric-dev libfabric-bin liburcu-dev
      libcriterion-dev zlib1g-dev libsodium-dev iproute2 tshark python3 nftables iptables ethtool
      libnetfilter-queue-dev gnuplot-nox openmpi-bin libopenmpi-dev libdpdk-dev
      go-md2man man-db debhelper dpkg-dev"
# CI also fuzzes (tools/test.sh --sanitize: tools/fuzz.sh --smoke): clang and its libFuzzer runtime
[ "${CI:-}" = true ] && PKGS="$PKGS clang libclang-rt-14-dev"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "setup: installing$missing"
	SUDO=""
	[ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

if [ ! -f build/build.ninja ]; then
	meson setup build --buildtype=debugoptimized >/dev/null
fi
meson compile -C build >/dev/null
echo "setup: built build/providers/libbraid-fi.so"
