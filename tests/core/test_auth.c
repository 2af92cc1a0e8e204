/* SPDX-License-Identifier: BSD-2-Clause */
/* test_auth.c: unit tests of core/braid_auth.c, keyed datagrams (protocol.md §2.4). */
#include <criterion/criterion.h>
#include <string.h>
#include <rdma/fi_errno.h>
#include <sodium.h>

#include "braid_auth.h"
#include "braid_hdr.h"

#define DROP(r) (-((int)(r) + 1))

static void setup(void)
{
	cr_assert_geq(sodium_init(), 0);
}

TestSuite(braid_auth, .init = setup);

static struct braid_auth keyed(const char *key, enum braid_auth_mode mode)
{
	struct braid_auth a;

	cr_assert_eq(braid_auth_init(&a, key, strlen(key), mode), 0);
	return a;
}

/* An RD_DATA packet of @n payload bytes as the engine writes it (version 1), at @pkt. */
static size_t rd_data(uint8_t *pkt, size_t n)
{
	struct braid_rd_data_view v = {
		.src_port = 4000, .flags = BRAID_RD_F_TAGGED, .src_epoch = 7, .psn = 100,
		.msg_id = 3, .msg_len = (uint32_t)n, .tag = 0xfeed,
	};
	size_t h = braid_rd_data_write(pkt, &v);

	for (size_t i = 0; i < n; i++)
		pkt[h + i] = (uint8_t)(i * 13 + 1);
	return h + n;
}

/*
 * Key the version-1 datagram @plain (@len bytes) as a sender does: its first
 * header sealed in a buffer of its own, the rest given as @cuts iovecs; then
 * the keyed datagram laid out whole at @out. Return: its length.
 */
static size_t seal(const struct braid_auth *a, const uint8_t *plain, size_t len, size_t hlen,
		   int cuts, uint8_t *out)
{
	uint8_t hdr[BRAID_AUTH_HDR_MAX], scratch[4096];
	struct iovec rest[8];
	size_t off = hlen, piece = (len - hlen) / (size_t)cuts + 1;
	int n = 0, klen;

	memcpy(hdr, plain, hlen);
	while (off < len) {
		size_t take = len - off < piece ? len - off : piece;

		rest[n].iov_base = (void *)(plain + off);
		rest[n++].iov_len = take;
		off += take;
	}
	klen = braid_auth_seal(a, hdr, rest, n, scratch);
	cr_assert_eq(klen, (int)(hlen + BRAID_AUTH_TAG));
	memcpy(out, hdr, (size_t)klen);
	memcpy(out + klen, plain + hlen, len - hlen);
	return len + BRAID_AUTH_TAG;
}

Test(braid_auth, known_answer)
{
	/* pins the wire format: BLAKE2b-128 key derivation, SipHash-2-4, tag bytes as
	 * crypto_shorthash writes them (computed independently from the two specs) */
	static const uint8_t want[BRAID_AUTH_TAG] = { 0x73, 0xa6, 0x45, 0xc3, 0xbb, 0xbb, 0xae, 0x88 };
	struct braid_auth a = keyed("job-42", BRAID_AUTH_JOB);
	struct braid_dgram_hdr h;
	uint8_t hdr[BRAID_AUTH_HDR_MAX], scratch[64];

	braid_dgram_hdr_write(&h, 0x1234, 1, 0x0102030405060708ULL);
	memcpy(hdr, &h, sizeof(h));
	cr_assert_eq(braid_auth_seal(&a, hdr, NULL, 0, scratch), 24);
	cr_assert_eq(hdr[1], BRAID_PROTO_VERSION_KEYED);
	cr_assert_eq(hdr[6], 0);
	cr_assert_eq(hdr[7], 24, "hdr_len counts the tag");
	cr_assert_eq(memcmp(hdr + 16, want, sizeof(want)), 0, "the tag of the reference datagram");
	cr_assert_eq(a.pkey, 0xec73, "the P_Key the reference key gives");
}

Test(braid_auth, key_sizes)
{
	static const uint8_t big[BRAID_AUTH_KEY_MAX + 1] = { 1 };
	struct braid_auth a;

	cr_assert_eq(braid_auth_init(&a, NULL, 0, BRAID_AUTH_JOB), 0);
	cr_assert_eq(a.mode, BRAID_AUTH_NONE, "size 0: no key");
	cr_assert_eq(a.pkey, 0xffff, "keyless RC keeps the default partition");
	cr_assert_eq(braid_auth_init(&a, big, 1, BRAID_AUTH_JOB), 0);
	cr_assert_eq(a.mode, BRAID_AUTH_JOB);
	cr_assert_eq(braid_auth_init(&a, big, BRAID_AUTH_KEY_MAX, BRAID_AUTH_MAC), 0);
	cr_assert_eq(braid_auth_init(&a, big, BRAID_AUTH_KEY_MAX + 1, BRAID_AUTH_JOB), -FI_EINVAL);
	cr_assert_eq(braid_auth_init(&a, NULL, 8, BRAID_AUTH_JOB), -FI_EINVAL);
	cr_assert_eq(braid_auth_init(&a, big, 8, BRAID_AUTH_NONE), -FI_EINVAL);
	/* a keyed P_Key is a full member of a partition that is neither invalid nor the default */
	for (int i = 0; i < 256; i++) {
		char k[16];

		snprintf(k, sizeof(k), "key%d", i);
		a = keyed(k, BRAID_AUTH_JOB);
		cr_assert(a.pkey & 0x8000);
		cr_assert_neq(a.pkey & 0x7fff, 0);
		cr_assert_neq(a.pkey & 0x7fff, 0x7fff);
	}
}

Test(braid_auth, same)
{
	struct braid_auth none, a = keyed("alpha", BRAID_AUTH_JOB), b = keyed("alpha", BRAID_AUTH_JOB);

	cr_assert_eq(braid_auth_init(&none, NULL, 0, BRAID_AUTH_JOB), 0);
	cr_assert(braid_auth_same(&a, &b));
	cr_assert(braid_auth_same(&none, &none));
	cr_assert_not(braid_auth_same(&a, &none));
	b = keyed("alphb", BRAID_AUTH_JOB);
	cr_assert_not(braid_auth_same(&a, &b));
	b = keyed("alpha", BRAID_AUTH_MAC);
	cr_assert_not(braid_auth_same(&a, &b), "the modes derive different keys");
}

Test(braid_auth, roundtrip_gives_the_version_1_datagram)
{
	struct braid_auth a = keyed("job-1", BRAID_AUTH_JOB);
	uint8_t plain[512], wire[600], scratch[600];
	struct braid_rd_data_view v;
	size_t len = rd_data(plain, 300), wlen;

	for (int cuts = 1; cuts <= 5; cuts++) {
		wlen = seal(&a, plain, len, 56, cuts, wire);
		cr_assert_eq(wire[1], 2);
		cr_assert_eq(braid_base_hdr_check(wire, wlen), DROP(BRAID_DROP_AUTH),
			     "a keyless receiver drops a keyed datagram");
		cr_assert_eq(braid_auth_open(&a, wire, wlen, scratch), 0);
		cr_assert_eq(memcmp(wire + BRAID_AUTH_TAG, plain, len), 0,
			     "the datagram the engine reads is the one the engine wrote");
		cr_assert_eq(braid_rd_data_decode(wire + BRAID_AUTH_TAG, len, &v), 0);
		cr_assert_eq(v.payload_len, 300);
	}
}

Test(braid_auth, every_tampered_header_byte_is_dropped)
{
	struct braid_auth a = keyed("job-1", BRAID_AUTH_JOB);
	uint8_t plain[512], wire[600], bad[600], scratch[600];
	size_t len = rd_data(plain, 100), wlen = seal(&a, plain, len, 56, 2, wire);

	for (size_t i = 0; i < 56 + BRAID_AUTH_TAG; i++) {
		for (int bit = 0; bit < 8; bit++) {
			memcpy(bad, wire, wlen);
			bad[i] ^= (uint8_t)(1u << bit);
			cr_assert_lt(braid_auth_open(&a, bad, wlen, scratch), 0,
				     "byte %zu bit %d flipped and taken", i, bit);
		}
	}
	/* the checks name their reasons: a version-1 datagram is another job's too */
	memcpy(bad, wire, wlen);
	bad[20] ^= 1;
	cr_assert_eq(braid_auth_open(&a, bad, wlen, scratch), DROP(BRAID_DROP_AUTH));
	cr_assert_eq(braid_auth_open(&a, plain, len, scratch), DROP(BRAID_DROP_AUTH));
	memcpy(bad, wire, wlen);
	bad[0] = 0;
	cr_assert_eq(braid_auth_open(&a, bad, wlen, scratch), DROP(BRAID_DROP_MAGIC));
	memcpy(bad, wire, wlen);
	bad[1] = 3;
	cr_assert_eq(braid_auth_open(&a, bad, wlen, scratch), DROP(BRAID_DROP_VERSION));
	memcpy(bad, wire, wlen);
	bad[7] = 12;
	cr_assert_eq(braid_auth_open(&a, bad, wlen, scratch), DROP(BRAID_DROP_HDR_LEN));
	cr_assert_eq(braid_auth_open(&a, wire, 40, scratch), DROP(BRAID_DROP_SHORT));
	cr_assert_eq(braid_auth_open(&a, wire, 5, scratch), DROP(BRAID_DROP_SHORT));
}

Test(braid_auth, another_key_or_mode_is_dropped)
{
	struct braid_auth a = keyed("job-1", BRAID_AUTH_JOB), b = keyed("job-2", BRAID_AUTH_JOB);
	struct braid_auth m = keyed("job-1", BRAID_AUTH_MAC);
	uint8_t plain[512], wire[600], copy[600], scratch[600];
	size_t len = rd_data(plain, 64), wlen = seal(&a, plain, len, 56, 1, wire);

	memcpy(copy, wire, wlen);
	cr_assert_eq(braid_auth_open(&b, copy, wlen, scratch), DROP(BRAID_DROP_AUTH));
	memcpy(copy, wire, wlen);
	cr_assert_eq(braid_auth_open(&m, copy, wlen, scratch), DROP(BRAID_DROP_AUTH));
	cr_assert_eq(braid_auth_open(&a, wire, wlen, scratch), 0);
}

Test(braid_auth, payload_covered_in_mac_mode_only)
{
	struct braid_auth job = keyed("job-1", BRAID_AUTH_JOB), mac = keyed("job-1", BRAID_AUTH_MAC);
	uint8_t plain[512], wire[600], scratch[600];
	size_t len = rd_data(plain, 200), wlen;

	wlen = seal(&job, plain, len, 56, 3, wire);
	wire[56 + BRAID_AUTH_TAG + 150] ^= 0x40;
	cr_assert_eq(braid_auth_open(&job, wire, wlen, scratch), 0,
		     "job mode: the tag is the header's, the payload is not covered");
	wlen = seal(&mac, plain, len, 56, 3, wire);
	cr_assert_eq(braid_auth_open(&mac, wire, wlen, scratch), 0);
	wlen = seal(&mac, plain, len, 56, 3, wire);
	wire[56 + BRAID_AUTH_TAG + 150] ^= 0x40;
	cr_assert_eq(braid_auth_open(&mac, wire, wlen, scratch), DROP(BRAID_DROP_AUTH),
		     "mac mode: every byte is covered");
}

/* a bundle of an RD_ACK and an RD_DATA record with 40 payload bytes; its length */
static size_t bundle(uint8_t *b)
{
	struct braid_rd_ack_view av = { .src_port = 4000, .src_epoch = 7, .dst_epoch = 9, .rwnd = 5 };
	size_t off = BRAID_RD_BUNDLE_HDR, rec;

	braid_rd_bundle_hdr_write(b, 4000);
	braid_rd_ack_write((struct braid_rd_ack_hdr *)(b + off + 2), &av);
	b[off] = 0;
	b[off + 1] = sizeof(struct braid_rd_ack_hdr);
	off += 2 + sizeof(struct braid_rd_ack_hdr);
	rec = rd_data(b + off + 2, 40);
	b[off] = (uint8_t)(rec >> 8);
	b[off + 1] = (uint8_t)rec;
	return off + 2 + rec;
}

Test(braid_auth, bundle_record_headers_are_covered)
{
	struct braid_auth a = keyed("job-1", BRAID_AUTH_JOB);
	uint8_t plain[512], wire[600], bad[600], scratch[600];
	size_t len = bundle(plain), wlen, data = BRAID_AUTH_TAG + 8 + 2 + 72 + 2;

	cr_assert_eq(braid_rd_bundle_check(plain, len), 2);
	for (int cuts = 1; cuts <= 7; cuts++) {
		wlen = seal(&a, plain, len, 8, cuts, wire);
		memcpy(bad, wire, wlen);
		cr_assert_eq(braid_auth_open(&a, bad, wlen, scratch), 0, "cut in %d", cuts);
		cr_assert_eq(memcmp(bad + BRAID_AUTH_TAG, plain, len), 0);
		cr_assert_eq(braid_rd_bundle_check(bad + BRAID_AUTH_TAG, len), 2);
	}
	/* the header and tag, every byte of the ACK record, both length fields, the data record's header */
	for (size_t i = 0; i < data + 56; i++) {
		memcpy(bad, wire, wlen);
		bad[i] ^= 0x10;
		cr_assert_lt(braid_auth_open(&a, bad, wlen, scratch), 0, "byte %zu flipped and taken", i);
	}
	/* the data record's payload is not covered in job mode */
	memcpy(bad, wire, wlen);
	bad[data + 56 + 5] ^= 0x10;
	cr_assert_eq(braid_auth_open(&a, bad, wlen, scratch), 0);
	/* a payload cut short is not the tag's to see: the bundle's framing check is */
	memcpy(bad, wire, wlen);
	cr_assert_eq(braid_auth_open(&a, bad, wlen - 1, scratch), 0);
	cr_assert_lt(braid_rd_bundle_check(bad + BRAID_AUTH_TAG, len - 1), 0);
}

Test(braid_auth, header_apart_from_payload)
{
	/* DGRAM: the header and tag in the receive entry, the payload in the user's buffer */
	struct braid_auth job = keyed("job-1", BRAID_AUTH_JOB), mac = keyed("job-1", BRAID_AUTH_MAC);
	uint8_t hdr[BRAID_AUTH_HDR_MAX], payload[100], scratch[200];
	struct iovec iov = { payload, sizeof(payload) };
	struct braid_dgram_view v;
	struct braid_dgram_hdr h;

	memset(payload, 0x5a, sizeof(payload));
	braid_dgram_hdr_write(&h, 5000, 0, 0);
	memcpy(hdr, &h, sizeof(h));
	cr_assert_eq(braid_auth_seal(&mac, hdr, &iov, 1, scratch), 24);
	cr_assert_eq(braid_auth_open_hdr(&mac, hdr, 24, 24 + sizeof(payload), &iov, 1, scratch), 16);
	cr_assert_eq(braid_dgram_hdr_decode(hdr, 16 + sizeof(payload), &v), 0);
	cr_assert_eq(v.src_port, 5000);
	/* sealed again; a payload byte changed: mac mode sees it */
	memcpy(hdr, &h, sizeof(h));
	cr_assert_eq(braid_auth_seal(&mac, hdr, &iov, 1, scratch), 24);
	payload[99] ^= 1;
	cr_assert_eq(braid_auth_open_hdr(&mac, hdr, 24, 24 + sizeof(payload), &iov, 1, scratch),
		     DROP(BRAID_DROP_AUTH));
	/* job mode: the header alone decides, with or without the payload at hand */
	memcpy(hdr, &h, sizeof(h));
	cr_assert_eq(braid_auth_seal(&job, hdr, &iov, 1, scratch), 24);
	payload[0] ^= 1;
	cr_assert_eq(braid_auth_open_hdr(&job, hdr, 24, 24 + sizeof(payload), NULL, 0, scratch), 16);
	memcpy(hdr, &h, sizeof(h));
	cr_assert_eq(braid_auth_seal(&job, hdr, &iov, 1, scratch), 24);
	hdr[5] ^= 1;
	cr_assert_eq(braid_auth_open_hdr(&job, hdr, 24, 24 + sizeof(payload), &iov, 1, scratch),
		     DROP(BRAID_DROP_AUTH));
	cr_assert_eq(braid_auth_open_hdr(&job, hdr, 20, 24 + sizeof(payload), &iov, 1, scratch),
		     DROP(BRAID_DROP_SHORT), "a header longer than the bytes at hand");
}

Test(braid_auth, seal_refuses_what_is_not_a_version_1_header)
{
	struct braid_auth a = keyed("job-1", BRAID_AUTH_JOB);
	uint8_t hdr[BRAID_AUTH_HDR_MAX] = { BRAID_HDR_MAGIC, 2, BRAID_PKT_DGRAM, 0, 0, 1, 0, 16 };
	uint8_t scratch[64];

	cr_assert_eq(braid_auth_seal(&a, hdr, NULL, 0, scratch), -FI_EINVAL, "already keyed");
	hdr[1] = 1;
	hdr[7] = 4;
	cr_assert_eq(braid_auth_seal(&a, hdr, NULL, 0, scratch), -FI_EINVAL, "shorter than a header");
	hdr[6] = 1;
	cr_assert_eq(braid_auth_seal(&a, hdr, NULL, 0, scratch), -FI_EINVAL, "longer than any");
}
