/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_hmem.c: device memory (FI_HMEM_CUDA): the CUDA driver loaded at run time, each endpoint's pinned host staging, and the copies between the two. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "braid.h"

/*
 * The few CUDA driver API types and entry points braid uses, declared
 * here: braid builds without cuda.h and runs without libcuda. The values
 * are the driver API's (cuda.h), which NVIDIA keeps stable; the versioned
 * symbols are the ones cuda.h maps the plain names to.
 */
typedef int cu_result;				/* CUresult; 0: CUDA_SUCCESS */
typedef unsigned long long cu_ptr;		/* CUdeviceptr */
typedef struct cu_ctx_st *cu_ctx;		/* CUcontext */
typedef struct cu_stream_st *cu_stream;		/* CUstream */

#define CU_POINTER_ATTRIBUTE_CONTEXT		1
#define CU_POINTER_ATTRIBUTE_MEMORY_TYPE	2
#define CU_MEMORYTYPE_DEVICE			2
#define CU_MEMHOSTREGISTER_PORTABLE		1
#define CU_STREAM_NON_BLOCKING			1

static struct {
	cu_result (*init)(unsigned int flags);
	cu_result (*device_get_count)(int *count);
	cu_result (*pointer_get_attribute)(void *data, int attr, cu_ptr ptr);
	cu_result (*memcpy_dtoh)(void *dst, cu_ptr src, size_t len);
	cu_result (*memcpy_htod)(cu_ptr dst, const void *src, size_t len);
	cu_result (*memcpy_dtoh_async)(void *dst, cu_ptr src, size_t len, cu_stream s);
	cu_result (*memcpy_htod_async)(cu_ptr dst, const void *src, size_t len, cu_stream s);
	cu_result (*stream_create)(cu_stream *s, unsigned int flags);
	cu_result (*stream_destroy)(cu_stream s);
	cu_result (*stream_synchronize)(cu_stream s);
	cu_result (*mem_host_register)(void *p, size_t len, unsigned int flags);
	cu_result (*mem_host_unregister)(void *p);
	cu_result (*ctx_push)(cu_ctx ctx);
	cu_result (*ctx_pop)(cu_ctx *ctx);
} cu;

/* the entry points, by the names libcuda exports them under */
static const struct {
	const char *name;
	size_t off;
} cu_syms[] = {
#define CU_SYM(field, sym) { sym, offsetof(__typeof__(cu), field) }
	CU_SYM(init, "cuInit"),
	CU_SYM(device_get_count, "cuDeviceGetCount"),
	CU_SYM(pointer_get_attribute, "cuPointerGetAttribute"),
	CU_SYM(memcpy_dtoh, "cuMemcpyDtoH_v2"),
	CU_SYM(memcpy_htod, "cuMemcpyHtoD_v2"),
	CU_SYM(memcpy_dtoh_async, "cuMemcpyDtoHAsync_v2"),
	CU_SYM(memcpy_htod_async, "cuMemcpyHtoDAsync_v2"),
	CU_SYM(stream_create, "cuStreamCreate"),
	CU_SYM(stream_destroy, "cuStreamDestroy_v2"),
	CU_SYM(stream_synchronize, "cuStreamSynchronize"),
	CU_SYM(mem_host_register, "cuMemHostRegister_v2"),
	CU_SYM(mem_host_unregister, "cuMemHostUnregister"),
	CU_SYM(ctx_push, "cuCtxPushCurrent_v2"),
	CU_SYM(ctx_pop, "cuCtxPopCurrent_v2"),
#undef CU_SYM
};

static pthread_once_t cu_once = PTHREAD_ONCE_INIT;
static bool cu_ready;

/*
 * Load the driver once: FI_BRAID_CUDA_LIB or libcuda.so.1, every entry
 * point, cuInit, and at least one device. The library stays loaded for the
 * life of the process (a CUDA driver is not made to be unloaded).
 */
static void cu_load(void)
{
	const char *path = braid_cfg.cuda_lib ? braid_cfg.cuda_lib : "libcuda.so.1";
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	int n = 0;
	size_t i;

	if (!lib) {
		BRAID_INFO(FI_LOG_CORE, "FI_HMEM not offered: %s: %s\n", path, dlerror());
		return;
	}
	for (i = 0; i < sizeof(cu_syms) / sizeof(cu_syms[0]); i++) {
		void *f = dlsym(lib, cu_syms[i].name);

		if (!f) {
			BRAID_WARN(FI_LOG_CORE, "FI_HMEM not offered: %s lacks %s\n", path,
				   cu_syms[i].name);
			goto fail;
		}
		memcpy((char *)&cu + cu_syms[i].off, &f, sizeof(f));
	}
	if (cu.init(0) || cu.device_get_count(&n) || n < 1) {
		BRAID_INFO(FI_LOG_CORE, "FI_HMEM not offered: %s: no CUDA device\n", path);
		goto fail;
	}
	cu_ready = true;
	return;
fail:
	memset(&cu, 0, sizeof(cu));
	dlclose(lib);
}

bool braid_hmem_available(void)
{
	pthread_once(&cu_once, cu_load);
	return cu_ready;
}

/* ---- copies ---- */

/*
 * One copy between device memory of context @ctx and host memory: on the
 * endpoint's stream when it belongs to @ctx and @async (the caller syncs
 * the stream before it reads or reuses the host side), else at once.
 * @to_dev: host @host to device @dev; else the other way.
 */
static int cu_copy(struct braid_hmem_ep *h, void *ctx, void *host, uint64_t dev, size_t len,
		   bool to_dev, bool async)
{
	cu_ctx popped;
	cu_result r;

	if (cu.ctx_push((cu_ctx)ctx))
		return -FI_EIO;
	if (async && h && h->stream && h->stream_ctx == ctx)
		r = to_dev ? cu.memcpy_htod_async(dev, host, len, (cu_stream)h->stream) :
			     cu.memcpy_dtoh_async(host, dev, len, (cu_stream)h->stream);
	else
		r = to_dev ? cu.memcpy_htod(dev, host, len) : cu.memcpy_dtoh(host, dev, len);
	cu.ctx_pop(&popped);
	if (r)
		return -FI_EIO;
	if (h) {
		if (to_dev) {
			h->stats->hmem_h2d++;
			h->stats->hmem_h2d_bytes += len;
		} else {
			h->stats->hmem_d2h++;
			h->stats->hmem_d2h_bytes += len;
		}
	}
	return 0;
}

/* Wait for the endpoint's stream: every copy issued on it is done. */
static int cu_sync(struct braid_hmem_ep *h)
{
	cu_ctx popped;
	cu_result r;

	if (!h->stream)
		return 0;
	if (cu.ctx_push((cu_ctx)h->stream_ctx))
		return -FI_EIO;
	r = cu.stream_synchronize((cu_stream)h->stream);
	cu.ctx_pop(&popped);
	return r ? -FI_EIO : 0;
}

/*
 * Copy [@off, @off + @len) of @b between its application buffers and its
 * staging: @to_user, staging -> buffers (a receive, a read); else buffers
 * -> staging. Host entries of the buffers are copied with memcpy.
 */
static int buf_copy(struct braid_hmem_ep *h, struct braid_hmem_buf *b, uint64_t off, uint64_t len,
		    bool to_user, bool async)
{
	uint64_t pos = 0, end = off + len;
	size_t i;
	int ret = 0;

	for (i = 0; i < b->count && pos < end && !ret; i++) {
		uint64_t lo = pos > off ? pos : off, hi = pos + b->user[i].iov_len;
		uint8_t *user = b->user[i].iov_base;

		if (hi > end)
			hi = end;
		if (lo < hi) {
			uint8_t *stage = b->stage + (b->ring ? lo % b->ring : lo);
			size_t n = (size_t)(hi - lo);

			if (!b->ctx[i] && to_user)
				memcpy(user + (lo - pos), stage, n);
			else if (!b->ctx[i])
				memcpy(stage, user + (lo - pos), n);
			else
				ret = cu_copy(h, b->ctx[i], stage,
					      (uint64_t)(uintptr_t)(user + (lo - pos)), n, to_user,
					      async);
		}
		pos += b->user[i].iov_len;
	}
	return ret;
}

/*
 * Pinned host memory of @len bytes for the copy engine, under context
 * @ctx: anonymous pages registered with the driver (cuMemHostRegister),
 * ordinary memory otherwise (the UDP wire can lend it to a socket,
 * protocol.md §4.2). NULL when either fails.
 */
static uint8_t *pinned_alloc(void *ctx, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cu_ctx popped;
	cu_result r = 1;

	if (p == MAP_FAILED)
		return NULL;
	if (!cu.ctx_push((cu_ctx)ctx)) {
		r = cu.mem_host_register(p, len, CU_MEMHOSTREGISTER_PORTABLE);
		cu.ctx_pop(&popped);
	}
	if (r) {
		munmap(p, len);
		return NULL;
	}
	return p;
}

static void pinned_free(void *ctx, uint8_t *p, size_t len)
{
	cu_ctx popped;

	if (!cu.ctx_push((cu_ctx)ctx)) {
		cu.mem_host_unregister(p);
		cu.ctx_pop(&popped);
	}
	munmap(p, len);
}

/* ---- regions ---- */

int braid_hmem_mr_open(struct braid_mr *mr, const struct fi_mr_attr *attr)
{
	size_t i;

	mr->iface = attr->iface;
	if (attr->iface == FI_HMEM_SYSTEM)
		return 0;
	if (attr->iface != FI_HMEM_CUDA)
		return -FI_ENOSYS;
	if (!(mr->domain->info->caps & FI_HMEM) || !braid_hmem_available())
		return -FI_EOPNOTSUPP;
	for (i = 0; i < attr->iov_count; i++) {
		cu_ptr p = (cu_ptr)(uintptr_t)attr->mr_iov[i].iov_base;
		unsigned int type = 0;
		cu_ctx ctx = NULL;

		if (!attr->mr_iov[i].iov_len)
			continue;
		/* device memory of a context: anything else is not FI_HMEM_CUDA memory */
		if (cu.pointer_get_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) ||
		    type != CU_MEMORYTYPE_DEVICE ||
		    cu.pointer_get_attribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, p) || !ctx ||
		    (mr->cu_ctx && mr->cu_ctx != ctx))
			return -FI_EINVAL;
		mr->cu_ctx = ctx;
	}
	if (!mr->cu_ctx)
		return -FI_EINVAL;
	/* a target of RMA and atomics: the peers' accesses go through a host shadow */
	if ((attr->access & (FI_REMOTE_READ | FI_REMOTE_WRITE)) && attr->iov_count == 1 &&
	    attr->mr_iov[0].iov_len) {
		mr->shadow = pinned_alloc(mr->cu_ctx, attr->mr_iov[0].iov_len);
		if (!mr->shadow)
			return -FI_ENOMEM;
	}
	return 0;
}

void braid_hmem_mr_close(struct braid_mr *mr)
{
	if (mr->shadow)
		pinned_free(mr->cu_ctx, mr->shadow, mr->iov[0].iov_len);
	mr->shadow = NULL;
}

int braid_hmem_mr_sync(struct braid_mr *mr, uint64_t off, size_t len, bool to_dev)
{
	if (!len)
		return 0;
	return cu_copy(NULL, mr->cu_ctx, mr->shadow + off,
		       (uint64_t)(uintptr_t)mr->iov[0].iov_base + off, len, to_dev, false);
}

void *braid_hmem_probe(const struct braid_ep *ep, const void *buf, size_t len,
		       struct braid_mr *probe)
{
	cu_ptr p = (cu_ptr)(uintptr_t)buf;
	unsigned int type = 0;
	cu_ctx ctx = NULL;

	if (!(ep->info->caps & FI_HMEM) || !len || !braid_hmem_available() ||
	    cu.pointer_get_attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) ||
	    type != CU_MEMORYTYPE_DEVICE ||
	    cu.pointer_get_attribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, p) || !ctx)
		return NULL;
	memset(probe, 0, sizeof(*probe));
	probe->iface = FI_HMEM_CUDA;
	probe->cu_ctx = ctx;
	return probe;
}

/* ---- an endpoint's staging ---- */

/* The arena, the records and the stream, at the endpoint's first device operation. */
static int ep_start(struct braid_hmem_ep *h, void *ctx)
{
	cu_ctx popped;
	uint32_t i;
	int ret;

	h->ops = calloc(h->nops, sizeof(*h->ops));
	if (!h->ops)
		return -FI_ENOMEM;
	ret = braid_extents_construct(&h->ext, h->arena_size, 64, h->nops * 2);
	if (ret)
		goto err_ops;
	h->arena = pinned_alloc(ctx, h->arena_size);
	if (!h->arena) {
		ret = -FI_ENOMEM;
		goto err_ext;
	}
	if (!cu.ctx_push((cu_ctx)ctx)) {
		if (cu.stream_create((cu_stream *)&h->stream, CU_STREAM_NON_BLOCKING))
			h->stream = NULL;	/* copies then go at once, one after the other */
		cu.ctx_pop(&popped);
	}
	h->stream_ctx = ctx;
	for (i = 0; i < h->nops; i++)
		h->ops[i].next = i + 1;
	h->free = 0;
	return 0;
err_ext:
	braid_extents_destruct(&h->ext);
err_ops:
	free(h->ops);
	h->ops = NULL;
	return ret;
}

void braid_hmem_ep_construct(struct braid_hmem_ep *h, struct braid_ep_stats *stats, size_t nops)
{
	memset(h, 0, sizeof(*h));
	h->stats = stats;
	h->nops = (uint32_t)nops;
	h->arena_size = braid_cfg.hmem_staging;
	h->chunk = braid_cfg.hmem_chunk;
}

void braid_hmem_ep_destruct(struct braid_hmem_ep *h)
{
	if (!h->ops)
		return;
	if (h->stream) {
		cu_ctx popped;

		if (!cu.ctx_push((cu_ctx)h->stream_ctx)) {
			cu.stream_synchronize((cu_stream)h->stream);
			cu.stream_destroy((cu_stream)h->stream);
			cu.ctx_pop(&popped);
		}
	}
	pinned_free(h->stream_ctx, h->arena, h->arena_size);
	braid_extents_destruct(&h->ext);
	free(h->ops);
	h->ops = NULL;
}

/* the device context of @desc (a region's descriptor), NULL for host memory */
static void *desc_ctx(void *desc)
{
	const struct braid_mr *mr = desc;

	return mr && mr->iface == FI_HMEM_CUDA ? mr->cu_ctx : NULL;
}

/*
 * @b: @iov[0..@count) with @desc, and staging for it when an entry is
 * device memory: as long as the buffers, or a ring of @ring bytes (a whole
 * number of chunks) when they are longer (0: never a ring).
 */
static int buf_take(struct braid_hmem_ep *h, struct braid_hmem_buf *b, const struct iovec *iov,
		    void **desc, size_t count, uint64_t ring)
{
	bool dev = false;
	int64_t off;
	size_t i;

	b->count = count;
	b->len = 0;
	for (i = 0; i < count; i++) {
		b->user[i] = iov[i];
		b->ctx[i] = desc ? desc_ctx(desc[i]) : NULL;
		b->len += iov[i].iov_len;
		dev |= b->ctx[i] != NULL;
	}
	b->stage = NULL;
	b->ring = ring && b->len > ring ? ring : 0;
	b->stage_len = b->ring ? b->ring : b->len ? b->len : 1;
	if (!dev)
		return 0;
	if (b->stage_len > h->arena_size)
		return -FI_EMSGSIZE;
	off = braid_extents_alloc(&h->ext, b->stage_len);
	if (off < 0)
		return -FI_EAGAIN;	/* staging in use by operations in flight */
	b->stage = h->arena + off;
	b->siov.iov_base = b->stage;
	b->siov.iov_len = b->ring ? b->ring : b->len;
	return 0;
}

static void buf_give(struct braid_hmem_ep *h, struct braid_hmem_buf *b)
{
	if (b->stage)
		braid_extents_free(&h->ext, (uint64_t)(b->stage - h->arena), b->stage_len);
	b->stage = NULL;
}

/* the context of the first device buffer of @req (it starts the endpoint's staging) */
static void *req_ctx(const struct braid_hmem_req *req)
{
	void *ctx = NULL;
	size_t i;

	for (i = 0; req->in_desc && i < req->in_count && !ctx; i++)
		ctx = desc_ctx(req->in_desc[i]);
	for (i = 0; req->out_desc && i < req->out_count && !ctx; i++)
		ctx = desc_ctx(req->out_desc[i]);
	return ctx;
}

struct braid_hmem_op *braid_hmem_op_take(struct braid_hmem_ep *h, const struct braid_hmem_req *req,
					 int *err)
{
	struct braid_hmem_op *op;
	int ret;

	if (!h->ops && (ret = ep_start(h, req_ctx(req)))) {
		*err = ret;
		return NULL;
	}
	if (h->free >= h->nops) {
		*err = -FI_EAGAIN;
		return NULL;
	}
	op = &h->ops[h->free];
	ret = buf_take(h, &op->in, req->in, req->in_desc, req->in_count, req->in_ring);
	if (!ret) {
		ret = buf_take(h, &op->out, req->out, req->out_desc, req->out_count, 0);
		if (ret)
			buf_give(h, &op->in);
	}
	if (ret) {
		*err = ret;
		return NULL;
	}
	h->free = op->next;
	op->context = req->context;
	op->staged = op->issued = 0;
	op->err = 0;
	op->in_use = true;
	*err = 0;
	return op;
}

void braid_hmem_op_give(struct braid_hmem_ep *h, struct braid_hmem_op *op)
{
	/* a copy still under way into its staging (an operation that failed before all of
	 * it was cut) must end before another operation has that staging */
	if (op->issued > op->staged)
		cu_sync(h);
	buf_give(h, &op->in);
	buf_give(h, &op->out);
	op->in_use = false;
	op->next = h->free;
	h->free = (uint32_t)(op - h->ops);
}

int braid_hmem_op_stage_all(struct braid_hmem_ep *h, struct braid_hmem_op *op)
{
	int ret;

	if (!op->in.stage)
		return 0;
	ret = buf_copy(h, &op->in, 0, op->in.len, false, false);
	op->staged = op->issued = op->in.len;
	return ret;
}

/* Issue the copy of the chunk at op->issued into staging (on the stream where it can). */
static void stage_issue(struct braid_hmem_ep *h, struct braid_hmem_op *op)
{
	uint64_t n = op->in.len - op->issued;

	if (n > h->chunk)
		n = h->chunk;
	if (!op->err && buf_copy(h, &op->in, op->issued, n, false, true))
		op->err = FI_EIO;
	op->issued += n;
}

int braid_hmem_op_stage_first(struct braid_hmem_ep *h, struct braid_hmem_op *op)
{
	if (op->in.len <= h->chunk)
		return braid_hmem_op_stage_all(h, op);
	stage_issue(h, op);	/* under way while the call returns; the engine waits for it */
	return op->err ? -op->err : 0;
}

/*
 * The engine's hook (braid_rd_stage_fn): the chunks up to @off + @len wait
 * for their copies, and the copy of the next chunk is issued, so that it
 * runs on the copy engine while these are sent. A copy that failed leaves
 * zeros, sent marked BAD (a send's receive fails FI_EIO instead of taking
 * them); the operation completes with FI_EIO (braid_hmem_comp).
 */
uint64_t braid_hmem_stage(void *ctx, void *op_context, uint64_t off, uint64_t len)
{
	struct braid_hmem_ep *h = ctx;
	struct braid_hmem_op *op = op_context;
	uint64_t end = off + len;

	if (off)
		h->stats->hmem_stage_late++;	/* its first packets left before this chunk */
	while (op->staged < end) {
		if (op->issued <= op->staged)
			stage_issue(h, op);
		if (cu_sync(h) && !op->err)
			op->err = FI_EIO;
		op->staged = op->issued;
	}
	if (op->issued < op->in.len)
		stage_issue(h, op);
	if (op->err)
		memset(op->in.stage, 0, op->in.stage_len);
	/* (a send's packets from here on go marked BAD: its receive fails, §4.2) */
	return op->err ? BRAID_RD_STAGE_FAILED : op->staged;
}

/*
 * A completion of an operation that went through staging: results copied
 * to the device (a receive's delivered bytes, a read's, fetched values), the
 * staging given back, the application's context and buffer put back.
 */
void braid_hmem_comp(struct braid_hmem_ep *h, struct braid_hmem_op *op, struct braid_rd_comp *c)
{
	if (op->out.stage) {
		uint64_t n = (c->flags & BRAID_RD_COMP_RECV) ? c->len : op->out.len;
		uint64_t off;

		/* (a truncated message delivered what fitted) */
		if (!c->err || c->err == FI_ETRUNC) {
			for (off = 0; off < n && !op->err; off += h->chunk) {
				uint64_t k = n - off < h->chunk ? n - off : h->chunk;

				if (buf_copy(h, &op->out, off, k, true, true))
					op->err = FI_EIO;
			}
			if (cu_sync(h) && !op->err)
				op->err = FI_EIO;
		}
		if (c->buf == op->out.stage)
			c->buf = op->out.user[0].iov_base;
	}
	if (op->err && !c->err) {
		c->err = op->err;
		c->prov_errno = BRAID_PERR_HMEM_COPY;
		c->olen = 0;
	}
	c->context = op->context;
	braid_hmem_op_give(h, op);
}

struct braid_hmem_op *braid_hmem_op_find(struct braid_hmem_ep *h, void *context)
{
	uint32_t i;

	for (i = 0; h->ops && i < h->nops; i++)
		if (h->ops[i].in_use && h->ops[i].context == context)
			return &h->ops[i];
	return NULL;
}
