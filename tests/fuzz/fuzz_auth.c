/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_auth.c: libFuzzer target for keyed datagrams (core/braid_auth.c,
 * protocol.md §2.4): the input is a config byte and one datagram. As
 * received, it goes to braid_auth_open and braid_auth_open_hdr (a copy of
 * exactly its bytes each); they must agree, and a datagram they take must
 * seal back to the very bytes that came. As sent, a version-1 datagram is
 * (magic, version 1, a header length it can have) is sealed with its bytes
 * cut into three iovecs where the input says, and must open back to itself. Nothing may crash, read out of bounds or hit UB.
 */
#include <sodium.h>

#include "braid_auth.h"
#include "fuzz_common.h"

static struct braid_auth keys[2];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	FUZZ_CHECK(sodium_init() >= 0);
	FUZZ_CHECK(!braid_auth_init(&keys[0], FAUTH_KEY, strlen(FAUTH_KEY), BRAID_AUTH_JOB));
	FUZZ_CHECK(!braid_auth_init(&keys[1], FAUTH_KEY, strlen(FAUTH_KEY), BRAID_AUTH_MAC));
	return 0;
}

/* received: both checks agree; what they take seals back to what came */
static void received(const struct braid_auth *a, const uint8_t *p, size_t len)
{
	uint8_t *whole = fuzz_dup(p, len), *apart = fuzz_dup(p, len), *scratch = fuzz_alloc(len);
	uint8_t hdr[BRAID_AUTH_HDR_MAX];
	size_t avail = len < BRAID_AUTH_HDR_MAX ? len : BRAID_AUTH_HDR_MAX;
	struct iovec rest = { NULL, 0 };
	int r1 = braid_auth_open(a, whole, len, scratch), r2;

	memcpy(hdr, p, avail);
	if (len > 8 && ((size_t)p[6] << 8 | p[7]) <= avail && ((size_t)p[6] << 8 | p[7]) >= 16) {
		size_t hl = (size_t)p[6] << 8 | p[7];

		rest.iov_base = apart + hl;
		rest.iov_len = len - hl;
	}
	r2 = braid_auth_open_hdr(a, hdr, avail, len, &rest, rest.iov_len ? 1 : 0, scratch);
	FUZZ_CHECK((r1 == 0) == (r2 >= 0));
	FUZZ_CHECK(r1 <= 0 && (r1 == 0 || r1 == r2));
	if (r1 == 0) {
		uint8_t *v1 = whole + BRAID_AUTH_TAG, resealed[BRAID_AUTH_HDR_MAX];
		size_t hl = (size_t)v1[6] << 8 | v1[7];
		struct iovec tail = { v1 + hl, len - BRAID_AUTH_TAG - hl };

		FUZZ_CHECK(v1[1] == BRAID_PROTO_VERSION && hl == (size_t)r2);
		FUZZ_CHECK(memcmp(v1, hdr, hl) == 0);
		memcpy(resealed, v1, hl);
		FUZZ_CHECK(braid_auth_seal(a, resealed, &tail, 1, scratch) == (int)(hl + BRAID_AUTH_TAG));
		FUZZ_CHECK(memcmp(resealed, p, hl + BRAID_AUTH_TAG) == 0);
	}
	free(whole);
	free(apart);
	free(scratch);
}

/* sent: a version-1 datagram sealed from three iovecs opens back to itself */
static void sent(const struct braid_auth *a, const uint8_t *p, size_t len, uint8_t cut1,
		 uint8_t cut2)
{
	uint8_t hdr[BRAID_AUTH_HDR_MAX], *wire, *scratch;
	struct iovec rest[3];
	size_t hl, n, c1, c2;
	int klen;

	if (len < 8 || p[0] != BRAID_HDR_MAGIC || p[1] != BRAID_PROTO_VERSION)
		return;	/* not what a sender's engine writes */
	hl = (size_t)p[6] << 8 | p[7];
	if (hl < 8 || hl > BRAID_RD_MAX_HDR || hl > len)
		return;
	n = len - hl;
	c1 = n ? cut1 % (n + 1) : 0;
	c2 = n ? c1 + cut2 % (n - c1 + 1) : 0;
	rest[0] = (struct iovec){ fuzz_dup(p + hl, c1), c1 };
	rest[1] = (struct iovec){ fuzz_dup(p + hl + c1, c2 - c1), c2 - c1 };
	rest[2] = (struct iovec){ fuzz_dup(p + hl + c2, n - c2), n - c2 };
	scratch = fuzz_alloc(len);
	memcpy(hdr, p, hl);
	klen = braid_auth_seal(a, hdr, rest, 3, scratch);
	FUZZ_CHECK(klen == (int)(hl + BRAID_AUTH_TAG));
	wire = fuzz_alloc(len + BRAID_AUTH_TAG);
	memcpy(wire, hdr, (size_t)klen);
	memcpy(wire + klen, p + hl, n);
	FUZZ_CHECK(braid_auth_open(a, wire, len + BRAID_AUTH_TAG, scratch) == 0);
	FUZZ_CHECK(memcmp(wire + BRAID_AUTH_TAG, p, len) == 0);
	for (int i = 0; i < 3; i++)
		free(rest[i].iov_base);
	free(wire);
	free(scratch);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct braid_auth *a;

	if (size < 2)
		return 0;
	a = &keys[data[0] & FAUTH_CFG_MAC];
	received(a, data + 2, size - 2);
	sent(a, data + 2, size - 2, data[0] >> 1, data[1]);
	return 0;
}
