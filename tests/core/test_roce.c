/* SPDX-License-Identifier: BSD-2-Clause */
/* test_roce.c: unit tests of core/braid_roce.c (protocol.md §5): headers, parse, ICRC, PSNs. */
#include <criterion/criterion.h>
#include <string.h>

#include "braid_roce.h"

#define R BRAID_ROCE_HAS_RETH
#define A BRAID_ROCE_HAS_AETH
#define I BRAID_ROCE_HAS_IMM
#define P BRAID_ROCE_HAS_PAYLOAD

/* IBTA vol. 1 §9.2.1/§9.3, written out by hand: the headers of RC opcodes 0x00..0x11 */
static const struct {
	uint32_t hdrs;
	size_t hdr_len;
	const char *name;
} rc_ops[] = {
	{ P, 12, "SEND_FIRST" },		/* 0x00 */
	{ P, 12, "SEND_MIDDLE" },
	{ P, 12, "SEND_LAST" },
	{ I | P, 16, "SEND_LAST_IMM" },
	{ P, 12, "SEND_ONLY" },
	{ I | P, 16, "SEND_ONLY_IMM" },
	{ R | P, 28, "WRITE_FIRST" },		/* 0x06 */
	{ P, 12, "WRITE_MIDDLE" },
	{ P, 12, "WRITE_LAST" },
	{ I | P, 16, "WRITE_LAST_IMM" },
	{ R | P, 28, "WRITE_ONLY" },
	{ R | I | P, 32, "WRITE_ONLY_IMM" },
	{ R, 28, "READ_REQ" },			/* 0x0c */
	{ A | P, 16, "READ_RESP_FIRST" },
	{ P, 12, "READ_RESP_MIDDLE" },
	{ A | P, 16, "READ_RESP_LAST" },
	{ A | P, 16, "READ_RESP_ONLY" },
	{ A, 16, "ACK" },			/* 0x11 */
};
#define N_RC (sizeof(rc_ops) / sizeof(rc_ops[0]))

/*
 * Known answers: UDP payloads of frames braid's codec wrote into a pcap
 * (IPv4 ID 0, DF, TTL 64), decoded by tshark 4.0 as meant (opcode, PSN, QP,
 * RETH/AETH/ImmDt; no malformed packet), their ICRCs confirmed by two
 * checkers independent of this code (a tshark Lua postdissector, itself
 * checked on a ConnectX-4 Lx frame, and Python zlib.crc32, both over the
 * frame's own IP/UDP bytes). 192.168.1.10:49152 -> 192.168.1.20:4791.
 */
static const struct braid_roce_addr pcap_req = { 0xc0a8010a, 0xc0a80114, 49152, 4791, 0 };
static const struct braid_roce_addr pcap_rsp = { 0xc0a80114, 0xc0a8010a, 50000, 4791, 0 };

/* frame 1: SEND_ONLY, SE, A, QP 0x123456, PSN 0xfffffd, 13 bytes + 3 pad */
static const uint8_t kat_send_only[] = {
	0x04, 0xf0, 0xff, 0xff, 0x00, 0x12, 0x34, 0x56, 0x80, 0xff, 0xff, 0xfd,
	0x03, 0x0a, 0x11, 0x18, 0x1f, 0x26, 0x2d, 0x34, 0x3b, 0x42, 0x49, 0x50, 0x57,
	0x00, 0x00, 0x00,
	0x82, 0x7f, 0x1c, 0x3d,
};
#define KAT_SEND_ONLY_ICRC 0x3d1c7f82u

/* frame 5: WRITE_ONLY_IMM, RETH va 0x0123456789abcdef rkey 0xdeadbeef len 10, imm 0xcafef00d */
static const uint8_t kat_write_only_imm[] = {
	0x0b, 0xe0, 0xff, 0xff, 0x00, 0x12, 0x34, 0x56, 0x80, 0x00, 0x00, 0x01,
	0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x00, 0x00, 0x0a,
	0xca, 0xfe, 0xf0, 0x0d,
	0x03, 0x0a, 0x11, 0x18, 0x1f, 0x26, 0x2d, 0x34, 0x3b, 0x42, 0x00, 0x00,
	0x28, 0x2a, 0x8c, 0xa8,
};
#define KAT_WRITE_ONLY_IMM_ICRC 0xa88c2a28u

/* frame 7: READ_RESP_ONLY, QP 0xabcdef, PSN 2, AETH ACK (credits 0x1f) MSN 3, 7 bytes + 1 pad */
static const uint8_t kat_read_resp_only[] = {
	0x10, 0x50, 0xff, 0xff, 0x00, 0xab, 0xcd, 0xef, 0x00, 0x00, 0x00, 0x02,
	0x1f, 0x00, 0x00, 0x03,
	0xbf, 0xc6, 0xcd, 0xd4, 0xdb, 0xe2, 0xe9, 0x00,
	0x12, 0x6c, 0x93, 0x0a,
};

/* frame 10: RNR NAK (timer code 14, 1.28 ms), PSN 6, MSN 5 */
static const uint8_t kat_rnr_nak[] = {
	0x11, 0x40, 0xff, 0xff, 0x00, 0xab, 0xcd, 0xef, 0x00, 0x00, 0x00, 0x06,
	0x2e, 0x00, 0x00, 0x05,
	0x97, 0x7a, 0xa3, 0x51,
};
#define KAT_RNR_NAK_ICRC 0x51a37a97u

/*
 * A CNP sent by a ConnectX-4 Lx NIC (hardware ICRC), from scapy's
 * test/contrib/roce.uts: 10.0.17.1:0 -> 10.0.18.1:4791, IP ID 0x718c, TOS
 * 0xc2, BECN set in resv8a. Not an RC opcode, but the ICRC is the same.
 */
static const struct braid_roce_addr cx4_addr = { 0x0a001101, 0x0a001201, 0, 4791, 0x718c };
static const uint8_t cx4_cnp[] = {
	0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x01, 0x18, 0x00, 0x00, 0x00, 0x00,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0x82, 0xfd, 0x00, 0x2a,
};

/* a whole packet from @v: headers, @v->payload_len bytes of pattern, pad, ICRC from @a */
static size_t build(uint8_t *buf, const struct braid_roce_view *v, const struct braid_roce_addr *a)
{
	size_t hl = braid_roce_write(buf, v);
	size_t pad = (buf[1] >> 4) & 3;
	struct iovec iov = { buf + hl, v->payload_len };

	cr_assert(hl > 0);
	for (size_t i = 0; i < v->payload_len; i++)
		buf[hl + i] = (uint8_t)(i * 31 + 7);
	memset(buf + hl + v->payload_len, 0, pad);
	braid_roce_icrc_put(buf + hl + v->payload_len + pad,
			    braid_roce_icrc(a, buf, hl, &iov, 1, v->payload_len, pad));
	return hl + v->payload_len + pad + BRAID_ROCE_ICRC_LEN;
}

/* ---- opcodes ---- */

Test(braid_roce_opcode_hdrs, rc_table)
{
	for (unsigned op = 0; op < N_RC; op++) {
		cr_assert_eq(braid_roce_opcode_hdrs(op), rc_ops[op].hdrs, "opcode 0x%02x", op);
		cr_assert_eq(braid_roce_hdr_len(op), rc_ops[op].hdr_len, "opcode 0x%02x", op);
		cr_assert_str_eq(braid_roce_opcode_name(op), rc_ops[op].name);
	}
}

Test(braid_roce_opcode_hdrs, refuses_atomics_and_other_transports)
{
	for (unsigned op = N_RC; op < 256; op++) {
		cr_assert_eq(braid_roce_opcode_hdrs(op), 0, "opcode 0x%02x", op);
		cr_assert_eq(braid_roce_hdr_len(op), 0, "opcode 0x%02x", op);
		cr_assert_str_eq(braid_roce_opcode_name(op), "?");
	}
}

Test(braid_roce_opcode_hdrs, max_hdr_is_the_longest)
{
	size_t max = 0;

	for (unsigned op = 0; op < N_RC; op++)
		max = rc_ops[op].hdr_len > max ? rc_ops[op].hdr_len : max;
	cr_assert_eq(max, BRAID_ROCE_MAX_HDR);
}

/* ---- write: bit-level layout ---- */

Test(braid_roce_write, bth_bits)
{
	struct braid_roce_view v = { .opcode = BRAID_ROCE_SEND_ONLY, .se = true, .pkey = 0x8001,
				     .dest_qp = 0x123456, .ack_req = true, .psn = 0xabcdef,
				     .payload_len = 13 };
	static const uint8_t want[12] = {
		0x04,			/* opcode */
		0xf0,			/* SE 1, M 1, PadCnt 3, TVer 0 */
		0x80, 0x01,		/* P_Key */
		0x00,			/* resv8a */
		0x12, 0x34, 0x56,	/* DestQP */
		0x80,			/* A 1, resv7 0 */
		0xab, 0xcd, 0xef,	/* PSN */
	};
	uint8_t buf[BRAID_ROCE_MAX_HDR];

	memset(buf, 0xee, sizeof(buf));
	cr_assert_eq(braid_roce_write(buf, &v), 12);
	cr_assert_arr_eq(buf, want, 12);
	cr_assert_eq(buf[12], 0xee, "nothing written past the BTH");
}

Test(braid_roce_write, flags_clear)
{
	struct braid_roce_view v = { .opcode = BRAID_ROCE_SEND_MIDDLE, .pkey = 0xffff,
				     .dest_qp = 1, .psn = 2, .payload_len = 256 };
	static const uint8_t want[12] = { 0x01, 0x40, 0xff, 0xff, 0, 0, 0, 1, 0x00, 0, 0, 2 };
	uint8_t buf[BRAID_ROCE_MAX_HDR];

	cr_assert_eq(braid_roce_write(buf, &v), 12);
	cr_assert_arr_eq(buf, want, 12, "SE 0, MigReq 1 (always from braid), PadCnt 0, A 0");
}

Test(braid_roce_write, masks_24_bit_fields)
{
	struct braid_roce_view v = { .opcode = BRAID_ROCE_ACK, .pkey = 0x1234,
				     .dest_qp = 0xff123456, .psn = 0xfe000001,
				     .syndrome = 0x1f, .msn = 0x99abcdef };
	static const uint8_t want[16] = {
		0x11, 0x40, 0x12, 0x34, 0x00, 0x12, 0x34, 0x56, 0x00, 0x00, 0x00, 0x01,
		0x1f, 0xab, 0xcd, 0xef,
	};
	uint8_t buf[BRAID_ROCE_MAX_HDR];

	cr_assert_eq(braid_roce_write(buf, &v), 16);
	cr_assert_arr_eq(buf, want, 16, "QPN, PSN, MSN keep 24 bits; resv8a and resv7 stay 0");
}

Test(braid_roce_write, padcnt_from_payload_len)
{
	static const uint8_t want_pad[] = { 0, 3, 2, 1, 0, 3, 2, 1, 0, 3 };
	uint8_t buf[BRAID_ROCE_MAX_HDR];

	for (size_t n = 0; n < sizeof(want_pad); n++) {
		struct braid_roce_view v = { .opcode = BRAID_ROCE_SEND_LAST, .payload_len = n + 4096 };

		braid_roce_write(buf, &v);
		cr_assert_eq((buf[1] >> 4) & 3, want_pad[n], "payload %zu", n + 4096);
		cr_assert_eq(buf[1] & 0x0f, 0, "TVer 0");
	}
}

Test(braid_roce_write, no_pad_without_payload)
{
	struct braid_roce_view v = { .opcode = BRAID_ROCE_READ_REQ, .payload_len = 5 };
	uint8_t buf[BRAID_ROCE_MAX_HDR];

	cr_assert_eq(braid_roce_write(buf, &v), 28);
	cr_assert_eq(buf[1], 0x40);
}

Test(braid_roce_write, extension_headers_match_pcap)
{
	struct braid_roce_view w = { .opcode = BRAID_ROCE_WRITE_ONLY_IMM, .se = true, .pkey = 0xffff,
				     .dest_qp = 0x123456, .ack_req = true, .psn = 1,
				     .va = 0x0123456789abcdefULL, .rkey = 0xdeadbeef, .dma_len = 10,
				     .imm = 0xcafef00d, .payload_len = 10 };
	struct braid_roce_view r = { .opcode = BRAID_ROCE_READ_RESP_ONLY, .pkey = 0xffff,
				     .dest_qp = 0xabcdef, .psn = 2, .syndrome = 0x1f, .msn = 3,
				     .payload_len = 7 };
	struct braid_roce_view n = { .opcode = BRAID_ROCE_ACK, .pkey = 0xffff, .dest_qp = 0xabcdef,
				     .psn = 6, .syndrome = BRAID_ROCE_AETH_RNR_NAK | 14, .msn = 5 };
	uint8_t buf[BRAID_ROCE_MAX_HDR];

	cr_assert_eq(braid_roce_write(buf, &w), 32);
	cr_assert_arr_eq(buf, kat_write_only_imm, 32, "BTH, RETH, ImmDt");
	cr_assert_eq(braid_roce_write(buf, &r), 16);
	cr_assert_arr_eq(buf, kat_read_resp_only, 16, "BTH, AETH");
	cr_assert_eq(braid_roce_write(buf, &n), 16);
	cr_assert_arr_eq(buf, kat_rnr_nak, 16, "RNR NAK");
}

Test(braid_roce_write, refuses_unknown_opcode)
{
	static const uint8_t ops[] = { 0x12, 0x13, 0x14, 0x15, 0x20, 0x24, 0x64, 0x81, 0xff };
	uint8_t buf[BRAID_ROCE_MAX_HDR];

	for (size_t i = 0; i < sizeof(ops); i++) {
		struct braid_roce_view v = { .opcode = ops[i] };

		cr_assert_eq(braid_roce_write(buf, &v), 0, "opcode 0x%02x", ops[i]);
	}
}

/* ---- parse ---- */

Test(braid_roce_parse, roundtrip_every_opcode)
{
	uint8_t buf[BRAID_ROCE_MAX_HDR + 64 + BRAID_ROCE_MAX_TRAILER];

	for (unsigned op = 0; op < N_RC; op++) {
		size_t max_pl = rc_ops[op].hdrs & P ? 9 : 0;

		for (size_t pl = 0; pl <= max_pl; pl++) {
			struct braid_roce_view v = {
				.opcode = op, .se = pl & 1, .pkey = 0x7fff - op,
				.dest_qp = 0xa00000 | op << 8 | pl, .ack_req = !(pl & 2),
				.psn = 0xfffff0 + pl, .va = 0x8000000000000001ULL + op,
				.rkey = 0x80000000u | op, .dma_len = 0x10000 + pl,
				.syndrome = 0x60 | (pl & 3), .msn = 0x800000 + op,
				.imm = 0xfeed0000u | op, .payload_len = pl,
			};
			struct braid_roce_view g;
			size_t len = build(buf, &v, &pcap_req), hl = rc_ops[op].hdr_len;
			uint32_t h = rc_ops[op].hdrs;

			memset(&g, 0xa5, sizeof(g));
			cr_assert_eq(braid_roce_parse(buf, len, &g), 0, "opcode 0x%02x pl %zu", op, pl);
			cr_assert_eq(g.opcode, op);
			cr_assert_eq(g.se, v.se);
			cr_assert(g.mig);
			cr_assert_eq(g.pad, (4 - pl % 4) % 4);
			cr_assert_eq(g.pkey, v.pkey);
			cr_assert_eq(g.dest_qp, v.dest_qp);
			cr_assert_eq(g.ack_req, v.ack_req);
			cr_assert_eq(g.psn, v.psn);
			cr_assert_eq(g.va, h & R ? v.va : 0);
			cr_assert_eq(g.rkey, h & R ? v.rkey : 0);
			cr_assert_eq(g.dma_len, h & R ? v.dma_len : 0);
			cr_assert_eq(g.syndrome, h & A ? v.syndrome : 0);
			cr_assert_eq(g.msn, h & A ? v.msn : 0);
			cr_assert_eq(g.imm, h & I ? v.imm : 0);
			cr_assert_eq(g.hdr_len, hl);
			cr_assert_eq(g.payload, buf + hl);
			cr_assert_eq(g.payload_len, pl);
			cr_assert(braid_roce_icrc_ok(&pcap_req, buf, len));
		}
	}
}

Test(braid_roce_parse, pcap_known_answers)
{
	struct braid_roce_view v;

	cr_assert_eq(braid_roce_parse(kat_send_only, sizeof(kat_send_only), &v), 0);
	cr_assert_eq(v.opcode, BRAID_ROCE_SEND_ONLY);
	cr_assert(v.se && v.mig && v.ack_req);
	cr_assert_eq(v.pad, 3);
	cr_assert_eq(v.pkey, 0xffff);
	cr_assert_eq(v.dest_qp, 0x123456);
	cr_assert_eq(v.psn, 0xfffffd);
	cr_assert_eq(v.hdr_len, 12);
	cr_assert_eq(v.payload, kat_send_only + 12);
	cr_assert_eq(v.payload_len, 13, "payload excludes the 3 pad bytes and the ICRC");

	cr_assert_eq(braid_roce_parse(kat_write_only_imm, sizeof(kat_write_only_imm), &v), 0);
	cr_assert_eq(v.va, 0x0123456789abcdefULL);
	cr_assert_eq(v.rkey, 0xdeadbeef);
	cr_assert_eq(v.dma_len, 10);
	cr_assert_eq(v.imm, 0xcafef00d);
	cr_assert_eq(v.hdr_len, 32);
	cr_assert_eq(v.payload_len, 10);
	cr_assert_eq(v.pad, 2);

	cr_assert_eq(braid_roce_parse(kat_rnr_nak, sizeof(kat_rnr_nak), &v), 0);
	cr_assert_eq(v.opcode, BRAID_ROCE_ACK);
	cr_assert_eq(v.syndrome & 0xe0, BRAID_ROCE_AETH_RNR_NAK);
	cr_assert_eq(v.syndrome & 0x1f, 14);
	cr_assert_eq(v.msn, 5);
	cr_assert_eq(v.psn, 6);
	cr_assert_eq(v.payload_len, 0);
}

Test(braid_roce_parse, rejects_short)
{
	uint8_t buf[BRAID_ROCE_MAX_HDR + 64 + BRAID_ROCE_MAX_TRAILER];
	struct braid_roce_view g;

	for (unsigned op = 0; op < N_RC; op++) {
		/* a 1-byte payload (pad 3) where the opcode has one, else none */
		struct braid_roce_view v = { .opcode = op, .payload_len = rc_ops[op].hdrs & P ? 1 : 0 };
		size_t len = build(buf, &v, &pcap_req);
		size_t min = rc_ops[op].hdr_len + (v.payload_len ? 3 : 0) + BRAID_ROCE_ICRC_LEN;

		cr_assert_eq(braid_roce_parse(buf, len, &g), 0);
		for (size_t l = 0; l < min; l++)
			cr_assert_eq(braid_roce_parse(buf, l, &g), -BRAID_ROCE_ERR_SHORT,
				     "opcode 0x%02x len %zu", op, l);
	}
}

Test(braid_roce_parse, every_truncation_refused_by_parse_or_icrc)
{
	uint8_t buf[BRAID_ROCE_MAX_HDR + 64 + BRAID_ROCE_MAX_TRAILER];
	struct braid_roce_view g;

	for (unsigned op = 0; op < N_RC; op++) {
		struct braid_roce_view v = { .opcode = op, .payload_len = rc_ops[op].hdrs & P ? 37 : 0 };
		size_t len = build(buf, &v, &pcap_req);

		for (size_t l = 0; l < len; l++)
			cr_assert(braid_roce_parse(buf, l, &g) != 0 || !braid_roce_icrc_ok(&pcap_req, buf, l),
				  "opcode 0x%02x cut to %zu of %zu bytes", op, l, len);
	}
}

Test(braid_roce_parse, rejects_tver)
{
	uint8_t buf[64];
	struct braid_roce_view g;

	memcpy(buf, kat_send_only, sizeof(kat_send_only));
	for (unsigned tver = 1; tver < 16; tver++) {
		buf[1] = (uint8_t)((kat_send_only[1] & 0xf0) | tver);
		cr_assert_eq(braid_roce_parse(buf, sizeof(kat_send_only), &g), -BRAID_ROCE_ERR_TVER);
	}
}

Test(braid_roce_parse, rejects_unknown_and_atomic_opcodes)
{
	uint8_t buf[64] = { 0 };
	struct braid_roce_view g;

	buf[2] = buf[3] = 0xff;
	for (unsigned op = N_RC; op < 256; op++) {
		buf[0] = (uint8_t)op;
		cr_assert_eq(braid_roce_parse(buf, sizeof(buf), &g), -BRAID_ROCE_ERR_OPCODE,
			     "opcode 0x%02x (atomics 0x12-0x14, UC/RD/UD, CNP)", op);
	}
}

/* a packet of @op with PadCnt @pad and @pl bytes between headers and pad, ICRC zero */
static size_t raw_pkt(uint8_t *buf, uint8_t op, unsigned pad, size_t pl)
{
	size_t hl = braid_roce_hdr_len(op);

	memset(buf, 0, hl + pl + pad + 4);
	buf[0] = op;
	buf[1] = (uint8_t)(0x40 | pad << 4);
	return hl + pl + pad + 4;
}

Test(braid_roce_parse, rejects_bad_pad)
{
	uint8_t buf[128];
	struct braid_roce_view g;
	size_t len;

	for (unsigned pad = 1; pad < 4; pad++) {
		len = raw_pkt(buf, BRAID_ROCE_ACK, pad, 0);
		cr_assert_eq(braid_roce_parse(buf, len, &g), -BRAID_ROCE_ERR_PAD, "ACK pad %u", pad);
		len = raw_pkt(buf, BRAID_ROCE_READ_REQ, pad, 4 - pad);
		cr_assert_eq(braid_roce_parse(buf, len, &g), -BRAID_ROCE_ERR_PAD, "READ_REQ pad %u", pad);
		len = raw_pkt(buf, BRAID_ROCE_SEND_ONLY, pad, 0);
		cr_assert_eq(braid_roce_parse(buf, len, &g), -BRAID_ROCE_ERR_PAD, "pad on empty payload");
		len = raw_pkt(buf, BRAID_ROCE_SEND_ONLY, pad, 4);
		cr_assert_eq(braid_roce_parse(buf, len, &g), -BRAID_ROCE_ERR_PAD, "payload 4 + pad %u", pad);
		len = raw_pkt(buf, BRAID_ROCE_WRITE_ONLY, pad, 5);
		cr_assert_eq(braid_roce_parse(buf, len, &g), pad == 3 ? 0 : -BRAID_ROCE_ERR_PAD,
			     "payload 5 + pad %u", pad);
	}
	len = raw_pkt(buf, BRAID_ROCE_ACK, 0, 4);
	cr_assert_eq(braid_roce_parse(buf, len, &g), -BRAID_ROCE_ERR_PAD, "bytes after an ACK's AETH");
	len = raw_pkt(buf, BRAID_ROCE_SEND_ONLY, 0, 5);
	cr_assert_eq(braid_roce_parse(buf, len, &g), -BRAID_ROCE_ERR_PAD, "payload 5 without pad");
}

Test(braid_roce_parse, accepts_more_pad_than_payload)
{
	uint8_t buf[128];
	struct braid_roce_view g;
	size_t len = raw_pkt(buf, BRAID_ROCE_SEND_ONLY, 3, 1);

	cr_assert_eq(braid_roce_parse(buf, len, &g), 0, "a 1-byte payload takes 3 pad bytes");
	cr_assert_eq(g.payload_len, 1);
	cr_assert_eq(g.pad, 3);
}

Test(braid_roce_parse, ignores_reserved_and_migreq)
{
	uint8_t buf[64];
	struct braid_roce_view g;

	memcpy(buf, kat_send_only, sizeof(kat_send_only));
	buf[4] = 0xff;			/* resv8a (FECN/BECN) */
	buf[8] |= 0x7f;			/* resv7 */
	buf[1] &= (uint8_t)~0x40;	/* MigReq 0 */
	cr_assert_eq(braid_roce_parse(buf, sizeof(kat_send_only), &g), 0);
	cr_assert_eq(g.dest_qp, 0x123456);
	cr_assert_eq(g.psn, 0xfffffd);
	cr_assert(g.ack_req);
	cr_assert_not(g.mig);
	cr_assert_eq(g.pad, 3);
}

/* ---- ICRC ---- */

Test(braid_roce_icrc, known_answer_pcap)
{
	struct iovec iov[2] = { { (void *)(kat_send_only + 12), 6 }, { (void *)(kat_send_only + 18), 7 } };
	uint8_t wire[4];
	uint32_t c = braid_roce_icrc(&pcap_req, kat_send_only, 12, iov, 2, 13, 3);

	cr_assert_eq(c, KAT_SEND_ONLY_ICRC, "got 0x%08x", c);
	braid_roce_icrc_put(wire, c);
	cr_assert_arr_eq(wire, kat_send_only + sizeof(kat_send_only) - 4, 4,
			 "least significant byte first");
	cr_assert(braid_roce_icrc_ok(&pcap_req, kat_send_only, sizeof(kat_send_only)));

	iov[0].iov_base = (void *)(kat_write_only_imm + 32);
	iov[0].iov_len = 10;
	cr_assert_eq(braid_roce_icrc(&pcap_req, kat_write_only_imm, 32, iov, 1, 10, 2),
		     KAT_WRITE_ONLY_IMM_ICRC);
	cr_assert(braid_roce_icrc_ok(&pcap_req, kat_write_only_imm, sizeof(kat_write_only_imm)));

	cr_assert_eq(braid_roce_icrc(&pcap_rsp, kat_rnr_nak, 16, NULL, 0, 0, 0), KAT_RNR_NAK_ICRC);
	cr_assert(braid_roce_icrc_ok(&pcap_rsp, kat_rnr_nak, sizeof(kat_rnr_nak)));
	cr_assert(braid_roce_icrc_ok(&pcap_rsp, kat_read_resp_only, sizeof(kat_read_resp_only)));
}

Test(braid_roce_icrc, known_answer_connectx4_hardware)
{
	struct iovec iov = { (void *)(cx4_cnp + 12), 16 };
	struct braid_roce_addr zero_id = cx4_addr;

	cr_assert_eq(braid_roce_icrc(&cx4_addr, cx4_cnp, 12, &iov, 1, 16, 0), 0x2a00fd82u);
	cr_assert(braid_roce_icrc_ok(&cx4_addr, cx4_cnp, sizeof(cx4_cnp)));
	zero_id.ip_id = 0;
	cr_assert_not(braid_roce_icrc_ok(&zero_id, cx4_cnp, sizeof(cx4_cnp)), "the IP ID is covered");
}

Test(braid_roce_icrc_ok, every_flipped_bit_but_resv8a)
{
	uint8_t buf[sizeof(kat_write_only_imm)];

	for (size_t bit = 0; bit < sizeof(buf) * 8; bit++) {
		memcpy(buf, kat_write_only_imm, sizeof(buf));
		buf[bit / 8] ^= (uint8_t)(1u << bit % 8);
		cr_assert_eq(braid_roce_icrc_ok(&pcap_req, buf, sizeof(buf)), bit / 8 == 4,
			     "bit %zu (byte %zu)", bit, bit / 8);
	}
}

Test(braid_roce_icrc_ok, covers_addresses_ports_and_ip_id)
{
	struct braid_roce_addr a;
	const uint8_t *p = kat_send_only;
	size_t n = sizeof(kat_send_only);

	a = pcap_req, a.src_ip ^= 1;
	cr_assert_not(braid_roce_icrc_ok(&a, p, n));
	a = pcap_req, a.dst_ip ^= 0x80000000;
	cr_assert_not(braid_roce_icrc_ok(&a, p, n));
	a = pcap_req, a.src_port++;
	cr_assert_not(braid_roce_icrc_ok(&a, p, n));
	a = pcap_req, a.dst_port = 4792;
	cr_assert_not(braid_roce_icrc_ok(&a, p, n));
	a = pcap_req, a.ip_id = 1;
	cr_assert_not(braid_roce_icrc_ok(&a, p, n));
	a = pcap_req, a.src_ip = pcap_req.dst_ip, a.dst_ip = pcap_req.src_ip;
	cr_assert_not(braid_roce_icrc_ok(&a, p, n), "direction matters");
	cr_assert(braid_roce_icrc_ok(&pcap_req, p, n));
}

Test(braid_roce_icrc, resv8a_is_masked)
{
	uint8_t hdr[12];
	struct iovec iov = { (void *)(kat_send_only + 12), 13 };
	uint8_t buf[sizeof(kat_send_only)];

	memcpy(hdr, kat_send_only, 12);
	for (unsigned x = 0; x < 256; x += 0x40) {
		hdr[4] = (uint8_t)x;
		cr_assert_eq(braid_roce_icrc(&pcap_req, hdr, 12, &iov, 1, 13, 3), KAT_SEND_ONLY_ICRC);
	}
	memcpy(buf, kat_send_only, sizeof(buf));
	buf[4] = 0x40;	/* BECN, as a NIC's CNP sets it */
	cr_assert(braid_roce_icrc_ok(&pcap_req, buf, sizeof(buf)));
	buf[8] ^= 0x01;	/* resv7 is not masked */
	cr_assert_not(braid_roce_icrc_ok(&pcap_req, buf, sizeof(buf)));
}

Test(braid_roce_icrc, iov_split_and_payload_len)
{
	uint8_t hdr[BRAID_ROCE_MAX_HDR], data[300];
	struct braid_roce_view v = { .opcode = BRAID_ROCE_WRITE_FIRST, .pkey = 0xffff, .dest_qp = 9,
				     .psn = 77, .va = 1, .rkey = 2, .dma_len = 300, .payload_len = 256 };
	size_t hl = braid_roce_write(hdr, &v);
	struct iovec one = { data, 256 };
	uint32_t want;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i ^ 0x5a);
	want = braid_roce_icrc(&pcap_req, hdr, hl, &one, 1, 256, 0);
	for (size_t cut = 0; cut <= 256; cut += 37) {
		struct iovec two[3] = { { data, cut }, { data + cut, 256 - cut }, { data + 256, 44 } };

		cr_assert_eq(braid_roce_icrc(&pcap_req, hdr, hl, two, 3, 256, 0), want,
			     "split at %zu; bytes past payload_len ignored", cut);
	}
	one.iov_len = 300;
	cr_assert_eq(braid_roce_icrc(&pcap_req, hdr, hl, &one, 1, 256, 0), want);
	cr_assert_neq(braid_roce_icrc(&pcap_req, hdr, hl, &one, 1, 252, 0), want, "length is covered");
}

Test(braid_roce_icrc_ok, short_input)
{
	for (size_t l = 0; l < BRAID_ROCE_BTH_LEN + BRAID_ROCE_ICRC_LEN; l++)
		cr_assert_not(braid_roce_icrc_ok(&pcap_req, kat_send_only, l), "len %zu", l);
}

Test(braid_roce_icrc_ok, refuses_more_than_a_udp_datagram)
{
	/* 65508 bytes cannot travel in one UDP/IPv4 datagram: the IP length would wrap to 0 */
	static uint8_t big[65508];
	struct braid_roce_view v = { .opcode = BRAID_ROCE_SEND_ONLY, .payload_len = sizeof(big) - 16 };
	struct iovec iov = { big + 12, sizeof(big) - 16 };

	braid_roce_write(big, &v);
	braid_roce_icrc_put(big + sizeof(big) - 4,
			    braid_roce_icrc(&pcap_req, big, 12, &iov, 1, iov.iov_len, 0));
	cr_assert_not(braid_roce_icrc_ok(&pcap_req, big, sizeof(big)));
	v.payload_len -= 4;
	iov.iov_len -= 4;
	braid_roce_write(big, &v);
	braid_roce_icrc_put(big + sizeof(big) - 8,
			    braid_roce_icrc(&pcap_req, big, 12, &iov, 1, iov.iov_len, 0));
	cr_assert(braid_roce_icrc_ok(&pcap_req, big, sizeof(big) - 4), "the largest one is fine");
}

/* ---- PSN arithmetic ---- */

Test(braid_psn_add, wraps_at_24_bits)
{
	cr_assert_eq(braid_psn_add(0xffffff, 1), 0);
	cr_assert_eq(braid_psn_add(0xfffffe, 5), 3);
	cr_assert_eq(braid_psn_add(0x123456, 0x1000000), 0x123456);
	cr_assert_eq(braid_psn_add(0x123456, 0), 0x123456);
	cr_assert_eq(braid_psn_add(5, BRAID_ROCE_PSN_MASK), 4, "adding 2^24 - 1 steps back one");
}

Test(braid_psn_diff, across_the_wrap)
{
	cr_assert_eq(braid_psn_diff(0, 0xffffff), 1);
	cr_assert_eq(braid_psn_diff(0xffffff, 0), -1);
	cr_assert_eq(braid_psn_diff(5, 0xfffffb), 10);
	cr_assert_eq(braid_psn_diff(0xfffffb, 5), -10);
	cr_assert_eq(braid_psn_diff(0x123456, 0x123456), 0);
	cr_assert_eq(braid_psn_diff(0x7fffff, 0), 0x7fffff, "largest ahead");
	cr_assert_eq(braid_psn_diff(0x800000, 0), -0x800000, "half the space counts as behind");
	cr_assert_eq(braid_psn_diff(0x1000005, 5), 0, "bits above 24 ignored");
	for (uint32_t a = 0xfffff0; a != 0x10; a = braid_psn_add(a, 1))
		cr_assert_eq(braid_psn_diff(braid_psn_add(a, 100), a), 100, "a %#x", a);
}

Test(braid_roce_dest_qp, reads_the_bth_and_refuses_what_parse_refuses)
{
	uint8_t pkt[64];
	struct braid_roce_view v = { .opcode = BRAID_ROCE_SEND_ONLY, .pkey = 0xffff,
				     .dest_qp = 0xabcdef, .psn = 5 };
	size_t n = braid_roce_write(pkt, &v);
	uint32_t qpn = 0;

	memset(pkt + n, 0, BRAID_ROCE_ICRC_LEN);
	cr_assert_eq(braid_roce_dest_qp(pkt, n + BRAID_ROCE_ICRC_LEN, &qpn), 0);
	cr_assert_eq(qpn, 0xabcdef);
	cr_assert_eq(braid_roce_dest_qp(pkt, BRAID_ROCE_BTH_LEN, &qpn), -BRAID_ROCE_ERR_SHORT);
	pkt[1] |= 0x0f;	/* a transport header version braid does not speak */
	cr_assert_eq(braid_roce_dest_qp(pkt, n + BRAID_ROCE_ICRC_LEN, &qpn), -BRAID_ROCE_ERR_TVER);
	cr_assert_eq(braid_roce_parse(pkt, n + BRAID_ROCE_ICRC_LEN, &v), -BRAID_ROCE_ERR_TVER);
}

/* braid's message header inside a SEND (§5.10): 16 bytes, big-endian, checked kind and length. */
Test(braid_roce_msg, header_round_trip_and_refusals)
{
	struct braid_roce_msg_view v = { .kind = BRAID_ROCE_MSG_TAGGED, .len = 0x01020304,
					 .tag = 0x1122334455667788ULL }, d;
	static const uint8_t want[BRAID_ROCE_MSG_HDR_LEN] = {
		1, 0, 0, 0, 1, 2, 3, 4, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
	};
	uint8_t b[BRAID_ROCE_MSG_HDR_LEN + 4];

	memset(b, 0xee, sizeof(b));
	braid_roce_msg_write(b, &v);
	cr_assert_arr_eq(b, want, sizeof(want));
	cr_assert_eq(braid_roce_msg_parse(b, sizeof(b), &d), 0);
	cr_assert_eq(d.kind, BRAID_ROCE_MSG_TAGGED);
	cr_assert_eq(d.len, 0x01020304);
	cr_assert_eq(d.tag, 0x1122334455667788ULL);
	cr_assert_eq(braid_roce_msg_parse(b, BRAID_ROCE_MSG_HDR_LEN - 1, &d), -1, "too short");
	cr_assert_eq(braid_roce_msg_parse(NULL, 0, &d), -1);
	b[0] = 2;
	cr_assert_eq(braid_roce_msg_parse(b, sizeof(b), &d), -1, "unknown kind");
	b[0] = BRAID_ROCE_MSG_UNTAGGED;
	b[1] = 0xff;
	cr_assert_eq(braid_roce_msg_parse(b, sizeof(b), &d), 0, "reserved bytes are ignored");
	cr_assert_eq(d.kind, BRAID_ROCE_MSG_UNTAGGED);
}
