/* SPDX-License-Identifier: BSD-2-Clause */
/* test_rd_stage.c: the engine's hooks for device memory: a BRAID_RD_STAGED send or WRITE asks cfg.stage for each chunk before its first packet is cut, never reads a byte it was not told is ready, and its first packets leave before its last chunk is asked for; cfg.mr_written follows every write to the target's memory, and its refusal is the initiator's FI_EACCES. */
#include <criterion/criterion.h>
#include <rdma/fi_errno.h>

#include "braid_atomic.h"
#include "rd_harness.h"

#define MS	1000000ULL
#define LEN	(300 * 1024 + 17)
#define CHUNK	(32 * 1024)
#define KEY	0x1234567890abcdefULL

/*
 * The test's device: @dev holds the bytes, @stage is what the engine sees;
 * the hook copies a chunk from one to the other when asked. Staging starts
 * poisoned: a byte sent before it was staged arrives as 0xa5.
 */
static struct {
	uint8_t dev[LEN], stage[LEN], recv[LEN];
	uint64_t ready;
	int calls;
	uint64_t first_off[64];
	size_t sent_at[64];	/* datagrams node 0 had sent when each call came */
	size_t sent;
	void *context;
} st;

/* a ring of st.ring bytes (0: staging as long as the message) */
static uint64_t ring_len;

static uint64_t stage_hook(void *ctx, void *op_context, uint64_t off, uint64_t len)
{
	(void)ctx;
	cr_assert_eq(op_context, st.context);
	cr_assert_geq(off + len, st.ready + 1, "asked for bytes already ready");
	cr_assert_leq(off, st.ready, "a gap: bytes before %lu never asked for", (unsigned long)off);
	cr_assert_lt(st.calls, 64);
	st.first_off[st.calls] = off;
	st.sent_at[st.calls++] = st.sent;
	while (st.ready < off + len) {
		uint64_t n = LEN - st.ready < CHUNK ? LEN - st.ready : CHUNK;

		/* (a ring's chunks do not wrap: it is a whole number of them) */
		memcpy(st.stage + (ring_len ? st.ready % ring_len : st.ready), st.dev + st.ready, n);
		st.ready += n;
	}
	return st.ready;
}

static void tap(struct harness *h, int src, int dst, const uint8_t *buf, size_t len, void *arg)
{
	(void)h;
	(void)dst;
	(void)buf;
	(void)len;
	(void)arg;
	if (src == 0)
		st.sent++;
}

static bool both_done(struct harness *h, void *arg)
{
	(void)arg;
	return h->nodes[0].ncomps >= 1 && h->nodes[1].ncomps >= 1;
}

/* the target's region (key KEY) and what its mr_written hook saw */
static uint8_t region[LEN];
static struct {
	int calls;
	uint64_t addr;
	size_t len;
	bool placed;	/* the whole range was in place when the hook came */
	bool fail;
} wr;

static int mr_check(void *ctx, uint64_t key, uint64_t addr, size_t len, uint32_t access,
		    void **ptr)
{
	uint64_t b = (uint64_t)(uintptr_t)region;

	(void)ctx;
	(void)access;
	if (key != KEY || addr < b || addr - b > LEN || len > LEN - (addr - b))
		return -FI_EACCES;
	*ptr = region + (addr - b);
	return 0;
}

static int mr_written(void *ctx, uint64_t key, uint64_t addr, size_t len)
{
	(void)ctx;
	cr_assert_eq(key, KEY);
	wr.calls++;
	wr.addr = addr;
	wr.len = len;
	wr.placed = len != LEN || !memcmp(region, st.dev, LEN);
	return wr.fail ? -FI_EIO : 0;
}

static void staged_setup_lossy(struct harness *h, struct braid_rd_config *c, double loss,
			       uint32_t window)
{
	struct braid_sim_path_cfg p = { .delay_ns = 5000, .jitter_ns = 2000, .loss = loss,
					.reorder = loss, .reorder_ns = 8000 };

	memset(&st, 0, sizeof(st));
	for (size_t i = 0; i < LEN; i++)
		st.dev[i] = (uint8_t)(i * 7 + (i >> 10));
	memset(st.stage, 0xa5, LEN);
	braid_rd_config_default(c);
	c->paths = 4;
	c->epoch = 1;
	c->seed = 11;
	if (window)
		c->window = c->init_cwnd = window;
	ring_len = 0;
	c->stage = stage_hook;
	c->mr_check = mr_check;
	c->mr_written = mr_written;
	memset(region, 0, sizeof(region));
	memset(&wr, 0, sizeof(wr));
	cr_assert_eq(h_init(h, 2, 4, &p, c, 11), 0);
	h->tap = tap;
}

static void staged_setup(struct harness *h, struct braid_rd_config *c)
{
	staged_setup_lossy(h, c, 0, 0);
}

Test(rd_stage, send__chunks_asked_in_order_before_their_packets)
{
	struct braid_rd_config c;
	struct harness h;
	struct iovec siov = { st.stage, LEN }, riov = { st.recv, LEN };
	struct braid_rd_send s = { .iov = &siov, .iov_count = 1, .peer = h_key(1),
				   .flags = BRAID_RD_STAGED, .context = &st };
	struct braid_rd_recv r = { .iov = &riov, .iov_count = 1 };

	staged_setup(&h, &c);
	st.context = &st;
	cr_assert_eq(braid_rd_post_recv(h.nodes[1].rd, &r, h.now), 0);
	cr_assert_eq(braid_rd_send(h.nodes[0].rd, &s, h.now), 0);
	cr_assert_eq(st.calls, 0, "nothing is asked before packets are cut");
	cr_assert(h_run(&h, 5000 * MS, both_done, NULL));
	cr_assert_eq(h.nodes[0].comps[0].err, 0);
	cr_assert_eq(h.nodes[1].comps[0].err, 0);
	cr_assert_eq(h.nodes[1].comps[0].len, LEN);
	cr_assert_eq(memcmp(st.recv, st.dev, LEN), 0, "a byte went before it was staged");
	/* one call a chunk, at the packet that first needs a byte of it */
	cr_assert_eq(st.calls, (LEN + CHUNK - 1) / CHUNK);
	for (int i = 0; i < st.calls; i++)
		cr_assert(st.first_off[i] <= (uint64_t)i * CHUNK &&
			  (uint64_t)i * CHUNK - st.first_off[i] < c.mtu,
			  "call %d at %lu", i, (unsigned long)st.first_off[i]);
	/* the first packets were on the wire before the last chunk was asked for */
	cr_assert_eq(st.sent_at[0], 0);
	cr_assert_gt(st.sent_at[st.calls - 1], 0);
	h_fini(&h);
}

static bool initiator_done(struct harness *h, void *arg)
{
	return h->nodes[0].ncomps >= (size_t)(uintptr_t)arg;
}

/* a staged WRITE: its chunks asked for as a send's; the hook after the whole write is placed */
Test(rd_stage, write__staged_and_written_hook)
{
	struct braid_rd_config c;
	struct harness h;
	struct iovec siov = { st.stage, LEN };
	struct braid_rd_rma w = { .op = BRAID_RD_RMA_WRITE, .iov = &siov, .iov_count = 1,
				  .peer = h_key(1), .rkey = KEY, .flags = BRAID_RD_STAGED,
				  .context = &st };

	staged_setup(&h, &c);
	st.context = &st;
	w.raddr = (uint64_t)(uintptr_t)region;
	cr_assert_eq(braid_rd_rma(h.nodes[0].rd, &w, h.now), 0);
	cr_assert(h_run(&h, 5000 * MS, initiator_done, (void *)1));
	cr_assert_eq(h.nodes[0].comps[0].err, 0);
	cr_assert_eq(memcmp(region, st.dev, LEN), 0);
	cr_assert_eq(st.calls, (LEN + CHUNK - 1) / CHUNK);
	cr_assert_eq(wr.calls, 1);
	cr_assert_eq(wr.addr, (uint64_t)(uintptr_t)region);
	cr_assert_eq(wr.len, LEN);
	cr_assert(wr.placed, "the hook came before the write was all in place");
	h_fini(&h);
}

/* atomics that write call the hook for their elements, a read does not; a refusal is FI_EACCES */
Test(rd_stage, atomic__written_hook)
{
	struct braid_rd_config c;
	struct harness h;
	uint64_t opnd = 5, res = 0;
	struct iovec oiov = { &opnd, 8 }, riov = { &res, 8 };
	struct braid_rd_rma a = { .op = BRAID_RD_RMA_ATOMIC, .iov = &oiov, .iov_count = 1,
				  .res = &riov, .res_count = 1, .peer = h_key(1), .rkey = KEY,
				  .aop = BRAID_AOP_SUM, .dt = BRAID_ADT_UINT64, .count = 1 };
	uint64_t v;

	staged_setup(&h, &c);
	a.raddr = (uint64_t)(uintptr_t)region + 64;
	cr_assert_eq(braid_rd_rma(h.nodes[0].rd, &a, h.now), 0);
	cr_assert(h_run(&h, 5000 * MS, initiator_done, (void *)1));
	cr_assert_eq(h.nodes[0].comps[0].err, 0);
	cr_assert_eq(wr.calls, 1);
	cr_assert_eq(wr.addr, a.raddr);
	cr_assert_eq(wr.len, 8);
	/* a read: no hook */
	a.aop = BRAID_AOP_ATOMIC_READ;
	a.iov_count = 0;
	cr_assert_eq(braid_rd_rma(h.nodes[0].rd, &a, h.now), 0);
	cr_assert(h_run(&h, h.now + 5000 * MS, initiator_done, (void *)2));
	cr_assert_eq(h.nodes[0].comps[1].err, 0);
	cr_assert_eq(res, 5);
	cr_assert_eq(wr.calls, 1);
	/* the hook refuses: the initiator hears FI_EACCES */
	wr.fail = true;
	a.aop = BRAID_AOP_SUM;
	a.iov_count = 1;
	cr_assert_eq(braid_rd_rma(h.nodes[0].rd, &a, h.now), 0);
	cr_assert(h_run(&h, h.now + 5000 * MS, initiator_done, (void *)3));
	cr_assert_eq(h.nodes[0].comps[2].err, FI_EACCES);
	memcpy(&v, region + 64, 8);
	cr_assert_eq(v, 10, "the element was changed, the hook refused only its copy");
	h_fini(&h);
}

/*
 * A message much longer than its staging goes round a ring of
 * braid_rd_stage_ring() bytes and two chunks, under loss and reordering:
 * every resend still finds its bytes (a chunk is refilled only when the
 * bytes it held were all acknowledged), and every byte arrives.
 */
Test(rd_stage, send__through_a_ring_under_loss)
{
	struct braid_rd_config c;
	struct harness h;
	struct iovec siov, riov = { st.recv, LEN };
	struct braid_rd_send s = { .iov = &siov, .iov_count = 1, .peer = h_key(1),
				   .flags = BRAID_RD_STAGED, .context = &st, .staged_len = LEN };
	struct braid_rd_recv r = { .iov = &riov, .iov_count = 1 };
	size_t need;

	staged_setup_lossy(&h, &c, 0.05, 16);
	st.context = &st;
	need = braid_rd_stage_ring(h.nodes[0].rd);
	cr_assert_eq(need, 16 * (c.mtu - sizeof(struct braid_rd_data_hdr)));
	ring_len = (need + CHUNK - 1) / CHUNK * CHUNK + 2 * CHUNK;
	cr_assert_lt(ring_len * 2, LEN, "the message goes round the ring twice at least");
	siov = (struct iovec){ st.stage, ring_len };
	/* a ring shorter than the engine needs, a length shorter than the ring: refused */
	siov.iov_len = need - 1;
	cr_assert_eq(braid_rd_send(h.nodes[0].rd, &s, h.now), -FI_EINVAL);
	siov.iov_len = ring_len;
	cr_assert_eq(braid_rd_post_recv(h.nodes[1].rd, &r, h.now), 0);
	cr_assert_eq(braid_rd_send(h.nodes[0].rd, &s, h.now), 0);
	cr_assert(h_run(&h, 20000 * MS, both_done, NULL));
	cr_assert_eq(h.nodes[0].comps[0].err, 0);
	cr_assert_eq(h.nodes[1].comps[0].err, 0);
	cr_assert_eq(h.nodes[1].comps[0].len, LEN);
	cr_assert_eq(memcmp(st.recv, st.dev, LEN), 0, "a byte went from a chunk refilled too soon");
	cr_assert_eq(st.calls, (LEN + CHUNK - 1) / CHUNK);
	cr_assert_gt(braid_rd_get_stats(h.nodes[0].rd)->retx_pkts, 0,
		     "nothing was resent: the loss did not exercise the ring");
	h_fini(&h);
}

/* what a staged operation needs: the hook, and no inject */
Test(rd_stage, staged__refused_without_hook_or_with_inject)
{
	struct braid_rd_config c;
	struct harness h;
	struct iovec siov = { st.stage, 100 };
	struct braid_rd_send s = { .iov = &siov, .iov_count = 1, .peer = h_key(1),
				   .flags = BRAID_RD_STAGED | BRAID_RD_INJECT };
	struct braid_rd_rma r = { .op = BRAID_RD_RMA_READ, .res = &siov, .res_count = 1,
				  .peer = h_key(1), .rkey = KEY, .flags = BRAID_RD_STAGED };

	staged_setup(&h, &c);
	cr_assert_eq(braid_rd_send(h.nodes[0].rd, &s, h.now), -FI_EINVAL);
	cr_assert_eq(braid_rd_rma(h.nodes[0].rd, &r, h.now), -FI_EINVAL);
	h_fini(&h);
	c.stage = NULL;
	cr_assert_eq(h_init(&h, 2, 4, &(struct braid_sim_path_cfg){ .delay_ns = 5000 }, &c, 11), 0);
	s.flags = BRAID_RD_STAGED;
	cr_assert_eq(braid_rd_send(h.nodes[0].rd, &s, h.now), -FI_EINVAL);
	h_fini(&h);
}
