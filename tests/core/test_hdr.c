/* SPDX-License-Identifier: BSD-2-Clause */
/* test_hdr.c: unit tests of core/braid_hdr.c (protocol.md §2-§3). */
#include <criterion/criterion.h>
#include <string.h>

#include "braid_hdr.h"

#define DROP(r) (-((int)(r) + 1))

Test(braid_dgram_hdr_decode, roundtrip)
{
	struct braid_dgram_hdr hdr;
	struct braid_dgram_view v;

	braid_dgram_hdr_write(&hdr, 47592, 1, 0x0123456789abcdefULL);
	cr_assert_eq(braid_dgram_hdr_decode(&hdr, sizeof(hdr) + 100, &v), 0);
	cr_assert_eq(v.src_port, 47592);
	cr_assert(v.has_data);
	cr_assert_eq(v.cq_data, 0x0123456789abcdefULL);
	cr_assert_eq(v.hdr_len, 16);
}

Test(braid_dgram_hdr_write, network_byte_order)
{
	struct braid_dgram_hdr hdr;
	const uint8_t *b = (const uint8_t *)&hdr;

	braid_dgram_hdr_write(&hdr, 0x1234, 0, 99);
	cr_assert_eq(b[0], BRAID_HDR_MAGIC);
	cr_assert_eq(b[1], BRAID_PROTO_VERSION);
	cr_assert_eq(b[2], BRAID_PKT_DGRAM);
	cr_assert_eq(b[3], 0);
	cr_assert_eq(b[4], 0x12);
	cr_assert_eq(b[5], 0x34);
	cr_assert_eq(b[6], 0);
	cr_assert_eq(b[7], 16);
	for (int i = 8; i < 16; i++)
		cr_assert_eq(b[i], 0, "cq_data is zero without FI_REMOTE_CQ_DATA");
}

Test(braid_dgram_hdr_decode, malformed)
{
	struct braid_dgram_hdr good, bad;
	struct braid_dgram_view v;

	braid_dgram_hdr_write(&good, 1, 0, 0);
	cr_assert_eq(braid_dgram_hdr_decode(&good, 0, &v), DROP(BRAID_DROP_SHORT));
	cr_assert_eq(braid_dgram_hdr_decode(&good, 7, &v), DROP(BRAID_DROP_SHORT));
	cr_assert_eq(braid_dgram_hdr_decode(&good, 15, &v), DROP(BRAID_DROP_SHORT));
	bad = good;
	bad.base.magic = 0;
	cr_assert_eq(braid_dgram_hdr_decode(&bad, 16, &v), DROP(BRAID_DROP_MAGIC));
	bad = good;
	bad.base.version = 3;
	cr_assert_eq(braid_dgram_hdr_decode(&bad, 16, &v), DROP(BRAID_DROP_VERSION));
	/* version 2 is a keyed endpoint's (§2.4): another job's datagram to a keyless one */
	bad = good;
	bad.base.version = 2;
	cr_assert_eq(braid_dgram_hdr_decode(&bad, 16, &v), DROP(BRAID_DROP_AUTH));
	bad = good;
	bad.base.type = 77;
	cr_assert_eq(braid_dgram_hdr_decode(&bad, 16, &v), DROP(BRAID_DROP_TYPE));
	bad = good;
	bad.base.hdr_len = htobe16(24);
	cr_assert_eq(braid_dgram_hdr_decode(&bad, 64, &v), DROP(BRAID_DROP_HDR_LEN));
	bad = good;
	bad.base.flags = 0x80;
	cr_assert_eq(braid_dgram_hdr_decode(&bad, 16, &v), DROP(BRAID_DROP_FLAGS));
	cr_assert_str_eq(braid_drop_reason_str(BRAID_DROP_MAGIC), "bad_magic");
}

Test(braid_dgram_hdr_decode, random_bytes_never_crash)
{
	unsigned char buf[32];
	struct braid_dgram_view v;
	unsigned seed = 1;
	int i, ok = 0;

	for (i = 0; i < 100000; i++) {
		for (size_t j = 0; j < sizeof(buf); j++)
			buf[j] = (unsigned char)(rand_r(&seed) >> 7);
		if (i % 3 == 0) {
			buf[0] = BRAID_HDR_MAGIC;
			buf[1] = BRAID_PROTO_VERSION;
			buf[2] = BRAID_PKT_DGRAM;
		}
		if (!braid_dgram_hdr_decode(buf, (size_t)(rand_r(&seed) % 33), &v)) {
			ok++;
			cr_assert_eq(v.hdr_len, 16);
		}
	}
	cr_assert_lt(ok, 100000, "random bytes are mostly rejected");
}

/* ---- CM (§6.2) ---- */

static size_t cm_build(uint8_t *buf, const struct braid_cm_view *v, const char *pdata)
{
	braid_cm_write((struct braid_cm_hdr *)buf, 4242, v);
	memcpy(buf + sizeof(struct braid_cm_hdr), pdata, v->pdata_len);
	return sizeof(struct braid_cm_hdr) + v->pdata_len;
}

Test(braid_cm_decode, roundtrip_every_kind)
{
	uint8_t buf[sizeof(struct braid_cm_hdr) + BRAID_CM_DATA_MAX];
	struct braid_cm_view v = { .status = 0, .conn_id = 0x0102030405060708ULL, .qpn = 0xabcdef,
				   .psn = 0x123456, .mtu = 4096, .rc_port = 4791, .pdata_len = 5 };
	struct braid_cm_view d;
	int k;

	for (k = BRAID_CM_REQ; k < BRAID_CM_KIND_MAX; k++) {
		size_t len;

		v.kind = (uint8_t)k;
		len = cm_build(buf, &v, "hello");
		cr_assert_eq(len, 45);
		cr_assert_eq(braid_cm_decode(buf, len, &d), 0, "kind %d", k);
		cr_assert_eq(d.kind, k);
		cr_assert_eq(d.src_port, 4242);
		cr_assert_eq(d.conn_id, v.conn_id);
		cr_assert_eq(d.qpn, 0xabcdef);
		cr_assert_eq(d.psn, 0x123456);
		cr_assert_eq(d.mtu, 4096);
		cr_assert_eq(d.rc_port, 4791);
		cr_assert_eq(d.pdata_len, 5);
		cr_assert_arr_eq(d.pdata, "hello", 5);
	}
	/* network byte order on the wire */
	cr_assert_eq(buf[2], BRAID_PKT_CM);
	cr_assert_eq(buf[8], BRAID_CM_DREP);
	cr_assert_eq(buf[16], 0x01);
	cr_assert_eq(buf[23], 0x08);
	cr_assert_eq(buf[25], 0xab);
	cr_assert_eq(buf[27], 0xef);
	cr_assert_eq(buf[36], 4791 >> 8);
}

Test(braid_cm_decode, rejects_malformed)
{
	uint8_t buf[sizeof(struct braid_cm_hdr) + BRAID_CM_DATA_MAX + 8];
	struct braid_cm_view v = { .kind = BRAID_CM_REQ, .conn_id = 7, .qpn = 1, .psn = 2,
				   .mtu = 1024, .rc_port = 4791, .pdata_len = 3 };
	struct braid_cm_view d;
	size_t len = cm_build(buf, &v, "abc"), i;

	cr_assert_eq(braid_cm_decode(buf, len, &d), 0);
	/* truncated anywhere, or a byte too long */
	for (i = 0; i < len; i++)
		cr_assert_lt(braid_cm_decode(buf, i, &d), 0, "length %zu", i);
	cr_assert_lt(braid_cm_decode(buf, len + 1, &d), 0);
	/* unknown kinds */
	buf[8] = 0;
	cr_assert_lt(braid_cm_decode(buf, len, &d), 0);
	buf[8] = BRAID_CM_KIND_MAX;
	cr_assert_lt(braid_cm_decode(buf, len, &d), 0);
	/* private data over the limit */
	v.pdata_len = BRAID_CM_DATA_MAX + 1;
	memset(buf, 0, sizeof(buf));
	braid_cm_write((struct braid_cm_hdr *)buf, 1, &v);
	cr_assert_lt(braid_cm_decode(buf, sizeof(struct braid_cm_hdr) + v.pdata_len, &d), 0);
	/* REQ/REP need an IB MTU and an RC port; a 25-bit QPN is refused */
	v.pdata_len = 0;
	v.mtu = 1500;
	braid_cm_write((struct braid_cm_hdr *)buf, 1, &v);
	cr_assert_lt(braid_cm_decode(buf, sizeof(struct braid_cm_hdr), &d), 0);
	v.kind = BRAID_CM_RTU;	/* RTU carries no MTU */
	braid_cm_write((struct braid_cm_hdr *)buf, 1, &v);
	cr_assert_eq(braid_cm_decode(buf, sizeof(struct braid_cm_hdr), &d), 0);
	v.kind = BRAID_CM_REP;
	v.mtu = 2048;
	v.rc_port = 0;
	braid_cm_write((struct braid_cm_hdr *)buf, 1, &v);
	cr_assert_lt(braid_cm_decode(buf, sizeof(struct braid_cm_hdr), &d), 0);
	v.rc_port = 9;
	v.qpn = 0x1000000;
	braid_cm_write((struct braid_cm_hdr *)buf, 1, &v);
	cr_assert_lt(braid_cm_decode(buf, sizeof(struct braid_cm_hdr), &d), 0);
	/* an RD packet is not a CM packet */
	braid_rd_cts_write((struct braid_rd_cts_hdr *)buf, 1, 1, 1, 1);
	cr_assert_lt(braid_cm_decode(buf, sizeof(struct braid_rd_cts_hdr), &d), 0);
}

/* RD_RMA (§4.7): every field round-trips, in network byte order after the RD_DATA part */
Test(braid_rd_data_decode, rma_roundtrip)
{
	uint8_t buf[80 + 16];
	struct braid_rd_data_view v = {
		.src_port = 7000, .flags = BRAID_RD_F_ACK | BRAID_RD_F_CQ_DATA, .src_epoch = 5,
		.dst_epoch = 6, .psn = 77, .ack_psn = 3, .msg_id = 9, .offset = 0, .msg_len = 16,
		.tx_time = 123, .cq_data = 0xdeadbeef,
		.rma = { .op = BRAID_RMA_WRITE, .rkey = 0x0102030405060708ULL, .raddr = 0x1122334455667788ULL },
	}, d;

	cr_assert_eq(braid_rd_data_write(buf, &v), 80);
	memset(buf + 80, 0xab, 16);
	cr_assert_eq(buf[2], BRAID_PKT_RD_RMA);
	cr_assert_eq(buf[56], BRAID_RMA_WRITE);
	cr_assert_eq(buf[64], 0x01, "rkey big-endian");
	cr_assert_eq(buf[79], 0x88, "raddr big-endian");
	cr_assert_eq(braid_rd_data_decode(buf, sizeof(buf), &d), 0);
	cr_assert_eq(d.rma.op, BRAID_RMA_WRITE);
	cr_assert_eq(d.rma.rkey, v.rma.rkey);
	cr_assert_eq(d.rma.raddr, v.rma.raddr);
	cr_assert_eq(d.cq_data, v.cq_data);
	cr_assert_eq(d.payload_len, 16);
	cr_assert_eq(d.payload, buf + 80);
	/* an RD_DATA packet decodes with no RMA fields */
	v.rma.op = 0;
	cr_assert_eq(braid_rd_data_write(buf, &v), 56);
	cr_assert_eq(braid_rd_data_decode(buf, 56 + 16, &d), 0);
	cr_assert_eq(d.rma.op, 0);
	cr_assert_eq(d.rma.rkey, 0);
}

/* RD_RMA fields that disagree with the operation are dropped */
Test(braid_rd_data_decode, rma_rejects_malformed)
{
	uint8_t buf[80];
	struct braid_rd_data_view d, good = {
		.src_port = 7000, .src_epoch = 5, .psn = 1, .msg_id = 1,
		.rma = { .op = BRAID_RMA_READ_REQ, .ref = 100, .rkey = 1, .raddr = 2 },
	}, v;

	cr_assert_eq(braid_rd_data_write(buf, &good), 80);
	cr_assert_eq(braid_rd_data_decode(buf, 80, &d), 0);
	cr_assert_eq(d.rma.ref, 100);
	/* unknown op */
	buf[56] = 0;
	cr_assert_lt(braid_rd_data_decode(buf, 80, &d), 0);
	buf[56] = BRAID_RMA_OP_MAX;
	cr_assert_lt(braid_rd_data_decode(buf, 80, &d), 0);
	/* a read request carries no payload */
	v = good;
	v.msg_len = 8;
	braid_rd_data_write(buf, &v);
	cr_assert_lt(braid_rd_data_decode(buf, 80, &d), 0);
	/* CQ data only on writes; TAGGED never */
	v = good;
	v.flags = BRAID_RD_F_CQ_DATA;
	braid_rd_data_write(buf, &v);
	cr_assert_lt(braid_rd_data_decode(buf, 80, &d), 0);
	v.flags = BRAID_RD_F_TAGGED;
	braid_rd_data_write(buf, &v);
	cr_assert_lt(braid_rd_data_decode(buf, 80, &d), 0);
	/* a status on a request, an unknown status on a RESP, a key on a RESP */
	v = good;
	v.rma.status = BRAID_RMA_ACCESS;
	braid_rd_data_write(buf, &v);
	cr_assert_lt(braid_rd_data_decode(buf, 80, &d), 0);
	v.rma = (struct braid_rma_fields){ .op = BRAID_RMA_RESP, .status = BRAID_RMA_STATUS_MAX };
	braid_rd_data_write(buf, &v);
	cr_assert_lt(braid_rd_data_decode(buf, 80, &d), 0);
	v.rma = (struct braid_rma_fields){ .op = BRAID_RMA_RESP, .rkey = 5 };
	braid_rd_data_write(buf, &v);
	cr_assert_lt(braid_rd_data_decode(buf, 80, &d), 0);
	/* atomic op fields on a write */
	v.rma = (struct braid_rma_fields){ .op = BRAID_RMA_WRITE, .aop = 3 };
	braid_rd_data_write(buf, &v);
	cr_assert_lt(braid_rd_data_decode(buf, 80, &d), 0);
	/* the RD_DATA length rule: payload beyond msg_len */
	v.rma = (struct braid_rma_fields){ .op = BRAID_RMA_RESP };
	v.msg_len = 0;
	braid_rd_data_write(buf, &v);
	cr_assert_eq(braid_rd_data_decode(buf, 80, &d), 0);
	/* a truncated RD_RMA header */
	cr_assert_lt(braid_rd_data_decode(buf, 79, &d), 0);
}

/* ---- RD_BUNDLE (§4.8) ---- */

#define BPORT 7000

/* Append one record (2-byte big-endian length, then the packet) to the bundle of @len bytes. */
static size_t rec_add(uint8_t *b, size_t len, const void *pkt, size_t pkt_len)
{
	b[len] = (uint8_t)(pkt_len >> 8);
	b[len + 1] = (uint8_t)pkt_len;
	memcpy(b + len + 2, pkt, pkt_len);
	return len + 2 + pkt_len;
}

/* An RD_DATA packet of message @id from BPORT, @plen bytes of payload. */
static size_t b_data(uint8_t *buf, uint32_t id, size_t plen)
{
	struct braid_rd_data_view v = { .src_port = BPORT, .flags = BRAID_RD_F_ACK, .src_epoch = 5,
					.dst_epoch = 6, .psn = 100 + id, .ack_psn = 9, .msg_id = id,
					.msg_len = (uint32_t)plen, .tx_time = 1 };
	size_t n = braid_rd_data_write(buf, &v);

	memset(buf + n, (int)id, plen);
	return n + plen;
}

static size_t b_ack(uint8_t *buf, uint32_t cum)
{
	struct braid_rd_ack_view v = { .src_port = BPORT, .src_epoch = 5, .dst_epoch = 6,
				       .cum_psn = cum, .echo_psn = cum - 1, .rwnd = 64 };

	braid_rd_ack_write((struct braid_rd_ack_hdr *)buf, &v);
	return sizeof(struct braid_rd_ack_hdr);
}

/* A bundle of one data record: the smallest well-formed bundle, and the records iterate back intact */
Test(braid_rd_bundle_check, one_record)
{
	uint8_t b[512], pkt[256];
	const uint8_t *rec;
	size_t plen = b_data(pkt, 1, 10), len, off = BRAID_RD_BUNDLE_HDR, rec_len;
	struct braid_rd_data_view d;

	braid_rd_bundle_hdr_write(b, BPORT);
	len = rec_add(b, BRAID_RD_BUNDLE_HDR, pkt, plen);
	/* the common header on the wire: magic, version, type 7, no flags, port and hdr_len big-endian */
	cr_assert_eq(b[0], BRAID_HDR_MAGIC);
	cr_assert_eq(b[1], BRAID_PROTO_VERSION);
	cr_assert_eq(b[2], BRAID_PKT_RD_BUNDLE);
	cr_assert_eq(b[3], 0);
	cr_assert_eq(b[4], BPORT >> 8);
	cr_assert_eq(b[5], BPORT & 0xff);
	cr_assert_eq(b[6], 0);
	cr_assert_eq(b[7], 8);
	cr_assert_eq(b[8], 0, "record length big-endian");
	cr_assert_eq(b[9], plen);
	cr_assert_eq(braid_rd_bundle_check(b, len), 1);
	cr_assert(braid_rd_bundle_next(b, len, &off, &rec, &rec_len));
	cr_assert_eq(rec_len, plen);
	cr_assert_eq(rec, b + 10);
	cr_assert_eq(braid_rd_data_decode(rec, rec_len, &d), 0);
	cr_assert_eq(d.msg_id, 1);
	cr_assert_eq(d.payload_len, 10);
	cr_assert_not(braid_rd_bundle_next(b, len, &off, &rec, &rec_len), "one record only");
}

/* RD_DATA and RD_ACK records mixed (and CTS, RMA): counted, and each decodes as the packet it was */
Test(braid_rd_bundle_check, mixed_records)
{
	uint8_t b[4096], pkt[1024];
	struct braid_rd_data_view dv, rma = { .src_port = BPORT, .src_epoch = 5, .dst_epoch = 6,
					      .psn = 7, .msg_id = 7,
					      .rma = { .op = BRAID_RMA_READ_REQ, .ref = 64, .rkey = 3 } };
	struct braid_rd_ack_view av;
	struct braid_rd_cts_hdr cts;
	const uint8_t *rec;
	size_t len = BRAID_RD_BUNDLE_HDR, off = BRAID_RD_BUNDLE_HDR, rec_len, n;
	uint16_t port;
	uint32_t se, de, id;
	int k = 0;

	braid_rd_bundle_hdr_write(b, BPORT);
	len = rec_add(b, len, pkt, b_ack(pkt, 40));
	len = rec_add(b, len, pkt, b_data(pkt, 1, 0));
	len = rec_add(b, len, pkt, b_data(pkt, 2, 300));
	len = rec_add(b, len, pkt, b_ack(pkt, 41));
	len = rec_add(b, len, pkt, b_data(pkt, 3, 8));
	braid_rd_cts_write(&cts, BPORT, 5, 6, 44);
	len = rec_add(b, len, &cts, sizeof(cts));
	n = braid_rd_data_write(pkt, &rma);
	len = rec_add(b, len, pkt, n);
	cr_assert_eq(braid_rd_bundle_check(b, len), 7);

	while (braid_rd_bundle_next(b, len, &off, &rec, &rec_len)) {
		switch (k++) {
		case 0:
		case 3:
			cr_assert_eq(braid_rd_ack_decode(rec, rec_len, &av), 0);
			cr_assert_eq(av.cum_psn, k == 1 ? 40 : 41);
			break;
		case 1:
		case 2:
		case 4:
			cr_assert_eq(braid_rd_data_decode(rec, rec_len, &dv), 0);
			cr_assert_eq(dv.msg_id, k == 2 ? 1 : k == 3 ? 2 : 3);
			cr_assert_eq(dv.payload_len, k == 2 ? 0 : k == 3 ? 300 : 8);
			for (size_t i = 0; i < dv.payload_len; i++)
				cr_assert_eq(dv.payload[i], dv.msg_id, "record %d byte %zu", k, i);
			break;
		case 5:
			cr_assert_eq(braid_rd_cts_decode(rec, rec_len, &port, &se, &de, &id), 0);
			cr_assert_eq(id, 44);
			break;
		case 6:
			cr_assert_eq(braid_rd_data_decode(rec, rec_len, &dv), 0);
			cr_assert_eq(dv.rma.op, BRAID_RMA_READ_REQ);
			cr_assert_eq(dv.rma.ref, 64);
			break;
		}
	}
	cr_assert_eq(k, 7);
	cr_assert_eq(off, len, "the records end where the bundle does");
}

/* BRAID_RD_BUNDLE_MAX records are taken; one more is not */
Test(braid_rd_bundle_check, at_most_64_records)
{
	uint8_t b[8192], pkt[128];
	size_t len = BRAID_RD_BUNDLE_HDR;
	int i;

	braid_rd_bundle_hdr_write(b, BPORT);
	for (i = 0; i < BRAID_RD_BUNDLE_MAX; i++)
		len = rec_add(b, len, pkt, i % 2 ? b_ack(pkt, (uint32_t)i) : b_data(pkt, (uint32_t)i, 4));
	cr_assert_eq(braid_rd_bundle_check(b, len), BRAID_RD_BUNDLE_MAX);
	len = rec_add(b, len, pkt, b_data(pkt, 99, 4));
	cr_assert_eq(braid_rd_bundle_check(b, len), DROP(BRAID_DROP_BUNDLE), "65 records");
}

/* Every framing fault is a bad bundle, whatever the records before it */
Test(braid_rd_bundle_check, rejects_bad_framing)
{
	uint8_t good[2048], b[2048], pkt[1024];
	struct braid_dgram_hdr dg;
	struct braid_cm_hdr cm;
	struct braid_cm_view cv = { .kind = BRAID_CM_RTU, .conn_id = 1 };
	size_t glen = BRAID_RD_BUNDLE_HDR, len, dlen;

	braid_rd_bundle_hdr_write(good, BPORT);
	glen = rec_add(good, glen, pkt, b_ack(pkt, 3));
	dlen = b_data(pkt, 1, 20);
	glen = rec_add(good, glen, pkt, dlen);
	cr_assert_eq(braid_rd_bundle_check(good, glen), 2);

	/* no record at all */
	cr_assert_eq(braid_rd_bundle_check(good, BRAID_RD_BUNDLE_HDR), DROP(BRAID_DROP_BUNDLE));
	/* a truncated last record: one byte short, or only part of its length field */
	cr_assert_eq(braid_rd_bundle_check(good, glen - 1), DROP(BRAID_DROP_BUNDLE));
	cr_assert_eq(braid_rd_bundle_check(good, glen - dlen), DROP(BRAID_DROP_BUNDLE),
		     "a length field and no bytes");
	cr_assert_eq(braid_rd_bundle_check(good, glen - dlen - 1), DROP(BRAID_DROP_BUNDLE),
		     "half a length field");
	/* one byte of trailing garbage */
	memcpy(b, good, glen);
	b[glen] = 0;
	cr_assert_eq(braid_rd_bundle_check(b, glen + 1), DROP(BRAID_DROP_BUNDLE));
	/* a record length pointing past the end */
	memcpy(b, good, glen);
	b[BRAID_RD_BUNDLE_HDR + 1] += 1;
	cr_assert_eq(braid_rd_bundle_check(b, glen), DROP(BRAID_DROP_BUNDLE));
	b[BRAID_RD_BUNDLE_HDR] = 0xff;
	cr_assert_eq(braid_rd_bundle_check(b, glen), DROP(BRAID_DROP_BUNDLE));
	/* records shorter than a common header: 0 and 7 bytes */
	for (size_t short_len = 0; short_len < 8; short_len += 7) {
		len = rec_add(b, rec_add(b, BRAID_RD_BUNDLE_HDR, pkt, b_ack(pkt, 3)), pkt, short_len);
		cr_assert_eq(braid_rd_bundle_check(b, len), DROP(BRAID_DROP_BUNDLE), "%zu-byte record",
			     short_len);
	}
	/* a bundle inside a bundle */
	len = rec_add(b, BRAID_RD_BUNDLE_HDR, pkt, b_ack(pkt, 3));
	len = rec_add(b, len, good, glen);
	cr_assert_eq(braid_rd_bundle_check(b, len), DROP(BRAID_DROP_BUNDLE), "nested bundle");
	/* a DGRAM and a CM packet are not RD packets */
	braid_dgram_hdr_write(&dg, BPORT, 0, 0);
	len = rec_add(b, BRAID_RD_BUNDLE_HDR, pkt, b_ack(pkt, 3));
	len = rec_add(b, len, &dg, sizeof(dg));
	cr_assert_eq(braid_rd_bundle_check(b, len), DROP(BRAID_DROP_BUNDLE), "DGRAM record");
	braid_cm_write(&cm, BPORT, &cv);
	len = rec_add(b, BRAID_RD_BUNDLE_HDR, &cm, sizeof(cm));
	cr_assert_eq(braid_rd_bundle_check(b, len), DROP(BRAID_DROP_BUNDLE), "CM record");
	/* nor is an unknown type */
	len = rec_add(b, BRAID_RD_BUNDLE_HDR, pkt, b_ack(pkt, 3));
	b[BRAID_RD_BUNDLE_HDR + 2 + 2] = 200;
	cr_assert_eq(braid_rd_bundle_check(b, len), DROP(BRAID_DROP_BUNDLE), "type 200 record");
	/* a record from another port than the bundle's: either byte differs */
	memcpy(b, good, glen);
	b[BRAID_RD_BUNDLE_HDR + 2 + 4] ^= 0x01;
	cr_assert_eq(braid_rd_bundle_check(b, glen), DROP(BRAID_DROP_BUNDLE), "high byte");
	memcpy(b, good, glen);
	b[BRAID_RD_BUNDLE_HDR + 2 + sizeof(struct braid_rd_ack_hdr) + 2 + 5] ^= 0x80;
	cr_assert_eq(braid_rd_bundle_check(b, glen), DROP(BRAID_DROP_BUNDLE), "low byte, 2nd record");
	memcpy(b, good, glen);
	braid_rd_bundle_hdr_write(b, BPORT + 1);
	cr_assert_eq(braid_rd_bundle_check(b, glen), DROP(BRAID_DROP_BUNDLE), "bundle's own port");
}

/* The common header rules (§2.3) come first; a lone RD packet is not a bundle */
Test(braid_rd_bundle_check, common_header_checks)
{
	uint8_t good[512], b[512], pkt[256];
	size_t glen, dlen = b_data(pkt, 1, 4);

	braid_rd_bundle_hdr_write(good, BPORT);
	glen = rec_add(good, BRAID_RD_BUNDLE_HDR, pkt, dlen);
	cr_assert_eq(braid_rd_bundle_check(good, glen), 1);

	cr_assert_eq(braid_rd_bundle_check(good, 0), DROP(BRAID_DROP_SHORT));
	cr_assert_eq(braid_rd_bundle_check(good, 7), DROP(BRAID_DROP_SHORT));
	memcpy(b, good, glen);
	b[0] = 0xbe;
	cr_assert_eq(braid_rd_bundle_check(b, glen), DROP(BRAID_DROP_MAGIC));
	memcpy(b, good, glen);
	b[1] = 3;
	cr_assert_eq(braid_rd_bundle_check(b, glen), DROP(BRAID_DROP_VERSION));
	b[1] = 2;
	cr_assert_eq(braid_rd_bundle_check(b, glen), DROP(BRAID_DROP_AUTH), "a keyed bundle");
	memcpy(b, good, glen);
	b[3] = 0x01;
	cr_assert_eq(braid_rd_bundle_check(b, glen), DROP(BRAID_DROP_FLAGS), "a bundle has no flags");
	memcpy(b, good, glen);
	b[7] = 10;
	cr_assert_eq(braid_rd_bundle_check(b, glen), DROP(BRAID_DROP_HDR_LEN));
	memcpy(b, good, glen);
	b[2] = 9;
	cr_assert_eq(braid_rd_bundle_check(b, glen), DROP(BRAID_DROP_TYPE), "type 9 is not spoken");
	cr_assert_eq(braid_rd_bundle_check(pkt, dlen), DROP(BRAID_DROP_TYPE), "an RD_DATA alone");
	cr_assert_str_eq(braid_drop_reason_str(BRAID_DROP_BUNDLE), "bad_bundle");
}

/* Random records behind a bundle header: never a crash, never a record outside the bytes */
Test(braid_rd_bundle_check, random_bytes_never_escape)
{
	uint8_t buf[300];
	unsigned seed = 7;
	int i, ok = 0;

	for (i = 0; i < 100000; i++) {
		size_t len = (size_t)rand_r(&seed) % sizeof(buf), off = BRAID_RD_BUNDLE_HDR, rl, tot = 0;
		const uint8_t *rec;
		int n;

		for (size_t j = 0; j < len; j++)
			buf[j] = (uint8_t)(rand_r(&seed) >> 7);
		if (len >= BRAID_RD_BUNDLE_HDR)
			braid_rd_bundle_hdr_write(buf, (uint16_t)(buf[4] << 8 | buf[5]));
		/* short records of the right port and type, so that some bundles pass */
		if (i % 2 && len > 12) {
			buf[8] = 0;
			buf[9] = (uint8_t)(len - 10);
			buf[10 + 2] = BRAID_PKT_RD_ACK;
			buf[10 + 4] = buf[4];
			buf[10 + 5] = buf[5];
		}
		n = braid_rd_bundle_check(buf, len);
		if (n <= 0)
			continue;
		ok++;
		while (braid_rd_bundle_next(buf, len, &off, &rec, &rl)) {
			cr_assert_geq(rl, 8);
			cr_assert_leq(rec + rl, buf + len, "a record of a checked bundle lies inside it");
			tot++;
		}
		cr_assert_eq(tot, (size_t)n);
	}
	cr_assert_gt(ok, 0, "some random bundles were well framed");
}

/* RD_CHALLENGE (§4.9): the layout of RD_CTS, its own type, two flags. */
Test(braid_rd_chal, round_trip_and_checks)
{
	struct braid_rd_chal_view v = { .src_port = 4242, .flags = BRAID_RD_CHAL_F_RESPONSE,
					.src_epoch = 7, .dst_epoch = 9, .cookie = 0xdeadbeef }, w;
	struct braid_rd_cts_hdr h;
	uint8_t b[32];
	uint16_t port;
	uint32_t se, de, id;

	braid_rd_chal_write(&h, &v);
	memcpy(b, &h, sizeof(h));
	cr_assert_eq(b[2], BRAID_PKT_RD_CHALLENGE);
	cr_assert_eq(braid_base_hdr_check(b, sizeof(h)), BRAID_PKT_RD_CHALLENGE);
	cr_assert_eq(braid_rd_chal_decode(b, sizeof(h), &w), 0);
	cr_assert_eq(w.src_port, 4242);
	cr_assert_eq(w.flags, BRAID_RD_CHAL_F_RESPONSE);
	cr_assert_eq(w.src_epoch, 7);
	cr_assert_eq(w.dst_epoch, 9);
	cr_assert_eq(w.cookie, 0xdeadbeef);
	cr_assert_eq(b[16], 0xde, "the cookie in network order");
	cr_assert_eq(braid_rd_cts_decode(b, sizeof(h), &port, &se, &de, &id), DROP(BRAID_DROP_TYPE),
		     "not an RD_CTS");
	cr_assert_eq(braid_rd_chal_decode(b, sizeof(h) - 1, &w), DROP(BRAID_DROP_SHORT));
	cr_assert_eq(braid_rd_chal_decode(b, sizeof(h) + 1, &w), DROP(BRAID_DROP_BAD_LEN));
	b[3] = BRAID_RD_CHAL_F_FORGET | BRAID_RD_CHAL_F_RESPONSE;
	cr_assert_eq(braid_rd_chal_decode(b, sizeof(h), &w), 0, "FORGET, and its answer");
	cr_assert_eq(w.flags, BRAID_RD_CHAL_F_FORGET | BRAID_RD_CHAL_F_RESPONSE);
	b[3] = 0x04;
	cr_assert_eq(braid_rd_chal_decode(b, sizeof(h), &w), DROP(BRAID_DROP_FLAGS));
	/* the last word: a FORGET answer's own cookie, else 0 whatever the view says */
	v.confirm = 0x01020304;
	braid_rd_chal_write(&h, &v);
	cr_assert_eq(braid_rd_chal_decode(&h, sizeof(h), &w), 0);
	cr_assert_eq(w.confirm, 0, "not written without FORGET");
	v.flags = BRAID_RD_CHAL_F_FORGET | BRAID_RD_CHAL_F_RESPONSE;
	braid_rd_chal_write(&h, &v);
	cr_assert_eq(braid_rd_chal_decode(&h, sizeof(h), &w), 0);
	cr_assert_eq(w.confirm, 0x01020304);
	cr_assert_eq(((uint8_t *)&h)[20], 0x01, "in network order");
	v.src_epoch = 0;
	braid_rd_chal_write(&h, &v);
	cr_assert_eq(braid_rd_chal_decode(&h, sizeof(h), &w), DROP(BRAID_DROP_STALE_EPOCH));
	cr_assert_str_eq(braid_drop_reason_str(BRAID_DROP_UNVERIFIED), "unverified");
	cr_assert_str_eq(braid_drop_reason_str(BRAID_DROP_PEER_CAP), "peer_cap");
	/* never inside a bundle */
	{
		uint8_t bun[64];
		size_t len = BRAID_RD_BUNDLE_HDR;

		v.src_epoch = 7;
		braid_rd_chal_write(&h, &v);
		braid_rd_bundle_hdr_write(bun, 4242);
		bun[len] = 0;
		bun[len + 1] = sizeof(h);
		memcpy(bun + len + 2, &h, sizeof(h));
		len += 2 + sizeof(h);
		cr_assert_eq(braid_rd_bundle_check(bun, len), DROP(BRAID_DROP_BUNDLE));
	}
}
