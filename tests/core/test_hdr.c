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
