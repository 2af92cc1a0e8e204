/* braid_av.c: address vectors (fi_av(3)): map and table, IPv4 sockaddr addresses, reverse lookup for FI_SOURCE. */
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

int braid_av_lookup_addr(struct braid_av *av, fi_addr_t fi_addr, struct sockaddr_in *sin)
{
	int ret = 0;

	pthread_mutex_lock(&av->lock);
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
	v = braid_map_get(&av->rev, av_key(ip, port));
	pthread_mutex_unlock(&av->lock);
	return v ? (fi_addr_t)((uintptr_t)v - 1) : FI_ADDR_NOTAVAIL;
}

static int av_close(struct fid *fid)
{
	struct braid_av *av = braid_container_of(fid, struct braid_av, av_fid.fid);

	if (atomic_load(&av->ref))
		return -FI_EBUSY;
	if (av->eq)
		atomic_fetch_sub(&av->eq->ref, 1);
	braid_map_destruct(&av->rev);
	free(av->addrs);
	free(av->valid);
	free(av->same_next);
	free(av->same_prev);
	pthread_mutex_destroy(&av->lock);
	atomic_fetch_sub(&av->domain->ref, 1);
	free(av);
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

	if (av->type == FI_AV_MAP && av->free_head != AV_NONE) {
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
			if (av->type == FI_AV_MAP) {
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
	if (av->type == FI_AV_MAP) {
		av->same_next[a] = av->free_head;
		av->free_head = a;
	}
}

static int av_insert(struct fid_av *av_fid, const void *addr, size_t count,
		     fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct braid_av *av = braid_container_of(av_fid, struct braid_av, av_fid);
	const uint8_t *addrs = addr;	/* the caller's array may be unaligned (a message buffer) */
	int *sync_err = (flags & FI_SYNC_ERR) ? context : NULL;
	bool async = av->flags & FI_EVENT;
	int inserted = 0;
	size_t i;

	if (flags & ~(FI_MORE | FI_SYNC_ERR))
		return -FI_EBADFLAGS;
	if (count && !addr)
		return -FI_EINVAL;
	if ((flags & FI_SYNC_ERR) && (async || !context))
		return -FI_EINVAL;
	if (async && !av->eq)
		return -FI_ENOEQ;

	pthread_mutex_lock(&av->lock);
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
			idx = av_add_locked(av, &sin);
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
	pthread_mutex_unlock(&av->lock);

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
	pthread_mutex_lock(&av->lock);
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
		av_del_locked(av, (uint32_t)fi_addr[i]);
	}
	pthread_mutex_unlock(&av->lock);
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

int braid_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		  struct fid_av **av_out, void *context)
{
	struct braid_domain *dom;
	struct braid_av *av;
	enum fi_av_type type;

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
	if (attr->name || (attr->flags & FI_READ))
		return -FI_ENOSYS;	/* named (shared) AVs are not supported */

	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->domain = dom;
	av->type = type;
	av->flags = attr->flags;
	av->free_head = AV_NONE;
	braid_map_construct(&av->rev);
	/* fi_av(3) count, the addresses the application expects to insert: room
	 * for them now, so that inserting them never stops sends for a rehash
	 * (best effort: without the memory now, the AV grows as it goes) */
	if (attr->count && attr->count <= AV_MAX) {
		(void)av_resize_locked(av, attr->count);
		(void)braid_map_reserve(&av->rev, attr->count);
	}
	pthread_mutex_init(&av->lock, NULL);
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
