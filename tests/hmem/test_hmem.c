/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_hmem.c: device memory (FI_HMEM, FI_HMEM_CUDA) through the stand-in
 * driver libbraid_fakecuda.so (FI_BRAID_CUDA_LIB): offered only with a
 * driver and a device; regions; messages, tagged messages, RMA and atomics
 * with device buffers on either side and both, small and staged in chunks;
 * truncation, cancel, failed copies, FI_OPT_CUDA_API_PERMITTED. The fake's
 * device memory cannot be touched by the CPU: braid reading it other than
 * through a copy crashes the test. Every byte is checked.
 */
#include <dlfcn.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_braid.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "braid/braid_errno.h"
#include "prov_test.h"

#define MIB	(1u << 20)

/* the fake driver's own view (tests/hmem/fake_cuda.c) */
struct fakecuda_stats {
	uint64_t d2h, d2h_bytes, h2d, h2d_bytes;
	uint64_t failed;
	uint64_t pinned, pushes;
};

static struct {
	void *lib;
	int (*mem_alloc)(unsigned long long *p, size_t len);
	int (*mem_free)(unsigned long long p);
	void (*stats)(struct fakecuda_stats *out);
	void (*fail)(long d2h, long h2d);
	void *(*host)(unsigned long long p, size_t len);
} fake;

/* the stand-in, as braid will load it (the same library: one copy in the process) */
static void fake_load(void)
{
	const char *path = getenv("FI_BRAID_CUDA_LIB");
	int (*init)(unsigned int);

	cr_assert_not_null(path, "FI_BRAID_CUDA_LIB names the stand-in driver");
	fake.lib = dlopen(path, RTLD_NOW);
	cr_assert_not_null(fake.lib, "%s: %s", path, dlerror());
	init = (int (*)(unsigned int))dlsym(fake.lib, "cuInit");
	*(void **)&fake.mem_alloc = dlsym(fake.lib, "cuMemAlloc_v2");
	*(void **)&fake.mem_free = dlsym(fake.lib, "cuMemFree_v2");
	*(void **)&fake.stats = dlsym(fake.lib, "fakecuda_stats");
	*(void **)&fake.fail = dlsym(fake.lib, "fakecuda_fail");
	*(void **)&fake.host = dlsym(fake.lib, "fakecuda_host");
	cr_assert(init && fake.mem_alloc && fake.mem_free && fake.stats && fake.fail && fake.host);
	cr_assert_eq(init(0), 0);
}

/* device memory: its address, and its bytes as the test sees them */
static void *dev_alloc(size_t len)
{
	unsigned long long p = 0;

	cr_assert_eq(fake.mem_alloc(&p, len), 0);
	return (void *)(uintptr_t)p;
}

static uint8_t *dev_bytes(void *dev, size_t len)
{
	uint8_t *h = fake.host((unsigned long long)(uintptr_t)dev, len);

	cr_assert_not_null(h);
	return h;
}

static void check(const uint8_t *p, size_t n, unsigned seed)
{
	size_t i = pt_mismatch(p, n, seed);

	cr_assert_eq(i, n, "byte %zu of %zu differs", i, n);
}

/* ---- fi_getinfo ---- */

static struct fi_info *hmem_hints(uint64_t caps, int mr_mode)
{
	struct fi_info *hints = pt_hints(FI_EP_RDM);

	hints->caps = caps;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->mr_mode = mr_mode;
	return hints;
}

#define HMEM_MR_MODE	(FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_HMEM)
#define HMEM_CAPS	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_HMEM)

/* fi_getinfo for braid's own RDM entry on 127.0.0.1; the result, *@out its entry */
static int getinfo(uint64_t caps, int mr_mode, struct fi_info **out)
{
	struct fi_info *hints = hmem_hints(caps, mr_mode), *list = NULL, *cur;
	int ret = fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &list);

	fi_freeinfo(hints);
	*out = NULL;
	if (ret)
		return ret;
	for (cur = list; cur && !pt_is_plain_braid(cur); cur = cur->next)
		;
	*out = cur ? fi_dupinfo(cur) : NULL;
	fi_freeinfo(list);
	return *out ? 0 : -FI_ENODATA;
}

/* no driver, a driver that does not start, a driver with no device: no FI_HMEM */
static void no_hmem(void)
{
	struct fi_info *info;

	cr_assert_eq(getinfo(HMEM_CAPS, HMEM_MR_MODE, &info), -FI_ENODATA);
	cr_assert_eq(getinfo(FI_MSG | FI_TAGGED, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY,
			     &info), 0);
	cr_assert_eq(info->caps & FI_HMEM, 0);
	fi_freeinfo(info);
}

Test(hmem, getinfo__no_driver)
{
	setenv("FI_BRAID_CUDA_LIB", "/nonexistent/libcuda.so.1", 1);
	no_hmem();
}

Test(hmem, getinfo__init_fails)
{
	setenv("FAKECUDA_INIT_FAIL", "1", 1);
	no_hmem();
}

Test(hmem, getinfo__zero_devices)
{
	setenv("FAKECUDA_DEVICES", "0", 1);
	no_hmem();
}

Test(hmem, getinfo__offered)
{
	struct fi_info *info, *hints, *list = NULL;

	cr_assert_eq(getinfo(HMEM_CAPS, HMEM_MR_MODE, &info), 0);
	cr_assert(info->caps & FI_HMEM);
	cr_assert(info->tx_attr->caps & FI_HMEM);
	cr_assert(info->rx_attr->caps & FI_HMEM);
	cr_assert(info->domain_attr->mr_mode & FI_MR_HMEM);
	fi_freeinfo(info);
	/* only when asked: it needs FI_MR_HMEM */
	cr_assert_eq(getinfo(FI_MSG, 0, &info), 0);
	cr_assert_eq(info->caps & FI_HMEM, 0);
	cr_assert_eq(info->domain_attr->mr_mode & FI_MR_HMEM, 0);
	fi_freeinfo(info);
	/* asked without FI_MR_HMEM: none */
	cr_assert_eq(getinfo(HMEM_CAPS, FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY, &info),
		     -FI_ENODATA);
	/* device memory on RDM only */
	hints = pt_hints(FI_EP_MSG);
	hints->caps = FI_MSG | FI_HMEM;
	hints->domain_attr->mr_mode = HMEM_MR_MODE;
	cr_assert_eq(fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &list),
		     -FI_ENODATA);
	fi_freeinfo(hints);
}

/* an application that does not ask for FI_HMEM never has the driver loaded */
Test(hmem, getinfo__driver_loaded_only_when_asked)
{
	const char *path = getenv("FI_BRAID_CUDA_LIB");
	struct fi_info *info;
	void *lib;

	cr_assert_eq(getinfo(FI_MSG | FI_TAGGED | FI_RMA, HMEM_MR_MODE, &info), 0);
	fi_freeinfo(info);
	cr_assert_null(dlopen(path, RTLD_NOW | RTLD_NOLOAD), "braid loaded the driver unasked");
	cr_assert_eq(getinfo(HMEM_CAPS, HMEM_MR_MODE, &info), 0);
	fi_freeinfo(info);
	lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	cr_assert_not_null(lib);
	dlclose(lib);
}

/* ---- a pair of endpoints in this process ---- */

struct pair {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *ep[2];
	struct fid_cq *cq[2];
	fi_addr_t addr[2];
};

static void pair_open_caps(struct pair *p, uint64_t caps)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };

	memset(p, 0, sizeof(*p));
	fake_load();
	cr_assert_eq(getinfo(caps, HMEM_MR_MODE, &p->info), 0);
	cr_assert_eq(fi_fabric(p->info->fabric_attr, &p->fabric, NULL), 0);
	cr_assert_eq(fi_domain(p->fabric, p->info, &p->domain, NULL), 0);
	cr_assert_eq(fi_av_open(p->domain, &av_attr, &p->av, NULL), 0);
	for (int i = 0; i < 2; i++) {
		char name[64];
		size_t len = sizeof(name);

		cr_assert_eq(fi_cq_open(p->domain, &cq_attr, &p->cq[i], NULL), 0);
		cr_assert_eq(fi_endpoint(p->domain, p->info, &p->ep[i], NULL), 0);
		cr_assert_eq(fi_ep_bind(p->ep[i], &p->av->fid, 0), 0);
		cr_assert_eq(fi_ep_bind(p->ep[i], &p->cq[i]->fid, FI_TRANSMIT | FI_RECV), 0);
		cr_assert_eq(fi_enable(p->ep[i]), 0);
		cr_assert_eq(fi_getname(&p->ep[i]->fid, name, &len), 0);
		cr_assert_eq(fi_av_insert(p->av, name, 1, &p->addr[i], 0, NULL), 1);
	}
}

static void pair_open(struct pair *p)
{
	pair_open_caps(p, HMEM_CAPS);
}

static void pair_close(struct pair *p)
{
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(fi_close(&p->ep[i]->fid), 0);
		cr_assert_eq(fi_close(&p->cq[i]->fid), 0);
	}
	cr_assert_eq(fi_close(&p->av->fid), 0);
	cr_assert_eq(fi_close(&p->domain->fid), 0);
	cr_assert_eq(fi_close(&p->fabric->fid), 0);
	fi_freeinfo(p->info);
}

/*
 * One completion of endpoint @i's CQ (the other endpoint progressed
 * meanwhile): 1, or -FI_EAVAIL with *@err filled. Bounded.
 */
static ssize_t pair_wait(struct pair *p, int i, struct fi_cq_tagged_entry *e,
			 struct fi_cq_err_entry *err)
{
	long deadline = pt_now_ms() + 20000;
	ssize_t ret;

	do {
		(void)fi_cq_read(p->cq[!i], NULL, 0);
		ret = fi_cq_read(p->cq[i], e, 1);
		if (ret == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			cr_assert_eq(fi_cq_readerr(p->cq[i], err, 0), 1);
			return -FI_EAVAIL;
		}
	} while (ret == -FI_EAGAIN && pt_now_ms() < deadline);
	cr_assert_eq(ret, 1, "endpoint %d: no completion (%zd)", i, ret);
	return ret;
}

static void pair_ok(struct pair *p, int i, void *context, uint64_t flags)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	ssize_t ret = pair_wait(p, i, &e, &err);

	cr_assert_eq(ret, 1, "endpoint %d: error %d (%s)", i, err.err, fi_strerror(err.err));
	cr_assert_eq(e.op_context, context);
	cr_assert_eq(e.flags & flags, flags);
}

static struct fid_mr *reg(struct pair *p, void *buf, size_t len, bool dev, uint64_t access)
{
	struct iovec iov = { buf, len };
	struct fi_mr_attr attr = {
		.mr_iov = &iov, .iov_count = 1, .access = access,
		.iface = dev ? FI_HMEM_CUDA : FI_HMEM_SYSTEM,
	};
	struct fid_mr *mr = NULL;
	int ret = fi_mr_regattr(p->domain, &attr, 0, &mr);

	cr_assert_eq(ret, 0, "fi_mr_regattr = %d (%s)", ret, fi_strerror(-ret));
	return mr;
}

/* a buffer on the device or the host, its bytes as the test sees them, its region */
struct buf {
	void *addr;
	uint8_t *bytes;
	size_t len;
	bool dev;
	struct fid_mr *mr;
};

static void buf_make(struct pair *p, struct buf *b, size_t len, bool dev, uint64_t access)
{
	b->len = len;
	b->dev = dev;
	if (dev) {
		b->addr = dev_alloc(len);
		b->bytes = dev_bytes(b->addr, len);
	} else {
		b->addr = b->bytes = malloc(len);
		cr_assert_not_null(b->addr);
	}
	memset(b->bytes, 0, len);
	b->mr = reg(p, b->addr, len, dev, access);
}

static void buf_free(struct buf *b)
{
	cr_assert_eq(fi_close(&b->mr->fid), 0);
	if (b->dev)
		cr_assert_eq(fake.mem_free((unsigned long long)(uintptr_t)b->addr), 0);
	else
		free(b->addr);
}

/* ---- regions ---- */

static void msg_once(struct pair *p, size_t len, bool sdev, bool rdev, bool tagged);
static void rma_once(struct pair *p, size_t len, bool ldev, bool tdev, bool write);

/* one message between device buffers */
static void msg_once_any(struct pair *p)
{
	msg_once(p, 4096, true, true, false);
}

Test(hmem, mr__regattr)
{
	struct pair p;
	struct buf d;
	uint8_t host[64];
	struct iovec iov = { host, sizeof(host) };
	struct fi_mr_attr attr = { .mr_iov = &iov, .iov_count = 1, .access = FI_SEND,
				   .iface = FI_HMEM_CUDA };
	struct fid_mr *mr;

	struct fakecuda_stats st;

	pair_open(&p);
	buf_make(&p, &d, 4096, true, FI_SEND | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE);
	cr_assert_neq(fi_mr_desc(d.mr), NULL);
	fake.stats(&st);
	cr_assert_eq(st.pinned, 1, "a region open to peers has its pinned shadow");
	/* host memory named device memory, an interface braid does not do */
	cr_assert_eq(fi_mr_regattr(p.domain, &attr, 0, &mr), -FI_EINVAL);
	attr.iface = FI_HMEM_ZE;
	cr_assert_eq(fi_mr_regattr(p.domain, &attr, 0, &mr), -FI_ENOSYS);
	buf_free(&d);
	fake.stats(&st);
	cr_assert_eq(st.pinned, 0, "its shadow went with the region");
	/* an endpoint's staging is pinned while it lives */
	msg_once_any(&p);
	fake.stats(&st);
	cr_assert_eq(st.pinned, 2, "one arena per endpoint that moved device memory");
	pair_close(&p);
	fake.stats(&st);
	cr_assert_eq(st.pinned, 0, "the endpoints' staging went with them");
}

/* a domain without FI_HMEM (MSG endpoints never have it) takes no device region */
Test(hmem, mr__regattr_without_hmem)
{
	struct fi_info *hints = pt_hints(FI_EP_MSG), *list = NULL;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_mr *mr;
	void *dev;
	struct iovec iov;
	struct fi_mr_attr attr = { .mr_iov = &iov, .iov_count = 1, .access = FI_SEND,
				   .iface = FI_HMEM_CUDA };

	fake_load();
	dev = dev_alloc(4096);
	iov = (struct iovec){ dev, 4096 };
	hints->caps = FI_MSG;
	cr_assert_eq(fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &list), 0);
	list = pt_take_plain_braid(list);
	fi_freeinfo(hints);
	cr_assert_eq(fi_fabric(list->fabric_attr, &fabric, NULL), 0);
	cr_assert_eq(fi_domain(fabric, list, &domain, NULL), 0);
	cr_assert_eq(fi_mr_regattr(domain, &attr, 0, &mr), -FI_EOPNOTSUPP);
	cr_assert_eq(fi_close(&domain->fid), 0);
	cr_assert_eq(fi_close(&fabric->fid), 0);
	fi_freeinfo(list);
}

/* ---- messages ---- */

/* one message of @len from endpoint 0 to endpoint 1, each side's buffer on the device or not */
static void msg_once(struct pair *p, size_t len, bool sdev, bool rdev, bool tagged)
{
	struct buf s, r;
	void *sd, *rd;
	int sctx, rctx;

	buf_make(p, &s, len, sdev, FI_SEND);
	buf_make(p, &r, len, rdev, FI_RECV);
	pt_fill(s.bytes, len, (unsigned)len);
	sd = fi_mr_desc(s.mr);
	rd = fi_mr_desc(r.mr);
	if (tagged) {
		cr_assert_eq(fi_trecv(p->ep[1], r.addr, len, rd, FI_ADDR_UNSPEC, 7, 0, &rctx), 0);
		cr_assert_eq(fi_tsend(p->ep[0], s.addr, len, sd, p->addr[1], 7, &sctx), 0);
	} else {
		cr_assert_eq(fi_recv(p->ep[1], r.addr, len, rd, FI_ADDR_UNSPEC, &rctx), 0);
		cr_assert_eq(fi_send(p->ep[0], s.addr, len, sd, p->addr[1], &sctx), 0);
	}
	pair_ok(p, 1, &rctx, FI_RECV);
	pair_ok(p, 0, &sctx, FI_SEND);
	check(r.bytes, len, (unsigned)len);
	buf_free(&s);
	buf_free(&r);
}

/* @once for each size, with the device buffer on one side, the other, and both */
typedef void (*once_fn)(struct pair *p, size_t len, bool ldev, bool rdev, bool how);

static void each_side(once_fn once, const size_t *sizes, size_t n, bool how)
{
	struct pair p;

	pair_open(&p);
	for (size_t i = 0; i < n; i++) {
		once(&p, sizes[i], true, false, how);
		once(&p, sizes[i], false, true, how);
		once(&p, sizes[i], true, true, how);
	}
	pair_close(&p);
}

static void msg_sizes(bool tagged)
{
	static const size_t sizes[] = { 1, 8, 4096, 300000, 8 * MIB + 123 };

	each_side(msg_once, sizes, sizeof(sizes) / sizeof(sizes[0]), tagged);
}

Test(hmem, msg__device_either_side)
{
	msg_sizes(false);
}

Test(hmem, tagged__device_either_side)
{
	msg_sizes(true);
}

/* a large message is staged a chunk at a time, while its first packets are on the wire */
Test(hmem, msg__staged_in_chunks_overlapped)
{
	const size_t len = 8 * MIB;
	struct fakecuda_stats before, after;
	struct pair p;

	pair_open(&p);
	fake.stats(&before);
	msg_once(&p, len, true, false, false);
	fake.stats(&after);
	/* 256 KiB chunks (FI_BRAID_HMEM_CHUNK's default): 32 copies, not one */
	cr_assert_geq(after.d2h - before.d2h, len / (256 << 10));
	cr_assert_eq(after.d2h_bytes - before.d2h_bytes, len);
	cr_assert_gt(pt_stat(p.ep[0], "ep.hmem_stage_late"), 0,
		     "no chunk was staged after the message's first packet left");
	cr_assert_eq(pt_stat(p.ep[0], "ep.hmem_d2h_bytes"), len);
	pair_close(&p);
}

/* many device operations in flight at once, each with its own staging */
Test(hmem, tagged__many_in_flight)
{
	enum { N = 12 };
	struct pair p;
	struct buf s[N], r[N];
	int sctx[N], rctx[N], seen_s = 0, seen_r = 0;

	pair_open(&p);
	msg_once(&p, 5000, true, true, true);	/* records taken and given back before */
	for (int i = 0; i < N; i++) {
		size_t len = 1000 + (size_t)i * 97000;

		buf_make(&p, &s[i], len, i % 3 != 0, FI_SEND);
		buf_make(&p, &r[i], len, i % 3 != 1, FI_RECV);
		pt_fill(s[i].bytes, len, (unsigned)i + 40);
		cr_assert_eq(fi_trecv(p.ep[1], r[i].addr, len, fi_mr_desc(r[i].mr), FI_ADDR_UNSPEC,
				      (uint64_t)i, 0, &rctx[i]), 0);
	}
	for (int i = N - 1; i >= 0; i--)
		cr_assert_eq(fi_tsend(p.ep[0], s[i].addr, s[i].len, fi_mr_desc(s[i].mr), p.addr[1],
				      (uint64_t)i, &sctx[i]), 0);
	for (int n = 0; n < 2 * N; n++) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		int side = n % 2;

		cr_assert_eq(pair_wait(&p, side, &e, &err), 1);
		if (side) {
			int i = (int)((int *)e.op_context - rctx);

			cr_assert(i >= 0 && i < N && e.tag == (uint64_t)i && e.len == r[i].len);
			cr_assert_eq(e.buf, r[i].addr);
			seen_r |= 1 << i;
		} else {
			int i = (int)((int *)e.op_context - sctx);

			cr_assert(i >= 0 && i < N);
			seen_s |= 1 << i;
		}
	}
	cr_assert_eq(seen_s, (1 << N) - 1);
	cr_assert_eq(seen_r, (1 << N) - 1);
	for (int i = 0; i < N; i++) {
		check(r[i].bytes, r[i].len, (unsigned)i + 40);
		buf_free(&s[i]);
		buf_free(&r[i]);
	}
	pair_close(&p);
}

/* a vector of device and host buffers, as one message */
Test(hmem, msg__mixed_iov)
{
	struct pair p;
	struct buf a, b, r;
	struct iovec iov[2];
	void *desc[2];
	int sctx, rctx;

	pair_open(&p);
	buf_make(&p, &a, 70000, true, FI_SEND);
	buf_make(&p, &b, 50000, false, FI_SEND);
	buf_make(&p, &r, 120000, true, FI_RECV);
	pt_fill(a.bytes, a.len, 1);
	pt_fill(b.bytes, b.len, 2);
	iov[0] = (struct iovec){ a.addr, a.len };
	iov[1] = (struct iovec){ b.addr, b.len };
	desc[0] = fi_mr_desc(a.mr);
	desc[1] = fi_mr_desc(b.mr);
	cr_assert_eq(fi_recv(p.ep[1], r.addr, r.len, fi_mr_desc(r.mr), FI_ADDR_UNSPEC, &rctx), 0);
	cr_assert_eq(fi_sendv(p.ep[0], iov, desc, 2, p.addr[1], &sctx), 0);
	pair_ok(&p, 1, &rctx, FI_RECV);
	pair_ok(&p, 0, &sctx, FI_SEND);
	check(r.bytes, a.len, 1);
	check(r.bytes + a.len, b.len, 2);
	buf_free(&a);
	buf_free(&b);
	buf_free(&r);
	pair_close(&p);
}

/* an injected device buffer is copied by the call: with a descriptor, and without one */
Test(hmem, msg__inject)
{
	struct pair p;
	struct buf s, r, t;
	struct iovec iov;
	void *desc;
	struct fi_msg msg = { .msg_iov = &iov, .desc = &desc, .iov_count = 1 };
	uint64_t one = 1;
	int rctx;

	pair_open(&p);
	buf_make(&p, &s, 64, true, FI_SEND);
	buf_make(&p, &r, 64, true, FI_RECV);
	buf_make(&p, &t, 64, true, FI_REMOTE_WRITE | FI_REMOTE_READ);
	pt_fill(s.bytes, 64, 3);
	iov = (struct iovec){ s.addr, 64 };
	desc = fi_mr_desc(s.mr);
	msg.addr = p.addr[1];
	cr_assert_eq(fi_recv(p.ep[1], r.addr, 64, fi_mr_desc(r.mr), FI_ADDR_UNSPEC, &rctx), 0);
	cr_assert_eq(fi_sendmsg(p.ep[0], &msg, FI_INJECT), 0);
	memset(s.bytes, 0, 64);	/* the buffer is the application's again */
	pair_ok(&p, 1, &rctx, FI_RECV);
	pair_ok(&p, 0, NULL, FI_SEND);	/* (fi_sendmsg completes, inject or not) */
	check(r.bytes, 64, 3);
	/* fi_inject and fi_tinject take no descriptor: braid asks the driver */
	pt_fill(s.bytes, 64, 6);
	memset(r.bytes, 0, 64);
	cr_assert_eq(fi_recv(p.ep[1], r.addr, 64, fi_mr_desc(r.mr), FI_ADDR_UNSPEC, &rctx), 0);
	cr_assert_eq(fi_inject(p.ep[0], s.addr, 64, p.addr[1]), 0);
	memset(s.bytes, 0, 64);
	pair_ok(&p, 1, &rctx, FI_RECV);
	check(r.bytes, 64, 6);
	pt_fill(s.bytes, 40, 7);
	memset(r.bytes, 0, 64);
	cr_assert_eq(fi_trecv(p.ep[1], r.addr, 64, fi_mr_desc(r.mr), FI_ADDR_UNSPEC, 5, 0, &rctx),
		     0);
	cr_assert_eq(fi_tinject(p.ep[0], s.addr, 40, p.addr[1], 5), 0);
	pair_ok(&p, 1, &rctx, FI_RECV);
	check(r.bytes, 40, 7);
	/* fi_inject_write and fi_inject_atomic likewise; a read back sees them */
	pt_fill(s.bytes, 64, 8);
	cr_assert_eq(fi_inject_write(p.ep[0], s.addr, 32, p.addr[1], (uint64_t)(uintptr_t)t.addr,
				     fi_mr_key(t.mr)), 0);
	memcpy(s.bytes, &one, 8);
	cr_assert_eq(fi_inject_atomic(p.ep[0], s.addr, 1, p.addr[1],
				      (uint64_t)(uintptr_t)t.addr + 32, fi_mr_key(t.mr), FI_UINT64,
				      FI_SUM), 0);
	cr_assert_eq(fi_read(p.ep[0], r.addr, 64, fi_mr_desc(r.mr), p.addr[1],
			     (uint64_t)(uintptr_t)t.addr, fi_mr_key(t.mr), &rctx), 0);
	pair_ok(&p, 0, &rctx, FI_READ);
	check(r.bytes, 32, 8);
	memcpy(&one, r.bytes + 32, 8);
	cr_assert_eq(one, 1);
	buf_free(&s);
	buf_free(&r);
	buf_free(&t);
	pair_close(&p);
}

Test(hmem, msg__truncated)
{
	struct pair p;
	struct buf s, r;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int sctx, rctx;

	pair_open(&p);
	buf_make(&p, &s, 600000, true, FI_SEND);
	buf_make(&p, &r, 400000, true, FI_RECV);
	pt_fill(s.bytes, s.len, 4);
	cr_assert_eq(fi_recv(p.ep[1], r.addr, r.len, fi_mr_desc(r.mr), FI_ADDR_UNSPEC, &rctx), 0);
	cr_assert_eq(fi_send(p.ep[0], s.addr, s.len, fi_mr_desc(s.mr), p.addr[1], &sctx), 0);
	cr_assert_eq(pair_wait(&p, 1, &e, &err), -FI_EAVAIL);
	cr_assert_eq(err.err, FI_ETRUNC);
	cr_assert_eq(err.op_context, &rctx);
	cr_assert_eq(err.len, r.len);
	cr_assert_eq(err.olen, s.len - r.len);
	cr_assert_eq(err.buf, r.addr);
	pair_ok(&p, 0, &sctx, FI_SEND);
	check(r.bytes, r.len, 4);	/* what fitted arrived */
	buf_free(&s);
	buf_free(&r);
	pair_close(&p);
}

Test(hmem, msg__cancel)
{
	struct pair p;
	struct buf r;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int rctx;

	pair_open(&p);
	buf_make(&p, &r, 1 * MIB, true, FI_RECV);
	cr_assert_eq(fi_trecv(p.ep[1], r.addr, r.len, fi_mr_desc(r.mr), FI_ADDR_UNSPEC, 9, 0,
			      &rctx), 0);
	cr_assert_eq(fi_cancel(&p.ep[1]->fid, &rctx), 0);
	cr_assert_eq(pair_wait(&p, 1, &e, &err), -FI_EAVAIL);
	cr_assert_eq(err.err, FI_ECANCELED);
	cr_assert_eq(err.op_context, &rctx);
	buf_free(&r);
	/* its staging came back: the endpoint still moves device memory */
	msg_once(&p, 2 * MIB, true, true, true);
	pair_close(&p);
}

/* what braid does not do with device memory says so */
Test(hmem, msg__refused)
{
	struct pair p;
	struct buf r;
	struct iovec iov;
	void *desc;
	struct fi_msg msg = { .msg_iov = &iov, .desc = &desc, .iov_count = 1,
			      .addr = FI_ADDR_UNSPEC };

	pair_open(&p);
	buf_make(&p, &r, 65536, true, FI_RECV);
	iov = (struct iovec){ r.addr, r.len };
	desc = fi_mr_desc(r.mr);
	cr_assert_eq(fi_recvmsg(p.ep[1], &msg, FI_MULTI_RECV), -FI_EOPNOTSUPP);
	/* a claim of a message looked at before */
	cr_assert_eq(fi_trecvmsg(p.ep[1], &(struct fi_msg_tagged){ .msg_iov = &iov, .desc = &desc,
				 .iov_count = 1, .addr = FI_ADDR_UNSPEC }, FI_CLAIM),
		     -FI_EOPNOTSUPP);
	buf_free(&r);
	pair_close(&p);
}

Test(hmem, msg__larger_than_staging)
{
	struct pair p;
	struct buf r;
	int rctx;

	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int rctx2;

	setenv("FI_BRAID_HMEM_STAGING", "1048576", 1);
	pair_open(&p);
	buf_make(&p, &r, 2 * MIB, true, FI_RECV);
	cr_assert_eq(fi_recv(p.ep[1], r.addr, r.len, fi_mr_desc(r.mr), FI_ADDR_UNSPEC, &rctx),
		     -FI_EMSGSIZE);
	/* staging held by a posted receive: another waits for it (-FI_EAGAIN) */
	cr_assert_eq(fi_recv(p.ep[1], r.addr, 700000, fi_mr_desc(r.mr), FI_ADDR_UNSPEC, &rctx), 0);
	cr_assert_eq(fi_recv(p.ep[1], r.addr, 700000, fi_mr_desc(r.mr), FI_ADDR_UNSPEC, &rctx2),
		     -FI_EAGAIN);
	cr_assert_eq(fi_cancel(&p.ep[1]->fid, &rctx), 0);
	cr_assert_eq(pair_wait(&p, 1, &e, &err), -FI_EAVAIL);
	cr_assert_eq(err.err, FI_ECANCELED);
	buf_free(&r);
	msg_once(&p, 1 * MIB, true, true, false);
	pair_close(&p);
}

/*
 * A device send far longer than the endpoint's staging goes round a ring
 * of it (the bytes the engine may still resend and two chunks); a write
 * likewise. A receive into device memory still takes its buffer's length.
 */
Test(hmem, msg__longer_than_staging_through_a_ring)
{
	struct pair p;

	setenv("FI_BRAID_HMEM_STAGING", "25165824", 1);	/* 24 MiB */
	pair_open(&p);
	msg_once(&p, 40 * MIB + 5, true, false, true);
	rma_once(&p, 30 * MIB + 3, true, false, true);
	cr_assert_eq(pt_stat(p.ep[0], "ep.hmem_d2h_bytes"), 70 * MIB + 8);
	pair_close(&p);
}

/* ---- failed copies ---- */

/* the copy into the receive buffer fails: the receive completes in error */
Test(hmem, fail__copy_to_device)
{
	struct pair p;
	struct buf s, r;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int sctx, rctx;

	pair_open(&p);
	buf_make(&p, &s, 100000, false, FI_SEND);
	buf_make(&p, &r, 100000, true, FI_RECV);
	fake.fail(0, 1);
	cr_assert_eq(fi_recv(p.ep[1], r.addr, r.len, fi_mr_desc(r.mr), FI_ADDR_UNSPEC, &rctx), 0);
	cr_assert_eq(fi_send(p.ep[0], s.addr, s.len, fi_mr_desc(s.mr), p.addr[1], &sctx), 0);
	cr_assert_eq(pair_wait(&p, 1, &e, &err), -FI_EAVAIL);
	cr_assert_eq(err.err, FI_EIO);
	cr_assert_eq(err.op_context, &rctx);
	pair_ok(&p, 0, &sctx, FI_SEND);
	fake.fail(0, 0);
	msg_once(&p, 100000, true, true, false);	/* the endpoint goes on */
	buf_free(&s);
	buf_free(&r);
	pair_close(&p);
}

/* a copy from the send buffer fails: at once (the call says so) or mid-message (its completion) */
Test(hmem, fail__copy_from_device)
{
	struct pair p;
	struct buf s, r;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int sctx, rctx;

	pair_open(&p);
	buf_make(&p, &s, 4 * MIB, true, FI_SEND);
	buf_make(&p, &r, 4 * MIB, false, FI_RECV);
	fake.fail(1, 0);
	cr_assert_eq(fi_send(p.ep[0], s.addr, s.len, fi_mr_desc(s.mr), p.addr[1], &sctx),
		     -FI_EIO);
	fake.fail(3, 0);
	cr_assert_eq(fi_recv(p.ep[1], r.addr, r.len, fi_mr_desc(r.mr), FI_ADDR_UNSPEC, &rctx), 0);
	cr_assert_eq(fi_send(p.ep[0], s.addr, s.len, fi_mr_desc(s.mr), p.addr[1], &sctx), 0);
	cr_assert_eq(pair_wait(&p, 0, &e, &err), -FI_EAVAIL);
	cr_assert_eq(err.err, FI_EIO);
	cr_assert_eq(err.op_context, &sctx);
	/* the receiver is told: its receive fails, nothing of the message delivered as good */
	cr_assert_eq(pair_wait(&p, 1, &e, &err), -FI_EAVAIL);
	cr_assert_eq(err.err, FI_EIO);
	cr_assert_eq(err.prov_errno, BRAID_PERR_SENDER_BAD);
	cr_assert_eq(err.op_context, &rctx);
	fake.fail(0, 0);
	msg_once(&p, 1 * MIB, true, false, false);	/* the pair goes on */
	buf_free(&s);
	buf_free(&r);
	pair_close(&p);
}

/* ---- RMA ---- */

static void rma_once(struct pair *p, size_t len, bool ldev, bool tdev, bool write)
{
	struct buf l, t;
	int ctx;

	buf_make(p, &l, len, ldev, write ? FI_WRITE : FI_READ);
	buf_make(p, &t, len, tdev, FI_REMOTE_READ | FI_REMOTE_WRITE);
	pt_fill(write ? l.bytes : t.bytes, len, (unsigned)len + 1);
	if (write)
		cr_assert_eq(fi_write(p->ep[0], l.addr, len, fi_mr_desc(l.mr), p->addr[1],
				      (uint64_t)(uintptr_t)t.addr, fi_mr_key(t.mr), &ctx), 0);
	else
		cr_assert_eq(fi_read(p->ep[0], l.addr, len, fi_mr_desc(l.mr), p->addr[1],
				     (uint64_t)(uintptr_t)t.addr, fi_mr_key(t.mr), &ctx), 0);
	pair_ok(p, 0, &ctx, write ? FI_WRITE : FI_READ);
	check(write ? t.bytes : l.bytes, len, (unsigned)len + 1);
	buf_free(&l);
	buf_free(&t);
}

static void rma_sizes(bool write)
{
	static const size_t sizes[] = { 8, 5000, 3 * MIB + 7 };

	each_side(rma_once, sizes, sizeof(sizes) / sizeof(sizes[0]), write);
}

Test(hmem, rma__write)
{
	rma_sizes(true);
}

Test(hmem, rma__read)
{
	rma_sizes(false);
}

/* a write into part of a device region changes that part only */
Test(hmem, rma__write_part)
{
	struct pair p;
	struct buf l, t;
	int ctx;

	pair_open(&p);
	buf_make(&p, &l, 1000, false, FI_WRITE);
	buf_make(&p, &t, 8192, true, FI_REMOTE_WRITE);
	pt_fill(t.bytes, t.len, 5);
	memset(l.bytes, 0xab, l.len);
	cr_assert_eq(fi_write(p.ep[0], l.addr, l.len, fi_mr_desc(l.mr), p.addr[1],
			      (uint64_t)(uintptr_t)t.addr + 3000, fi_mr_key(t.mr), &ctx), 0);
	pair_ok(&p, 0, &ctx, FI_WRITE);
	for (size_t i = 0; i < t.len; i++) {
		uint8_t want = i >= 3000 && i < 4000 ? 0xab :
			       (uint8_t)(5 * 29 + i * 13 + (i >> 9));

		cr_assert_eq(t.bytes[i], want, "byte %zu", i);
	}
	buf_free(&l);
	buf_free(&t);
	pair_close(&p);
}

/* ---- atomics ---- */

Test(hmem, atomic__device_either_side)
{
	struct pair p;
	struct buf opnd, res, cmp, t;
	uint64_t *o, *r, *c, *v;
	int ctx;

	pair_open(&p);
	buf_make(&p, &opnd, 4 * sizeof(uint64_t), true, FI_WRITE);
	buf_make(&p, &res, 4 * sizeof(uint64_t), true, FI_READ);
	buf_make(&p, &cmp, 4 * sizeof(uint64_t), false, FI_WRITE);
	buf_make(&p, &t, 4 * sizeof(uint64_t), true, FI_REMOTE_READ | FI_REMOTE_WRITE);
	o = (uint64_t *)opnd.bytes;
	r = (uint64_t *)res.bytes;
	c = (uint64_t *)cmp.bytes;
	v = (uint64_t *)t.bytes;
	for (int i = 0; i < 4; i++) {
		o[i] = 10 + i;
		v[i] = 1000 * (i + 1);
	}
	/* sum, no fetch */
	cr_assert_eq(fi_atomic(p.ep[0], opnd.addr, 4, fi_mr_desc(opnd.mr), p.addr[1],
			       (uint64_t)(uintptr_t)t.addr, fi_mr_key(t.mr), FI_UINT64, FI_SUM,
			       &ctx), 0);
	pair_ok(&p, 0, &ctx, FI_ATOMIC);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(v[i], 1000 * (i + 1) + 10 + i);
	/* fetch and sum */
	cr_assert_eq(fi_fetch_atomic(p.ep[0], opnd.addr, 4, fi_mr_desc(opnd.mr), res.addr,
				     fi_mr_desc(res.mr), p.addr[1], (uint64_t)(uintptr_t)t.addr,
				     fi_mr_key(t.mr), FI_UINT64, FI_SUM, &ctx), 0);
	pair_ok(&p, 0, &ctx, FI_ATOMIC);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(r[i], 1000 * (i + 1) + 10 + i);
		cr_assert_eq(v[i], 1000 * (i + 1) + 2 * (10 + i));
	}
	/* compare and swap: elements 0 and 2 match */
	for (int i = 0; i < 4; i++) {
		c[i] = i % 2 ? 0 : v[i];
		o[i] = 7 + i;
	}
	cr_assert_eq(fi_compare_atomic(p.ep[0], opnd.addr, 4, fi_mr_desc(opnd.mr), cmp.addr,
				       fi_mr_desc(cmp.mr), res.addr, fi_mr_desc(res.mr), p.addr[1],
				       (uint64_t)(uintptr_t)t.addr, fi_mr_key(t.mr), FI_UINT64,
				       FI_CSWAP, &ctx), 0);
	pair_ok(&p, 0, &ctx, FI_ATOMIC);
	for (int i = 0; i < 4; i++) {
		uint64_t old = 1000 * (i + 1) + 2 * (10 + i);

		cr_assert_eq(r[i], old);
		cr_assert_eq(v[i], i % 2 ? old : (uint64_t)(7 + i));
	}
	buf_free(&opnd);
	buf_free(&res);
	buf_free(&cmp);
	buf_free(&t);
	pair_close(&p);
}

/* ---- FI_OPT_CUDA_API_PERMITTED (fi_endpoint(3)) ---- */

Test(hmem, opt__cuda_api_permitted)
{
	struct pair p;
	bool v;

	pair_open(&p);
	v = true;
	cr_assert_eq(fi_setopt(&p.ep[0]->fid, FI_OPT_ENDPOINT, BRAID_OPT_CUDA_API_PERMITTED, &v,
			       sizeof(v)), 0);
	/* braid moves device memory by CUDA copies only: it cannot do without them */
	v = false;
	cr_assert_eq(fi_setopt(&p.ep[0]->fid, FI_OPT_ENDPOINT, BRAID_OPT_CUDA_API_PERMITTED, &v,
			       sizeof(v)), -FI_EOPNOTSUPP);
	cr_assert_eq(fi_setopt(&p.ep[0]->fid, FI_OPT_ENDPOINT, BRAID_OPT_CUDA_API_PERMITTED, &v,
			       1000), -FI_EINVAL);
	msg_once(&p, 4096, true, true, false);	/* the endpoint is as it was */
	pair_close(&p);
	/* an endpoint without FI_HMEM makes no CUDA call: false holds */
	pair_open_caps(&p, FI_MSG | FI_TAGGED);
	cr_assert_eq(fi_setopt(&p.ep[0]->fid, FI_OPT_ENDPOINT, BRAID_OPT_CUDA_API_PERMITTED, &v,
			       sizeof(v)), 0);
	pair_close(&p);
}

Test(hmem, opt__cuda_api_permitted_without_driver)
{
	struct pt_dom d;
	struct fid_ep *ep;
	struct fi_info *info;
	bool v = false;

	setenv("FI_BRAID_CUDA_LIB", "/nonexistent/libcuda.so.1", 1);
	memset(&d, 0, sizeof(d));
	cr_assert_eq(getinfo(FI_MSG, 0, &info), 0);
	cr_assert_eq(fi_fabric(info->fabric_attr, &d.fabric, NULL), 0);
	cr_assert_eq(fi_domain(d.fabric, info, &d.domain, NULL), 0);
	cr_assert_eq(fi_endpoint(d.domain, info, &ep, NULL), 0);
	cr_assert_eq(fi_setopt(&ep->fid, FI_OPT_ENDPOINT, BRAID_OPT_CUDA_API_PERMITTED, &v,
			       sizeof(v)), -FI_EINVAL);
	cr_assert_eq(fi_close(&ep->fid), 0);
	d.info = info;
	pt_dom_close(&d);
}
