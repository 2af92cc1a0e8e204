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
	bad.base.version = 2;
	cr_assert_eq(braid_dgram_hdr_decode(&bad, 16, &v), DROP(BRAID_DROP_VERSION));
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
