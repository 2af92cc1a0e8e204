/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_hmem.c: device buffers for the benchmarks (--hmem cuda): the CUDA driver loaded at run time, as braid loads it. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_hmem.h"

/*
 * The driver entry points a benchmark needs, declared here (no cuda.h):
 * the library FI_BRAID_CUDA_LIB names (braid's stand-in in its tests) or
 * libcuda.so.1, the first device's primary context made current. A
 * process initialises the driver itself: CUDA does not survive fork(),
 * so the first buffer, not the option, loads it.
 */
typedef int cu_result;
typedef unsigned long long cu_ptr;

static struct {
	cu_result (*init)(unsigned int flags);
	cu_result (*device_get)(int *dev, int ordinal);
	cu_result (*primary_ctx_retain)(void **ctx, int dev);
	cu_result (*ctx_set_current)(void *ctx);
	cu_result (*mem_alloc)(cu_ptr *p, size_t len);
	cu_result (*mem_free)(cu_ptr p);
	cu_result (*htod)(cu_ptr dst, const void *src, size_t len);
	cu_result (*dtoh)(void *dst, cu_ptr src, size_t len);
	bool loaded;
} cu;

static void cu_fail(const char *what, int r)
{
	fprintf(stderr, "bench: CUDA driver: %s failed (%d)\n", what, r);
	exit(BENCH_EXIT_SETUP);
}

static void *sym(void *lib, const char *name)
{
	void *f = dlsym(lib, name);

	if (!f) {
		fprintf(stderr, "bench: the CUDA driver lacks %s\n", name);
		exit(BENCH_EXIT_SETUP);
	}
	return f;
}

static void cu_load(void)
{
	const char *path = getenv("FI_BRAID_CUDA_LIB");
	void *lib, *ctx = NULL;
	int dev = 0, r;

	if (cu.loaded)
		return;
	if (!path || !*path)
		path = "libcuda.so.1";
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "bench: %s: %s\n", path, dlerror());
		exit(BENCH_EXIT_SETUP);
	}
	*(void **)&cu.init = sym(lib, "cuInit");
	*(void **)&cu.device_get = sym(lib, "cuDeviceGet");
	*(void **)&cu.primary_ctx_retain = sym(lib, "cuDevicePrimaryCtxRetain");
	*(void **)&cu.ctx_set_current = sym(lib, "cuCtxSetCurrent");
	*(void **)&cu.mem_alloc = sym(lib, "cuMemAlloc_v2");
	*(void **)&cu.mem_free = sym(lib, "cuMemFree_v2");
	*(void **)&cu.htod = sym(lib, "cuMemcpyHtoD_v2");
	*(void **)&cu.dtoh = sym(lib, "cuMemcpyDtoH_v2");
	if ((r = cu.init(0)))
		cu_fail("cuInit", r);
	if ((r = cu.device_get(&dev, 0)))
		cu_fail("cuDeviceGet", r);
	if ((r = cu.primary_ctx_retain(&ctx, dev)))
		cu_fail("cuDevicePrimaryCtxRetain", r);
	if ((r = cu.ctx_set_current(ctx)))
		cu_fail("cuCtxSetCurrent", r);
	cu.loaded = true;
}

static void *cuda_alloc(size_t len)
{
	cu_ptr p = 0;
	int r;

	cu_load();
	if ((r = cu.mem_alloc(&p, len ? len : 1)))
		cu_fail("cuMemAlloc", r);
	return (void *)(uintptr_t)p;
}

static void cuda_release(void *buf)
{
	cu.mem_free((cu_ptr)(uintptr_t)buf);
}

static void cuda_put(void *dst, const void *src, size_t len)
{
	int r;

	if (len && (r = cu.htod((cu_ptr)(uintptr_t)dst, src, len)))
		cu_fail("cuMemcpyHtoD", r);
}

static void cuda_get(void *dst, const void *src, size_t len)
{
	int r;

	if (len && (r = cu.dtoh(dst, (cu_ptr)(uintptr_t)src, len)))
		cu_fail("cuMemcpyDtoH", r);
}

static const struct bench_mem cuda_mem = {
	.caps = FI_HMEM,
	.mr_mode = FI_MR_HMEM,
	.iface = FI_HMEM_CUDA,
	.alloc = cuda_alloc,
	.release = cuda_release,
	.put = cuda_put,
	.get = cuda_get,
};

const struct bench_mem *bench_hmem_named(const char *name)
{
	return !strcmp(name, "cuda") ? &cuda_mem : NULL;
}
