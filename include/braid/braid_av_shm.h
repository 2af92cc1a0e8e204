/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * braid_av_shm.h: the layout of the POSIX shared-memory segment behind a
 * named address vector (fi_av(3) name; providers/braid_av_shm.c makes,
 * opens and checks it).
 *
 * The segment of AV name N, opened by user id U, is the POSIX shared
 * memory object BRAID_AV_SHM_FMT (U, N): /dev/shm/braid-av-U-N. It holds
 * a header, then @cap fi_addr_t values (what fi_av_attr.map_addr points
 * at: entry i is the fi_addr of the i-th address inserted, i itself while
 * it is in the AV, FI_ADDR_NOTAVAIL before it is inserted and after it is
 * removed), then @cap addresses. An index is handed out once: the segment
 * holds @cap inserts in its life.
 *
 * Publication (the writer, holding BRAID_AV_SHM_LOCK_WRITE): an insert
 * writes the address, then stores map[i] = i, then count = i + 1, both
 * with release ordering; a remove stores map[i] = FI_ADDR_NOTAVAIL, then
 * adds one to @removed (release). A reader loads @count and @removed with
 * acquire ordering and reads only what they cover. Everything a process
 * reads here may have been written by another, buggy or hostile: it is
 * checked before use.
 *
 * Locks (open file description locks, fcntl F_OFD_SETLK, one byte each):
 * every process that has the AV open holds a shared lock on byte
 * BRAID_AV_SHM_LOCK_USERS for as long as it does; whoever (re)initializes
 * the segment holds it exclusively meanwhile, which it can only get when
 * no one else uses the segment. Writers take BRAID_AV_SHM_LOCK_WRITE
 * exclusively around each insert or remove.
 */
#ifndef BRAID_AV_SHM_H
#define BRAID_AV_SHM_H

#include <stddef.h>
#include <stdint.h>

/* "BRAIDAV1" as a little-endian 64-bit value */
#define BRAID_AV_SHM_MAGIC	0x3156414449415242ULL
#define BRAID_AV_SHM_VERSION	1
/* the shm_open(3) name of the segment of AV name @name for user @uid (unsigned) */
#define BRAID_AV_SHM_FMT	"/braid-av-%u-%s"
/* the longest AV name braid takes; names are made of [A-Za-z0-9._-] */
#define BRAID_AV_NAME_MAX	128
/* entries a segment holds at most (fi_av_attr.count), and when count is 0 */
#define BRAID_AV_SHM_MAX_CAP	(1u << 24)
#define BRAID_AV_SHM_DEFAULT_CAP 1024
/* the bytes locked (see above) */
#define BRAID_AV_SHM_LOCK_USERS	0
#define BRAID_AV_SHM_LOCK_WRITE	1

/** struct braid_av_shm_hdr - the segment's first bytes. */
struct braid_av_shm_hdr {
	/** @magic: BRAID_AV_SHM_MAGIC, stored last when the segment is made. */
	uint64_t magic;
	/** @version: BRAID_AV_SHM_VERSION. */
	uint32_t version;
	/** @hdr_size, @entry_size: sizeof the header and of an entry. */
	uint32_t hdr_size, entry_size;
	uint32_t pad;
	/** @cap: the entries the segment holds (the segment is exactly braid_av_shm_size(cap)). */
	uint64_t cap;
	/** @count: indexes handed out so far (entries 0 .. count-1 were inserted). */
	uint64_t count;
	/** @removed: removals so far. */
	uint64_t removed;
	uint64_t reserved[2];
};
_Static_assert(sizeof(struct braid_av_shm_hdr) == 64, "the segment header is 64 bytes");

/** struct braid_av_shm_entry - an address: IPv4 and UDP port in network byte order. */
struct braid_av_shm_entry {
	uint32_t ip;
	uint16_t port;
	uint16_t pad;
};
_Static_assert(sizeof(struct braid_av_shm_entry) == 8, "a segment entry is 8 bytes");

/* where the fi_addr_t array and the addresses start */
#define BRAID_AV_SHM_MAP_OFF	sizeof(struct braid_av_shm_hdr)

static inline size_t braid_av_shm_ent_off(uint64_t cap)
{
	return BRAID_AV_SHM_MAP_OFF + (size_t)cap * sizeof(uint64_t);
}

/* the bytes of a segment of @cap entries (cap <= BRAID_AV_SHM_MAX_CAP) */
static inline size_t braid_av_shm_size(uint64_t cap)
{
	return braid_av_shm_ent_off(cap) + (size_t)cap * sizeof(struct braid_av_shm_entry);
}

#endif /* BRAID_AV_SHM_H */
