/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_auth.c: keyed datagrams (docs/protocol.md §2.4): deriving an endpoint's keys, tagging a datagram, checking one and taking its tag out. */
#include <string.h>
#include <rdma/fi_errno.h>
#include <sodium.h>

#include "braid_auth.h"
#include "braid_iov.h"
#include "braid_roce.h"

#define DROP(r) (-((int)(r) + 1))

_Static_assert(crypto_shorthash_BYTES == BRAID_AUTH_TAG, "the tag is one SipHash-2-4 output");
_Static_assert(crypto_shorthash_KEYBYTES == sizeof(((struct braid_auth *)0)->key),
	       "a SipHash-2-4 key");

/* BLAKE2b personalisations (§2.4): one key per use of the authorization key */
static const uint8_t personal_job[crypto_generichash_blake2b_PERSONALBYTES] = "braid-tag-v1";
static const uint8_t personal_mac[crypto_generichash_blake2b_PERSONALBYTES] = "braid-mac-v1";
static const uint8_t personal_pkey[crypto_generichash_blake2b_PERSONALBYTES] = "braid-pkey-v1";

/* BLAKE2b-128 of the authorization key, personalised for one use */
static int auth_derive(const void *key, size_t len, const uint8_t *personal, uint8_t out[16])
{
	static const uint8_t salt[crypto_generichash_blake2b_SALTBYTES];

	return crypto_generichash_blake2b_salt_personal(out, 16, key, len, NULL, 0, salt, personal);
}

int braid_auth_init(struct braid_auth *a, const void *key, size_t len, enum braid_auth_mode mode)
{
	uint8_t p[16];

	memset(a, 0, sizeof(*a));
	a->pkey = BRAID_ROCE_DEFAULT_PKEY;
	if (!len)
		return 0;
	if (!key || len > BRAID_AUTH_KEY_MAX || (mode != BRAID_AUTH_JOB && mode != BRAID_AUTH_MAC))
		return -FI_EINVAL;
	if (auth_derive(key, len, mode == BRAID_AUTH_MAC ? personal_mac : personal_job, a->key) ||
	    auth_derive(key, len, personal_pkey, p))
		return -FI_EINVAL;
	/* a full member of a partition of its own: neither 0 (invalid) nor 0x7fff (the default) */
	a->pkey = (uint16_t)(0x8000 | (((unsigned)p[0] << 8 | p[1]) % 0x7ffe + 1));
	a->mode = mode;
	sodium_memzero(p, sizeof(p));
	return 0;
}

bool braid_auth_same(const struct braid_auth *a, const struct braid_auth *b)
{
	return a->mode == b->mode &&
	       (a->mode == BRAID_AUTH_NONE || !sodium_memcmp(a->key, b->key, sizeof(a->key)));
}

/* a place in a run of iovecs, read forward once (a bundle's records cross them anywhere) */
struct iov_cursor {
	const struct iovec *iov;
	int cnt, i;
	size_t off;
};

/* up to @n bytes from the cursor on, copied to @dst when it is not NULL; the cursor moves past them */
static size_t cursor_take(struct iov_cursor *c, uint8_t *dst, size_t n)
{
	size_t done = 0;

	while (done < n && c->i < c->cnt) {
		size_t take = c->iov[c->i].iov_len - c->off;

		if (take > n - done)
			take = n - done;
		if (take && dst)
			memcpy(dst + done, (const uint8_t *)c->iov[c->i].iov_base + c->off, take);
		done += take;
		c->off += take;
		if (c->off == c->iov[c->i].iov_len) {
			c->i++;
			c->off = 0;
		}
	}
	return done;
}

/*
 * §2.4's covered bytes of an RD_BUNDLE in job mode, after its header: each
 * record's length field and the record's header (its first hdr_len bytes,
 * at least 8, at most the record), to the end of @rest; appended at @p.
 * Return: the end of what was written.
 */
static uint8_t *bundle_headers(const struct iovec *rest, int cnt, uint8_t *p)
{
	struct iov_cursor c = { rest, cnt, 0, 0 };
	size_t left = braid_iov_len(rest, (size_t)cnt);

	while (left) {
		size_t got = cursor_take(&c, p, BRAID_RD_BUNDLE_REC), rec, hl, want;

		left -= got;
		if (got < BRAID_RD_BUNDLE_REC)
			return p + got;	/* a stray last byte: covered as it is */
		rec = (size_t)p[0] << 8 | p[1];
		p += got;
		if (rec > left)
			rec = left;
		hl = cursor_take(&c, p, rec < 8 ? rec : 8);
		want = hl == 8 ? ((size_t)p[6] << 8 | p[7]) : hl;
		if (want > rec)
			want = rec;
		if (want < hl)
			want = hl;
		p += hl + cursor_take(&c, p + hl, want - hl);
		(void)cursor_take(&c, NULL, rec - want);	/* the payload: not covered */
		left -= rec;
	}
	return p;
}

/*
 * The tag (§2.4) of a datagram whose first header, version 2 and @hlen
 * bytes without the tag, is at @hdr and whose bytes after the tag are @rest.
 */
static void auth_tag(const struct braid_auth *a, const uint8_t *hdr, size_t hlen,
		     const struct iovec *rest, int cnt, uint8_t *scratch, uint8_t *tag)
{
	bool job = a->mode == BRAID_AUTH_JOB;
	uint8_t type = hdr[2], *p;

	if (job && (type == BRAID_PKT_DGRAM || type == BRAID_PKT_RD_DATA || type == BRAID_PKT_RD_RMA))
		cnt = 0;	/* the payload is not covered: the header alone */
	if (!braid_iov_len(rest, (size_t)cnt)) {
		crypto_shorthash(tag, hdr, hlen, a->key);
		return;
	}
	if (job && type == BRAID_PKT_RD_BUNDLE) {
		memcpy(scratch, hdr, hlen);
		p = bundle_headers(rest, cnt, scratch + hlen);
	} else if (cnt == 1 && rest[0].iov_base == hdr + hlen) {
		/* a datagram received whole (braid_auth_open): every byte in place */
		crypto_shorthash(tag, hdr, hlen + rest[0].iov_len, a->key);
		return;
	} else {
		memcpy(scratch, hdr, hlen);
		p = scratch + hlen;
		p += braid_iov_gather(rest, (size_t)cnt, p);
	}
	crypto_shorthash(tag, scratch, (unsigned long long)(p - scratch), a->key);
}

static void hdr_set(uint8_t *hdr, uint8_t version, size_t hdr_len)
{
	hdr[1] = version;
	hdr[6] = (uint8_t)(hdr_len >> 8);
	hdr[7] = (uint8_t)hdr_len;
}

int braid_auth_seal(const struct braid_auth *a, uint8_t *hdr, const struct iovec *rest, int cnt,
		    uint8_t *scratch)
{
	size_t hlen = (size_t)hdr[6] << 8 | hdr[7];

	if (hdr[1] != BRAID_PROTO_VERSION || hlen < sizeof(struct braid_base_hdr) ||
	    hlen > BRAID_RD_MAX_HDR)
		return -FI_EINVAL;
	hdr_set(hdr, BRAID_PROTO_VERSION_KEYED, hlen + BRAID_AUTH_TAG);
	auth_tag(a, hdr, hlen, rest, cnt, scratch, hdr + hlen);
	return (int)(hlen + BRAID_AUTH_TAG);
}

/* §2.3 checks 1 and 2 as ever, then version 2 and a keyed header's length: that length less the tag, or -(reason + 1) */
static int auth_hdr_check(const uint8_t *hdr, size_t avail, size_t len)
{
	size_t hlen;

	if (len < sizeof(struct braid_base_hdr) || avail < sizeof(struct braid_base_hdr))
		return DROP(BRAID_DROP_SHORT);
	if (hdr[0] != BRAID_HDR_MAGIC)
		return DROP(BRAID_DROP_MAGIC);
	if (hdr[1] != BRAID_PROTO_VERSION_KEYED)
		return DROP(hdr[1] == BRAID_PROTO_VERSION ? BRAID_DROP_AUTH : BRAID_DROP_VERSION);
	hlen = (size_t)hdr[6] << 8 | hdr[7];
	if (hlen < sizeof(struct braid_base_hdr) + BRAID_AUTH_TAG || hlen > BRAID_AUTH_HDR_MAX)
		return DROP(BRAID_DROP_HDR_LEN);
	if (hlen > len || hlen > avail)
		return DROP(BRAID_DROP_SHORT);
	return (int)(hlen - BRAID_AUTH_TAG);
}

int braid_auth_open_hdr(const struct braid_auth *a, uint8_t *hdr, size_t avail, size_t len,
			const struct iovec *rest, int cnt, uint8_t *scratch)
{
	uint8_t tag[BRAID_AUTH_TAG];
	int hlen = auth_hdr_check(hdr, avail, len);

	if (hlen < 0)
		return hlen;
	auth_tag(a, hdr, (size_t)hlen, rest, cnt, scratch, tag);
	if (sodium_memcmp(tag, hdr + hlen, sizeof(tag)))
		return DROP(BRAID_DROP_AUTH);
	hdr_set(hdr, BRAID_PROTO_VERSION, (size_t)hlen);
	return hlen;
}

int braid_auth_open(const struct braid_auth *a, uint8_t *buf, size_t len, uint8_t *scratch)
{
	uint8_t tag[BRAID_AUTH_TAG], want[BRAID_AUTH_TAG], *pkt = buf + BRAID_AUTH_TAG;
	int hlen = auth_hdr_check(buf, len, len);
	struct iovec rest;

	if (hlen < 0)
		return hlen;
	/* the header moves up over the tag: header and what follows it are one run again */
	memcpy(tag, buf + hlen, sizeof(tag));
	memmove(pkt, buf, (size_t)hlen);
	rest.iov_base = pkt + hlen;
	rest.iov_len = len - BRAID_AUTH_TAG - (size_t)hlen;
	auth_tag(a, pkt, (size_t)hlen, &rest, 1, scratch, want);
	if (sodium_memcmp(tag, want, sizeof(tag)))
		return DROP(BRAID_DROP_AUTH);
	hdr_set(pkt, BRAID_PROTO_VERSION, (size_t)hlen);
	return 0;
}
