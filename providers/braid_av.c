/* braid_av.c: address vectors (fi_av(3)): map and table, IPv4 sockaddr addresses, reverse lookup for FI_SOURCE. */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "braid.h"

#define AV_FLAGS	(FI_EVENT | FI_READ | FI_SYMMETRIC)

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

/* Add one checked address; returns its fi_addr or a negative FI_E*. */
static int64_t av_add_locked(struct braid_av *av, const struct sockaddr_in *sin)
{
	uint64_t key;
	size_t idx;
	int ret;

	if (av->count == av->cap) {
		size_t cap = av->cap ? av->cap * 2 : 64;
		struct sockaddr_in *addrs = realloc(av->addrs, cap * sizeof(*addrs));
		uint8_t *valid;

		if (!addrs)
			return -FI_ENOMEM;
		av->addrs = addrs;
		valid = realloc(av->valid, cap);
		if (!valid)
			return -FI_ENOMEM;
		av->valid = valid;
		av->cap = cap;
	}
	idx = av->count;
	key = av_key(sin->sin_addr, ntohs(sin->sin_port));
	if (!braid_map_get(&av->rev, key)) {
		ret = braid_map_insert(&av->rev, key, (void *)(uintptr_t)(idx + 1));
		if (ret)
			return ret;
	}
	memset(&av->addrs[idx], 0, sizeof(av->addrs[idx]));
	av->addrs[idx].sin_family = AF_INET;
	av->addrs[idx].sin_addr = sin->sin_addr;
	av->addrs[idx].sin_port = sin->sin_port;
	av->valid[idx] = 1;
	av->count++;
	return (int64_t)idx;
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
	size_t i, j;

	if (flags)
		return -FI_EBADFLAGS;
	if (count && !fi_addr)
		return -FI_EINVAL;
	pthread_mutex_lock(&av->lock);
	for (i = 0; i < count; i++) {
		fi_addr_t a = fi_addr[i];
		uint64_t key;

		if (!av_valid_locked(av, a)) {
			ret = -FI_EINVAL;
			continue;
		}
		av->valid[a] = 0;
		key = av_key(av->addrs[a].sin_addr, ntohs(av->addrs[a].sin_port));
		if ((uintptr_t)braid_map_get(&av->rev, key) == a + 1) {
			braid_map_remove(&av->rev, key);
			/* another live entry with the same address takes over */
			for (j = 0; j < av->count; j++) {
				if (av->valid[j] && av_key(av->addrs[j].sin_addr,
					ntohs(av->addrs[j].sin_port)) == key) {
					braid_map_insert(&av->rev, key, (void *)(uintptr_t)(j + 1));
					break;
				}
			}
		}
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
	braid_map_construct(&av->rev);
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
