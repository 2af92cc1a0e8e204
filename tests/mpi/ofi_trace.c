/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ofi_trace.c: an LD_PRELOAD library for tests/mpi/run_osc.sh. It shows, from inside each MPI
 * process, which Open MPI component opened which libfabric provider and what it then did with
 * it: it interposes fi_fabric() and, through the ops tables of the fabrics, domains and
 * endpoints opened after it, fi_domain(), fi_endpoint() and the RMA and atomic calls made on
 * those endpoints (fi_read/fi_write/fi_atomic/fi_fetch_atomic/fi_compare_atomic and their v,
 * msg and inject forms). At exit each process prints one line per fabric opened:
 *
 *   ofi_trace: pid=P caller=mca_btl_ofi.so prov=braid ep_type=FI_EP_RDM caps=... mr_mode=...
 *     write=N write_bytes=B read=N read_bytes=B atomic=N fetch_atomic=N compare_atomic=N
 *     eagain=N errors=N ops=fetch_atomic:FI_SUM:FI_UINT64:N,...
 *
 * "caller" is the shared object whose code called fi_fabric() (Open MPI's components are
 * separate DSOs on Debian: mca_btl_ofi.so, mca_mtl_ofi.so). Nothing here changes what the
 * calls do; the counts are of calls the provider accepted (returned 0).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* dladdr, RTLD_NEXT */
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define MAX_SLOTS	8	/* fabrics per process */
#define MAX_EPS		32	/* endpoints per process */
#define MAX_OPKINDS	32	/* distinct (call, op, datatype) per fabric */

enum kind { K_ATOMIC, K_FETCH, K_COMPARE, K_NKINDS };
static const char *kind_name[K_NKINDS] = { "atomic", "fetch_atomic", "compare_atomic" };

struct opkind {
	int kind, op, dt;
	unsigned long n;
};

struct slot {
	void *fabric;
	char caller[128], prov[64], ep_type[32], caps[512], mr_mode[256];
	struct fi_ops_fabric fab_ops, *orig_fab_ops;
	struct fi_ops_domain dom_ops, *orig_dom_ops;
	unsigned long write, write_bytes, read, read_bytes, kinds[K_NKINDS], eagain, errors;
	struct opkind opk[MAX_OPKINDS];
	int nopk;
};

struct ep_ent {
	struct fid_ep *ep;
	struct slot *s;
	struct fi_ops_rma rma, *orig_rma;
	struct fi_ops_atomic atomic, *orig_atomic;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot slots[MAX_SLOTS];
static int nslots;
static struct ep_ent eps[MAX_EPS];
static int neps;
static struct {		/* domains: which slot opened them */
	void *dom;
	struct slot *s;
} doms[MAX_SLOTS * 4];
static int ndoms;

static void copy_ops(void *dst, size_t dst_size, const void *src)
{
	size_t n = *(const size_t *)src;	/* every fi_ops_* starts with its size */

	memset(dst, 0, dst_size);
	memcpy(dst, src, n < dst_size ? n : dst_size);
}

static void caller_of(const void *ret, char *out, size_t len)
{
	Dl_info di;

	if (dladdr(ret, &di) && di.dli_fname) {
		const char *b = strrchr(di.dli_fname, '/');

		snprintf(out, len, "%s", b ? b + 1 : di.dli_fname);
	} else {
		snprintf(out, len, "unknown");
	}
}

static struct ep_ent *ep_find(struct fid_ep *ep)
{
	for (int i = 0; i < neps; i++)
		if (eps[i].ep == ep)
			return &eps[i];
	return NULL;
}

static void count(struct slot *s, ssize_t ret, unsigned long *n, unsigned long *bytes, size_t len)
{
	if (ret == 0) {
		__atomic_add_fetch(n, 1, __ATOMIC_RELAXED);
		if (bytes)
			__atomic_add_fetch(bytes, len, __ATOMIC_RELAXED);
	} else if (ret == -FI_EAGAIN) {
		__atomic_add_fetch(&s->eagain, 1, __ATOMIC_RELAXED);
	} else {
		__atomic_add_fetch(&s->errors, 1, __ATOMIC_RELAXED);
	}
}

static void count_atomic(struct slot *s, ssize_t ret, int kind, int op, int dt)
{
	count(s, ret, &s->kinds[kind], NULL, 0);
	if (ret)
		return;
	pthread_mutex_lock(&lock);
	int i;
	for (i = 0; i < s->nopk; i++)
		if (s->opk[i].kind == kind && s->opk[i].op == op && s->opk[i].dt == dt)
			break;
	if (i == s->nopk && s->nopk < MAX_OPKINDS)
		s->opk[s->nopk++] = (struct opkind){ kind, op, dt, 0 };
	if (i < MAX_OPKINDS)
		s->opk[i].n++;
	pthread_mutex_unlock(&lock);
}

static size_t iov_len(const struct iovec *iov, size_t n)
{
	size_t t = 0;

	for (size_t i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

/* --- RMA --- */
static ssize_t t_read(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t a,
		      uint64_t addr, uint64_t key, void *ctx)
{
	struct ep_ent *e = ep_find(ep);
	ssize_t r = e->orig_rma->read(ep, buf, len, desc, a, addr, key, ctx);

	count(e->s, r, &e->s->read, &e->s->read_bytes, len);
	return r;
}

static ssize_t t_readv(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t n,
		       fi_addr_t a, uint64_t addr, uint64_t key, void *ctx)
{
	struct ep_ent *e = ep_find(ep);
	ssize_t r = e->orig_rma->readv(ep, iov, desc, n, a, addr, key, ctx);

	count(e->s, r, &e->s->read, &e->s->read_bytes, iov_len(iov, n));
	return r;
}

static ssize_t t_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
{
	struct ep_ent *e = ep_find(ep);
	ssize_t r = e->orig_rma->readmsg(ep, msg, flags);

	count(e->s, r, &e->s->read, &e->s->read_bytes, iov_len(msg->msg_iov, msg->iov_count));
	return r;
}

static ssize_t t_write(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t a,
		       uint64_t addr, uint64_t key, void *ctx)
{
	struct ep_ent *e = ep_find(ep);
	ssize_t r = e->orig_rma->write(ep, buf, len, desc, a, addr, key, ctx);

	count(e->s, r, &e->s->write, &e->s->write_bytes, len);
	return r;
}

static ssize_t t_writev(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t n,
			fi_addr_t a, uint64_t addr, uint64_t key, void *ctx)
{
	struct ep_ent *e = ep_find(ep);
	ssize_t r = e->orig_rma->writev(ep, iov, desc, n, a, addr, key, ctx);

	count(e->s, r, &e->s->write, &e->s->write_bytes, iov_len(iov, n));
	return r;
}

static ssize_t t_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg, uint64_t flags)
{
	struct ep_ent *e = ep_find(ep);
	ssize_t r = e->orig_rma->writemsg(ep, msg, flags);

	count(e->s, r, &e->s->write, &e->s->write_bytes, iov_len(msg->msg_iov, msg->iov_count));
	return r;
}

static ssize_t t_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t a,
			uint64_t addr, uint64_t key)
{
	struct ep_ent *e = ep_find(ep);
	ssize_t r = e->orig_rma->inject(ep, buf, len, a, addr, key);

	count(e->s, r, &e->s->write, &e->s->write_bytes, len);
	return r;
}

static ssize_t t_writedata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			   uint64_t data, fi_addr_t a, uint64_t addr, uint64_t key, void *ctx)
{
	struct ep_ent *e = ep_find(ep);
	ssize_t r = e->orig_rma->writedata(ep, buf, len, desc, data, a, addr, key, ctx);

	count(e->s, r, &e->s->write, &e->s->write_bytes, len);
	return r;
}

static ssize_t t_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
			    fi_addr_t a, uint64_t addr, uint64_t key)
{
	struct ep_ent *e = ep_find(ep);
	ssize_t r = e->orig_rma->injectdata(ep, buf, len, data, a, addr, key);

	count(e->s, r, &e->s->write, &e->s->write_bytes, len);
	return r;
}

/* --- atomics --- */
static ssize_t t_awrite(struct fid_ep *ep, const void *buf, size_t cnt, void *desc, fi_addr_t a,
			uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op, void *ctx)
{
	struct ep_ent *e = ep_find(ep);
	ssize_t r = e->orig_atomic->write(ep, buf, cnt, desc, a, addr, key, dt, op, ctx);

	count_atomic(e->s, r, K_ATOMIC, op, dt);
	return r;
}

static ssize_t t_awritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t n,
			 fi_addr_t a, uint64_t addr, uint64_t key, enum fi_datatype dt,
			 enum fi_op op, void *ctx)
{
	struct ep_ent *e = ep_find(ep);
	ssize_t r = e->orig_atomic->writev(ep, iov, desc, n, a, addr, key, dt, op, ctx);

	count_atomic(e->s, r, K_ATOMIC, op, dt);
	return r;
}

static ssize_t t_awritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg, uint64_t flags)
{
	struct ep_ent *e = ep_find(ep);
	ssize_t r = e->orig_atomic->writemsg(ep, msg, flags);

	count_atomic(e->s, r, K_ATOMIC, msg->op, msg->datatype);
	return r;
}

static ssize_t t_ainject(struct fid_ep *ep, const void *buf, size_t cnt, fi_addr_t a,
			 uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op)
{
	struct ep_ent *e = ep_find(ep);
	ssize_t r = e->orig_atomic->inject(ep, buf, cnt, a, addr, key, dt, op);

	count_atomic(e->s, r, K_ATOMIC, op, dt);
	return r;
}

static ssize_t t_readwrite(struct fid_ep *ep, const void *buf, size_t cnt, void *desc,
			   void *res, void *res_desc, fi_addr_t a, uint64_t addr, uint64_t key,
			   enum fi_datatype dt, enum fi_op op, void *ctx)
{
	struct ep_ent *e = ep_find(ep);
	ssize_t r = e->orig_atomic->readwrite(ep, buf, cnt, desc, res, res_desc, a, addr, key,
					      dt, op, ctx);

	count_atomic(e->s, r, K_FETCH, op, dt);
	return r;
}

static ssize_t t_readwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t n,
			    struct fi_ioc *resv, void **res_desc, size_t rn, fi_addr_t a,
			    uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op,
			    void *ctx)
{
	struct ep_ent *e = ep_find(ep);
	ssize_t r = e->orig_atomic->readwritev(ep, iov, desc, n, resv, res_desc, rn, a, addr,
					       key, dt, op, ctx);

	count_atomic(e->s, r, K_FETCH, op, dt);
	return r;
}

static ssize_t t_readwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			      struct fi_ioc *resv, void **res_desc, size_t rn, uint64_t flags)
{
	struct ep_ent *e = ep_find(ep);
	ssize_t r = e->orig_atomic->readwritemsg(ep, msg, resv, res_desc, rn, flags);

	count_atomic(e->s, r, K_FETCH, msg->op, msg->datatype);
	return r;
}

static ssize_t t_compwrite(struct fid_ep *ep, const void *buf, size_t cnt, void *desc,
			   const void *cmp, void *cmp_desc, void *res, void *res_desc,
			   fi_addr_t a, uint64_t addr, uint64_t key, enum fi_datatype dt,
			   enum fi_op op, void *ctx)
{
	struct ep_ent *e = ep_find(ep);
	ssize_t r = e->orig_atomic->compwrite(ep, buf, cnt, desc, cmp, cmp_desc, res, res_desc,
					      a, addr, key, dt, op, ctx);

	count_atomic(e->s, r, K_COMPARE, op, dt);
	return r;
}

static ssize_t t_compwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t n,
			    const struct fi_ioc *cmpv, void **cmp_desc, size_t cn,
			    struct fi_ioc *resv, void **res_desc, size_t rn, fi_addr_t a,
			    uint64_t addr, uint64_t key, enum fi_datatype dt, enum fi_op op,
			    void *ctx)
{
	struct ep_ent *e = ep_find(ep);
	ssize_t r = e->orig_atomic->compwritev(ep, iov, desc, n, cmpv, cmp_desc, cn, resv,
					       res_desc, rn, a, addr, key, dt, op, ctx);

	count_atomic(e->s, r, K_COMPARE, op, dt);
	return r;
}

static ssize_t t_compwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			      const struct fi_ioc *cmpv, void **cmp_desc, size_t cn,
			      struct fi_ioc *resv, void **res_desc, size_t rn, uint64_t flags)
{
	struct ep_ent *e = ep_find(ep);
	ssize_t r = e->orig_atomic->compwritemsg(ep, msg, cmpv, cmp_desc, cn, resv, res_desc,
						 rn, flags);

	count_atomic(e->s, r, K_COMPARE, msg->op, msg->datatype);
	return r;
}

/* --- the objects --- */
static void wrap_ep(struct slot *s, struct fid_ep *ep)
{
	struct ep_ent *e;

	pthread_mutex_lock(&lock);
	if (neps == MAX_EPS) {
		pthread_mutex_unlock(&lock);
		return;
	}
	e = &eps[neps];
	e->ep = ep;
	e->s = s;
	if (ep->rma) {
		e->orig_rma = ep->rma;
		copy_ops(&e->rma, sizeof(e->rma), ep->rma);
#define W(f) if (e->rma.f) e->rma.f = t_##f
		W(read); W(readv); W(readmsg); W(write); W(writev); W(writemsg);
		W(inject); W(writedata); W(injectdata);
#undef W
	}
	if (ep->atomic) {
		e->orig_atomic = ep->atomic;
		copy_ops(&e->atomic, sizeof(e->atomic), ep->atomic);
#define W(f, g) if (e->atomic.f) e->atomic.f = g
		W(write, t_awrite); W(writev, t_awritev); W(writemsg, t_awritemsg);
		W(inject, t_ainject); W(readwrite, t_readwrite); W(readwritev, t_readwritev);
		W(readwritemsg, t_readwritemsg); W(compwrite, t_compwrite);
		W(compwritev, t_compwritev); W(compwritemsg, t_compwritemsg);
#undef W
	}
	neps++;	/* visible before the ops are swapped in */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (ep->rma)
		ep->rma = &e->rma;
	if (ep->atomic)
		ep->atomic = &e->atomic;
	pthread_mutex_unlock(&lock);
}

/* "FI_RMA, FI_ATOMIC" -> "FI_RMA|FI_ATOMIC": one whitespace-free token per field */
static void token(char *str)
{
	char *d = str;

	for (const char *p = str; *p; p++)
		if (*p == ',')
			*d++ = '|';
		else if (*p != ' ')
			*d++ = *p;
	*d = 0;
	if (!*str)
		strcpy(str, "0");
}

static struct slot *dom_slot(void *dom)
{
	for (int i = 0; i < ndoms; i++)
		if (doms[i].dom == dom)
			return doms[i].s;
	return NULL;
}

static int t_endpoint(struct fid_domain *dom, struct fi_info *info, struct fid_ep **ep, void *ctx)
{
	struct slot *s = dom_slot(dom);
	int r = s->orig_dom_ops->endpoint(dom, info, ep, ctx);

	if (!r) {
		snprintf(s->ep_type, sizeof(s->ep_type), "%s",
			 info && info->ep_attr ? fi_tostr(&info->ep_attr->type, FI_TYPE_EP_TYPE) : "?");
		wrap_ep(s, *ep);
	}
	return r;
}

static struct slot *fab_slot(void *fab)
{
	for (int i = 0; i < nslots; i++)
		if (slots[i].fabric == fab)
			return &slots[i];
	return NULL;
}

static int t_domain(struct fid_fabric *fab, struct fi_info *info, struct fid_domain **dom,
		    void *ctx)
{
	struct slot *s = fab_slot(fab);
	int r = s->orig_fab_ops->domain(fab, info, dom, ctx);

	if (r)
		return r;
	snprintf(s->caps, sizeof(s->caps), "%s", fi_tostr(&info->caps, FI_TYPE_CAPS));
	if (info->domain_attr)
		snprintf(s->mr_mode, sizeof(s->mr_mode), "%s",
			 fi_tostr(&info->domain_attr->mr_mode, FI_TYPE_MR_MODE));
	token(s->caps);
	token(s->mr_mode);
	pthread_mutex_lock(&lock);
	if (ndoms < (int)(sizeof(doms) / sizeof(doms[0]))) {
		doms[ndoms].dom = *dom;
		doms[ndoms].s = s;
		ndoms++;
		s->orig_dom_ops = (*dom)->ops;
		copy_ops(&s->dom_ops, sizeof(s->dom_ops), (*dom)->ops);
		if (s->dom_ops.endpoint)
			s->dom_ops.endpoint = t_endpoint;
		(*dom)->ops = &s->dom_ops;
	}
	pthread_mutex_unlock(&lock);
	return 0;
}

int fi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	static int (*real)(struct fi_fabric_attr *, struct fid_fabric **, void *);
	struct slot *s;
	int r;

	if (!real)
		real = (int (*)(struct fi_fabric_attr *, struct fid_fabric **, void *))
			dlsym(RTLD_NEXT, "fi_fabric");
	if (!real)
		return -FI_ENOSYS;
	r = real(attr, fabric, context);
	if (r)
		return r;
	pthread_mutex_lock(&lock);
	if (nslots < MAX_SLOTS) {
		s = &slots[nslots++];
		s->fabric = *fabric;
		caller_of(__builtin_return_address(0), s->caller, sizeof(s->caller));
		snprintf(s->prov, sizeof(s->prov), "%s",
			 attr && attr->prov_name ? attr->prov_name : "?");
		snprintf(s->ep_type, sizeof(s->ep_type), "none");
		snprintf(s->caps, sizeof(s->caps), "none");
		snprintf(s->mr_mode, sizeof(s->mr_mode), "none");
		s->orig_fab_ops = (*fabric)->ops;
		copy_ops(&s->fab_ops, sizeof(s->fab_ops), (*fabric)->ops);
		if (s->fab_ops.domain)
			s->fab_ops.domain = t_domain;
		(*fabric)->ops = &s->fab_ops;
	}
	pthread_mutex_unlock(&lock);
	return 0;
}

__attribute__((destructor)) static void report(void)
{
	for (int i = 0; i < nslots; i++) {
		struct slot *s = &slots[i];
		char ops[2048] = "";
		size_t o = 0;

		for (int k = 0; k < s->nopk && o < sizeof(ops) - 1; k++) {
			enum fi_op op = s->opk[k].op;
			enum fi_datatype dt = s->opk[k].dt;
			char opn[32], dtn[32];

			snprintf(opn, sizeof(opn), "%s", fi_tostr(&op, FI_TYPE_ATOMIC_OP));
			snprintf(dtn, sizeof(dtn), "%s", fi_tostr(&dt, FI_TYPE_ATOMIC_TYPE));
			o += snprintf(ops + o, sizeof(ops) - o, "%s%s:%s:%s:%lu", k ? "," : "",
				      kind_name[s->opk[k].kind], opn, dtn, s->opk[k].n);
		}
		fprintf(stderr,
			"ofi_trace: pid=%d caller=%s prov=%s ep_type=%s caps=%s mr_mode=%s "
			"write=%lu write_bytes=%lu read=%lu read_bytes=%lu atomic=%lu "
			"fetch_atomic=%lu compare_atomic=%lu eagain=%lu errors=%lu ops=%s\n",
			(int)getpid(), s->caller, s->prov, s->ep_type, s->caps, s->mr_mode,
			s->write, s->write_bytes, s->read, s->read_bytes, s->kinds[K_ATOMIC],
			s->kinds[K_FETCH], s->kinds[K_COMPARE], s->eagain, s->errors,
			o ? ops : "none");
	}
}
