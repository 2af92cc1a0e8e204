/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_rdm_rma.c: RMA (fi_rma(3)) and atomics (fi_atomic(3)) on braid's
 * native FI_EP_RDM, through the public libfabric API only.
 *
 * Two RDM endpoints on 127.0.0.1 in this process: a initiates, b is the
 * target. Each has one CQ (FI_CQ_FORMAT_DATA) for its transmits and
 * receives, and its own AV. Progress is manual: every wait drives both
 * endpoints' CQs in a bounded loop.
 */
#include <unistd.h>
#include <pthread.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>
#include <rdma/fi_braid.h>

#include "prov_test.h"

#define RMA_MR_MODE	(FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED)
#define RMA_CAPS	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC)
#define RMA_DIR_CAPS	(FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)
/* the completion flags that say what kind of operation completed (fi_cq(3)) */
#define OP_MASK		(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_RECV | FI_READ | \
			 FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

#define WAIT_MS		5000
#define GUARD		64
#define MIB		(1u << 20)
#define PAT_T		0xa5	/* target memory nobody wrote */
#define PAT_L		0x5a	/* local memory nobody wrote */
#define MAX_MRS		32

/* A pair of RDM endpoints: a initiates, b is the target. */
struct rp {
	struct fi_info *info;
	struct fid_fabric *fabric;
	/** @dom_b: b's domain; the same as @dom_a when shared. */
	struct fid_domain *dom_a, *dom_b;
	/** @a, @b: each endpoint's one CQ is its tx_cq (bound FI_TRANSMIT | FI_RECV). */
	struct pt_ep a, b;
	/** @wr, @rd: at a (FI_WRITE, FI_READ); @rwr, @rrd: at b (FI_REMOTE_*). */
	struct fid_cntr *wr, *rd, *rwr, *rrd;
	struct fid_mr *mrs[MAX_MRS];
	size_t nmrs;
	/** @mr_local: the entry asks for FI_MR_LOCAL (then local buffers get descs). */
	bool mr_local;
};

static int rma_getinfo(uint64_t caps, uint64_t mr_mode, struct fi_info **list)
{
	struct fi_info *hints = pt_hints(FI_EP_RDM);
	int ret;

	hints->caps = caps;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->mr_mode = (int)mr_mode;
	/* a completion means the target has the data (fi_cq(3) "Target Completion Semantics") */
	hints->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
	*list = NULL;
	ret = fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, list);
	fi_freeinfo(hints);
	return ret;
}

/* The first native braid FI_EP_RDM entry of @list, or NULL. */
static struct fi_info *rma_find(struct fi_info *list)
{
	for (struct fi_info *cur = list; cur; cur = cur->next)
		if (pt_is_plain_braid(cur) && cur->ep_attr->type == FI_EP_RDM)
			return cur;
	return NULL;
}

static struct fi_info *rma_info(uint64_t extra_caps)
{
	struct fi_info *list, *info;
	int ret;

	ret = rma_getinfo(RMA_CAPS | extra_caps, RMA_MR_MODE | FI_MR_LOCAL, &list);
	cr_assert_eq(ret, 0, "fi_getinfo(braid RDM, FI_RMA | FI_ATOMIC%s) = %d (%s)",
		     extra_caps & FI_RMA_EVENT ? " | FI_RMA_EVENT" : "", ret, fi_strerror(-ret));
	info = rma_find(list);
	cr_assert_not_null(info, "no native braid FI_EP_RDM entry with FI_RMA | FI_ATOMIC");
	info = fi_dupinfo(info);
	fi_freeinfo(list);
	cr_assert_eq(info->caps & (FI_RMA | FI_ATOMIC | extra_caps), FI_RMA | FI_ATOMIC | extra_caps,
		     "caps %#llx", (unsigned long long)info->caps);
	return info;
}

static void rp_open(struct rp *r, uint64_t extra_caps, bool shared, bool cntrs)
{
	struct pt_dom da, db;
	int ret;

	memset(r, 0, sizeof(*r));
	r->info = rma_info(extra_caps);
	r->mr_local = r->info->domain_attr->mr_mode & FI_MR_LOCAL;
	ret = fi_fabric(r->info->fabric_attr, &r->fabric, NULL);
	cr_assert_eq(ret, 0, "fi_fabric = %d", ret);
	ret = fi_domain(r->fabric, r->info, &r->dom_a, NULL);
	cr_assert_eq(ret, 0, "fi_domain = %d", ret);
	if (shared) {
		r->dom_b = r->dom_a;
	} else {
		ret = fi_domain(r->fabric, r->info, &r->dom_b, NULL);
		cr_assert_eq(ret, 0, "fi_domain (b) = %d", ret);
	}
	da = (struct pt_dom){ .info = r->info, .fabric = r->fabric, .domain = r->dom_a };
	db = (struct pt_dom){ .info = r->info, .fabric = r->fabric, .domain = r->dom_b };
	pt_ep_create(&da, &r->a, NULL);
	pt_ep_create(&db, &r->b, NULL);
	r->a.tx_cq = pt_cq_open(r->dom_a, FI_CQ_FORMAT_DATA, FI_WAIT_NONE);
	r->b.tx_cq = pt_cq_open(r->dom_b, FI_CQ_FORMAT_DATA, FI_WAIT_NONE);
	ret = fi_ep_bind(r->a.ep, &r->a.tx_cq->fid, FI_TRANSMIT | FI_RECV);
	cr_assert_eq(ret, 0, "bind a's CQ = %d", ret);
	ret = fi_ep_bind(r->b.ep, &r->b.tx_cq->fid, FI_TRANSMIT | FI_RECV);
	cr_assert_eq(ret, 0, "bind b's CQ = %d", ret);
	if (cntrs) {
		r->wr = pt_cntr_open(r->dom_a, FI_WAIT_UNSPEC);
		r->rd = pt_cntr_open(r->dom_a, FI_WAIT_UNSPEC);
		ret = fi_ep_bind(r->a.ep, &r->wr->fid, FI_WRITE);
		cr_assert_eq(ret, 0, "bind FI_WRITE counter = %d (%s)", ret, fi_strerror(-ret));
		ret = fi_ep_bind(r->a.ep, &r->rd->fid, FI_READ);
		cr_assert_eq(ret, 0, "bind FI_READ counter = %d (%s)", ret, fi_strerror(-ret));
		if (extra_caps & FI_RMA_EVENT) {
			r->rwr = pt_cntr_open(r->dom_b, FI_WAIT_UNSPEC);
			r->rrd = pt_cntr_open(r->dom_b, FI_WAIT_UNSPEC);
			ret = fi_ep_bind(r->b.ep, &r->rwr->fid, FI_REMOTE_WRITE);
			cr_assert_eq(ret, 0, "bind FI_REMOTE_WRITE counter = %d (%s)", ret,
				     fi_strerror(-ret));
			ret = fi_ep_bind(r->b.ep, &r->rrd->fid, FI_REMOTE_READ);
			cr_assert_eq(ret, 0, "bind FI_REMOTE_READ counter = %d (%s)", ret,
				     fi_strerror(-ret));
		}
	}
	pt_ep_connect(&r->a, &r->b);
	pt_ep_connect(&r->b, &r->a);
	pt_ep_enable(&r->a);
	pt_ep_enable(&r->b);
}

static void rp_close(struct rp *r)
{
	struct fid_cntr *cntrs[] = { r->wr, r->rd, r->rwr, r->rrd };

	pt_ep_close(&r->a);
	pt_ep_close(&r->b);
	for (size_t i = 0; i < 4; i++)
		if (cntrs[i])
			cr_assert_eq(fi_close(&cntrs[i]->fid), 0);
	for (size_t i = 0; i < r->nmrs; i++)
		cr_assert_eq(fi_close(&r->mrs[i]->fid), 0);
	if (r->dom_b && r->dom_b != r->dom_a)
		cr_assert_eq(fi_close(&r->dom_b->fid), 0);
	cr_assert_eq(fi_close(&r->dom_a->fid), 0);
	cr_assert_eq(fi_close(&r->fabric->fid), 0);
	fi_freeinfo(r->info);
	memset(r, 0, sizeof(*r));
}

/* Register [@buf, @buf + @len) in @dom with @access; closed by rp_close. */
static struct fid_mr *rp_reg(struct rp *r, struct fid_domain *dom, void *buf, size_t len,
			     uint64_t access)
{
	struct fid_mr *mr = NULL;
	int ret;

	cr_assert_lt(r->nmrs, MAX_MRS);
	ret = fi_mr_reg(dom, buf, len, access, 0, 0, 0, &mr, NULL);
	cr_assert_eq(ret, 0, "fi_mr_reg(access %#llx) = %d (%s)", (unsigned long long)access, ret,
		     fi_strerror(-ret));
	r->mrs[r->nmrs++] = mr;
	return mr;
}

/* A target region at b: its key and the virtual address of its start. */
struct region {
	struct fid_mr *mr;
	uint64_t key, base;
};

static struct region rp_target(struct rp *r, void *buf, size_t len, uint64_t access)
{
	struct region g;

	g.mr = rp_reg(r, r->dom_b, buf, len, access);
	g.key = fi_mr_key(g.mr);
	cr_assert_neq(g.key, FI_KEY_NOTAVAIL, "fi_mr_key");
	g.base = (uint64_t)(uintptr_t)buf;
	return g;
}

/* The desc of a local buffer at a: NULL unless the entry asks for FI_MR_LOCAL. */
static void *rp_ldesc(struct rp *r, void *buf, size_t len)
{
	if (!r->mr_local)
		return NULL;
	return fi_mr_desc(rp_reg(r, r->dom_a, buf, len, FI_READ | FI_WRITE | FI_SEND | FI_RECV));
}

/* Drive both endpoints (manual progress): read each CQ for nothing. */
static void rp_progress(struct rp *r)
{
	(void)fi_cq_read(r->a.tx_cq, NULL, 0);
	(void)fi_cq_read(r->b.tx_cq, NULL, 0);
}

/* Post @call, retrying -FI_EAGAIN while both sides progress, for at most WAIT_MS. */
#define POST(r, call) ({						\
	long _deadline = pt_now_ms() + WAIT_MS;				\
	ssize_t _ret;							\
	for (;;) {							\
		_ret = (call);						\
		if (_ret != -FI_EAGAIN || pt_now_ms() > _deadline)	\
			break;						\
		rp_progress(r);						\
	}								\
	_ret;								\
})

/* One entry of @cq (1), an error entry read into @err (-FI_EAVAIL), or -FI_EAGAIN after WAIT_MS. */
static ssize_t rp_wait(struct rp *r, struct fid_cq *cq, struct fi_cq_data_entry *e,
		       struct fi_cq_err_entry *err)
{
	long deadline = pt_now_ms() + WAIT_MS;
	ssize_t ret;

	memset(e, 0, sizeof(*e));
	memset(err, 0, sizeof(*err));
	do {
		rp_progress(r);
		ret = fi_cq_read(cq, e, 1);
		if (ret == -FI_EAVAIL)
			return fi_cq_readerr(cq, err, 0) == 1 ? -FI_EAVAIL : -FI_EOTHER;
	} while (ret == -FI_EAGAIN && pt_now_ms() < deadline);
	return ret;
}

/*
 * Expect @n successful completions on @r's initiator's tx CQ, one for each
 * of @ctx[0..@n), in any order, each of kind exactly @flags (of OP_MASK).
 */
static void rp_comps_any(struct rp *r, struct fi_context *ctx, int n, uint64_t flags,
			 const char *what);

/* Expect a successful completion of @ctx on @cq whose kind is exactly @flags (of OP_MASK). */
static struct fi_cq_data_entry rp_comp(struct rp *r, struct fid_cq *cq, void *ctx, uint64_t flags,
				       const char *what)
{
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	ssize_t ret = rp_wait(r, cq, &e, &err);

	cr_assert_neq(ret, -FI_EAVAIL, "%s: error completion: err %d (%s), prov_errno %d", what,
		      err.err, fi_strerror(err.err), err.prov_errno);
	cr_assert_eq(ret, 1, "%s: no completion: fi_cq_read = %zd (%s)", what, ret,
		     fi_strerror((int)-ret));
	cr_assert_eq(e.op_context, ctx, "%s: op_context %p, want %p", what, e.op_context, ctx);
	cr_assert_eq(e.flags & OP_MASK, flags, "%s: completion flags %#llx, want %#llx", what,
		     (unsigned long long)(e.flags & OP_MASK), (unsigned long long)flags);
	return e;
}

static void rp_comps_any(struct rp *r, struct fi_context *ctx, int n, uint64_t flags,
			 const char *what)
{
	bool seen[64] = { false };

	cr_assert_leq(n, 64);
	for (int k = 0; k < n; k++) {
		struct fi_cq_data_entry e;
		struct fi_cq_err_entry err;
		ssize_t ret = rp_wait(r, r->a.tx_cq, &e, &err);
		ptrdiff_t i;

		cr_assert_neq(ret, -FI_EAVAIL, "%s: error completion: err %d (%s)", what, err.err,
			      fi_strerror(err.err));
		cr_assert_eq(ret, 1, "%s: no completion: fi_cq_read = %zd", what, ret);
		i = (struct fi_context *)e.op_context - ctx;
		cr_assert(i >= 0 && i < n && (void *)&ctx[i] == e.op_context && !seen[i],
			  "%s: op_context %p is none of the %d posted, or came twice", what,
			  e.op_context, n);
		seen[i] = true;
		cr_assert_eq(e.flags & OP_MASK, flags, "%s: completion flags %#llx, want %#llx", what,
			     (unsigned long long)(e.flags & OP_MASK), (unsigned long long)flags);
	}
}

/* Expect an error completion of @ctx on @cq with error @want. */
static void rp_comp_err(struct rp *r, struct fid_cq *cq, void *ctx, int want, const char *what)
{
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	ssize_t ret = rp_wait(r, cq, &e, &err);

	cr_assert_neq(ret, 1, "%s: completed successfully (flags %#llx), want error %d (%s)", what,
		      (unsigned long long)e.flags, want, fi_strerror(want));
	cr_assert_eq(ret, -FI_EAVAIL, "%s: no error completion: fi_cq_read = %zd (%s)", what, ret,
		     fi_strerror((int)-ret));
	cr_assert_eq(err.err, want, "%s: err %d (%s), want %d (%s)", what, err.err,
		     fi_strerror(err.err), want, fi_strerror(want));
	cr_assert_eq(err.op_context, ctx, "%s: op_context %p, want %p", what, err.op_context, ctx);
}

/* Expect nothing on @cq while both sides progress for a while. */
static void rp_empty(struct rp *r, struct fid_cq *cq, const char *what)
{
	struct fi_cq_data_entry e;
	ssize_t ret;

	for (int i = 0; i < 200; i++) {
		rp_progress(r);
		ret = fi_cq_read(cq, &e, 1);
		cr_assert_eq(ret, -FI_EAGAIN, "%s: CQ expected empty, fi_cq_read = %zd (flags %#llx)",
			     what, ret, ret == 1 ? (unsigned long long)e.flags : 0ULL);
	}
}

/* Poll @cntr (success or error value) until it reaches @want or WAIT_MS pass; returns it. */
static uint64_t rp_cntr_until(struct rp *r, struct fid_cntr *cntr, bool errors, uint64_t want)
{
	long deadline = pt_now_ms() + WAIT_MS;
	uint64_t v;

	for (;;) {
		rp_progress(r);
		v = errors ? fi_cntr_readerr(cntr) : fi_cntr_read(cntr);
		if (v >= want || pt_now_ms() > deadline)
			return v;
	}
}

/* Progress both sides until @p[0..n) equals @want or WAIT_MS pass (for operations without a
 * completion); returns whether it did. */
static bool rp_until_equal(struct rp *r, const volatile void *p, const void *want, size_t n)
{
	long deadline = pt_now_ms() + WAIT_MS;

	for (;;) {
		rp_progress(r);
		if (!memcmp((const void *)p, want, n))
			return true;
		if (pt_now_ms() > deadline)
			return false;
	}
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 10) + 1);
}

/* Byte by byte: @got[0..n) is @want[0..n). */
static void check_bytes(const uint8_t *got, const uint8_t *want, size_t n, const char *what)
{
	if (!memcmp(got, want, n))
		return;
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(got[i], want[i], "%s: byte %zu is %#x, want %#x", what, i, got[i],
			     want[i]);
}

/* Every byte of @p[0..n) is @v. */
static void check_const(const uint8_t *p, size_t n, uint8_t v, const char *what)
{
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(p[i], v, "%s: byte %zu is %#x, want %#x (untouched)", what, i, p[i], v);
}

/* The region of @total bytes holds @want[0..n) at @off and PAT_T elsewhere. */
static void check_region(const uint8_t *region, size_t total, size_t off, const uint8_t *want,
			 size_t n, const char *what)
{
	char buf[160];

	snprintf(buf, sizeof(buf), "%s: before the range", what);
	check_const(region, off, PAT_T, buf);
	snprintf(buf, sizeof(buf), "%s: the range", what);
	check_bytes(region + off, want, n, buf);
	snprintf(buf, sizeof(buf), "%s: after the range", what);
	check_const(region + off + n, total - off - n, PAT_T, buf);
}

static uint64_t data_mask(const struct rp *r)
{
	size_t sz = r->info->domain_attr->cq_data_size;

	cr_assert_geq(sz, 4, "cq_data_size %zu", sz);
	return sz >= 8 ? ~0ULL : (1ULL << (8 * sz)) - 1;
}

/* ======================================================================== fi_getinfo */

Test(fi_getinfo, rdm_rma_atomic_entry)
{
	struct fi_info *list, *info;
	int ret;

	ret = rma_getinfo(RMA_CAPS, RMA_MR_MODE | FI_MR_LOCAL, &list);
	cr_assert_eq(ret, 0, "fi_getinfo = %d (%s)", ret, fi_strerror(-ret));
	cr_assert(pt_is_plain_braid(list), "first entry from %s", list->fabric_attr->prov_name);
	info = rma_find(list);
	cr_assert_not_null(info, "no native braid FI_EP_RDM entry");
	cr_assert_str_eq(info->fabric_attr->prov_name, "braid");
	cr_assert_eq(info->ep_attr->type, FI_EP_RDM);
	cr_assert_eq(info->caps & RMA_CAPS, RMA_CAPS, "caps %#llx", (unsigned long long)info->caps);
	/* FI_RMA alone implies all four directions (fi_getinfo(3)); any given must be all */
	cr_assert(!(info->caps & RMA_DIR_CAPS) || (info->caps & RMA_DIR_CAPS) == RMA_DIR_CAPS,
		  "caps %#llx: some directions only", (unsigned long long)info->caps);
	cr_assert_eq(info->tx_attr->caps & (FI_RMA | FI_ATOMIC), FI_RMA | FI_ATOMIC,
		     "tx_attr->caps %#llx", (unsigned long long)info->tx_attr->caps);
	cr_assert_eq(info->rx_attr->caps & (FI_RMA | FI_ATOMIC), FI_RMA | FI_ATOMIC,
		     "rx_attr->caps %#llx", (unsigned long long)info->rx_attr->caps);
	cr_assert_geq(info->tx_attr->rma_iov_limit, 1);
	cr_assert_geq(info->tx_attr->iov_limit, 3, "fi_writev of 3 iovecs needs iov_limit >= 3");
	cr_assert_eq(info->domain_attr->mr_key_size, 8);
	cr_assert_eq(info->domain_attr->mr_mode & RMA_MR_MODE, RMA_MR_MODE, "mr_mode %#x",
		     info->domain_attr->mr_mode);
	/* fi_domain(3): "A provider will clear an mr_mode bit if it is not needed." */
	cr_assert_eq(info->domain_attr->mr_mode & FI_MR_LOCAL, 0, "FI_MR_LOCAL echoed: mr_mode %#x",
		     info->domain_attr->mr_mode);
	cr_assert_eq(info->domain_attr->mr_mode & (BRAID_MR_BASIC | BRAID_MR_SCALABLE), 0);
	cr_assert_eq(info->mode & FI_RX_CQ_DATA, 0, "FI_RX_CQ_DATA was not offered");
	fi_freeinfo(list);

	/* the directions, asked for explicitly, come back */
	ret = rma_getinfo(RMA_CAPS | RMA_DIR_CAPS, RMA_MR_MODE, &list);
	cr_assert_eq(ret, 0, "fi_getinfo(+ directions) = %d (%s)", ret, fi_strerror(-ret));
	info = rma_find(list);
	cr_assert_not_null(info);
	cr_assert_eq(info->caps & (RMA_CAPS | RMA_DIR_CAPS), RMA_CAPS | RMA_DIR_CAPS, "caps %#llx",
		     (unsigned long long)info->caps);
	fi_freeinfo(list);

	/* FI_RMA_EVENT */
	ret = rma_getinfo(RMA_CAPS | FI_RMA_EVENT, RMA_MR_MODE, &list);
	cr_assert_eq(ret, 0, "fi_getinfo(+ FI_RMA_EVENT) = %d (%s)", ret, fi_strerror(-ret));
	info = rma_find(list);
	cr_assert_not_null(info);
	cr_assert(info->caps & FI_RMA_EVENT);
	fi_freeinfo(list);
}

/* No caps in the hints: braid's own defaults, RMA and atomics in both directions. */
Test(fi_getinfo, rdm_rma_default_caps)
{
	struct fi_info *list, *info;
	int ret;

	ret = rma_getinfo(0, RMA_MR_MODE | FI_MR_LOCAL, &list);
	cr_assert_eq(ret, 0, "fi_getinfo = %d (%s)", ret, fi_strerror(-ret));
	info = rma_find(list);
	cr_assert_not_null(info);
	cr_assert_eq(info->caps & (FI_RMA | FI_ATOMIC | RMA_DIR_CAPS),
		     FI_RMA | FI_ATOMIC | RMA_DIR_CAPS, "caps %#llx",
		     (unsigned long long)info->caps);
	cr_assert_eq(info->tx_attr->caps & (FI_READ | FI_WRITE), FI_READ | FI_WRITE,
		     "tx_attr->caps %#llx", (unsigned long long)info->tx_attr->caps);
	cr_assert_eq(info->rx_attr->caps & (FI_REMOTE_READ | FI_REMOTE_WRITE),
		     FI_REMOTE_READ | FI_REMOTE_WRITE, "rx_attr->caps %#llx",
		     (unsigned long long)info->rx_attr->caps);
	cr_assert_geq(info->tx_attr->rma_iov_limit, 1);
	cr_assert_eq(info->domain_attr->mr_key_size, 8);
	fi_freeinfo(list);
}

/* An application without FI_MR_PROV_KEY cannot use braid's RDM RMA. */
Test(fi_getinfo, rdm_rma_needs_prov_key)
{
	const uint64_t want[] = { FI_MSG | FI_RMA, FI_MSG | FI_ATOMIC, RMA_CAPS };
	struct fi_info *list, *info;
	int ret;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		ret = rma_getinfo(want[i], FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_LOCAL, &list);
		cr_assert(ret == 0 || ret == -FI_ENODATA, "fi_getinfo = %d (%s)", ret,
			  fi_strerror(-ret));
		if (ret == 0) {
			info = rma_find(list);
			cr_assert_null(info, "caps %#llx without FI_MR_PROV_KEY: a braid RDM entry "
				       "(caps %#llx, mr_mode %#x)", (unsigned long long)want[i],
				       (unsigned long long)info->caps, info->domain_attr->mr_mode);
			fi_freeinfo(list);
		}
	}
	/* without RMA asked for, the entry is there, without RMA */
	ret = rma_getinfo(FI_MSG | FI_TAGGED, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED, &list);
	cr_assert_eq(ret, 0, "fi_getinfo(FI_MSG | FI_TAGGED) = %d (%s)", ret, fi_strerror(-ret));
	info = rma_find(list);
	cr_assert_not_null(info);
	cr_assert_eq(info->caps & (FI_RMA | FI_ATOMIC), 0, "caps %#llx",
		     (unsigned long long)info->caps);
	fi_freeinfo(list);
}

/* ======================================================================== writes */

static uint8_t tgt[MIB + 2 * GUARD], src[MIB + 2 * GUARD];

static void write_sizes(bool shared)
{
	const size_t sizes[] = { 0, 1, 4096, MIB };
	struct region g;
	void *desc;
	struct rp r;
	char what[64];

	rp_open(&r, 0, shared, false);
	g = rp_target(&r, tgt, sizeof(tgt), FI_REMOTE_READ | FI_REMOTE_WRITE);
	desc = rp_ldesc(&r, src, sizeof(src));
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];

		snprintf(what, sizeof(what), "fi_write %zu bytes", n);
		memset(tgt, PAT_T, sizeof(tgt));
		fill(src, n, (unsigned)k);
		cr_assert_eq(POST(&r, fi_write(r.a.ep, src, n, desc, r.a.peer, g.base + GUARD, g.key,
					       (void *)&sizes[k])), 0, "%s posted", what);
		rp_comp(&r, r.a.tx_cq, (void *)&sizes[k], FI_RMA | FI_WRITE, what);
		check_region(tgt, sizeof(tgt), GUARD, src, n, what);
		rp_empty(&r, r.b.tx_cq, "no event at the target of a write without CQ data");
	}
	/* an odd address and length */
	memset(tgt, PAT_T, sizeof(tgt));
	fill(src, 4097, 9);
	cr_assert_eq(POST(&r, fi_write(r.a.ep, src, 4097, desc, r.a.peer, g.base + GUARD + 3,
				       g.key, src)), 0);
	rp_comp(&r, r.a.tx_cq, src, FI_RMA | FI_WRITE, "fi_write 4097 bytes at +3");
	check_region(tgt, sizeof(tgt), GUARD + 3, src, 4097, "fi_write 4097 bytes at +3");
	rp_close(&r);
}

/*
 * @writes writes of @n bytes, @window at a time: slot k of @src (slots @n
 * bytes apart) always into slot k of the region @g; then every slot checked.
 */
static void write_stream(struct rp *r, struct region *g, uint8_t *src, const uint8_t *tgt,
			 size_t n, int window, int writes)
{
	void *desc = rp_ldesc(r, src, n * (size_t)window);
	int posted = 0, done = 0;

	for (int k = 0; k < window; k++)
		fill(src + k * n, n, (unsigned)k + 100);
	while (done < writes) {
		while (posted < writes && posted - done < window) {
			int k = posted % window;

			cr_assert_eq(POST(r, fi_write(r->a.ep, src + k * n, n, desc, r->a.peer,
						      g->base + k * n, g->key, NULL)), 0);
			posted++;
		}
		rp_comp(r, r->a.tx_cq, NULL, FI_RMA | FI_WRITE, "a write of the stream");
		done++;
	}
	for (int k = 0; k < window; k++)
		check_bytes(tgt + k * n, src + k * n, n, "a slot of the region after the stream");
}

/*
 * A stream of large writes that each end in a short datagram (200,000 bytes
 * on loopback: three full datagrams and a short one): the target keeps
 * receiving the full ones straight into the region (ep.rx_placed), the
 * short one among them taken whole; before, each short one sent the target
 * back to receiving in bursts and most of the stream was copied twice.
 */
static uint8_t stream_tgt[8][200000], stream_src[8][200000];

Test(fi_write, stream_with_short_tails_is_placed, .timeout = 60)
{
	const int writes = 64, window = 8;
	const size_t n = sizeof(stream_tgt[0]);
	struct fi_braid_stat_ops *ops = NULL;
	uint64_t placed = 0, dgrams = 0;
	struct region g;
	struct rp r;

	/* the UDP wire's placement and lending (local peers through shared memory lend nothing) */
	setenv("FI_BRAID_SHM", "0", 1);
	rp_open(&r, 0, false, false);
	cr_assert_eq(fi_open_ops(&r.b.ep->fid, FI_BRAID_STAT_OPS, 0, (void **)&ops, NULL), 0);
	g = rp_target(&r, stream_tgt, sizeof(stream_tgt), FI_REMOTE_WRITE);
	write_stream(&r, &g, stream_src[0], stream_tgt[0], n, window, writes);
	cr_assert_eq(ops->value(&r.b.ep->fid, "ep.rx_placed", &placed), 0);
	cr_assert_eq(ops->value(&r.b.ep->fid, "ep.rx_dgrams", &dgrams), 0);
	/* of the datagrams but the short ones (one a write) and a few more (the
	 * first burst of the stream, acknowledgements), three in four at least */
	cr_assert_geq(dgrams, (uint64_t)writes * 4, "every datagram of the stream arrived");
	cr_assert_geq(placed * 4, (dgrams - 2 * (uint64_t)writes) * 3,
		      "%llu of %llu datagrams placed", (unsigned long long)placed,
		      (unsigned long long)dgrams);
	/* the initiator lent the full datagrams' payloads once the target acknowledged
	 * (protocol.md §4.2 "Lent payloads"; FI_BRAID_LEND_MIN), and every byte still landed */
	{
		uint64_t lent = 0;
		const char *lm = getenv("FI_BRAID_LEND_MIN");

		cr_assert_eq(ops->value(&r.a.ep->fid, "ep.tx_lent", &lent), 0);
		/* (a kernel that does not say how many pieces a datagram holds lends nothing) */
		if ((!lm || atoi(lm) > 0) && !access("/proc/sys/net/core/max_skb_frags", R_OK))
			cr_assert_gt(lent, (uint64_t)writes, "%llu datagrams lent",
				     (unsigned long long)lent);
	}
	rp_close(&r);
}

/*
 * A stranger's datagrams in the middle of a stream of large writes, which
 * the target receives straight into place: each is looked at first, taken
 * whole and dropped as not braid's, and placement goes on: every byte
 * right, the junk dropped and counted, most of the stream still placed.
 */
static uint8_t junk_tgt[8][200000], junk_src[8][200000];

struct junker {
	struct sockaddr_in to;
	volatile bool stop;
	int sent;
};

/* A stranger: 9000-byte datagrams of junk at the target, every 50 us until told to stop. */
static void *junk_thread(void *arg)
{
	struct junker *j = arg;
	static uint8_t junk[9000];
	int sock = socket(AF_INET, SOCK_DGRAM, 0);

	memset(junk, 0xa5, sizeof(junk));
	while (sock >= 0 && !j->stop) {
		if (sendto(sock, junk, sizeof(junk), 0, (struct sockaddr *)&j->to,
			   sizeof(j->to)) == (ssize_t)sizeof(junk))
			j->sent++;
		usleep(50);
	}
	if (sock >= 0)
		close(sock);
	return NULL;
}

Test(fi_write, a_strangers_datagrams_in_a_placed_stream_change_no_byte, .timeout = 60)
{
	const int writes = 256, window = 8;
	const size_t n = sizeof(junk_tgt[0]);
	struct fi_braid_stat_ops *ops = NULL;
	uint64_t magic = 0, placed = 0;
	struct junker j = { .stop = false };
	size_t alen = sizeof(j.to);
	struct region g;
	pthread_t t;
	struct rp r;

	rp_open(&r, 0, false, false);
	cr_assert_eq(fi_open_ops(&r.b.ep->fid, FI_BRAID_STAT_OPS, 0, (void **)&ops, NULL), 0);
	cr_assert_eq(fi_getname(&r.b.ep->fid, &j.to, &alen), 0);
	g = rp_target(&r, junk_tgt, sizeof(junk_tgt), FI_REMOTE_WRITE);
	cr_assert_eq(pthread_create(&t, NULL, junk_thread, &j), 0);
	write_stream(&r, &g, junk_src[0], junk_tgt[0], n, window, writes);
	j.stop = true;
	pthread_join(t, NULL);
	/* (junk still queued at the target is not read: at most what was sent) */
	cr_assert_eq(ops->value(&r.b.ep->fid, "rd.drop.bad_magic", &magic), 0);
	cr_assert_eq(ops->value(&r.b.ep->fid, "ep.rx_placed", &placed), 0);
	cr_assert_gt(magic, 0, "junk dropped as not braid's (%d sent)", j.sent);
	cr_assert_leq(magic, (uint64_t)j.sent);
	/* four datagrams a write, the first three full: most of them placed */
	cr_assert_geq(placed * 2, (uint64_t)writes * 3, "%llu datagrams placed",
		      (unsigned long long)placed);
	rp_close(&r);
}

/*
 * Lent payloads against a receiver that stops reading (protocol.md §4.2): a
 * write's datagrams lent while the target was away for longer than the
 * wait bound are dropped there (stale_lent), never placed; the initiator's
 * copies (resends are never lent) complete the write, every byte right.
 * No progress thread: the target is truly away while nothing calls it.
 */
static uint8_t away_tgt[MIB], away_src[MIB];

Test(fi_write, lent_payloads_that_waited_too_long_are_dropped_and_resent, .timeout = 60)
{
	struct fi_braid_stat_ops *ops = NULL;
	uint64_t lent = 0, stale = 0;
	struct region g;
	void *desc;
	struct rp r;
	long until;

	if (access("/proc/sys/net/core/max_skb_frags", R_OK))
		cr_skip_test("this kernel lends nothing (no max_skb_frags to read)");
	setenv("FI_BRAID_PROGRESS_US", "0", 1);
	setenv("FI_BRAID_LEND_MIN", "16384", 1);
	setenv("FI_BRAID_SHM", "0", 1);	/* the UDP wire's lending */
	rp_open(&r, 0, false, false);
	cr_assert_eq(fi_open_ops(&r.b.ep->fid, FI_BRAID_STAT_OPS, 0, (void **)&ops, NULL), 0);
	g = rp_target(&r, away_tgt, sizeof(away_tgt), FI_REMOTE_WRITE);
	desc = rp_ldesc(&r, away_src, sizeof(away_src));
	/* one write both ways progressing: the target has acknowledged just now */
	fill(away_src, MIB, 7);
	cr_assert_eq(POST(&r, fi_write(r.a.ep, away_src, MIB, desc, r.a.peer, g.base, g.key, NULL)), 0);
	rp_comp(&r, r.a.tx_cq, NULL, FI_RMA | FI_WRITE, "the first write");
	/* the second: only the initiator progresses for 5 ms, then nobody for 150 ms */
	fill(away_src, MIB, 8);
	cr_assert_eq(fi_write(r.a.ep, away_src, MIB, desc, r.a.peer, g.base, g.key, NULL), 0);
	until = pt_now_ms() + 5;
	while (pt_now_ms() < until)
		(void)fi_cq_read(r.a.tx_cq, NULL, 0);
	cr_assert_eq(ops->value(&r.a.ep->fid, "ep.tx_lent", &lent), 0);
	cr_assert_gt(lent, 0, "the second write's datagrams went by reference");
	/* the time the rule measures (BRAID_RD_LENT_WAIT_NS, 100 ms): the target
	 * leaves the datagrams in its socket that long, not a wait for an event */
	usleep(150 * 1000);
	rp_comp(&r, r.a.tx_cq, NULL, FI_RMA | FI_WRITE, "the second write, after the target came back");
	check_bytes(away_tgt, away_src, MIB, "the region after the second write");
	cr_assert_eq(ops->value(&r.b.ep->fid, "rd.drop.stale_lent", &stale), 0);
	cr_assert_gt(stale, 0, "what waited in the target's socket over 100 ms was dropped");
	/* a third, lent and not acknowledged when the initiator closes: the close
	 * returns no sooner than 100 ms after it lent (the buffer may be read until then) */
	{
		uint64_t before = lent;
		long t0 = pt_now_ms();

		cr_assert_eq(fi_write(r.a.ep, away_src, MIB, desc, r.a.peer, g.base, g.key, NULL), 0);
		until = pt_now_ms() + 5;
		while (pt_now_ms() < until)
			(void)fi_cq_read(r.a.tx_cq, NULL, 0);
		cr_assert_eq(ops->value(&r.a.ep->fid, "ep.tx_lent", &lent), 0);
		cr_assert_gt(lent, before, "the third write lent too");
		pt_ep_close(&r.a);
		cr_assert_geq(pt_now_ms() - t0, 100, "closing waited out the bound: %ld ms",
			      pt_now_ms() - t0);
	}
	rp_close(&r);
}

Test(fi_write, sizes_two_domains, .timeout = 30)
{
	write_sizes(false);
}

Test(fi_write, sizes_one_shared_domain, .timeout = 30)
{
	write_sizes(true);
}

Test(fi_writev, three_iovecs_land_contiguously, .timeout = 30)
{
	/* 3 iovecs: 1 byte, 4 KiB - 1, 1 MiB - 4 KiB - 9 (all of src, odd splits) */
	const size_t lens[3] = { 1, 4095, MIB - 4096 - 9 };
	size_t total = lens[0] + lens[1] + lens[2];
	struct iovec iov[3];
	void *descs[3];
	struct region g;
	struct rp r;

	rp_open(&r, 0, false, false);
	g = rp_target(&r, tgt, sizeof(tgt), FI_REMOTE_WRITE);
	memset(tgt, PAT_T, sizeof(tgt));
	fill(src, total, 3);
	iov[0] = (struct iovec){ src, lens[0] };
	iov[1] = (struct iovec){ src + lens[0], lens[1] };
	iov[2] = (struct iovec){ src + lens[0] + lens[1], lens[2] };
	for (int i = 0; i < 3; i++)
		descs[i] = rp_ldesc(&r, iov[i].iov_base, iov[i].iov_len);
	cr_assert_eq(POST(&r, fi_writev(r.a.ep, iov, descs, 3, r.a.peer, g.base + GUARD + 1, g.key,
					iov)), 0);
	rp_comp(&r, r.a.tx_cq, iov, FI_RMA | FI_WRITE, "fi_writev");
	check_region(tgt, sizeof(tgt), GUARD + 1, src, total, "fi_writev");

	/* two small iovecs (a single packet) */
	memset(tgt, PAT_T, sizeof(tgt));
	iov[0] = (struct iovec){ src + 100, 10 };
	iov[1] = (struct iovec){ src + 5000, 20 };
	cr_assert_eq(POST(&r, fi_writev(r.a.ep, iov, descs, 2, r.a.peer, g.base + GUARD, g.key,
					(void *)&lens)), 0);
	rp_comp(&r, r.a.tx_cq, (void *)&lens, FI_RMA | FI_WRITE, "fi_writev 2 small");
	{
		uint8_t want[30];

		memcpy(want, src + 100, 10);
		memcpy(want + 10, src + 5000, 20);
		check_region(tgt, sizeof(tgt), GUARD, want, 30, "fi_writev 2 small");
	}
	rp_empty(&r, r.b.tx_cq, "target CQ");
	rp_close(&r);
}

Test(fi_writemsg, iovecs_rma_iovs_inject_and_cq_data, .timeout = 30)
{
	uint8_t local[256], want[256];
	struct fi_context ctx[4];
	struct iovec iov[2];
	struct fi_rma_iov rma[2];
	void *descs[2];
	struct fi_msg_rma msg;
	struct fi_cq_data_entry e;
	struct region g;
	uint64_t data;
	struct rp r;

	rp_open(&r, 0, false, false);
	data = 0x0123456789abcdefULL & data_mask(&r);
	g = rp_target(&r, tgt, 8192, FI_REMOTE_WRITE | FI_REMOTE_READ);
	fill(local, sizeof(local), 4);
	descs[0] = descs[1] = rp_ldesc(&r, local, sizeof(local));

	/* 2 local iovecs into one remote range */
	memset(tgt, PAT_T, 8192);
	iov[0] = (struct iovec){ local, 100 };
	iov[1] = (struct iovec){ local + 150, 50 };
	rma[0] = (struct fi_rma_iov){ g.base + GUARD, 150, g.key };
	msg = (struct fi_msg_rma){ .msg_iov = iov, .desc = descs, .iov_count = 2, .addr = r.a.peer,
				   .rma_iov = rma, .rma_iov_count = 1, .context = &ctx[0] };
	cr_assert_eq(POST(&r, fi_writemsg(r.a.ep, &msg, FI_DELIVERY_COMPLETE)), 0);
	rp_comp(&r, r.a.tx_cq, &ctx[0], FI_RMA | FI_WRITE, "fi_writemsg 2 iovecs");
	memcpy(want, local, 100);
	memcpy(want + 100, local + 150, 50);
	check_region(tgt, 8192, GUARD, want, 150, "fi_writemsg 2 iovecs");

	/* two remote ranges with a gap, when the endpoint allows 2 rma_iovs */
	if (r.info->tx_attr->rma_iov_limit >= 2) {
		memset(tgt, PAT_T, 8192);
		iov[0] = (struct iovec){ local, 120 };
		rma[0] = (struct fi_rma_iov){ g.base + 1000, 70, g.key };
		rma[1] = (struct fi_rma_iov){ g.base + 3000, 50, g.key };
		msg.iov_count = 1;
		msg.rma_iov_count = 2;
		msg.context = &ctx[1];
		cr_assert_eq(POST(&r, fi_writemsg(r.a.ep, &msg, FI_DELIVERY_COMPLETE)), 0);
		rp_comp(&r, r.a.tx_cq, &ctx[1], FI_RMA | FI_WRITE, "fi_writemsg 2 rma_iovs");
		check_const(tgt, 1000, PAT_T, "before the first rma_iov");
		check_bytes(tgt + 1000, local, 70, "first rma_iov");
		check_const(tgt + 1070, 3000 - 1070, PAT_T, "between the rma_iovs");
		check_bytes(tgt + 3000, local + 70, 50, "second rma_iov");
		check_const(tgt + 3050, 8192 - 3050, PAT_T, "after the second rma_iov");
	}

	/* FI_INJECT: the buffer is ours again at once */
	memset(tgt, PAT_T, 8192);
	memcpy(want, local, 64);
	iov[0] = (struct iovec){ local, 64 };
	rma[0] = (struct fi_rma_iov){ g.base + GUARD, 64, g.key };
	msg = (struct fi_msg_rma){ .msg_iov = iov, .desc = descs, .iov_count = 1, .addr = r.a.peer,
				   .rma_iov = rma, .rma_iov_count = 1, .context = &ctx[2] };
	cr_assert_eq(POST(&r, fi_writemsg(r.a.ep, &msg, FI_INJECT | FI_DELIVERY_COMPLETE)), 0);
	memset(local, 0xee, 64);
	rp_comp(&r, r.a.tx_cq, &ctx[2], FI_RMA | FI_WRITE, "fi_writemsg FI_INJECT");
	check_region(tgt, 8192, GUARD, want, 64, "fi_writemsg FI_INJECT");

	/* FI_REMOTE_CQ_DATA: an entry at the target with the data */
	fill(local, sizeof(local), 5);
	memset(tgt, PAT_T, 8192);
	iov[0] = (struct iovec){ local, 33 };
	rma[0] = (struct fi_rma_iov){ g.base + GUARD, 33, g.key };
	msg.context = &ctx[3];
	msg.data = data;
	cr_assert_eq(POST(&r, fi_writemsg(r.a.ep, &msg, FI_REMOTE_CQ_DATA | FI_DELIVERY_COMPLETE)),
		     0);
	e = rp_comp(&r, r.b.tx_cq, NULL, FI_RMA | FI_REMOTE_WRITE, "target of FI_REMOTE_CQ_DATA");
	cr_assert(e.flags & FI_REMOTE_CQ_DATA, "flags %#llx", (unsigned long long)e.flags);
	cr_assert_eq(e.data, data, "data %#llx", (unsigned long long)e.data);
	check_region(tgt, 8192, GUARD, local, 33, "fi_writemsg FI_REMOTE_CQ_DATA");
	rp_comp(&r, r.a.tx_cq, &ctx[3], FI_RMA | FI_WRITE, "fi_writemsg FI_REMOTE_CQ_DATA");
	rp_empty(&r, r.b.tx_cq, "target CQ");
	rp_close(&r);
}

Test(fi_inject_write, buffer_free_at_once_no_completion, .timeout = 30)
{
	static uint8_t want[MIB];
	size_t inject;
	struct region g;
	struct rp r;

	rp_open(&r, 0, false, false);
	inject = r.info->tx_attr->inject_size;
	cr_assert_geq(inject, 64, "inject_size %zu", inject);
	cr_assert_leq(inject, MIB, "inject_size %zu", inject);
	g = rp_target(&r, tgt, sizeof(tgt), FI_REMOTE_WRITE);
	memset(tgt, PAT_T, sizeof(tgt));
	fill(src, 64, 6);
	memcpy(want, src, 64);
	cr_assert_eq(POST(&r, fi_inject_write(r.a.ep, src, 64, r.a.peer, g.base + GUARD, g.key)), 0);
	memset(src, 0, 64);	/* ours again: the write must carry the old bytes */
	cr_assert(rp_until_equal(&r, tgt + GUARD, want, 64), "the injected write arrived");
	check_region(tgt, sizeof(tgt), GUARD, want, 64, "fi_inject_write 64");
	rp_empty(&r, r.a.tx_cq, "no completion for an inject");
	rp_empty(&r, r.b.tx_cq, "no event at the target");

	/* inject_size bytes exactly */
	memset(tgt, PAT_T, sizeof(tgt));
	fill(src, inject, 7);
	memcpy(want, src, inject);
	cr_assert_eq(POST(&r, fi_inject_write(r.a.ep, src, inject, r.a.peer, g.base + GUARD + 1,
					      g.key)), 0, "fi_inject_write of inject_size %zu", inject);
	memset(src, 0, inject);
	cr_assert(rp_until_equal(&r, tgt + GUARD + 1, want, inject), "inject_size bytes arrived");
	check_region(tgt, sizeof(tgt), GUARD + 1, want, inject, "fi_inject_write of inject_size");
	rp_empty(&r, r.a.tx_cq, "no completion for an inject");
	rp_close(&r);
}

Test(fi_writedata, target_entry_consumes_no_receive, .timeout = 30)
{
	const size_t sizes[] = { 0, 4096, MIB };
	char rbuf[64] = "";
	struct fi_context rctx, sctx;
	struct fi_cq_data_entry e;
	struct region g;
	uint64_t mask;
	void *desc;
	struct rp r;
	char what[64];

	rp_open(&r, 0, false, false);
	mask = data_mask(&r);
	g = rp_target(&r, tgt, sizeof(tgt), FI_REMOTE_WRITE);
	desc = rp_ldesc(&r, src, sizeof(src));
	/* a receive posted at the target before: RMA data must leave it alone */
	cr_assert_eq(fi_recv(r.b.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, &rctx), 0);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		uint64_t data = (0xfeedbeefcafe0000ULL + k) & mask;

		snprintf(what, sizeof(what), "fi_writedata %zu bytes", n);
		memset(tgt, PAT_T, sizeof(tgt));
		fill(src, n, (unsigned)(20 + k));
		cr_assert_eq(POST(&r, fi_writedata(r.a.ep, src, n, desc, data, r.a.peer,
						   g.base + GUARD, g.key, (void *)&sizes[k])), 0,
			     "%s posted", what);
		/* the target's entry: no operation of its own (op_context NULL, fi_cq(3)) */
		e = rp_comp(&r, r.b.tx_cq, NULL, FI_RMA | FI_REMOTE_WRITE, what);
		cr_assert(e.flags & FI_REMOTE_CQ_DATA, "%s: flags %#llx", what,
			  (unsigned long long)e.flags);
		cr_assert_eq(e.data, data, "%s: data %#llx, want %#llx", what,
			     (unsigned long long)e.data, (unsigned long long)data);
		/* the target's completion makes the data visible there */
		check_region(tgt, sizeof(tgt), GUARD, src, n, what);
		rp_comp(&r, r.a.tx_cq, (void *)&sizes[k], FI_RMA | FI_WRITE, what);
		cr_assert_str_eq(rbuf, "", "%s: the posted receive was written", what);
	}
	/* the receive is still posted: a message lands in it */
	cr_assert_eq(POST(&r, fi_send(r.a.ep, "after", 6, NULL, r.a.peer, &sctx)), 0);
	e = rp_comp(&r, r.b.tx_cq, &rctx, FI_MSG | FI_RECV, "the receive posted before the writes");
	cr_assert_eq(e.len, 6);
	cr_assert_str_eq(rbuf, "after");
	rp_comp(&r, r.a.tx_cq, &sctx, FI_MSG | FI_SEND, "fi_send");
	rp_close(&r);
}

Test(fi_inject_writedata, target_entry_no_initiator_completion, .timeout = 30)
{
	uint8_t local[32], want[32];
	struct fi_cq_data_entry e;
	struct region g;
	uint64_t data;
	struct rp r;

	rp_open(&r, 0, true, false);
	data = 0x7766554433221100ULL & data_mask(&r);
	g = rp_target(&r, tgt, 4096, FI_REMOTE_WRITE);
	memset(tgt, PAT_T, 4096);
	fill(local, sizeof(local), 8);
	memcpy(want, local, sizeof(want));
	cr_assert_eq(POST(&r, fi_inject_writedata(r.a.ep, local, sizeof(local), data, r.a.peer,
						  g.base + 100, g.key)), 0);
	memset(local, 0, sizeof(local));
	e = rp_comp(&r, r.b.tx_cq, NULL, FI_RMA | FI_REMOTE_WRITE, "fi_inject_writedata target");
	cr_assert(e.flags & FI_REMOTE_CQ_DATA);
	cr_assert_eq(e.data, data, "data %#llx", (unsigned long long)e.data);
	check_region(tgt, 4096, 100, want, sizeof(want), "fi_inject_writedata");
	rp_empty(&r, r.a.tx_cq, "no completion for an inject");
	rp_empty(&r, r.b.tx_cq, "one target entry only");
	rp_close(&r);
}

/* ======================================================================== reads */

static uint8_t lbuf[MIB + 2 * GUARD];

static void read_sizes(bool shared)
{
	const size_t sizes[] = { 0, 1, 4096, MIB };
	struct region g;
	void *desc;
	struct rp r;
	char what[64];

	rp_open(&r, 0, shared, false);
	g = rp_target(&r, tgt, sizeof(tgt), FI_REMOTE_READ);
	desc = rp_ldesc(&r, lbuf, sizeof(lbuf));
	fill(tgt, sizeof(tgt), 11);
	memcpy(src, tgt, sizeof(tgt));	/* what the target holds, to see it unchanged */
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];

		snprintf(what, sizeof(what), "fi_read %zu bytes", n);
		memset(lbuf, PAT_L, sizeof(lbuf));
		cr_assert_eq(POST(&r, fi_read(r.a.ep, lbuf + GUARD, n, desc, r.a.peer,
					      g.base + GUARD + k, g.key, (void *)&sizes[k])), 0,
			     "%s posted", what);
		rp_comp(&r, r.a.tx_cq, (void *)&sizes[k], FI_RMA | FI_READ, what);
		check_const(lbuf, GUARD, PAT_L, "before the local buffer");
		check_bytes(lbuf + GUARD, tgt + GUARD + k, n, what);
		check_const(lbuf + GUARD + n, sizeof(lbuf) - GUARD - n, PAT_L,
			    "after the local buffer");
		check_bytes(tgt, src, sizeof(tgt), "the target after a read");
		rp_empty(&r, r.b.tx_cq, "no event at the target of a read");
	}
	rp_close(&r);
}

Test(fi_read, sizes_two_domains, .timeout = 30)
{
	read_sizes(false);
}

Test(fi_read, sizes_one_shared_domain, .timeout = 30)
{
	read_sizes(true);
}

Test(fi_readv, three_iovecs_filled_in_order, .timeout = 30)
{
	const size_t lens[3] = { 7, 4096, MIB - 5000 };
	size_t total = lens[0] + lens[1] + lens[2], gap = 16, off = 0;
	struct iovec iov[3];
	void *descs[3];
	struct region g;
	struct rp r;

	rp_open(&r, 0, false, false);
	g = rp_target(&r, tgt, sizeof(tgt), FI_REMOTE_READ);
	fill(tgt, sizeof(tgt), 12);
	memset(lbuf, PAT_L, sizeof(lbuf));
	/* the iovecs with gaps of 16 bytes between them, which must stay untouched */
	for (int i = 0; i < 3; i++) {
		iov[i] = (struct iovec){ lbuf + gap + off + i * gap, lens[i] };
		descs[i] = rp_ldesc(&r, iov[i].iov_base, lens[i]);
		off += lens[i];
	}
	cr_assert_eq(POST(&r, fi_readv(r.a.ep, iov, descs, 3, r.a.peer, g.base + 5, g.key, iov)),
		     0);
	rp_comp(&r, r.a.tx_cq, iov, FI_RMA | FI_READ, "fi_readv");
	off = 0;
	for (int i = 0; i < 3; i++) {
		uint8_t *p = iov[i].iov_base;

		check_const(p - gap, gap, PAT_L, "the gap before an iovec");
		check_bytes(p, tgt + 5 + off, lens[i], "fi_readv iovec");
		off += lens[i];
	}
	check_const((uint8_t *)iov[2].iov_base + lens[2], 16, PAT_L, "after the last iovec");
	cr_assert_eq(off, total);
	rp_close(&r);
}

Test(fi_readmsg, iovecs_and_rma_iovs, .timeout = 30)
{
	uint8_t local[512];
	struct fi_context ctx[2];
	struct iovec iov[2];
	struct fi_rma_iov rma[2];
	void *descs[2];
	struct fi_msg_rma msg;
	struct region g;
	struct rp r;

	rp_open(&r, 0, false, false);
	g = rp_target(&r, tgt, 8192, FI_REMOTE_READ);
	fill(tgt, 8192, 13);
	descs[0] = descs[1] = rp_ldesc(&r, local, sizeof(local));
	memset(local, PAT_L, sizeof(local));
	iov[0] = (struct iovec){ local, 40 };
	iov[1] = (struct iovec){ local + 100, 60 };
	rma[0] = (struct fi_rma_iov){ g.base + 2000, 100, g.key };
	msg = (struct fi_msg_rma){ .msg_iov = iov, .desc = descs, .iov_count = 2, .addr = r.a.peer,
				   .rma_iov = rma, .rma_iov_count = 1, .context = &ctx[0] };
	cr_assert_eq(POST(&r, fi_readmsg(r.a.ep, &msg, 0)), 0);
	rp_comp(&r, r.a.tx_cq, &ctx[0], FI_RMA | FI_READ, "fi_readmsg 2 iovecs");
	check_bytes(local, tgt + 2000, 40, "first iovec");
	check_const(local + 40, 60, PAT_L, "between the iovecs");
	check_bytes(local + 100, tgt + 2040, 60, "second iovec");
	check_const(local + 160, sizeof(local) - 160, PAT_L, "after the iovecs");

	if (r.info->tx_attr->rma_iov_limit >= 2) {
		memset(local, PAT_L, sizeof(local));
		iov[0] = (struct iovec){ local, 90 };
		rma[0] = (struct fi_rma_iov){ g.base + 10, 30, g.key };
		rma[1] = (struct fi_rma_iov){ g.base + 7000, 60, g.key };
		msg.iov_count = 1;
		msg.rma_iov_count = 2;
		msg.context = &ctx[1];
		cr_assert_eq(POST(&r, fi_readmsg(r.a.ep, &msg, 0)), 0);
		rp_comp(&r, r.a.tx_cq, &ctx[1], FI_RMA | FI_READ, "fi_readmsg 2 rma_iovs");
		check_bytes(local, tgt + 10, 30, "first rma_iov");
		check_bytes(local + 30, tgt + 7000, 60, "second rma_iov");
		check_const(local + 90, sizeof(local) - 90, PAT_L, "after");
	}
	rp_close(&r);
}

/* ======================================================================== counters */

Test(fi_cntr, initiator_write_and_read_counters, .timeout = 30)
{
	uint8_t local[256];
	uint64_t v, sum = 5, res;
	struct region g;
	struct rp r;
	int i;

	rp_open(&r, 0, false, true);
	g = rp_target(&r, tgt, 4096, FI_REMOTE_READ | FI_REMOTE_WRITE);
	memset(tgt, 0, 4096);
	fill(local, sizeof(local), 14);
	/* 3 writes (one injected), 2 reads */
	for (i = 0; i < 2; i++) {
		cr_assert_eq(POST(&r, fi_write(r.a.ep, local, 100, NULL, r.a.peer, g.base + 200 * i,
					       g.key, &local[i])), 0);
		rp_comp(&r, r.a.tx_cq, &local[i], FI_RMA | FI_WRITE, "fi_write");
	}
	cr_assert_eq(POST(&r, fi_inject_write(r.a.ep, local, 8, r.a.peer, g.base + 1000, g.key)), 0);
	for (i = 0; i < 2; i++) {
		cr_assert_eq(POST(&r, fi_read(r.a.ep, local + 128, 50, NULL, r.a.peer, g.base, g.key,
					      &local[10 + i])), 0);
		rp_comp(&r, r.a.tx_cq, &local[10 + i], FI_RMA | FI_READ, "fi_read");
	}
	v = rp_cntr_until(&r, r.wr, false, 3);
	cr_assert_eq(v, 3, "FI_WRITE counter %llu after 3 writes", (unsigned long long)v);
	v = rp_cntr_until(&r, r.rd, false, 2);
	cr_assert_eq(v, 2, "FI_READ counter %llu after 2 reads", (unsigned long long)v);
	cr_assert_eq(fi_cntr_readerr(r.wr), 0);
	cr_assert_eq(fi_cntr_readerr(r.rd), 0);

	/* a base atomic counts as a write, fetching and compare atomics as reads */
	cr_assert_eq(POST(&r, fi_atomic(r.a.ep, &sum, 1, NULL, r.a.peer, g.base + 2048, g.key,
					FI_UINT64, FI_SUM, &sum)), 0);
	rp_comp(&r, r.a.tx_cq, &sum, FI_ATOMIC | FI_WRITE, "fi_atomic");
	cr_assert_eq(POST(&r, fi_fetch_atomic(r.a.ep, &sum, 1, NULL, &res, NULL, r.a.peer,
					      g.base + 2048, g.key, FI_UINT64, FI_SUM, &res)), 0);
	rp_comp(&r, r.a.tx_cq, &res, FI_ATOMIC | FI_READ, "fi_fetch_atomic");
	v = rp_cntr_until(&r, r.wr, false, 4);
	cr_assert_eq(v, 4, "FI_WRITE counter %llu after 3 writes and an atomic",
		     (unsigned long long)v);
	v = rp_cntr_until(&r, r.rd, false, 3);
	cr_assert_eq(v, 3, "FI_READ counter %llu after 2 reads and a fetching atomic",
		     (unsigned long long)v);

	/* a refused write counts as an error (fi_cntr(3)) */
	cr_assert_eq(POST(&r, fi_write(r.a.ep, local, 8, NULL, r.a.peer, g.base, g.key ^ 0x5a5a5a5aULL,
				       local)), 0);
	rp_comp_err(&r, r.a.tx_cq, local, FI_EACCES, "fi_write with a wrong key");
	v = rp_cntr_until(&r, r.wr, true, 1);
	cr_assert_eq(v, 1, "FI_WRITE counter's error value %llu", (unsigned long long)v);
	cr_assert_eq(fi_cntr_read(r.wr), 4, "the success value unchanged by the error");
	cr_assert_eq(fi_cntr_read(r.rd), 3);
	cr_assert_eq(fi_cntr_readerr(r.rd), 0);
	rp_close(&r);
}

Test(fi_cntr, remote_counters_with_rma_event, .timeout = 30)
{
	uint8_t local[256];
	uint64_t v, one = 1, res, cmp = 0;
	struct region g;
	struct rp r;
	int i;

	rp_open(&r, FI_RMA_EVENT, false, true);
	g = rp_target(&r, tgt, 4096, FI_REMOTE_READ | FI_REMOTE_WRITE);
	memset(tgt, 0, 4096);
	fill(local, sizeof(local), 15);
	cr_assert_eq(fi_cntr_read(r.rwr), 0);
	cr_assert_eq(fi_cntr_read(r.rrd), 0);
	/* 3 writes (fi_write, fi_writedata, fi_inject_write), 2 reads */
	cr_assert_eq(POST(&r, fi_write(r.a.ep, local, 100, NULL, r.a.peer, g.base, g.key, &local[0])),
		     0);
	rp_comp(&r, r.a.tx_cq, &local[0], FI_RMA | FI_WRITE, "fi_write");
	cr_assert_eq(POST(&r, fi_writedata(r.a.ep, local, 10, NULL, 42, r.a.peer, g.base + 200,
					   g.key, &local[1])), 0);
	rp_comp(&r, r.a.tx_cq, &local[1], FI_RMA | FI_WRITE, "fi_writedata");
	cr_assert_eq(POST(&r, fi_inject_write(r.a.ep, local, 8, r.a.peer, g.base + 400, g.key)), 0);
	for (i = 0; i < 2; i++) {
		cr_assert_eq(POST(&r, fi_read(r.a.ep, local + 128, 64, NULL, r.a.peer, g.base, g.key,
					      &local[2 + i])), 0);
		rp_comp(&r, r.a.tx_cq, &local[2 + i], FI_RMA | FI_READ, "fi_read");
	}
	v = rp_cntr_until(&r, r.rwr, false, 3);
	cr_assert_eq(v, 3, "FI_REMOTE_WRITE counter %llu after 3 writes", (unsigned long long)v);
	v = rp_cntr_until(&r, r.rrd, false, 2);
	cr_assert_eq(v, 2, "FI_REMOTE_READ counter %llu after 2 reads", (unsigned long long)v);

	/* base atomics count as remote writes; fetching and compare atomics as remote reads */
	cr_assert_eq(POST(&r, fi_atomic(r.a.ep, &one, 1, NULL, r.a.peer, g.base + 1024, g.key,
					FI_UINT64, FI_SUM, &one)), 0);
	rp_comp(&r, r.a.tx_cq, &one, FI_ATOMIC | FI_WRITE, "fi_atomic");
	cr_assert_eq(POST(&r, fi_fetch_atomic(r.a.ep, &one, 1, NULL, &res, NULL, r.a.peer,
					      g.base + 1024, g.key, FI_UINT64, FI_SUM, &res)), 0);
	rp_comp(&r, r.a.tx_cq, &res, FI_ATOMIC | FI_READ, "fi_fetch_atomic");
	cr_assert_eq(POST(&r, fi_compare_atomic(r.a.ep, &one, 1, NULL, &cmp, NULL, &res, NULL,
						r.a.peer, g.base + 1024, g.key, FI_UINT64, FI_CSWAP,
						&cmp)), 0);
	rp_comp(&r, r.a.tx_cq, &cmp, FI_ATOMIC | FI_READ, "fi_compare_atomic");
	v = rp_cntr_until(&r, r.rwr, false, 4);
	cr_assert_eq(v, 4, "FI_REMOTE_WRITE counter %llu after 3 writes and an atomic",
		     (unsigned long long)v);
	v = rp_cntr_until(&r, r.rrd, false, 4);
	cr_assert_eq(v, 4, "FI_REMOTE_READ counter %llu after 2 reads, a fetch and a compare",
		     (unsigned long long)v);
	/* nothing counted twice, nothing as an error */
	for (i = 0; i < 100; i++)
		rp_progress(&r);
	cr_assert_eq(fi_cntr_read(r.rwr), 4);
	cr_assert_eq(fi_cntr_read(r.rrd), 4);
	cr_assert_eq(fi_cntr_readerr(r.rwr), 0);
	cr_assert_eq(fi_cntr_readerr(r.rrd), 0);

	/* whatever FI_RMA_EVENT put on the target's CQ is a remote access, of no operation of
	 * its own; the writedata's entry is there once, with its data */
	{
		struct fi_cq_data_entry e;
		int n = 0, with_data = 0;

		while (fi_cq_read(r.b.tx_cq, &e, 1) == 1) {
			n++;
			cr_assert(e.flags & (FI_RMA | FI_ATOMIC), "target entry flags %#llx",
				  (unsigned long long)e.flags);
			cr_assert(e.flags & (FI_REMOTE_READ | FI_REMOTE_WRITE), "target entry flags %#llx",
				  (unsigned long long)e.flags);
			cr_assert_eq(e.flags & (FI_MSG | FI_RECV | FI_SEND | FI_READ | FI_WRITE), 0,
				     "target entry flags %#llx", (unsigned long long)e.flags);
			cr_assert_null(e.op_context);
			if (e.flags & FI_REMOTE_CQ_DATA) {
				with_data++;
				cr_assert_eq(e.data, 42);
				cr_assert(e.flags & FI_REMOTE_WRITE);
			}
		}
		cr_assert_eq(with_data, 1, "%d target entries, %d with CQ data", n, with_data);
	}
	rp_close(&r);
}

/* ======================================================================== atomics */

Test(fi_atomicvalid, sum_and_min_valid_bor_on_float_not)
{
	struct fi_atomic_attr attr;
	size_t cnt, c_sum, c_min, f_sum, f_min, k_cswap, k_dcswap;
	struct rp r;
	int ret;

	rp_open(&r, 0, false, false);
	cnt = 0;
	ret = fi_atomicvalid(r.a.ep, FI_UINT64, FI_SUM, &cnt);
	cr_assert_eq(ret, 0, "fi_atomicvalid(FI_UINT64, FI_SUM) = %d (%s)", ret, fi_strerror(-ret));
	cr_assert_geq(cnt, 1);
	c_sum = cnt;
	cnt = 0;
	ret = fi_atomicvalid(r.a.ep, FI_DOUBLE, FI_MIN, &cnt);
	cr_assert_eq(ret, 0, "fi_atomicvalid(FI_DOUBLE, FI_MIN) = %d (%s)", ret, fi_strerror(-ret));
	cr_assert_geq(cnt, 1);
	c_min = cnt;
	cnt = 0;
	ret = fi_fetch_atomicvalid(r.a.ep, FI_UINT64, FI_SUM, &cnt);
	cr_assert_eq(ret, 0, "fi_fetch_atomicvalid(FI_UINT64, FI_SUM) = %d", ret);
	cr_assert_geq(cnt, 1);
	f_sum = cnt;
	cnt = 0;
	ret = fi_fetch_atomicvalid(r.a.ep, FI_DOUBLE, FI_MIN, &cnt);
	cr_assert_eq(ret, 0, "fi_fetch_atomicvalid(FI_DOUBLE, FI_MIN) = %d", ret);
	cr_assert_geq(cnt, 1);
	f_min = cnt;
	cnt = 0;
	ret = fi_fetch_atomicvalid(r.a.ep, FI_UINT64, FI_ATOMIC_READ, &cnt);
	cr_assert_eq(ret, 0, "fi_fetch_atomicvalid(FI_UINT64, FI_ATOMIC_READ) = %d", ret);
	cr_assert_geq(cnt, 1);
	/* compare atomics are the FI_CSWAP* and FI_MSWAP operations (fi_atomic(3)) */
	cnt = 0;
	ret = fi_compare_atomicvalid(r.a.ep, FI_UINT64, FI_CSWAP, &cnt);
	cr_assert_eq(ret, 0, "fi_compare_atomicvalid(FI_UINT64, FI_CSWAP) = %d", ret);
	cr_assert_geq(cnt, 1);
	k_cswap = cnt;
	cnt = 0;
	ret = fi_compare_atomicvalid(r.a.ep, FI_UINT64, FI_MSWAP, &cnt);
	cr_assert_eq(ret, 0, "fi_compare_atomicvalid(FI_UINT64, FI_MSWAP) = %d", ret);
	cr_assert_geq(cnt, 1);
	cnt = 0;
	ret = fi_compare_atomicvalid(r.a.ep, FI_DOUBLE, FI_CSWAP_LE, &cnt);
	cr_assert_eq(ret, 0, "fi_compare_atomicvalid(FI_DOUBLE, FI_CSWAP_LE) = %d", ret);
	cr_assert_geq(cnt, 1);
	k_dcswap = cnt;

	/* not supported: bitwise OR on float, in every flavour */
	cnt = 0;
	ret = fi_atomicvalid(r.a.ep, FI_FLOAT, FI_BOR, &cnt);
	cr_assert_lt(ret, 0, "fi_atomicvalid(FI_FLOAT, FI_BOR) = %d, count %zu", ret, cnt);
	ret = fi_fetch_atomicvalid(r.a.ep, FI_FLOAT, FI_BOR, &cnt);
	cr_assert_lt(ret, 0, "fi_fetch_atomicvalid(FI_FLOAT, FI_BOR) = %d", ret);
	ret = fi_compare_atomicvalid(r.a.ep, FI_FLOAT, FI_BOR, &cnt);
	cr_assert_lt(ret, 0, "fi_compare_atomicvalid(FI_FLOAT, FI_BOR) = %d", ret);
	/* an operation of the wrong kind for the call */
	ret = fi_compare_atomicvalid(r.a.ep, FI_UINT64, FI_SUM, &cnt);
	cr_assert_lt(ret, 0, "fi_compare_atomicvalid(FI_UINT64, FI_SUM) = %d", ret);
	ret = fi_atomicvalid(r.a.ep, FI_UINT64, FI_CSWAP, &cnt);
	cr_assert_lt(ret, 0, "fi_atomicvalid(FI_UINT64, FI_CSWAP) = %d", ret);
	ret = fi_atomicvalid(r.a.ep, FI_UINT64, FI_ATOMIC_READ, &cnt);
	cr_assert_lt(ret, 0, "fi_atomicvalid(FI_UINT64, FI_ATOMIC_READ) = %d", ret);

	/* fi_query_atomic on the domain agrees */
	memset(&attr, 0, sizeof(attr));
	ret = fi_query_atomic(r.dom_a, FI_UINT64, FI_SUM, &attr, 0);
	cr_assert_eq(ret, 0, "fi_query_atomic(FI_UINT64, FI_SUM) = %d (%s)", ret, fi_strerror(-ret));
	cr_assert_eq(attr.count, c_sum);
	cr_assert_eq(attr.size, sizeof(uint64_t));
	memset(&attr, 0, sizeof(attr));
	ret = fi_query_atomic(r.dom_a, FI_DOUBLE, FI_MIN, &attr, 0);
	cr_assert_eq(ret, 0, "fi_query_atomic(FI_DOUBLE, FI_MIN) = %d", ret);
	cr_assert_eq(attr.count, c_min);
	cr_assert_eq(attr.size, sizeof(double));
	memset(&attr, 0, sizeof(attr));
	ret = fi_query_atomic(r.dom_a, FI_UINT64, FI_SUM, &attr, FI_FETCH_ATOMIC);
	cr_assert_eq(ret, 0, "fi_query_atomic(FI_FETCH_ATOMIC) = %d", ret);
	cr_assert_eq(attr.count, f_sum);
	memset(&attr, 0, sizeof(attr));
	ret = fi_query_atomic(r.dom_a, FI_DOUBLE, FI_MIN, &attr, FI_FETCH_ATOMIC);
	cr_assert_eq(ret, 0);
	cr_assert_eq(attr.count, f_min);
	memset(&attr, 0, sizeof(attr));
	ret = fi_query_atomic(r.dom_a, FI_UINT64, FI_CSWAP, &attr, FI_COMPARE_ATOMIC);
	cr_assert_eq(ret, 0, "fi_query_atomic(FI_COMPARE_ATOMIC) = %d", ret);
	cr_assert_eq(attr.count, k_cswap);
	cr_assert_eq(attr.size, sizeof(uint64_t));
	memset(&attr, 0, sizeof(attr));
	ret = fi_query_atomic(r.dom_a, FI_DOUBLE, FI_CSWAP_LE, &attr, FI_COMPARE_ATOMIC);
	cr_assert_eq(ret, 0);
	cr_assert_eq(attr.count, k_dcswap);
	memset(&attr, 0, sizeof(attr));
	ret = fi_query_atomic(r.dom_a, FI_UINT32, FI_BXOR, &attr, 0);
	cr_assert_eq(ret, 0, "fi_query_atomic(FI_UINT32, FI_BXOR) = %d", ret);
	cr_assert_eq(attr.size, sizeof(uint32_t));
	cr_assert_lt(fi_query_atomic(r.dom_a, FI_FLOAT, FI_BOR, &attr, 0), 0);
	cr_assert_lt(fi_query_atomic(r.dom_a, FI_FLOAT, FI_BOR, &attr, FI_FETCH_ATOMIC), 0);
	cr_assert_lt(fi_query_atomic(r.dom_a, FI_UINT64, FI_SUM, &attr, FI_COMPARE_ATOMIC), 0);
	cr_assert_lt(fi_query_atomic(r.dom_a, FI_UINT64, FI_CSWAP, &attr, 0), 0);
	/* "The FI_FETCH_ATOMIC and FI_COMPARE_ATOMIC bits may not both be set." */
	cr_assert_lt(fi_query_atomic(r.dom_a, FI_UINT64, FI_CSWAP, &attr,
				     FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC), 0);
	rp_close(&r);
}

/* Target words for the atomics: [0] and [GW + n ..] are guards. */
#define GW	2
static uint64_t tu[16];
static double td[16];
static uint32_t t32[16];

static void check_u64_guards(size_t n, const char *what)
{
	for (size_t i = 0; i < 16; i++) {
		if (i >= GW && i < GW + n)
			continue;
		cr_assert_eq(tu[i], 0x1111111111111111ULL * 0xa, "%s: word %zu touched (%#llx)",
			     what, i, (unsigned long long)tu[i]);
	}
}

static void reset_u64(void)
{
	for (size_t i = 0; i < 16; i++)
		tu[i] = 0x1111111111111111ULL * 0xa;
}

Test(fi_atomic, sum_uint64_count_4, .timeout = 30)
{
	uint64_t ops[4] = { 10, 20, 30, 2 }, init[4] = { 1, 2, 3, UINT64_MAX };
	struct region g;
	struct rp r;

	rp_open(&r, 0, false, false);
	g = rp_target(&r, tu, sizeof(tu), FI_REMOTE_READ | FI_REMOTE_WRITE);
	reset_u64();
	memcpy(&tu[GW], init, sizeof(init));
	cr_assert_eq(POST(&r, fi_atomic(r.a.ep, ops, 4, rp_ldesc(&r, ops, sizeof(ops)), r.a.peer,
					g.base + GW * 8, g.key, FI_UINT64, FI_SUM, ops)), 0);
	rp_comp(&r, r.a.tx_cq, ops, FI_ATOMIC | FI_WRITE, "fi_atomic FI_SUM");
	cr_assert_eq(tu[GW + 0], 11);
	cr_assert_eq(tu[GW + 1], 22);
	cr_assert_eq(tu[GW + 2], 33);
	cr_assert_eq(tu[GW + 3], 1, "UINT64_MAX + 2 wraps to 1: %#llx",
		     (unsigned long long)tu[GW + 3]);
	check_u64_guards(4, "fi_atomic FI_SUM");
	/* and again: applied once per call */
	cr_assert_eq(POST(&r, fi_atomic(r.a.ep, ops, 4, NULL, r.a.peer, g.base + GW * 8, g.key,
					FI_UINT64, FI_SUM, ops)), 0);
	rp_comp(&r, r.a.tx_cq, ops, FI_ATOMIC | FI_WRITE, "fi_atomic FI_SUM again");
	cr_assert_eq(tu[GW + 0], 21);
	cr_assert_eq(tu[GW + 1], 42);
	cr_assert_eq(tu[GW + 2], 63);
	cr_assert_eq(tu[GW + 3], 3);
	check_u64_guards(4, "fi_atomic FI_SUM again");
	rp_empty(&r, r.b.tx_cq, "no event at the target of an atomic");
	rp_close(&r);
}

Test(fi_fetch_atomic, sum_returns_old_values_min_on_double, .timeout = 30)
{
	uint64_t ops[4] = { 5, 6, 7, 8 }, res[6];
	double dops[3] = { 2.0, -3.5, 3.25 }, dres[3];
	struct region g, gd;
	struct rp r;

	rp_open(&r, 0, false, false);
	g = rp_target(&r, tu, sizeof(tu), FI_REMOTE_READ | FI_REMOTE_WRITE);
	gd = rp_target(&r, td, sizeof(td), FI_REMOTE_READ | FI_REMOTE_WRITE);
	reset_u64();
	for (int i = 0; i < 4; i++)
		tu[GW + i] = 100 * (i + 1);
	for (int i = 0; i < 6; i++)
		res[i] = 0xdeadULL;
	cr_assert_eq(POST(&r, fi_fetch_atomic(r.a.ep, ops, 4, NULL, &res[1], NULL, r.a.peer,
					      g.base + GW * 8, g.key, FI_UINT64, FI_SUM, res)), 0);
	rp_comp(&r, r.a.tx_cq, res, FI_ATOMIC | FI_READ, "fi_fetch_atomic FI_SUM");
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(res[1 + i], 100ULL * (i + 1), "old value %d: %llu", i,
			     (unsigned long long)res[1 + i]);
		cr_assert_eq(tu[GW + i], 100ULL * (i + 1) + ops[i], "new value %d", i);
	}
	cr_assert_eq(res[0], 0xdeadULL, "before the result buffer");
	cr_assert_eq(res[5], 0xdeadULL, "after the result buffer");
	check_u64_guards(4, "fi_fetch_atomic FI_SUM");

	/* FI_MIN on doubles */
	for (int i = 0; i < 16; i++)
		td[i] = 99.0;
	td[GW + 0] = 1.5;
	td[GW + 1] = -2.0;
	td[GW + 2] = 3.25;
	cr_assert_eq(POST(&r, fi_fetch_atomic(r.a.ep, dops, 3, NULL, dres, NULL, r.a.peer,
					      gd.base + GW * 8, gd.key, FI_DOUBLE, FI_MIN, dres)),
		     0);
	rp_comp(&r, r.a.tx_cq, dres, FI_ATOMIC | FI_READ, "fi_fetch_atomic FI_MIN double");
	cr_assert_eq(dres[0], 1.5);
	cr_assert_eq(dres[1], -2.0);
	cr_assert_eq(dres[2], 3.25);
	cr_assert_eq(td[GW + 0], 1.5, "min(1.5, 2.0)");
	cr_assert_eq(td[GW + 1], -3.5, "min(-2.0, -3.5)");
	cr_assert_eq(td[GW + 2], 3.25, "min(3.25, 3.25)");
	cr_assert_eq(td[GW - 1], 99.0);
	cr_assert_eq(td[GW + 3], 99.0);

	/* FI_MIN as a base atomic on doubles */
	dops[0] = -10.0;
	cr_assert_eq(POST(&r, fi_atomic(r.a.ep, dops, 1, NULL, r.a.peer, gd.base + GW * 8, gd.key,
					FI_DOUBLE, FI_MIN, dops)), 0);
	rp_comp(&r, r.a.tx_cq, dops, FI_ATOMIC | FI_WRITE, "fi_atomic FI_MIN double");
	cr_assert_eq(td[GW], -10.0);
	cr_assert_eq(td[GW + 1], -3.5);
	rp_close(&r);
}

Test(fi_compare_atomic, cswap_swaps_when_equal_only, .timeout = 30)
{
	uint64_t val = 0x1234, cmp, res;
	struct region g;
	struct rp r;

	rp_open(&r, 0, false, false);
	g = rp_target(&r, tu, sizeof(tu), FI_REMOTE_READ | FI_REMOTE_WRITE);
	reset_u64();
	tu[GW] = 777;
	/* equal: swapped, result the old value */
	cmp = 777;
	res = 0;
	cr_assert_eq(POST(&r, fi_compare_atomic(r.a.ep, &val, 1, NULL, &cmp, NULL, &res, NULL,
						r.a.peer, g.base + GW * 8, g.key, FI_UINT64,
						FI_CSWAP, &res)), 0);
	rp_comp(&r, r.a.tx_cq, &res, FI_ATOMIC | FI_READ, "fi_compare_atomic FI_CSWAP equal");
	cr_assert_eq(res, 777, "result %llu", (unsigned long long)res);
	cr_assert_eq(tu[GW], 0x1234, "swapped: %#llx", (unsigned long long)tu[GW]);
	/* different: not swapped, result still the old value */
	cmp = 777;
	val = 0x9999;
	res = 0;
	cr_assert_eq(POST(&r, fi_compare_atomic(r.a.ep, &val, 1, NULL, &cmp, NULL, &res, NULL,
						r.a.peer, g.base + GW * 8, g.key, FI_UINT64,
						FI_CSWAP, &cmp)), 0);
	rp_comp(&r, r.a.tx_cq, &cmp, FI_ATOMIC | FI_READ, "fi_compare_atomic FI_CSWAP different");
	cr_assert_eq(res, 0x1234, "result %#llx", (unsigned long long)res);
	cr_assert_eq(tu[GW], 0x1234, "not swapped: %#llx", (unsigned long long)tu[GW]);
	check_u64_guards(1, "FI_CSWAP");
	rp_close(&r);
}

Test(fi_fetch_atomic, atomic_read_leaves_target_alone, .timeout = 30)
{
	uint64_t res[3] = { 0 };
	struct region g;
	struct rp r;

	rp_open(&r, 0, false, false);
	g = rp_target(&r, tu, sizeof(tu), FI_REMOTE_READ | FI_REMOTE_WRITE);
	reset_u64();
	tu[GW] = 0x0102030405060708ULL;
	tu[GW + 1] = 42;
	tu[GW + 2] = UINT64_MAX;
	/* "the source buffer operand ... is ignored and may be NULL" */
	cr_assert_eq(POST(&r, fi_fetch_atomic(r.a.ep, NULL, 3, NULL, res, NULL, r.a.peer,
					      g.base + GW * 8, g.key, FI_UINT64, FI_ATOMIC_READ,
					      res)), 0);
	rp_comp(&r, r.a.tx_cq, res, FI_ATOMIC | FI_READ, "FI_ATOMIC_READ");
	cr_assert_eq(res[0], 0x0102030405060708ULL);
	cr_assert_eq(res[1], 42);
	cr_assert_eq(res[2], UINT64_MAX);
	cr_assert_eq(tu[GW], 0x0102030405060708ULL);
	cr_assert_eq(tu[GW + 1], 42);
	cr_assert_eq(tu[GW + 2], UINT64_MAX);
	check_u64_guards(3, "FI_ATOMIC_READ");
	rp_close(&r);
}

Test(fi_compare_atomic, mswap_swaps_masked_bits, .timeout = 30)
{
	uint64_t val = 0x123456789abcdef0ULL, mask = 0x00ff00ff00ff00ffULL, res = 0;
	const uint64_t old = 0xf0f0f0f0f0f0f0f0ULL;
	struct region g;
	struct rp r;

	rp_open(&r, 0, false, false);
	g = rp_target(&r, tu, sizeof(tu), FI_REMOTE_READ | FI_REMOTE_WRITE);
	reset_u64();
	tu[GW] = old;
	cr_assert_eq(POST(&r, fi_compare_atomic(r.a.ep, &val, 1, NULL, &mask, NULL, &res, NULL,
						r.a.peer, g.base + GW * 8, g.key, FI_UINT64,
						FI_MSWAP, &res)), 0);
	rp_comp(&r, r.a.tx_cq, &res, FI_ATOMIC | FI_READ, "FI_MSWAP");
	cr_assert_eq(res, old, "result %#llx", (unsigned long long)res);
	cr_assert_eq(tu[GW], (val & mask) | (old & ~mask), "target %#llx, want %#llx",
		     (unsigned long long)tu[GW], (unsigned long long)((val & mask) | (old & ~mask)));
	check_u64_guards(1, "FI_MSWAP");
	rp_close(&r);
}

Test(fi_inject_atomic, sum_no_completion, .timeout = 30)
{
	uint64_t ops[2] = { 3, 4 }, want[2];
	struct region g;
	struct rp r;

	rp_open(&r, 0, false, false);
	g = rp_target(&r, tu, sizeof(tu), FI_REMOTE_READ | FI_REMOTE_WRITE);
	reset_u64();
	tu[GW] = 1000;
	tu[GW + 1] = 2000;
	want[0] = 1003;
	want[1] = 2004;
	cr_assert_eq(POST(&r, fi_inject_atomic(r.a.ep, ops, 2, r.a.peer, g.base + GW * 8, g.key,
					       FI_UINT64, FI_SUM)), 0);
	ops[0] = ops[1] = 0xbad;	/* ours again at once */
	cr_assert(rp_until_equal(&r, &tu[GW], want, sizeof(want)), "target %llu %llu",
		  (unsigned long long)tu[GW], (unsigned long long)tu[GW + 1]);
	check_u64_guards(2, "fi_inject_atomic");
	rp_empty(&r, r.a.tx_cq, "no completion for an inject");
	/* still exactly once */
	cr_assert_eq(tu[GW], 1003);
	cr_assert_eq(tu[GW + 1], 2004);
	rp_close(&r);
}

Test(fi_atomicmsg, two_iocs_bxor_uint32, .timeout = 30)
{
	uint32_t a[2] = { 0x0000ffff, 0x00ff00ff }, b[1] = { 0xf0f0f0f0 };
	struct fi_ioc ioc[2] = { { a, 2 }, { b, 1 } };
	struct fi_rma_ioc rioc;
	void *descs[2] = { NULL, NULL };
	struct fi_msg_atomic msg;
	struct fi_context ctx;
	struct region g;
	struct rp r;

	rp_open(&r, 0, false, false);
	g = rp_target(&r, t32, sizeof(t32), FI_REMOTE_READ | FI_REMOTE_WRITE);
	for (int i = 0; i < 16; i++)
		t32[i] = 0x12345678;
	if (r.mr_local) {
		descs[0] = rp_ldesc(&r, a, sizeof(a));
		descs[1] = rp_ldesc(&r, b, sizeof(b));
	}
	rioc = (struct fi_rma_ioc){ g.base + 4 * 4, 3, g.key };
	msg = (struct fi_msg_atomic){ .msg_iov = ioc, .desc = descs, .iov_count = 2,
				      .addr = r.a.peer, .rma_iov = &rioc, .rma_iov_count = 1,
				      .datatype = FI_UINT32, .op = FI_BXOR, .context = &ctx };
	cr_assert_eq(POST(&r, fi_atomicmsg(r.a.ep, &msg, 0)), 0);
	rp_comp(&r, r.a.tx_cq, &ctx, FI_ATOMIC | FI_WRITE, "fi_atomicmsg FI_BXOR");
	cr_assert_eq(t32[4], 0x12345678u ^ 0x0000ffffu, "%#x", t32[4]);
	cr_assert_eq(t32[5], 0x12345678u ^ 0x00ff00ffu, "%#x", t32[5]);
	cr_assert_eq(t32[6], 0x12345678u ^ 0xf0f0f0f0u, "%#x", t32[6]);
	cr_assert_eq(t32[3], 0x12345678u);
	cr_assert_eq(t32[7], 0x12345678u);
	rp_close(&r);
}

/* fi_fetch_atomicv, fi_compare_atomicv, fi_atomicv and the msg forms: operands, compare values
 * and results split over iocs differently, one remote range. */
Test(fi_atomicv, vector_and_msg_forms, .timeout = 30)
{
	uint64_t o1[2] = { 1, 2 }, o2[1] = { 3 }, r1[1], r2[2];
	struct fi_ioc ops[2] = { { o1, 2 }, { o2, 1 } }, res[2] = { { r1, 1 }, { r2, 2 } };
	uint64_t c1[1], c2[2], v[3] = { 70, 80, 90 };
	struct fi_ioc cmps[2] = { { c1, 1 }, { c2, 2 } }, vals[1] = { { v, 3 } };
	int32_t i_ops[2] = { 111, 222 }, i_cmp[2] = { -5, 10 }, i_res[2] = { 0, 0 };
	struct fi_ioc iioc = { i_ops, 2 }, icmp = { i_cmp, 2 }, ires = { i_res, 2 };
	uint64_t w = 0xabcdef, wres = 0;
	struct fi_ioc wioc = { &w, 1 }, wres_ioc = { &wres, 1 };
	struct fi_rma_ioc rioc;
	struct fi_msg_atomic msg;
	struct fi_context ctx[5];
	struct region g, g32;
	struct rp r;

	rp_open(&r, 0, false, false);
	g = rp_target(&r, tu, sizeof(tu), FI_REMOTE_READ | FI_REMOTE_WRITE);
	g32 = rp_target(&r, t32, sizeof(t32), FI_REMOTE_READ | FI_REMOTE_WRITE);
	reset_u64();
	tu[GW] = 10;
	tu[GW + 1] = 20;
	tu[GW + 2] = 30;
	/* fi_atomicv: 2 + 1 operands */
	cr_assert_eq(POST(&r, fi_atomicv(r.a.ep, ops, NULL, 2, r.a.peer, g.base + GW * 8, g.key,
					 FI_UINT64, FI_SUM, &ctx[0])), 0);
	rp_comp(&r, r.a.tx_cq, &ctx[0], FI_ATOMIC | FI_WRITE, "fi_atomicv");
	cr_assert_eq(tu[GW], 11);
	cr_assert_eq(tu[GW + 1], 22);
	cr_assert_eq(tu[GW + 2], 33);
	/* fi_fetch_atomicv: operands 2 + 1, results 1 + 2 */
	cr_assert_eq(POST(&r, fi_fetch_atomicv(r.a.ep, ops, NULL, 2, res, NULL, 2, r.a.peer,
					       g.base + GW * 8, g.key, FI_UINT64, FI_SUM, &ctx[1])),
		     0);
	rp_comp(&r, r.a.tx_cq, &ctx[1], FI_ATOMIC | FI_READ, "fi_fetch_atomicv");
	cr_assert_eq(r1[0], 11);
	cr_assert_eq(r2[0], 22);
	cr_assert_eq(r2[1], 33);
	cr_assert_eq(tu[GW], 12);
	cr_assert_eq(tu[GW + 1], 24);
	cr_assert_eq(tu[GW + 2], 36);
	/* fi_compare_atomicv FI_CSWAP: values 3, compare 1 + 2 (equal, different, equal) */
	c1[0] = 12;
	c2[0] = 999;
	c2[1] = 36;
	cr_assert_eq(POST(&r, fi_compare_atomicv(r.a.ep, vals, NULL, 1, cmps, NULL, 2, res, NULL, 2,
						 r.a.peer, g.base + GW * 8, g.key, FI_UINT64,
						 FI_CSWAP, &ctx[2])), 0);
	rp_comp(&r, r.a.tx_cq, &ctx[2], FI_ATOMIC | FI_READ, "fi_compare_atomicv");
	cr_assert_eq(r1[0], 12);
	cr_assert_eq(r2[0], 24);
	cr_assert_eq(r2[1], 36);
	cr_assert_eq(tu[GW], 70, "equal: swapped");
	cr_assert_eq(tu[GW + 1], 24, "different: kept");
	cr_assert_eq(tu[GW + 2], 90, "equal: swapped");
	check_u64_guards(3, "vector atomics");
	/* fi_fetch_atomicmsg FI_ATOMIC_WRITE: the old value back, the new one in */
	rioc = (struct fi_rma_ioc){ g.base + GW * 8, 1, g.key };
	msg = (struct fi_msg_atomic){ .msg_iov = &wioc, .iov_count = 1, .addr = r.a.peer,
				      .rma_iov = &rioc, .rma_iov_count = 1, .datatype = FI_UINT64,
				      .op = FI_ATOMIC_WRITE, .context = &ctx[3] };
	cr_assert_eq(POST(&r, fi_fetch_atomicmsg(r.a.ep, &msg, &wres_ioc, NULL, 1, 0)), 0);
	rp_comp(&r, r.a.tx_cq, &ctx[3], FI_ATOMIC | FI_READ, "fi_fetch_atomicmsg FI_ATOMIC_WRITE");
	cr_assert_eq(wres, 70);
	cr_assert_eq(tu[GW], 0xabcdef);
	/* fi_compare_atomicmsg FI_CSWAP_LT on int32: "if (compare[i] < addr[i]) addr[i] = buf[i]" */
	for (int i = 0; i < 16; i++)
		t32[i] = 3;
	rioc = (struct fi_rma_ioc){ g32.base + 4 * 4, 2, g32.key };
	msg = (struct fi_msg_atomic){ .msg_iov = &iioc, .iov_count = 1, .addr = r.a.peer,
				      .rma_iov = &rioc, .rma_iov_count = 1, .datatype = FI_INT32,
				      .op = FI_CSWAP_LT, .context = &ctx[4] };
	cr_assert_eq(POST(&r, fi_compare_atomicmsg(r.a.ep, &msg, &icmp, NULL, 1, &ires, NULL, 1, 0)),
		     0);
	rp_comp(&r, r.a.tx_cq, &ctx[4], FI_ATOMIC | FI_READ, "fi_compare_atomicmsg FI_CSWAP_LT");
	cr_assert_eq(i_res[0], 3);
	cr_assert_eq(i_res[1], 3);
	cr_assert_eq((int32_t)t32[4], 111, "-5 < 3: swapped (%d)", (int32_t)t32[4]);
	cr_assert_eq((int32_t)t32[5], 3, "10 < 3 is false: kept (%d)", (int32_t)t32[5]);
	cr_assert_eq(t32[3], 3u);
	cr_assert_eq(t32[6], 3u);
	rp_close(&r);
}

/*
 * Streams of large writes and reads, posted back to back: their datagrams
 * (64 KiB on loopback) are received straight into the target region and the
 * read buffers (braid_rd_place(), after a message's first packet), every
 * round over data the round before left there. Every byte, and the bytes
 * beside each range, must be right.
 */
Test(fi_write, large_streams_land_byte_exact, .timeout = 60)
{
	enum { N = 4, SZ = 1 << 20, ROUNDS = 4 };
	static uint8_t region[N * SZ + 2 * GUARD], wsrc[N][SZ], rdst[N][SZ + 2 * GUARD];
	static struct fi_context ctx[2 * N];
	struct region g;
	struct rp r;

	rp_open(&r, 0, false, false);
	g = rp_target(&r, region, sizeof(region), FI_REMOTE_READ | FI_REMOTE_WRITE);
	memset(region, PAT_T, sizeof(region));
	for (int round = 0; round < ROUNDS; round++) {
		char what[64];
		int i;

		for (i = 0; i < N; i++) {
			fill(wsrc[i], SZ, (unsigned)(round * N + i + 100));
			cr_assert_eq(POST(&r, fi_write(r.a.ep, wsrc[i], SZ, NULL, r.a.peer,
						       g.base + GUARD + (uint64_t)i * SZ, g.key,
						       &ctx[i])), 0, "round %d write %d", round, i);
		}
		/* completions in any order (comp_order FI_ORDER_NONE): a write whose
		 * packet was resent may complete after the one posted behind it */
		snprintf(what, sizeof(what), "round %d write", round);
		rp_comps_any(&r, ctx, N, FI_RMA | FI_WRITE, what);
		check_const(region, GUARD, PAT_T, "before the region's writes");
		check_const(region + GUARD + (size_t)N * SZ, GUARD, PAT_T, "after them");
		for (i = 0; i < N; i++)
			check_bytes(region + GUARD + (size_t)i * SZ, wsrc[i], SZ, "a large write");
		/* and back: each read lands at its offset in its buffer, nothing beside it */
		memset(rdst, PAT_L, sizeof(rdst));
		for (i = 0; i < N; i++)
			cr_assert_eq(POST(&r, fi_read(r.a.ep, rdst[i] + GUARD, SZ, NULL, r.a.peer,
						      g.base + GUARD + (uint64_t)i * SZ, g.key,
						      &ctx[N + i])), 0, "round %d read %d", round, i);
		snprintf(what, sizeof(what), "round %d read", round);
		rp_comps_any(&r, ctx + N, N, FI_RMA | FI_READ, what);
		for (i = 0; i < N; i++) {
			check_const(rdst[i], GUARD, PAT_L, "before a read's buffer");
			check_bytes(rdst[i] + GUARD, wsrc[i], SZ, "a large read");
			check_const(rdst[i] + GUARD + SZ, GUARD, PAT_L, "after a read's buffer");
		}
	}
	rp_empty(&r, r.b.tx_cq, "no event at the target");
	rp_close(&r);
}

/* Many writes and reads in flight at once: each completes exactly once, the data right;
 * then the other direction (b initiates, a is the target). */
Test(fi_write, many_in_flight_each_completes_once, .timeout = 30)
{
	enum { N = 256, SZ = 200 };
	static struct fi_context ctx[2 * N];
	static uint8_t wsrc[N][SZ], rdst[N][SZ];
	static uint8_t seen[2 * N];
	struct fi_cq_data_entry e[16];
	struct fi_cq_err_entry err;
	struct region g;
	struct rp r;
	long deadline;
	int got = 0, i;
	ssize_t n;

	rp_open(&r, 0, false, false);
	/* writes go to tgt[0 .. N*SZ), reads come from tgt[N*SZ .. 2*N*SZ) */
	g = rp_target(&r, tgt, 2 * N * SZ, FI_REMOTE_READ | FI_REMOTE_WRITE);
	memset(tgt, PAT_T, 2 * N * SZ);
	fill(tgt + N * SZ, N * SZ, 40);
	memset(rdst, PAT_L, sizeof(rdst));
	for (i = 0; i < N; i++) {
		fill(wsrc[i], SZ, (unsigned)i);
		cr_assert_eq(POST(&r, fi_write(r.a.ep, wsrc[i], SZ, NULL, r.a.peer,
					       g.base + (uint64_t)i * SZ, g.key, &ctx[i])), 0,
			     "write %d", i);
		cr_assert_eq(POST(&r, fi_read(r.a.ep, rdst[i], SZ, NULL, r.a.peer,
					      g.base + (uint64_t)(N + i) * SZ, g.key, &ctx[N + i])),
			     0, "read %d", i);
	}
	deadline = pt_now_ms() + WAIT_MS;
	while (got < 2 * N && pt_now_ms() < deadline) {
		(void)fi_cq_read(r.b.tx_cq, NULL, 0);
		n = fi_cq_read(r.a.tx_cq, e, 16);
		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			(void)fi_cq_readerr(r.a.tx_cq, &err, 0);
			cr_assert_fail("error completion: %d (%s)", err.err, fi_strerror(err.err));
		}
		for (ssize_t k = 0; k < n; k++) {
			ptrdiff_t idx = (struct fi_context *)e[k].op_context - ctx;

			cr_assert(idx >= 0 && idx < 2 * N, "unknown op_context %p", e[k].op_context);
			cr_assert_eq(seen[idx], 0, "operation %td completed twice", idx);
			seen[idx] = 1;
			cr_assert_eq(e[k].flags & OP_MASK, idx < N ? FI_RMA | FI_WRITE : FI_RMA | FI_READ,
				     "operation %td: flags %#llx", idx, (unsigned long long)e[k].flags);
			got++;
		}
	}
	cr_assert_eq(got, 2 * N, "%d of %d completions", got, 2 * N);
	for (i = 0; i < N; i++) {
		check_bytes(tgt + (size_t)i * SZ, wsrc[i], SZ, "a write's data");
		check_bytes(rdst[i], tgt + (size_t)(N + i) * SZ, SZ, "a read's data");
	}
	rp_empty(&r, r.a.tx_cq, "nothing more");
	rp_empty(&r, r.b.tx_cq, "no event at the target");

	/* the other way round: b writes into and reads from a region of a's domain */
	{
		static uint8_t at[4096];
		struct fid_mr *mr = rp_reg(&r, r.dom_a, at, sizeof(at),
					   FI_REMOTE_READ | FI_REMOTE_WRITE);
		uint64_t key = fi_mr_key(mr), base = (uint64_t)(uintptr_t)at;
		uint8_t back[100];

		memset(at, PAT_T, sizeof(at));
		cr_assert_eq(POST(&r, fi_write(r.b.ep, wsrc[7], 100, NULL, r.b.peer, base + 1000, key,
					       &ctx[0])), 0);
		rp_comp(&r, r.b.tx_cq, &ctx[0], FI_RMA | FI_WRITE, "b's fi_write");
		check_region(at, sizeof(at), 1000, wsrc[7], 100, "b's fi_write");
		cr_assert_eq(POST(&r, fi_read(r.b.ep, back, 100, NULL, r.b.peer, base + 1000, key,
					      &ctx[1])), 0);
		rp_comp(&r, r.b.tx_cq, &ctx[1], FI_RMA | FI_READ, "b's fi_read");
		check_bytes(back, wsrc[7], 100, "b's fi_read");
		rp_empty(&r, r.a.tx_cq, "no event at a");
	}
	rp_close(&r);
}

/* fi_mr(3): "accesses to a closed MR from a remote peer will result in an error at the peer" */
Test(fi_write, closed_region_refused, .timeout = 30)
{
	static uint8_t region[4096];
	uint8_t local[16];
	struct fi_context ctx[2];
	struct fid_mr *mr = NULL;
	uint64_t key, base = (uint64_t)(uintptr_t)region;
	struct rp r;

	rp_open(&r, 0, false, false);
	cr_assert_eq(fi_mr_reg(r.dom_b, region, sizeof(region), FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
			       0, 0, &mr, NULL), 0);
	key = fi_mr_key(mr);
	memset(region, PAT_T, sizeof(region));
	memset(local, 0x33, sizeof(local));
	/* it works while registered */
	cr_assert_eq(POST(&r, fi_write(r.a.ep, local, 16, NULL, r.a.peer, base, key, &ctx[0])), 0);
	rp_comp(&r, r.a.tx_cq, &ctx[0], FI_RMA | FI_WRITE, "fi_write before the close");
	check_const(region, 16, 0x33, "the write before the close");
	memset(region, PAT_T, sizeof(region));
	cr_assert_eq(fi_close(&mr->fid), 0);
	cr_assert_eq(POST(&r, fi_write(r.a.ep, local, 16, NULL, r.a.peer, base, key, &ctx[1])), 0);
	rp_comp_err(&r, r.a.tx_cq, &ctx[1], FI_EACCES, "fi_write after the close");
	check_const(region, sizeof(region), PAT_T, "the closed region");
	rp_close(&r);
}

/* ======================================================================== refusals */

enum refusal { WRONG_KEY, PAST_END, BEFORE_START, WRITE_READ_ONLY, READ_WRITE_ONLY,
	       ATOMIC_READ_ONLY, FETCH_WRITE_ONLY };

/* An access the target refuses: FI_EACCES at the initiator, nothing touched at
 * the target, no event there; the endpoint carries on. */
static void refused(enum refusal how)
{
	/* the region, with memory of ours on both sides a wrong range would hit */
	static struct {
		uint8_t pre[GUARD], region[8192], post[GUARD];
	} t;
	uint8_t local[64], back[64];
	uint64_t ops[2] = { 1, 1 }, res[2];
	struct fi_context ctx;
	struct region g;
	struct rp r;
	uint64_t access = how == WRITE_READ_ONLY || how == ATOMIC_READ_ONLY ? FI_REMOTE_READ :
			  how == READ_WRITE_ONLY || how == FETCH_WRITE_ONLY ? FI_REMOTE_WRITE :
			  FI_REMOTE_READ | FI_REMOTE_WRITE;
	ssize_t ret;

	rp_open(&r, 0, false, false);
	g = rp_target(&r, t.region, sizeof(t.region), access);
	memset(&t, PAT_T, sizeof(t));
	memset(local, 0x22, sizeof(local));
	switch (how) {
	case WRONG_KEY:
		ret = fi_write(r.a.ep, local, 8, NULL, r.a.peer, g.base, g.key ^ 0x5a5a5a5a5aULL, &ctx);
		break;
	case PAST_END:
		ret = fi_write(r.a.ep, local, 64, NULL, r.a.peer, g.base + sizeof(t.region) - 32,
			       g.key, &ctx);
		break;
	case BEFORE_START:
		ret = fi_write(r.a.ep, local, 16, NULL, r.a.peer, g.base - 8, g.key, &ctx);
		break;
	case WRITE_READ_ONLY:
		ret = fi_write(r.a.ep, local, 8, NULL, r.a.peer, g.base, g.key, &ctx);
		break;
	case READ_WRITE_ONLY:
		ret = fi_read(r.a.ep, local, 8, NULL, r.a.peer, g.base, g.key, &ctx);
		break;
	case ATOMIC_READ_ONLY:
		ret = fi_atomic(r.a.ep, ops, 2, NULL, r.a.peer, g.base, g.key, FI_UINT64, FI_SUM,
				&ctx);
		break;
	default:	/* FETCH_WRITE_ONLY: a fetching atomic needs remote read access */
		ret = fi_fetch_atomic(r.a.ep, ops, 2, NULL, res, NULL, r.a.peer, g.base, g.key,
				      FI_UINT64, FI_SUM, &ctx);
		break;
	}
	cr_assert_eq(ret, 0, "posted: %zd (%s)", ret, fi_strerror((int)-ret));
	rp_comp_err(&r, r.a.tx_cq, &ctx, FI_EACCES, "the refused access");
	check_const(t.pre, sizeof(t.pre), PAT_T, "the memory before the region");
	check_const(t.region, sizeof(t.region), PAT_T, "the target region");
	check_const(t.post, sizeof(t.post), PAT_T, "the memory after the region");
	rp_empty(&r, r.b.tx_cq, "no event at the target");
	rp_empty(&r, r.a.tx_cq, "one completion only");

	/* the endpoint goes on: an allowed access works */
	if (access & FI_REMOTE_WRITE) {
		cr_assert_eq(POST(&r, fi_write(r.a.ep, local, 8, NULL, r.a.peer, g.base + 8, g.key,
					       local)), 0);
		rp_comp(&r, r.a.tx_cq, local, FI_RMA | FI_WRITE, "a write after the refusal");
		check_const(t.region + 8, 8, 0x22, "the write after the refusal");
	}
	if (access & FI_REMOTE_READ) {
		memset(back, 0, sizeof(back));
		cr_assert_eq(POST(&r, fi_read(r.a.ep, back, 32, NULL, r.a.peer, g.base + 100, g.key,
					      back)), 0);
		rp_comp(&r, r.a.tx_cq, back, FI_RMA | FI_READ, "a read after the refusal");
		check_const(back, 32, PAT_T, "the read after the refusal");
	}
	rp_close(&r);
}

Test(fi_write, wrong_key_refused, .timeout = 30)
{
	refused(WRONG_KEY);
}

Test(fi_write, range_past_the_end_refused, .timeout = 30)
{
	refused(PAST_END);
}

Test(fi_write, range_before_the_start_refused, .timeout = 30)
{
	refused(BEFORE_START);
}

Test(fi_write, into_read_only_region_refused, .timeout = 30)
{
	refused(WRITE_READ_ONLY);
}

Test(fi_read, from_write_only_region_refused, .timeout = 30)
{
	refused(READ_WRITE_ONLY);
}

Test(fi_atomic, into_read_only_region_refused, .timeout = 30)
{
	refused(ATOMIC_READ_ONLY);
}

Test(fi_fetch_atomic, on_write_only_region_refused, .timeout = 30)
{
	refused(FETCH_WRITE_ONLY);
}

/* The region's exact bounds: the first and last bytes are accessible, one byte beyond is not. */
Test(fi_write, region_bounds_exact, .timeout = 30)
{
	static struct {
		uint8_t pre[GUARD], region[4096], post[GUARD];
	} t;
	uint8_t local[16], back[16];
	struct fi_context ctx[6];
	struct region g;
	struct rp r;

	rp_open(&r, 0, false, false);
	g = rp_target(&r, t.region, sizeof(t.region), FI_REMOTE_READ | FI_REMOTE_WRITE);
	memset(&t, PAT_T, sizeof(t));
	memset(local, 0x66, sizeof(local));
	/* the last 8 bytes, and the first 8: fine */
	cr_assert_eq(POST(&r, fi_write(r.a.ep, local, 8, NULL, r.a.peer, g.base + sizeof(t.region) - 8,
				       g.key, &ctx[0])), 0);
	rp_comp(&r, r.a.tx_cq, &ctx[0], FI_RMA | FI_WRITE, "the last 8 bytes");
	cr_assert_eq(POST(&r, fi_write(r.a.ep, local, 8, NULL, r.a.peer, g.base, g.key, &ctx[1])), 0);
	rp_comp(&r, r.a.tx_cq, &ctx[1], FI_RMA | FI_WRITE, "the first 8 bytes");
	check_const(t.region, 8, 0x66, "the first 8 bytes");
	check_const(t.region + 8, sizeof(t.region) - 16, PAT_T, "the middle");
	check_const(t.region + sizeof(t.region) - 8, 8, 0x66, "the last 8 bytes");
	/* 9 bytes from 8 before the end: one byte too many */
	memset(&t, PAT_T, sizeof(t));
	cr_assert_eq(POST(&r, fi_write(r.a.ep, local, 9, NULL, r.a.peer, g.base + sizeof(t.region) - 8,
				       g.key, &ctx[2])), 0);
	rp_comp_err(&r, r.a.tx_cq, &ctx[2], FI_EACCES, "one byte past the end");
	/* 1 byte at the end itself */
	cr_assert_eq(POST(&r, fi_write(r.a.ep, local, 1, NULL, r.a.peer, g.base + sizeof(t.region),
				       g.key, &ctx[3])), 0);
	rp_comp_err(&r, r.a.tx_cq, &ctx[3], FI_EACCES, "the byte after the region");
	/* reads likewise */
	cr_assert_eq(POST(&r, fi_read(r.a.ep, back, 9, NULL, r.a.peer, g.base + sizeof(t.region) - 8,
				      g.key, &ctx[4])), 0);
	rp_comp_err(&r, r.a.tx_cq, &ctx[4], FI_EACCES, "a read one byte past the end");
	cr_assert_eq(POST(&r, fi_read(r.a.ep, back, 8, NULL, r.a.peer, g.base + sizeof(t.region) - 8,
				      g.key, &ctx[5])), 0);
	rp_comp(&r, r.a.tx_cq, &ctx[5], FI_RMA | FI_READ, "a read of the last 8 bytes");
	check_const(back, 8, PAT_T, "the read of the last 8 bytes");
	check_const((uint8_t *)&t, sizeof(t), PAT_T, "the region and its surroundings");
	rp_close(&r);
}

/* fi_cq(3): "error completions are generated for all operations, including those for which a
 * completion was not requested": a refused inject reports FI_EACCES on the CQ. */
Test(fi_inject_write, refused_inject_still_reports_an_error, .timeout = 30)
{
	uint8_t local[16];
	uint64_t one = 1, v;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	struct region g;
	struct rp r;
	ssize_t ret;

	rp_open(&r, 0, false, true);
	g = rp_target(&r, tgt, 4096, FI_REMOTE_READ);
	memset(tgt, PAT_T, 4096);
	memset(local, 0x44, sizeof(local));
	/* a write into a read-only region */
	cr_assert_eq(POST(&r, fi_inject_write(r.a.ep, local, 16, r.a.peer, g.base, g.key)), 0);
	ret = rp_wait(&r, r.a.tx_cq, &e, &err);
	cr_assert_eq(ret, -FI_EAVAIL, "refused fi_inject_write: fi_cq_read = %zd, want an error entry",
		     ret);
	cr_assert_eq(err.err, FI_EACCES, "err %d (%s)", err.err, fi_strerror(err.err));
	v = rp_cntr_until(&r, r.wr, true, 1);
	cr_assert_eq(v, 1, "FI_WRITE counter's error value %llu", (unsigned long long)v);
	/* an atomic into the read-only region */
	cr_assert_eq(POST(&r, fi_inject_atomic(r.a.ep, &one, 1, r.a.peer, g.base, g.key, FI_UINT64,
					       FI_SUM)), 0);
	ret = rp_wait(&r, r.a.tx_cq, &e, &err);
	cr_assert_eq(ret, -FI_EAVAIL, "refused fi_inject_atomic: fi_cq_read = %zd", ret);
	cr_assert_eq(err.err, FI_EACCES, "err %d (%s)", err.err, fi_strerror(err.err));
	v = rp_cntr_until(&r, r.wr, true, 2);
	cr_assert_eq(v, 2, "FI_WRITE counter's error value %llu", (unsigned long long)v);
	cr_assert_eq(fi_cntr_read(r.wr), 0);
	check_const(tgt, 4096, PAT_T, "the read-only region");
	rp_empty(&r, r.a.tx_cq, "one error entry each");
	rp_close(&r);
}

/* A 1 MiB write running past the end of the region: refused, the target untouched. */
Test(fi_write, large_write_past_the_end_refused, .timeout = 30)
{
	struct fi_context ctx;
	struct region g;
	struct rp r;

	rp_open(&r, 0, false, false);
	g = rp_target(&r, tgt, MIB, FI_REMOTE_WRITE | FI_REMOTE_READ);
	memset(tgt, PAT_T, sizeof(tgt));
	fill(src, MIB, 30);
	cr_assert_eq(POST(&r, fi_write(r.a.ep, src, MIB, NULL, r.a.peer, g.base + 1, g.key, &ctx)),
		     0);
	rp_comp_err(&r, r.a.tx_cq, &ctx, FI_EACCES, "1 MiB at +1 of a 1 MiB region");
	check_const(tgt, sizeof(tgt), PAT_T, "the target region");
	rp_close(&r);
}

/* ======================================================================== bad arguments */

Test(fi_write, bad_arguments_fail_at_the_call, .timeout = 30)
{
	static uint8_t local[8192];
	struct iovec iov[65];
	void *descs[65] = { NULL };
	struct fi_rma_iov rma[65];
	struct fi_msg_rma msg;
	size_t lim, rlim, inject;
	struct region g;
	struct rp r;
	ssize_t ret;

	rp_open(&r, 0, false, false);
	lim = r.info->tx_attr->iov_limit;
	rlim = r.info->tx_attr->rma_iov_limit;
	inject = r.info->tx_attr->inject_size;
	cr_assert_lt(lim, 64, "iov_limit %zu: test arrays too small", lim);
	cr_assert_lt(rlim, 64, "rma_iov_limit %zu: test arrays too small", rlim);
	g = rp_target(&r, tgt, sizeof(tgt), FI_REMOTE_WRITE | FI_REMOTE_READ);
	memset(tgt, PAT_T, sizeof(tgt));
	for (size_t i = 0; i < 65; i++) {
		iov[i] = (struct iovec){ local + i, 1 };
		rma[i] = (struct fi_rma_iov){ g.base + i, 1, g.key };
	}
	if (r.mr_local) {
		void *d = rp_ldesc(&r, local, sizeof(local));

		for (size_t i = 0; i < 65; i++)
			descs[i] = d;
	}

	ret = fi_writev(r.a.ep, iov, descs, lim + 1, r.a.peer, g.base, g.key, NULL);
	cr_assert_eq(ret, -FI_EINVAL, "fi_writev with iov_limit + 1 = %zu iovecs: %zd", lim + 1, ret);
	ret = fi_readv(r.a.ep, iov, descs, lim + 1, r.a.peer, g.base, g.key, NULL);
	cr_assert_eq(ret, -FI_EINVAL, "fi_readv with iov_limit + 1 iovecs: %zd", ret);
	msg = (struct fi_msg_rma){ .msg_iov = iov, .desc = descs, .iov_count = lim + 1,
				   .addr = r.a.peer, .rma_iov = rma, .rma_iov_count = 1 };
	rma[0].len = lim + 1;
	ret = fi_writemsg(r.a.ep, &msg, 0);
	cr_assert_eq(ret, -FI_EINVAL, "fi_writemsg with iov_limit + 1 iovecs: %zd", ret);
	ret = fi_readmsg(r.a.ep, &msg, 0);
	cr_assert_eq(ret, -FI_EINVAL, "fi_readmsg with iov_limit + 1 iovecs: %zd", ret);
	rma[0].len = 1;
	/* more rma_iovs than rma_iov_limit */
	msg.iov_count = rlim + 1;
	msg.rma_iov_count = rlim + 1;
	ret = fi_writemsg(r.a.ep, &msg, 0);
	cr_assert(ret == -FI_EINVAL || ret == -FI_EMSGSIZE,
		  "fi_writemsg with rma_iov_limit + 1 = %zu rma_iovs: %zd", rlim + 1, ret);
	ret = fi_readmsg(r.a.ep, &msg, 0);
	cr_assert(ret == -FI_EINVAL || ret == -FI_EMSGSIZE,
		  "fi_readmsg with rma_iov_limit + 1 rma_iovs: %zd", ret);
	/* FI_REMOTE_CQ_DATA applies to writes only (fi_rma(3)) */
	msg.iov_count = 1;
	msg.rma_iov_count = 1;
	msg.data = 5;
	ret = fi_readmsg(r.a.ep, &msg, FI_REMOTE_CQ_DATA);
	cr_assert(ret == -FI_EBADFLAGS || ret == -FI_EINVAL,
		  "fi_readmsg with FI_REMOTE_CQ_DATA = %zd (%s)", ret, fi_strerror((int)-ret));
	/* an inject larger than inject_size (the region is large enough for it) */
	cr_assert_lt(inject, MIB, "inject_size %zu", inject);
	ret = fi_inject_write(r.a.ep, src, inject + 1, r.a.peer, g.base, g.key);
	cr_assert_eq(ret, -FI_EMSGSIZE, "fi_inject_write of inject_size + 1 = %zu: %zd", inject + 1,
		     ret);
	ret = fi_inject_writedata(r.a.ep, src, inject + 1, 1, r.a.peer, g.base, g.key);
	cr_assert_eq(ret, -FI_EMSGSIZE, "fi_inject_writedata of inject_size + 1: %zd", ret);
	iov[0] = (struct iovec){ src, inject + 1 };
	rma[0].len = inject + 1;
	msg.data = 0;
	ret = fi_writemsg(r.a.ep, &msg, FI_INJECT);
	cr_assert_eq(ret, -FI_EMSGSIZE, "fi_writemsg FI_INJECT of inject_size + 1: %zd", ret);
	/* none of these did anything */
	rp_empty(&r, r.a.tx_cq, "no completion for a failed call");
	rp_empty(&r, r.b.tx_cq, "nothing at the target");
	check_const(tgt, sizeof(tgt), PAT_T, "the target region");
	rp_close(&r);
}

Test(fi_atomic, bad_arguments_fail_at_the_call, .timeout = 30)
{
	float f[4] = { 1, 2, 3, 4 }, fres[4];
	uint64_t u[2] = { 1, 2 }, ures[2], *big;
	size_t max = 0, inject;
	struct region g;
	struct rp r;
	ssize_t ret;

	rp_open(&r, 0, false, false);
	inject = r.info->tx_attr->inject_size;
	g = rp_target(&r, tu, sizeof(tu), FI_REMOTE_READ | FI_REMOTE_WRITE);
	reset_u64();
	/* an operation the provider does not support (fi_atomic(3) ERRORS) */
	ret = fi_atomic(r.a.ep, f, 1, NULL, r.a.peer, g.base, g.key, FI_FLOAT, FI_BOR, NULL);
	cr_assert_eq(ret, -FI_EOPNOTSUPP, "fi_atomic(FI_FLOAT, FI_BOR) = %zd", ret);
	ret = fi_fetch_atomic(r.a.ep, f, 1, NULL, fres, NULL, r.a.peer, g.base, g.key, FI_FLOAT,
			      FI_BOR, NULL);
	cr_assert_eq(ret, -FI_EOPNOTSUPP, "fi_fetch_atomic(FI_FLOAT, FI_BOR) = %zd", ret);
	ret = fi_inject_atomic(r.a.ep, f, 1, r.a.peer, g.base, g.key, FI_FLOAT, FI_BOR);
	cr_assert_eq(ret, -FI_EOPNOTSUPP, "fi_inject_atomic(FI_FLOAT, FI_BOR) = %zd", ret);
	/* operations of the wrong kind for the call */
	ret = fi_atomic(r.a.ep, u, 1, NULL, r.a.peer, g.base, g.key, FI_UINT64, FI_CSWAP, NULL);
	cr_assert(ret == -FI_EOPNOTSUPP || ret == -FI_EINVAL, "fi_atomic(FI_CSWAP) = %zd", ret);
	ret = fi_atomic(r.a.ep, u, 1, NULL, r.a.peer, g.base, g.key, FI_UINT64, FI_ATOMIC_READ,
			NULL);
	cr_assert(ret == -FI_EOPNOTSUPP || ret == -FI_EINVAL, "fi_atomic(FI_ATOMIC_READ) = %zd",
		  ret);
	ret = fi_fetch_atomic(r.a.ep, u, 1, NULL, ures, NULL, r.a.peer, g.base, g.key, FI_UINT64,
			      FI_CSWAP, NULL);
	cr_assert(ret == -FI_EOPNOTSUPP || ret == -FI_EINVAL, "fi_fetch_atomic(FI_CSWAP) = %zd",
		  ret);
	ret = fi_compare_atomic(r.a.ep, u, 1, NULL, &u[1], NULL, ures, NULL, r.a.peer, g.base, g.key,
				FI_UINT64, FI_SUM, NULL);
	cr_assert(ret == -FI_EOPNOTSUPP || ret == -FI_EINVAL, "fi_compare_atomic(FI_SUM) = %zd",
		  ret);
	/* more elements than fi_atomicvalid allows: -FI_EMSGSIZE */
	cr_assert_eq(fi_atomicvalid(r.a.ep, FI_UINT64, FI_SUM, &max), 0);
	cr_assert_lt(max, 1u << 24, "count %zu", max);
	big = calloc((max > inject / 8 ? max : inject / 8) + 1, sizeof(*big));
	cr_assert_not_null(big);
	ret = fi_atomic(r.a.ep, big, max + 1, NULL, r.a.peer, g.base, g.key, FI_UINT64, FI_SUM, NULL);
	cr_assert_eq(ret, -FI_EMSGSIZE, "fi_atomic of count %zu + 1 = %zd", max, ret);
	cr_assert_eq(fi_fetch_atomicvalid(r.a.ep, FI_UINT64, FI_SUM, &max), 0);
	ret = fi_fetch_atomic(r.a.ep, big, max + 1, NULL, big, NULL, r.a.peer, g.base, g.key,
			      FI_UINT64, FI_SUM, NULL);
	cr_assert_eq(ret, -FI_EMSGSIZE, "fi_fetch_atomic of count %zu + 1 = %zd", max, ret);
	/* fi_inject_atomic is limited by inject_size (and the count by fi_atomicvalid) */
	ret = fi_inject_atomic(r.a.ep, big, inject / 8 + 1, r.a.peer, g.base, g.key, FI_UINT64,
			       FI_SUM);
	cr_assert_eq(ret, -FI_EMSGSIZE, "fi_inject_atomic of %zu bytes (inject_size %zu) = %zd",
		     (inject / 8 + 1) * 8, inject, ret);
	free(big);
	rp_empty(&r, r.a.tx_cq, "no completion for a failed call");
	check_u64_guards(0, "the target after failed calls");
	rp_close(&r);
}

/*
 * Triggered operations (fi_trigger(3)): a transfer posted with FI_TRIGGER
 * waits until its counter reaches the threshold, then goes, in threshold
 * order; its completion names the triggered context.
 */
Test(fi_trigger, write_waits_for_its_threshold_then_completes_with_its_context)
{
	static uint8_t tgt[64], src[64], want[64];
	struct fi_triggered_context tctx = { .event_type = FI_TRIGGER_THRESHOLD };
	struct fid_cntr *tc;
	struct region g;
	struct rp r;

	rp_open(&r, FI_TRIGGER, true, true);
	tc = pt_cntr_open(r.dom_a, FI_WAIT_UNSPEC);
	memset(tgt, PAT_T, sizeof(tgt));
	fill(src, sizeof(src), 7);
	g = rp_target(&r, tgt, sizeof(tgt), FI_REMOTE_WRITE);
	tctx.trigger.threshold.cntr = tc;
	tctx.trigger.threshold.threshold = 2;
	{
		struct iovec iov = { src, sizeof(src) };
		void *desc = rp_ldesc(&r, src, sizeof(src));
		struct fi_rma_iov riov = { g.base, sizeof(src), g.key };
		struct fi_msg_rma msg = { .msg_iov = &iov, .desc = &desc, .iov_count = 1,
					  .addr = r.a.peer, .rma_iov = &riov, .rma_iov_count = 1,
					  .context = &tctx };

		cr_assert_eq(fi_writemsg(r.a.ep, &msg, FI_TRIGGER | FI_COMPLETION), 0);
	}
	rp_empty(&r, r.a.tx_cq, "counter at 0, threshold 2");
	cr_assert_eq(fi_close(&tc->fid), -FI_EBUSY, "a counter with a held transfer is busy");
	cr_assert_eq(fi_cntr_add(tc, 1), 0);
	rp_empty(&r, r.a.tx_cq, "counter at 1, threshold 2");
	memset(want, PAT_T, sizeof(want));
	check_bytes(tgt, want, sizeof(tgt), "target before the threshold");
	cr_assert_eq(fi_cntr_add(tc, 1), 0);
	rp_comp(&r, r.a.tx_cq, &tctx, FI_RMA | FI_WRITE, "the triggered write");
	check_bytes(tgt, src, sizeof(tgt), "target after the threshold");
	cr_assert_eq(rp_cntr_until(&r, r.wr, false, 1), 1, "the write counter counts it");
	cr_assert_eq(fi_close(&tc->fid), 0);
	rp_close(&r);
}

/* Held transfers go in threshold order, whatever order they were posted in. */
Test(fi_trigger, sends_go_in_threshold_order)
{
	struct fi_triggered_context t5 = { .event_type = FI_TRIGGER_THRESHOLD },
				    t3 = { .event_type = FI_TRIGGER_THRESHOLD };
	char rbuf[2][16] = { { 0 } };
	struct fi_cq_data_entry e;
	struct fid_cntr *tc;
	struct rp r;
	int i;

	rp_open(&r, FI_TRIGGER, true, false);
	tc = pt_cntr_open(r.dom_a, FI_WAIT_UNSPEC);
	t5.trigger.threshold.cntr = t3.trigger.threshold.cntr = tc;
	t5.trigger.threshold.threshold = 5;
	t3.trigger.threshold.threshold = 3;
	for (i = 0; i < 2; i++)
		cr_assert_eq(fi_recv(r.b.ep, rbuf[i], sizeof(rbuf[i]), NULL, FI_ADDR_UNSPEC,
				     &rbuf[i]), 0);
	{
		struct iovec iov5 = { "five", 5 }, iov3 = { "three", 6 };
		struct fi_msg m5 = { .msg_iov = &iov5, .iov_count = 1, .addr = r.a.peer,
				     .context = &t5 };
		struct fi_msg m3 = { .msg_iov = &iov3, .iov_count = 1, .addr = r.a.peer,
				     .context = &t3 };

		cr_assert_eq(fi_sendmsg(r.a.ep, &m5, FI_TRIGGER | FI_COMPLETION), 0);
		cr_assert_eq(fi_sendmsg(r.a.ep, &m3, FI_TRIGGER | FI_COMPLETION), 0);
	}
	rp_empty(&r, r.b.tx_cq, "nothing sent below the thresholds");
	cr_assert_eq(fi_cntr_set(tc, 10), 0);
	for (i = 0; i < 2; i++) {
		struct fi_cq_err_entry err;

		cr_assert_eq(rp_wait(&r, r.b.tx_cq, &e, &err), 1, "receive %d", i);
		cr_assert(e.flags & FI_RECV);
		cr_assert_eq(e.op_context, &rbuf[i]);
	}
	cr_assert_str_eq(rbuf[0], "three", "the lower threshold went first");
	cr_assert_str_eq(rbuf[1], "five");
	rp_comp(&r, r.a.tx_cq, &t3, FI_MSG | FI_SEND, "threshold 3");
	rp_comp(&r, r.a.tx_cq, &t5, FI_MSG | FI_SEND, "threshold 5");
	cr_assert_eq(fi_close(&tc->fid), 0);
	rp_close(&r);
}

/*
 * An alias whose default flags hold FI_TRIGGER (fi_ep_alias): its plain
 * fi_write waits for the endpoint's own write counter, as fabtests'
 * fi_rdm_rma_trigger does; a held transfer can be cancelled; the endpoint
 * cannot close before its alias.
 */
Test(fi_trigger, alias_with_trigger_flag_and_cancel)
{
	static uint8_t tgt[32], src[32];
	struct fi_triggered_context tctx = { .event_type = FI_TRIGGER_THRESHOLD },
				    never = { .event_type = FI_TRIGGER_THRESHOLD };
	struct fid_ep *alias = NULL;
	uint64_t start, flags = FI_TRANSMIT;
	struct region g;
	struct rp r;
	void *desc;

	rp_open(&r, FI_TRIGGER, true, true);
	fill(src, sizeof(src), 3);
	memset(tgt, PAT_T, sizeof(tgt));
	g = rp_target(&r, tgt, sizeof(tgt), FI_REMOTE_WRITE);
	desc = rp_ldesc(&r, src, sizeof(src));
	cr_assert_eq(fi_ep_alias(r.a.ep, &alias, FI_TRANSMIT | FI_TRIGGER), 0);
	cr_assert_eq(fi_control(&alias->fid, FI_GETOPSFLAG, &flags), 0);
	cr_assert(flags & FI_TRIGGER);
	cr_assert_eq(fi_close(&r.a.ep->fid), -FI_EBUSY, "the endpoint outlives its alias");
	start = fi_cntr_read(r.wr);
	tctx.trigger.threshold.cntr = r.wr;
	tctx.trigger.threshold.threshold = start + 1;
	cr_assert_eq(fi_write(alias, src + 16, 16, desc, r.a.peer, g.base + 16, g.key, &tctx), 0);
	rp_empty(&r, r.a.tx_cq, "held for the first write");
	cr_assert_eq(fi_write(r.a.ep, src, 16, desc, r.a.peer, g.base, g.key, NULL), 0);
	cr_assert_eq(rp_cntr_until(&r, r.wr, false, start + 2), start + 2,
		     "the write, then the one it triggered");
	rp_comp(&r, r.a.tx_cq, NULL, FI_RMA | FI_WRITE, "the plain write");
	rp_comp(&r, r.a.tx_cq, &tctx, FI_RMA | FI_WRITE, "the triggered write");
	check_bytes(tgt, src, sizeof(tgt), "both halves written");

	never.trigger.threshold.cntr = r.wr;
	never.trigger.threshold.threshold = start + 1000;
	cr_assert_eq(fi_write(alias, src, 8, desc, r.a.peer, g.base, g.key, &never), 0);
	cr_assert_eq(fi_cancel(&alias->fid, &never), 0);
	rp_comp_err(&r, r.a.tx_cq, &never, FI_ECANCELED, "the cancelled held write");
	cr_assert_eq(fi_close(&alias->fid), 0);
	rp_close(&r);
}

/* Without FI_TRIGGER asked for, no call may trigger, and no alias may hold it. */
Test(fi_trigger, refused_without_the_capability)
{
	struct fi_triggered_context tctx = { .event_type = FI_TRIGGER_THRESHOLD };
	struct fid_ep *alias = NULL;
	struct iovec iov = { "x", 1 };
	struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .context = &tctx };
	struct rp r;

	rp_open(&r, 0, true, false);
	m.addr = r.a.peer;
	cr_assert_eq(r.info->caps & FI_TRIGGER, 0);
	tctx.trigger.threshold.cntr = NULL;
	cr_assert_eq(fi_sendmsg(r.a.ep, &m, FI_TRIGGER), -FI_EBADFLAGS);
	cr_assert_eq(fi_ep_alias(r.a.ep, &alias, FI_TRANSMIT | FI_TRIGGER), -FI_EBADFLAGS);
	rp_close(&r);
}

/* A triggered context must name a counter of the endpoint's domain. */
Test(fi_trigger, bad_trigger_context_refused)
{
	struct fi_triggered_context tctx = { .event_type = FI_TRIGGER_THRESHOLD };
	struct iovec iov = { "x", 1 };
	struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .context = &tctx };
	struct rp r;

	rp_open(&r, FI_TRIGGER, false, true);
	m.addr = r.a.peer;
	cr_assert_eq(fi_sendmsg(r.a.ep, &m, FI_TRIGGER), -FI_EINVAL, "no counter");
	{
		struct fid_cntr *other = pt_cntr_open(r.dom_b, FI_WAIT_UNSPEC);

		tctx.trigger.threshold.cntr = other;
		cr_assert_eq(fi_sendmsg(r.a.ep, &m, FI_TRIGGER), -FI_EINVAL,
			     "a counter of another domain");
		cr_assert_eq(fi_close(&other->fid), 0);
	}
	m.context = NULL;
	cr_assert_eq(fi_sendmsg(r.a.ep, &m, FI_TRIGGER), -FI_EINVAL, "no triggered context");
	rp_close(&r);
}

/*
 * Counters bound to a region (fi_mr_bind, FI_RMA_EVENT): each counts the
 * remote accesses of its kind that targeted that region, and no other's;
 * binding needs FI_RMA_EVENT and takes one counter of each kind.
 */
Test(fi_mr_bind, region_counters_count_remote_accesses_to_their_region)
{
	static uint64_t tgt[2][8], src[8];
	struct fid_cntr *cw[2], *cr;
	struct region g[2];
	struct rp r;
	void *desc;
	int i;

	rp_open(&r, FI_RMA_EVENT, false, true);
	desc = rp_ldesc(&r, src, sizeof(src));
	for (i = 0; i < 2; i++) {
		g[i] = rp_target(&r, tgt[i], sizeof(tgt[i]), FI_REMOTE_WRITE | FI_REMOTE_READ);
		cw[i] = pt_cntr_open(r.dom_b, FI_WAIT_UNSPEC);
		cr_assert_eq(fi_mr_bind(g[i].mr, &cw[i]->fid, FI_REMOTE_WRITE), 0);
	}
	cr = pt_cntr_open(r.dom_b, FI_WAIT_UNSPEC);
	cr_assert_eq(fi_mr_bind(g[0].mr, &cr->fid, FI_REMOTE_READ), 0);
	cr_assert_eq(fi_mr_bind(g[0].mr, &cr->fid, FI_REMOTE_READ), -FI_EALREADY);
	cr_assert_eq(fi_mr_bind(g[0].mr, &cr->fid, FI_SEND), -FI_EBADFLAGS);
	cr_assert_eq(fi_close(&cw[0]->fid), -FI_EBUSY, "a bound counter is busy");

	/* three writes to region 0, one to region 1, one read of region 0 */
	for (i = 0; i < 4; i++) {
		src[0] = (uint64_t)i;
		cr_assert_eq(POST(&r, fi_write(r.a.ep, src, 8, desc, r.a.peer, g[i == 3].base,
					       g[i == 3].key, &src)), 0);
		rp_comp(&r, r.a.tx_cq, &src, FI_RMA | FI_WRITE, "write");
	}
	cr_assert_eq(POST(&r, fi_read(r.a.ep, src, 8, desc, r.a.peer, g[0].base, g[0].key, &src)),
		     0);
	rp_comp(&r, r.a.tx_cq, &src, FI_RMA | FI_READ, "read");
	cr_assert_eq(rp_cntr_until(&r, cw[0], false, 3), 3, "region 0's write counter");
	cr_assert_eq(rp_cntr_until(&r, cw[1], false, 1), 1, "region 1's write counter");
	cr_assert_eq(rp_cntr_until(&r, cr, false, 1), 1, "region 0's read counter");
	cr_assert_eq(fi_cntr_read(cw[0]), 3, "no more than its own");
	cr_assert_eq(fi_cntr_read(cw[1]), 1);
	/* closing the regions lets go of their counters */
	for (size_t m = 0; m < r.nmrs; m++)
		cr_assert_eq(fi_close(&r.mrs[m]->fid), 0);
	r.nmrs = 0;
	cr_assert_eq(fi_close(&cr->fid), 0);
	for (i = 0; i < 2; i++)
		cr_assert_eq(fi_close(&cw[i]->fid), 0);
	rp_close(&r);
}

Test(fi_mr_bind, needs_rma_event)
{
	static uint64_t tgt[8];
	struct fid_cntr *c;
	struct region g;
	struct rp r;

	rp_open(&r, 0, false, false);
	g = rp_target(&r, tgt, sizeof(tgt), FI_REMOTE_WRITE);
	c = pt_cntr_open(r.dom_b, FI_WAIT_UNSPEC);
	cr_assert_eq(fi_mr_bind(g.mr, &c->fid, FI_REMOTE_WRITE), -FI_EOPNOTSUPP);
	cr_assert_eq(fi_close(&c->fid), 0);
	rp_close(&r);
}

/*
 * Atomics from one initiator execute at the target in the order issued
 * (FI_ORDER_ATOMIC_RAR/RAW/WAR/WAW, offered in msg_order; protocol.md
 * §4.7): 256 fetching writes posted back to back each fetch the value the
 * one before it wrote.
 */
Test(fi_fetch_atomic, atomics_execute_in_issue_order, .timeout = 60)
{
	const uint64_t order = FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW | FI_ORDER_ATOMIC_WAR |
			       FI_ORDER_ATOMIC_WAW;
	enum { N = 256 };
	static uint64_t tgt, val[N], res[N];
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	void *vdesc, *rdesc;
	struct region g;
	struct rp r;
	int i, done = 0;

	rp_open(&r, 0, true, false);
	cr_assert_eq(r.info->tx_attr->msg_order & order, order, "msg_order %#llx",
		     (unsigned long long)r.info->tx_attr->msg_order);
	g = rp_target(&r, &tgt, sizeof(tgt), FI_REMOTE_WRITE | FI_REMOTE_READ);
	vdesc = rp_ldesc(&r, val, sizeof(val));
	rdesc = rp_ldesc(&r, res, sizeof(res));
	for (i = 0; i < N; i++) {
		val[i] = (uint64_t)i + 1;
		res[i] = UINT64_MAX;
		cr_assert_eq(POST(&r, fi_fetch_atomic(r.a.ep, &val[i], 1, vdesc, &res[i], rdesc,
						      r.a.peer, g.base, g.key, FI_UINT64,
						      FI_ATOMIC_WRITE, &res[i])), 0, "post %d", i);
	}
	while (done < N) {
		cr_assert_eq(rp_wait(&r, r.a.tx_cq, &e, &err), 1, "completion %d", done);
		done++;
	}
	for (i = 0; i < N; i++)
		cr_assert_eq(res[i], (uint64_t)i, "write %d fetched %llu, the value of write %d",
			     i + 1, (unsigned long long)res[i], i);
	cr_assert(rp_until_equal(&r, &tgt, &(uint64_t){ N }, sizeof(tgt)));
	rp_close(&r);
}
