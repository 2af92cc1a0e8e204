/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * braid_mpi_bench.c: MPI point-to-point and collective timings, every byte
 * received checked: a ping-pong between 2 ranks (half round trip),
 * MPI_Alltoall and MPI_Allreduce of doubles across any number of ranks (time
 * per call, the largest of the ranks' means). Whatever transport the MPI
 * library was told to use carries it; bench/braid_mpi_local.sh runs it over
 * braid, tcp;ofi_rxm and Open MPI's shared memory and compares them.
 *
 *   mpirun -np 2 braid_mpi_bench pingpong
 *   mpirun -np 8 braid_mpi_bench alltoall
 *
 * Each size runs a warm-up (checked, untimed) whose duration sets how many
 * timed iterations fill the time budget (-t), within bounds that shrink with
 * the size. Rank 0 prints one line per size on stdout:
 *   MODE SIZE_BYTES USEC_PER_OP ITERATIONS RANKS
 * Filling send buffers and checking received ones is not counted: the
 * collectives time only the MPI call; the ping-pong, where that work lies on
 * the round trip, subtracts both ranks' share of it. A byte that differs
 * from its pattern (which changes each iteration) is said on stderr and the
 * job aborts with exit status 1.
 */
#include <mpi.h>
#include <stdint.h>
#include <string.h>

#include "braid_cli.h"

#define PROG		"braid_mpi_bench"
#define WORD		sizeof(uint64_t)

/* what one mode measures: its name, its sizes and the bounds of its iterations */
struct mode {
	const char *name;
	void (*run)(const struct mode *mode, size_t size, double budget_s);
	const size_t *sizes;
	size_t nsizes;
	int min_ranks;		/* ping-pong: exactly 2 */
	int max_ranks;
};

static int rank, nranks;

static void usage(FILE *out)
{
	fprintf(out,
		"usage: " PROG " [-t SECONDS] MODE\n"
		"Run under mpirun; rank 0 prints one line per size:\n"
		"  MODE SIZE_BYTES USEC_PER_OP ITERATIONS RANKS\n"
		"Every received byte is checked; a wrong one aborts the job with exit 1.\n"
		"  MODE           pingpong: 2 ranks, half round trip, 8 B to 16 MiB;\n"
		"                 alltoall: any ranks, MPI_Alltoall, 8 B, 1 KiB, 64 KiB to each rank;\n"
		"                 allreduce: any ranks, MPI_Allreduce (sum) of 8 B, 64 KiB, 1 MiB of doubles\n"
		"  -t, --time S   timed iterations per size fill about S seconds (default 1,\n"
		"                 0.01 to 60), within bounds that shrink with the size\n"
		"  -h, --help     this text\n");
}

/*
 * The pattern of the message @seed: byte i of a buffer is byte (i % 8) of
 * word i / 8, the seed and the word's index mixed through every bit
 * (splitmix64's finalizer), so that each byte changes from one iteration
 * (seed) to the next and a misplaced block shows.
 */
static uint64_t pattern_word(uint64_t seed, size_t word)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + word;

	x = (x ^ x >> 30) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ x >> 27) * 0x94d049bb133111ebull;
	return x ^ x >> 31;
}

static void pattern_fill(void *buf, size_t n, uint64_t seed)
{
	uint8_t *p = buf;
	size_t w;

	for (w = 0; w < n / WORD; w++) {
		uint64_t v = pattern_word(seed, w);

		memcpy(p + w * WORD, &v, WORD);
	}
	if (n % WORD) {
		uint64_t v = pattern_word(seed, w);

		memcpy(p + w * WORD, &v, n % WORD);
	}
}

/* the offset of the first byte of @buf that is not the pattern @seed's, or -1 when all are */
static long pattern_find_wrong(const void *buf, size_t n, uint64_t seed)
{
	const uint8_t *p = buf;
	size_t w, i;

	for (w = 0; w <= n / WORD; w++) {
		uint64_t v = pattern_word(seed, w), got = 0;
		size_t len = w < n / WORD ? WORD : n % WORD;

		memcpy(&got, p + w * WORD, len);
		if (len && memcmp(&got, &v, len))
			for (i = 0; i < len; i++)
				if (((uint8_t *)&got)[i] != ((uint8_t *)&v)[i])
					return (long)(w * WORD + i);
	}
	return -1;
}

/* @buf must be the pattern @seed; a wrong byte is said and the job aborts (exit 1) */
static void pattern_check(const struct mode *mode, size_t size, long iter, const char *what,
			  const void *buf, size_t n, uint64_t seed)
{
	long at = pattern_find_wrong(buf, n, seed);
	uint8_t want[WORD];
	uint64_t v;

	if (at < 0)
		return;
	v = pattern_word(seed, (size_t)at / WORD);	/* the word the byte is in, as it should be */
	memcpy(want, &v, WORD);
	fprintf(stderr, PROG ": %s %zu B, iteration %ld, rank %d: %s byte %ld is 0x%02x, want 0x%02x\n",
		mode->name, size, iter, rank, what, at, ((const uint8_t *)buf)[at],
		want[(size_t)at % WORD]);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, PROG ": rank %d: out of memory (%zu B)\n", rank, n);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	return p;
}

/*
 * How many timed iterations: as many as fill @budget_s at the warm-up's pace
 * (@warm_s for @warm iterations, the slowest rank's), at least 3 and at most
 * a bound that shrinks with @size (a 16 MiB message 50 times, 8 B 200,000).
 */
static long iterations(size_t size, double warm_s, long warm, double budget_s)
{
	long hi = (long)((4ull << 30) / (size + 16384));
	double per_op = warm_s / (double)warm;
	long n;

	if (hi > 200000)
		hi = 200000;
	if (hi < 50)
		hi = 50;
	n = per_op > 0 ? (long)(budget_s / per_op) : hi;
	return n < 3 ? 3 : n > hi ? hi : n;
}

static long warmups(size_t size)
{
	return size <= 4096 ? 100 : size <= 65536 ? 20 : 3;
}

/* the seed of iteration @iter's message from rank @from to rank @to */
static uint64_t seed_of(long iter, int from, int to)
{
	return (uint64_t)iter << 20 ^ (uint64_t)from << 10 ^ (uint64_t)to;
}

static void report(const struct mode *mode, size_t size, double usec, long iters)
{
	if (!rank) {
		printf("%s %zu %.3f %ld %d\n", mode->name, size, usec, iters, nranks);
		fflush(stdout);
	}
}

/*
 * One round trip of iteration @iter: rank 0 sends, rank 1 checks and
 * answers, rank 0 checks. Returns the seconds this rank spent filling and
 * checking.
 */
static double pingpong_round(const struct mode *mode, size_t size, long iter, uint8_t *sbuf,
			     uint8_t *rbuf)
{
	int peer = !rank;
	double t, work;

	t = MPI_Wtime();
	if (!rank) {
		pattern_fill(sbuf, size, seed_of(iter, 0, 1));
		work = MPI_Wtime() - t;
		MPI_Send(sbuf, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
		MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		t = MPI_Wtime();
		pattern_check(mode, size, iter, "reply", rbuf, size, seed_of(iter, 1, 0));
	} else {
		MPI_Recv(rbuf, (int)size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		t = MPI_Wtime();
		pattern_check(mode, size, iter, "ping", rbuf, size, seed_of(iter, 0, 1));
		pattern_fill(sbuf, size, seed_of(iter, 1, 0));
		work = MPI_Wtime() - t;
		MPI_Send(sbuf, (int)size, MPI_BYTE, peer, 2, MPI_COMM_WORLD);
		return work;
	}
	return work + MPI_Wtime() - t;
}

/* half round trip: the loop's time less both ranks' filling and checking, over 2 per iteration */
static void pingpong_run(const struct mode *mode, size_t size, double budget_s)
{
	uint8_t *sbuf = xmalloc(size), *rbuf = xmalloc(size);
	long warm = warmups(size), iters, i;
	double t0, elapsed, work = 0, work_all;

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (i = 0; i < warm; i++)
		pingpong_round(mode, size, -1 - i, sbuf, rbuf);
	elapsed = MPI_Wtime() - t0;
	iters = iterations(size, elapsed, warm, budget_s);
	MPI_Bcast(&iters, 1, MPI_LONG, 0, MPI_COMM_WORLD);

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (i = 0; i < iters; i++)
		work += pingpong_round(mode, size, i, sbuf, rbuf);
	elapsed = MPI_Wtime() - t0;
	MPI_Reduce(&work, &work_all, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	report(mode, size, (elapsed - work_all) * 1e6 / 2.0 / (double)iters, iters);
	free(sbuf);
	free(rbuf);
}

/*
 * MPI_Alltoall of @size bytes to each rank: the block from rank r to rank d
 * in iteration i is the pattern seed_of(i, r, d). Returns the seconds spent in
 * the MPI call.
 */
static double alltoall_round(const struct mode *mode, size_t size, long iter, uint8_t *sbuf,
			     uint8_t *rbuf)
{
	double t;
	int r;

	for (r = 0; r < nranks; r++)
		pattern_fill(sbuf + (size_t)r * size, size, seed_of(iter, rank, r));
	memset(rbuf, 0, size * (size_t)nranks);
	t = MPI_Wtime();
	MPI_Alltoall(sbuf, (int)size, MPI_BYTE, rbuf, (int)size, MPI_BYTE, MPI_COMM_WORLD);
	t = MPI_Wtime() - t;
	for (r = 0; r < nranks; r++)
		pattern_check(mode, size, iter, "block", rbuf + (size_t)r * size, size,
			      seed_of(iter, r, rank));
	return t;
}

/*
 * Element @j of rank r's vector in iteration @iter is (r + 1) times this:
 * whole numbers far below 2^53, so the sum over the ranks is exact in any order.
 */
static uint64_t allreduce_term(size_t j, long iter)
{
	return (j * 7 + (uint64_t)iter) % 1021 + 1;
}

static void allreduce_check(const struct mode *mode, size_t size, long iter, const double *sum,
			    size_t n)
{
	uint64_t ranks_sum = (uint64_t)nranks * (uint64_t)(nranks + 1) / 2;

	for (size_t j = 0; j < n; j++) {
		double want = (double)(ranks_sum * allreduce_term(j, iter));

		if (sum[j] != want) {
			fprintf(stderr, PROG ": %s %zu B, iteration %ld, rank %d: "
				"element %zu is %.17g, want %.17g\n",
				mode->name, size, iter, rank, j, sum[j], want);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
}

/* MPI_Allreduce (MPI_SUM) of @size bytes of doubles; returns the seconds spent in the call */
static double allreduce_round(const struct mode *mode, size_t size, long iter, uint8_t *sbuf,
			      uint8_t *rbuf)
{
	size_t n = size / sizeof(double), j;
	double *in = (double *)sbuf, *out = (double *)rbuf;
	double t;

	for (j = 0; j < n; j++)
		in[j] = (double)((uint64_t)(rank + 1) * allreduce_term(j, iter));
	memset(out, 0, size);
	t = MPI_Wtime();
	MPI_Allreduce(in, out, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	t = MPI_Wtime() - t;
	allreduce_check(mode, size, iter, out, n);
	return t;
}

/*
 * A collective's time per call: each rank's mean over the timed iterations
 * of the time in the MPI call, the largest of them.
 */
static void collective_run(const struct mode *mode, size_t size, double budget_s,
			  double (*round)(const struct mode *, size_t, long, uint8_t *, uint8_t *),
			  size_t bufsize)
{
	uint8_t *sbuf = xmalloc(bufsize), *rbuf = xmalloc(bufsize);
	long warm = warmups(size), iters, i;
	double t0, elapsed, warm_max, in_call = 0, mean, mean_max;

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (i = 0; i < warm; i++)
		round(mode, size, -1 - i, sbuf, rbuf);
	elapsed = MPI_Wtime() - t0;
	MPI_Allreduce(&elapsed, &warm_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	iters = iterations(size, warm_max, warm, budget_s);

	MPI_Barrier(MPI_COMM_WORLD);
	for (i = 0; i < iters; i++)
		in_call += round(mode, size, i, sbuf, rbuf);
	mean = in_call / (double)iters;
	MPI_Reduce(&mean, &mean_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	report(mode, size, mean_max * 1e6, iters);
	free(sbuf);
	free(rbuf);
}

static void alltoall_run(const struct mode *mode, size_t size, double budget_s)
{
	collective_run(mode, size, budget_s, alltoall_round, size * (size_t)nranks);
}

static void allreduce_run(const struct mode *mode, size_t size, double budget_s)
{
	collective_run(mode, size, budget_s, allreduce_round, size);
}

static const size_t pingpong_sizes[] = { 8, 64, 1024, 4096, 65536, 1u << 20, 16u << 20 };
static const size_t alltoall_sizes[] = { 8, 1024, 65536 };
static const size_t allreduce_sizes[] = { 8, 65536, 1u << 20 };

#define MODE(n, r, s, lo, hi) { n, r, s, sizeof(s) / sizeof((s)[0]), lo, hi }
static const struct mode modes[] = {
	MODE("pingpong", pingpong_run, pingpong_sizes, 2, 2),
	MODE("alltoall", alltoall_run, alltoall_sizes, 1, 1 << 16),
	MODE("allreduce", allreduce_run, allreduce_sizes, 1, 1 << 16),
};

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "time", required_argument, NULL, 't' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct mode *mode = NULL;
	double budget_s = 1.0;
	size_t i;
	int c;

	/* the arguments are the program's own (mpirun adds none): judged before MPI starts */
	while ((c = getopt_long(argc, argv, "+t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (!braid_cli_double(optarg, 0.01, 60, &budget_s))
				return braid_cli_bad(usage, PROG, "-t", optarg, "0.01 to 60 seconds");
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return BRAID_CLI_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, PROG ": which MODE?\n");
		usage(stderr);
		return BRAID_CLI_EXIT_USAGE;
	}
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(argv[optind], modes[i].name))
			mode = &modes[i];
	if (!mode)
		return braid_cli_bad(usage, PROG, "MODE", argv[optind],
				     "pingpong, alltoall or allreduce");
	optind++;
	if (braid_cli_extra(usage, PROG, argc, argv))
		return BRAID_CLI_EXIT_USAGE;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks < mode->min_ranks || nranks > mode->max_ranks) {
		if (!rank)
			fprintf(stderr, PROG ": %s runs with %d to %d ranks, not %d\n", mode->name,
				mode->min_ranks, mode->max_ranks, nranks);
		MPI_Finalize();
		return BRAID_CLI_EXIT_USAGE;
	}
	for (i = 0; i < mode->nsizes; i++)
		mode->run(mode, mode->sizes[i], budget_s);
	MPI_Finalize();
	return 0;
}
