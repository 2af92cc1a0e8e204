/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_rd_input.c: libFuzzer target for the RD engine's receive path and the
 * wire decoders: every input is a config byte and a sequence of packets
 * (fuzz_common.h) fed to one engine that has sends, RMA operations and
 * receives of its own in flight. Some packets take the provider's receive
 * placement (braid_rd_place(), the payload copied where it says, then
 * braid_rd_input_placed()); after each packet the timers run, the output is
 * drained into datagrams and the completions are polled. Nothing may crash,
 * read or write out of bounds, leak or hit UB; placement must aim inside the
 * application's buffers, and every datagram sent must pass the receive checks.
 */
#include <stdbool.h>
#include <rdma/fi_errno.h>

#include "braid_atomic.h"
#include "braid_hdr.h"
#include "braid_peer.h"
#include "braid_rd.h"
#include "fuzz_common.h"
#include "rd_dgram.h"

#define NRECV		4
#define CLAIM		NRECV	/* rx[CLAIM]: the buffer a claimed message goes to */
#define STEP_NS		5000

struct rd_fuzz {
	struct braid_rd *rd;
	struct braid_peer_table *t;
	/** @app: where the engine may place payloads: receives, the region, RMA results. */
	struct fuzz_bufs app;
	/** @src: what we send. */
	struct fuzz_bufs src;
	struct fuzz_region region;
	struct fuzz_recv rx[NRECV + 1];
	uint8_t *dgram;
	uint8_t conf, napp;
	uint64_t now;
};

/*
 * call_rcu without liburcu's worker thread. The peer table frees its entries
 * by urcu_memb_call_rcu(), whose worker naps 10 ms per batch, and closing a
 * table waits for it (an RCU barrier): 10 ms an input, a hundred inputs a
 * second. This target has one thread and no reader outlives an input, so
 * the callbacks wait here (linked through their own rcu_head) and run once
 * the input's table is closed: every input frees all it allocated, for the
 * leak check, and nothing runs behind its back.
 */
static struct rcu_head *rcu_queue;

void urcu_memb_call_rcu(struct rcu_head *head, void (*func)(struct rcu_head *head))
{
	head->func = func;
	head->next.next = (struct cds_wfcq_node *)(void *)rcu_queue;
	rcu_queue = head;
}

static void rcu_run_queue(void)
{
	while (rcu_queue) {
		struct rcu_head *h = rcu_queue;

		rcu_queue = (struct rcu_head *)(void *)h->next.next;
		h->func(h);
	}
}

static int mr_check(void *ctx, uint64_t key, uint64_t addr, size_t len, uint32_t access,
		    void **ptr)
{
	(void)access;
	return fuzz_region_map(ctx, key, addr, len, ptr) ? -FI_EACCES : 0;
}

/* receive i: 0 one buffer, 1 tagged (any tag), 2 three iovs, 3 FI_MULTI_RECV */
static void rd_post_recvs(struct rd_fuzz *f)
{
	for (int i = 0; i < NRECV; i++) {
		struct braid_rd_recv r = {
			.iov = f->rx[i].iov, .iov_count = (size_t)f->rx[i].cnt,
			.flags = i == 1 ? BRAID_RD_TAGGED : i == 3 ? BRAID_RD_MULTI : 0,
			.ignore = ~0ull, .context = (void *)(uintptr_t)(i + 1), .min_free = 256,
		};

		if (!f->rx[i].posted && braid_rd_post_recv(f->rd, &r, f->now) == 0)
			f->rx[i].posted = true;
	}
}

static void rd_comp(struct rd_fuzz *f, const struct braid_rd_comp *c)
{
	uintptr_t i = (uintptr_t)c->context - 1;

	/* a peek's completion moves no data (no buffer): its length is the message's */
	if (!(c->flags & BRAID_RD_COMP_RECV) || i > CLAIM || (i == CLAIM && !c->buf))
		return;
	fuzz_recv_check(&f->rx[i], &f->app, c->buf, c->len);
	if (i != 3 || (c->flags & BRAID_RD_COMP_MULTI_RECV) || c->err)
		f->rx[i].posted = false;
}

/* timers, then every datagram to send (within the MTU, well formed), then the completions */
static void rd_drain(struct rd_fuzz *f)
{
	struct braid_rd_out out[64];
	struct braid_rd_comp comps[16];
	int n;

	if (braid_rd_next_deadline(f->rd) <= f->now)
		braid_rd_timer(f->rd, f->now);
	while ((n = braid_rd_output(f->rd, f->now, out, 64)) > 0) {
		for (int k = 0; k < n;) {
			size_t len = rd_dgram_copy(out + k, n - k, f->dgram, &k);

			if (f->dgram[2] == BRAID_PKT_RD_BUNDLE)
				FUZZ_CHECK(braid_rd_bundle_check(f->dgram, len) > 0);
			else
				FUZZ_CHECK(braid_base_hdr_check(f->dgram, len) > 0);
			if ((f->conf & FRD_CFG_UNSENT) && k < n) {
				/* the wire is full: the rest goes back */
				braid_rd_unsent(f->rd, out + k, n - k);
				break;
			}
		}
	}
	while ((n = braid_rd_poll(f->rd, comps, 16)) > 0)
		for (int i = 0; i < n; i++)
			rd_comp(f, &comps[i]);
}

/*
 * The provider's receive placement (providers/braid_rdm.c, rdm_rx_direct):
 * the header peeked, the payload received into the iovs braid_rd_place()
 * gives, the header alone handed to braid_rd_input_placed(). Return: false
 * when the packet has no place and goes the usual way.
 */
static bool rd_placed(struct rd_fuzz *f, const uint8_t *pkt, size_t len, uint32_t src,
		      int32_t route, bool ecn)
{
	struct iovec iov[BRAID_RD_IOV_MAX];
	size_t peek = len < BRAID_RD_MAX_HDR ? len : BRAID_RD_MAX_HDR, hlen, room = 0, at;
	uint8_t *hdr = fuzz_dup(pkt, peek);
	int k = braid_rd_place(f->rd, hdr, peek, len, src, iov, BRAID_RD_IOV_MAX, f->now);

	free(hdr);
	if (k <= 0)
		return false;
	FUZZ_CHECK(k <= BRAID_RD_IOV_MAX);
	hlen = (size_t)pkt[6] << 8 | pkt[7];
	FUZZ_CHECK(hlen <= peek);
	for (int i = 0; i < k; i++) {
		FUZZ_CHECK(fuzz_bufs_hold(&f->app, &iov[i]));
		room += iov[i].iov_len;
	}
	if (room < len - hlen)
		return true;	/* the wire truncates it: dropped */
	at = hlen;
	for (int i = 0; i < k && at < len; i++) {
		size_t n = iov[i].iov_len < len - at ? iov[i].iov_len : len - at;

		memcpy(iov[i].iov_base, pkt + at, n);
		at += n;
	}
	hdr = fuzz_dup(pkt, hlen);
	braid_rd_input_placed(f->rd, hdr, len, src, route, ecn, f->now);
	free(hdr);
	return true;
}

static void rd_packet(void *state, uint8_t ctl, uint8_t *pkt, size_t len)
{
	struct rd_fuzz *f = state;
	uint32_t src = FRD_LOCAL_IP + (ctl & FRD_CTL_SRC);
	int32_t route = (ctl & FRD_CTL_ROUTE) >> 5;
	bool ecn = ctl & FRD_CTL_ECN;

	route = route ? 40000 + route : BRAID_RD_ROUTE_NONE;
	if (!(ctl & FRD_CTL_PLACE) || !rd_placed(f, pkt, len, src, route, ecn))
		braid_rd_input_from(f->rd, pkt, len, src, route, ecn, f->now);
	if (ctl & FRD_CTL_APP) {
		/* fi_tagged(3)'s peek, claim and discard in turn, on any tagged message */
		static const uint32_t modes[] = {
			BRAID_RD_PEEK, BRAID_RD_PEEK | BRAID_RD_CLAIM, BRAID_RD_CLAIM,
			BRAID_RD_PEEK | BRAID_RD_DISCARD, BRAID_RD_PEEK | BRAID_RD_CLAIM,
			BRAID_RD_CLAIM | BRAID_RD_DISCARD,
		};
		struct braid_rd_recv peek = {
			.iov = f->rx[CLAIM].iov, .iov_count = (size_t)f->rx[CLAIM].cnt,
			.flags = BRAID_RD_TAGGED, .ignore = ~0ull,
			.context = (void *)(uintptr_t)(CLAIM + 1),
		};

		rd_post_recvs(f);
		braid_rd_peek(f->rd, &peek, modes[f->napp++ % 6], f->now);
		braid_rd_flush_acks(f->rd);
	}
	f->now = fuzz_time(f->now, ctl & FRD_CTL_JUMP, braid_rd_next_deadline(f->rd), STEP_NS);
	rd_drain(f);
}

/* a message, a tagged inject with CQ data and delivery complete, a READ, a WRITE, a fetching add */
static void rd_ops(struct rd_fuzz *f)
{
	uint64_t peer = braid_peer_key(FRD_PEER_IP, FRD_PEER_PORT);
	struct iovec msg = { fuzz_buf(&f->src, 3000), 3000 }, small = { fuzz_buf(&f->src, 8), 8 };
	struct iovec wr = { fuzz_buf(&f->src, 1500), 1500 }, opnd = { fuzz_buf(&f->src, 8), 8 };
	struct iovec res[2] = { { fuzz_buf(&f->app, 1000), 1000 },
				{ fuzz_buf(&f->app, 1000), 1000 } };
	struct iovec fetched = { fuzz_buf(&f->app, 8), 8 };
	struct braid_rd_send s0 = { .iov = &msg, .iov_count = 1, .peer = peer,
				    .context = (void *)101 };
	struct braid_rd_send s1 = {
		.iov = &small, .iov_count = 1, .peer = peer, .tag = 0x55, .data = 0x66,
		.flags = BRAID_RD_TAGGED | BRAID_RD_CQ_DATA | BRAID_RD_INJECT | BRAID_RD_DELIVERY,
		.context = (void *)102,
	};
	struct braid_rd_rma ops[] = {
		{ .op = BRAID_RD_RMA_READ, .res = res, .res_count = 2, .peer = peer, .rkey = 0x99,
		  .raddr = 0x1000, .context = (void *)103 },
		{ .op = BRAID_RD_RMA_WRITE, .iov = &wr, .iov_count = 1, .peer = peer, .rkey = 0x99,
		  .raddr = 0x2000, .data = 0x77, .flags = BRAID_RD_CQ_DATA,
		  .context = (void *)104 },
		{ .op = BRAID_RD_RMA_ATOMIC, .iov = &opnd, .iov_count = 1, .res = &fetched,
		  .res_count = 1, .peer = peer, .rkey = 0x99, .raddr = 0x3000, .aop = BRAID_AOP_SUM,
		  .dt = BRAID_ADT_UINT64, .count = 1, .context = (void *)105 },
	};

	braid_rd_send(f->rd, &s0, f->now);
	braid_rd_send(f->rd, &s1, f->now);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		braid_rd_rma(f->rd, &ops[i], f->now);
}

static void rd_open(struct rd_fuzz *f, uint8_t conf)
{
	static const size_t rx_len[NRECV + 1][3] = {
		{ 3000 }, { 3000 }, { 100, 1000, 2000 }, { 4096 }, { 1000, 1000 },
	};
	struct braid_rd_config cfg;

	memset(f, 0, sizeof(*f));
	f->conf = conf;
	f->now = 1000000;
	f->region = (struct fuzz_region){ FRD_REGION_KEY, FRD_REGION_BASE,
					  fuzz_buf(&f->app, FRD_REGION_LEN), FRD_REGION_LEN };
	f->dgram = fuzz_buf(&f->src, FRD_MTU);
	for (int i = 0; i <= CLAIM; i++)
		fuzz_recv_init(&f->rx[i], &f->app, rx_len[i]);
	braid_rd_config_default(&cfg);
	cfg.local_ip = FRD_LOCAL_IP;
	cfg.local_port = 4000;
	cfg.epoch = FRD_EPOCH;
	cfg.mtu = FRD_MTU;
	cfg.paths = 4;
	cfg.max_flows = 3;
	cfg.max_sends = cfg.max_recvs = 16;
	cfg.stage_pkts = conf & FRD_CFG_FEW ? 4 : 16;
	cfg.max_msgs = conf & FRD_CFG_FEW ? 4 : 16;
	cfg.window = conf & FRD_CFG_WINDOW16 ? 16 : BRAID_RD_MAX_WINDOW;
	cfg.rdv_threshold = conf & FRD_CFG_RDV ? 2000 : 0;
	cfg.bundle = !(conf & FRD_CFG_NO_BUNDLE);
	cfg.path_health = !(conf & FRD_CFG_NO_HEALTH);
	cfg.rx_queue_pkts = conf & FRD_CFG_RXQ ? 4 : 0;
	cfg.mr_check = mr_check;
	cfg.mr_ctx = &f->region;
	if (braid_peer_table_open(&f->t, 16, NULL) || braid_rd_open(&cfg, f->t, &f->rd))
		abort();
	rd_post_recvs(f);
	rd_ops(f);
	rd_drain(f);
}

static void rd_close(struct rd_fuzz *f)
{
	size_t sends, recvs;

	braid_rd_room(f->rd, &sends, &recvs);
	(void)braid_rd_pending(f->rd);
	braid_rd_cancel(f->rd, (void *)1);
	rd_drain(f);
	braid_rd_close(f->rd);
	braid_peer_table_close(f->t);
	rcu_run_queue();
	fuzz_bufs_free(&f->app);
	fuzz_bufs_free(&f->src);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rd_fuzz f;

	if (!size)
		return 0;
	rd_open(&f, data[0]);
	fuzz_records(data, size, rd_packet, &f);
	rd_close(&f);
	return 0;
}
