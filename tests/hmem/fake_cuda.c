/* SPDX-License-Identifier: BSD-2-Clause */
/* fake_cuda.c: a stand-in CUDA driver for tests: device memory the CPU cannot touch, copies counted, failures on request. */
/*
 * libbraid_fakecuda.so exports the CUDA driver entry points braid loads
 * (FI_BRAID_CUDA_LIB names it) and the few a test program needs to
 * allocate and fill device buffers. Device memory is address space
 * reserved PROT_NONE: braid reading or writing it directly, instead of
 * through a copy, crashes the test. The bytes live in a hidden mapping
 * that the copy functions translate to. Nothing here is installed.
 *
 * Set in the environment before the driver is first used:
 *   FAKECUDA_INIT_FAIL=1	cuInit fails (CUDA_ERROR_NO_DEVICE)
 *   FAKECUDA_DEVICES=N		cuDeviceGetCount reports N (default 1)
 *   FAKECUDA_FAIL_D2H=N	the Nth device-to-host copy from then on fails (1: the next)
 *   FAKECUDA_FAIL_H2D=N	likewise host-to-device
 * fakecuda_fail() sets the last two at run time; fakecuda_stats() reads
 * the counters; fakecuda_host() gives a test the hidden bytes of a device
 * address (uncounted).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

typedef int cu_result;
typedef unsigned long long cu_ptr;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_CONTEXT = 201,
	CUDA_ERROR_ILLEGAL_ADDRESS = 700,
};

#define FAKE_SPACE	(1ULL << 32)	/* device address space: 4 GiB reserved, pages taken as used */

/** struct fakecuda_stats - what the driver was asked to do (fakecuda_stats()). */
struct fakecuda_stats {
	uint64_t d2h, d2h_bytes, h2d, h2d_bytes;	/* copies made, either way */
	uint64_t failed;				/* copies made to fail */
	uint64_t pinned, pushes;		/* host ranges registered now, context pushes */
};

static struct {
	pthread_mutex_t lock;
	uint8_t *dev;		/* the reserved range (PROT_NONE) */
	uint8_t *shadow;	/* its bytes */
	uint64_t next;		/* bump allocator */
	int live;		/* allocations not freed (all freed: the range is reused) */
	bool initialized;
	struct fakecuda_stats st;
	_Atomic long fail_d2h, fail_h2d;	/* countdown to a failing copy; 0: none */
} fake = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int fake_ctx_obj, fake_stream_obj;

static long env_long(const char *name, long dflt)
{
	const char *v = getenv(name);

	return v && *v ? strtol(v, NULL, 10) : dflt;
}

__attribute__((constructor)) static void fake_start(void)
{
	fake.dev = mmap(NULL, FAKE_SPACE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			-1, 0);
	/* (made writable as allocations take it: nothing is committed up front) */
	fake.shadow = mmap(NULL, FAKE_SPACE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			   -1, 0);
	if (fake.dev == MAP_FAILED || fake.shadow == MAP_FAILED)
		abort();
	fake.fail_d2h = env_long("FAKECUDA_FAIL_D2H", 0);
	fake.fail_h2d = env_long("FAKECUDA_FAIL_H2D", 0);
}

/* the hidden bytes of [@p, @p + @len) of device memory, or NULL if it is not all device memory */
static uint8_t *shadow_of(cu_ptr p, size_t len)
{
	uint64_t base = (uint64_t)(uintptr_t)fake.dev;

	if (p < base || p - base > fake.next || len > fake.next - (p - base))
		return NULL;
	return fake.shadow + (p - base);
}

/* whether this copy is the one asked to fail */
static bool copy_fails(_Atomic long *countdown)
{
	long v = atomic_load(countdown);

	while (v > 0 && !atomic_compare_exchange_weak(countdown, &v, v - 1))
		;
	if (v == 1) {
		pthread_mutex_lock(&fake.lock);
		fake.st.failed++;
		pthread_mutex_unlock(&fake.lock);
		return true;
	}
	return false;
}

FAKE_EXPORT cu_result cuInit(unsigned int flags)
{
	if (flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (env_long("FAKECUDA_INIT_FAIL", 0))
		return CUDA_ERROR_NO_DEVICE;
	fake.initialized = true;
	return CUDA_SUCCESS;
}

FAKE_EXPORT cu_result cuDeviceGetCount(int *count)
{
	if (!fake.initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	*count = (int)env_long("FAKECUDA_DEVICES", 1);
	return CUDA_SUCCESS;
}

FAKE_EXPORT cu_result cuDeviceGet(int *dev, int ordinal)
{
	if (!fake.initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (ordinal < 0 || ordinal >= env_long("FAKECUDA_DEVICES", 1))
		return CUDA_ERROR_INVALID_VALUE;
	*dev = ordinal;
	return CUDA_SUCCESS;
}

FAKE_EXPORT cu_result cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
	(void)dev;
	*ctx = &fake_ctx_obj;
	return CUDA_SUCCESS;
}

FAKE_EXPORT cu_result cuDevicePrimaryCtxRelease_v2(int dev)
{
	(void)dev;
	return CUDA_SUCCESS;
}

FAKE_EXPORT cu_result cuCtxSetCurrent(void *ctx)
{
	return ctx && ctx != &fake_ctx_obj ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}

FAKE_EXPORT cu_result cuCtxPushCurrent_v2(void *ctx)
{
	if (ctx != &fake_ctx_obj)
		return CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&fake.lock);
	fake.st.pushes++;
	pthread_mutex_unlock(&fake.lock);
	return CUDA_SUCCESS;
}

FAKE_EXPORT cu_result cuCtxPopCurrent_v2(void **ctx)
{
	if (ctx)
		*ctx = &fake_ctx_obj;
	return CUDA_SUCCESS;
}

FAKE_EXPORT cu_result cuMemAlloc_v2(cu_ptr *p, size_t len)
{
	uint64_t need = (len + 4095) & ~4095ULL;

	if (!fake.initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (!len)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&fake.lock);
	if (need > FAKE_SPACE - fake.next) {
		pthread_mutex_unlock(&fake.lock);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (mprotect(fake.shadow + fake.next, need, PROT_READ | PROT_WRITE)) {
		pthread_mutex_unlock(&fake.lock);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*p = (cu_ptr)(uintptr_t)(fake.dev + fake.next);
	fake.next += need;
	fake.live++;
	pthread_mutex_unlock(&fake.lock);
	return CUDA_SUCCESS;
}

FAKE_EXPORT cu_result cuMemFree_v2(cu_ptr p)
{
	pthread_mutex_lock(&fake.lock);
	if (!shadow_of(p, 0) || !fake.live) {
		pthread_mutex_unlock(&fake.lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (!--fake.live) {
		/* every allocation freed: the range starts over, its bytes given back */
		madvise(fake.shadow, fake.next, MADV_DONTNEED);
		mprotect(fake.shadow, fake.next, PROT_NONE);
		fake.next = 0;
	}
	pthread_mutex_unlock(&fake.lock);
	return CUDA_SUCCESS;
}

FAKE_EXPORT cu_result cuPointerGetAttribute(void *data, int attr, cu_ptr p)
{
	if (!shadow_of(p, 1))
		return CUDA_ERROR_INVALID_VALUE;	/* not memory the driver knows */
	switch (attr) {
	case 1:		/* CU_POINTER_ATTRIBUTE_CONTEXT */
		*(void **)data = &fake_ctx_obj;
		return CUDA_SUCCESS;
	case 2:		/* CU_POINTER_ATTRIBUTE_MEMORY_TYPE: CU_MEMORYTYPE_DEVICE */
		*(unsigned int *)data = 2;
		return CUDA_SUCCESS;
	case 9:		/* CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL */
		*(int *)data = 0;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

FAKE_EXPORT cu_result cuMemcpyDtoH_v2(void *dst, cu_ptr src, size_t len)
{
	uint8_t *s = shadow_of(src, len);

	if (!s || !dst)
		return CUDA_ERROR_INVALID_VALUE;
	if (copy_fails(&fake.fail_d2h))
		return CUDA_ERROR_ILLEGAL_ADDRESS;
	memcpy(dst, s, len);
	pthread_mutex_lock(&fake.lock);
	fake.st.d2h++;
	fake.st.d2h_bytes += len;
	pthread_mutex_unlock(&fake.lock);
	return CUDA_SUCCESS;
}

FAKE_EXPORT cu_result cuMemcpyHtoD_v2(cu_ptr dst, const void *src, size_t len)
{
	uint8_t *d = shadow_of(dst, len);

	if (!d || !src)
		return CUDA_ERROR_INVALID_VALUE;
	if (copy_fails(&fake.fail_h2d))
		return CUDA_ERROR_ILLEGAL_ADDRESS;
	memcpy(d, src, len);
	pthread_mutex_lock(&fake.lock);
	fake.st.h2d++;
	fake.st.h2d_bytes += len;
	pthread_mutex_unlock(&fake.lock);
	return CUDA_SUCCESS;
}

/* the asynchronous copies are made at once: the stream is always idle */
FAKE_EXPORT cu_result cuMemcpyDtoHAsync_v2(void *dst, cu_ptr src, size_t len, void *stream)
{
	if (stream != &fake_stream_obj)
		return CUDA_ERROR_INVALID_VALUE;
	return cuMemcpyDtoH_v2(dst, src, len);
}

FAKE_EXPORT cu_result cuMemcpyHtoDAsync_v2(cu_ptr dst, const void *src, size_t len, void *stream)
{
	if (stream != &fake_stream_obj)
		return CUDA_ERROR_INVALID_VALUE;
	return cuMemcpyHtoD_v2(dst, src, len);
}

FAKE_EXPORT cu_result cuMemsetD8_v2(cu_ptr dst, unsigned char v, size_t len)
{
	uint8_t *d = shadow_of(dst, len);

	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	memset(d, v, len);
	return CUDA_SUCCESS;
}

FAKE_EXPORT cu_result cuStreamCreate(void **stream, unsigned int flags)
{
	(void)flags;
	*stream = &fake_stream_obj;
	return CUDA_SUCCESS;
}

FAKE_EXPORT cu_result cuStreamDestroy_v2(void *stream)
{
	return stream == &fake_stream_obj ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FAKE_EXPORT cu_result cuStreamSynchronize(void *stream)
{
	return stream == &fake_stream_obj ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FAKE_EXPORT cu_result cuMemHostRegister_v2(void *p, size_t len, unsigned int flags)
{
	(void)flags;
	if (!p || !len)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&fake.lock);
	fake.st.pinned++;
	pthread_mutex_unlock(&fake.lock);
	return CUDA_SUCCESS;
}

FAKE_EXPORT cu_result cuMemHostUnregister(void *p)
{
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&fake.lock);
	fake.st.pinned--;
	pthread_mutex_unlock(&fake.lock);
	return CUDA_SUCCESS;
}

/* ---- for tests ---- */

FAKE_EXPORT void fakecuda_stats(struct fakecuda_stats *out)
{
	pthread_mutex_lock(&fake.lock);
	*out = fake.st;
	pthread_mutex_unlock(&fake.lock);
}

FAKE_EXPORT void fakecuda_fail(long d2h, long h2d)
{
	atomic_store(&fake.fail_d2h, d2h);
	atomic_store(&fake.fail_h2d, h2d);
}

FAKE_EXPORT void *fakecuda_host(unsigned long long p, size_t len)
{
	return shadow_of(p, len);
}
