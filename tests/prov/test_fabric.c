/* SPDX-License-Identifier: BSD-2-Clause */
/* test_fabric.c: the braid fabric object (fi_fabric(3)) and fi_trywait (fi_poll(3)). */
#include "prov_test.h"

static struct fid_fabric *fabric_open(struct fi_info **info_out, void *context)
{
	struct fid_fabric *fabric = NULL;
	struct fi_info *info = pt_getinfo_lo(0);
	int ret;

	ret = fi_fabric(info->fabric_attr, &fabric, context);
	cr_assert_eq(ret, 0, "fi_fabric = %d (%s)", ret, fi_strerror(-ret));
	cr_assert_not_null(fabric);
	*info_out = info;
	return fabric;
}

Test(fi_fabric, open_close)
{
	struct fi_info *info;
	struct fid_fabric *fabric = fabric_open(&info, NULL);

	cr_expect_eq(fabric->fid.fclass, FI_CLASS_FABRIC);
	cr_expect_eq(fi_close(&fabric->fid), 0);
	fi_freeinfo(info);
}

Test(fi_fabric, context_kept)
{
	int ctx;
	struct fi_info *info;
	struct fid_fabric *fabric = fabric_open(&info, &ctx);

	cr_expect_eq(fabric->fid.context, &ctx);
	cr_expect_eq(fi_close(&fabric->fid), 0);
	fi_freeinfo(info);
}

Test(fi_fabric, two_fabrics)
{
	struct fi_info *info;
	struct fid_fabric *a = fabric_open(&info, NULL), *b = NULL;

	cr_assert_eq(fi_fabric(info->fabric_attr, &b, NULL), 0);
	cr_expect_neq(a, b);
	cr_expect_eq(fi_close(&b->fid), 0);
	cr_expect_eq(fi_close(&a->fid), 0);
	fi_freeinfo(info);
}

/* fi_fabric(3): "All items associated with the opened fabric must be released prior to calling fi_close." */
Test(fi_close, fabric_with_open_domain)
{
	struct fi_info *info;
	struct fid_fabric *fabric = fabric_open(&info, NULL);
	struct fid_domain *domain;
	int ret;

	cr_assert_eq(fi_domain(fabric, info, &domain, NULL), 0);
	ret = fi_close(&fabric->fid);
	cr_expect_lt(ret, 0, "fabric closed under an open domain");
	cr_assert_eq(fi_close(&domain->fid), 0);
	cr_expect_eq(fi_close(&fabric->fid), 0);
	fi_freeinfo(info);
}

Test(fi_close, fabric_with_open_eq)
{
	struct fi_info *info;
	struct fid_fabric *fabric = fabric_open(&info, NULL);
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_NONE };
	struct fid_eq *eq;
	int ret;

	cr_assert_eq(fi_eq_open(fabric, &attr, &eq, NULL), 0);
	ret = fi_close(&fabric->fid);
	cr_expect_lt(ret, 0, "fabric closed under an open EQ");
	cr_assert_eq(fi_close(&eq->fid), 0);
	cr_expect_eq(fi_close(&fabric->fid), 0);
	fi_freeinfo(info);
}

Test(fi_trywait, empty_cq)
{
	struct pt_dom d;
	struct fid_cq *cq;
	struct fid *fids[1];

	pt_dom_open(&d);
	cq = pt_cq_open(d.domain, FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD);
	fids[0] = &cq->fid;
	cr_expect_eq(fi_trywait(d.fabric, fids, 1), FI_SUCCESS);
	cr_assert_eq(fi_close(&cq->fid), 0);
	pt_dom_close(&d);
}

Test(fi_trywait, empty_cntr)
{
	struct pt_dom d;
	struct fid_cntr *cntr;
	struct fid *fids[1];

	pt_dom_open(&d);
	cntr = pt_cntr_open(d.domain, FI_WAIT_FD);
	fids[0] = &cntr->fid;
	cr_expect_eq(fi_trywait(d.fabric, fids, 1), FI_SUCCESS);
	cr_assert_eq(fi_close(&cntr->fid), 0);
	pt_dom_close(&d);
}

Test(fi_trywait, eq_with_event)
{
	struct pt_dom d;
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_FD, .flags = FI_WRITE };
	struct fi_eq_entry ev = { .data = 7 };
	struct fid_eq *eq;
	struct fid *fids[1];
	uint32_t event;

	pt_dom_open(&d);
	cr_assert_eq(fi_eq_open(d.fabric, &attr, &eq, NULL), 0);
	fids[0] = &eq->fid;
	cr_expect_eq(fi_trywait(d.fabric, fids, 1), FI_SUCCESS);
	cr_assert_eq(fi_eq_write(eq, FI_NOTIFY, &ev, sizeof(ev), 0), (ssize_t)sizeof(ev));
	cr_expect_eq(fi_trywait(d.fabric, fids, 1), -FI_EAGAIN);
	cr_assert_eq(fi_eq_read(eq, &event, &ev, sizeof(ev), 0), (ssize_t)sizeof(ev));
	cr_expect_eq(fi_trywait(d.fabric, fids, 1), FI_SUCCESS);
	cr_assert_eq(fi_close(&eq->fid), 0);
	pt_dom_close(&d);
}

/* Blocking natively on a CQ with no wait object could hang: it must not report success. */
Test(fi_trywait, cq_without_wait_object)
{
	struct pt_dom d;
	struct fid_cq *cq;
	struct fid *fids[1];

	pt_dom_open(&d);
	cq = pt_cq_open(d.domain, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE);
	fids[0] = &cq->fid;
	cr_expect_neq(fi_trywait(d.fabric, fids, 1), FI_SUCCESS);
	cr_assert_eq(fi_close(&cq->fid), 0);
	pt_dom_close(&d);
}
