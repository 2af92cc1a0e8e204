#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""synth.py: crafted braid packets, written as braid_hdr.c writes them, for the
dissector's own checks (tests/wireshark/test_dissector.sh).

  synth.py write FILE.pcap EXPECT.tsv   a capture of valid packets of every type and of
                                        each malformation braid drops, and what each
                                        frame must show (its type list, its expert
                                        reasons); then random mutations of them
  synth.py fields                       the tshark -e arguments FIELDS.tsv needs
  synth.py check EXPECT.tsv FIELDS.tsv  compare tshark's fields with EXPECT.tsv
"""
import random
import struct
import sys

MAGIC, VERSION = 0xBD, 1
DECODE_AS_PORT = 40009
# the dissector's expert infos (braid.NAME): the drop reasons of braid_hdr.c, then notes
EXPERTS = ["short", "bad_magic", "bad_version", "bad_type", "bad_hdr_len", "bad_flags", "bad_len",
           "stale_epoch", "bad_bundle", "bad_auth", "truncated", "retx", "probe", "zero_window", "ecn_ce",
           "keyed"]
TAG = bytes(range(0xa0, 0xa8))      # a job tag (protocol.md §2.4); the dissector shows it, unchecked
SRC_PORT = 40001


def base(ptype, flags, hdr_len, src_port=SRC_PORT, magic=MAGIC, version=VERSION):
    return struct.pack(">BBBBHH", magic, version, ptype, flags, src_port, hdr_len)


def dgram(payload=b"hello", flags=0, cq=0):
    return base(1, flags, 16) + struct.pack(">Q", cq) + payload


def rd_data(psn=7, msg_id=3, offset=0, msg_len=None, payload=b"x" * 100, flags=0,
            src_epoch=0x1234, dst_epoch=0x5678, ack_psn=0, tag=0, cq=0, src_port=SRC_PORT):
    if msg_len is None:
        msg_len = offset + len(payload)
    return base(2, flags, 56, src_port) + struct.pack(
        ">IIIIIIIIQQ", src_epoch, dst_epoch, psn, ack_psn, msg_id, offset, msg_len, 99, tag, cq) + payload


def rd_rma(op=1, aop=0, dt=0, status=0, ref=0, rkey=0x77, raddr=0x1000, payload=b"w" * 64,
           msg_len=None, flags=0, tag=0, src_port=SRC_PORT):
    if msg_len is None:
        msg_len = len(payload)
    return base(6, flags, 80, src_port) + struct.pack(
        ">IIIIIIIIQQ", 0x1234, 0x5678, 11, 0, 4, 0, msg_len, 5, tag, 0) + struct.pack(
        ">BBBBIQQ", op, aop, dt, status, ref, rkey, raddr) + payload


def rd_ack(cum=100, sack_psns=(), flags=0, rwnd=64, src_epoch=0x5678, dst_epoch=0x1234,
           src_port=SRC_PORT, extra=b""):
    bits = bytearray(32)
    for p in sack_psns:
        i = p - cum - 1
        bits[i // 8] |= 1 << (i % 8)
    return base(3, flags, 72, src_port) + struct.pack(
        ">IIIIIIII", src_epoch, dst_epoch, cum, cum - 1, 1234, rwnd, 0, 0) + bytes(bits) + extra


def rd_cts(msg_id=9, src_port=SRC_PORT, extra=b""):
    return base(4, 0, 24, src_port) + struct.pack(">IIII", 0x5678, 0x1234, msg_id, 0) + extra


def rd_chal(flags=0):
    return base(8, flags, 24) + struct.pack(">IIII", 0x5678, 0x1234, 0xc0ffee, 0)


def cm(kind=1, pdata=b"", status=0, qpn=0x12, psn=0x345, mtu=1024, rc_port=4791, pdata_len=None):
    if pdata_len is None:
        pdata_len = len(pdata)
    return base(5, 0, 40) + struct.pack(">BBHIQIIIHH", kind, 0, pdata_len, status, 0xabcdef0123456789,
                                        qpn, psn, mtu, rc_port, 0) + pdata


def bundle(records, src_port=SRC_PORT):
    return base(7, 0, 8, src_port) + b"".join(struct.pack(">H", len(r)) + r for r in records)


def keyed(pkt, hl, tag=TAG):
    """@pkt (its first header @hl bytes) as a keyed endpoint sends it: version 2, the tag after
    that header, hdr_len counting it"""
    return pkt[:1] + b"\x02" + pkt[2:6] + struct.pack(">H", hl + 8) + pkt[8:hl] + tag + pkt[hl:]


# (description, payload, expected braid.type list, expected expert reasons)
def cases():
    c = [
        ("dgram", dgram(), "1", ""),
        ("dgram cq_data", dgram(flags=1, cq=0xfeed), "1", ""),
        ("rd_data", rd_data(), "2", ""),
        ("rd_data retx tagged ack", rd_data(flags=0x0e, tag=0x42), "2", "retx"),
        ("rd_data middle of a message", rd_data(offset=1400, msg_len=65536), "2", ""),
        ("rd_data rdv probe", rd_data(flags=0x18, payload=b"", msg_len=300000), "2", "probe"),
        ("rd_data empty message", rd_data(payload=b"", msg_len=0), "2", ""),
        ("rd_rma write", rd_rma(), "6", ""),
        ("rd_rma resp", rd_rma(op=4, ref=4, rkey=0, raddr=0, payload=b""), "6", ""),
        ("rd_rma fetch", rd_rma(op=5, aop=1, dt=2, ref=1, payload=b"12345678"), "6", ""),
        ("rd_ack", rd_ack(), "3", ""),
        ("rd_ack sack", rd_ack(sack_psns=(102, 103, 104, 110, 356)), "3", ""),
        ("rd_ack zero window ce", rd_ack(rwnd=0, flags=1), "3", "ecn_ce,zero_window"),
        ("rd_cts", rd_cts(), "4", ""),
        ("rd_challenge", rd_chal(), "8", ""),
        ("rd_challenge forget response", rd_chal(flags=0x03), "8", ""),
        ("rd_challenge undefined flag", rd_chal(flags=0x04), "8", "bad_flags"),
        ("cm req", cm(pdata=b"private"), "5", ""),
        ("cm rej", cm(kind=4, status=111, qpn=0, psn=0, mtu=0, rc_port=0), "5", ""),
        ("bundle ack+data", bundle([rd_ack(), rd_data(), rd_data(psn=8)]), "7,3,2,2", ""),
        ("bundle one cts", bundle([rd_cts()]), "7,4", ""),
        # keyed (§2.4): the outer header, then the version-1 packet it carries
        ("keyed dgram", keyed(dgram(flags=1, cq=7), 16), "1,1", "keyed"),
        ("keyed rd_data", keyed(rd_data(), 56), "2,2", "keyed"),
        ("keyed rd_ack", keyed(rd_ack(), 72), "3,3", "keyed"),
        ("keyed cm", keyed(cm(pdata=b"pd"), 40), "5,5", "keyed"),
        ("keyed bundle", keyed(bundle([rd_ack(), rd_data()]), 8), "7,7,3,2", "keyed"),
        # malformations: what braid_hdr.c drops, with its reason
        ("short (by Decode As)", base(2, 0, 56)[:5], "", "short"),
        ("short header", rd_data()[:40], "2", "short"),
        ("bad hdr_len", base(2, 0, 60) + rd_data()[8:], "2", "bad_hdr_len"),
        ("bad flags", base(3, 0x80, 72) + rd_ack()[8:], "3", "bad_flags"),
        ("cts with undefined flag", base(4, 1, 24) + rd_cts()[8:], "4", "bad_flags"),
        ("rd_data past msg_len", rd_data(offset=10, msg_len=50), "2", "bad_len"),
        ("rd_data epoch 0", rd_data(src_epoch=0), "2", "stale_epoch"),
        ("rd_ack long", rd_ack(extra=b"zz"), "3", "bad_len"),
        ("rd_ack epoch 0", rd_ack(dst_epoch=0), "3", "stale_epoch"),
        ("rd_cts long", rd_cts(extra=b"z"), "4", "bad_len"),
        ("rd_rma bad op", rd_rma(op=9), "6", "bad_len"),
        ("rd_rma tagged", rd_rma(flags=0x02), "6", "bad_flags"),
        ("rd_rma read with length", rd_rma(op=2, ref=10, payload=b"", msg_len=10), "6", "bad_len"),
        ("rd_rma cq_data on read", rd_rma(op=2, ref=10, payload=b"", msg_len=0, flags=1), "6", "bad_flags"),
        ("cm bad kind", cm(kind=9), "5", "bad_type"),
        ("cm pdata_len", cm(pdata=b"abc", pdata_len=5), "5", "bad_len"),
        ("cm bad mtu", cm(mtu=1500), "5", "bad_len"),
        ("bundle empty", base(7, 0, 8), "7", "bad_bundle"),
        ("bundle trailing byte", bundle([rd_cts()]) + b"\x00", "7,4", "bad_bundle"),
        ("bundle record past end", bundle([rd_cts()])[:-3], "7", "bad_bundle"),
        ("bundle with dgram", bundle([dgram()]), "7,1", "bad_bundle"),
        ("bundle in bundle", bundle([bundle([rd_cts()])]), "7,7", "bad_bundle"),
        ("bundle other port", bundle([rd_cts(src_port=5)]), "7,4", "bad_bundle"),
        ("bundle tiny record", bundle([b"\xbd\x01\x02"]), "7", "bad_bundle,short"),
        ("bundle bad record", bundle([rd_ack(extra=b"!"), rd_data()]), "7,3,2", "bad_len"),
        ("keyed record in a bundle", bundle([keyed(rd_cts(), 24)]), "7,4", "bad_auth"),
        ("keyed hdr_len without the tag", rd_data()[:1] + b"\x02" + rd_data()[2:], "2", "bad_hdr_len"),
        ("keyed, tag cut off", keyed(rd_cts(), 24)[:28], "4", "short"),
        ("keyed bad record inside", keyed(bundle([rd_ack(extra=b"!")]), 8), "7,7,3", "keyed,bad_len"),
    ]
    return c


def udp_frame(payload, sport=50000, dport=40002, src=b"\x0a\x4d\x01\x02", dst=b"\x0a\x4d\x02\x02"):
    udp = struct.pack(">HHHH", sport, dport, 8 + len(payload), 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0, src, dst)
    s = sum(struct.unpack(">10H", ip))
    s = (s & 0xffff) + (s >> 16)
    s = (s & 0xffff) + (s >> 16)
    ip = ip[:10] + struct.pack(">H", ~s & 0xffff) + ip[12:]
    return b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00" + ip + udp


def write(pcap, expect):
    frames, rows = [], []
    for desc, payload, types, reasons in cases():
        # under 8 bytes the heuristic passes: that one goes to a port given to braid by Decode As
        frames.append(udp_frame(payload, dport=DECODE_AS_PORT if len(payload) < 8 else 40002))
        rows.append((len(frames), desc, types, reasons))
    # random mutations of the valid ones: anything may be flagged, nothing may crash
    rnd = random.Random(17)
    valid = [p for _, p, _, r in cases() if not r]
    for _ in range(400):
        p = bytearray(rnd.choice(valid))
        for _ in range(rnd.randint(1, 4)):
            what = rnd.random()
            if what < 0.6 and len(p) > 3:
                p[rnd.randrange(3, len(p))] = rnd.randrange(256)
            elif what < 0.8:
                del p[rnd.randrange(3, len(p) + 1):]
            else:
                p += bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 9)))
        if len(p) < 8:
            p += bytes(8 - len(p))      # so the heuristic still takes it
        frames.append(udp_frame(bytes(p)))
        rows.append((len(frames), "mutation", "*", "*"))
    # a RoCEv2 packet that happens to start with braid's magic: not braid's
    frames.append(udp_frame(rd_cts(), dport=4791))
    rows.append((len(frames), "roce port", "", ""))
    with open(pcap, "wb") as fh:
        fh.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            fh.write(struct.pack("<IIII", 1700000000 + i, 0, len(fr), len(fr)) + fr)
    with open(expect, "w") as fh:
        for r in rows:
            fh.write("\t".join(map(str, r)) + "\n")


def tshark_fields():
    """the -e arguments check() reads, in order"""
    return (["frame.number", "frame.protocols", "braid.type", "_ws.lua.error"] +
            ["braid." + e for e in EXPERTS])


def check(expect, fields):
    exp = {}
    for line in open(expect):
        n, desc, types, reasons = line.rstrip("\n").split("\t")
        exp[int(n)] = (desc, types, reasons)
    bad, seen = [], 0
    for line in open(fields):
        col = line.rstrip("\n").split("\t")
        col += [""] * (len(tshark_fields()) - len(col))
        n, proto, types, lua_err = int(col[0]), col[1], col[2], col[3]
        reasons = ",".join(e for e, v in zip(EXPERTS, col[4:]) if v)
        seen += 1
        desc, etypes, ereasons = exp[n]
        if lua_err:
            bad.append("frame %d (%s): Lua error: %s" % (n, desc, lua_err))
        elif etypes == "*":
            if "braid" not in proto.split(":"):
                bad.append("frame %d (%s): not dissected as braid (%s)" % (n, desc, proto))
        elif desc == "roce port":
            if "braid" in proto.split(":"):
                bad.append("frame %d: a packet to UDP 4791 was taken as braid (%s)" % (n, proto))
        elif types != etypes or sorted(reasons.split(",")) != sorted(ereasons.split(",")) or \
                "braid" not in proto.split(":"):
            bad.append("frame %d (%s): types %r experts %r, expected types %r experts %r (%s)" %
                       (n, desc, types, reasons, etypes, ereasons, proto))
    if seen != len(exp):
        bad.append("tshark gave %d frames of %d" % (seen, len(exp)))
    for b in bad:
        print("  " + b)
    ncase = sum(1 for v in exp.values() if v[1] != "*")
    print("synthetic: %d frames (%d crafted cases, %d random mutations): %s" %
          (seen, ncase, len(exp) - ncase, "all as expected" if not bad else "%d wrong" % len(bad)))
    return 0 if not bad else 1


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "fields":
        print(" ".join("-e " + f for f in tshark_fields()))
    else:
        sys.exit(check(sys.argv[2], sys.argv[3]))
