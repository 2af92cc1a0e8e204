/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * braid_stat.c: braid's counters, out of the process: snapshots of an
 * endpoint (its counter table row, its peers', their paths'), read through
 * fi_open_ops(FI_BRAID_STAT_OPS) (rdma/fi_braid.h) and published for
 * braid-stat(1) in a small shared file per process (braid/braid_statfile.h).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "braid.h"
#include "braid/braid_counters.h"
#include "braid/braid_statfile.h"

_Static_assert(sizeof(struct braid_ep_stats) ==
	       8 * (0 BRAID_EP_COUNTERS(BRAID_CTR_ONE) + BRAID_DROP_MAX),
	       "endpoint counters: uint64_t each, no padding");

/* ---- snapshots ---- */

/* The endpoint's row: its own counters, its engine's (RD or RC), in table order. */
static void ep_row(struct braid_ep *ep, uint64_t *v)
{
	const struct braid_rd_stats *rd = ep->kind->rd_stats ? ep->kind->rd_stats(ep) : NULL;
	const struct braid_rc_stats *rc = ep->kind->rc_stats ? ep->kind->rc_stats(ep) : NULL;
	uint8_t *p = (uint8_t *)v;

	if (ep->wire) {
		const struct braid_wire_local *l = &ep->wire->local;

		ep->stats.tx_local = l->tx;
		ep->stats.rx_local = l->rx;
		ep->stats.tx_local_msgs = l->tx_msgs;
		ep->stats.rx_local_msgs = l->rx_msgs;
		ep->stats.local_held = l->held;
		ep->stats.local_dropped = l->dropped;
		ep->stats.local_doorbells = l->doorbells;
		ep->stats.local_bad = l->bad;
		ep->stats.local_peers = l->peers;
	}
	memcpy(p, &ep->stats, sizeof(ep->stats));
	p += sizeof(ep->stats);
	if (rd)
		memcpy(p, rd, sizeof(*rd));
	else
		memset(p, 0, sizeof(struct braid_rd_stats));
	p += sizeof(struct braid_rd_stats);
	if (rc)
		memcpy(p, rc, sizeof(*rc));
	else
		memset(p, 0, sizeof(*rc));
}

/* (the endpoint's lock held) */
static ssize_t ep_snapshot(struct braid_ep *ep, void *buf, size_t len, uint64_t now)
{
	struct fi_braid_stat_ep *s = buf;
	uint32_t n_ep = braid_ctr_row_len(BRAID_SCOPE_EP);
	size_t off = sizeof(*s) + 8 * (size_t)n_ep;
	char ip[INET_ADDRSTRLEN] = "0.0.0.0";

	_Static_assert(sizeof(struct braid_ep_stats) + sizeof(struct braid_rd_stats) +
		       sizeof(struct braid_rc_stats) == 8 * (0 BRAID_EP_COUNTERS(BRAID_CTR_ONE) +
		       BRAID_DROP_MAX + sizeof(struct braid_rd_stats) / 8 +
		       sizeof(struct braid_rc_stats) / 8), "the endpoint row");
	if (len < off)
		return -FI_ETOOSMALL;
	memset(s, 0, sizeof(*s));
	s->ep_type = (uint32_t)ep->type;
	s->n_ep = n_ep;
	s->n_peer = braid_ctr_row_len(BRAID_SCOPE_PEER);
	s->n_path = braid_ctr_row_len(BRAID_SCOPE_PATH);
	s->id = ep->stat_id;
	s->time_ns = now;
	if (ep->wire) {
		inet_ntop(AF_INET, &ep->wire->name.sin_addr, ip, sizeof(ip));
		snprintf(s->addr, sizeof(s->addr), "%s:%u", ip, ntohs(ep->wire->name.sin_port));
	}
	ep_row(ep, s->v);
	if (ep->kind->stat_peers)
		off += ep->kind->stat_peers(ep, (uint8_t *)buf + off, len - off, &s->peers,
					    &s->peers_total);
	s->size = (uint32_t)off;
	return (ssize_t)off;
}

/* ---- the published file ---- */

static struct {
	pthread_mutex_t lock;
	/** @map: the file, mapped; NULL: none (not made yet, or it could not be). */
	uint8_t *map;
	size_t size;
	char path[256];
	/** @used: slots taken; @failed: making it failed once (not tried again). */
	uint32_t used;
	bool failed;
	uint32_t next_id;
	/** @pid: the process that made the file (a forked child makes its own). */
	pid_t pid;
} sf = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Files of processes of our pid namespace that are gone (they crashed before removing theirs). */
static void stale_sweep(const char *dir, uint64_t ns)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		struct braid_statfile_hdr h;
		char p[512];
		long pid;
		int fd;

		if (sscanf(e->d_name, "braid-%ld.stat", &pid) != 1 || pid == getpid())
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (read(fd, &h, sizeof(h)) == sizeof(h) && !memcmp(h.magic, BRAID_STATFILE_MAGIC, 8) &&
		    h.pid == (uint32_t)pid && braid_statfile_writer_gone(&h, ns))
			unlink(p);
		close(fd);
	}
	closedir(d);
}

static int file_make(void)
{
	const struct braid_ctr_desc *t;
	size_t n = braid_ctr_table(&t), i;
	struct braid_statfile_hdr *h;
	size_t desc_off = (sizeof(*h) + 63) & ~(size_t)63;
	size_t slot_off = (desc_off + n * sizeof(struct braid_statfile_desc) + 4095) & ~(size_t)4095;
	uint64_t ns = braid_statfile_pidns();
	FILE *c;
	int fd;

	snprintf(sf.path, sizeof(sf.path), "%s/braid-%ld.stat", braid_cfg.stat_dir, (long)getpid());
	stale_sweep(braid_cfg.stat_dir, ns);
	sf.size = slot_off + (size_t)BRAID_STATFILE_SLOTS * BRAID_STATFILE_SLOT;
	fd = open(sf.path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)sf.size)) {
		int err = -errno;

		close(fd);
		unlink(sf.path);
		return err;
	}
	sf.map = mmap(NULL, sf.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (sf.map == MAP_FAILED) {
		sf.map = NULL;
		unlink(sf.path);
		return -FI_ENOMEM;
	}
	sf.pid = getpid();
	h = (struct braid_statfile_hdr *)sf.map;
	h->version = BRAID_STATFILE_VERSION;
	h->pid = (uint32_t)getpid();
	h->pidns = ns;
	h->start = braid_statfile_proc_start((long)getpid());
	c = fopen("/proc/self/comm", "r");
	if (c) {
		if (fgets(h->comm, sizeof(h->comm), c))
			h->comm[strcspn(h->comm, "\n")] = 0;
		fclose(c);
	}
	h->n_desc = (uint32_t)n;
	h->desc_off = (uint32_t)desc_off;
	h->slots = BRAID_STATFILE_SLOTS;
	h->slot_size = BRAID_STATFILE_SLOT;
	h->slot_off = (uint32_t)slot_off;
	h->interval_ms = (uint32_t)braid_cfg.stat_ms;
	for (i = 0; i < n; i++) {
		struct braid_statfile_desc *d =
			(struct braid_statfile_desc *)(sf.map + desc_off) + i;

		snprintf(d->name, sizeof(d->name), "%s", t[i].name);
		snprintf(d->unit, sizeof(d->unit), "%s", t[i].unit);
		snprintf(d->help, sizeof(d->help), "%s", t[i].help);
		d->scopes = t[i].scopes;
		d->kind = t[i].kind;
	}
	/* the magic last: a reader takes the file once it is whole */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy(h->magic, BRAID_STATFILE_MAGIC, 8);
	return 0;
}

static struct braid_statfile_slot *slot_at(int i)
{
	const struct braid_statfile_hdr *h = (const struct braid_statfile_hdr *)sf.map;

	return (struct braid_statfile_slot *)(sf.map + h->slot_off + (size_t)i * h->slot_size);
}

void braid_stat_attach(struct braid_ep *ep)
{
	int i;

	ep->stat_slot = -1;
	pthread_mutex_lock(&sf.lock);
	ep->stat_id = sf.next_id++;
	if (sf.map && sf.pid != getpid()) {
		/* a forked child: the parent's file is the parent's */
		munmap(sf.map, sf.size);
		sf.map = NULL;
		sf.used = 0;
	}
	if (!braid_cfg.stat || sf.failed)
		goto out;
	if (!sf.map) {
		int ret = file_make();

		if (ret) {
			sf.failed = true;
			BRAID_WARN(FI_LOG_CORE, "counters not published for braid-stat: %s: %s "
				   "(FI_BRAID_STAT_DIR; FI_BRAID_STAT=0 turns publishing off)\n",
				   sf.path, fi_strerror(-ret));
			goto out;
		}
	}
	for (i = 0; i < BRAID_STATFILE_SLOTS; i++) {
		struct braid_statfile_slot *s = slot_at(i);

		if (!s->used) {
			s->len = 0;
			__atomic_store_n(&s->used, 1, __ATOMIC_RELEASE);
			ep->stat_slot = i;
			ep->stat_next = 0;
			sf.used++;
			goto out;
		}
	}
	((struct braid_statfile_hdr *)sf.map)->unpublished++;
out:
	pthread_mutex_unlock(&sf.lock);
	/* seen at once, not only once it is first progressed (the caller holds the endpoint's lock) */
	if (ep->stat_slot >= 0)
		braid_stat_publish(ep, braid_now_ns());
}

void braid_stat_detach(struct braid_ep *ep)
{
	if (ep->stat_slot < 0)
		return;
	pthread_mutex_lock(&sf.lock);
	__atomic_store_n(&slot_at(ep->stat_slot)->used, 0, __ATOMIC_RELEASE);
	ep->stat_slot = -1;
	if (--sf.used == 0) {
		munmap(sf.map, sf.size);
		sf.map = NULL;
		unlink(sf.path);
	}
	pthread_mutex_unlock(&sf.lock);
}

void braid_stat_cleanup(void)
{
	pthread_mutex_lock(&sf.lock);
	if (sf.map) {
		munmap(sf.map, sf.size);
		sf.map = NULL;
		unlink(sf.path);
	}
	pthread_mutex_unlock(&sf.lock);
}

void braid_stat_publish(struct braid_ep *ep, uint64_t now)
{
	struct braid_statfile_slot *s = slot_at(ep->stat_slot);
	uint32_t seq = s->seq;
	ssize_t n;

	ep->stat_next = now + (uint64_t)braid_cfg.stat_ms * 1000000ULL;
	__atomic_store_n(&s->seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	n = ep_snapshot(ep, s + 1, BRAID_STATFILE_SLOT - sizeof(*s), now);
	s->len = n > 0 ? (uint32_t)n : 0;
	__atomic_store_n(&s->seq, seq + 2, __ATOMIC_RELEASE);
}

/* ---- fi_open_ops(FI_BRAID_STAT_OPS) ---- */

/*
 * core's counter table is rdma/fi_braid.h's descriptor array as it is: the
 * same layout, the same scope and kind values (checked here), and static for
 * the life of the process.
 */
_Static_assert(BRAID_SCOPE_EP == FI_BRAID_SCOPE_EP && BRAID_SCOPE_PEER == FI_BRAID_SCOPE_PEER &&
	       BRAID_SCOPE_PATH == FI_BRAID_SCOPE_PATH && BRAID_CTR_COUNTER == FI_BRAID_COUNTER &&
	       BRAID_CTR_GAUGE == FI_BRAID_GAUGE, "scope and kind values as fi_braid.h's");
_Static_assert(sizeof(struct braid_ctr_desc) == sizeof(struct fi_braid_stat_desc) &&
	       offsetof(struct braid_ctr_desc, name) == offsetof(struct fi_braid_stat_desc, name) &&
	       offsetof(struct braid_ctr_desc, unit) == offsetof(struct fi_braid_stat_desc, unit) &&
	       offsetof(struct braid_ctr_desc, help) == offsetof(struct fi_braid_stat_desc, help) &&
	       offsetof(struct braid_ctr_desc, scopes) == offsetof(struct fi_braid_stat_desc, scopes) &&
	       offsetof(struct braid_ctr_desc, kind) == offsetof(struct fi_braid_stat_desc, kind),
	       "a descriptor is laid out as struct fi_braid_stat_desc");
/* core writes the peer records of a snapshot straight into the caller's buffer */
_Static_assert(sizeof(struct braid_ctr_peer_rec) == sizeof(struct fi_braid_stat_peer) &&
	       offsetof(struct braid_ctr_peer_rec, paths) == offsetof(struct fi_braid_stat_peer, paths) &&
	       offsetof(struct braid_ctr_peer_rec, addr) == offsetof(struct fi_braid_stat_peer, addr) &&
	       offsetof(struct braid_ctr_peer_rec, v) == offsetof(struct fi_braid_stat_peer, v),
	       "a peer record is laid out as struct fi_braid_stat_peer");

static size_t stat_table(const struct fi_braid_stat_desc **descs)
{
	const struct braid_ctr_desc *t;
	size_t n = braid_ctr_table(&t);

	*descs = (const struct fi_braid_stat_desc *)t;
	return n;
}

static ssize_t stat_snapshot(struct fid *fid, void *buf, size_t len)
{
	struct braid_ep *ep;
	ssize_t ret;

	if (!braid_fid_is_ep(fid) || !buf || ((uintptr_t)buf & 7))
		return -FI_EINVAL;
	ep = braid_container_of(fid, struct braid_ep, ep_fid.fid);
	braid_ep_lock(ep);
	ret = ep_snapshot(ep, buf, len, braid_now_ns());
	braid_ep_unlock(ep);
	return ret;
}

static int stat_value(struct fid *fid, const char *name, uint64_t *value)
{
	uint64_t v[sizeof(struct braid_ep_stats) / 8 + sizeof(struct braid_rd_stats) / 8 +
		   sizeof(struct braid_rc_stats) / 8];
	struct braid_ep *ep;
	int i;

	if (!braid_fid_is_ep(fid) || !name || !value)
		return -FI_EINVAL;
	i = braid_ctr_find(name, BRAID_SCOPE_EP);
	if (i < 0)
		return -FI_ENOENT;
	ep = braid_container_of(fid, struct braid_ep, ep_fid.fid);
	braid_ep_lock(ep);
	ep_row(ep, v);
	braid_ep_unlock(ep);
	*value = v[i];
	return 0;
}

static struct fi_braid_stat_ops stat_ops = {
	.size = sizeof(struct fi_braid_stat_ops),
	.table = stat_table,
	.snapshot = stat_snapshot,
	.value = stat_value,
};

int braid_stat_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
			void *context)
{
	(void)fid;
	(void)context;
	if (!name || !ops || flags)
		return -FI_EINVAL;
	if (strcmp(name, FI_BRAID_STAT_OPS))
		return -FI_ENOSYS;
	*ops = &stat_ops;
	return 0;
}
