/* SPDX-License-Identifier: BSD-2-Clause */
/* rd_dgram.h: the test harnesses' wire: one datagram of braid_rd_output()'s packets, copied into one buffer. */
#ifndef RD_DGRAM_H
#define RD_DGRAM_H

#include <string.h>
#include <sys/uio.h>

#include "braid_hdr.h"
#include "braid_rd.h"

/*
 * Copy the datagram that begins at @out[0] (one packet, or a bundle of
 * them, §4.8) into @buf; *@k moves past its packets. Return: its length.
 */
static inline size_t rd_dgram_copy(const struct braid_rd_out *out, int n, uint8_t *buf, int *k)
{
	struct iovec iov[BRAID_RD_BUNDLE_MAX * (BRAID_RD_IOV_MAX + 2)];
	size_t len, at = 0;
	int cnt, took;

	/* a GSO run's packets leave as datagrams of their own, as the kernel cuts it */
	if ((n > 1 && out[1].gso_cont) || out[0].gso_cont)
		n = 1;
	took = braid_rd_out_dgram(out, n, iov, (int)(sizeof(iov) / sizeof(iov[0])), &cnt, &len,
				  NULL);

	for (int j = 0; j < cnt; j++) {
		memcpy(buf + at, iov[j].iov_base, iov[j].iov_len);
		at += iov[j].iov_len;
	}
	*k += took;
	return at;
}

/* Answer @out if it is a challenge to @peer_ip: 1 when answered and believed, else 0. */
static inline int rd_answer_chal_out(struct braid_rd *rd, const struct braid_rd_out *out,
				     uint32_t peer_ip, uint64_t now)
{
	struct braid_rd_chal_view v, r;
	struct braid_rd_cts_hdr h;

	if (out->dst_ip != peer_ip || braid_rd_chal_decode(out->hdr, out->hdr_len, &v) ||
	    (v.flags & (BRAID_RD_CHAL_F_RESPONSE | BRAID_RD_CHAL_F_FORGET)))
		return 0;
	r = (struct braid_rd_chal_view){
		.src_port = out->dst_port,
		.flags = BRAID_RD_CHAL_F_RESPONSE,
		.src_epoch = v.dst_epoch,
		.dst_epoch = v.src_epoch,
		.cookie = v.cookie,
	};
	braid_rd_chal_write(&h, &r);
	return braid_rd_input(rd, &h, sizeof(h), peer_ip, false, now) == 0;
}

/*
 * A test's hand-made peer at @peer_ip answers the engine's challenge (§4.9):
 * the next packet @rd sends must be an RD_CHALLENGE to it, and the answer
 * goes straight back. Return: 1 when answered and believed, else 0.
 */
static inline int rd_answer_challenge(struct braid_rd *rd, uint32_t peer_ip, uint64_t now)
{
	struct braid_rd_out out;

	return braid_rd_output(rd, now, &out, 1) == 1 && rd_answer_chal_out(rd, &out, peer_ip, now);
}

#endif /* RD_DGRAM_H */
