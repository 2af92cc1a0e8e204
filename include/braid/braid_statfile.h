/*
 * braid_statfile.h: the file a process using braid publishes its endpoints'
 * counters in, for braid-stat(1) (providers/braid_stat.c writes it,
 * tools/braid-stat.c reads it).
 *
 * One file per process, $FI_BRAID_STAT_DIR/braid-<pid>.stat (default
 * /dev/shm), made at its first endpoint and removed at its last close: a
 * header, the counter table (names, units, meanings: a reader needs no
 * copy of its own), then BRAID_STATFILE_SLOTS slots of BRAID_STATFILE_SLOT
 * bytes. An endpoint takes a slot and, every FI_BRAID_STAT_MS while it is
 * progressed, writes a snapshot (struct fi_braid_stat_ep, rdma/fi_braid.h)
 * into it under a sequence count (odd while writing: a reader retries).
 */
#ifndef BRAID_STATFILE_H
#define BRAID_STATFILE_H

#include <stdint.h>

#include <rdma/fi_braid.h>

#define BRAID_STATFILE_MAGIC	"BRAIDST1"
#define BRAID_STATFILE_VERSION	1
/* endpoints a process publishes (more are counted in hdr.unpublished) */
#define BRAID_STATFILE_SLOTS	64
/* bytes a slot holds: the slot header, an endpoint's row and its first peers */
#define BRAID_STATFILE_SLOT	(64 * 1024)

struct braid_statfile_hdr {
	char magic[8];
	uint32_t version;
	uint32_t pid;
	/** @pidns: the inode of the writer's pid namespace (a reader elsewhere cannot judge @pid). */
	uint64_t pidns;
	/** @start: the writer's start time (/proc/<pid>/stat field 22): tells a reused pid. */
	uint64_t start;
	/** @comm: the writer's program name. */
	char comm[32];
	/** @n_desc, @desc_off: the table's entries and where they are. */
	uint32_t n_desc, desc_off;
	/** @slots, @slot_size, @slot_off: the slots. */
	uint32_t slots, slot_size, slot_off;
	/** @unpublished: endpoints that found no free slot. */
	uint32_t unpublished;
	/** @interval_ms: how often endpoints publish (FI_BRAID_STAT_MS). */
	uint32_t interval_ms;
	uint32_t pad;
};

/** struct braid_statfile_desc - a table entry as the file holds it. */
struct braid_statfile_desc {
	char name[48];
	char unit[16];
	char help[176];
	uint8_t scopes, kind;
	uint8_t pad[6];
};

/** struct braid_statfile_slot - a slot's header; the snapshot follows. */
struct braid_statfile_slot {
	/** @seq: even: stable; odd: being written. */
	uint32_t seq;
	/** @used: 1 while an endpoint owns the slot. */
	uint32_t used;
	/** @len: bytes of the snapshot. */
	uint32_t len;
	uint32_t pad;
	/* struct fi_braid_stat_ep follows */
};

#endif /* BRAID_STATFILE_H */
