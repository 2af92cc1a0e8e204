/* rd_dgram.h: the test harnesses' wire: one datagram of braid_rd_output()'s packets, copied into one buffer. */
#ifndef RD_DGRAM_H
#define RD_DGRAM_H

#include <string.h>
#include <sys/uio.h>

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

#endif /* RD_DGRAM_H */
