/* SPDX-License-Identifier: BSD-2-Clause */
/* test_sim.c: unit tests of sim/braid_sim.c, the in-process virtual-time fabric. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>
#include <rdma/fi_errno.h>

#include "braid_sim.h"

#define PKT_MAX	64

/* A packet's payload: its index, then bytes derived from it, so every byte can be checked. */
static size_t payload_make(uint8_t *buf, uint32_t idx, size_t len)
{
	size_t i;

	cr_assert_geq(len, 4);
	memcpy(buf, &idx, 4);
	for (i = 4; i < len; i++)
		buf[i] = (uint8_t)(idx * 31 + i * 7);
	return len;
}

/* Check every byte of a delivered payload; return its index. */
static uint32_t payload_check(const struct braid_sim_pkt *pkt)
{
	uint32_t idx;
	size_t i;

	cr_assert_geq(pkt->len, 4);
	memcpy(&idx, pkt->data, 4);
	for (i = 4; i < pkt->len; i++)
		cr_assert_eq(pkt->data[i], (uint8_t)(idx * 31 + i * 7),
			     "byte %zu of packet %u differs", i, idx);
	return idx;
}

static struct braid_sim_path_cfg cfg_delay(uint64_t delay_ns)
{
	return (struct braid_sim_path_cfg){ .delay_ns = delay_ns };
}

static int send_idx(struct braid_sim *sim, uint64_t now, int src, int dst, int path,
		    uint32_t idx, size_t len)
{
	uint8_t buf[2048];

	payload_make(buf, idx, len);
	return braid_sim_send(sim, now, src, dst, path, buf, len);
}

static int recv_one(struct braid_sim *sim, uint64_t now, int node, struct braid_sim_pkt *pkt)
{
	return braid_sim_recv(sim, now, node, pkt, 1);
}

/* The invariant of every path's counters. */
static void stats_check_balance(struct braid_sim *sim, int paths)
{
	uint64_t in = 0, out = 0;
	int p;

	for (p = 0; p < paths; p++) {
		const struct braid_sim_stats *st = braid_sim_path_stats(sim, p);

		in += st->sent + st->dups;
		out += st->delivered + st->lost + st->down_drops;
	}
	cr_assert_eq(in, out + braid_sim_in_flight(sim),
		     "sent + dups == delivered + lost + down_drops + in flight");
}

/* ---- bad arguments ---- */

Test(braid_sim_create, rejects_bad_arguments)
{
	struct braid_sim_path_cfg cfg = cfg_delay(0);
	struct braid_sim *sim;

	cr_assert_null(braid_sim_create(1, 0, 1, &cfg));
	cr_assert_null(braid_sim_create(1, -1, 1, &cfg));
	cr_assert_null(braid_sim_create(1, 2, 0, &cfg));
	cr_assert_null(braid_sim_create(1, 2, 257, &cfg));
	cfg.loss = 1.5;
	cr_assert_null(braid_sim_create(1, 2, 1, &cfg));
	cfg.loss = -0.1;
	cr_assert_null(braid_sim_create(1, 2, 1, &cfg));
	cfg.loss = 0;
	cfg.dup = 1.01;
	cr_assert_null(braid_sim_create(1, 2, 1, &cfg));
	cfg.dup = 0;
	cfg.reorder = NAN;
	cr_assert_null(braid_sim_create(1, 2, 1, &cfg));
	cfg.reorder = 1.0;
	cfg.loss = 1.0;
	cfg.dup = 1.0;
	sim = braid_sim_create(1, 1, 256, &cfg);
	cr_assert_not_null(sim, "1 node, 256 paths, probabilities of exactly 1 are fine");
	braid_sim_destroy(sim);
	sim = braid_sim_create(1, 2, 1, NULL);
	cr_assert_not_null(sim, "a NULL cfg is an ideal path");
	braid_sim_destroy(sim);
	braid_sim_destroy(NULL);
}

Test(braid_sim_send, rejects_bad_arguments)
{
	struct braid_sim *sim = braid_sim_create(1, 2, 2, NULL);
	static uint8_t big[65537];

	cr_assert_eq(braid_sim_send(sim, 0, -1, 1, 0, big, 10), -FI_EINVAL);
	cr_assert_eq(braid_sim_send(sim, 0, 2, 1, 0, big, 10), -FI_EINVAL);
	cr_assert_eq(braid_sim_send(sim, 0, 0, -1, 0, big, 10), -FI_EINVAL);
	cr_assert_eq(braid_sim_send(sim, 0, 0, 2, 0, big, 10), -FI_EINVAL);
	cr_assert_eq(braid_sim_send(sim, 0, 0, 1, -1, big, 10), -FI_EINVAL);
	cr_assert_eq(braid_sim_send(sim, 0, 0, 1, 2, big, 10), -FI_EINVAL);
	cr_assert_eq(braid_sim_send(sim, 0, 0, 1, 0, big, 0), -FI_EINVAL);
	cr_assert_eq(braid_sim_send(sim, 0, 0, 1, 0, big, 65537), -FI_EINVAL);
	cr_assert_eq(braid_sim_send(sim, 0, 0, 1, 0, NULL, 10), -FI_EINVAL);
	cr_assert_eq(braid_sim_send(NULL, 0, 0, 1, 0, big, 10), -FI_EINVAL);
	cr_assert_eq(braid_sim_in_flight(sim), 0, "a rejected send leaves nothing in flight");
	cr_assert_eq(braid_sim_path_stats(sim, 0)->sent, 0, "nor counts");
	cr_assert_eq(braid_sim_send(sim, 0, 0, 1, 0, big, 65536), 0, "65536 bytes is the limit");
	cr_assert_eq(braid_sim_send(sim, 0, 1, 1, 1, big, 1), 0, "a node may send to itself");
	cr_assert_eq(braid_sim_in_flight(sim), 2);
	braid_sim_destroy(sim);
}

Test(braid_sim_set_path, rejects_bad_arguments)
{
	struct braid_sim *sim = braid_sim_create(1, 2, 2, NULL);
	struct braid_sim_path_cfg cfg = cfg_delay(5);

	cr_assert_eq(braid_sim_set_path(sim, -1, &cfg), -FI_EINVAL);
	cr_assert_eq(braid_sim_set_path(sim, 2, &cfg), -FI_EINVAL);
	cr_assert_eq(braid_sim_set_path(sim, 0, NULL), -FI_EINVAL);
	cr_assert_eq(braid_sim_set_path(NULL, 0, &cfg), -FI_EINVAL);
	cfg.loss = 1.0000001;
	cr_assert_eq(braid_sim_set_path(sim, 0, &cfg), -FI_EINVAL);
	cfg.loss = 0;
	cfg.dup = -1;
	cr_assert_eq(braid_sim_set_path(sim, 0, &cfg), -FI_EINVAL);
	cfg.dup = 0;
	cfg.reorder = 2;
	cr_assert_eq(braid_sim_set_path(sim, 1, &cfg), -FI_EINVAL);
	cfg.reorder = 0;
	cr_assert_eq(braid_sim_set_path(sim, 1, &cfg), 0);
	braid_sim_destroy(sim);
}

Test(braid_sim_schedule, rejects_bad_arguments)
{
	struct braid_sim *sim = braid_sim_create(1, 3, 2, NULL);
	struct braid_sim_pkt pkt;

	cr_assert_eq(braid_sim_path_up(sim, 2, false), -FI_EINVAL);
	cr_assert_eq(braid_sim_path_up(sim, -1, true), -FI_EINVAL);
	cr_assert_eq(braid_sim_path_up(NULL, 0, true), -FI_EINVAL);
	cr_assert_eq(braid_sim_node_up(sim, 3, false), -FI_EINVAL);
	cr_assert_eq(braid_sim_node_up(sim, -1, false), -FI_EINVAL);
	cr_assert_eq(braid_sim_node_up(NULL, 0, false), -FI_EINVAL);
	cr_assert_eq(braid_sim_schedule(sim, 10, BRAID_SIM_PATH_DOWN, 2), -FI_EINVAL,
		     "path index checked against paths");
	cr_assert_eq(braid_sim_schedule(sim, 10, BRAID_SIM_NODE_DOWN, 3), -FI_EINVAL,
		     "node index checked against nodes");
	cr_assert_eq(braid_sim_schedule(sim, 10, BRAID_SIM_NODE_UP, -1), -FI_EINVAL);
	cr_assert_eq(braid_sim_schedule(sim, 10, (enum braid_sim_event)99, 0), -FI_EINVAL);
	cr_assert_eq(braid_sim_schedule(NULL, 10, BRAID_SIM_PATH_UP, 0), -FI_EINVAL);
	cr_assert_eq(braid_sim_schedule(sim, 10, BRAID_SIM_NODE_UP, 2), 0,
		     "node 2 exists although there are only 2 paths");
	cr_assert_eq(braid_sim_recv(sim, 0, 3, &pkt, 1), -FI_EINVAL);
	cr_assert_eq(braid_sim_recv(sim, 0, -1, &pkt, 1), -FI_EINVAL);
	cr_assert_eq(braid_sim_recv(sim, 0, 0, &pkt, -1), -FI_EINVAL);
	cr_assert_eq(braid_sim_recv(sim, 0, 0, NULL, 1), -FI_EINVAL);
	cr_assert_eq(braid_sim_recv(sim, 0, 0, NULL, 0), 0);
	cr_assert_eq(braid_sim_recv(NULL, 0, 0, &pkt, 1), -FI_EINVAL);
	cr_assert_eq(braid_sim_advance(NULL, 0), -FI_EINVAL);
	cr_assert_null(braid_sim_path_stats(sim, 2));
	cr_assert_null(braid_sim_path_stats(sim, -1));
	cr_assert_null(braid_sim_path_stats(NULL, 0));
	braid_sim_destroy(sim);
}

/* ---- delivery ---- */

Test(braid_sim_send, lossless_delivers_all)
{
	enum { NODES = 3, PATHS = 4, N = 600 };
	struct braid_sim *sim = braid_sim_create(7, NODES, PATHS, NULL);
	struct braid_sim_pkt pkts[PKT_MAX];
	static uint8_t seen[N];
	int i, n, k, node, total = 0;

	for (i = 0; i < N; i++) {
		int src = i % NODES, dst = (i / NODES) % NODES, path = i % PATHS;

		cr_assert_eq(send_idx(sim, (uint64_t)i, src, dst, path, (uint32_t)i,
				      4 + (size_t)(i * 13) % 1500), 0);
	}
	cr_assert_eq(braid_sim_in_flight(sim), N);
	for (node = 0; node < NODES; node++) {
		while ((n = braid_sim_recv(sim, N, node, pkts, PKT_MAX)) > 0) {
			for (k = 0; k < n; k++) {
				uint32_t idx = payload_check(&pkts[k]);

				cr_assert_lt(idx, N);
				cr_assert_eq(pkts[k].len, 4 + (size_t)(idx * 13) % 1500);
				cr_assert_eq(pkts[k].src, (int)idx % NODES);
				cr_assert_eq(pkts[k].dst, node);
				cr_assert_eq(pkts[k].dst, (int)(idx / NODES) % NODES);
				cr_assert_eq(pkts[k].path, (int)idx % PATHS);
				cr_assert_not(pkts[k].ecn_ce);
				cr_assert_eq(seen[idx], 0, "packet %u delivered twice", idx);
				seen[idx] = 1;
				total++;
			}
		}
		cr_assert_eq(n, 0);
	}
	cr_assert_eq(total, N);
	cr_assert_eq(braid_sim_in_flight(sim), 0);
	cr_assert_eq(braid_sim_next_event(sim), UINT64_MAX);
	for (i = 0; i < PATHS; i++) {
		const struct braid_sim_stats *st = braid_sim_path_stats(sim, i);

		cr_assert_eq(st->sent, N / PATHS);
		cr_assert_eq(st->delivered, N / PATHS);
		cr_assert_eq(st->lost + st->dups + st->down_drops + st->ecn_marks, 0);
	}
	braid_sim_destroy(sim);
}

Test(braid_sim_recv, only_returns_packets_for_node)
{
	struct braid_sim *sim = braid_sim_create(1, 3, 1, NULL);
	struct braid_sim_pkt pkts[8];

	cr_assert_eq(send_idx(sim, 0, 0, 2, 0, 1, 16), 0);
	cr_assert_eq(send_idx(sim, 0, 0, 1, 0, 2, 16), 0);
	cr_assert_eq(send_idx(sim, 0, 1, 2, 0, 3, 16), 0);
	cr_assert_eq(braid_sim_recv(sim, 100, 0, pkts, 8), 0, "nothing for node 0");
	cr_assert_eq(braid_sim_recv(sim, 100, 1, pkts, 8), 1);
	cr_assert_eq(payload_check(&pkts[0]), 2);
	cr_assert_eq(braid_sim_in_flight(sim), 2, "node 2's packets stay queued");
	cr_assert_eq(braid_sim_recv(sim, 100, 2, pkts, 8), 2);
	cr_assert_eq(payload_check(&pkts[0]), 1);
	cr_assert_eq(payload_check(&pkts[1]), 3);
	cr_assert_eq(pkts[1].src, 1);
	braid_sim_destroy(sim);
}

Test(braid_sim_recv, respects_delay_and_next_event)
{
	struct braid_sim_path_cfg cfg = cfg_delay(1000);
	struct braid_sim *sim = braid_sim_create(1, 2, 2, &cfg);
	struct braid_sim_pkt pkt;

	cr_assert_eq(braid_sim_next_event(sim), UINT64_MAX, "an idle sim has no next event");
	cr_assert_eq(send_idx(sim, 100, 0, 1, 0, 1, 64), 0);
	cfg.delay_ns = 300;
	cr_assert_eq(braid_sim_set_path(sim, 1, &cfg), 0);
	cr_assert_eq(send_idx(sim, 200, 1, 0, 1, 2, 64), 0);
	cr_assert_eq(braid_sim_next_event(sim), 500, "the earliest delivery over all nodes");
	cr_assert_eq(recv_one(sim, 499, 0, &pkt), 0);
	cr_assert_eq(recv_one(sim, 1099, 1, &pkt), 0, "not before send time + delay");
	cr_assert_eq(recv_one(sim, 500, 0, &pkt), 1);
	cr_assert_eq(payload_check(&pkt), 2);
	cr_assert_eq(braid_sim_next_event(sim), 1100);
	cr_assert_eq(recv_one(sim, 1099, 1, &pkt), 0);
	cr_assert_eq(recv_one(sim, 1100, 1, &pkt), 1);
	cr_assert_eq(payload_check(&pkt), 1);
	cr_assert_eq(braid_sim_next_event(sim), UINT64_MAX);
	braid_sim_destroy(sim);
}

Test(braid_sim_recv, ties_in_send_order_and_max)
{
	struct braid_sim_path_cfg cfg = cfg_delay(50);
	struct braid_sim *sim = braid_sim_create(1, 2, 4, &cfg);
	struct braid_sim_pkt pkts[PKT_MAX];
	int i, n;

	/* Path 3 is 10 ns shorter, so packets sent 10 ns apart arrive together. */
	cfg.delay_ns = 40;
	cr_assert_eq(braid_sim_set_path(sim, 3, &cfg), 0);
	for (i = 0; i < 8; i++)
		cr_assert_eq(send_idx(sim, 0, 0, 1, i % 3, (uint32_t)i, 8), 0);
	cr_assert_eq(send_idx(sim, 10, 0, 1, 3, 8, 8), 0);
	n = braid_sim_recv(sim, 50, 1, pkts, 3);
	cr_assert_eq(n, 3, "at most max");
	for (i = 0; i < 3; i++)
		cr_assert_eq(payload_check(&pkts[i]), (uint32_t)i);
	n = braid_sim_recv(sim, 50, 1, pkts, PKT_MAX);
	cr_assert_eq(n, 6);
	for (i = 0; i < 6; i++)
		cr_assert_eq(payload_check(&pkts[i]), (uint32_t)(i + 3), "ties in send order");
	braid_sim_destroy(sim);
}

Test(braid_sim_recv, data_valid_until_next_recv)
{
	struct braid_sim *sim = braid_sim_create(1, 2, 1, NULL);
	struct braid_sim_pkt pkts[4];

	cr_assert_eq(send_idx(sim, 0, 0, 1, 0, 1, 100), 0);
	cr_assert_eq(send_idx(sim, 0, 0, 1, 0, 2, 200), 0);
	cr_assert_eq(braid_sim_recv(sim, 0, 1, pkts, 4), 2);
	/* Other calls in between must not invalidate them. */
	cr_assert_eq(send_idx(sim, 1, 1, 0, 0, 3, 300), 0);
	cr_assert_eq(braid_sim_advance(sim, 5), 0);
	(void)braid_sim_next_event(sim);
	cr_assert_eq(payload_check(&pkts[0]), 1);
	cr_assert_eq(payload_check(&pkts[1]), 2);
	cr_assert_eq(pkts[1].len, 200);
	braid_sim_destroy(sim);
}

/* Drain the whole fabric event by event, checking next_event is the true earliest time. */
static int drain_all(struct braid_sim *sim, int nodes, uint64_t *count_by_idx, size_t nidx)
{
	struct braid_sim_pkt pkts[PKT_MAX];
	uint64_t t;
	int node, n, k, total = 0;

	while ((t = braid_sim_next_event(sim)) != UINT64_MAX) {
		int got = 0;

		for (node = 0; node < nodes; node++) {
			cr_assert_eq(braid_sim_recv(sim, t - 1, node, pkts, PKT_MAX), 0,
				     "nothing is due before next_event");
			while ((n = braid_sim_recv(sim, t, node, pkts, PKT_MAX)) > 0) {
				for (k = 0; k < n; k++) {
					uint32_t idx = payload_check(&pkts[k]);

					cr_assert_lt(idx, nidx);
					count_by_idx[idx]++;
				}
				got += n;
			}
		}
		if (!got)
			cr_assert_gt(braid_sim_advance(sim, t), 0,
				     "a next_event with no packet is a scheduled event");
		total += got;
	}
	return total;
}

Test(braid_sim_next_event, earliest_over_many_nodes)
{
	enum { NODES = 64, PATHS = 8, N = 3000 };
	struct braid_sim_path_cfg cfg = { .delay_ns = 1000, .jitter_ns = 5000 };
	struct braid_sim *sim = braid_sim_create(99, NODES, PATHS, &cfg);
	static uint64_t count[N];
	int i;

	for (i = 0; i < N; i++)
		cr_assert_eq(send_idx(sim, (uint64_t)i, i % NODES, (i * 7) % NODES,
				      (i * 3) % PATHS, (uint32_t)i, 32), 0);
	cr_assert_eq(drain_all(sim, NODES, count, N), N);
	for (i = 0; i < N; i++)
		cr_assert_eq(count[i], 1);
	stats_check_balance(sim, PATHS);
	braid_sim_destroy(sim);
}

Test(braid_sim_send, jitter_within_bounds)
{
	struct braid_sim_path_cfg cfg = { .delay_ns = 1000, .jitter_ns = 200 };
	struct braid_sim *sim = braid_sim_create(3, 2, 1, &cfg);
	struct braid_sim_pkt pkt;
	uint64_t t = 0, lo = UINT64_MAX, hi = 0;
	int i;

	for (i = 0; i < 2000; i++, t += 10000) {
		uint64_t d;

		cr_assert_eq(send_idx(sim, t, 0, 1, 0, (uint32_t)i, 8), 0);
		d = braid_sim_next_event(sim) - t;
		cr_assert_geq(d, 1000);
		cr_assert_leq(d, 1200);
		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
		cr_assert_eq(recv_one(sim, t + d, 1, &pkt), 1);
	}
	cr_assert_lt(lo, 1010, "jitter spans its range");
	cr_assert_gt(hi, 1190, "jitter spans its range");
	braid_sim_destroy(sim);
}

/* ---- randomness: determinism and rates ---- */

struct trace_rec {
	uint64_t t;
	uint32_t idx;
	int node, src, path;
	bool ecn_ce;
};

/* A busy run over every impairment; records every delivery. Returns the count. */
static size_t scenario_run(uint64_t seed, struct trace_rec *rec, size_t max,
			   struct braid_sim_stats *stats, uint8_t *delivered, size_t n)
{
	enum { NODES = 4, PATHS = 8 };
	struct braid_sim_path_cfg cfg = {
		.delay_ns = 2000, .jitter_ns = 500, .rate_bps = 5000000000ULL,
		.loss = 0.1, .dup = 0.05, .dup_gap_ns = 700,
		.reorder = 0.1, .reorder_ns = 3000, .ecn_threshold_ns = 1000,
	};
	struct braid_sim *sim = braid_sim_create(seed, NODES, PATHS, &cfg);
	struct braid_sim_pkt pkts[PKT_MAX];
	size_t i, nrec = 0;
	uint64_t t = 0;
	int node, got, k;

	cr_assert_not_null(sim);
	cr_assert_eq(braid_sim_schedule(sim, 50000, BRAID_SIM_PATH_DOWN, 3), 0);
	cr_assert_eq(braid_sim_schedule(sim, 90000, BRAID_SIM_PATH_UP, 3), 0);
	for (i = 0; i < n || braid_sim_next_event(sim) != UINT64_MAX; i++, t += 100) {
		if (i < n)
			cr_assert_eq(send_idx(sim, t, (int)(i % NODES), (int)((i / 3) % NODES),
					      (int)(i % PATHS), (uint32_t)i, 64 + i % 900), 0);
		for (node = 0; node < NODES; node++) {
			got = braid_sim_recv(sim, t, node, pkts, PKT_MAX);
			cr_assert_geq(got, 0);
			for (k = 0; k < got; k++) {
				uint32_t idx = payload_check(&pkts[k]);

				cr_assert_lt(nrec, max);
				rec[nrec++] = (struct trace_rec){ .t = t, .idx = idx, .node = node,
					.src = pkts[k].src, .path = pkts[k].path,
					.ecn_ce = pkts[k].ecn_ce };
				delivered[idx] = 1;
			}
		}
	}
	memset(stats, 0, sizeof(*stats));
	for (k = 0; k < PATHS; k++) {
		const struct braid_sim_stats *st = braid_sim_path_stats(sim, k);

		stats->sent += st->sent;
		stats->delivered += st->delivered;
		stats->lost += st->lost;
		stats->dups += st->dups;
		stats->down_drops += st->down_drops;
		stats->ecn_marks += st->ecn_marks;
		stats->bytes += st->bytes;
	}
	stats_check_balance(sim, PATHS);
	braid_sim_destroy(sim);
	return nrec;
}

Test(braid_sim_create, same_seed_is_deterministic)
{
	enum { N = 5000, MAX = 2 * N };
	struct trace_rec *a = calloc(MAX, sizeof(*a)), *b = calloc(MAX, sizeof(*b));
	uint8_t *da = calloc(N, 1), *db = calloc(N, 1), *dc = calloc(N, 1);
	struct braid_sim_stats sa, sb, sc;
	size_t na, nb, i, differ = 0;

	na = scenario_run(42, a, MAX, &sa, da, N);
	memset(b, 0xee, MAX * sizeof(*b));
	nb = scenario_run(42, b, MAX, &sb, db, N);
	cr_assert_eq(na, nb);
	for (i = 0; i < na; i++) {
		cr_assert_eq(a[i].t, b[i].t, "delivery %zu", i);
		cr_assert_eq(a[i].idx, b[i].idx, "delivery %zu", i);
		cr_assert_eq(a[i].node, b[i].node);
		cr_assert_eq(a[i].src, b[i].src);
		cr_assert_eq(a[i].path, b[i].path);
		cr_assert_eq(a[i].ecn_ce, b[i].ecn_ce);
	}
	cr_assert_eq(memcmp(&sa, &sb, sizeof(sa)), 0, "identical stats");
	cr_assert_gt(sa.lost, 0);
	cr_assert_gt(sa.dups, 0);
	cr_assert_gt(sa.down_drops, 0);
	cr_assert_gt(sa.ecn_marks, 0);
	cr_assert_eq(sa.sent, N);

	scenario_run(43, a, MAX, &sc, dc, N);
	for (i = 0; i < N; i++)
		differ += da[i] != dc[i];
	cr_assert_gt(differ, 100, "another seed loses other packets (%zu differ)", differ);
	free(a);
	free(b);
	free(da);
	free(db);
	free(dc);
}

Test(braid_sim_send, loss_rate_is_right)
{
	enum { N = 100000 };
	struct braid_sim_path_cfg cfg = { .loss = 0.05 };
	struct braid_sim *sim = braid_sim_create(2024, 2, 2, &cfg);
	struct braid_sim_pkt pkts[PKT_MAX];
	const struct braid_sim_stats *st;
	uint64_t got = 0;
	int i, n;

	cfg.loss = 1.0;
	cr_assert_eq(braid_sim_set_path(sim, 1, &cfg), 0);
	for (i = 0; i < N; i++) {
		cr_assert_eq(send_idx(sim, (uint64_t)i, 0, 1, 0, (uint32_t)i, 16), 0);
		if (i % 1000 == 999)
			while ((n = braid_sim_recv(sim, (uint64_t)i, 1, pkts, PKT_MAX)) > 0)
				got += (uint64_t)n;
	}
	for (i = 0; i < 1000; i++)
		cr_assert_eq(send_idx(sim, N, 0, 1, 1, (uint32_t)i, 16), 0);
	while ((n = braid_sim_recv(sim, N, 1, pkts, PKT_MAX)) > 0)
		got += (uint64_t)n;
	st = braid_sim_path_stats(sim, 0);
	cr_assert_eq(st->sent, N);
	cr_assert_eq(st->bytes, 16ULL * N);
	cr_assert_geq(st->lost, N * 4 / 100, "lost %lu", (unsigned long)st->lost);
	cr_assert_leq(st->lost, N * 6 / 100, "lost %lu", (unsigned long)st->lost);
	cr_assert_eq(st->delivered + st->lost, N);
	st = braid_sim_path_stats(sim, 1);
	cr_assert_eq(st->lost, 1000, "loss 1 loses everything");
	cr_assert_eq(got, N - braid_sim_path_stats(sim, 0)->lost);
	braid_sim_destroy(sim);
}

Test(braid_sim_send, duplication_makes_copies)
{
	enum { N = 20000 };
	struct braid_sim_path_cfg cfg = { .delay_ns = 1000, .dup = 1.0, .dup_gap_ns = 300 };
	struct braid_sim *sim = braid_sim_create(5, 2, 2, &cfg);
	static uint64_t count[N];
	const struct braid_sim_stats *st;
	struct braid_sim_pkt pkt;
	uint64_t twice = 0;
	int i;

	/* dup = 1: every packet twice, the copy dup_gap_ns later. */
	cr_assert_eq(send_idx(sim, 0, 0, 1, 0, 7, 40), 0);
	cr_assert_eq(braid_sim_in_flight(sim), 2);
	cr_assert_eq(braid_sim_next_event(sim), 1000);
	cr_assert_eq(recv_one(sim, 1000, 1, &pkt), 1);
	cr_assert_eq(payload_check(&pkt), 7);
	cr_assert_eq(braid_sim_next_event(sim), 1300);
	cr_assert_eq(recv_one(sim, 1299, 1, &pkt), 0);
	cr_assert_eq(recv_one(sim, 1300, 1, &pkt), 1);
	cr_assert_eq(payload_check(&pkt), 7);
	cr_assert_eq(pkt.len, 40);
	st = braid_sim_path_stats(sim, 0);
	cr_assert_eq(st->dups, 1);
	cr_assert_eq(st->delivered, 2);

	/* dup = 0.25 on path 1: a quarter twice, none three times. */
	cfg.dup = 0.25;
	cr_assert_eq(braid_sim_set_path(sim, 1, &cfg), 0);
	for (i = 0; i < N; i++)
		cr_assert_eq(send_idx(sim, 10000 + (uint64_t)i, 0, 1, 1, (uint32_t)i, 8), 0);
	cr_assert_eq(drain_all(sim, 2, count, N), (int)(N + braid_sim_path_stats(sim, 1)->dups));
	for (i = 0; i < N; i++) {
		cr_assert(count[i] == 1 || count[i] == 2, "packet %d came %lu times", i,
			  (unsigned long)count[i]);
		twice += count[i] == 2;
	}
	st = braid_sim_path_stats(sim, 1);
	cr_assert_eq(st->dups, twice);
	cr_assert_eq(st->delivered, N + twice);
	cr_assert_geq(twice, N * 22 / 100);
	cr_assert_leq(twice, N * 28 / 100);
	braid_sim_destroy(sim);
}

Test(braid_sim_send, reordering_reorders)
{
	enum { N = 2000 };
	struct braid_sim_path_cfg cfg = { .delay_ns = 1000, .reorder = 0.2, .reorder_ns = 5000 };
	struct braid_sim *sim = braid_sim_create(11, 2, 2, &cfg);
	struct braid_sim_pkt pkts[PKT_MAX];
	uint32_t prev = 0, late = 0;
	int i, n, k, got = 0;
	uint64_t t;

	/* Path 1 never reorders: the control. */
	cfg.reorder = 0;
	cr_assert_eq(braid_sim_set_path(sim, 1, &cfg), 0);
	for (i = 0; i < N; i++)
		cr_assert_eq(send_idx(sim, (uint64_t)i * 100, 0, 1, 1, (uint32_t)i, 8), 0);
	while ((t = braid_sim_next_event(sim)) != UINT64_MAX) {
		n = braid_sim_recv(sim, t, 1, pkts, PKT_MAX);
		for (k = 0; k < n; k++, got++)
			cr_assert_eq(payload_check(&pkts[k]), (uint32_t)got, "no reordering on path 1");
	}
	cr_assert_eq(got, N);

	/* Path 0 holds back about one packet in five by 50 packet times. */
	got = 0;
	for (i = 0; i < N; i++) {
		t = 1000000 + (uint64_t)i * 100;
		cr_assert_eq(send_idx(sim, t, 0, 1, 0, (uint32_t)i, 8), 0);
		n = braid_sim_recv(sim, t, 1, pkts, PKT_MAX);
		for (k = 0; k < n; k++, got++) {
			uint32_t idx = payload_check(&pkts[k]);

			late += got && idx < prev;
			prev = idx;
		}
	}
	while ((n = braid_sim_recv(sim, UINT64_MAX, 1, pkts, PKT_MAX)) > 0)
		got += n;
	cr_assert_eq(got, N);
	cr_assert_gt(late, N / 10, "%u of %d packets arrived after a later-sent one", late, N);
	cr_assert_leq(late, N * 3 / 10);
	braid_sim_destroy(sim);
}

Test(braid_sim_send, reorder_holds_back_by_reorder_ns)
{
	struct braid_sim_path_cfg cfg = { .delay_ns = 1000, .reorder = 1.0, .reorder_ns = 777 };
	struct braid_sim *sim = braid_sim_create(1, 2, 1, &cfg);
	struct braid_sim_pkt pkt;

	cr_assert_eq(send_idx(sim, 10, 0, 1, 0, 1, 8), 0);
	cr_assert_eq(braid_sim_next_event(sim), 10 + 1000 + 777);
	cr_assert_eq(recv_one(sim, 1786, 1, &pkt), 0);
	cr_assert_eq(recv_one(sim, 1787, 1, &pkt), 1);
	braid_sim_destroy(sim);
}

/* ---- rate, queueing, ECN ---- */

Test(braid_sim_send, rate_queues_and_marks_ecn)
{
	/* 1 Gbit/s: 1000 bytes take 8000 ns; mark above 20 us of queue. */
	struct braid_sim_path_cfg cfg = { .delay_ns = 500, .rate_bps = 1000000000ULL,
					  .ecn_threshold_ns = 20000 };
	struct braid_sim *sim = braid_sim_create(1, 2, 2, &cfg);
	struct braid_sim_pkt pkt;
	uint64_t due;
	int i;

	for (i = 0; i < 10; i++)
		cr_assert_eq(send_idx(sim, 0, 0, 1, 0, (uint32_t)i, 1000), 0);
	cr_assert_eq(send_idx(sim, 0, 0, 1, 1, 100, 1000), 0);
	cr_assert_eq(recv_one(sim, 8499, 1, &pkt), 0);
	cr_assert_eq(braid_sim_recv(sim, 8500, 1, &pkt, 1), 1);
	cr_assert_eq(payload_check(&pkt), 0);
	cr_assert_eq(braid_sim_recv(sim, 8500, 1, &pkt, 1), 1);
	cr_assert_eq(payload_check(&pkt), 100, "path 1 has its own serialiser");
	for (i = 1; i < 10; i++) {
		due = (uint64_t)(i + 1) * 8000 + 500;
		cr_assert_eq(braid_sim_next_event(sim), due, "packet %d waits for %d before it", i, i);
		cr_assert_eq(recv_one(sim, due - 1, 1, &pkt), 0);
		cr_assert_eq(recv_one(sim, due, 1, &pkt), 1);
		cr_assert_eq(payload_check(&pkt), (uint32_t)i);
		cr_assert_eq(pkt.ecn_ce, i * 8000 > 20000, "packet %d queued %d ns", i, i * 8000);
	}
	cr_assert_eq(braid_sim_path_stats(sim, 0)->ecn_marks, 7);
	cr_assert_eq(braid_sim_path_stats(sim, 1)->ecn_marks, 0);

	/* The queue has drained: a packet now goes straight through, unmarked. */
	cr_assert_eq(send_idx(sim, 1000000, 0, 1, 0, 11, 1000), 0);
	cr_assert_eq(braid_sim_next_event(sim), 1000000 + 8000 + 500);
	cr_assert_eq(recv_one(sim, 1008500, 1, &pkt), 1);
	cr_assert_not(pkt.ecn_ce);

	/* Packets spaced wider than their serialisation time do not queue. */
	cr_assert_eq(send_idx(sim, 2000000, 0, 1, 0, 12, 500), 0);
	cr_assert_eq(send_idx(sim, 2004000, 0, 1, 0, 13, 500), 0);
	cr_assert_eq(braid_sim_next_event(sim), 2000000 + 4000 + 500);
	cr_assert_eq(recv_one(sim, 2004500, 1, &pkt), 1);
	cr_assert_eq(braid_sim_next_event(sim), 2004000 + 4000 + 500);
	braid_sim_destroy(sim);
}

Test(braid_sim_set_node_rate, host_link_serialises_before_the_paths)
{
	/* Unlimited paths, 500 ns each; node 0's own link runs at 1 Gbit/s. */
	struct braid_sim_path_cfg cfg = { .delay_ns = 500 };
	struct braid_sim *sim = braid_sim_create(1, 3, 2, &cfg);
	struct braid_sim_pkt pkt;

	cr_assert_eq(braid_sim_set_node_rate(NULL, 0, 1), -FI_EINVAL);
	cr_assert_eq(braid_sim_set_node_rate(sim, 3, 1), -FI_EINVAL);
	cr_assert_eq(braid_sim_set_node_rate(sim, -1, 1), -FI_EINVAL);
	cr_assert_eq(braid_sim_set_node_rate(sim, 0, 1000000000ULL), 0);
	/* two packets on two different paths still leave the host one after the other */
	cr_assert_eq(send_idx(sim, 0, 0, 1, 0, 1, 1000), 0);
	cr_assert_eq(send_idx(sim, 0, 0, 1, 1, 2, 1000), 0);
	/* node 2 has no link limit: its packet is not held up by node 0's */
	cr_assert_eq(send_idx(sim, 0, 2, 1, 1, 3, 1000), 0);
	cr_assert_eq(braid_sim_next_event(sim), 500);
	cr_assert_eq(recv_one(sim, 500, 1, &pkt), 1);
	cr_assert_eq(payload_check(&pkt), 3);
	cr_assert_eq(braid_sim_next_event(sim), 8000 + 500);
	cr_assert_eq(recv_one(sim, 8500, 1, &pkt), 1);
	cr_assert_eq(payload_check(&pkt), 1);
	cr_assert_eq(recv_one(sim, 16499, 1, &pkt), 0);
	cr_assert_eq(recv_one(sim, 16500, 1, &pkt), 1);
	cr_assert_eq(payload_check(&pkt), 2);
	/* a lost packet still took its turn on the host's link */
	cfg.loss = 1.0;
	cr_assert_eq(braid_sim_set_path(sim, 0, &cfg), 0);
	cr_assert_eq(send_idx(sim, 100000, 0, 1, 0, 4, 1000), 0);
	cr_assert_eq(send_idx(sim, 100000, 0, 1, 1, 5, 1000), 0);
	cr_assert_eq(braid_sim_next_event(sim), 100000 + 16000 + 500);
	/* back to unlimited */
	cr_assert_eq(braid_sim_set_node_rate(sim, 0, 0), 0);
	cr_assert_eq(recv_one(sim, 116500, 1, &pkt), 1);
	cr_assert_eq(send_idx(sim, 200000, 0, 1, 1, 6, 1000), 0);
	cr_assert_eq(braid_sim_next_event(sim), 200500);
	braid_sim_destroy(sim);
}

/* ---- paths and nodes going down ---- */

Test(braid_sim_path_up, down_drops_what_enters)
{
	struct braid_sim_path_cfg cfg = cfg_delay(1000);
	struct braid_sim *sim = braid_sim_create(1, 2, 2, &cfg);
	struct braid_sim_pkt pkts[4];

	cr_assert_eq(send_idx(sim, 0, 0, 1, 1, 1, 8), 0);
	cr_assert_eq(braid_sim_path_up(sim, 1, false), 0);
	cr_assert_eq(send_idx(sim, 10, 0, 1, 1, 2, 8), 0, "accepted, then dropped");
	cr_assert_eq(send_idx(sim, 10, 0, 1, 0, 3, 8), 0);
	cr_assert_eq(braid_sim_path_stats(sim, 1)->down_drops, 1);
	cr_assert_eq(braid_sim_path_stats(sim, 1)->sent, 2);
	cr_assert_eq(braid_sim_in_flight(sim), 2);
	cr_assert_eq(braid_sim_recv(sim, 5000, 1, pkts, 4), 2);
	cr_assert_eq(payload_check(&pkts[0]), 1, "already on the path: still arrives");
	cr_assert_eq(payload_check(&pkts[1]), 3, "the other path is unaffected");
	cr_assert_eq(braid_sim_path_up(sim, 1, true), 0);
	cr_assert_eq(send_idx(sim, 6000, 0, 1, 1, 4, 8), 0);
	cr_assert_eq(braid_sim_recv(sim, 7000, 1, pkts, 4), 1);
	cr_assert_eq(payload_check(&pkts[0]), 4);
	cr_assert_eq(braid_sim_path_stats(sim, 1)->down_drops, 1);
	stats_check_balance(sim, 2);
	braid_sim_destroy(sim);
}

Test(braid_sim_schedule, path_down_and_up_at_times)
{
	struct braid_sim_path_cfg cfg = cfg_delay(500);
	struct braid_sim *sim = braid_sim_create(1, 2, 2, &cfg);
	struct braid_sim_pkt pkts[8];
	const struct braid_sim_stats *st;

	cr_assert_eq(braid_sim_schedule(sim, 2000, BRAID_SIM_PATH_UP, 0), 0);
	cr_assert_eq(braid_sim_schedule(sim, 1000, BRAID_SIM_PATH_DOWN, 0), 0);
	cr_assert_eq(braid_sim_next_event(sim), 1000, "a scheduled event is an event");
	cr_assert_eq(send_idx(sim, 900, 0, 1, 0, 1, 8), 0);
	cr_assert_eq(send_idx(sim, 1000, 0, 1, 0, 2, 8), 0, "the path is down from 1000");
	cr_assert_eq(send_idx(sim, 1000, 0, 1, 1, 3, 8), 0);
	cr_assert_eq(send_idx(sim, 1999, 0, 1, 0, 4, 8), 0);
	cr_assert_eq(braid_sim_next_event(sim), 1400);
	cr_assert_eq(send_idx(sim, 2000, 0, 1, 0, 5, 8), 0, "and up again from 2000");
	cr_assert_eq(braid_sim_recv(sim, 3000, 1, pkts, 8), 3);
	cr_assert_eq(payload_check(&pkts[0]), 1, "in flight when the path went down");
	cr_assert_eq(payload_check(&pkts[1]), 3);
	cr_assert_eq(payload_check(&pkts[2]), 5);
	st = braid_sim_path_stats(sim, 0);
	cr_assert_eq(st->down_drops, 2);
	cr_assert_eq(st->delivered, 2);

	/* advance() applies events too, and says how many. */
	cr_assert_eq(braid_sim_schedule(sim, 4000, BRAID_SIM_PATH_DOWN, 1), 0);
	cr_assert_eq(braid_sim_schedule(sim, 5000, BRAID_SIM_PATH_UP, 1), 0);
	cr_assert_eq(braid_sim_advance(sim, 3999), 0);
	cr_assert_eq(braid_sim_advance(sim, 4500), 1);
	cr_assert_eq(braid_sim_next_event(sim), 5000);
	cr_assert_eq(send_idx(sim, 4600, 0, 1, 1, 6, 8), 0);
	cr_assert_eq(braid_sim_path_stats(sim, 1)->down_drops, 1);
	cr_assert_eq(braid_sim_advance(sim, 9000), 1);
	cr_assert_eq(braid_sim_next_event(sim), UINT64_MAX);
	cr_assert_eq(send_idx(sim, 9000, 0, 1, 1, 7, 8), 0);
	cr_assert_eq(braid_sim_recv(sim, 9500, 1, pkts, 8), 1);
	cr_assert_eq(payload_check(&pkts[0]), 7);
	stats_check_balance(sim, 2);
	braid_sim_destroy(sim);
}

Test(braid_sim_node_up, down_node_neither_sends_nor_receives)
{
	struct braid_sim_path_cfg cfg = cfg_delay(1000);
	struct braid_sim *sim = braid_sim_create(1, 3, 1, &cfg);
	struct braid_sim_pkt pkts[8];

	cr_assert_eq(send_idx(sim, 0, 0, 1, 0, 1, 8), 0);
	cr_assert_eq(send_idx(sim, 0, 2, 1, 0, 2, 8), 0);
	cr_assert_eq(send_idx(sim, 0, 0, 2, 0, 3, 8), 0);
	cr_assert_eq(send_idx(sim, 0, 1, 2, 0, 4, 8), 0);
	cr_assert_eq(braid_sim_node_up(sim, 1, false), 0);
	cr_assert_eq(braid_sim_in_flight(sim), 2, "what was in flight to node 1 is lost");
	cr_assert_eq(braid_sim_path_stats(sim, 0)->down_drops, 2);
	cr_assert_eq(send_idx(sim, 10, 0, 1, 0, 5, 8), 0);
	cr_assert_eq(send_idx(sim, 10, 1, 2, 0, 6, 8), 0);
	cr_assert_eq(braid_sim_path_stats(sim, 0)->down_drops, 4, "to and from a down node");
	cr_assert_eq(braid_sim_recv(sim, 5000, 1, pkts, 8), 0);
	cr_assert_eq(braid_sim_recv(sim, 5000, 2, pkts, 8), 2);
	cr_assert_eq(payload_check(&pkts[0]), 3);
	cr_assert_eq(payload_check(&pkts[1]), 4, "sent before node 1 went down: still arrives");

	cr_assert_eq(braid_sim_node_up(sim, 1, true), 0);
	cr_assert_eq(send_idx(sim, 6000, 0, 1, 0, 7, 8), 0);
	cr_assert_eq(braid_sim_recv(sim, 7000, 1, pkts, 8), 1);
	cr_assert_eq(payload_check(&pkts[0]), 7);

	/* Packets that arrived before the node went down stay for recv. */
	cr_assert_eq(send_idx(sim, 7000, 0, 1, 0, 8, 8), 0);
	cr_assert_eq(send_idx(sim, 8000, 0, 1, 0, 9, 8), 0);
	cr_assert_eq(braid_sim_advance(sim, 8500), 0);
	cr_assert_eq(braid_sim_node_up(sim, 1, false), 0);
	cr_assert_eq(braid_sim_recv(sim, 20000, 1, pkts, 8), 1);
	cr_assert_eq(payload_check(&pkts[0]), 8);
	stats_check_balance(sim, 1);
	braid_sim_destroy(sim);
}

Test(braid_sim_schedule, node_down_and_up_at_times)
{
	struct braid_sim_path_cfg cfg = cfg_delay(1000);
	struct braid_sim *sim = braid_sim_create(1, 2, 1, &cfg);
	struct braid_sim_pkt pkts[8];

	cr_assert_eq(braid_sim_schedule(sim, 1200, BRAID_SIM_NODE_DOWN, 1), 0);
	cr_assert_eq(braid_sim_schedule(sim, 3000, BRAID_SIM_NODE_UP, 1), 0);
	cr_assert_eq(send_idx(sim, 0, 0, 1, 0, 1, 8), 0);	/* due 1000 */
	cr_assert_eq(send_idx(sim, 200, 0, 1, 0, 2, 8), 0);	/* due 1200: just in time */
	cr_assert_eq(send_idx(sim, 400, 0, 1, 0, 3, 8), 0);	/* due 1400: lost */
	cr_assert_eq(send_idx(sim, 1100, 1, 0, 0, 4, 8), 0);	/* node 1 still up */
	cr_assert_eq(braid_sim_in_flight(sim), 4);
	cr_assert_eq(send_idx(sim, 2000, 0, 1, 0, 5, 8), 0, "to a down node: dropped");
	cr_assert_eq(send_idx(sim, 2000, 1, 0, 0, 6, 8), 0, "from a down node: dropped");
	cr_assert_eq(braid_sim_in_flight(sim), 3);
	cr_assert_eq(braid_sim_path_stats(sim, 0)->down_drops, 3);
	cr_assert_eq(braid_sim_next_event(sim), 1000);
	cr_assert_eq(send_idx(sim, 3000, 0, 1, 0, 7, 8), 0, "up again at 3000");
	cr_assert_eq(braid_sim_recv(sim, 10000, 1, pkts, 8), 3);
	cr_assert_eq(payload_check(&pkts[0]), 1);
	cr_assert_eq(payload_check(&pkts[1]), 2);
	cr_assert_eq(payload_check(&pkts[2]), 7);
	cr_assert_eq(braid_sim_recv(sim, 10000, 0, pkts, 8), 1);
	cr_assert_eq(payload_check(&pkts[0]), 4, "sent by node 1 before it went down");

	/* Events applied in time order within one call: down, then up, both passed. */
	cr_assert_eq(send_idx(sim, 20000, 0, 1, 0, 8, 8), 0);	/* due 21000: lost */
	cr_assert_eq(send_idx(sim, 20600, 0, 1, 0, 9, 8), 0);	/* due 21600 */
	cr_assert_eq(braid_sim_schedule(sim, 20900, BRAID_SIM_NODE_UP, 1), 0);
	cr_assert_eq(braid_sim_schedule(sim, 20500, BRAID_SIM_NODE_DOWN, 1), 0);
	cr_assert_eq(braid_sim_recv(sim, 30000, 1, pkts, 8), 0,
		     "both were in flight when node 1 went down at 20500");
	cr_assert_eq(braid_sim_path_stats(sim, 0)->down_drops, 5);
	stats_check_balance(sim, 1);
	braid_sim_destroy(sim);
}

/* ---- teardown ---- */

Test(braid_sim_destroy, frees_packets_in_flight)
{
	struct braid_sim_path_cfg cfg = { .delay_ns = 100000, .jitter_ns = 1000, .dup = 0.5,
					  .dup_gap_ns = 10, .reorder = 0.1, .reorder_ns = 5 };
	struct braid_sim *sim = braid_sim_create(8, 8, 4, &cfg);
	struct braid_sim_pkt pkts[PKT_MAX];
	int i;

	for (i = 0; i < 5000; i++)
		cr_assert_eq(send_idx(sim, (uint64_t)i * 10, i % 8, (i + 1) % 8, i % 4,
				      (uint32_t)i, 4 + (size_t)i % 1024), 0);
	cr_assert_eq(braid_sim_schedule(sim, 1000000, BRAID_SIM_NODE_DOWN, 3), 0);
	cr_assert_eq(braid_sim_schedule(sim, 2000000, BRAID_SIM_PATH_DOWN, 2), 0);
	cr_assert_gt(braid_sim_recv(sim, 150000, 1, pkts, PKT_MAX), 0,
		     "some delivered packets are held for the caller at destroy");
	cr_assert_gt(braid_sim_in_flight(sim), 5000);
	braid_sim_destroy(sim);	/* valgrind --leak-check=full shows nothing lost */
}
