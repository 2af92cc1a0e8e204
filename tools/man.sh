#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# man.sh IN.md OUT NAME SECTION [VERSION]: a man page from one of docs/'s Markdown pages (libfabric's
# style: a Jekyll front matter, then "# NAME" ...), with go-md2man (Debian: go-md2man).
set -eu
CLI_NAME=man.sh
usage() {
	cat <<'USAGE'
usage: tools/man.sh IN.md OUT NAME SECTION [VERSION]
Writes the man page OUT from IN.md, one of docs/'s Markdown pages (a Jekyll front matter,
then "# NAME" ...), with go-md2man; NAME, SECTION and VERSION go into its title line.
  -h, --help this text
USAGE
}
. "$(dirname "$0")/cli.sh"
cli_operands 4 5 "$@"
in=$1 out=$2 name=$3 section=$4 version=${5:-}
tmp=$out.md
{
	printf '%% %s %s "braid %s" "Libfabric Programmer'"'"'s Manual"\n\n' "$name" "$section" "$version"
	# drop the front matter: the lines from the first "---" to the next one
	awk 'NR == 1 && $0 == "---" { fm = 1; next } fm && $0 == "---" { fm = 0; next } !fm' "$in"
} >"$tmp"
go-md2man -in "$tmp" -out "$out"
rm -f "$tmp"
