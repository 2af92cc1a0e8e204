/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_dgram.c: libFuzzer target for the wire header decoders
 * (core/braid_hdr.c): the input is one datagram, given to
 * braid_base_hdr_check, braid_dgram_hdr_decode, braid_rd_bundle_check (and
 * each record of a good bundle to the RD decoders, as a packet of its own)
 * and the RD and CM decoders. Nothing may crash, read out of bounds or hit
 * UB; what a decoder accepts must agree with the other checks and encode
 * back to the same header bytes (reserved fields aside).
 */
#include "braid_hdr.h"
#include "fuzz_common.h"

/* a reserved field, ignored on receive: the received value where the encoder writes 0 */
#define KEEP(h, p, field)	\
	memcpy(&(h).field, (p) + offsetof(__typeof__(h), field), sizeof((h).field))

/* the base header's verdict of a packet some decoder took: its type, and every byte of it there */
static void agrees(const uint8_t *p, size_t len, int type, size_t hlen)
{
	FUZZ_CHECK(braid_base_hdr_check(p, len) == type);
	FUZZ_CHECK(hlen <= len && ((size_t)p[6] << 8 | p[7]) == hlen);
}

/* the RD packets a bundle carries: decoded, checked and encoded back */
static void rd_decoders(const uint8_t *p, size_t len)
{
	uint8_t enc[BRAID_RD_MAX_HDR];
	struct braid_rd_data_view dv;
	struct braid_rd_ack_view av;
	uint32_t se, de, id;
	uint16_t port;

	if (braid_rd_data_decode(p, len, &dv) == 0) {
		size_t hlen = braid_rd_data_write(enc, &dv);

		agrees(p, len, p[2], hlen);
		FUZZ_CHECK(dv.payload == p + hlen && dv.payload_len == len - hlen);
		FUZZ_CHECK((uint64_t)dv.offset + dv.payload_len <= dv.msg_len && dv.src_epoch);
		FUZZ_CHECK(memcmp(enc, p, hlen) == 0);
	}
	if (braid_rd_ack_decode(p, len, &av) == 0) {
		struct braid_rd_ack_hdr h;

		agrees(p, len, BRAID_PKT_RD_ACK, sizeof(h));
		braid_rd_ack_write(&h, &av);	/* every field read and written back (hold_us too) */
		FUZZ_CHECK(len == sizeof(h) && memcmp(&h, p, sizeof(h)) == 0);
	}
	if (braid_rd_cts_decode(p, len, &port, &se, &de, &id) == 0) {
		struct braid_rd_cts_hdr h;

		agrees(p, len, BRAID_PKT_RD_CTS, sizeof(h));
		braid_rd_cts_write(&h, port, se, de, id);
		KEEP(h, p, reserved);
		FUZZ_CHECK(len == sizeof(h) && memcmp(&h, p, sizeof(h)) == 0);
	}
	{
		struct braid_rd_chal_view cv;

		if (braid_rd_chal_decode(p, len, &cv) == 0) {
			struct braid_rd_cts_hdr h;

			agrees(p, len, BRAID_PKT_RD_CHALLENGE, sizeof(h));
			FUZZ_CHECK(!(cv.flags & ~BRAID_RD_CHAL_FLAGS) && cv.src_epoch && cv.dst_epoch);
			braid_rd_chal_write(&h, &cv);
			KEEP(h, p, reserved);
			FUZZ_CHECK(len == sizeof(h) && memcmp(&h, p, sizeof(h)) == 0);
		}
	}
}

static void bundle(const uint8_t *p, size_t len)
{
	const uint8_t *rec;
	size_t off = BRAID_RD_BUNDLE_HDR, rec_len;
	int n = braid_rd_bundle_check(p, len), seen = 0;

	if (n < 0)
		return;
	agrees(p, len, BRAID_PKT_RD_BUNDLE, BRAID_RD_BUNDLE_HDR);
	FUZZ_CHECK(n >= 1 && n <= BRAID_RD_BUNDLE_MAX);
	while (braid_rd_bundle_next(p, len, &off, &rec, &rec_len)) {
		uint8_t *r;

		FUZZ_CHECK(off <= len && rec_len >= sizeof(struct braid_base_hdr));
		r = fuzz_dup(rec, rec_len);
		rd_decoders(r, rec_len);
		free(r);
		seen++;
	}
	FUZZ_CHECK(seen == n && off == len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *p = fuzz_dup(data, size);
	struct braid_dgram_view dg;
	struct braid_cm_view cm;
	int type = braid_base_hdr_check(p, size);

	FUZZ_CHECK(type < 0 ? -type - 1 < BRAID_DROP_MAX : type == p[2]);
	if (braid_dgram_hdr_decode(p, size, &dg) == 0) {
		struct braid_dgram_hdr h;

		agrees(p, size, BRAID_PKT_DGRAM, dg.hdr_len);
		FUZZ_CHECK(dg.hdr_len == sizeof(h));
		FUZZ_CHECK(dg.has_data == (p[3] & BRAID_DGRAM_F_CQ_DATA));
		/* the CQ data field is 0 without the flag on send and ignored on receive */
		braid_dgram_hdr_write(&h, dg.src_port, dg.has_data, dg.cq_data);
		FUZZ_CHECK(memcmp(&h, p, dg.has_data ? sizeof(h) : sizeof(h.base)) == 0);
	}
	bundle(p, size);
	rd_decoders(p, size);
	if (braid_cm_decode(p, size, &cm) == 0) {
		struct braid_cm_hdr h;

		agrees(p, size, BRAID_PKT_CM, sizeof(h));
		FUZZ_CHECK(cm.pdata == p + sizeof(h) && sizeof(h) + cm.pdata_len == size);
		braid_cm_write(&h, cm.src_port, &cm);
		KEEP(h, p, reserved2);
		FUZZ_CHECK(memcmp(&h, p, sizeof(h)) == 0);
	}
	free(p);
	return 0;
}
