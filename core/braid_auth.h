/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_auth.h: keyed datagrams (docs/protocol.md §2.4): the job tag that keeps endpoints of different authorization keys apart. */
#ifndef BRAID_AUTH_H
#define BRAID_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "braid_hdr.h"

/*
 * An endpoint opened with an authorization key (fi_domain(3) auth_key,
 * fi_endpoint(3) ep_attr.auth_key) sends every braid datagram keyed:
 * version 2, and an 8-byte tag right after the datagram's first header
 * (hdr_len counts it). The tag is SipHash-2-4 (libsodium's
 * crypto_shorthash) of the datagram's covered bytes under a key derived
 * from the authorization key with BLAKE2b. A keyed receiver takes only
 * keyed datagrams whose tag verifies, and takes the tag out before anything
 * else reads the datagram: what follows (the engine, the DGRAM and CM
 * decoders) sees the version-1 datagram it carries. A keyless one takes
 * only version 1 (braid_base_hdr_check() drops version 2 as bad_auth).
 *
 * Pure computation: the caller has called sodium_init() once (the provider
 * does, in fi_prov_ini; tests do in their setup).
 */

#define BRAID_AUTH_TAG		8	/* bytes of tag after a keyed datagram's first header */
#define BRAID_AUTH_KEY_MAX	64	/* the longest authorization key braid takes */
#define BRAID_AUTH_HDR_MAX	(BRAID_RD_MAX_HDR + BRAID_AUTH_TAG)	/* a keyed first header */

enum braid_auth_mode {
	BRAID_AUTH_NONE = 0,	/* keyless: version-1 datagrams, as ever */
	BRAID_AUTH_JOB,		/* the tag covers the headers, not the payloads (default) */
	BRAID_AUTH_MAC,		/* the tag covers every byte (FI_BRAID_AUTH=mac) */
};

/** struct braid_auth - an endpoint's key, as the wire uses it. */
struct braid_auth {
	/** @mode: BRAID_AUTH_NONE for a keyless endpoint. */
	enum braid_auth_mode mode;
	/** @key: the SipHash-2-4 key, derived from the authorization key and @mode. */
	uint8_t key[16];
	/** @pkey: RoCEv2 RC: the BTH P_Key of a keyed endpoint's QPs (0xffff keyless, §5.2). */
	uint16_t pkey;
};

/**
 * braid_auth_init() - derive @a from an authorization key of @len bytes:
 * none (keyless) when @len is 0, whatever @key is; else 1 to
 * BRAID_AUTH_KEY_MAX bytes at @key, used as @mode says (BRAID_AUTH_JOB or
 * BRAID_AUTH_MAC; endpoints of the two modes do not understand each other).
 * Return: 0, or -FI_EINVAL (too long, no key bytes, a bad mode).
 */
int braid_auth_init(struct braid_auth *a, const void *key, size_t len, enum braid_auth_mode mode);

/** braid_auth_same() - do @a and @b key alike (both keyless, or the same key and mode)? */
bool braid_auth_same(const struct braid_auth *a, const struct braid_auth *b);

/**
 * braid_auth_seal() - key a datagram (sender, §2.4): @hdr holds its first
 * header, version 1, and has room for BRAID_AUTH_TAG bytes more after it;
 * @rest (@cnt iovecs) is everything that follows that header. The header
 * becomes version 2 with hdr_len + BRAID_AUTH_TAG, and the tag is written
 * after it. @scratch: room for the whole datagram (the covered bytes are
 * gathered there when they are not only the header).
 * Return: the keyed header's length (header and tag), or -FI_EINVAL when
 * @hdr is not a version-1 header of BRAID_RD_MAX_HDR bytes at most.
 */
int braid_auth_seal(const struct braid_auth *a, uint8_t *hdr, const struct iovec *rest, int cnt,
		    uint8_t *scratch);

/**
 * braid_auth_open_hdr() - check a keyed datagram (receiver, §2.4) of @len
 * bytes whose first header and tag are at @hdr (@avail bytes there) and
 * whose other bytes are @rest (@cnt iovecs: what follows the tag, as far
 * as the caller has it). On success the header at @hdr becomes the
 * version-1 header it carries (version 1, hdr_len without the tag); the
 * tag bytes stay behind it. @scratch: room for @len bytes.
 * Return: the version-1 header's length, or a negative drop reason
 * -(reason + 1): short, bad_magic, bad_version, bad_hdr_len, or bad_auth
 * (a version-1 datagram, or a tag that does not verify).
 */
int braid_auth_open_hdr(const struct braid_auth *a, uint8_t *hdr, size_t avail, size_t len,
			const struct iovec *rest, int cnt, uint8_t *scratch);

/**
 * braid_auth_open() - braid_auth_open_hdr() for a datagram received whole,
 * @len bytes at @buf: on success the version-1 datagram it carries is the
 * @len - BRAID_AUTH_TAG bytes at @buf + BRAID_AUTH_TAG (the header moves up
 * over the tag). @scratch: room for @len bytes.
 * Return: 0, or a negative drop reason as braid_auth_open_hdr().
 */
int braid_auth_open(const struct braid_auth *a, uint8_t *buf, size_t len, uint8_t *scratch);

#endif /* BRAID_AUTH_H */
