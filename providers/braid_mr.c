/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_mr.c: memory registration (fi_mr(3)): keys, access flags, descriptors. */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "braid.h"

#define BRAID_MR_ACCESS	(FI_SEND | FI_RECV | FI_READ | FI_WRITE | \
			 FI_REMOTE_READ | FI_REMOTE_WRITE)

static int mr_close(struct fid *fid)
{
	struct braid_mr *mr = braid_container_of(fid, struct braid_mr, mr_fid.fid);
	struct braid_domain *dom = mr->domain;

	pthread_rwlock_wrlock(&dom->mr_lock);
	braid_map_remove(&dom->mr_keys, mr->key);
	pthread_rwlock_unlock(&dom->mr_lock);
	for (int i = 0; i < 2; i++)
		if (mr->rcntr[i])
			atomic_fetch_sub(&mr->rcntr[i]->ref, 1);
	atomic_fetch_sub(&dom->ref, 1);
	braid_hmem_mr_close(mr);
	free(mr);
	return 0;
}

/*
 * fi_mr_bind of a counter (fi_mr(3)): it counts the remote reads
 * (FI_REMOTE_READ) and/or writes (FI_REMOTE_WRITE; at the target every
 * atomic is a write, fi_cntr(3)) that target this region. The domain must
 * offer FI_RMA_EVENT; one counter of each kind a region.
 */
static int mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct braid_mr *mr = braid_container_of(fid, struct braid_mr, mr_fid.fid);
	const uint64_t kinds[2] = { FI_REMOTE_READ, FI_REMOTE_WRITE };
	struct braid_cntr *cntr;
	int i;

	if (!bfid || bfid->fclass != FI_CLASS_CNTR)
		return -FI_EINVAL;
	cntr = braid_cntr_of(braid_container_of(bfid, struct fid_cntr, fid));
	if (!cntr || cntr->domain != mr->domain)
		return -FI_EINVAL;
	if (!flags || (flags & ~(FI_REMOTE_READ | FI_REMOTE_WRITE)))
		return -FI_EBADFLAGS;
	if (!(mr->domain->info->caps & FI_RMA_EVENT))
		return -FI_EOPNOTSUPP;	/* the application did not ask for remote events */
	pthread_rwlock_wrlock(&mr->domain->mr_lock);
	for (i = 0; i < 2; i++) {
		if ((flags & kinds[i]) && mr->rcntr[i]) {
			pthread_rwlock_unlock(&mr->domain->mr_lock);
			return -FI_EALREADY;
		}
	}
	for (i = 0; i < 2; i++) {
		if (!(flags & kinds[i]))
			continue;
		mr->rcntr[i] = cntr;
		atomic_fetch_add(&cntr->ref, 1);
	}
	pthread_rwlock_unlock(&mr->domain->mr_lock);
	return 0;
}

void braid_mr_count(struct braid_domain *dom, uint64_t key, bool write)
{
	struct braid_mr *mr;

	pthread_rwlock_rdlock(&dom->mr_lock);
	mr = braid_map_get(&dom->mr_keys, key);
	if (mr && mr->rcntr[write])
		braid_cntr_inc(mr->rcntr[write]);
	pthread_rwlock_unlock(&dom->mr_lock);
}

static struct fi_ops mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = mr_close,
	.bind = mr_bind,
	.control = braid_nosys_control,
	.ops_open = braid_nosys_ops_open,
	.tostr = braid_nosys_tostr,
	.ops_set = braid_nosys_ops_set,
};


/* the domain's MR mode bits; FI_MR_BASIC is what it stands for (fi_domain(3)) */
static int mr_mode(const struct braid_domain *dom)
{
	int m = dom->info->domain_attr->mr_mode;

	return m == BRAID_MR_BASIC ? FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY : m;
}

/* An unguessable key: 64 random bits, never 0, unique in the domain. */
static int mr_random_key(struct braid_domain *dom, uint64_t *key)
{
	int tries;

	for (tries = 0; tries < 16; tries++) {
		if (getrandom(key, sizeof(*key), 0) != sizeof(*key))
			*key = dom->mr_next_key++ * 0x9e3779b97f4a7c15ULL;
		/* a RoCEv2 R_Key is 32 bits (mr_key_size 4 on MSG domains) */
		if (dom->info->domain_attr->mr_key_size == 4)
			*key &= 0xffffffffULL;
		if (*key && !braid_map_get(&dom->mr_keys, *key))
			return 0;
	}
	return -FI_ENOKEY;
}

int braid_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		     uint64_t flags, struct fid_mr **mr_out)
{
	struct braid_domain *dom;
	struct braid_mr *mr;
	size_t i;
	int ret;

	if (!fid || fid->fclass != FI_CLASS_DOMAIN || !attr || !mr_out)
		return -FI_EINVAL;
	dom = braid_container_of(fid, struct braid_domain, domain_fid.fid);
	if (flags)
		return -FI_EBADFLAGS;	/* FI_RMA_EVENT and the rest: no RMA yet */
	if (attr->access & ~BRAID_MR_ACCESS)
		return -FI_EINVAL;
	if (attr->iov_count > BRAID_IOV_LIMIT || (attr->iov_count && !attr->mr_iov))
		return -FI_EINVAL;
	if (attr->iface != FI_HMEM_SYSTEM && attr->iface != FI_HMEM_CUDA)
		return -FI_ENOSYS;
	for (i = 0; i < attr->iov_count; i++) {
		if (!attr->mr_iov[i].iov_base && attr->mr_iov[i].iov_len)
			return -FI_EINVAL;
	}
	/*
	 * fi_mr(3): a region's key is the domain's unless the attributes give
	 * one. braid keeps one key per domain for its regions: the access check
	 * (braid_mr_check) knows the target endpoint, not the peer's key, so
	 * another key could not be told apart; one that is not the domain's
	 * is an argument braid cannot honour.
	 */
	if (attr->auth_key_size &&
	    (attr->auth_key_size != dom->info->domain_attr->auth_key_size || !attr->auth_key ||
	     memcmp(attr->auth_key, dom->info->domain_attr->auth_key, attr->auth_key_size)))
		return -FI_EINVAL;

	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	mr->domain = dom;
	mr->iov_count = attr->iov_count;
	memcpy(mr->iov, attr->mr_iov, attr->iov_count * sizeof(struct iovec));
	mr->access = attr->access;
	mr->flags = flags;
	/* device memory: checked, and a shadow for the peers' accesses (braid_hmem.c) */
	ret = braid_hmem_mr_open(mr, attr);
	if (ret) {
		braid_hmem_mr_close(mr);
		free(mr);
		return ret;
	}

	pthread_rwlock_wrlock(&dom->mr_lock);
	if (mr_mode(dom) & FI_MR_PROV_KEY) {
		ret = mr_random_key(dom, &mr->key);
	} else {
		mr->key = attr->requested_key;
		ret = braid_map_get(&dom->mr_keys, mr->key) ? -FI_ENOKEY : 0;
		if (dom->info->domain_attr->mr_key_size == 4 && mr->key > UINT32_MAX)
			ret = -FI_EKEYREJECTED;
	}
	if (!ret)
		ret = braid_map_insert(&dom->mr_keys, mr->key, mr);
	pthread_rwlock_unlock(&dom->mr_lock);
	if (ret) {
		braid_hmem_mr_close(mr);
		free(mr);
		return ret;
	}

	mr->mr_fid.fid.fclass = FI_CLASS_MR;
	mr->mr_fid.fid.context = attr->context;
	mr->mr_fid.fid.ops = &mr_fi_ops;
	mr->mr_fid.mem_desc = mr;
	mr->mr_fid.key = mr->key;
	atomic_fetch_add(&dom->ref, 1);
	*mr_out = &mr->mr_fid;
	return 0;
}

int braid_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		  uint64_t access, uint64_t offset, uint64_t requested_key,
		  uint64_t flags, struct fid_mr **mr, void *context)
{
	struct fi_mr_attr attr = {
		.mr_iov = iov,
		.iov_count = count,
		.access = access,
		.offset = offset,
		.requested_key = requested_key,
		.context = context,
		.iface = FI_HMEM_SYSTEM,
	};

	return braid_mr_regattr(fid, &attr, flags, mr);
}

int braid_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
		 uint64_t offset, uint64_t requested_key, uint64_t flags,
		 struct fid_mr **mr, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return braid_mr_regv(fid, &iov, 1, access, offset, requested_key, flags, mr, context);
}

/*
 * braid_mr_check() - may a peer access [@addr, @addr + @len) of the region
 * of key @key with @access (FI_REMOTE_READ or FI_REMOTE_WRITE)? @addr is a
 * virtual address with FI_MR_VIRT_ADDR, else an offset into the region.
 * Sets *@ptr to the local memory. Returns 0 or -FI_EACCES (unknown key,
 * access not granted, a range outside the region, a region of several
 * iovecs, or target endpoint @ep's peers hold an authorization key other
 * than the region's, which is the domain's). Used by every endpoint type
 * that is a target of RMA.
 */
static int mr_check_locked(const struct braid_ep *ep, uint64_t key, uint64_t addr, size_t len,
			   uint64_t access, void **ptr)
{
	struct braid_domain *dom = ep->domain;
	bool narrow = dom->info->domain_attr->mr_key_size == 4;
	struct braid_mr *mr = !narrow || key <= UINT32_MAX ? braid_map_get(&dom->mr_keys, key) : NULL;
	bool virt = mr_mode(dom) & FI_MR_VIRT_ADDR;
	uint64_t base, off, need = access & ~BRAID_MR_ATOMIC;

	if (!key || !mr || (mr->access & need) != need || mr->iov_count != 1 || !ep->mr_auth_ok)
		return -FI_EACCES;
	base = (uint64_t)(uintptr_t)mr->iov[0].iov_base;
	if (virt && addr < base)
		return -FI_EACCES;
	off = virt ? addr - base : addr;
	if (off > mr->iov[0].iov_len || len > mr->iov[0].iov_len - off)
		return -FI_EACCES;
	if (mr->iface == FI_HMEM_SYSTEM) {
		*ptr = (uint8_t *)mr->iov[0].iov_base + off;
		return 0;
	}
	/* device memory: its shadow, brought up to date for what reads it (a read, an atomic) */
	if (!mr->shadow)
		return -FI_EACCES;
	if ((access & (FI_REMOTE_READ | BRAID_MR_ATOMIC)) && braid_hmem_mr_sync(mr, off, len, false))
		return -FI_EIO;
	*ptr = mr->shadow + off;
	return 0;
}

int braid_mr_check(const struct braid_ep *ep, uint64_t key, uint64_t addr, size_t len,
		   uint64_t access, void **ptr)
{
	int ret;

	pthread_rwlock_rdlock(&ep->domain->mr_lock);
	ret = mr_check_locked(ep, key, addr, len, access, ptr);
	pthread_rwlock_unlock(&ep->domain->mr_lock);
	return ret;
}

int braid_mr_written(const struct braid_ep *ep, uint64_t key, uint64_t addr, size_t len)
{
	struct braid_mr *mr;
	void *ptr;
	int ret;

	pthread_rwlock_rdlock(&ep->domain->mr_lock);
	ret = mr_check_locked(ep, key, addr, len, FI_REMOTE_WRITE, &ptr);
	mr = ret ? NULL : braid_map_get(&ep->domain->mr_keys, key);
	if (mr && mr->shadow)
		ret = braid_hmem_mr_sync(mr, (uint64_t)((uint8_t *)ptr - mr->shadow), len, true);
	pthread_rwlock_unlock(&ep->domain->mr_lock);
	return ret;
}
