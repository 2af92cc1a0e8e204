#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# fabtests.sh: run libfabric's own fabtests (runfabtests.sh's quick suite, built outside this
# repo) against braid and its layerings, and print a test x provider table in Markdown.
#
#   tools/fabtests.sh [--libfabric PREFIX] [--build DIR] FABTESTS_PREFIX [OUTDIR] [PROVIDER...]
#
# FABTESTS_PREFIX is where fabtests is installed (FABTESTS_PREFIX/bin/runfabtests.sh and the
# fi_* programs), built against the libfabric the run uses: the system's (Debian's 1.17.0)
# unless --libfabric names the prefix of another installed libfabric (1.17.0 to 2.6.0), whose
# lib/ then comes first in LD_LIBRARY_PATH. --build names the braid build directory whose
# providers/libbraid-fi.so is tested (default: this repo's build/); it must be built against
# the same libfabric (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig meson setup DIR), since braid
# registers with the API of the headers it was built against (fi_braid(7)).
#
# OUTDIR (default build/fabtests-out) gets one full log per provider (runfabtests -vvv: every
# test's commands and output), PROVIDER.status (the exit status of every test process),
# failures.md (the commands and error lines of every test that did not
# pass) and table.md (the table printed at the end). Providers default to braid (braid's own
# RDM endpoint), "braid;ofi_rxm", "braid;ofi_rxd" and tcp, each passed to runfabtests as its
# provider, which gives it to every test as -p (hints->fabric_attr->prov_name).
#
# runfabtests runs without host arguments, so server and client run here, on 127.0.0.1 (its
# default address; with hosts it would use ssh), with no exclude list (run from an empty
# directory, so it finds no test_configs/*.exclude either). Its cleanup kills every process
# named fi_* on the machine: each provider's run is in its own PID namespace (unshare), so it
# kills only its own. Every test process gets FABTESTS_TIMEOUT seconds (runfabtests -T,
# default 60): a hang becomes a failure. runfabtests reports only pass/fail/notrun; to tell a
# hang or a crash it puts a "timeout" first in PATH that runs the real one and records the
# exit status of each test process (124: timed out; 128+N: killed by signal N). The same
# "timeout" also ends a server runfabtests gave up on (after its client failed, runfabtests
# kills the shell that started the server, not the server); left running, such a server keeps
# its port, so the next test's server fails to bind (seen with tcp: fi_multi_mr -e msg's
# server made fi_multi_ep -e msg fail), and it writes into the next test's output file.
#
# Settings: FI_PROVIDER_PATH (default: this repo's build/providers), FI_BRAID_IFACE (default
# lo: the tests use 127.0.0.1), FABTESTS_TIMEOUT. Exit status: 0 when every test passed or
# did not run (notrun), 1 when one failed, hung or crashed or a run did not finish, 2 when
# something needed is missing.
set -uo pipefail

usage() {
	echo "usage: $0 [--libfabric PREFIX] [--build DIR] FABTESTS_PREFIX [OUTDIR] [PROVIDER...]"
	echo "  runs FABTESTS_PREFIX/bin/runfabtests.sh -t quick for each provider"
	echo "  (default: braid \"braid;ofi_rxm\" \"braid;ofi_rxd\" tcp); logs and table.md in OUTDIR"
	echo "  --libfabric PREFIX  the installed libfabric to run (default: the system's)"
	echo "  --build DIR         braid's build directory, built against that libfabric (default: build)"
}
die() {
	echo "fabtests.sh: $*" >&2
	exit 2
}

repo=$(cd "$(dirname "$0")/.." && pwd)
lfprefix=
bdir=$repo/build
while [ $# -gt 0 ]; do
	case "$1" in
	-h|--help) usage; exit 0 ;;
	--libfabric) [ $# -ge 2 ] || { usage >&2; exit 2; }; lfprefix=$2; shift 2 ;;
	--build) [ $# -ge 2 ] || { usage >&2; exit 2; }; bdir=$2; shift 2 ;;
	-*) echo "fabtests.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || { usage >&2; exit 2; }
prefix=$(realpath -e "$1" 2>/dev/null) || die "no such directory: $1"
outdir=${2:-$repo/build/fabtests-out}
shift
[ $# -ge 1 ] && shift
provs=("$@")
[ ${#provs[@]} -gt 0 ] || provs=(braid "braid;ofi_rxm" "braid;ofi_rxd" tcp)
tmo=${FABTESTS_TIMEOUT:-60}
[[ "$tmo" =~ ^[1-9][0-9]*$ ]] || die "FABTESTS_TIMEOUT must be a number of seconds, not '$tmo'"

runft=$prefix/bin/runfabtests.sh
[ -f "$runft" ] || die "$runft not found: FABTESTS_PREFIX must be where fabtests is installed (its bin/ holds runfabtests.sh and the fi_* tests)"
[ -x "$prefix/bin/fi_msg" ] || die "$prefix/bin/fi_msg not found: fabtests looks only half installed in $prefix"
for tool in unshare setpriv timeout python3 getopt ps; do
	command -v "$tool" >/dev/null || die "'$tool' not found (runfabtests.sh and this script need it)"
done
unshare --pid --fork --mount-proc true 2>/dev/null ||
	die "'unshare --pid --fork --mount-proc' fails: run as root (each run needs its own PID namespace, as runfabtests kills every fi_* process it sees)"
real_timeout=$(command -v timeout)

if [ -n "$lfprefix" ]; then
	lfprefix=$(realpath -e "$lfprefix" 2>/dev/null) || die "no such directory: $lfprefix"
	[ -e "$lfprefix/lib/libfabric.so.1" ] || die "$lfprefix/lib/libfabric.so.1 not found: --libfabric must be an installed libfabric's prefix"
	export LD_LIBRARY_PATH=$lfprefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
fi_info_bin=fi_info
[ -n "$lfprefix" ] && [ -x "$lfprefix/bin/fi_info" ] && fi_info_bin=$lfprefix/bin/fi_info
export FI_PROVIDER_PATH=${FI_PROVIDER_PATH:-$(realpath -m "$bdir")/providers}
export FI_BRAID_IFACE=${FI_BRAID_IFACE:-lo}
case " ${provs[*]}" in *" braid"*)
	(IFS=:; for d in $FI_PROVIDER_PATH; do [ -f "$d/libbraid-fi.so" ] && exit 0; done; exit 1) ||
		die "no libbraid-fi.so in FI_PROVIDER_PATH=$FI_PROVIDER_PATH: build braid first (meson setup build && ninja -C build)" ;;
esac

mkdir -p "$outdir" || die "cannot create $outdir"
outdir=$(realpath "$outdir")
scratch=$(mktemp -d /tmp/braid-fabtests.XXXXXX) || die "mktemp failed"
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/bin" "$scratch/run"
cat > "$scratch/bin/timeout" <<EOF
#!/bin/bash
# runfabtests.sh's "timeout", from fabtests.sh: runs the real one, records the exit status,
# and ends the test (SIGTERM) when runfabtests kills the shell that started it.
if [ -z "\${FABTESTS_SHIM:-}" ]; then
	FABTESTS_SHIM=1 exec setpriv --pdeathsig TERM "\$0" "\$@"
fi
unset FABTESTS_SHIM
flag=-
trap 'flag=killed; kill -TERM \$t 2>/dev/null' TERM
"$real_timeout" "\$@" &
t=\$!
wait \$t
rc=\$?
while kill -0 \$t 2>/dev/null; do
	wait \$t
	rc=\$?
done
printf '%s\t%s\t%s\n' "\$rc" "\$flag" "\${*:2}" >> "\$FABTESTS_STATUS"
exit \$rc
EOF
chmod +x "$scratch/bin/timeout"

echo "fabtests: $runft -t quick -T $tmo, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
lfname=${lfprefix:-system}
echo "libfabric: $("$fi_info_bin" --version 2>/dev/null | tr '\n' ' ')($lfname)"
echo "FI_PROVIDER_PATH=$FI_PROVIDER_PATH FI_BRAID_IFACE=$FI_BRAID_IFACE; logs in $outdir"
runs=$outdir/runs.tsv
: > "$runs"
for prov in "${provs[@]}"; do
	name=$(echo "$prov" | tr ';/ ' '___')
	log=$outdir/$name.log
	status=$outdir/$name.status
	: > "$status"
	echo
	echo "== $prov (log: $log)"
	start=$(date +%s)
	# The namespace's init is a safety net over the whole run (87 tests, none much longer
	# than twice the timeout); when it ends, the kernel ends whatever the run left behind.
	(cd "$scratch/run" && PATH="$scratch/bin:$PATH" FABTESTS_STATUS="$status" \
		unshare --pid --fork --mount-proc \
		"$real_timeout" --foreground --kill-after=10 $((100 * (2 * tmo + 5))) \
		bash "$runft" -vvv -t quick -T "$tmo" -p "$prefix/bin" "$prov") 2>&1 |
		tee "$log" | awk '
			/^- name: / { sub(/^- name: +/, ""); t = $0 }
			/^  result: / { sub(/^  result: +/, ""); printf "  %-66s %s\n", t, $0; fflush() }'
	rc=${PIPESTATUS[0]}
	secs=$(( $(date +%s) - start ))
	echo "   runfabtests exited $rc after ${secs}s"
	printf '%s\t%s\t%s\t%s\t%s\n' "$prov" "$name.log" "$name.status" "$secs" "$rc" >> "$runs"
done
echo

python3 - "$outdir" "$tmo" <<'PY'
"""Parse runfabtests' -vvv logs and the recorded exit statuses into table.md and failures.md."""
import re
import signal
import sys

outdir, tmo = sys.argv[1], int(sys.argv[2])
CRASH = {128 + s for s in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE,
                           signal.SIGILL, signal.SIGTRAP)}
ERR = re.compile(r"error|fail|abort|assert|timed? ?out|segmentation|killed|fi_\w+\(|ret[ =]|-\d+ \(|warn",
                 re.I)


def norm(cmd):
    """A command as the shell ran it: no quotes, single spaces."""
    return " ".join(cmd.replace('"', "").split())


def parse_log(path):
    """runfabtests -vvv: '- name:' starts a test, '  key: value' fields, '  x_stdout: |' blocks."""
    tests, cur, block = [], None, None
    totals = {}
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        m = re.match(r"# (Total [^0-9]+?)\s+(\d+)$", line)
        if m:
            totals[m.group(1)] = int(m.group(2))
            continue
        if line.startswith("- name:"):
            cur = {"exe": line.split(":", 1)[1].strip(), "out": {"server": [], "client": []}}
            tests.append(cur)
            block = None
        elif cur is None:
            continue
        elif block and line.startswith("    "):
            cur["out"][block].append(line[4:])
        elif re.match(r"  (server|client)_stdout: \|", line):
            block = line.split("_")[0].strip()
        elif re.match(r"  \w+: ", line):
            key, val = line.strip().split(":", 1)
            cur[key] = val.strip()
            block = None
        else:
            block = None  # a line runfabtests' shell printed between tests
    for t in tests:
        t["name"] = re.sub(r'\s+-p\s+"[^"]*"', "", t["exe"], count=1).strip()
    return tests, totals


def classify(t, status):
    """pass, notrun, excluded, fail, hang or crash, and the exit statuses behind it."""
    res = t.get("result", "")
    rcs, killed = {}, {}
    for role in ("server", "client"):
        cmd = t.get(role + "_cmd")
        if cmd and status.get(norm(cmd)):
            rcs[role], killed[role] = status[norm(cmd)].pop(0)
    t["killed"] = [r for r in killed if killed[r]]
    if res.startswith("Pass"):
        return "pass", rcs
    if res.startswith("Notrun"):
        return "notrun", rcs
    if res.startswith("Excluded"):
        return "excluded", rcs
    if any(rc in CRASH for rc in rcs.values()):
        return "crash", rcs
    # a process ran into the timeout: runfabtests was still waiting for it (the "timeout"
    # ends a server it gave up on at once, with SIGTERM)
    if 124 in rcs.values():
        return "hang", rcs
    return "fail", rcs


def rc_text(rc):
    if rc is None:
        return "not recorded"
    if rc == 124:
        return "124 (timed out after %ds)" % tmo
    if rc > 128:
        try:
            return "%d (%s)" % (rc, signal.Signals(rc - 128).name)
        except ValueError:
            pass
    return str(rc)


runs = [l.rstrip("\n").split("\t") for l in open(outdir + "/runs.tsv") if l.strip()]
provs, results, notes, failures = [], {}, [], []
order = []
for prov, log, stat, secs, rc in runs:
    provs.append(prov)
    status = {}
    for line in open(outdir + "/" + stat, errors="replace"):
        fields = line.rstrip("\n").split("\t", 2)
        if len(fields) == 3 and fields[0].isdigit():
            status.setdefault(norm(fields[2]), []).append((int(fields[0]), fields[1] == "killed"))
    tests, totals = parse_log(outdir + "/" + log)
    counts = {}
    for t in tests:
        kind, rcs = classify(t, status)
        if t["name"] not in order:
            order.append(t["name"])
        results[(t["name"], prov)] = kind
        counts[kind] = counts.get(kind, 0) + 1
        if kind in ("fail", "hang", "crash"):
            failures.append((prov, t, kind, rcs))
    ran = totals.get("Total Pass") is not None
    if not ran:
        notes.append("%s: runfabtests did not finish (exit %s after %ss); tests it did not reach are -"
                      % (prov, rc, secs))
    elif (totals.get("Total Pass"), totals.get("Total Fail")) != (
            counts.get("pass", 0), sum(counts.get(k, 0) for k in ("fail", "hang", "crash"))):
        notes.append("%s: runfabtests' own totals (%s) differ from the parsed ones" % (prov, totals))
    results[prov] = (counts, secs)

out = []
out.append("| test | " + " | ".join(provs) + " |")
out.append("| --- |" + " --- |" * len(provs))
for name in order:
    out.append("| `%s` | " % name + " | ".join(results.get((name, p), "-") for p in provs) + " |")
out.append("")
out.append("| total | " + " | ".join(provs) + " |")
out.append("| --- |" + " --- |" * len(provs))
for kind in ("pass", "fail", "hang", "crash", "notrun", "excluded"):
    if any(results[p][0].get(kind) for p in provs) or kind in ("pass", "fail", "notrun"):
        out.append("| %s | " % kind + " | ".join(str(results[p][0].get(kind, 0)) for p in provs) + " |")
out.append("| tests | " + " | ".join(str(sum(results[p][0].values())) for p in provs) + " |")
out.append("| seconds | " + " | ".join(str(results[p][1]) for p in provs) + " |")
out.append("")
out.append("hang: a test process ran into its %ds timeout; crash: a test process died of a signal "
           "(SIGSEGV, SIGABRT, ...); -: not run (runfabtests did not reach it)." % tmo)
out.extend("Note: " + n for n in notes)
table = "\n".join(out) + "\n"
open(outdir + "/table.md", "w").write(table)
print(table, end="")

f = ["# fabtests that did not pass\n"]
for prov, t, kind, rcs in failures:
    f.append("## %s: `%s`: %s (%ss)\n" % (prov, t["name"], kind, t.get("time", "?")))
    for role in ("server", "client"):
        if not t.get(role + "_cmd"):
            continue
        f.append("- %s: `%s`, exit %s%s" % (role, t[role + "_cmd"], rc_text(rcs.get(role)),
                 " (after the SIGTERM that ends a server runfabtests gave up on)"
                 if role in t["killed"] else ""))
    for role in ("server", "client"):
        lines = t["out"][role]
        # each error line with the line before it (fi_getinfo_test prints a test's name, then
        # its verdict on the next line)
        keep = sorted({j for i, l in enumerate(lines) if ERR.search(l) for j in (i - 1, i) if j >= 0})
        errs = [lines[i] for i in keep][:16] or lines[-5:]
        if errs:
            f.append("\n%s output (%s of %d lines):\n\n```" % (
                role, "error lines" if keep else "last lines", len(lines)))
            f.extend(errs)
            f.append("```")
    f.append("")
open(outdir + "/failures.md", "w").write("\n".join(f) + "\n")
print("\n%d tests did not pass; their commands and error lines: %s/failures.md"
      % (len(failures), outdir))
sys.exit(1 if failures or notes else 0)
PY
