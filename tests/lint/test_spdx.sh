#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# test_spdx.sh SOURCE_DIR: every source file and script braid ships (C, headers, shell, Python,
# Lua, gnuplot, meson files, executables) names its license on an SPDX-License-Identifier line
# near its top, and that license is the project's (LICENSE, meson.build).
set -u
src=$1
git -C "$src" rev-parse --git-dir >/dev/null 2>&1 ||
	{ echo "SKIP: $src is not a git checkout (the files to check are the tracked ones)"; exit 77; }
grep -q "license : 'BSD-2-Clause'" "$src/meson.build" || { echo "FAIL: meson.build declares another license"; exit 1; }
grep -q '^BSD 2-Clause License' "$src/LICENSE" || { echo "FAIL: LICENSE is not BSD-2-Clause"; exit 1; }
missing=() n=0
while IFS= read -r -d '' f; do
	p=$src/$f
	[ -f "$p" ] && [ ! -L "$p" ] || continue
	case "$f" in
	docs/*|*/corpus/*) continue ;;
	debian/rules) ;;
	debian/*) continue ;;
	*.c|*.h|*.sh|*.py|*.lua|*.gp|*meson.build|meson_options.txt) ;;
	*) [ -x "$p" ] && head -c2 "$p" | grep -q '^#!' || continue ;;
	esac
	n=$((n + 1))
	head -n 3 "$p" | grep -q 'SPDX-License-Identifier: BSD-2-Clause' || missing+=("$f")
done < <(git -C "$src" ls-files -z --cached --others --exclude-standard)
[ "$n" -gt 100 ] || { echo "FAIL: only $n source files found in $src"; exit 1; }
if [ ${#missing[@]} -gt 0 ]; then
	echo "FAIL: ${#missing[@]} of $n files lack 'SPDX-License-Identifier: BSD-2-Clause' in their first 3 lines:"
	printf '  %s\n' "${missing[@]}"
	exit 1
fi
echo "ok: $n source files and scripts carry SPDX-License-Identifier: BSD-2-Clause"
