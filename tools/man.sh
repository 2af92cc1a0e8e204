#!/bin/sh
# man.sh IN.md OUT NAME SECTION [VERSION]: a man page from one of docs/'s Markdown pages (libfabric's
# style: a Jekyll front matter, then "# NAME" ...), with go-md2man (Debian: go-md2man).
set -eu
in=$1 out=$2 name=$3 section=$4 version=${5:-}
tmp=$out.md
{
	printf '%% %s %s "braid %s" "Libfabric Programmer'"'"'s Manual"\n\n' "$name" "$section" "$version"
	# drop the front matter: the lines from the first "---" to the next one
	awk 'NR == 1 && $0 == "---" { fm = 1; next } fm && $0 == "---" { fm = 0; next } !fm' "$in"
} >"$tmp"
go-md2man -in "$tmp" -out "$out"
rm -f "$tmp"
