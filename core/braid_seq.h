/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_seq.h: wrap-safe sequence-number arithmetic, the only way braid compares PSNs and epochs. */
#ifndef BRAID_SEQ_H
#define BRAID_SEQ_H

#include <stdbool.h>
#include <stdint.h>

/*
 * 32-bit sequence numbers wrap. Two of them compare correctly while they
 * are less than 2^31 apart (RFC 1982 serial number arithmetic): that is
 * always the case inside one window (protocol.md §4.4).
 */

/** braid_seq_diff() - a - b as a signed distance (valid while |a - b| < 2^31). */
static inline int32_t braid_seq_diff(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b);
}

static inline bool braid_seq_lt(uint32_t a, uint32_t b) { return braid_seq_diff(a, b) < 0; }
static inline bool braid_seq_le(uint32_t a, uint32_t b) { return braid_seq_diff(a, b) <= 0; }
static inline bool braid_seq_gt(uint32_t a, uint32_t b) { return braid_seq_diff(a, b) > 0; }
static inline bool braid_seq_ge(uint32_t a, uint32_t b) { return braid_seq_diff(a, b) >= 0; }

/** braid_seq_max() - the later of two sequence numbers. */
static inline uint32_t braid_seq_max(uint32_t a, uint32_t b) { return braid_seq_gt(a, b) ? a : b; }

/** braid_seq_in() - is @s in the half-open window [@lo, @lo + @len)? */
static inline bool braid_seq_in(uint32_t s, uint32_t lo, uint32_t len)
{
	return (uint32_t)(s - lo) < len;
}

#endif /* BRAID_SEQ_H */
