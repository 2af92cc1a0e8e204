/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_hash.h: splitmix64 (Steele, Lea and Flood, 2014): its finaliser as a 64-bit mixing
 * function (hash tables, ECMP hashing) and the generator that steps a 64-bit state with it. */
#ifndef BRAID_HASH_H
#define BRAID_HASH_H

#include <stdint.h>

/** braid_mix64() - splitmix64's finaliser: every output bit depends on every input bit. */
static inline uint64_t braid_mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/** braid_splitmix64() - the next number of the generator whose state is *@state. */
static inline uint64_t braid_splitmix64(uint64_t *state)
{
	return braid_mix64(*state += 0x9e3779b97f4a7c15ULL);
}

#endif
