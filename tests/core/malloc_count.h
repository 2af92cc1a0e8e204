/* malloc_count.h: count the allocations a test makes, by interposing glibc's malloc family.
 * Include in exactly one file of a test program; set @counting to count into @allocs. */
#ifndef MALLOC_COUNT_H
#define MALLOC_COUNT_H

#include <stdatomic.h>
#include <stddef.h>

/* glibc's own entry points, so the counters below can wrap them */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static atomic_long allocs;
static atomic_int counting;

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

#endif /* MALLOC_COUNT_H */
