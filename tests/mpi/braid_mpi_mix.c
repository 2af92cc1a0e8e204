/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * braid_mpi_mix.c: every pair of ranks exchanges messages from 8 B to 1 MiB
 * (MPI_Sendrecv, each byte checked), then MPI_Alltoall and MPI_Allreduce,
 * checked. Any number of ranks; run_mpi_mix.sh runs some with braid's local
 * peers through shared memory and some without, so that one job has both
 * kinds of peer. Exits 0 only if every check passed.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static uint8_t pattern(unsigned seed, size_t i)
{
	return (uint8_t)(seed * 151 + i * 11 + (i >> 11));
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pattern(seed, i);
}

static size_t wrong(const uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != pattern(seed, i))
			return i + 1;
	return 0;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 8, 4096, 65536, 1u << 20 };
	const size_t max = 1u << 20;
	int rank, size;
	uint8_t *sbuf, *rbuf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	sbuf = malloc(max * (size_t)(size > 2 ? size : 2));
	rbuf = malloc(max * (size_t)(size > 2 ? size : 2));
	if (!sbuf || !rbuf)
		MPI_Abort(MPI_COMM_WORLD, 2);

	/* 1. every pair, every size, both ways at once; rounds of a shifted permutation */
	for (int shift = 1; shift < size; shift++) {
		int to = (rank + shift) % size, from = (rank - shift + size) % size;

		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			size_t n = sizes[k], bad;

			fill(sbuf, n, (unsigned)(rank * 64 + to * 4 + (int)k));
			memset(rbuf, 0, n);
			MPI_Sendrecv(sbuf, (int)n, MPI_BYTE, to, (int)k, rbuf, (int)n, MPI_BYTE, from,
				     (int)k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			bad = wrong(rbuf, n, (unsigned)(from * 64 + rank * 4 + (int)k));
			if (bad) {
				fprintf(stderr, "rank %d: %zu bytes from rank %d: byte %zu wrong\n",
					rank, n, from, bad - 1);
				failures++;
			}
		}
	}

	/* 2. MPI_Alltoall of 64 KiB blocks: block b of rank r's buffer goes to rank b */
	{
		const size_t n = 65536;

		for (int b = 0; b < size; b++)
			fill(sbuf + (size_t)b * n, n, (unsigned)(rank * 1000 + b));
		memset(rbuf, 0, (size_t)size * n);
		MPI_Alltoall(sbuf, (int)n, MPI_BYTE, rbuf, (int)n, MPI_BYTE, MPI_COMM_WORLD);
		for (int b = 0; b < size; b++)
			if (wrong(rbuf + (size_t)b * n, n, (unsigned)(b * 1000 + rank))) {
				fprintf(stderr, "rank %d: alltoall block from rank %d wrong\n", rank, b);
				failures++;
			}
	}

	/* 3. MPI_Allreduce of 128 Ki int64 sums, every element */
	{
		const size_t n = 131072;
		int64_t *v = (int64_t *)sbuf, *sum = (int64_t *)rbuf;
		int64_t ranks = (int64_t)size * (size - 1) / 2;

		for (size_t i = 0; i < n; i++)
			v[i] = (int64_t)i * 5 + rank * 7919;
		MPI_Allreduce(v, sum, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
		for (size_t i = 0; i < n; i++)
			if (sum[i] != (int64_t)i * 5 * size + ranks * 7919) {
				fprintf(stderr, "rank %d: allreduce element %zu is %lld\n", rank, i,
					(long long)sum[i]);
				failures++;
				break;
			}
	}

	MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (!rank)
		printf("braid_mpi_mix: %d ranks; %s (%d failures)\n", size, failures ? "FAIL" : "PASS",
		       failures);
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return failures ? 1 : 0;
}
