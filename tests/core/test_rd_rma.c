/* SPDX-License-Identifier: BSD-2-Clause */
/* test_rd_rma.c: RMA and atomics over the RD engine in the sim (protocol.md §4.7): every write placed once and byte-identical, every read right, every atomic applied exactly once, under loss, duplication, reordering and path death; key, range and permission violations refused and the target untouched; a dead target fails them in bounded time. */
#include <criterion/criterion.h>
#include <rdma/fi_errno.h>

#include "braid_atomic.h"
#include "rd_harness.h"
#include "braid/braid_errno.h"

#define MS 1000000ULL
#define REGION (256 * 1024)
#define NWRITE 40
#define NREAD 20
#define NATOMIC 60
#define KEY_RW 0x1111222233334444ULL
#define KEY_RO 0x5555666677778888ULL

/* The target's registered memory: one read-write region, one read-only. */
struct regions {
	uint8_t *rw, *ro;
};

static int mr_check(void *ctx, uint64_t key, uint64_t addr, size_t len, uint32_t access,
		    void **ptr)
{
	struct regions *r = ctx;
	uint8_t *base = key == KEY_RW ? r->rw : key == KEY_RO ? r->ro : NULL;
	uint64_t b = (uint64_t)(uintptr_t)base;

	if (!base || (key == KEY_RO && (access & BRAID_RD_ACC_WRITE)))
		return -FI_EACCES;
	if (addr < b || addr - b > REGION || len > REGION - (addr - b))
		return -FI_EACCES;
	*ptr = base + (addr - b);
	return 0;
}

static uint8_t pattern(uint64_t seed, int i, size_t off)
{
	return (uint8_t)((seed * 97 + (uint64_t)i * 57 + off * 13 + (off >> 9)) & 0xff);
}

static size_t op_size(uint64_t seed, int i)
{
	uint64_t x = (seed + 3) * 0x9e3779b97f4a7c15ULL + (uint64_t)i * 0xbf58476d1ce4e5b9ULL;

	x ^= x >> 31;
	switch (x % 3) {
	case 0: return x % 16;		/* empty and tiny */
	case 1: return x % 1400;	/* one packet */
	default: return x % 5000;	/* several */
	}
}

static size_t count_flags(const struct h_node *nd, uint32_t flags)
{
	size_t n = 0, i;

	for (i = 0; i < nd->ncomps; i++)
		n += (nd->comps[i].flags & flags) == flags;
	return n;
}

struct want { size_t ops; };

static bool ops_done(struct harness *h, void *arg)
{
	struct want *w = arg;

	return h->nodes[0].ncomps >= w->ops;
}

struct scenario {
	double loss, dup, reorder;
	bool kill_path;
};

static void run_scenario(uint64_t seed, const struct scenario *sc)
{
	static uint8_t rw[REGION], ro[REGION], src[NWRITE][5000], rd_dst[NREAD][5000];
	static uint64_t fetched[NATOMIC];
	struct braid_sim_path_cfg p = {
		.delay_ns = 4000, .jitter_ns = 3000, .loss = sc->loss, .dup = sc->dup,
		.dup_gap_ns = 1500, .reorder = sc->reorder, .reorder_ns = 20000,
	};
	struct regions regs = { rw, ro };
	size_t wsize[NWRITE], rsize[NREAD], woff[NWRITE], roff[NREAD], off = 64, i;
	const uint64_t counter_at = 0;	/* the atomic counter: rw[0..8) */
	struct braid_rd_config c;
	struct harness h;
	int seen[NWRITE + NREAD + NATOMIC] = { 0 };
	uint64_t sum = 0, v;
	struct want want = { NWRITE + NREAD + NATOMIC };

	braid_rd_config_default(&c);
	c.paths = 8;
	c.epoch = 1;
	c.seed = seed;
	c.peer_timeout_ns = 10000 * MS;
	c.mr_check = mr_check;
	c.mr_ctx = &regs;
	cr_assert_eq(h_init(&h, 2, 4, &p, &c, seed), 0);
	if (sc->kill_path)
		braid_sim_schedule(h.sim, 200 * 1000, BRAID_SIM_PATH_DOWN, 1);
	memset(rw, 0xee, sizeof(rw));
	memset(rw, 0, 8);
	for (i = 0; i < REGION; i++)
		ro[i] = pattern(seed + 1000, 0, i);

	/* writes (some with CQ data), reads, and fetching adds, interleaved */
	for (i = 0; i < NWRITE + NREAD + NATOMIC; i++) {
		int k = (int)i;
		int ret;

		if (k % 3 == 0 && k / 3 < NWRITE) {
			int w = k / 3;
			struct iovec iov = { src[w], op_size(seed, w) };
			struct braid_rd_rma r = {
				.op = BRAID_RD_RMA_WRITE, .iov = &iov, .iov_count = 1,
				.peer = h_key(1), .rkey = KEY_RW, .context = (void *)(uintptr_t)(k + 1),
				.flags = (w % 2) ? BRAID_RD_CQ_DATA : 0, .data = 1000 + (uint64_t)w,
			};

			wsize[w] = iov.iov_len;
			woff[w] = off;
			off += wsize[w] + 8;
			r.raddr = (uint64_t)(uintptr_t)(rw + woff[w]);
			for (size_t b = 0; b < wsize[w]; b++)
				src[w][b] = pattern(seed, w, b);
			ret = braid_rd_rma(h.nodes[0].rd, &r, h.now);
		} else if (k % 3 == 1 && k / 3 < NREAD) {
			int q = k / 3;
			struct iovec iov = { rd_dst[q], op_size(seed, q + 100) };
			struct braid_rd_rma r = {
				.op = BRAID_RD_RMA_READ, .res = &iov, .res_count = 1, .peer = h_key(1),
				.rkey = KEY_RO, .context = (void *)(uintptr_t)(k + 1),
			};

			rsize[q] = iov.iov_len;
			roff[q] = (size_t)q * 3001 % (REGION - 5000);
			r.raddr = (uint64_t)(uintptr_t)(ro + roff[q]);
			memset(rd_dst[q], 0xcc, sizeof(rd_dst[q]));
			ret = braid_rd_rma(h.nodes[0].rd, &r, h.now);
		} else {
			static uint64_t operand[NATOMIC + NWRITE + NREAD];
			int a = k;
			struct iovec iov = { &operand[a], 8 };
			struct iovec res;
			struct braid_rd_rma r = {
				.op = BRAID_RD_RMA_ATOMIC, .iov = &iov, .iov_count = 1,
				.res = &res, .res_count = 1, .peer = h_key(1), .rkey = KEY_RW,
				.raddr = (uint64_t)(uintptr_t)(rw + counter_at), .aop = BRAID_AOP_SUM,
				.dt = BRAID_ADT_UINT64, .count = 1, .context = (void *)(uintptr_t)(k + 1),
			};

			operand[a] = (uint64_t)a * 7 + 1;
			res.iov_base = &fetched[a % NATOMIC];
			res.iov_len = 8;
			ret = braid_rd_rma(h.nodes[0].rd, &r, h.now);
			if (!ret)
				sum += operand[a];
		}
		cr_assert_eq(ret, 0, "op %d posted", k);
		if (k % 16 == 15)
			h_run(&h, h.now + 30000, NULL, NULL);
	}
	/* ops posted = NWRITE + NREAD + the rest as atomics */
	cr_assert(h_run(&h, 60000 * MS, ops_done, &want),
		  "seed %lu loss %.2f dup %.2f reorder %.2f kill %d: %zu of %zu completed",
		  (unsigned long)seed, sc->loss, sc->dup, sc->reorder, sc->kill_path,
		  h.nodes[0].ncomps, want.ops);
	h_run(&h, h.now + 10 * MS, NULL, NULL);
	cr_assert_eq(h.nodes[0].ncomps, want.ops, "no extra completions at the initiator");
	for (i = 0; i < h.nodes[0].ncomps; i++) {
		const struct braid_rd_comp *cp = &h.nodes[0].comps[i];
		int k = (int)(uintptr_t)cp->context - 1;

		cr_assert_eq(cp->err, 0, "op %d failed: %d", k, cp->err);
		cr_assert(k >= 0 && k < (int)want.ops);
		cr_assert_eq(seen[k]++, 0, "op %d completed twice", k);
	}
	/* every write byte-identical at its offset, nothing beyond it touched */
	for (i = 0; i < NWRITE; i++) {
		cr_assert_eq(memcmp(rw + woff[i], src[i], wsize[i]), 0, "write %zu bytes", i);
		cr_assert_eq(rw[woff[i] + wsize[i]], 0xee, "nothing past write %zu", i);
	}
	/* every read right */
	for (i = 0; i < NREAD; i++) {
		cr_assert_eq(memcmp(rd_dst[i], ro + roff[i], rsize[i]), 0, "read %zu bytes", i);
		cr_assert_eq(rd_dst[i][rsize[i]], 0xcc, "nothing past read %zu", i);
	}
	/* every atomic applied exactly once: the counter is the sum */
	memcpy(&v, rw + counter_at, 8);
	cr_assert_eq(v, sum, "seed %lu: counter %lu, sum of operands %lu", (unsigned long)seed,
		     (unsigned long)v, (unsigned long)sum);
	/* the target saw one event per operation, CQ data on the odd writes */
	cr_assert_eq(h.nodes[1].ncomps, want.ops, "target events");
	cr_assert_eq(count_flags(&h.nodes[1], BRAID_RD_COMP_REMOTE | BRAID_RD_COMP_WRITE |
				 BRAID_RD_COMP_CQ_DATA), NWRITE / 2);
	cr_assert_eq(count_flags(&h.nodes[1], BRAID_RD_COMP_REMOTE | BRAID_RD_COMP_ATOMIC),
		     want.ops - NWRITE - NREAD);
	h_fini(&h);
}

static const struct scenario scenarios[] = {
	{ 0, 0, 0, false },
	{ 0.05, 0, 0, false },
	{ 0.20, 0, 0, false },
	{ 0.05, 0.05, 0.20, false },
	{ 0.20, 0.10, 0.20, false },
	{ 0, 0, 0, true },
	{ 0.05, 0.02, 0.10, true },
};

Test(braid_rd_rma, exactly_once_under_faults, .timeout = 240)
{
	uint64_t seed;
	size_t s;

	for (seed = 1; seed <= 4; seed++)
		for (s = 0; s < sizeof(scenarios) / sizeof(scenarios[0]); s++)
			run_scenario(seed, &scenarios[s]);
}

/* Fetching adds: each fetched value is the counter before it, in message order. */
Test(braid_rd_rma, atomics_apply_in_order)
{
	static uint8_t rw[REGION], ro[16];
	struct braid_sim_path_cfg p = { .delay_ns = 5000, .jitter_ns = 4000, .reorder = 0.3,
					.reorder_ns = 20000, .loss = 0.05 };
	struct regions regs = { rw, ro };
	struct braid_rd_config c;
	struct harness h;
	uint64_t operand[50], fetched[50];
	struct want want = { 50 };
	int i;

	braid_rd_config_default(&c);
	c.paths = 4;
	c.epoch = 1;
	c.mr_check = mr_check;
	c.mr_ctx = &regs;
	cr_assert_eq(h_init(&h, 2, 4, &p, &c, 9), 0);
	memset(rw, 0, 8);
	for (i = 0; i < 50; i++) {
		struct iovec iov = { &operand[i], 8 }, res = { &fetched[i], 8 };
		struct braid_rd_rma r = {
			.op = BRAID_RD_RMA_ATOMIC, .iov = &iov, .iov_count = 1, .res = &res,
			.res_count = 1, .peer = h_key(1), .rkey = KEY_RW,
			.raddr = (uint64_t)(uintptr_t)rw, .aop = BRAID_AOP_SUM, .dt = BRAID_ADT_UINT64, .count = 1,
			.context = (void *)(uintptr_t)(i + 1),
		};

		operand[i] = (uint64_t)1 << (i % 40);
		cr_assert_eq(braid_rd_rma(h.nodes[0].rd, &r, h.now), 0);
	}
	cr_assert(h_run(&h, 10000 * MS, ops_done, &want));
	{
		uint64_t acc = 0;

		for (i = 0; i < 50; i++) {
			cr_assert_eq(fetched[i], acc, "fetch %d saw %lu, want %lu", i,
				     (unsigned long)fetched[i], (unsigned long)acc);
			acc += operand[i];
		}
	}
	h_fini(&h);
}

/* Bad key, range and permission: FI_EACCES at the initiator, the target untouched, counted. */
Test(braid_rd_rma, violations_refused)
{
	static uint8_t rw[REGION], ro[REGION], data[2000];
	struct braid_sim_path_cfg p = { .delay_ns = 5000 };
	struct regions regs = { rw, ro };
	struct braid_rd_config c;
	struct harness h;
	uint64_t one = 1, old = 0;
	struct want want = { 5 };
	int i;

	braid_rd_config_default(&c);
	c.epoch = 1;
	c.mr_check = mr_check;
	c.mr_ctx = &regs;
	cr_assert_eq(h_init(&h, 2, 2, &p, &c, 5), 0);
	memset(rw, 0x11, sizeof(rw));
	memset(ro, 0x22, sizeof(ro));
	memset(data, 0x77, sizeof(data));
	{
		struct iovec iov = { data, sizeof(data) }, one_iov = { &one, 8 }, res = { &old, 8 };
		struct braid_rd_rma ops[5] = {
			/* unknown key */
			{ .op = BRAID_RD_RMA_WRITE, .iov = &iov, .iov_count = 1, .rkey = 42,
			  .raddr = (uint64_t)(uintptr_t)rw },
			/* past the end of the region */
			{ .op = BRAID_RD_RMA_WRITE, .iov = &iov, .iov_count = 1, .rkey = KEY_RW,
			  .raddr = (uint64_t)(uintptr_t)(rw + REGION - 1000) },
			/* a write into a read-only region */
			{ .op = BRAID_RD_RMA_WRITE, .iov = &iov, .iov_count = 1, .rkey = KEY_RO,
			  .raddr = (uint64_t)(uintptr_t)ro },
			/* a read below the region */
			{ .op = BRAID_RD_RMA_READ, .res = &iov, .res_count = 1, .rkey = KEY_RO,
			  .raddr = (uint64_t)(uintptr_t)ro - 8 },
			/* an atomic on the read-only region */
			{ .op = BRAID_RD_RMA_ATOMIC, .iov = &one_iov, .iov_count = 1, .res = &res,
			  .res_count = 1, .rkey = KEY_RO, .raddr = (uint64_t)(uintptr_t)ro,
			  .aop = BRAID_AOP_SUM, .dt = BRAID_ADT_UINT64, .count = 1 },
		};

		for (i = 0; i < 5; i++) {
			ops[i].peer = h_key(1);
			ops[i].context = (void *)(uintptr_t)(i + 1);
			cr_assert_eq(braid_rd_rma(h.nodes[0].rd, &ops[i], h.now), 0);
		}
		cr_assert(h_run(&h, 1000 * MS, ops_done, &want));
	}
	for (i = 0; i < 5; i++) {
		cr_assert_eq(h.nodes[0].comps[i].err, FI_EACCES, "op %d", i);
		cr_assert_eq(h.nodes[0].comps[i].prov_errno, BRAID_PERR_REMOTE_ACCESS);
	}
	for (i = 0; i < REGION; i++) {
		cr_assert_eq(rw[i], 0x11, "rw byte %d untouched", i);
		cr_assert_eq(ro[i], 0x22, "ro byte %d untouched", i);
	}
	cr_assert_eq(h.nodes[1].ncomps, 0, "no target events");
	cr_assert_eq(braid_rd_get_stats(h.nodes[1].rd)->rma_refused, 5);
	h_fini(&h);
}

/* Arguments the engine refuses at once. */
Test(braid_rd_rma, bad_arguments)
{
	static uint8_t rw[REGION], ro[16];
	struct braid_sim_path_cfg p = { .delay_ns = 5000 };
	struct regions regs = { rw, ro };
	struct braid_rd_config c;
	struct harness h;
	uint64_t a = 1, b = 2, r = 0;
	float fl = 1;
	struct iovec ia = { &a, 8 }, iab[2] = { { &a, 8 }, { &b, 8 } }, ir = { &r, 8 }, ifl = { &fl, 4 };

	braid_rd_config_default(&c);
	c.epoch = 1;
	c.mr_check = mr_check;
	c.mr_ctx = &regs;
	cr_assert_eq(h_init(&h, 2, 2, &p, &c, 5), 0);
	{
		struct braid_rd_rma bor_float = { .op = BRAID_RD_RMA_ATOMIC, .iov = &ifl, .iov_count = 1,
						  .peer = h_key(1), .aop = BRAID_AOP_BOR, .dt = BRAID_ADT_FLOAT,
						  .count = 1 };
		struct braid_rd_rma short_operand = { .op = BRAID_RD_RMA_ATOMIC, .iov = &ia,
						      .iov_count = 1, .peer = h_key(1), .aop = BRAID_AOP_SUM,
						      .dt = BRAID_ADT_UINT64, .count = 2 };
		struct braid_rd_rma cswap_no_result = { .op = BRAID_RD_RMA_ATOMIC, .iov = iab,
							.iov_count = 2, .peer = h_key(1),
							.aop = BRAID_AOP_CSWAP, .dt = BRAID_ADT_UINT64, .count = 1 };
		struct braid_rd_rma read_with_data = { .op = BRAID_RD_RMA_READ, .res = &ir,
						       .res_count = 1, .peer = h_key(1),
						       .flags = BRAID_RD_CQ_DATA };
		struct braid_rd_rma no_peer = { .op = BRAID_RD_RMA_WRITE, .iov = &ia, .iov_count = 1 };
		struct braid_rd_rma read_as_write = { .op = BRAID_RD_RMA_ATOMIC, .iov = NULL,
						      .peer = h_key(1), .aop = BRAID_AOP_ATOMIC_READ,
						      .dt = BRAID_ADT_UINT64, .count = 1 };

		cr_assert_eq(braid_rd_rma(h.nodes[0].rd, &bor_float, 0), -FI_EOPNOTSUPP);
		cr_assert_eq(braid_rd_rma(h.nodes[0].rd, &short_operand, 0), -FI_EINVAL);
		cr_assert_eq(braid_rd_rma(h.nodes[0].rd, &cswap_no_result, 0), -FI_EINVAL);
		cr_assert_eq(braid_rd_rma(h.nodes[0].rd, &read_with_data, 0), -FI_EINVAL);
		cr_assert_eq(braid_rd_rma(h.nodes[0].rd, &no_peer, 0), -FI_EINVAL);
		/* BRAID_AOP_ATOMIC_READ is a fetch op: without a result buffer it is not a write */
		cr_assert_eq(braid_rd_rma(h.nodes[0].rd, &read_as_write, 0), -FI_EOPNOTSUPP);
	}
	cr_assert_eq(h.nodes[0].ncomps, 0);
	h_fini(&h);
}

/* A target that is gone: its RMA operations fail with FI_EHOSTUNREACH in bounded time. */
Test(braid_rd_rma, dead_target_fails_in_bounded_time)
{
	static uint8_t rw[REGION], ro[16], buf[3000];
	struct braid_sim_path_cfg p = { .delay_ns = 5000 };
	struct regions regs = { rw, ro };
	struct braid_rd_config c;
	struct harness h;
	int i;

	braid_rd_config_default(&c);
	c.epoch = 1;
	c.peer_timeout_ns = 50 * MS;
	c.mr_check = mr_check;
	c.mr_ctx = &regs;
	cr_assert_eq(h_init(&h, 2, 2, &p, &c, 3), 0);
	braid_sim_node_up(h.sim, 1, false);
	for (i = 0; i < 6; i++) {
		struct iovec iov = { buf, sizeof(buf) };
		struct braid_rd_rma r = {
			.op = i % 2 ? BRAID_RD_RMA_READ : BRAID_RD_RMA_WRITE, .peer = h_key(1),
			.rkey = KEY_RW, .raddr = (uint64_t)(uintptr_t)rw,
			.context = (void *)(uintptr_t)(i + 1),
		};

		if (i % 2) {
			r.res = &iov;
			r.res_count = 1;
		} else {
			r.iov = &iov;
			r.iov_count = 1;
		}
		cr_assert_eq(braid_rd_rma(h.nodes[0].rd, &r, h.now), 0);
	}
	h_run(&h, 250 * MS, NULL, NULL);
	cr_assert_eq(h.nodes[0].ncomps, 6, "every operation completed");
	for (i = 0; i < 6; i++)
		cr_assert_eq(h.nodes[0].comps[i].err, FI_EHOSTUNREACH);
	cr_assert(!braid_rd_pending(h.nodes[0].rd), "nothing left in flight");
	h_fini(&h);
}

static bool one_comp(struct harness *h, void *arg)
{
	return h->nodes[*(int *)arg].ncomps >= 1;
}

/*
 * FI_DELIVERY_COMPLETE: a send completes when its message is in a receive
 * buffer, not when it was acknowledged into the receiver's staging.
 */
Test(braid_rd_rma, delivery_complete_waits_for_the_receive)
{
	static uint8_t buf[3000], dst[3000];
	struct braid_sim_path_cfg p = { .delay_ns = 5000, .loss = 0.05 };
	struct braid_rd_config c;
	struct harness h;
	struct iovec iov = { buf, sizeof(buf) }, riov = { dst, sizeof(dst) };
	struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .flags = BRAID_RD_DELIVERY,
				   .context = (void *)1 };
	struct braid_rd_recv r = { .iov = &riov, .iov_count = 1, .context = (void *)2 };
	int sender = 0;
	size_t i;

	braid_rd_config_default(&c);
	c.epoch = 1;
	cr_assert_eq(h_init(&h, 2, 2, &p, &c, 11), 0);
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7);
	s.peer = h_key(1);
	cr_assert_eq(braid_rd_send(h.nodes[0].rd, &s, h.now), 0);
	/* long after the message was acknowledged (no receive yet): no completion */
	h_run(&h, h.now + 200 * MS, NULL, NULL);
	cr_assert_eq(h.nodes[0].ncomps, 0, "delivery complete before any receive was posted");
	cr_assert_eq(braid_rd_get_stats(h.nodes[1].rd)->drops[BRAID_DROP_NO_BUFFER], 0);
	cr_assert(braid_rd_pending(h.nodes[0].rd), "the send still waits");
	/* the receive comes: the message lands, then the sender completes */
	cr_assert_eq(braid_rd_post_recv(h.nodes[1].rd, &r, h.now), 0);
	cr_assert(h_run(&h, h.now + 1000 * MS, one_comp, &sender));
	cr_assert_eq(h.nodes[0].comps[0].err, 0);
	cr_assert(h.nodes[0].comps[0].flags & BRAID_RD_COMP_SEND);
	cr_assert_eq(h.nodes[1].ncomps, 1);
	cr_assert_eq(memcmp(dst, buf, sizeof(buf)), 0);
	h_run(&h, h.now + 10 * MS, NULL, NULL);
	cr_assert_eq(h.nodes[0].ncomps, 1, "completed once");
	cr_assert(!braid_rd_pending(h.nodes[0].rd));
	h_fini(&h);
}

/* Many delivery-complete sends under loss, duplication and reordering: each completes once. */
Test(braid_rd_rma, delivery_complete_under_faults)
{
	static uint8_t buf[64][2000], dst[64][2000];
	struct braid_sim_path_cfg p = { .delay_ns = 4000, .jitter_ns = 3000, .loss = 0.1,
					.dup = 0.05, .dup_gap_ns = 1500, .reorder = 0.2,
					.reorder_ns = 20000 };
	struct braid_rd_config c;
	struct harness h;
	struct want want = { 64 };
	int seen[64] = { 0 }, i;

	braid_rd_config_default(&c);
	c.paths = 4;
	c.epoch = 1;
	c.peer_timeout_ns = 10000 * MS;
	cr_assert_eq(h_init(&h, 2, 4, &p, &c, 12), 0);
	for (i = 0; i < 64; i++) {
		struct iovec riov = { dst[i], sizeof(dst[i]) };
		struct braid_rd_recv r = { .iov = &riov, .iov_count = 1 };

		/* half the receives are posted now, half after the sends */
		if (i % 2 == 0)
			cr_assert_eq(braid_rd_post_recv(h.nodes[1].rd, &r, h.now), 0);
	}
	for (i = 0; i < 64; i++) {
		struct iovec iov = { buf[i], (size_t)(i * 31) };
		struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .peer = h_key(1),
					   .flags = BRAID_RD_DELIVERY,
					   .context = (void *)(uintptr_t)(i + 1) };

		memset(buf[i], i, sizeof(buf[i]));
		cr_assert_eq(braid_rd_send(h.nodes[0].rd, &s, h.now), 0);
	}
	h_run(&h, h.now + 300 * MS, NULL, NULL);
	cr_assert_leq(h.nodes[0].ncomps, 32, "more completed than were received");
	for (i = 0; i < 32; i++) {
		struct iovec riov = { dst[32 + i], sizeof(dst[0]) };
		struct braid_rd_recv r = { .iov = &riov, .iov_count = 1 };

		cr_assert_eq(braid_rd_post_recv(h.nodes[1].rd, &r, h.now), 0);
	}
	cr_assert(h_run(&h, h.now + 20000 * MS, ops_done, &want), "%zu of 64", h.nodes[0].ncomps);
	h_run(&h, h.now + 10 * MS, NULL, NULL);
	cr_assert_eq(h.nodes[0].ncomps, 64);
	for (i = 0; i < 64; i++) {
		int k = (int)(uintptr_t)h.nodes[0].comps[i].context - 1;

		cr_assert_eq(h.nodes[0].comps[i].err, 0);
		cr_assert_eq(seen[k]++, 0, "send %d completed twice", k);
	}
	h_fini(&h);
}

/* A receiver that dies holding an undelivered message: the delivery-complete send fails in bounded time. */
Test(braid_rd_rma, delivery_complete_dead_receiver)
{
	static uint8_t buf[100];
	struct braid_sim_path_cfg p = { .delay_ns = 5000 };
	struct braid_rd_config c;
	struct harness h;
	struct iovec iov = { buf, sizeof(buf) };
	struct braid_rd_send s = { .iov = &iov, .iov_count = 1, .flags = BRAID_RD_DELIVERY,
				   .context = (void *)1 };
	int sender = 0;

	braid_rd_config_default(&c);
	c.epoch = 1;
	c.peer_timeout_ns = 50 * MS;
	cr_assert_eq(h_init(&h, 2, 2, &p, &c, 13), 0);
	s.peer = h_key(1);
	cr_assert_eq(braid_rd_send(h.nodes[0].rd, &s, h.now), 0);
	h_run(&h, h.now + 5 * MS, NULL, NULL);	/* arrived and acknowledged, not delivered */
	cr_assert_eq(h.nodes[0].ncomps, 0);
	braid_sim_node_up(h.sim, 1, false);
	cr_assert(h_run(&h, h.now + 400 * MS, one_comp, &sender), "no completion");
	cr_assert_eq(h.nodes[0].comps[0].err, FI_EHOSTUNREACH);
	h_fini(&h);
}

/*
 * Two peers whose send pools are full of RMA requests to each other: each
 * must still answer the other's (the answers do not come from the
 * application's send pool), so every request completes.
 */
Test(braid_rd_rma, full_send_pools_both_ways_still_answer)
{
	static uint8_t rw[REGION], ro[16], dst[2][8][64];
	struct braid_sim_path_cfg p = { .delay_ns = 5000 };
	struct regions regs = { rw, ro };
	struct braid_rd_config c;
	struct harness h;
	int n, i;

	braid_rd_config_default(&c);
	c.epoch = 1;
	c.max_sends = 8;
	c.mr_check = mr_check;
	c.mr_ctx = &regs;
	cr_assert_eq(h_init(&h, 2, 2, &p, &c, 21), 0);
	for (n = 0; n < 2; n++) {
		for (i = 0; i < 8; i++) {
			struct iovec res = { dst[n][i], 64 };
			struct braid_rd_rma r = {
				.op = BRAID_RD_RMA_READ, .res = &res, .res_count = 1,
				.peer = h_key(1 - n), .rkey = KEY_RW,
				.raddr = (uint64_t)(uintptr_t)rw, .context = (void *)(uintptr_t)(i + 1),
			};

			cr_assert_eq(braid_rd_rma(h.nodes[n].rd, &r, h.now), 0);
		}
		{
			struct iovec res = { dst[n][0], 64 };
			struct braid_rd_rma r = {
				.op = BRAID_RD_RMA_READ, .res = &res, .res_count = 1,
				.peer = h_key(1 - n), .rkey = KEY_RW, .raddr = (uint64_t)(uintptr_t)rw,
			};

			cr_assert_eq(braid_rd_rma(h.nodes[n].rd, &r, h.now), -FI_EAGAIN,
				     "the application's pool is full");
		}
	}
	h_run(&h, h.now + 100 * MS, NULL, NULL);
	for (n = 0; n < 2; n++) {
		size_t got = 0, k;

		for (k = 0; k < h.nodes[n].ncomps; k++)
			got += (h.nodes[n].comps[k].flags & BRAID_RD_COMP_READ) &&
			       !(h.nodes[n].comps[k].flags & BRAID_RD_COMP_REMOTE) &&
			       !h.nodes[n].comps[k].err;
		cr_assert_eq(got, 8, "node %d: %zu of 8 reads completed", n, got);
	}
	h_fini(&h);
}
