/* SPDX-License-Identifier: BSD-2-Clause */
/* test_mr.c: braid memory registration (fi_mr(3)): keys, access bits, flags, descriptors. */
#include "prov_test.h"

static char buf[4096];

static bool prov_key(const struct pt_dom *d)
{
	return d->info->domain_attr->mr_mode & FI_MR_PROV_KEY;
}

Test(fi_mr_reg, reg_close)
{
	struct pt_dom d;
	struct fid_mr *mr = NULL;
	int ctx;

	pt_dom_open(&d);
	cr_assert_eq(fi_mr_reg(d.domain, buf, sizeof(buf), FI_SEND | FI_RECV, 0, 1, 0, &mr, &ctx), 0);
	cr_assert_not_null(mr);
	cr_expect_eq(mr->fid.fclass, FI_CLASS_MR);
	cr_expect_eq(mr->fid.context, &ctx);
	cr_expect_eq(fi_close(&mr->fid), 0);
	pt_dom_close(&d);
}

Test(fi_mr_reg, all_access_bits)
{
	struct pt_dom d;
	struct fid_mr *mr;

	pt_dom_open(&d);
	cr_expect_eq(fi_mr_reg(d.domain, buf, sizeof(buf),
			       FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE,
			       0, 2, 0, &mr, NULL), 0);
	cr_expect_eq(fi_close(&mr->fid), 0);
	pt_dom_close(&d);
}

Test(fi_mr_reg, bad_access)
{
	struct pt_dom d;
	struct fid_mr *mr = NULL;

	pt_dom_open(&d);
	cr_expect_eq(fi_mr_reg(d.domain, buf, sizeof(buf), FI_SEND | FI_TAGGED, 0, 3, 0, &mr, NULL),
		     -FI_EINVAL);
	cr_expect_eq(fi_mr_reg(d.domain, buf, sizeof(buf), 1ULL << 62, 0, 3, 0, &mr, NULL),
		     -FI_EINVAL);
	pt_dom_close(&d);
}

/* fi_mr(3) ERRORS: "-FI_EBADFLAGS Returned if the specified flags are not supported by the
 * provider." */
Test(fi_mr_reg, bad_flags)
{
	struct pt_dom d;
	struct fid_mr *mr = NULL;

	pt_dom_open(&d);
	cr_expect_eq(fi_mr_reg(d.domain, buf, sizeof(buf), FI_SEND, 0, 4, FI_MULTI_RECV, &mr, NULL),
		     -FI_EBADFLAGS);
	pt_dom_close(&d);
}

/* fi_mr(3) ERRORS: "-FI_ENOKEY The requested_key is already in use." */
Test(fi_mr_reg, duplicate_requested_key)
{
	static char other[64];
	struct pt_dom d;
	struct fid_mr *a, *b = NULL, *c;

	pt_dom_open(&d);
	if (prov_key(&d))
		cr_skip_test("FI_MR_PROV_KEY: requested keys are ignored");
	cr_assert_eq(fi_mr_reg(d.domain, buf, sizeof(buf), FI_SEND, 0, 77, 0, &a, NULL), 0);
	cr_expect_eq(fi_mr_reg(d.domain, other, sizeof(other), FI_SEND, 0, 77, 0, &b, NULL),
		     -FI_ENOKEY);
	/* once the first is closed, the key is free again */
	cr_assert_eq(fi_close(&a->fid), 0);
	cr_expect_eq(fi_mr_reg(d.domain, other, sizeof(other), FI_SEND, 0, 77, 0, &c, NULL), 0);
	cr_expect_eq(fi_close(&c->fid), 0);
	pt_dom_close(&d);
}

Test(fi_mr_key, requested_key)
{
	struct pt_dom d;
	struct fid_mr *a, *b;

	pt_dom_open(&d);
	cr_assert_eq(fi_mr_reg(d.domain, buf, 100, FI_SEND, 0, 0x1234, 0, &a, NULL), 0);
	cr_assert_eq(fi_mr_reg(d.domain, buf + 100, 100, FI_SEND, 0, 0x5678, 0, &b, NULL), 0);
	cr_expect_neq(fi_mr_key(a), FI_KEY_NOTAVAIL);
	cr_expect_neq(fi_mr_key(a), fi_mr_key(b), "two regions share a key");
	if (!prov_key(&d)) {
		cr_expect_eq(fi_mr_key(a), 0x1234);
		cr_expect_eq(fi_mr_key(b), 0x5678);
	}
	cr_expect_eq(fi_close(&a->fid), 0);
	cr_expect_eq(fi_close(&b->fid), 0);
	pt_dom_close(&d);
}

Test(fi_mr_desc, per_region)
{
	struct pt_dom d;
	struct fid_mr *a, *b;
	void *da, *db;

	pt_dom_open(&d);
	cr_assert_eq(fi_mr_reg(d.domain, buf, 100, FI_SEND, 0, 10, 0, &a, NULL), 0);
	cr_assert_eq(fi_mr_reg(d.domain, buf + 100, 100, FI_SEND, 0, 11, 0, &b, NULL), 0);
	da = fi_mr_desc(a);
	db = fi_mr_desc(b);
	cr_expect_eq(fi_mr_desc(a), da, "descriptor changes between calls");
	if (da || db)
		cr_expect_neq(da, db, "two regions share a descriptor");
	cr_expect_eq(fi_close(&a->fid), 0);
	cr_expect_eq(fi_close(&b->fid), 0);
	pt_dom_close(&d);
}

Test(fi_mr_regv, two_iovs)
{
	struct pt_dom d;
	struct fid_mr *mr;
	struct iovec iov[2] = { { buf, 100 }, { buf + 1000, 200 } };

	pt_dom_open(&d);
	cr_assert_geq(d.info->domain_attr->mr_iov_limit, 2);
	cr_expect_eq(fi_mr_regv(d.domain, iov, 2, FI_SEND, 0, 12, 0, &mr, NULL), 0);
	cr_expect_eq(fi_close(&mr->fid), 0);
	pt_dom_close(&d);
}

Test(fi_mr_regv, over_iov_limit)
{
	struct pt_dom d;
	struct fid_mr *mr = NULL;
	struct iovec iov[64];
	size_t i, n;

	pt_dom_open(&d);
	n = d.info->domain_attr->mr_iov_limit + 1;
	cr_assert_leq(n, 64);
	for (i = 0; i < n; i++) {
		iov[i].iov_base = buf + i * 16;
		iov[i].iov_len = 16;
	}
	cr_expect_lt(fi_mr_regv(d.domain, iov, n, FI_SEND, 0, 13, 0, &mr, NULL), 0);
	pt_dom_close(&d);
}

Test(fi_mr_regattr, context_and_key)
{
	struct pt_dom d;
	struct fid_mr *mr;
	struct iovec iov = { buf, sizeof(buf) };
	struct fi_mr_attr attr = {
		.mr_iov = &iov, .iov_count = 1, .access = FI_RECV,
		.requested_key = 99, .iface = FI_HMEM_SYSTEM,
	};
	int ctx;

	attr.context = &ctx;
	pt_dom_open(&d);
	cr_assert_eq(fi_mr_regattr(d.domain, &attr, 0, &mr), 0);
	cr_expect_eq(mr->fid.context, &ctx);
	if (!prov_key(&d))
		cr_expect_eq(fi_mr_key(mr), 99);
	cr_expect_eq(fi_close(&mr->fid), 0);
	pt_dom_close(&d);
}

/* A registered buffer and its descriptor can be used for a send and a receive. */
Test(fi_mr_desc, used_in_transfer)
{
	struct pt_pair p;
	struct fid_mr *smr, *rmr;
	struct fi_cq_data_entry e;
	char sbuf[32] = "registered", rbuf[32];
	void *sdesc, *rdesc;
	int ctx;

	pt_pair_open(&p);
	cr_assert_eq(fi_mr_reg(p.d.domain, sbuf, sizeof(sbuf), FI_SEND, 0, 20, 0, &smr, NULL), 0);
	cr_assert_eq(fi_mr_reg(p.d.domain, rbuf, sizeof(rbuf), FI_RECV, 0, 21, 0, &rmr, NULL), 0);
	sdesc = fi_mr_desc(smr);
	rdesc = fi_mr_desc(rmr);
	cr_assert_eq(fi_recv(p.b.ep, rbuf, sizeof(rbuf), rdesc, FI_ADDR_UNSPEC, &ctx), 0);
	cr_assert_eq(fi_send(p.a.ep, sbuf, sizeof(sbuf), sdesc, p.a.peer, NULL), 0);
	cr_assert_eq(pt_cq_poll(p.b.rx_cq, &e, NULL, NULL), 1);
	cr_expect_eq(e.op_context, &ctx);
	cr_expect_str_eq(rbuf, "registered");
	cr_expect_eq(fi_close(&smr->fid), 0);
	cr_expect_eq(fi_close(&rmr->fid), 0);
	pt_pair_close(&p);
}
