#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""traffic.py: the traffic of test_fabric.sh, run inside the fabric's hosts: ICMP ping,
UDP datagrams from many source ports and their receiver, a UDP echo server and
round-trip times from one pinned source port. Every wait is bounded.

  traffic.py ping DST [--count N]                     ICMP echo; exit 1 unless all answered
  traffic.py recv PORT --expect N [--idle S] [--ready FILE]
                                                      count datagrams; print the count
  traffic.py send DST PORT --sports FIRST:LAST --count N
                                                      N datagrams from each source port
  traffic.py echo PORT --lifetime S [--ready FILE]    echo datagrams back for S seconds
  traffic.py rtt DST PORT --sport S --count N         median round trip in ms, one probe at a time
"""
import argparse
import os
import select
import signal
import socket
import statistics
import struct
import sys
import time


def ready(path):
    if path:
        with open(path + ".tmp", "w") as f:
            f.write("ready\n")
        os.rename(path + ".tmp", path)


def icmp_checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def cmd_ping(a):
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    ident = os.getpid() & 0xFFFF
    answered = 0
    for seq in range(1, a.count + 1):
        body = struct.pack("!d", time.monotonic()) + b"braid-fabric"
        hdr = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
        pkt = struct.pack("!BBHHH", 8, 0, icmp_checksum(hdr + body), ident, seq) + body
        sent = time.monotonic()
        sock.sendto(pkt, (a.dst, 0))
        deadline = sent + 1.0
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([sock], [], [], left)[0]:
                print("ping %s seq %d: no answer in 1 s" % (a.dst, seq))
                break
            data, src = sock.recvfrom(2048)
            ihl = (data[0] & 0x0F) * 4
            typ, _, _, rid, rseq = struct.unpack("!BBHHH", data[ihl:ihl + 8])
            if src[0] == a.dst and typ == 0 and rid == ident and rseq == seq:
                print("ping %s seq %d: %.3f ms" % (a.dst, seq, (time.monotonic() - sent) * 1e3))
                answered += 1
                break
    print("ping %s: %d/%d answered" % (a.dst, answered, a.count))
    return 0 if answered == a.count else 1


def udp_socket(port=0):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE (root)
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("0.0.0.0", port))
    return sock


def cmd_recv(a):
    sock = udp_socket(a.port)
    ready(a.ready)
    got = 0
    deadline = time.monotonic() + a.wait  # for the first datagram
    while got < a.expect:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([sock], [], [], left)[0]:
            break
        sock.recv(65536)
        got += 1
        deadline = time.monotonic() + a.idle
    print(got)
    return 0


def cmd_send(a):
    first, last = (int(x) for x in a.sports.split(":"))
    socks = [udp_socket(p) for p in range(first, last + 1)]
    payload = b"x" * a.size
    for i in range(a.count):
        for s in socks:
            s.sendto(payload, (a.dst, a.port))
        time.sleep(0.001)  # pace: one datagram per port per millisecond
    print(len(socks) * a.count)
    return 0


def cmd_echo(a):
    sock = udp_socket(a.port)
    ready(a.ready)
    end = time.monotonic() + a.lifetime
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return 0
        if select.select([sock], [], [], left)[0]:
            data, src = sock.recvfrom(65536)
            sock.sendto(data, src)


def cmd_rtt(a):
    sock = udp_socket(a.sport)
    sock.connect((a.dst, a.port))
    rtts = []
    for seq in range(a.count):
        tag = struct.pack("!I", seq)
        sent = time.monotonic()
        sock.send(tag)
        deadline = sent + 1.0
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([sock], [], [], left)[0]:
                break
            if sock.recv(64) == tag:
                rtts.append((time.monotonic() - sent) * 1e3)
                break
    if not rtts:
        print("nan 0")
        return 1
    print("%.3f %d" % (statistics.median(rtts), len(rtts)))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("ping")
    s.add_argument("dst")
    s.add_argument("--count", type=int, default=3)
    s = sub.add_parser("recv")
    s.add_argument("port", type=int)
    s.add_argument("--expect", type=int, required=True)
    s.add_argument("--wait", type=float, default=10.0, help="longest wait for the first datagram")
    s.add_argument("--idle", type=float, default=2.0, help="stop after this long without one")
    s.add_argument("--ready")
    s = sub.add_parser("send")
    s.add_argument("dst")
    s.add_argument("port", type=int)
    s.add_argument("--sports", required=True)
    s.add_argument("--count", type=int, default=10)
    s.add_argument("--size", type=int, default=100)
    s = sub.add_parser("echo")
    s.add_argument("port", type=int)
    s.add_argument("--lifetime", type=float, required=True)
    s.add_argument("--ready")
    s = sub.add_parser("rtt")
    s.add_argument("dst")
    s.add_argument("port", type=int)
    s.add_argument("--sport", type=int, required=True)
    s.add_argument("--count", type=int, default=10)
    a = p.parse_args()
    # tools/fabric down ends what runs in its namespaces with SIGTERM: a normal end here
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    return {"ping": cmd_ping, "recv": cmd_recv, "send": cmd_send, "echo": cmd_echo,
            "rtt": cmd_rtt}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
