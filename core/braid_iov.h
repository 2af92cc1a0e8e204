/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_iov.h: iovec arithmetic shared by the RC and RD engines: length, validity, slices, copies in and out. */
#ifndef BRAID_IOV_H
#define BRAID_IOV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

/** braid_iov_len() - the total bytes of @iov[0..@cnt). Inline: every operation posted asks. */
static inline uint64_t braid_iov_len(const struct iovec *iov, size_t cnt)
{
	uint64_t len = 0;
	size_t i;

	for (i = 0; i < cnt; i++)
		len += iov[i].iov_len;
	return len;
}

/**
 * braid_iov_copy() - copy the @cnt entries of @src to @dst. Inline, and one
 * entry (nearly every operation posted) a plain store rather than a call.
 */
static inline void braid_iov_copy(struct iovec *dst, const struct iovec *src, size_t cnt)
{
	if (cnt == 1)
		dst[0] = src[0];
	else if (cnt)
		memcpy(dst, src, cnt * sizeof(*src));
}

/** braid_iov_valid() - false when an entry of @iov[0..@cnt) has bytes but a NULL base. Inline. */
static inline bool braid_iov_valid(const struct iovec *iov, size_t cnt)
{
	size_t i;

	for (i = 0; i < cnt; i++)
		if (!iov[i].iov_base && iov[i].iov_len)
			return false;
	return true;
}

/**
 * braid_iov_slice() - the bytes [@off, @off + @len) of @iov[0..@cnt) as
 * iovecs pointing into it, in @out (room for @max; the caller makes sure
 * they fit, e.g. @max >= @cnt). Bytes past the end of @iov are left out.
 * Return: how many iovecs were written to @out.
 */
int braid_iov_slice_any(const struct iovec *iov, size_t cnt, uint64_t off, size_t len,
			struct iovec *out, int max);
/* (inline: bytes within the first entry, nearly every packet's, are one entry without a walk) */
static inline int braid_iov_slice(const struct iovec *iov, size_t cnt, uint64_t off, size_t len,
				  struct iovec *out, int max)
{
	if (cnt && len && max > 0 && off < iov[0].iov_len && len <= iov[0].iov_len - off) {
		out[0].iov_base = (uint8_t *)iov[0].iov_base + off;
		out[0].iov_len = len;
		return 1;
	}
	return braid_iov_slice_any(iov, cnt, off, len, out, max);
}

/**
 * braid_iov_scatter() - copy @len bytes from @src into @iov[0..@cnt) from
 * byte @off on; what would land past the end of @iov is not copied.
 * Return: the bytes copied.
 */
size_t braid_iov_scatter_any(const struct iovec *iov, size_t cnt, uint64_t off, const void *src,
			     size_t len);
/* (inline: bytes that land within the first entry, nearly every packet's, are one copy) */
static inline size_t braid_iov_scatter(const struct iovec *iov, size_t cnt, uint64_t off,
				       const void *src, size_t len)
{
	if (cnt && len && off < iov[0].iov_len && len <= iov[0].iov_len - off) {
		memcpy((uint8_t *)iov[0].iov_base + off, src, len);
		return len;
	}
	return braid_iov_scatter_any(iov, cnt, off, src, len);
}

/**
 * braid_iov_gather() - copy every byte of @iov[0..@cnt) to @dst, which has
 * room for braid_iov_len() bytes. Return: the bytes copied.
 */
size_t braid_iov_gather(const struct iovec *iov, size_t cnt, void *dst);

#endif /* BRAID_IOV_H */
