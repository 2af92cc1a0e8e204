/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_av.c: address vectors (fi_av(3)): map and table, IPv4 sockaddr addresses, reverse lookup for FI_SOURCE, named AVs shared between processes. */
#include <arpa/inet.h>
#include <netdb.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "braid.h"

#define AV_FLAGS	(FI_EVENT | FI_READ | FI_SYMMETRIC)
#define AV_NONE		UINT32_MAX	/* no entry (chain ends, empty free list) */
#define AV_MAX		(AV_NONE - 1)	/* entries an AV holds at most */
/* entries inserted or removed per hold of the lock: sends, which look their
 * destination up under it, wait at most that long for a large batch */
#define AV_BATCH	1024

static inline uint64_t av_key(struct in_addr ip, uint16_t port_host)
{
	return ((uint64_t)ntohl(ip.s_addr) << 16) | port_host;
}

static bool av_valid_locked(struct braid_av *av, fi_addr_t fi_addr)
{
	return fi_addr < av->count && av->valid[fi_addr];
}

static int64_t av_add_locked(struct braid_av *av, const struct sockaddr_in *sin);
static int64_t av_skip_locked(struct braid_av *av);
static void av_del_locked(struct braid_av *av, uint32_t a);

/*
 * A named AV: bring this process's copy up to date with the segment
 * (include/braid/braid_av_shm.h): the entries published since, then, if
 * anything was removed since the last look, the removals. Entries are
 * published once and removed once, so what was read stays true until the
 * removal count moves. Returns 0 or -FI_EIO (a corrupt segment: the copy
 * stays as it was), -FI_ENOMEM (the rest on a later call).
 */
static int av_sync_locked(struct braid_av *av)
{
	struct braid_av_shm *s = av->shm;
	uint64_t count, removed, i;
	int ret;

	if (!s)
		return 0;
	ret = braid_av_shm_state(s, &count, &removed);
	if (!ret && count < av->count)
		ret = -FI_EIO;	/* counts only grow */
	if (ret) {
		if (!av->shm_bad)
			BRAID_WARN(FI_LOG_AV, "AV segment %s is corrupt (count %llu)\n",
				   s->path, (unsigned long long)count);
		av->shm_bad = true;
		return ret;
	}
	for (i = av->count; i < count; i++) {
		struct sockaddr_in sin;
		int64_t idx;

		/* an index removed before we saw it, or holding garbage: a hole */
		idx = braid_av_shm_get(s, i, &sin) ? av_add_locked(av, &sin) : av_skip_locked(av);
		if (idx < 0)
			return (int)idx;
	}
	if (removed != av->shm_removed) {
		for (i = 0; i < av->count; i++)
			if (av->valid[i] && !braid_av_shm_live(s, i))
				av_del_locked(av, (uint32_t)i);
		av->shm_removed = removed;
	}
	return 0;
}

int braid_av_lookup_addr(struct braid_av *av, fi_addr_t fi_addr, struct sockaddr_in *sin)
{
	int ret = 0;

	pthread_mutex_lock(&av->lock);
	(void)av_sync_locked(av);	/* failing, the entries seen so far still serve */
	if (av_valid_locked(av, fi_addr))
		*sin = av->addrs[fi_addr];
	else
		ret = -FI_EINVAL;
	pthread_mutex_unlock(&av->lock);
	return ret;
}

fi_addr_t braid_av_reverse(struct braid_av *av, struct in_addr ip, uint16_t port)
{
	void *v;

	pthread_mutex_lock(&av->lock);
	(void)av_sync_locked(av);
	v = braid_map_get(&av->rev, av_key(ip, port));
	pthread_mutex_unlock(&av->lock);
	return v ? (fi_addr_t)((uintptr_t)v - 1) : FI_ADDR_NOTAVAIL;
}

static void av_free(struct braid_av *av)
{
	if (av->shm) {
		braid_av_shm_close(av->shm);
		free(av->shm);
	}
	braid_map_destruct(&av->rev);
	free(av->addrs);
	free(av->valid);
	free(av->same_next);
	free(av->same_prev);
	pthread_mutex_destroy(&av->lock);
	free(av);
}

static int av_close(struct fid *fid)
{
	struct braid_av *av = braid_container_of(fid, struct braid_av, av_fid.fid);

	if (atomic_load(&av->ref))
		return -FI_EBUSY;
	if (av->eq)
		atomic_fetch_sub(&av->eq->ref, 1);
	atomic_fetch_sub(&av->domain->ref, 1);
	av_free(av);
	return 0;
}

static int av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct braid_av *av = braid_container_of(fid, struct braid_av, av_fid.fid);

	if (!bfid || bfid->fclass != FI_CLASS_EQ)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	if (av->eq)
		return -FI_EINVAL;
	av->eq = braid_container_of(bfid, struct braid_eq, eq_fid.fid);
	atomic_fetch_add(&av->eq->ref, 1);
	return 0;
}

static int av_check_addr(const struct sockaddr_in *sin)
{
	if (sin->sin_family != AF_INET || sin->sin_port == 0 ||
	    sin->sin_addr.s_addr == htonl(INADDR_ANY))
		return -FI_EINVAL;
	return 0;
}

/* Room for @cap entries (the arrays at least that long). */
static int av_resize_locked(struct braid_av *av, size_t cap)
{
	void *p;

	if (cap <= av->cap)
		return 0;
	if (cap > AV_MAX)
		return -FI_ENOSPC;
	p = realloc(av->addrs, cap * sizeof(*av->addrs));
	if (!p)
		return -FI_ENOMEM;
	av->addrs = p;
	p = realloc(av->valid, cap);
	if (!p)
		return -FI_ENOMEM;
	av->valid = p;
	p = realloc(av->same_next, cap * sizeof(*av->same_next));
	if (!p)
		return -FI_ENOMEM;
	av->same_next = p;
	p = realloc(av->same_prev, cap * sizeof(*av->same_prev));
	if (!p)
		return -FI_ENOMEM;
	av->same_prev = p;
	av->cap = cap;
	return 0;
}

/* Room for one more new entry (doubling). */
static int av_grow_locked(struct braid_av *av)
{
	size_t cap = av->cap ? av->cap * 2 : 64;

	if (av->count < av->cap)
		return 0;
	if (av->cap >= AV_MAX)
		return -FI_ENOSPC;
	return av_resize_locked(av, cap > AV_MAX ? AV_MAX : cap);
}

/* FI_AV_MAP reuses removed entries; a table, and a named AV of either type, never does */
static bool av_reuses(const struct braid_av *av)
{
	return av->type == FI_AV_MAP && !av->shm;
}

/* A hole: the next index, not in the AV (a named AV's entry removed before this process saw it). */
static int64_t av_skip_locked(struct braid_av *av)
{
	int ret = av_grow_locked(av);

	if (ret)
		return ret;
	av->valid[av->count] = 0;
	return (int64_t)av->count++;
}

/*
 * Add one checked address in O(1); returns its fi_addr or a negative FI_E*.
 * FI_AV_TABLE hands out consecutive indexes, as fi_av(3) says; FI_AV_MAP
 * reuses removed entries first.
 */
static int64_t av_add_locked(struct braid_av *av, const struct sockaddr_in *sin)
{
	uint64_t key = av_key(sin->sin_addr, ntohs(sin->sin_port));
	uint32_t idx, head;
	void *v;
	int ret;

	if (av_reuses(av) && av->free_head != AV_NONE) {
		idx = av->free_head;
		av->free_head = av->same_next[idx];
	} else {
		ret = av_grow_locked(av);
		if (ret)
			return ret;
		idx = (uint32_t)av->count++;
	}
	/* the address's first entry stays the one FI_SOURCE names; this one joins
	 * its chain at the tail (the head's same_prev names the tail) */
	v = braid_map_get(&av->rev, key);
	head = v ? (uint32_t)((uintptr_t)v - 1) : AV_NONE;
	if (head == AV_NONE) {
		ret = braid_map_insert(&av->rev, key, (void *)(uintptr_t)(idx + 1));
		if (ret) {
			/* give the entry back (a table's is always its last) */
			if (av_reuses(av)) {
				av->same_next[idx] = av->free_head;
				av->free_head = idx;
			} else {
				av->count--;
			}
			av->valid[idx] = 0;
			return ret;
		}
		av->same_next[idx] = AV_NONE;
		av->same_prev[idx] = idx;
	} else {
		uint32_t tail = av->same_prev[head];

		av->same_next[tail] = idx;
		av->same_prev[idx] = tail;
		av->same_next[idx] = AV_NONE;
		av->same_prev[head] = idx;
	}
	memset(&av->addrs[idx], 0, sizeof(av->addrs[idx]));
	av->addrs[idx].sin_family = AF_INET;
	av->addrs[idx].sin_addr = sin->sin_addr;
	av->addrs[idx].sin_port = sin->sin_port;
	av->valid[idx] = 1;
	return (int64_t)idx;
}

/*
 * Remove live entry @a in O(1): unlink it from its address's chain (oldest
 * first; the head's same_prev names the tail); the next oldest entry of the
 * address takes over FI_SOURCE.
 */
static void av_del_locked(struct braid_av *av, uint32_t a)
{
	uint64_t key = av_key(av->addrs[a].sin_addr, ntohs(av->addrs[a].sin_port));
	uint32_t head = (uint32_t)((uintptr_t)braid_map_get(&av->rev, key) - 1);
	uint32_t next = av->same_next[a], prev = av->same_prev[a];

	av->valid[a] = 0;
	atomic_fetch_add_explicit(&av->gen, 1, memory_order_release);
	if (a == head) {
		braid_map_remove(&av->rev, key);
		if (next != AV_NONE) {
			(void)braid_map_insert(&av->rev, key, (void *)(uintptr_t)(next + 1));
			av->same_prev[next] = prev;	/* the tail */
		}
	} else {
		av->same_next[prev] = next;
		if (next != AV_NONE)
			av->same_prev[next] = prev;
		else
			av->same_prev[head] = prev;	/* it was the tail */
	}
	if (av_reuses(av)) {
		av->same_next[a] = av->free_head;
		av->free_head = a;
	}
}

/* A named AV's writer, holding the segment's lock: add @sin and publish it at the same index. */
static int64_t av_add_shared_locked(struct braid_av *av, const struct sockaddr_in *sin)
{
	int64_t idx;

	if (av->count >= av->shm->cap)
		return -FI_ENOSPC;	/* each index is handed out once */
	idx = av_add_locked(av, sin);
	if (idx >= 0)
		braid_av_shm_publish(av->shm, (uint64_t)idx, sin);
	return idx;
}

/*
 * Start a change to @av: a named AV's writer takes the segment's lock and
 * brings its copy up to date first. On success @av->lock is held; undo
 * with av_change_end().
 */
static int av_change_begin(struct braid_av *av)
{
	int ret;

	if (av->shm) {
		if (av->shm->read_only)
			return -FI_EPERM;	/* opened FI_READ */
		ret = braid_av_shm_lock(av->shm);
		if (ret)
			return ret;
	}
	pthread_mutex_lock(&av->lock);
	ret = av_sync_locked(av);
	if (ret) {
		pthread_mutex_unlock(&av->lock);
		if (av->shm)
			braid_av_shm_unlock(av->shm);
	}
	return ret;
}

static void av_change_end(struct braid_av *av)
{
	pthread_mutex_unlock(&av->lock);
	if (av->shm)
		braid_av_shm_unlock(av->shm);
}

static int av_insert(struct fid_av *av_fid, const void *addr, size_t count,
		     fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct braid_av *av = braid_container_of(av_fid, struct braid_av, av_fid);
	const uint8_t *addrs = addr;	/* the caller's array may be unaligned (a message buffer) */
	int *sync_err = (flags & FI_SYNC_ERR) ? context : NULL;
	bool async = av->flags & FI_EVENT;
	int inserted = 0, ret;
	size_t i;

	if (flags & ~(FI_MORE | FI_SYNC_ERR))
		return -FI_EBADFLAGS;
	if (count && !addr)
		return -FI_EINVAL;
	if ((flags & FI_SYNC_ERR) && (async || !context))
		return -FI_EINVAL;
	if (async && !av->eq)
		return -FI_ENOEQ;

	ret = av_change_begin(av);
	if (ret)
		return ret;
	for (i = 0; i < count; i++) {
		struct sockaddr_in sin;
		int64_t idx;

		if (i && i % AV_BATCH == 0) {
			/* let the sends that wait for the lock go */
			pthread_mutex_unlock(&av->lock);
			sched_yield();	/* a waiting send gets the lock, not us again */
			pthread_mutex_lock(&av->lock);
		}
		memcpy(&sin, addrs + i * sizeof(sin), sizeof(sin));
		idx = av_check_addr(&sin);
		if (!idx)
			idx = av->shm ? av_add_shared_locked(av, &sin) : av_add_locked(av, &sin);
		if (idx < 0) {
			if (fi_addr)
				fi_addr[i] = FI_ADDR_NOTAVAIL;
			if (sync_err)
				sync_err[i] = (int)-idx;
			if (async) {
				struct fi_eq_err_entry err = {
					.fid = &av->av_fid.fid,
					.context = context,
					.data = i,
					.err = (int)-idx,
				};
				braid_eq_report(av->eq, FI_AV_COMPLETE, &err, sizeof(err), 0, true);
			}
			continue;
		}
		if (fi_addr)
			fi_addr[i] = (fi_addr_t)idx;
		if (sync_err)
			sync_err[i] = 0;
		inserted++;
	}
	av_change_end(av);

	if (async) {
		struct fi_eq_entry ev = {
			.fid = &av->av_fid.fid,
			.context = context,
			.data = (uint64_t)inserted,
		};
		braid_eq_report(av->eq, FI_AV_COMPLETE, &ev, sizeof(ev), 0, false);
		return 0;
	}
	return inserted;
}

static int av_insertsvc(struct fid_av *av_fid, const char *node, const char *service,
			fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_DGRAM }, *res;
	struct sockaddr_in sin;

	if (!node)
		return -FI_EINVAL;
	if (!service) {
		/* fi_av(3): an FI_ADDR_STR node ("fi_sockaddr_in://ip:port") with no service */
		if (braid_parse_addr_str(node, &sin))
			return -FI_EINVAL;
	} else {
		if (getaddrinfo(node, service, &hints, &res))
			return -FI_EADDRNOTAVAIL;
		memcpy(&sin, res->ai_addr, sizeof(sin));
		freeaddrinfo(res);
	}
	return av_insert(av_fid, &sin, 1, fi_addr, flags, context);
}

static int av_insertsym(struct fid_av *av, const char *node, size_t nodecnt,
			const char *service, size_t svccnt, fi_addr_t *fi_addr,
			uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static int av_remove(struct fid_av *av_fid, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	struct braid_av *av = braid_container_of(av_fid, struct braid_av, av_fid);
	int ret = 0;
	size_t i;

	if (flags)
		return -FI_EBADFLAGS;
	if (count && !fi_addr)
		return -FI_EINVAL;
	ret = av_change_begin(av);
	if (ret)
		return ret;
	for (i = 0; i < count; i++) {
		if (i && i % AV_BATCH == 0) {
			pthread_mutex_unlock(&av->lock);
			sched_yield();	/* a waiting send gets the lock, not us again */
			pthread_mutex_lock(&av->lock);
		}
		if (!av_valid_locked(av, fi_addr[i])) {
			ret = -FI_EINVAL;
			continue;
		}
		if (av->shm)
			av->shm_removed = braid_av_shm_unpublish(av->shm, fi_addr[i]);
		av_del_locked(av, (uint32_t)fi_addr[i]);
	}
	av_change_end(av);
	return ret;
}

static int av_lookup(struct fid_av *av_fid, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
	struct braid_av *av = braid_container_of(av_fid, struct braid_av, av_fid);
	struct sockaddr_in sin;
	int ret;

	if (!addrlen || (*addrlen && !addr))
		return -FI_EINVAL;
	ret = braid_av_lookup_addr(av, fi_addr, &sin);
	if (ret)
		return ret;
	memcpy(addr, &sin, *addrlen < sizeof(sin) ? *addrlen : sizeof(sin));
	*addrlen = sizeof(sin);
	return 0;
}

static const char *av_straddr(struct fid_av *av, const void *addr, char *buf, size_t *len)
{
	struct sockaddr_in sin;
	char ip[INET_ADDRSTRLEN] = "(invalid)";
	char tmp[64];
	int n;

	if (!addr || !len)
		return NULL;
	memcpy(&sin, addr, sizeof(sin));	/* it may be unaligned */
	if (sin.sin_family == AF_INET)
		inet_ntop(AF_INET, &sin.sin_addr, ip, sizeof(ip));
	n = snprintf(tmp, sizeof(tmp), "fi_sockaddr_in://%s:%u", ip, ntohs(sin.sin_port));
	if (buf && *len) {
		strncpy(buf, tmp, *len - 1);
		buf[*len - 1] = '\0';
	}
	*len = (size_t)n + 1;
	return buf;
}

static struct fi_ops av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = av_close,
	.bind = av_bind,
	.control = braid_nosys_control,
	.ops_open = braid_nosys_ops_open,
	.tostr = braid_nosys_tostr,
	.ops_set = braid_nosys_ops_set,
};

static struct fi_ops_av av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = av_insert,
	.insertsvc = av_insertsvc,
	.insertsym = av_insertsym,
	.remove = av_remove,
	.lookup = av_lookup,
	.straddr = av_straddr,
};

/*
 * Room for @count addresses now (fi_av(3) count, the addresses the
 * application expects to insert), so that inserting them never stops sends
 * for a rehash; best effort: without the memory now, the AV grows as it
 * goes. Before the AV is shared with anyone.
 */
static void av_reserve(struct braid_av *av, size_t count)
{
	if (count && count <= AV_MAX) {
		(void)av_resize_locked(av, count);
		(void)braid_map_reserve(&av->rev, count);
	}
}

/*
 * A named AV (fi_av(3) name): open its segment (made if it does not exist,
 * unless FI_READ), read what it holds, and hand the application the
 * segment's fi_addr_t array as fi_av_attr.map_addr, whatever it passed
 * there: entry i is the fi_addr of the i-th address inserted (i), in every
 * process that opens the name.
 */
static int av_open_shared(struct braid_av *av, struct fi_av_attr *attr)
{
	int ret;

	av->shm = calloc(1, sizeof(*av->shm));
	if (!av->shm)
		return -FI_ENOMEM;
	ret = braid_av_shm_open(av->shm, attr->name, attr->flags & FI_READ, attr->count);
	if (ret) {
		BRAID_INFO(FI_LOG_AV, "named AV \"%s\": %s\n", attr->name, fi_strerror(-ret));
		free(av->shm);
		av->shm = NULL;
		return ret;
	}
	/* room for all the segment holds: taking in another process's inserts
	 * on the receive path then allocates nothing */
	av_reserve(av, av->shm->cap);
	pthread_mutex_lock(&av->lock);
	ret = av_sync_locked(av);
	pthread_mutex_unlock(&av->lock);
	if (ret)
		return ret;
	attr->map_addr = av->shm->map;
	return 0;
}

int braid_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		  struct fid_av **av_out, void *context)
{
	struct braid_domain *dom;
	struct braid_av *av;
	enum fi_av_type type;
	int ret;

	if (!domain || !attr || !av_out)
		return -FI_EINVAL;
	dom = braid_container_of(domain, struct braid_domain, domain_fid);
	type = attr->type;
	if (type == FI_AV_UNSPEC)
		type = dom->info->domain_attr->av_type != FI_AV_UNSPEC ?
		       dom->info->domain_attr->av_type : FI_AV_TABLE;
	if (type != FI_AV_MAP && type != FI_AV_TABLE)
		return -FI_EINVAL;
	if (dom->info->domain_attr->av_type != FI_AV_UNSPEC &&
	    dom->info->domain_attr->av_type != type)
		return -FI_EINVAL;
	if (attr->flags & ~AV_FLAGS)
		return -FI_EBADFLAGS;
	if (attr->rx_ctx_bits)
		return -FI_EINVAL;	/* no scalable endpoints */
	if ((attr->flags & FI_READ) && !attr->name)
		return -FI_EINVAL;	/* fi_av(3): a read-only AV is a named one that exists */

	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->domain = dom;
	av->type = type;
	av->flags = attr->flags;
	av->free_head = AV_NONE;
	braid_map_construct(&av->rev);
	pthread_mutex_init(&av->lock, NULL);
	if (attr->name) {
		ret = av_open_shared(av, attr);
		if (ret) {
			av_free(av);
			return ret;
		}
	}
	if (!av->shm)
		av_reserve(av, attr->count);
	atomic_init(&av->ref, 0);
	atomic_fetch_add(&dom->ref, 1);
	attr->type = type;
	av->av_fid.fid.fclass = FI_CLASS_AV;
	av->av_fid.fid.context = context;
	av->av_fid.fid.ops = &av_fi_ops;
	av->av_fid.ops = &av_ops;
	*av_out = &av->av_fid;
	return 0;
}
