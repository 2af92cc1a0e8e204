/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * braid_osc.c: MPI one-sided communication (RMA), every result checked exactly. Written for
 * Open MPI's osc/rdma on btl/ofi over braid's native RDM endpoint (tests/mpi/run_osc.sh), it
 * runs with any number of ranks >= 2 and exits non-zero, after saying what differed, on any
 * mismatch.
 *
 * Each rank puts to and gets from its right neighbour (rank + 1) and accumulates into every
 * rank. Sections:
 *   active target, MPI_Win_fence:        MPI_Put, MPI_Get, 8 B .. 1 MiB; 4096 8-byte puts,
 *                                        then gets, outstanding in one epoch;
 *                                        MPI_Accumulate MPI_SUM, int64 and double, 1 .. 131072
 *                                        elements (1 MiB)
 *   active target, post/start/complete/wait: MPI_Put, MPI_Get, MPI_Accumulate
 *   passive target, MPI_Win_lock exclusive + MPI_Win_flush: put, flush, get back, 8 B .. 1 MiB
 *   passive target, MPI_Win_lock_all + MPI_Win_flush: the same; MPI_Accumulate (flush_all)
 *   MPI_Fetch_and_op: MPI_SUM on int64 (every fetched value distinct and complete across
 *                     ranks), int32 and double; MPI_REPLACE; MPI_NO_OP
 *   MPI_Compare_and_swap: int64 and int32 hit and miss, and a CAS-loop counter every rank
 *                         increments on every other rank
 *
 * Every section runs on windows from MPI_Win_create on malloc'd memory, then, when the ranks
 * are on more than one node, again on windows from MPI_Win_allocate: with every rank on one
 * node osc/rdma reaches an allocated window of a rank on the same node through shared memory,
 * a created one only through its BTL (here btl/ofi, so braid). MPI_Compare_and_swap never
 * targets the calling rank itself (an Open MPI 4.1.4 crash, see compare_and_swap()).
 */
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXSZ		(1u << 20)		/* the largest transfer: 1 MiB */
#define BIG_WIN		(MAXSZ + 64)		/* ... at a target offset of up to 63 bytes */
#define SMALL_WIN	4096			/* the atomics' window */
#define MAX_REPORTS	20			/* mismatch messages printed per rank */

static int rank, nranks, left, right;
static long failures, checks;
static const char *flavor = "";	/* "MPI_Win_create" or "MPI_Win_allocate" */

static void fail(const char *fmt, ...)
{
	va_list ap;

	if (++failures > MAX_REPORTS)
		return;
	fprintf(stderr, "braid_osc: rank %d: MISMATCH: ", rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (failures == MAX_REPORTS)
		fprintf(stderr, "braid_osc: rank %d: (further mismatches counted, not shown)\n",
			rank);
}

/* the byte at window position i of pattern seed: every byte differs from its neighbours */
static inline uint8_t pat(uint32_t seed, size_t i)
{
	uint32_t x = seed * 2654435761u ^ (uint32_t)i * 40503u ^ (uint32_t)(i >> 16) * 97u;

	x ^= x >> 15;
	x *= 2246822519u;
	x ^= x >> 13;
	return (uint8_t)x;
}

static void fill(uint8_t *p, size_t n, uint32_t seed, size_t base)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pat(seed, base + i);
}

/* p[0..n) must be pattern seed at positions base..; one message for the first difference */
static void check_pat(const char *what, size_t sz, const uint8_t *p, size_t n, uint32_t seed,
		      size_t base)
{
	checks++;
	for (size_t i = 0; i < n; i++)
		if (p[i] != pat(seed, base + i)) {
			fail("%s, size %zu: byte %zu is 0x%02x, expected 0x%02x", what, sz, i,
			     p[i], pat(seed, base + i));
			return;
		}
}

static void check_byte(const char *what, size_t sz, const uint8_t *p, size_t n, uint8_t v)
{
	checks++;
	for (size_t i = 0; i < n; i++)
		if (p[i] != v) {
			fail("%s, size %zu: byte %zu outside the transfer is 0x%02x, expected 0x%02x "
			     "(written past the range?)", what, sz, i, p[i], v);
			return;
		}
}

static void check_i64(const char *what, long long got, long long want)
{
	checks++;
	if (got != want)
		fail("%s: got %lld (0x%llx), expected %lld (0x%llx)", what, got,
		     (unsigned long long)got, want, (unsigned long long)want);
}

static const size_t sizes[] = {
	8, 13, 16, 32, 64, 100, 128, 256, 512, 1000, 1024, 2048, 4096, 4100, 8192, 16384,
	32768, 65536, 65537, 131072, 262144, 300001, 524288, 1048575, 1048576,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static size_t off_of(size_t k)
{
	return (k * 7) % 61;	/* target offsets 0..60, most not 8-byte aligned */
}

static uint32_t seed_of(int r, size_t k, int section)
{
	return (uint32_t)(r * 1000003 + (int)k * 101 + section * 7919 + 1);
}

static double now(void)
{
	return MPI_Wtime();
}

static void section_done(const char *name, double t0)
{
	long f = failures, all;

	MPI_Allreduce(&f, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (!rank)
		printf("braid_osc: %s: %-58s %s (%.2f s)\n", flavor, name,
		       all ? "MISMATCH" : "ok", now() - t0);
	fflush(stdout);
}

/* --- put and get, 8 B .. 1 MiB --- */

/* after an epoch in which left put pattern seed_of(left, k, sec) at off: check my window */
static void check_put_window(const char *what, const uint8_t *win, size_t k, int sec,
			     uint8_t bg)
{
	size_t sz = sizes[k], off = off_of(k);

	check_pat(what, sz, win + off, sz, seed_of(left, k, sec), 0);
	check_byte(what, sz, win, off, bg);
	check_byte(what, sz, win + off + sz, BIG_WIN - off - sz, bg);
}

static void put_get_fence(MPI_Win w, uint8_t *win, uint8_t *src, uint8_t *dst)
{
	double t0 = now();

	for (size_t k = 0; k < NSIZES; k++) {
		size_t sz = sizes[k], off = off_of(k);
		uint8_t bg = (uint8_t)(0x5a ^ k);

		memset(win, bg, BIG_WIN);
		fill(src, sz, seed_of(rank, k, 1), 0);
		MPI_Win_fence(0, w);
		MPI_Put(src, (int)sz, MPI_BYTE, right, (MPI_Aint)off, (int)sz, MPI_BYTE, w);
		MPI_Win_fence(0, w);
		check_put_window("fence MPI_Put (target's window)", win, k, 1, bg);
	}
	section_done("fence: MPI_Put 8 B .. 1 MiB", t0);

	t0 = now();
	fill(win, BIG_WIN, seed_of(rank, 0, 2), 0);
	for (size_t k = 0; k < NSIZES; k++) {
		size_t sz = sizes[k], off = off_of(k);

		memset(dst, 0xee, sz + 64);
		MPI_Win_fence(0, w);
		MPI_Get(dst, (int)sz, MPI_BYTE, right, (MPI_Aint)off, (int)sz, MPI_BYTE, w);
		MPI_Win_fence(0, w);
		check_pat("fence MPI_Get", sz, dst, sz, seed_of(right, 0, 2), off);
		check_byte("fence MPI_Get (origin buffer past the data)", sz, dst + sz, 64, 0xee);
	}
	section_done("fence: MPI_Get 8 B .. 1 MiB", t0);

	/* many operations outstanding at once: BURST 8-byte puts, then gets, in one epoch each */
	enum { BURST = 4096, STRIDE = MAXSZ / BURST };
	t0 = now();
	memset(win, 0, BIG_WIN);
	fill(src, BURST * 8, seed_of(rank, 0, 6), 0);
	MPI_Win_fence(0, w);
	for (int i = 0; i < BURST; i++)
		MPI_Put(src + 8 * i, 8, MPI_BYTE, right, (MPI_Aint)i * STRIDE + i % 56, 8, MPI_BYTE, w);
	MPI_Win_fence(0, w);
	checks++;
	for (int i = 0; i < BURST; i++) {
		const uint8_t *p = win + (size_t)i * STRIDE;
		int o = i % 56;

		for (int b = 0; b < STRIDE; b++) {
			uint8_t want = b >= o && b < o + 8 ? pat(seed_of(left, 0, 6), 8 * i + b - o) : 0;

			if (p[b] != want) {
				fail("fence: %d MPI_Put of 8 B in one epoch: put %d, byte %d of its %d-byte "
				     "slot is 0x%02x, expected 0x%02x", BURST, i, b, STRIDE, p[b], want);
				i = BURST;
				break;
			}
		}
	}
	fill(win, BIG_WIN, seed_of(rank, 0, 7), 0);
	memset(dst, 0xee, BURST * 8 + 64);
	MPI_Win_fence(0, w);
	for (int i = 0; i < BURST; i++)
		MPI_Get(dst + 8 * i, 8, MPI_BYTE, right, (MPI_Aint)i * STRIDE + i % 56, 8, MPI_BYTE, w);
	MPI_Win_fence(0, w);
	checks++;
	for (int i = 0; i < BURST; i++)
		for (int b = 0; b < 8; b++)
			if (dst[8 * i + b] != pat(seed_of(right, 0, 7), (size_t)i * STRIDE + i % 56 + b)) {
				fail("fence: %d MPI_Get of 8 B in one epoch: get %d, byte %d is 0x%02x, "
				     "expected 0x%02x", BURST, i, b, dst[8 * i + b],
				     pat(seed_of(right, 0, 7), (size_t)i * STRIDE + i % 56 + b));
				i = BURST;
				break;
			}
	check_byte("fence: MPI_Get burst (past the data)", BURST * 8, dst + BURST * 8, 64, 0xee);
	section_done("fence: 4096 MPI_Put, then 4096 MPI_Get, of 8 B in one epoch", t0);
}

static void put_get_pscw(MPI_Win w, uint8_t *win, uint8_t *src, uint8_t *dst)
{
	MPI_Group world, g_left, g_right;
	double t0 = now();

	MPI_Comm_group(MPI_COMM_WORLD, &world);
	MPI_Group_incl(world, 1, &left, &g_left);
	MPI_Group_incl(world, 1, &right, &g_right);
	for (size_t k = 0; k < NSIZES; k++) {
		size_t sz = sizes[k], off = off_of(k);
		uint8_t bg = (uint8_t)(0xc3 ^ k);

		/* put: left writes into me, I write into right */
		memset(win, bg, BIG_WIN);
		fill(src, sz, seed_of(rank, k, 3), 0);
		MPI_Barrier(MPI_COMM_WORLD);	/* my window is reset before left may put */
		MPI_Win_post(g_left, 0, w);
		MPI_Win_start(g_right, 0, w);
		MPI_Put(src, (int)sz, MPI_BYTE, right, (MPI_Aint)off, (int)sz, MPI_BYTE, w);
		MPI_Win_complete(w);
		MPI_Win_wait(w);
		check_put_window("post/start/complete/wait MPI_Put", win, k, 3, bg);

		/* get it back: right's window holds what I put */
		memset(dst, 0xee, sz + 64);
		MPI_Win_post(g_left, 0, w);
		MPI_Win_start(g_right, 0, w);
		MPI_Get(dst, (int)sz, MPI_BYTE, right, (MPI_Aint)off, (int)sz, MPI_BYTE, w);
		MPI_Win_complete(w);
		MPI_Win_wait(w);
		check_pat("post/start/complete/wait MPI_Get", sz, dst, sz, seed_of(rank, k, 3), 0);
		check_byte("post/start/complete/wait MPI_Get (past the data)", sz, dst + sz, 64,
			   0xee);
	}
	section_done("post/start/complete/wait: MPI_Put, MPI_Get 8 B .. 1 MiB", t0);

	/* accumulate: int64 MPI_SUM into right */
	t0 = now();
	static const int counts[] = { 1, 2, 32, 33, 1000, 131072 };
	int64_t *w64 = (int64_t *)(void *)win, *s64 = (int64_t *)(void *)src;

	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		int n = counts[c];

		MPI_Barrier(MPI_COMM_WORLD);	/* right has checked before I reset mine */
		for (int i = 0; i <= n && i < (int)(BIG_WIN / 8); i++)
			w64[i] = (int64_t)i * 3 - 5;
		for (int i = 0; i < n; i++)
			s64[i] = (int64_t)(rank + 1) * ((int64_t)i * 1000003 + (1LL << 35));
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Win_post(g_left, 0, w);
		MPI_Win_start(g_right, 0, w);
		MPI_Accumulate(s64, n, MPI_INT64_T, right, 0, n, MPI_INT64_T, MPI_SUM, w);
		MPI_Win_complete(w);
		MPI_Win_wait(w);
		checks++;
		for (int i = 0; i < n; i++) {
			int64_t want = (int64_t)i * 3 - 5 +
				       (int64_t)(left + 1) * ((int64_t)i * 1000003 + (1LL << 35));
			if (w64[i] != want) {
				fail("post/start/complete/wait MPI_Accumulate int64 SUM, count %d: "
				     "element %d is %lld, expected %lld", n, i, (long long)w64[i],
				     (long long)want);
				break;
			}
		}
		if (n < (int)(BIG_WIN / 8) && w64[n] != (int64_t)n * 3 - 5)
			fail("post/start/complete/wait MPI_Accumulate int64 SUM, count %d: the "
			     "element after the range changed", n);
	}
	section_done("post/start/complete/wait: MPI_Accumulate int64 SUM 1 .. 131072", t0);
	MPI_Group_free(&g_left);
	MPI_Group_free(&g_right);
	MPI_Group_free(&world);
}

static void put_get_lock(MPI_Win w, uint8_t *win, uint8_t *src, uint8_t *dst, int all)
{
	const char *what = all ? "MPI_Win_lock_all: MPI_Put, flush, MPI_Get back"
			       : "MPI_Win_lock exclusive: MPI_Put, flush, MPI_Get back";
	int sec = all ? 5 : 4;
	double t0 = now();
	size_t k;

	MPI_Barrier(MPI_COMM_WORLD);
	if (all)
		MPI_Win_lock_all(0, w);
	for (k = 0; k < NSIZES; k++) {
		size_t sz = sizes[k], off = off_of(k);

		if (!all)
			MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, w);
		fill(src, sz, seed_of(rank, k, sec), 0);
		memset(dst, 0xee, sz + 64);
		MPI_Put(src, (int)sz, MPI_BYTE, right, (MPI_Aint)off, (int)sz, MPI_BYTE, w);
		MPI_Win_flush(right, w);
		MPI_Get(dst, (int)sz, MPI_BYTE, right, (MPI_Aint)off, (int)sz, MPI_BYTE, w);
		if (all)
			MPI_Win_flush(right, w);
		else
			MPI_Win_unlock(right, w);
		check_pat(what, sz, dst, sz, seed_of(rank, k, sec), 0);
		check_byte(what, sz, dst + sz, 64, 0xee);
	}
	if (all)
		MPI_Win_unlock_all(w);
	MPI_Barrier(MPI_COMM_WORLD);
	/* the target's view of the last transfer */
	k = NSIZES - 1;
	MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w);
	MPI_Win_sync(w);
	check_pat(all ? "MPI_Win_lock_all MPI_Put (target's window)"
		      : "MPI_Win_lock MPI_Put (target's window)", sizes[k], win + off_of(k),
		  sizes[k], seed_of(left, k, sec), 0);
	MPI_Win_unlock(rank, w);
	section_done(all ? "lock_all/flush: MPI_Put, MPI_Get 8 B .. 1 MiB"
			 : "lock exclusive/flush/unlock: MPI_Put, MPI_Get 8 B .. 1 MiB", t0);
}

/* --- accumulate --- */

static const int acc_counts[] = { 1, 2, 7, 32, 33, 100, 1000, 4096, 65536, 131072 };
#define NACC (sizeof(acc_counts) / sizeof(acc_counts[0]))

static int64_t i64_init(int i) { return (int64_t)i * 3 - 5; }
static int64_t i64_contrib(int r, int i) { return (int64_t)(r + 1) * ((int64_t)i * 1000003 + (1LL << 33)); }
/* multiples of 1/8 below 2^40: every sum exact in any order */
static double d_init(int i) { return (double)i * 0.125; }
static double d_contrib(int r, int i) { return (double)(r + 1) * ((i % 4096) * 0.5 + 0.25); }

static void acc_prepare(uint8_t *win, int n, int dbl)
{
	for (int i = 0; i <= n && i < (int)(BIG_WIN / 8); i++) {
		if (dbl)
			((double *)(void *)win)[i] = d_init(i);
		else
			((int64_t *)(void *)win)[i] = i64_init(i);
	}
}

static void acc_fill(uint8_t *src, int n, int dbl)
{
	for (int i = 0; i < n; i++) {
		if (dbl)
			((double *)(void *)src)[i] = d_contrib(rank, i);
		else
			((int64_t *)(void *)src)[i] = i64_contrib(rank, i);
	}
}

/* every rank added its contribution to my window once */
static void acc_check(const char *epoch, const uint8_t *win, int n, int dbl)
{
	char what[128];
	int64_t tri = (int64_t)nranks * (nranks + 1) / 2;	/* sum of (r + 1) */

	snprintf(what, sizeof(what), "%s MPI_Accumulate %s MPI_SUM from all %d ranks, count %d",
		 epoch, dbl ? "double" : "int64", nranks, n);
	checks++;
	for (int i = 0; i < n; i++) {
		if (dbl) {
			double got = ((const double *)(const void *)win)[i];
			double want = d_init(i) + (double)tri * ((i % 4096) * 0.5 + 0.25);

			if (got != want) {
				fail("%s: element %d is %.17g, expected %.17g", what, i, got, want);
				return;
			}
		} else {
			int64_t got = ((const int64_t *)(const void *)win)[i];
			int64_t want = i64_init(i) + tri * ((int64_t)i * 1000003 + (1LL << 33));

			if (got != want) {
				fail("%s: element %d is %lld, expected %lld", what, i, (long long)got,
				     (long long)want);
				return;
			}
		}
	}
	if (n < (int)(BIG_WIN / 8)) {
		int bad = dbl ? ((const double *)(const void *)win)[n] != d_init(n)
			      : ((const int64_t *)(const void *)win)[n] != i64_init(n);
		if (bad)
			fail("%s: the element after the range changed", what);
	}
}

static void accumulate_fence(MPI_Win w, uint8_t *win, uint8_t *src)
{
	for (int dbl = 0; dbl < 2; dbl++) {
		double t0 = now();

		for (size_t c = 0; c < NACC; c++) {
			int n = acc_counts[c];

			acc_prepare(win, n, dbl);
			acc_fill(src, n, dbl);
			MPI_Win_fence(0, w);
			for (int j = 0; j < nranks; j++)
				MPI_Accumulate(src, n, dbl ? MPI_DOUBLE : MPI_INT64_T,
					       (rank + 1 + j) % nranks, 0, n,
					       dbl ? MPI_DOUBLE : MPI_INT64_T, MPI_SUM, w);
			MPI_Win_fence(0, w);
			acc_check("fence", win, n, dbl);
		}
		section_done(dbl ? "fence: MPI_Accumulate double SUM, 1 .. 131072 elements"
				 : "fence: MPI_Accumulate int64 SUM, 1 .. 131072 elements", t0);
	}
}

static void accumulate_lock_all(MPI_Win w, uint8_t *win, uint8_t *src)
{
	for (int dbl = 0; dbl < 2; dbl++) {
		double t0 = now();

		for (size_t c = 0; c < NACC; c++) {
			int n = acc_counts[c];

			MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w);
			acc_prepare(win, n, dbl);
			MPI_Win_unlock(rank, w);
			acc_fill(src, n, dbl);
			MPI_Barrier(MPI_COMM_WORLD);
			MPI_Win_lock_all(0, w);
			for (int j = 0; j < nranks; j++)
				MPI_Accumulate(src, n, dbl ? MPI_DOUBLE : MPI_INT64_T,
					       (rank + 1 + j) % nranks, 0, n,
					       dbl ? MPI_DOUBLE : MPI_INT64_T, MPI_SUM, w);
			MPI_Win_flush_all(w);
			MPI_Win_unlock_all(w);
			MPI_Barrier(MPI_COMM_WORLD);
			MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w);
			MPI_Win_sync(w);
			acc_check("lock_all/flush_all", win, n, dbl);
			MPI_Win_unlock(rank, w);
		}
		section_done(dbl ? "lock_all/flush_all: MPI_Accumulate double SUM, 1 .. 131072"
				 : "lock_all/flush_all: MPI_Accumulate int64 SUM, 1 .. 131072", t0);
	}
}

/* --- fetch-and-op and compare-and-swap on the small window --- */

#define OFF_FOP64	0	/* int64 counter */
#define OFF_FOP32	8	/* int32 counter */
#define OFF_GUARD32	12	/* int32 next to it: must not change */
#define OFF_CAS64	16	/* int64 CAS-loop counter */
#define OFF_SWAP	24	/* int64 MPI_REPLACE / MPI_NO_OP target */
#define OFF_CAS32	32	/* int32 CAS hit/miss */
#define OFF_CASX	40	/* int64 CAS hit/miss */
#define OFF_FOPD	48	/* double counter */
#define GUARD32		0x5eed1234

static void small_reset(MPI_Win w, uint8_t *sw)
{
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w);
	memset(sw, 0, SMALL_WIN);
	*(int32_t *)(void *)(sw + OFF_GUARD32) = GUARD32;
	*(double *)(void *)(sw + OFF_FOPD) = 1.0;
	MPI_Win_unlock(rank, w);
	MPI_Barrier(MPI_COMM_WORLD);
}

static void small_local(MPI_Win w, const uint8_t *sw, void *out, size_t off, size_t len)
{
	MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w);
	MPI_Win_sync(w);
	memcpy(out, sw + off, len);
	MPI_Win_unlock(rank, w);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static void fetch_and_op(MPI_Win w, uint8_t *sw)
{
	const int K = 100;
	int64_t *got = malloc(sizeof(*got) * (size_t)nranks * K), one = 1;
	int64_t *all = NULL;
	double t0 = now();
	char what[128];

	small_reset(w, sw);
	/* int64 MPI_SUM: every rank adds 1, K times, to every rank's counter */
	MPI_Win_lock_all(0, w);
	for (int it = 0; it < K; it++)
		for (int j = 0; j < nranks; j++) {
			int t = (rank + 1 + j) % nranks;

			MPI_Fetch_and_op(&one, &got[t * K + it], MPI_INT64_T, t, OFF_FOP64, MPI_SUM,
					 w);
			MPI_Win_flush(t, w);
		}
	MPI_Win_unlock_all(w);
	for (int t = 0; t < nranks; t++)
		for (int it = 1; it < K; it++) {
			checks++;
			if (got[t * K + it] <= got[t * K + it - 1]) {
				fail("MPI_Fetch_and_op int64 SUM on rank %d: fetch %d returned %lld "
				     "after %lld (not increasing)", t, it, (long long)got[t * K + it],
				     (long long)got[t * K + it - 1]);
				break;
			}
		}
	/* across ranks, the values fetched from one counter are exactly 0 .. nranks*K-1 */
	if (!rank)
		all = malloc(sizeof(*all) * (size_t)nranks * nranks * K);
	MPI_Gather(got, nranks * K, MPI_INT64_T, all, nranks * K, MPI_INT64_T, 0, MPI_COMM_WORLD);
	if (!rank) {
		int64_t *v = malloc(sizeof(*v) * (size_t)nranks * K);

		for (int t = 0; t < nranks; t++) {
			for (int r = 0; r < nranks; r++)
				memcpy(v + r * K, all + ((size_t)r * nranks + t) * K, sizeof(*v) * K);
			qsort(v, (size_t)nranks * K, sizeof(*v), cmp_i64);
			checks++;
			for (int i = 0; i < nranks * K; i++)
				if (v[i] != i) {
					fail("MPI_Fetch_and_op int64 SUM on rank %d: the fetched values "
					     "are not 0..%d once each (sorted, position %d holds %lld): "
					     "an add was lost or applied twice", t, nranks * K - 1, i,
					     (long long)v[i]);
					break;
				}
		}
		free(v);
		free(all);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	int64_t c64;
	small_local(w, sw, &c64, OFF_FOP64, 8);
	check_i64("MPI_Fetch_and_op int64 SUM: the counter at its target", c64, (int64_t)nranks * K);

	/* int32 MPI_SUM: the same, 4 bytes; the int32 next to it must not change */
	int32_t one32 = 1, g32 = 0, prev32 = -1;
	MPI_Win_lock_all(0, w);
	for (int it = 0; it < K; it++)
		for (int j = 0; j < nranks; j++) {
			int t = (rank + 1 + j) % nranks;

			MPI_Fetch_and_op(&one32, &g32, MPI_INT32_T, t, OFF_FOP32, MPI_SUM, w);
			MPI_Win_flush(t, w);
			if (t == right) {
				checks++;
				if (g32 <= prev32)
					fail("MPI_Fetch_and_op int32 SUM on rank %d: returned %d after "
					     "%d", t, g32, prev32);
				prev32 = g32;
			}
		}
	MPI_Win_unlock_all(w);
	MPI_Barrier(MPI_COMM_WORLD);
	int32_t c32[2];
	small_local(w, sw, c32, OFF_FOP32, 8);
	check_i64("MPI_Fetch_and_op int32 SUM: the counter at its target", c32[0], nranks * K);
	check_i64("MPI_Fetch_and_op int32 SUM: the int32 after it", c32[1], GUARD32);

	/* double MPI_SUM: every rank adds (rank + 1) / 2, K / 4 times, to its right neighbour */
	double dv = (rank + 1) * 0.5, dg = 0, dprev = 0;
	MPI_Win_lock(MPI_LOCK_SHARED, right, 0, w);
	for (int it = 0; it < K / 4; it++) {
		MPI_Fetch_and_op(&dv, &dg, MPI_DOUBLE, right, OFF_FOPD, MPI_SUM, w);
		MPI_Win_flush(right, w);
		checks++;
		if (it && dg <= dprev)
			fail("MPI_Fetch_and_op double SUM: returned %g after %g", dg, dprev);
		dprev = dg;
	}
	MPI_Win_unlock(right, w);
	MPI_Barrier(MPI_COMM_WORLD);
	double cd;
	small_local(w, sw, &cd, OFF_FOPD, 8);
	checks++;
	if (cd != 1.0 + (K / 4) * (left + 1) * 0.5)
		fail("MPI_Fetch_and_op double SUM: the counter at its target is %.17g, expected "
		     "%.17g", cd, 1.0 + (K / 4) * (left + 1) * 0.5);

	/* MPI_REPLACE and MPI_NO_OP on right's OFF_SWAP, under an exclusive lock */
	int64_t a = 0x0123456789abcdefLL + rank, b = -0x0fedcba987654321LL - rank, r1 = 0, r2 = 0,
		r3 = 0, r4 = 0;
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, w);
	MPI_Fetch_and_op(&a, &r1, MPI_INT64_T, right, OFF_SWAP, MPI_REPLACE, w);
	MPI_Win_flush(right, w);
	MPI_Fetch_and_op(&b, &r2, MPI_INT64_T, right, OFF_SWAP, MPI_REPLACE, w);
	MPI_Win_flush(right, w);
	MPI_Fetch_and_op(NULL, &r3, MPI_INT64_T, right, OFF_SWAP, MPI_NO_OP, w);
	MPI_Win_flush(right, w);
	MPI_Get(&r4, 1, MPI_INT64_T, right, OFF_SWAP, 1, MPI_INT64_T, w);
	MPI_Win_unlock(right, w);
	check_i64("MPI_Fetch_and_op MPI_REPLACE: first fetch (the initial 0)", r1, 0);
	check_i64("MPI_Fetch_and_op MPI_REPLACE: second fetch (the first value)", r2, a);
	check_i64("MPI_Fetch_and_op MPI_NO_OP (the second value)", r3, b);
	check_i64("MPI_Get after MPI_Fetch_and_op MPI_NO_OP", r4, b);

	snprintf(what, sizeof(what), "MPI_Fetch_and_op: int64/int32/double SUM (%d x %d ranks), "
		 "REPLACE, NO_OP", K, nranks);
	section_done(what, t0);
	free(got);
}

static void compare_and_swap(MPI_Win w, uint8_t *sw)
{
	const int K = 50;
	double t0 = now();
	long tries = 0;
	char what[128];

	/* hit and miss, int64 and int32, on right's window under an exclusive lock */
	int64_t x = 0x1122334455667788LL + rank, y = 0x0badc0ffee0ddf00LL, z = -0x7777LL - rank;
	int64_t res = 0, v = 0;
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, w);
	MPI_Put(&x, 1, MPI_INT64_T, right, OFF_CASX, 1, MPI_INT64_T, w);
	MPI_Win_flush(right, w);
	MPI_Compare_and_swap(&z, &y, &res, MPI_INT64_T, right, OFF_CASX, w);	/* miss */
	MPI_Win_flush(right, w);
	check_i64("MPI_Compare_and_swap int64 miss: fetched value", res, x);
	MPI_Get(&v, 1, MPI_INT64_T, right, OFF_CASX, 1, MPI_INT64_T, w);
	MPI_Win_flush(right, w);
	check_i64("MPI_Compare_and_swap int64 miss: target unchanged", v, x);
	MPI_Compare_and_swap(&z, &x, &res, MPI_INT64_T, right, OFF_CASX, w);	/* hit */
	MPI_Win_flush(right, w);
	check_i64("MPI_Compare_and_swap int64 hit: fetched value", res, x);
	MPI_Get(&v, 1, MPI_INT64_T, right, OFF_CASX, 1, MPI_INT64_T, w);
	MPI_Win_flush(right, w);
	check_i64("MPI_Compare_and_swap int64 hit: target swapped", v, z);

	int32_t x32 = 0x31415926 + rank, y32 = 0x27182818, z32 = -0x1234 - rank, res32 = 0, v32 = 0;
	MPI_Put(&x32, 1, MPI_INT32_T, right, OFF_CAS32, 1, MPI_INT32_T, w);
	MPI_Win_flush(right, w);
	MPI_Compare_and_swap(&z32, &y32, &res32, MPI_INT32_T, right, OFF_CAS32, w);
	MPI_Win_flush(right, w);
	check_i64("MPI_Compare_and_swap int32 miss: fetched value", res32, x32);
	MPI_Compare_and_swap(&z32, &x32, &res32, MPI_INT32_T, right, OFF_CAS32, w);
	MPI_Win_flush(right, w);
	check_i64("MPI_Compare_and_swap int32 hit: fetched value", res32, x32);
	MPI_Get(&v32, 1, MPI_INT32_T, right, OFF_CAS32, 1, MPI_INT32_T, w);
	MPI_Win_unlock(right, w);
	check_i64("MPI_Compare_and_swap int32 hit: target swapped", v32, z32);

	/*
	 * a counter every rank increments K times on every other rank with a CAS loop. Not on
	 * itself: Open MPI 4.1.4's osc/rdma tries a BTL compare-and-swap on its own window even
	 * when that window has no BTL registration (every rank on one node), and btl/ofi then
	 * dereferences the missing handle (a SIGSEGV in mca_btl_ofi_acswap; fixed in 4.1.5 by
	 * open-mpi/ompi 0512c135a7, "RDMA osc: perform CAS in shared memory if possible").
	 */
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock_all(0, w);
	for (int it = 0; it < K; it++)
		for (int j = 0; j < nranks - 1; j++) {
			int t = (rank + 1 + j) % nranks;
			int64_t cur, next, old;

			MPI_Fetch_and_op(NULL, &cur, MPI_INT64_T, t, OFF_CAS64, MPI_NO_OP, w);
			MPI_Win_flush(t, w);
			for (;;) {
				next = cur + 1;
				MPI_Compare_and_swap(&next, &cur, &old, MPI_INT64_T, t, OFF_CAS64, w);
				MPI_Win_flush(t, w);
				tries++;
				if (old == cur)
					break;
				checks++;
				if (old < cur) {
					fail("MPI_Compare_and_swap counter on rank %d went back: %lld "
					     "after %lld", t, (long long)old, (long long)cur);
					break;
				}
				cur = old;
			}
		}
	MPI_Win_unlock_all(w);
	MPI_Barrier(MPI_COMM_WORLD);
	int64_t c;
	small_local(w, sw, &c, OFF_CAS64, 8);
	check_i64("MPI_Compare_and_swap loop: the counter at its target", c,
		  (int64_t)(nranks - 1) * K);
	long all_tries;
	MPI_Reduce(&tries, &all_tries, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	snprintf(what, sizeof(what), "MPI_Compare_and_swap: hit/miss, CAS-loop counter (%ld CAS)",
		 rank ? 0 : all_tries);
	section_done(what, t0);
}

/* every section on a window pair of one flavor */
static void suite(int allocate, uint8_t *src, uint8_t *dst)
{
	uint8_t *win, *sw;
	MPI_Win wbig, wsmall;

	flavor = allocate ? "MPI_Win_allocate" : "MPI_Win_create";
	if (allocate) {
		MPI_Win_allocate(BIG_WIN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win, &wbig);
		MPI_Win_allocate(SMALL_WIN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &sw, &wsmall);
	} else {
		win = malloc(BIG_WIN);
		sw = malloc(SMALL_WIN);
		if (!win || !sw) {
			fprintf(stderr, "braid_osc: out of memory\n");
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
		memset(win, 0, BIG_WIN);
		memset(sw, 0, SMALL_WIN);
		MPI_Win_create(win, BIG_WIN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &wbig);
		MPI_Win_create(sw, SMALL_WIN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &wsmall);
	}

	if (!rank) {
		int *model, flag;

		MPI_Win_get_attr(wbig, MPI_WIN_MODEL, &model, &flag);
		printf("braid_osc: %s: windows of %u B and %u B per rank, memory model %s\n",
		       flavor, BIG_WIN, SMALL_WIN,
		       flag && *model == MPI_WIN_UNIFIED ? "MPI_WIN_UNIFIED" : "MPI_WIN_SEPARATE");
	}
	put_get_fence(wbig, win, src, dst);
	accumulate_fence(wbig, win, src);
	put_get_pscw(wbig, win, src, dst);
	put_get_lock(wbig, win, src, dst, 0);
	put_get_lock(wbig, win, src, dst, 1);
	accumulate_lock_all(wbig, win, src);
	fetch_and_op(wsmall, sw);
	compare_and_swap(wsmall, sw);

	MPI_Win_free(&wsmall);
	MPI_Win_free(&wbig);
	if (!allocate) {
		free(win);
		free(sw);
	}
}

int main(int argc, char **argv)
{
	uint8_t *src, *dst;
	MPI_Comm node;
	int nodes;
	double t0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks < 2) {
		if (!rank)
			fprintf(stderr, "braid_osc: run with 2 ranks or more\n");
		MPI_Finalize();
		return 2;
	}
	left = (rank + nranks - 1) % nranks;
	right = (rank + 1) % nranks;
	src = malloc(MAXSZ + 64);
	dst = malloc(MAXSZ + 64);
	if (!src || !dst) {
		fprintf(stderr, "braid_osc: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	/* how many nodes Open MPI sees (shared-memory domains) */
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
	{	/* count the first rank of each node */
		int node_rank, first;

		MPI_Comm_rank(node, &node_rank);
		first = node_rank == 0;
		MPI_Allreduce(&first, &nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	}
	MPI_Comm_free(&node);
	if (!rank)
		printf("braid_osc: %d ranks on %d node%s (MPI_COMM_TYPE_SHARED)\n", nranks, nodes,
		       nodes == 1 ? "" : "s");
	t0 = now();

	/*
	 * MPI_Win_create always; MPI_Win_allocate only when ranks are on different nodes: on one
	 * node osc/rdma serves an allocated window through shared memory, not the BTL.
	 */
	suite(0, src, dst);
	if (nodes > 1)
		suite(1, src, dst);

	long f = failures, c = checks, all_f, all_c;
	MPI_Allreduce(&f, &all_f, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(&c, &all_c, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (!rank) {
		if (all_f)
			printf("braid_osc: FAIL: %ld of %ld checks differed (%.1f s)\n", all_f, all_c,
			       now() - t0);
		else
			printf("braid_osc: PASS: %ld checks, every result exact (%.1f s)\n", all_c,
			       now() - t0);
	}
	free(src);
	free(dst);
	MPI_Finalize();
	return all_f ? 1 : 0;
}
