/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * braid_mpi.c: the project's MPI test: ping-pong with a data check from 0 B to
 * 64 MiB, MPI_Probe and MPI_Mprobe/Mrecv, wildcard source and tag, MPI_Allreduce
 * and MPI_Alltoall. Run with 2 ranks; exits 0 only if every check passed.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "rank check failed: " __VA_ARGS__); \
			fprintf(stderr, "\n");				\
			failures++;					\
		}							\
	} while (0)

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 12));
}

static int check(const uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)(seed * 131 + i * 7 + (i >> 12)))
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	const size_t max = 64u << 20;
	int rank, size, peer;
	uint8_t *sbuf, *rbuf;
	double t0, lat8 = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		if (!rank)
			fprintf(stderr, "run with 2 ranks\n");
		MPI_Finalize();
		return 2;
	}
	peer = !rank;
	sbuf = malloc(max);
	rbuf = malloc(max);

	/* 1. ping-pong, every size a power of two from 0 B to 64 MiB, data checked */
	for (size_t n = 0; n <= max; n = n ? n * 2 : 1) {
		int iters = n <= 65536 ? 50 : n <= (4u << 20) ? 5 : 2;

		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (int i = 0; i < iters; i++) {
			unsigned seed = (unsigned)(n + (size_t)i);

			if (rank == 0) {
				fill(sbuf, n, seed);
				MPI_Send(sbuf, (int)n, MPI_BYTE, peer, i, MPI_COMM_WORLD);
				MPI_Recv(rbuf, (int)n, MPI_BYTE, peer, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				CHECK(check(rbuf, n, seed + 1), "pong of %zu bytes, iteration %d", n, i);
			} else {
				MPI_Recv(rbuf, (int)n, MPI_BYTE, peer, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				CHECK(check(rbuf, n, seed), "ping of %zu bytes, iteration %d", n, i);
				fill(sbuf, n, seed + 1);
				MPI_Send(sbuf, (int)n, MPI_BYTE, peer, i, MPI_COMM_WORLD);
			}
		}
		if (n == 8)
			lat8 = (MPI_Wtime() - t0) / iters / 2 * 1e6;
	}

	/* 2. MPI_Probe with wildcard source and tag, then the receive of what it found */
	if (rank == 1) {
		fill(sbuf, 1000, 77);
		MPI_Send(sbuf, 1000, MPI_BYTE, 0, 4242, MPI_COMM_WORLD);
	} else {
		MPI_Status st;
		int count;

		MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
		MPI_Get_count(&st, MPI_BYTE, &count);
		CHECK(st.MPI_SOURCE == 1 && st.MPI_TAG == 4242 && count == 1000,
		      "probe: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, count);
		MPI_Recv(rbuf, count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st);
		CHECK(check(rbuf, 1000, 77), "probed message data");
	}

	/* 3. MPI_Mprobe / MPI_Mrecv (matched probe: FI_CLAIM underneath) */
	if (rank == 1) {
		fill(sbuf, 5000, 91);
		MPI_Send(sbuf, 5000, MPI_BYTE, 0, 99, MPI_COMM_WORLD);
	} else {
		MPI_Message msg;
		MPI_Status st;
		int count;

		MPI_Mprobe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &msg, &st);
		MPI_Get_count(&st, MPI_BYTE, &count);
		CHECK(count == 5000 && st.MPI_TAG == 99, "mprobe: count %d tag %d", count, st.MPI_TAG);
		MPI_Mrecv(rbuf, count, MPI_BYTE, &msg, &st);
		CHECK(check(rbuf, 5000, 91), "mrecv data");
	}

	/* 4. wildcard receive of messages sent with many tags, out of order */
	if (rank == 1) {
		for (int t = 0; t < 20; t++) {
			fill(sbuf, 64, (unsigned)t);
			MPI_Send(sbuf, 64, MPI_BYTE, 0, 1000 + t, MPI_COMM_WORLD);
		}
	} else {
		int seen[20] = { 0 };

		for (int t = 0; t < 20; t++) {
			MPI_Status st;

			MPI_Recv(rbuf, 64, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
			CHECK(st.MPI_TAG == 1000 + t, "wildcard receive %d got tag %d (order)", t, st.MPI_TAG);
			if (st.MPI_TAG >= 1000 && st.MPI_TAG < 1020) {
				seen[st.MPI_TAG - 1000]++;
				CHECK(check(rbuf, 64, (unsigned)(st.MPI_TAG - 1000)), "wildcard data");
			}
		}
		for (int t = 0; t < 20; t++)
			CHECK(seen[t] == 1, "tag %d seen %d times", 1000 + t, seen[t]);
	}

	/* 5. collectives: MPI_Allreduce (int64 sums, every element) and MPI_Alltoall, data checked */
	for (size_t n = 1; n <= (1u << 20); n *= 64) {
		int64_t *v = (int64_t *)sbuf, *sum = (int64_t *)rbuf;

		for (size_t i = 0; i < n; i++)
			v[i] = (int64_t)(i * 3 + (size_t)rank * 1000003);
		MPI_Allreduce(v, sum, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
		for (size_t i = 0; i < n; i++)
			if (sum[i] != (int64_t)(i * 6 + 1000003)) {
				CHECK(0, "allreduce of %zu elements: element %zu is %lld", n, i,
				      (long long)sum[i]);
				break;
			}
	}
	for (size_t n = 1024; n <= (1u << 20); n *= 32) {
		/* block b of rank r's send buffer goes to rank b: seed r * 16 + b */
		for (int b = 0; b < size; b++)
			fill(sbuf + (size_t)b * n, n, (unsigned)(rank * 16 + b));
		memset(rbuf, 0, (size_t)size * n);
		MPI_Alltoall(sbuf, (int)n, MPI_BYTE, rbuf, (int)n, MPI_BYTE, MPI_COMM_WORLD);
		for (int b = 0; b < size; b++)
			CHECK(check(rbuf + (size_t)b * n, n, (unsigned)(b * 16 + rank)),
			      "alltoall of %zu bytes: the block from rank %d", n, b);
	}

	MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (!rank)
		printf("braid_mpi: 8-byte half round trip %.2f us; %s (%d failures)\n", lat8,
		       failures ? "FAIL" : "PASS", failures);
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return failures ? 1 : 0;
}
