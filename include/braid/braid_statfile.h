/* SPDX-License-Identifier: BSD-2-Clause */
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

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* the inode of this process's pid namespace (0: unknown) */
static inline uint64_t braid_statfile_pidns(void)
{
	struct stat st;

	return stat("/proc/self/ns/pid", &st) ? 0 : (uint64_t)st.st_ino;
}

/* /proc/<pid>/stat field 22, the process's start time (0: unknown) */
static inline uint64_t braid_statfile_proc_start(long pid)
{
	char p[64], buf[1024], *s;
	FILE *f;
	int i;

	snprintf(p, sizeof(p), "/proc/%ld/stat", pid);
	f = fopen(p, "r");
	if (!f)
		return 0;
	s = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!s || !(s = strrchr(buf, ')')))
		return 0;
	/* after "pid (comm)": field 3 on */
	for (i = 3, s += 2; i < 22 && s; i++) {
		s = strchr(s, ' ');
		if (s)
			s++;
	}
	return s ? strtoull(s, NULL, 10) : 0;
}

/*
 * The file's writer is gone (exited, or its pid now another process's).
 * Only judged for writers of the pid namespace @ns (ours): another's pids mean nothing here.
 */
static inline bool braid_statfile_writer_gone(const struct braid_statfile_hdr *h, uint64_t ns)
{
	if (h->pidns != ns)
		return false;
	if (kill((pid_t)h->pid, 0) && errno == ESRCH)
		return true;
	return h->start && braid_statfile_proc_start((long)h->pid) != h->start;
}

#endif /* BRAID_STATFILE_H */
