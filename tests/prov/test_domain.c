/* SPDX-License-Identifier: BSD-2-Clause */
/* test_domain.c: the braid domain object (fi_domain(3)): open, close with children, EQ binding. */
#include "prov_test.h"

Test(fi_domain, open_close)
{
	struct pt_dom d;

	pt_dom_open(&d);
	cr_expect_eq(d.domain->fid.fclass, FI_CLASS_DOMAIN);
	pt_dom_close(&d);
}

Test(fi_domain, context_kept)
{
	struct pt_dom d;
	struct fid_domain *dom2;
	int ctx;

	pt_dom_open(&d);
	cr_assert_eq(fi_domain(d.fabric, d.info, &dom2, &ctx), 0);
	cr_expect_eq(dom2->fid.context, &ctx);
	cr_expect_neq(dom2, d.domain);
	cr_expect_eq(fi_close(&dom2->fid), 0);
	pt_dom_close(&d);
}

Test(fi_domain2, no_flags)
{
	struct pt_dom d;
	struct fid_domain *dom2;

	pt_dom_open(&d);
	cr_assert_eq(fi_domain2(d.fabric, d.info, &dom2, 0, NULL), 0);
	cr_expect_eq(fi_close(&dom2->fid), 0);
	pt_dom_close(&d);
}

/* fi_domain(3): "All objects associated with the opened domain must be released prior
 * to calling fi_close, otherwise the call will return -FI_EBUSY." */
static void expect_busy_then_close(struct pt_dom *d, struct fid *child)
{
	cr_expect_eq(fi_close(&d->domain->fid), -FI_EBUSY);
	cr_assert_eq(fi_close(child), 0);
	pt_dom_close(d);
}

Test(fi_close, domain_with_open_cq)
{
	struct pt_dom d;

	pt_dom_open(&d);
	expect_busy_then_close(&d, &pt_cq_open(d.domain, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE)->fid);
}

Test(fi_close, domain_with_open_av)
{
	struct pt_dom d;

	pt_dom_open(&d);
	expect_busy_then_close(&d, &pt_av_open(d.domain, FI_AV_TABLE)->fid);
}

Test(fi_close, domain_with_open_cntr)
{
	struct pt_dom d;

	pt_dom_open(&d);
	expect_busy_then_close(&d, &pt_cntr_open(d.domain, FI_WAIT_NONE)->fid);
}

Test(fi_close, domain_with_open_mr)
{
	static char buf[64];
	struct pt_dom d;
	struct fid_mr *mr;

	pt_dom_open(&d);
	cr_assert_eq(fi_mr_reg(d.domain, buf, sizeof(buf), FI_SEND, 0, 1, 0, &mr, NULL), 0);
	expect_busy_then_close(&d, &mr->fid);
}

Test(fi_close, domain_with_open_ep)
{
	struct pt_dom d;
	struct fid_ep *ep;

	pt_dom_open(&d);
	cr_assert_eq(fi_endpoint(d.domain, d.info, &ep, NULL), 0);
	expect_busy_then_close(&d, &ep->fid);
}

Test(fi_domain_bind, eq)
{
	struct pt_dom d;
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_NONE };
	struct fid_eq *eq;

	pt_dom_open(&d);
	cr_assert_eq(fi_eq_open(d.fabric, &attr, &eq, NULL), 0);
	cr_expect_eq(fi_domain_bind(d.domain, &eq->fid, 0), 0);
	/* fi_eq(3): "The EQ must not be bound to any other objects prior to being
	 * closed, otherwise the call will return -FI_EBUSY." */
	cr_expect_eq(fi_close(&eq->fid), -FI_EBUSY);
	cr_assert_eq(fi_close(&d.domain->fid), 0);
	d.domain = NULL;
	cr_expect_eq(fi_close(&eq->fid), 0);
	pt_dom_close(&d);
}

Test(fi_domain_bind, not_an_eq)
{
	struct pt_dom d;
	struct fid_cq *cq;

	pt_dom_open(&d);
	cq = pt_cq_open(d.domain, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE);
	cr_expect_lt(fi_domain_bind(d.domain, &cq->fid, 0), 0);
	cr_assert_eq(fi_close(&cq->fid), 0);
	pt_dom_close(&d);
}

Test(fi_domain, two_domains_independent)
{
	struct pt_dom d;
	struct fid_domain *dom2;
	struct fid_cq *cq;

	pt_dom_open(&d);
	cr_assert_eq(fi_domain(d.fabric, d.info, &dom2, NULL), 0);
	cq = pt_cq_open(dom2, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE);
	/* a CQ on the second domain does not keep the first one busy */
	cr_expect_eq(fi_close(&d.domain->fid), 0);
	d.domain = NULL;
	cr_expect_eq(fi_close(&dom2->fid), -FI_EBUSY);
	cr_assert_eq(fi_close(&cq->fid), 0);
	cr_expect_eq(fi_close(&dom2->fid), 0);
	pt_dom_close(&d);
}
