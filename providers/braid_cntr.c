/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_cntr.c: completion counters (fi_cntr(3)): success and error counts, blocking waits. */
#include <stdlib.h>
#include <time.h>

#include "braid.h"

static void cntr_wake(struct braid_cntr *cntr)
{
	braid_wait_wake(&cntr->wait);
}

void braid_cntr_inc(struct braid_cntr *cntr)
{
	atomic_fetch_add(&cntr->value, 1);
	cntr_wake(cntr);
}

void braid_cntr_inc_err(struct braid_cntr *cntr)
{
	atomic_fetch_add(&cntr->err, 1);
	cntr_wake(cntr);
}

static void cntr_progress(struct braid_cntr *cntr)
{
	braid_epset_progress(&cntr->eps);
	braid_trig_pump(cntr->domain);	/* transfers triggered by what it counted */
}

void braid_cntr_poll(struct braid_cntr *cntr, uint64_t *value, uint64_t *err)
{
	cntr_progress(cntr);
	*value = atomic_load(&cntr->value);
	*err = atomic_load(&cntr->err);
}

static uint64_t cntr_read(struct fid_cntr *cntr_fid)
{
	struct braid_cntr *cntr = braid_container_of(cntr_fid, struct braid_cntr, cntr_fid);

	cntr_progress(cntr);
	return atomic_load(&cntr->value);
}

static uint64_t cntr_readerr(struct fid_cntr *cntr_fid)
{
	struct braid_cntr *cntr = braid_container_of(cntr_fid, struct braid_cntr, cntr_fid);

	cntr_progress(cntr);
	return atomic_load(&cntr->err);
}

static int cntr_add(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct braid_cntr *cntr = braid_container_of(cntr_fid, struct braid_cntr, cntr_fid);

	atomic_fetch_add(&cntr->value, value);
	cntr_wake(cntr);
	braid_trig_pump(cntr->domain);
	return 0;
}

static int cntr_set(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct braid_cntr *cntr = braid_container_of(cntr_fid, struct braid_cntr, cntr_fid);

	atomic_store(&cntr->value, value);
	cntr_wake(cntr);
	braid_trig_pump(cntr->domain);
	return 0;
}

static int cntr_adderr(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct braid_cntr *cntr = braid_container_of(cntr_fid, struct braid_cntr, cntr_fid);

	atomic_fetch_add(&cntr->err, value);
	cntr_wake(cntr);
	return 0;
}

static int cntr_seterr(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct braid_cntr *cntr = braid_container_of(cntr_fid, struct braid_cntr, cntr_fid);

	atomic_store(&cntr->err, value);
	cntr_wake(cntr);
	return 0;
}

static int cntr_wait(struct fid_cntr *cntr_fid, uint64_t threshold, int timeout)
{
	struct braid_cntr *cntr = braid_container_of(cntr_fid, struct braid_cntr, cntr_fid);
	uint64_t err0 = atomic_load(&cntr->err);
	struct timespec start;
	int ret, cap;

	/* FI_WAIT_NONE: fi_cntr(3) calls it invalid; braid polls, as with FI_WAIT_YIELD */
	clock_gettime(CLOCK_MONOTONIC, &start);
	braid_wait_enter(&cntr->wait);
	for (;;) {
		cntr_progress(cntr);
		if (atomic_load(&cntr->value) >= threshold) {
			ret = 0;
			break;
		}
		if (atomic_load(&cntr->err) != err0) {
			ret = -FI_EAVAIL;
			break;
		}
		cap = braid_epset_timer_ms(&cntr->eps);
		ret = braid_wait_step(&cntr->wait, &start, timeout, cap);
		if (ret)
			break;
	}
	braid_wait_leave(&cntr->wait);
	return ret;
}

static int cntr_close(struct fid *fid)
{
	struct braid_cntr *cntr = braid_container_of(fid, struct braid_cntr, cntr_fid.fid);

	if (atomic_load(&cntr->ref))
		return -FI_EBUSY;
	braid_waitset_del(&cntr->wait, fid);
	braid_wait_close(&cntr->wait);
	braid_epset_destruct(&cntr->eps);
	atomic_fetch_sub(&cntr->domain->ref, 1);
	free(cntr);
	return 0;
}

static int cntr_control(struct fid *fid, int command, void *arg)
{
	struct braid_cntr *cntr = braid_container_of(fid, struct braid_cntr, cntr_fid.fid);

	return braid_wait_control(&cntr->wait, command, arg);
}

static struct fi_ops cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cntr_close,
	.bind = braid_nosys_bind,
	.control = cntr_control,
	.ops_open = braid_nosys_ops_open,
	.tostr = braid_nosys_tostr,
	.ops_set = braid_nosys_ops_set,
};

static struct fi_ops_cntr cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = cntr_read,
	.readerr = cntr_readerr,
	.add = cntr_add,
	.set = cntr_set,
	.wait = cntr_wait,
	.adderr = cntr_adderr,
	.seterr = cntr_seterr,
};

struct braid_cntr *braid_cntr_of(struct fid_cntr *cntr_fid)
{
	if (cntr_fid->fid.fclass != FI_CLASS_CNTR || cntr_fid->fid.ops != &cntr_fi_ops)
		return NULL;
	return braid_container_of(cntr_fid, struct braid_cntr, cntr_fid);
}

int braid_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		    struct fid_cntr **cntr_out, void *context)
{
	struct braid_domain *dom;
	struct braid_cntr *cntr;
	int ret;

	if (!domain || !attr || !cntr_out)
		return -FI_EINVAL;
	if (attr->events != FI_CNTR_EVENTS_COMP)
		return -FI_EINVAL;
	if (attr->flags)
		return -FI_EBADFLAGS;
	dom = braid_container_of(domain, struct braid_domain, domain_fid);
	cntr = calloc(1, sizeof(*cntr));
	if (!cntr)
		return -FI_ENOMEM;
	ret = braid_wait_open(&cntr->wait, attr->wait_obj, attr->wait_set);
	if (ret) {
		free(cntr);
		return ret;
	}
	cntr->domain = dom;
	braid_epset_construct(&cntr->eps);
	atomic_init(&cntr->ref, 0);
	atomic_init(&cntr->value, 0);
	atomic_init(&cntr->err, 0);
	atomic_fetch_add(&dom->ref, 1);
	cntr->cntr_fid.fid.fclass = FI_CLASS_CNTR;
	cntr->cntr_fid.fid.context = context;
	cntr->cntr_fid.fid.ops = &cntr_fi_ops;
	cntr->cntr_fid.ops = &cntr_ops;
	ret = braid_waitset_add(&cntr->wait, &cntr->cntr_fid.fid);
	if (ret) {
		atomic_fetch_sub(&dom->ref, 1);
		braid_epset_destruct(&cntr->eps);
		braid_wait_close(&cntr->wait);
		free(cntr);
		return ret;
	}
	*cntr_out = &cntr->cntr_fid;
	return 0;
}
