/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_iov.c: iovec arithmetic shared by the RC and RD engines (braid_iov.h). */
#include <assert.h>
#include <string.h>

#include "braid_iov.h"

/* the index of the entry of @iov holding byte *@off (@cnt: none), *@off made relative to it */
static size_t iov_seek(const struct iovec *iov, size_t cnt, uint64_t *off)
{
	size_t i;

	for (i = 0; i < cnt && *off >= iov[i].iov_len; i++)
		*off -= iov[i].iov_len;
	return i;
}

int braid_iov_slice_any(const struct iovec *iov, size_t cnt, uint64_t off, size_t len,
			struct iovec *out, int max)
{
	size_t i;
	int n = 0;

	for (i = iov_seek(iov, cnt, &off); i < cnt && len; i++, off = 0) {
		size_t take = iov[i].iov_len - (size_t)off;

		if (!take)
			continue;
		if (take > len)
			take = len;
		assert(n < max);
		out[n].iov_base = (uint8_t *)iov[i].iov_base + off;
		out[n].iov_len = take;
		n++;
		len -= take;
	}
	return n;
}

size_t braid_iov_scatter_any(const struct iovec *iov, size_t cnt, uint64_t off, const void *src,
			     size_t len)
{
	const uint8_t *p = src;
	size_t i;

	for (i = iov_seek(iov, cnt, &off); i < cnt && len; i++, off = 0) {
		size_t take = iov[i].iov_len - (size_t)off;

		if (take > len)
			take = len;
		if (take)
			memcpy((uint8_t *)iov[i].iov_base + off, p, take);
		p += take;
		len -= take;
	}
	return (size_t)(p - (const uint8_t *)src);
}

size_t braid_iov_gather(const struct iovec *iov, size_t cnt, void *dst)
{
	uint8_t *p = dst;
	size_t i;

	for (i = 0; i < cnt; i++) {
		if (iov[i].iov_len)
			memcpy(p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	return (size_t)(p - (uint8_t *)dst);
}
