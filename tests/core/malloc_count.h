/* SPDX-License-Identifier: BSD-2-Clause */
/* malloc_count.h: count the allocations a test makes, by interposing glibc's malloc family.
 * Include in exactly one file of a test program; set @counting to count into @allocs. */
#ifndef MALLOC_COUNT_H
#define MALLOC_COUNT_H

#include <stdatomic.h>
#include <stddef.h>

static atomic_long allocs;
static atomic_int counting;

#if defined(__SANITIZE_ADDRESS__)
/*
 * Under AddressSanitizer the allocator is the sanitizer's: interposing
 * malloc would fight its interceptors (it aborts at start), so count
 * through the hook it calls on every allocation instead.
 */
/* from the sanitizer's allocator interface (its header is not always installed) */
int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void *, size_t),
					       void (*free_hook)(const volatile void *));

static void malloc_count_hook(const volatile void *p, size_t n)
{
	(void)p;
	(void)n;
	if (atomic_load(&counting))
		atomic_fetch_add(&allocs, 1);
}

static void free_count_hook(const volatile void *p)
{
	(void)p;
}

__attribute__((constructor)) static void malloc_count_init(void)
{
	__sanitizer_install_malloc_and_free_hooks(malloc_count_hook, free_count_hook);
}
#else
/* glibc's own entry points, so the counters below can wrap them */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

void *malloc(size_t n)
{
	if (atomic_load(&counting))
		atomic_fetch_add(&allocs, 1);
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	if (atomic_load(&counting))
		atomic_fetch_add(&allocs, 1);
	return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	if (atomic_load(&counting))
		atomic_fetch_add(&allocs, 1);
	return __libc_realloc(p, n);
}

void *aligned_alloc(size_t a, size_t n)
{
	if (atomic_load(&counting))
		atomic_fetch_add(&allocs, 1);
	return __libc_memalign(a, n);
}
#endif

#endif /* MALLOC_COUNT_H */
