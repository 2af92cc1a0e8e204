/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_domain.c: the domain object (fi_domain(3)): owns the control lock, MR keys; opens AVs, CQs, counters, endpoints. */
#include <stdlib.h>
#include <string.h>

#include "braid.h"

static int domain_close(struct fid *fid)
{
	struct braid_domain *dom = braid_container_of(fid, struct braid_domain, domain_fid.fid);

	if (atomic_load(&dom->ref))
		return -FI_EBUSY;
	braid_progress_stop(dom);
	if (dom->eq)
		atomic_fetch_sub(&dom->eq->ref, 1);
	braid_map_destruct(&dom->mr_keys);
	for (int i = 0; i < BRAID_RX_CACHE; i++)
		free(atomic_load(&dom->rx_cache[i]));
	if (dom->peers)
		braid_peer_table_close(dom->peers);
	braid_epset_destruct(&dom->eps);
	pthread_rwlock_destroy(&dom->mr_lock);
	pthread_mutex_destroy(&dom->lock);
	pthread_mutex_destroy(&dom->trig_lock);
	pthread_mutex_destroy(&dom->trig_pump);
	fi_freeinfo(dom->info);
	atomic_fetch_sub(&dom->fabric->ref, 1);
	free(dom);
	return 0;
}

static int domain_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct braid_domain *dom = braid_container_of(fid, struct braid_domain, domain_fid.fid);

	if (!bfid)
		return -FI_EINVAL;
	if (bfid->fclass != FI_CLASS_EQ)
		return -FI_EINVAL;
	if (flags & BRAID_REG_MR)
		return -FI_ENOSYS;	/* MR registration completes synchronously */
	if (flags)
		return -FI_EBADFLAGS;
	if (dom->eq)
		return -FI_EALREADY;
	dom->eq = braid_container_of(bfid, struct braid_eq, eq_fid.fid);
	atomic_fetch_add(&dom->eq->ref, 1);
	return 0;
}

static int domain_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			      struct fid_ep **sep, void *context)
{
	return -FI_ENOSYS;
}


/* fi_query_atomic(3): what the RDM endpoint's atomics do (braid_atomic_query) */
static int domain_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
			       enum fi_op op, struct fi_atomic_attr *attr, uint64_t flags)
{
	size_t count;
	int ret;

	if (!attr || (flags & ~(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC)))
		return -FI_EINVAL;
	ret = braid_atomic_query(datatype, op, flags, &count);
	if (ret)
		return ret;
	attr->count = count;
	attr->size = BRAID_ATOMIC_MAX / count;
	return 0;
}

static int domain_query_collective(struct fid_domain *domain, enum fi_collective_op coll,
				   struct fi_collective_attr *attr, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int domain_endpoint2(struct fid_domain *domain, struct fi_info *info,
			    struct fid_ep **ep, uint64_t flags, void *context)
{
	if (flags)
		return -FI_EBADFLAGS;
	return braid_ep_open(domain, info, ep, context);
}

static struct fi_ops domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = domain_close,
	.bind = domain_bind,
	.control = braid_nosys_control,
	.ops_open = braid_stat_ops_open,
	.tostr = braid_nosys_tostr,
	.ops_set = braid_nosys_ops_set,
};

static struct fi_ops_domain domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = braid_av_open,
	.cq_open = braid_cq_open,
	.endpoint = braid_ep_open,
	.scalable_ep = domain_scalable_ep,
	.cntr_open = braid_cntr_open,
	.poll_open = braid_pollset_open,
	.stx_ctx = braid_stx_open,
	.srx_ctx = braid_srx_open,
	.query_atomic = domain_query_atomic,
	.query_collective = domain_query_collective,
	.endpoint2 = domain_endpoint2,
};

static struct fi_ops_mr domain_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = braid_mr_reg,
	.regv = braid_mr_regv,
	.regattr = braid_mr_regattr,
};

int braid_auth_attr(struct braid_auth *auth, const uint8_t *key, size_t size)
{
	if (size && braid_cfg.auth_mode == BRAID_AUTH_NONE)
		return -FI_ENODATA;
	return braid_auth_init(auth, key, size, braid_cfg.auth_mode);
}

int braid_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		      struct fid_domain **domain, void *context)
{
	struct braid_fabric *fab;
	struct braid_domain *dom;
	int ret;

	if (!fabric || !info || !domain)
		return -FI_EINVAL;
	ret = braid_check_info(info);
	if (ret)
		return ret;
	/* data progress is automatic with the progress thread; control progress never
	 * (from 2.0 control_progress is not read: fi_getinfo answers it with the one model) */
	if ((info->domain_attr->data_progress == FI_PROGRESS_AUTO && braid_cfg.progress_us <= 0) ||
	    (info->domain_attr->control_progress == FI_PROGRESS_AUTO &&
	     !braid_api_ge(info->fabric_attr ? info->fabric_attr->api_version : BRAID_FI_VERSION,
			   2, 0)))
		return -FI_ENODATA;
	fab = braid_container_of(fabric, struct braid_fabric, fabric_fid);
	dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	/* the default authorization key of the domain's endpoints and regions (fi_domain(3)) */
	ret = braid_auth_attr(&dom->auth, info->domain_attr->auth_key,
			      info->domain_attr->auth_key_size);
	if (ret) {
		free(dom);
		return ret;
	}
	dom->info = fi_dupinfo(info);
	if (!dom->info) {
		free(dom);
		return -FI_ENOMEM;
	}
	ret = braid_peer_table_open(&dom->peers, 1024, NULL);
	if (ret) {
		fi_freeinfo(dom->info);
		free(dom);
		return ret;
	}
	pthread_mutex_init(&dom->lock, NULL);
	pthread_rwlock_init(&dom->mr_lock, NULL);
	braid_epset_construct(&dom->eps);
	/*
	 * fi_domain(3): FI_THREAD_DOMAIN promises that the application
	 * serialises its calls into the domain's objects; with no progress
	 * thread of braid's own beside them, nothing needs a lock.
	 */
	dom->locking = !(info->domain_attr->threading == FI_THREAD_DOMAIN &&
			 braid_cfg.progress_us <= 0);
	braid_dlist_init(&dom->rc_ports);
	braid_dlist_init(&dom->trigs);
	pthread_mutex_init(&dom->trig_lock, NULL);
	pthread_mutex_init(&dom->trig_pump, NULL);
	dom->next_qpn = 2;	/* QP 0 and 1 are IBTA's special QPs */
	braid_map_construct(&dom->mr_keys);
	dom->mr_next_key = 1;
	dom->fabric = fab;
	atomic_init(&dom->ref, 0);
	ret = braid_progress_start(dom);
	if (ret) {
		braid_map_destruct(&dom->mr_keys);
		braid_peer_table_close(dom->peers);
		braid_epset_destruct(&dom->eps);
		pthread_rwlock_destroy(&dom->mr_lock);
		pthread_mutex_destroy(&dom->lock);
		pthread_mutex_destroy(&dom->trig_lock);
		pthread_mutex_destroy(&dom->trig_pump);
		fi_freeinfo(dom->info);
		free(dom);
		return ret;
	}
	atomic_fetch_add(&fab->ref, 1);

	dom->domain_fid.fid.fclass = FI_CLASS_DOMAIN;
	dom->domain_fid.fid.context = context;
	dom->domain_fid.fid.ops = &domain_fi_ops;
	dom->domain_fid.ops = &domain_ops;
	dom->domain_fid.mr = &domain_mr_ops;
	*domain = &dom->domain_fid;
	BRAID_INFO(FI_LOG_DOMAIN, "domain %s opened%s%s\n",
		   info->domain_attr->name ? info->domain_attr->name : "(unnamed)",
		   dom->auth.mode ? ", with an authorization key" : "",
		   dom->locking ? "" : ", taking no locks (FI_THREAD_DOMAIN, no progress thread)");
	return 0;
}
