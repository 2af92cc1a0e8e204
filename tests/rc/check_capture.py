#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""check_capture.py FIELDS.TSV: check tshark's decoding of a capture of braid RC traffic.

Input: tshark -T fields output (tab separated) of frame.number, ip.dst, udp.dstport,
infiniband.bth.opcode, infiniband.bth.psn, infiniband.bth.destqp,
infiniband.reth.dmalen, roce_icrc.status, _ws.malformed, _ws.expert.severity.
Exit 0 when every frame is RoCEv2 with a good ICRC and nothing malformed, the
opcodes of SEND, RDMA READ and ACK are all present, and on every QP the
request PSNs advance one by one (a retransmission may repeat earlier ones).
"""
import sys

MTU = 4096          # braid's RC MTU on loopback (protocol.md §6.3)
PSN_MOD = 1 << 24
SEND = {0, 1, 2, 3, 4, 5}
WRITE = {6, 7, 8, 9, 10, 11}
READ_REQ = 12
READ_RESP = {13, 14, 15, 16}
ACK = 17
NAMES = {0: "SEND_FIRST", 1: "SEND_MIDDLE", 2: "SEND_LAST", 3: "SEND_LAST_IMM", 4: "SEND_ONLY",
         5: "SEND_ONLY_IMM", 6: "WRITE_FIRST", 7: "WRITE_MIDDLE", 8: "WRITE_LAST",
         9: "WRITE_LAST_IMM", 10: "WRITE_ONLY", 11: "WRITE_ONLY_IMM", 12: "READ_REQ",
         13: "READ_RESP_FIRST", 14: "READ_RESP_MIDDLE", 15: "READ_RESP_LAST",
         16: "READ_RESP_ONLY", 17: "ACK"}


def num(s):
    return int(s, 0) if s else None


def main(path):
    errors = []
    seen = {}
    next_psn = {}       # destqp -> PSN the next new request must carry
    frames = 0
    with open(path) as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            cols += [""] * (10 - len(cols))
            frame, dst, dport, opcode, psn, qp, dmalen, icrc, malformed, severity = cols[:10]
            frames += 1
            if opcode == "":
                errors.append(f"frame {frame}: not decoded as InfiniBand (udp dst {dport})")
                continue
            op, psn, qpn = num(opcode), num(psn), num(qp)
            qp = (dst, qpn)     # QP numbers are per host: key by destination and QPN
            seen[op] = seen.get(op, 0) + 1
            if icrc != "1":
                errors.append(f"frame {frame}: ICRC {'bad' if icrc == '0' else 'not checked'}")
            if malformed:
                errors.append(f"frame {frame}: malformed")
            if severity and int(severity, 0) >= 0x00800000:   # PI_ERROR
                errors.append(f"frame {frame}: expert info of error severity")
            if op in SEND or op in WRITE or op == READ_REQ:
                span = 1
                if op == READ_REQ:
                    span = max(1, -(-num(dmalen or "0") // MTU))
                if qp not in next_psn:
                    next_psn[qp] = (psn + span) % PSN_MOD
                    continue
                d = (psn - next_psn[qp]) % PSN_MOD
                if d == 0:
                    next_psn[qp] = (psn + span) % PSN_MOD
                elif d < PSN_MOD // 2:
                    errors.append(f"frame {frame}: QP {dst}/{qpn:#x} PSN {psn} skips ahead of {next_psn[qp]}")
                # else: behind the next new PSN: a go-back-N retransmission
    if frames == 0:
        errors.append("no RoCEv2 frames captured on UDP 4791")
    for need, what in ((SEND, "SEND"), ({READ_REQ}, "READ_REQ"), (READ_RESP, "READ response"),
                       ({ACK}, "ACK")):
        if not any(seen.get(o) for o in need):
            errors.append(f"no {what} packet in the capture")
    print(f"check_capture: {frames} RoCEv2 frames on {len(next_psn)} QPs; opcodes: " +
          ", ".join(f"{NAMES.get(o, hex(o))} {n}" for o, n in sorted(seen.items())))
    for e in errors[:20]:
        print("check_capture: " + e)
    if errors:
        print(f"check_capture: FAIL ({len(errors)} problems)")
        return 1
    print("check_capture: PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
