# SPDX-License-Identifier: BSD-2-Clause
"""bench/braid_ab as tools/ab drives it: the hosts of a run, both sides' command lines, and what
the client prints (its result line and its ticks)."""

import re

from .common import CLIENT_HOST, SERVER_HOST

RESULT_RE = re.compile(r"^result\s+(.*)$")
TICK_RE = re.compile(r"^tick\s+(.*)$")


def run_hosts(m, hosts):
    """(the server's host, [the clients' hosts]) of measurement m in a fabric of hosts hosts:
    h1 to h2, or for several clients (incast) every host but h2 sending to h2, in turn when
    there are more clients than hosts."""
    if m.clients <= 1:
        return SERVER_HOST, [CLIENT_HOST]
    # senders on the other side of the fabric from the receiver: odd hosts
    cl_hosts = ["h%d" % h for h in range(1, hosts + 1) if h != 2][:m.clients]
    if len(cl_hosts) < m.clients:
        cl_hosts = (cl_hosts * m.clients)[:m.clients]
    return "h2", cl_hosts


def server_argv(prefix, contender, srv_ip, port, clients):
    """The receiving side: prefix (env settings and braid_ab) and its options."""
    return prefix + ["-p", contender, "-a", srv_ip, "-C", str(port), "-k", str(clients)]


def client_argv(prefix, contender, ip, srv_ip, port, m, index, args, run_s, samples):
    """Sending client index (from 1) of measurement m at ip: streaming for run_s seconds, or
    m.iters round trips with their samples written to samples."""
    c = prefix + ["-p", contender, "-a", ip, "-c", srv_ip, "-C", str(port), "-m", m.mode,
                  "-I", str(index), "-T", str(args.stuck_timeout)]
    if m.mode == "lat":
        c += ["-s", str(m.size), "-n", str(m.iters), "-o", samples]
    else:
        c += ["-s", str(m.size), "-t", "%g" % run_s, "-w", str(m.window)]
        if m.interval_ms:
            c += ["-i", str(m.interval_ms)]
    if args.verify:
        c.append("-v")
    return c


def cmd_line(argv):
    """A command as results.csv's cmd column shows it: words with a ';' quoted."""
    return " ".join("'%s'" % x if ";" in x else x for x in argv)


def parse_kv(s):
    """"k=v k2=v2 word" -> {"k": "v", "k2": "v2"} (words without '=' left out)."""
    out = {}
    for tok in s.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            out[k] = v
    return out


def parse_output(text):
    """braid_ab's stdout -> (result dict or None, [(t_ms, bytes)])."""
    result, ticks = None, []
    for line in text.splitlines():
        m = RESULT_RE.match(line)
        if m:
            result = parse_kv(m.group(1))
            continue
        m = TICK_RE.match(line)
        if m:
            kv = parse_kv(m.group(1))
            try:
                ticks.append((int(kv["t_ms"]), int(kv["bytes"])))
            except (KeyError, ValueError):
                pass
    return result, ticks
