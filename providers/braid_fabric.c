/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_fabric.c: the fabric object (fi_fabric(3)): opens domains and EQs, fi_trywait. */
#include <stdlib.h>
#include <string.h>

#include "braid.h"

static int fabric_close(struct fid *fid)
{
	struct braid_fabric *fab = braid_container_of(fid, struct braid_fabric, fabric_fid.fid);

	if (atomic_load(&fab->ref))
		return -FI_EBUSY;
	free(fab->name);
	free(fab);
	return 0;
}

static int fabric_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	int i;

	if (!fids || count < 0)
		return -FI_EINVAL;
	for (i = 0; i < count; i++) {
		if (!fids[i])
			return -FI_EINVAL;
		switch (fids[i]->fclass) {
		case FI_CLASS_CQ: {
			struct braid_cq *cq = braid_container_of(fids[i], struct braid_cq, cq_fid.fid);

			if (!braid_wait_enabled(&cq->wait))
				return -FI_EINVAL;
			braid_wait_arm(&cq->wait);
			if (braid_cq_poll(cq) || braid_epset_arm(&cq->eps))
				return -FI_EAGAIN;
			break;
		}
		case FI_CLASS_CNTR: {
			struct braid_cntr *cntr = braid_container_of(fids[i], struct braid_cntr, cntr_fid.fid);

			if (!braid_wait_enabled(&cntr->wait))
				return -FI_EINVAL;
			braid_wait_arm(&cntr->wait);
			braid_epset_progress(&cntr->eps);
			if (braid_epset_arm(&cntr->eps))
				return -FI_EAGAIN;
			break;
		}
		case FI_CLASS_WAIT: {
			/* fi_poll(3): a set stands for its members */
			struct braid_waitset *set = braid_waitset_of((struct fid_wait *)fids[i]);
			int ret;

			if (!set)
				return -FI_EINVAL;
			ret = braid_waitset_trywait(set);
			if (ret)
				return ret;
			break;
		}
		case FI_CLASS_EQ: {
			struct braid_eq *eq = braid_container_of(fids[i], struct braid_eq, eq_fid.fid);
			bool busy;

			if (!eq->has_wait)
				return -FI_EINVAL;
			braid_eq_progress(eq);
			pthread_mutex_lock(&eq->lock);
			busy = eq->count > 0;
			pthread_mutex_unlock(&eq->lock);
			if (busy)
				return -FI_EAGAIN;
			break;
		}
		default:
			return -FI_EINVAL;
		}
	}
	return 0;
}

static int fabric_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
			     struct fid_pep **pep, void *context)
{
	return braid_pep_open(fabric, info, pep, context);
}

static int fabric_domain2(struct fid_fabric *fabric, struct fi_info *info,
			  struct fid_domain **dom, uint64_t flags, void *context)
{
	if (flags)
		return -FI_EBADFLAGS;
	return braid_domain_open(fabric, info, dom, context);
}

static struct fi_ops fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = fabric_close,
	.bind = braid_nosys_bind,
	.control = braid_nosys_control,
	.ops_open = braid_nosys_ops_open,
	.tostr = braid_nosys_tostr,
	.ops_set = braid_nosys_ops_set,
};

static struct fi_ops_fabric fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = braid_domain_open,
	.passive_ep = fabric_passive_ep,
	.eq_open = braid_eq_open,
	.wait_open = braid_waitset_open,
	.trywait = fabric_trywait,
	.domain2 = fabric_domain2,
};

int braid_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	struct braid_fabric *fab;

	if (!attr || !fabric)
		return -FI_EINVAL;
	fab = calloc(1, sizeof(*fab));
	if (!fab)
		return -FI_ENOMEM;
	fab->name = strdup(attr->name ? attr->name : BRAID_PROV_NAME);
	if (!fab->name) {
		free(fab);
		return -FI_ENOMEM;
	}
	atomic_init(&fab->ref, 0);
	fab->fabric_fid.fid.fclass = FI_CLASS_FABRIC;
	fab->fabric_fid.fid.context = context;
	fab->fabric_fid.fid.ops = &fabric_fi_ops;
	fab->fabric_fid.ops = &fabric_ops;
	fab->fabric_fid.api_version = BRAID_FI_VERSION;
	*fabric = &fab->fabric_fid;
	BRAID_INFO(FI_LOG_FABRIC, "fabric %s opened\n", fab->name);
	return 0;
}
