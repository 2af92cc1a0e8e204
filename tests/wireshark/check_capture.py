#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""check_capture.py: checks one capture of braid traffic, as tshark decoded it with
tools/wireshark/braid.lua, against what the workload sent (tests/wireshark/test_dissector.sh).

  check_capture.py fields                  the tshark -e arguments, in the order read
  check_capture.py check NAME FIELDS.tsv HOST EXPECT...
        HOST: the capturing host's address; EXPECT: key=value, any of
          sizes_out=N[,N]  msg_len of every RD_DATA message HOST receives (from the peer)
          sizes_in=N[,N]   msg_len of every RD_DATA message HOST sends
          writes=N         RD_RMA WRITEs of msg_len N to HOST, each answered by a RESP
          msgs=N           messages (msg_ids) HOST receives: exactly N
          dgram=N[,N]      the payload lengths of the DGRAM packets
          need=T[,T]       packet kinds that must appear: DGRAM RD_DATA RD_ACK RD_CTS RD_RMA
                           RD_BUNDLE, RETX, RDV, BUNDLE_DATA (a bundle of >= 2 data records),
                           BUNDLE_ACK (a bundle of an ACK and data)
Prints what it found; exit 0 when everything matches, else 1 with what did not.

Checks (every capture): every UDP packet is braid (the heuristic took it), no Lua error,
no malformed packet, no expert error; then per flow (data sender, its epoch, receiver,
receiver's home port), for RD_DATA and RD_RMA records alone or in bundles:
 - a PSN is sent once without RETX (first transmissions are unique);
 - the PSNs seen form one range without holes, and so do the message ids (reliable
   delivery: every packet of the flow crossed the capturing host's interface);
 - every packet of a message agrees on msg_len, offset + payload <= msg_len, and the
   packets of each message cover all its bytes [0, msg_len);
 - an RD_ACK names a flow whose data was seen; its cum_psn (the next PSN expected:
   every PSN before it arrived) is never beyond the highest data PSN seen so far + 1;
   the ACKs HOST sends never go back, and the last one acknowledges everything;
 - an RD_CTS names a message whose first packet (flag RDV) came before it.
"""
import sys

HOST_FIELDS = ["frame.number", "ip.src", "ip.dst", "udp.srcport", "udp.dstport", "frame.protocols",
               "_ws.lua.error", "_ws.malformed", "_ws.expert.severity"]
BRAID_FIELDS = ["braid.type", "braid.flags", "braid.src_port", "braid.rd.src_epoch",
                "braid.rd.dst_epoch", "braid.rd.psn", "braid.rd.msg_id", "braid.rd.offset",
                "braid.rd.msg_len", "braid.payload_len", "braid.rma.op", "braid.ack.cum_psn",
                "braid.cts.msg_id", "braid.bundle.records"]
FIELDS = HOST_FIELDS + BRAID_FIELDS
NAMES = {1: "DGRAM", 2: "RD_DATA", 3: "RD_ACK", 4: "RD_CTS", 5: "CM", 6: "RD_RMA", 7: "RD_BUNDLE",
         8: "RD_CHALLENGE"}
SEV_ERROR = 8388608
F_RETX, F_RDV = 0x08, 0x10
M32 = 1 << 32


def num(s):
    return int(s, 0)


class Flow:
    def __init__(self, key):
        self.key = key
        self.base = None        # PSN and msg_id arithmetic relative to the first seen (mod 2^32)
        self.mbase = None
        self.first_tx = set()
        self.psns = set()
        self.max_psn = None
        self.msgs = {}          # rel msg_id -> [msg_len, {(offset, len)}, rdv_seen, op]
        self.acks = 0
        self.last_cum = None
        self.ctss = 0

    def rel(self, psn):
        if self.base is None:
            self.base = (psn - (1 << 20)) % M32   # room for reordering below the first one seen
        return (psn - self.base) % M32

    def mrel(self, mid):
        if self.mbase is None:
            self.mbase = (mid - (1 << 20)) % M32
        return (mid - self.mbase) % M32


def records(cols):
    """the braid records of one frame, in order: dicts of their fields"""
    it = {f: iter(cols[f].split(",")) if cols[f] else iter(()) for f in BRAID_FIELDS}
    out = []
    for t in [num(x) for x in cols["braid.type"].split(",") if x]:
        r = {"type": t, "flags": num(next(it["braid.flags"])), "src_port": num(next(it["braid.src_port"]))}
        if t in (2, 3, 4, 6, 8):
            r["src_epoch"] = num(next(it["braid.rd.src_epoch"]))
            r["dst_epoch"] = num(next(it["braid.rd.dst_epoch"]))
        if t in (2, 6):
            for k in ("psn", "msg_id", "offset", "msg_len"):
                r[k] = num(next(it["braid.rd." + k]))
        if t in (1, 2, 6):
            r["payload_len"] = num(next(it["braid.payload_len"]))
        if t == 6:
            r["op"] = num(next(it["braid.rma.op"]))
        if t == 3:
            r["cum_psn"] = num(next(it["braid.ack.cum_psn"]))
        if t == 4:
            r["cts_msg_id"] = num(next(it["braid.cts.msg_id"]))
        if t == 7:
            r["records"] = num(next(it["braid.bundle.records"]))
        out.append(r)
    for f, i in it.items():
        if f != "braid.type" and next(i, None) is not None:
            raise ValueError("field %s has more values than the records need" % f)
    return out


def check(name, path, host, expect):
    bad = []

    def fail(msg):
        if len(bad) < 20:
            bad.append(msg)
        elif len(bad) == 20:
            bad.append("(more)")

    flows = {}
    seen = {}
    dgram = set()
    frames = nonbraid = 0
    nrec = 0
    for line in open(path):
        v = line.rstrip("\n").split("\t")
        v += [""] * (len(FIELDS) - len(v))
        cols = dict(zip(FIELDS, v))
        if not cols["udp.srcport"]:
            continue
        frames += 1
        n = cols["frame.number"]
        if "braid" not in cols["frame.protocols"].split(":"):
            nonbraid += 1
            fail("frame %s (UDP %s -> %s): not decoded as braid (%s)" %
                 (n, cols["udp.srcport"], cols["udp.dstport"], cols["frame.protocols"]))
            continue
        if cols["_ws.lua.error"]:
            fail("frame %s: Lua error: %s" % (n, cols["_ws.lua.error"]))
        if cols["_ws.malformed"]:
            fail("frame %s: malformed" % n)
        if any(num(s) >= SEV_ERROR for s in cols["_ws.expert.severity"].split(",") if s):
            fail("frame %s: an expert error" % n)
        try:
            recs = records(cols)
        except (StopIteration, ValueError) as e:
            fail("frame %s: the fields do not line up with the records (%s)" % (n, e))
            continue
        src, dst, dport = cols["ip.src"], cols["ip.dst"], num(cols["udp.dstport"])
        top = recs[0]
        if top["type"] == 7:
            seen["RD_BUNDLE"] = seen.get("RD_BUNDLE", 0) + 1
            inner = [r["type"] for r in recs[1:]]
            if top["records"] != len(inner):
                fail("frame %s: bundle says %d records, %d dissected" % (n, top["records"], len(inner)))
            if inner.count(2) + inner.count(6) >= 2:
                seen["BUNDLE_DATA"] = seen.get("BUNDLE_DATA", 0) + 1
            if 3 in inner and (2 in inner or 6 in inner):
                seen["BUNDLE_ACK"] = seen.get("BUNDLE_ACK", 0) + 1
            recs = recs[1:]
        for r in recs:
            nrec += 1
            t = r["type"]
            seen[NAMES.get(t, str(t))] = seen.get(NAMES.get(t, str(t)), 0) + 1
            if t == 1:
                dgram.add(r["payload_len"])
            if t in (2, 6):
                key = (src, r["src_epoch"], dst, dport)
                fl = flows.setdefault(key, Flow(key))
                p = fl.rel(r["psn"])
                if r["flags"] & F_RETX:
                    seen["RETX"] = seen.get("RETX", 0) + 1
                elif p in fl.first_tx:
                    fail("frame %s: PSN %d sent twice without RETX" % (n, r["psn"]))
                else:
                    fl.first_tx.add(p)
                fl.psns.add(p)
                fl.max_psn = p if fl.max_psn is None else max(fl.max_psn, p)
                m = fl.msgs.setdefault(fl.mrel(r["msg_id"]), [r["msg_len"], set(), False, r.get("op", 0)])
                if m[0] != r["msg_len"] or m[3] != r.get("op", 0):
                    fail("frame %s: message %d: msg_len %d/op %d, an earlier packet said %d/%d" %
                         (n, r["msg_id"], r["msg_len"], r.get("op", 0), m[0], m[3]))
                if r["offset"] + r["payload_len"] > r["msg_len"]:
                    fail("frame %s: offset %d + payload %d > msg_len %d" %
                         (n, r["offset"], r["payload_len"], r["msg_len"]))
                m[1].add((r["offset"], r["payload_len"]))
                if r["flags"] & F_RDV:
                    seen["RDV"] = seen.get("RDV", 0) + 1
                    if r["offset"] == 0:
                        m[2] = True
            elif t == 3:
                key = (dst, r["dst_epoch"], src, r["src_port"])
                fl = flows.get(key)
                if fl is None:
                    fail("frame %s: RD_ACK for a flow with no data seen (%s)" % (n, key))
                    continue
                fl.acks += 1
                c = fl.rel(r["cum_psn"])
                if c > fl.max_psn + 1:
                    fail("frame %s: RD_ACK cum_psn %d beyond the highest data PSN seen (%d) + 1" %
                         (n, r["cum_psn"], (fl.max_psn + fl.base) % M32))
                if src == host:
                    if fl.last_cum is not None and c < fl.last_cum:
                        fail("frame %s: RD_ACK cum_psn %d went back (from %d)" %
                             (n, r["cum_psn"], (fl.last_cum + fl.base) % M32))
                    fl.last_cum = c
            elif t == 4:
                key = (dst, r["dst_epoch"], src, r["src_port"])
                fl = flows.get(key)
                m = fl.msgs.get(fl.mrel(r["cts_msg_id"])) if fl else None
                fl and setattr(fl, "ctss", fl.ctss + 1)
                if not m or not m[2]:
                    fail("frame %s: RD_CTS for message %d, whose first packet (RDV) was not seen" %
                         (n, r["cts_msg_id"]))

    # per flow: ranges without holes, messages whole
    summary = []
    for key, fl in sorted(flows.items(), key=lambda kv: (-len(kv[1].psns), kv[0])):
        who = "%s -> %s:%d" % (key[0], key[2], key[3])
        lo, hi = min(fl.psns), max(fl.psns)
        if hi - lo + 1 != len(fl.psns):
            fail("%s: PSNs %d..%d with %d missing" % (who, (lo + fl.base) % M32, (hi + fl.base) % M32,
                                                     hi - lo + 1 - len(fl.psns)))
        ids = sorted(fl.msgs)
        if ids[-1] - ids[0] + 1 != len(ids):
            fail("%s: message ids with %d missing" % (who, ids[-1] - ids[0] + 1 - len(ids)))
        for mid in ids:
            mlen, parts, _, _ = fl.msgs[mid]
            at = 0
            for off, ln in sorted(parts):
                if off > at:
                    break
                at = max(at, off + ln)
            if at < mlen or (mlen == 0 and not parts):
                fail("%s: message %d: bytes [%d, %d) of %d never seen" %
                     (who, (mid + fl.mbase) % M32, at, mlen, mlen))
                break
        if key[2] == host and fl.acks and fl.last_cum != hi + 1:
            fail("%s: the last ACK %s says cum_psn %d, the last data PSN is %d" %
                 (who, host, (fl.last_cum + fl.base) % M32, (hi + fl.base) % M32))
        sizes = sorted(set(m[0] for m in fl.msgs.values() if m[3] == 0))
        ops = {}
        for m in fl.msgs.values():
            if m[3]:
                ops[(m[3], m[0])] = ops.get((m[3], m[0]), 0) + 1
        fl.sizes, fl.ops = sizes, ops
        summary.append("%s: %d PSNs, %d first sent, %d messages, sizes %s%s, %d ACKs, %d CTS" %
                       (who, len(fl.psns), len(fl.first_tx), len(ids), sizes,
                        (" RMA (op, len): count %s" % ops) if ops else "", fl.acks, fl.ctss))

    # what the workload sent
    inbound = [fl for k, fl in flows.items() if k[2] == host]
    outbound = [fl for k, fl in flows.items() if k[0] == host]
    for e in expect:
        k, val = e.split("=", 1)
        if k in ("sizes_out", "sizes_in"):
            want = sorted(int(x) for x in val.split(","))
            fls = inbound if k == "sizes_out" else outbound
            got = sorted(set(s for fl in fls for s in fl.sizes))
            if got != want:
                fail("RD_DATA msg_len %s %s: %s, the benchmark sent %s" %
                     ("to" if k == "sizes_out" else "from", host, got, want))
        elif k == "writes":
            w = sum(c for fl in inbound for (op, ln), c in fl.ops.items() if op == 1 and ln == int(val))
            other = [(op, ln) for fl in inbound for (op, ln) in fl.ops if not (op == 1 and ln == int(val))]
            resp = sum(c for fl in outbound for (op, ln), c in fl.ops.items() if op == 4 and ln == 0)
            if not w or other:
                fail("RD_RMA to %s: %d WRITEs of %s bytes, and others %s" % (host, w, val, other))
            if resp != w:
                fail("RD_RMA: %d WRITEs to %s, %d RESPs (delivery complete) back" % (w, host, resp))
        elif k == "msgs":
            got = sum(len(fl.msgs) for fl in inbound)
            if got != int(val):
                fail("%d messages to %s, the benchmark sent %s" % (got, host, val))
        elif k == "dgram":
            want = sorted(int(x) for x in val.split(","))
            if sorted(dgram) != want:
                fail("DGRAM payload lengths %s, the program sent %s" % (sorted(dgram), want))
        elif k == "need":
            for t in val.split(","):
                if not seen.get(t):
                    fail("no %s packet seen" % t)
    kinds = ", ".join("%s %d" % (k, seen[k]) for k in sorted(seen))
    print("%s: %d UDP frames, %d braid records (%s)" % (name, frames, nrec, kinds))
    for s in summary[:4]:
        print("  " + s)
    for b in bad:
        print("  FAIL: " + b)
    return 1 if bad or frames == 0 else 0


if __name__ == "__main__":
    if sys.argv[1] == "fields":
        print(" ".join("-e " + f for f in FIELDS))
    else:
        sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]))
