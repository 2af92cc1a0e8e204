/* SPDX-License-Identifier: BSD-2-Clause */
/* test_rdm.c: braid's native FI_EP_RDM (the RD engine over UDP) through the public libfabric API. */
#include <rdma/fi_tagged.h>

#include "prov_test.h"

struct rdm {
	struct pt_dom d;
	struct pt_ep a, b;
};

/* braid's RDM entry for an application of API @version asking for @caps */
static struct fi_info *rdm_info_for(uint32_t version, uint64_t caps)
{
	struct fi_info *hints = pt_hints(FI_EP_RDM), *list = NULL, *info;
	int ret;

	hints->caps = caps;
	ret = fi_getinfo(version, "127.0.0.1", "0", FI_SOURCE, hints, &list);
	fi_freeinfo(hints);
	cr_assert_eq(ret, 0, "fi_getinfo(braid RDM) = %d", ret);
	/* "braid" gives braid's own endpoint first (not ofi_rxd layered over braid) */
	cr_assert(pt_is_plain_braid(list), "first entry from %s", list->fabric_attr->prov_name);
	info = pt_take_plain_braid(list);
	cr_assert_eq(info->ep_attr->type, FI_EP_RDM);
	return info;
}

static struct fi_info *rdm_info(void)
{
	return rdm_info_for(PT_VERSION, FI_MSG | FI_TAGGED | FI_SOURCE | FI_DIRECTED_RECV |
					FI_MULTI_RECV);
}

/* the pair @r of @info's endpoints, a and b, each with CQs (and counters) */
static void rdm_open_info(struct rdm *r, struct fi_info *info, bool cntrs)
{
	memset(r, 0, sizeof(*r));
	r->d.info = info;
	cr_assert_eq(fi_fabric(r->d.info->fabric_attr, &r->d.fabric, NULL), 0);
	cr_assert_eq(fi_domain(r->d.fabric, r->d.info, &r->d.domain, NULL), 0);
	pt_ep_create(&r->d, &r->a, NULL);
	pt_ep_create(&r->d, &r->b, NULL);
	pt_ep_bind_cqs(&r->d, &r->a, FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE, 0, 0);
	pt_ep_bind_cqs(&r->d, &r->b, FI_CQ_FORMAT_TAGGED, FI_WAIT_UNSPEC, 0, 0);
	if (cntrs) {
		pt_ep_bind_cntrs(&r->d, &r->a);
		pt_ep_bind_cntrs(&r->d, &r->b);
	}
	pt_ep_connect(&r->a, &r->b);
	pt_ep_connect(&r->b, &r->a);
	pt_ep_enable(&r->a);
	pt_ep_enable(&r->b);
}

static void rdm_open(struct rdm *r, bool cntrs)
{
	rdm_open_info(r, rdm_info(), cntrs);
}

static void rdm_close(struct rdm *r)
{
	pt_ep_close(&r->a);
	pt_ep_close(&r->b);
	pt_dom_close(&r->d);
}

/* Poll @cq for one entry (success or error) while progressing both sides; bounded. */
static ssize_t rdm_wait(struct rdm *r, struct fid_cq *cq, struct fi_cq_tagged_entry *e,
			fi_addr_t *src, struct fi_cq_err_entry *err, long ms)
{
	long deadline = pt_now_ms() + ms;
	ssize_t ret;

	do {
		(void)fi_cq_read(r->a.tx_cq, NULL, 0);
		(void)fi_cq_read(r->b.tx_cq, NULL, 0);
		(void)fi_cq_read(r->a.rx_cq, NULL, 0);
		(void)fi_cq_read(r->b.rx_cq, NULL, 0);
		ret = src ? fi_cq_readfrom(cq, e, 1, src) : fi_cq_read(cq, e, 1);
		if (ret == -FI_EAVAIL && err) {
			memset(err, 0, sizeof(*err));
			return fi_cq_readerr(cq, err, 0) == 1 ? -FI_EAVAIL : -FI_EOTHER;
		}
	} while (ret == -FI_EAGAIN && pt_now_ms() < deadline);
	return ret;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 10));
}

Test(fi_send, rdm_sizes_both_directions, .timeout = 60)
{
	/* dst: one byte more than the largest message, to see nothing lands past it */
	static uint8_t src[4 << 20], dst[(4 << 20) + 1];
	size_t sizes[] = { 0, 1, 1000, 65451, 65452, 100000, 4 << 20 };
	struct fi_cq_tagged_entry e;
	struct rdm r;

	rdm_open(&r, false);
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		for (int dir = 0; dir < 2; dir++) {
			struct pt_ep *tx = dir ? &r.b : &r.a, *rx = dir ? &r.a : &r.b;

			fill(src, sizes[k], (unsigned)(k + dir));
			memset(dst, 0, sizes[k] + 1);
			cr_assert_eq(fi_recv(rx->ep, dst, sizeof(dst), NULL, FI_ADDR_UNSPEC, (void *)1), 0);
			cr_assert_eq(fi_send(tx->ep, src, sizes[k], NULL, tx->peer, (void *)2), 0);
			cr_assert_eq(rdm_wait(&r, rx->rx_cq, &e, NULL, NULL, 10000), 1,
				     "size %zu dir %d received", sizes[k], dir);
			cr_assert_eq(e.len, sizes[k]);
			cr_assert_eq(e.op_context, (void *)1);
			cr_assert(e.flags & FI_RECV && e.flags & FI_MSG);
			cr_assert_eq(memcmp(dst, src, sizes[k]), 0, "size %zu intact", sizes[k]);
			cr_assert_eq(dst[sizes[k]], 0, "nothing past the message");
			cr_assert_eq(rdm_wait(&r, tx->tx_cq, &e, NULL, NULL, 10000), 1);
			cr_assert_eq(e.op_context, (void *)2);
			cr_assert(e.flags & FI_SEND);
		}
	}
	rdm_close(&r);
}

Test(fi_tsend, tags_ignore_unexpected_directed_and_source)
{
	uint8_t a[64] = { 0 }, b[64] = { 0 };
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	struct rdm r;

	rdm_open(&r, false);
	/* unexpected: sent before any receive is posted */
	cr_assert_eq(fi_tsend(r.a.ep, "first", 6, NULL, r.a.peer, 0x1234, (void *)1), 0);
	cr_assert_eq(fi_tsend(r.a.ep, "second", 7, NULL, r.a.peer, 0x5678, (void *)2), 0);
	cr_assert_eq(rdm_wait(&r, r.a.tx_cq, &e, NULL, NULL, 5000), 1);
	cr_assert_eq(rdm_wait(&r, r.a.tx_cq, &e, NULL, NULL, 5000), 1);
	/* a tag that matches nothing waits; ignore bits select the second message first */
	cr_assert_eq(fi_trecv(r.b.ep, a, sizeof(a), NULL, FI_ADDR_UNSPEC, 0x9999, 0, (void *)3), 0);
	cr_assert_eq(fi_trecv(r.b.ep, b, sizeof(b), NULL, r.b.peer, 0x5600, 0xff, (void *)4), 0);
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, &src, NULL, 5000), 1);
	cr_assert_eq(e.op_context, (void *)4);
	cr_assert_eq(e.tag, 0x5678);
	cr_assert(e.flags & FI_TAGGED);
	cr_assert_str_eq((char *)b, "second");
	cr_assert_eq(src, r.b.peer, "FI_SOURCE names the sender");
	cr_assert_eq(fi_cancel(&r.b.ep->fid, (void *)3), 0);
	{
		struct fi_cq_err_entry err;

		cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, &err, 5000), -FI_EAVAIL);
		cr_assert_eq(err.err, FI_ECANCELED);
		cr_assert_eq(err.op_context, (void *)3);
	}
	cr_assert_eq(fi_trecv(r.b.ep, a, sizeof(a), NULL, FI_ADDR_UNSPEC, 0x1234, 0, (void *)5), 0);
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, NULL, 5000), 1);
	cr_assert_str_eq((char *)a, "first");
	rdm_close(&r);
}

Test(fi_send, rdm_truncation_inject_senddata_counters)
{
	uint8_t small[8], big[32] = "0123456789abcdefghijklmnopqrstu";
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct rdm r;

	rdm_open(&r, true);
	cr_assert_eq(fi_recv(r.b.ep, small, sizeof(small), NULL, FI_ADDR_UNSPEC, (void *)1), 0);
	cr_assert_eq(fi_send(r.a.ep, big, 32, NULL, r.a.peer, (void *)2), 0);
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, &err, 5000), -FI_EAVAIL);
	cr_assert_eq(err.err, FI_ETRUNC);
	cr_assert_eq(err.len, 8);
	cr_assert_eq(err.olen, 24);
	cr_assert_eq(memcmp(small, big, 8), 0);
	cr_assert_eq(rdm_wait(&r, r.a.tx_cq, &e, NULL, NULL, 5000), 1);

	/* inject: the buffer is free at once, no completion, the counter counts it */
	cr_assert_eq(fi_recv(r.b.ep, small, sizeof(small), NULL, FI_ADDR_UNSPEC, (void *)3), 0);
	cr_assert_eq(fi_inject(r.a.ep, "inject!", 8, r.a.peer), 0);
	memset(big, 'X', sizeof(big));
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, NULL, 5000), 1);
	cr_assert_str_eq((char *)small, "inject!");
	/* progress is manual: both sides poll (the receiver's delayed ACK needs its progress) */
	for (long t = pt_now_ms() + 2000; fi_cntr_read(r.a.tx_cntr) < 2 && pt_now_ms() < t;)
		(void)fi_cntr_read(r.b.rx_cntr);
	cr_assert_eq(fi_cntr_read(r.a.tx_cntr), 2, "both sends counted");
	cr_assert_eq(fi_cntr_readerr(r.b.rx_cntr), 1, "the truncated receive counted as an error");
	pt_cq_expect_empty(r.a.tx_cq);

	/* remote CQ data */
	cr_assert_eq(fi_recv(r.b.ep, small, sizeof(small), NULL, FI_ADDR_UNSPEC, (void *)4), 0);
	cr_assert_eq(fi_senddata(r.a.ep, "d", 2, NULL, 0xfeedbeefcafe, r.a.peer, (void *)5), 0);
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, NULL, 5000), 1);
	cr_assert(e.flags & FI_REMOTE_CQ_DATA);
	cr_assert_eq(e.data, 0xfeedbeefcafe);
	rdm_close(&r);
}

Test(fi_send, rdm_many_in_flight, .timeout = 60)
{
	enum { N = 3000 };
	static uint32_t rbuf[N];
	struct fi_cq_tagged_entry e;
	int posted = 0, sent = 0, got = 0, done = 0;
	long deadline = pt_now_ms() + 30000;
	struct rdm r;

	rdm_open(&r, false);
	while ((got < N || done < N) && pt_now_ms() < deadline) {
		while (posted < N && fi_recv(r.b.ep, &rbuf[posted], 4, NULL, FI_ADDR_UNSPEC,
					     (void *)(uintptr_t)(posted + 1)) == 0)
			posted++;
		while (sent < N) {
			uint32_t v = (uint32_t)sent;

			if (fi_inject(r.a.ep, &v, 4, r.a.peer))
				break;
			sent++;
		}
		while (fi_cq_read(r.b.rx_cq, &e, 1) == 1)
			got++;
		while (fi_cq_read(r.a.tx_cq, &e, 1) == 1)
			done++;
		(void)fi_cq_read(r.a.rx_cq, NULL, 0);
		if (got >= N)
			break;
	}
	cr_assert_geq(got, N, "all %d messages arrived (%d)", N, got);
	/* sender order: receive i holds message i (FI_ORDER_SAS) */
	for (int i = 0; i < N; i++)
		if (rbuf[i] != (uint32_t)i)
			cr_assert_fail("receive %d holds message %u", i, rbuf[i]);
	rdm_close(&r);
}

Test(fi_send, rdm_unreachable_peer_fails_in_bounded_time)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct sockaddr_in nobody;
	fi_addr_t dead;
	struct rdm r;

	setenv("FI_BRAID_PEER_TIMEOUT_MS", "300", 1);
	rdm_open(&r, false);
	nobody = pt_sin("127.0.0.1", pt_free_udp_port());
	cr_assert_eq(fi_av_insert(r.a.av, &nobody, 1, &dead, 0, NULL), 1);
	cr_assert_eq(fi_send(r.a.ep, "hello?", 7, NULL, dead, (void *)9), 0);
	cr_assert_eq(rdm_wait(&r, r.a.tx_cq, &e, NULL, &err, 10000), -FI_EAVAIL);
	cr_assert_eq(err.err, FI_EHOSTUNREACH);
	cr_assert_eq(err.op_context, (void *)9);
	/* the endpoint keeps working for everyone else */
	{
		char buf[8] = "";

		cr_assert_eq(fi_recv(r.b.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, (void *)1), 0);
		cr_assert_eq(fi_send(r.a.ep, "alive", 6, NULL, r.a.peer, (void *)2), 0);
		cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, NULL, 5000), 1);
		cr_assert_str_eq(buf, "alive");
	}
	rdm_close(&r);
}

/*
 * Unreachable peers cost only themselves (protocol.md §4.5). 1,000 of them take
 * a send each at once (no small pool of flows makes the later ones wait for
 * the earlier ones' peer timeout), a live peer's messages sent meanwhile
 * complete long before that timeout, and every send to an unreachable peer
 * fails FI_EHOSTUNREACH within about one peer timeout of its post.
 */
#define DEAD_N	1000
#define LIVE_N	200

Test(fi_send, rdm_unreachable_peers_cost_only_themselves, .timeout = 60)
{
	static struct sockaddr_in nobody[DEAD_N];
	static fi_addr_t dead[DEAD_N];
	static char rbuf[LIVE_N][16];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	long t0, t_live = -1, t_dead = -1;
	int i, live_ok = 0, live_rx = 0, dead_failed = 0, other = 0;
	struct rdm r;

	setenv("FI_BRAID_PEER_TIMEOUT_MS", "1000", 1);
	setenv("FI_BRAID_TX_SIZE", "4096", 1);
	rdm_open(&r, false);
	/* 127.77.x.y port 9: loopback addresses where nothing listens */
	for (i = 0; i < DEAD_N; i++) {
		char ip[32];

		snprintf(ip, sizeof(ip), "127.77.%d.%d", i / 250, i % 250 + 1);
		nobody[i] = pt_sin(ip, 9);
	}
	cr_assert_eq(fi_av_insert(r.a.av, nobody, DEAD_N, dead, 0, NULL), DEAD_N);
	for (i = 0; i < LIVE_N; i++)
		cr_assert_eq(fi_recv(r.b.ep, rbuf[i], sizeof(rbuf[i]), NULL, FI_ADDR_UNSPEC, NULL), 0);
	t0 = pt_now_ms();
	for (i = 0; i < DEAD_N; i++)
		cr_assert_eq(fi_send(r.a.ep, "anyone?", 8, NULL, dead[i], (void *)(uintptr_t)(i + 1)),
			     0, "send %d to an unreachable peer taken at once", i);
	for (i = 0; i < LIVE_N; i++)
		cr_assert_eq(pt_send(&r.a, "alive", 6, (void *)(uintptr_t)(100000 + i)), 0);
	while ((live_ok < LIVE_N || live_rx < LIVE_N || dead_failed < DEAD_N) &&
	       pt_now_ms() - t0 < 20000) {
		ssize_t n = fi_cq_read(r.a.tx_cq, &e, 1);

		if (n == 1) {
			if ((uintptr_t)e.op_context >= 100000)
				live_ok++;
			else
				other++;
		} else if (n == -FI_EAVAIL) {
			cr_assert_eq(fi_cq_readerr(r.a.tx_cq, &err, 0), 1);
			cr_assert_eq(err.err, FI_EHOSTUNREACH, "an unreachable peer's send: %s",
				     fi_strerror(err.err));
			cr_assert((uintptr_t)err.op_context >= 1 &&
				  (uintptr_t)err.op_context <= DEAD_N, "a dead peer's send failed");
			if (++dead_failed == DEAD_N)
				t_dead = pt_now_ms() - t0;
		}
		if (fi_cq_read(r.b.rx_cq, &e, 1) == 1)
			live_rx++;
		if (t_live < 0 && live_ok == LIVE_N && live_rx == LIVE_N)
			t_live = pt_now_ms() - t0;
	}
	cr_log_info("live peer's %d messages done in %ld ms; %d unreachable peers' sends all failed "
		    "in %ld ms (peer timeout 1000 ms)", LIVE_N, t_live, DEAD_N, t_dead);
	cr_assert_eq(other, 0, "no send to an unreachable peer succeeded");
	cr_assert_eq(live_ok, LIVE_N, "every send to the live peer completed");
	cr_assert_eq(live_rx, LIVE_N, "and was received");
	cr_assert_lt(t_live, 800, "the live peer did not wait for the unreachable ones "
		     "(done in %ld ms; their timeout is 1000 ms)", t_live);
	cr_assert_eq(dead_failed, DEAD_N, "every send to an unreachable peer failed (%d of %d)",
		     dead_failed, DEAD_N);
	cr_assert_lt(t_dead, 2500, "within about one peer timeout of their post (%ld ms)", t_dead);
	rdm_close(&r);
}

static ssize_t trecvmsg(struct pt_ep *e, void *buf, size_t len, uint64_t tag, uint64_t ignore,
			void *ctx, uint64_t flags)
{
	struct iovec iov = { buf, len };
	struct fi_msg_tagged msg = {
		.msg_iov = &iov, .iov_count = buf ? 1 : 0, .addr = FI_ADDR_UNSPEC,
		.tag = tag, .ignore = ignore, .context = ctx,
	};

	return fi_trecvmsg(e->ep, &msg, flags);
}

Test(fi_trecvmsg, peek_claim_discard)
{
	struct fi_context ctx_peek, ctx_claim, ctx_disc;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	char buf[32] = "";
	fi_addr_t src;
	struct rdm r;

	rdm_open(&r, false);
	/* a peek with nothing there: an error completion FI_ENOMSG */
	cr_assert_eq(trecvmsg(&r.b, NULL, 0, 0x77, 0, &ctx_peek, FI_PEEK), 0);
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, &err, 2000), -FI_EAVAIL);
	cr_assert_eq(err.err, FI_ENOMSG);
	cr_assert_eq(err.op_context, &ctx_peek);

	cr_assert_eq(fi_tsenddata(r.a.ep, "claimed", 8, NULL, 42, r.a.peer, 0x77, (void *)1), 0);
	cr_assert_eq(fi_tsend(r.a.ep, "dropped", 8, NULL, r.a.peer, 0x88, (void *)2), 0);
	cr_assert_eq(rdm_wait(&r, r.a.tx_cq, &e, NULL, NULL, 2000), 1);
	cr_assert_eq(rdm_wait(&r, r.a.tx_cq, &e, NULL, NULL, 2000), 1);

	/* peek hit: length, tag, data and source, no data moved */
	cr_assert_eq(trecvmsg(&r.b, NULL, 0, 0x77, 0, &ctx_peek, FI_PEEK), 0);
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, &src, NULL, 2000), 1);
	cr_assert_eq(e.op_context, &ctx_peek);
	cr_assert_eq(e.len, 8);
	cr_assert_eq(e.tag, 0x77);
	cr_assert_eq(e.data, 42);
	cr_assert(e.flags & FI_REMOTE_CQ_DATA);
	cr_assert_eq(src, r.b.peer);
	/* peek + claim, then the paired claim receive gets the data */
	cr_assert_eq(trecvmsg(&r.b, NULL, 0, 0x77, 0, &ctx_claim, FI_PEEK | FI_CLAIM), 0);
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, NULL, 2000), 1);
	/* a claimed message is invisible to ordinary receives and other peeks */
	cr_assert_eq(trecvmsg(&r.b, NULL, 0, 0x77, 0, &ctx_peek, FI_PEEK), 0);
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, &err, 2000), -FI_EAVAIL);
	cr_assert_eq(err.err, FI_ENOMSG);
	cr_assert_eq(trecvmsg(&r.b, buf, sizeof(buf), 0, 0, &ctx_claim, FI_CLAIM), 0);
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, NULL, 2000), 1);
	cr_assert_eq(e.op_context, &ctx_claim);
	cr_assert_str_eq(buf, "claimed");
	/* peek + discard drops the other message */
	cr_assert_eq(trecvmsg(&r.b, NULL, 0, 0x88, 0, &ctx_disc, FI_PEEK | FI_DISCARD), 0);
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, NULL, 2000), 1);
	cr_assert_eq(e.tag, 0x88);
	cr_assert_eq(trecvmsg(&r.b, NULL, 0, 0x88, 0, &ctx_peek, FI_PEEK), 0);
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, &err, 2000), -FI_EAVAIL);
	cr_assert_eq(err.err, FI_ENOMSG, "discarded");
	/* bad flag combinations */
	cr_assert_eq(trecvmsg(&r.b, buf, 8, 0, 0, NULL, FI_DISCARD), -FI_EBADFLAGS);
	cr_assert_eq(trecvmsg(&r.b, buf, 8, 0, 0, NULL, FI_MULTI_RECV), -FI_EBADFLAGS,
		     "multi-receive is for untagged messages");
	rdm_close(&r);
}

Test(fi_cq_sread, rdm_wakes_on_arrival)
{
	struct fi_cq_tagged_entry e;
	char buf[16] = "";
	struct rdm r;
	long t0;

	rdm_open(&r, false);
	cr_assert_eq(fi_recv(r.b.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, (void *)1), 0);
	/* nothing sent: sread times out with -FI_EAGAIN */
	cr_assert_eq(fi_cq_sread(r.b.rx_cq, &e, 1, NULL, 50), -FI_EAGAIN);
	cr_assert_eq(fi_send(r.a.ep, "wake", 5, NULL, r.a.peer, (void *)2), 0);
	/* woken by the arrival: long before a timeout no load comes near */
	t0 = pt_now_ms();
	cr_assert_eq(fi_cq_sread(r.b.rx_cq, &e, 1, NULL, 60000), 1);
	cr_assert_lt(pt_now_ms() - t0, 30000, "woken by the arrival, not the timeout");
	cr_assert_str_eq(buf, "wake");
	rdm_close(&r);
}

Test(fi_recvmsg, multi_recv_buffer_takes_many_messages)
{
	static uint8_t pool[2][4096], src[10][500];	/* a send's buffer is the caller's only after completion */
	struct fi_context ctx[2];
	struct fi_cq_tagged_entry e;
	size_t min = 200, len = sizeof(min);
	int i, multi_flag_seen = 0;
	struct rdm r;

	rdm_open(&r, false);
	cr_assert_eq(fi_setopt(&r.b.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min,
			       sizeof(min)), 0);
	min = 0;
	cr_assert_eq(fi_getopt(&r.b.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, &len), 0);
	cr_assert_eq(min, 200);
	for (i = 0; i < 2; i++) {
		struct iovec iov = { pool[i], sizeof(pool[i]) };
		struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
				      .context = &ctx[i] };

		cr_assert_eq(fi_recvmsg(r.b.ep, &msg, FI_MULTI_RECV), 0);
	}
	for (i = 0; i < 10; i++) {
		memset(src[i], 'a' + i, sizeof(src[i]));
		cr_assert_eq(fi_send(r.a.ep, src[i], sizeof(src[i]), NULL, r.a.peer, NULL), 0);
	}
	/* 4096 bytes, floor 200: messages 0..7 fill the first buffer (8 x 500 leaves 96),
	 * the 8th hands it back with FI_MULTI_RECV; 8 and 9 go to the second */
	for (i = 0; i < 10; i++) {
		uint8_t *want = i < 8 ? pool[0] + 500 * i : pool[1] + 500 * (i - 8);

		cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, NULL, 5000), 1, "message %d", i);
		cr_assert_eq(e.len, 500);
		cr_assert_eq(e.buf, want, "message %d placed after the previous one", i);
		cr_assert_eq(e.op_context, i < 8 ? &ctx[0] : &ctx[1]);
		cr_assert_eq(((uint8_t *)e.buf)[0], 'a' + i);
		cr_assert_eq(((uint8_t *)e.buf)[499], 'a' + i);
		if (e.flags & FI_MULTI_RECV) {
			multi_flag_seen++;
			cr_assert_eq(i, 7, "FI_MULTI_RECV on the first buffer's last message");
		}
	}
	cr_assert_eq(multi_flag_seen, 1);
	/* the second buffer is still posted: cancelling hands it back */
	cr_assert_eq(fi_cancel(&r.b.ep->fid, &ctx[1]), 0);
	{
		struct fi_cq_err_entry err;

		cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, &err, 2000), -FI_EAVAIL);
		cr_assert_eq(err.err, FI_ECANCELED);
		cr_assert(err.flags & FI_MULTI_RECV);
	}
	rdm_close(&r);
}

/* Messages of any size: 1 GiB into a posted buffer, and 64 MiB sent before its
 * receive is posted (beyond the receiver's buffer for unexpected data: flow control). */
Test(fi_send, rdm_one_gib_and_large_unexpected, .timeout = 180)
{
	const size_t gib = 1ull << 30, big = 64u << 20;
	uint8_t *src = malloc(gib), *dst = malloc(gib);
	struct fi_cq_tagged_entry e;
	struct rdm r;

	cr_assert(src && dst);
	for (size_t i = 0; i < gib; i += 4096)
		src[i] = (uint8_t)(i >> 12), src[i + 4095] = (uint8_t)(i >> 20);
	memset(dst, 0, gib);
	rdm_open(&r, false);
	cr_assert_eq(fi_recv(r.b.ep, dst, gib, NULL, FI_ADDR_UNSPEC, (void *)1), 0);
	cr_assert_eq(fi_send(r.a.ep, src, gib, NULL, r.a.peer, (void *)2), 0);
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, NULL, 120000), 1, "1 GiB arrived");
	cr_assert_eq(e.len, gib);
	cr_assert_eq(memcmp(src, dst, gib), 0, "1 GiB intact");
	cr_assert_eq(rdm_wait(&r, r.a.tx_cq, &e, NULL, NULL, 10000), 1);

	/* unexpected: sent first, the receive posted once the sender has had to wait */
	memset(dst, 0, big);
	cr_assert_eq(fi_send(r.a.ep, src, big, NULL, r.a.peer, (void *)3), 0);
	for (long t = pt_now_ms() + 300; pt_now_ms() < t;) {
		(void)fi_cq_read(r.a.tx_cq, NULL, 0);
		(void)fi_cq_read(r.b.rx_cq, NULL, 0);
	}
	cr_assert_eq(fi_recv(r.b.ep, dst, big, NULL, FI_ADDR_UNSPEC, (void *)4), 0);
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, NULL, 60000), 1, "64 MiB unexpected arrived");
	cr_assert_eq(e.len, big);
	cr_assert_eq(memcmp(src, dst, big), 0, "64 MiB intact");
	cr_assert_eq(rdm_wait(&r, r.a.tx_cq, &e, NULL, NULL, 10000), 1);
	rdm_close(&r);
	free(src);
	free(dst);
}

Test(fi_send, rdm_selective_completion)
{
	struct fi_cq_tagged_entry e;
	char buf[16];
	struct rdm r;
	struct iovec iov = { "x", 2 };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .context = (void *)7 };

	memset(&r, 0, sizeof(r));
	r.d.info = rdm_info();
	cr_assert_eq(fi_fabric(r.d.info->fabric_attr, &r.d.fabric, NULL), 0);
	cr_assert_eq(fi_domain(r.d.fabric, r.d.info, &r.d.domain, NULL), 0);
	pt_ep_create(&r.d, &r.a, NULL);
	pt_ep_create(&r.d, &r.b, NULL);
	pt_ep_bind_cqs(&r.d, &r.a, FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE, FI_SELECTIVE_COMPLETION, 0);
	pt_ep_bind_cqs(&r.d, &r.b, FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE, 0, 0);
	pt_ep_connect(&r.a, &r.b);
	pt_ep_connect(&r.b, &r.a);
	pt_ep_enable(&r.a);
	pt_ep_enable(&r.b);
	msg.addr = r.a.peer;
	for (int i = 0; i < 2; i++)
		cr_assert_eq(fi_recv(r.b.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, NULL), 0);
	/* without FI_COMPLETION: no entry; with it: one */
	cr_assert_eq(fi_send(r.a.ep, "x", 2, NULL, r.a.peer, (void *)6), 0);
	cr_assert_eq(fi_sendmsg(r.a.ep, &msg, FI_COMPLETION), 0);
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, NULL, 2000), 1);
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, NULL, 2000), 1);
	cr_assert_eq(rdm_wait(&r, r.a.tx_cq, &e, NULL, NULL, 2000), 1);
	cr_assert_eq(e.op_context, (void *)7, "only the FI_COMPLETION send completed");
	pt_cq_expect_empty(r.a.tx_cq);
	rdm_close(&r);
}

/*
 * An endpoint whose application does not call in still acknowledges (the
 * progress thread): b's CQ is not read for 1.5 s while a sends; every send
 * completes at a (it needs b's ACKs). With FI_BRAID_PROGRESS_US=0 none
 * does until b calls in again.
 */
Test(fi_tsend, a_peer_that_does_not_call_in_still_acknowledges, .timeout = 60)
{
	static uint8_t rb[32][4096], sb[4096];
	struct fi_cq_tagged_entry e;
	struct rdm r;
	int i, done = 0;
	long t0;

	/* by the engine (handed whole to a local peer, a send would not need b's ACK) */
	setenv("FI_BRAID_SHM_EAGER", "0", 1);
	rdm_open(&r, false);
	for (i = 0; i < 32; i++)
		cr_assert_eq(fi_trecv(r.b.ep, rb[i], sizeof(rb[i]), NULL, FI_ADDR_UNSPEC, 7, 0, rb[i]),
			     0);
	t0 = pt_now_ms();
	for (i = 0; i < 32; i++)
		cr_assert_eq(fi_tsend(r.a.ep, sb, sizeof(sb), NULL, r.a.peer, 7,
				      (void *)(uintptr_t)(i + 1)), 0);
	while (pt_now_ms() - t0 < 1500) {	/* only a calls in */
		ssize_t n = fi_cq_read(r.a.tx_cq, &e, 1);

		cr_assert_neq(n, -FI_EAVAIL, "a send failed");
		done += n == 1;
	}
	cr_assert_eq(done, 32, "%d of 32 sends completed while the receiver was away", done);
	for (i = 0; i < 32; i++)
		cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, NULL, 5000), 1, "receive %d", i);
	rdm_close(&r);
}

/*
 * fi_cntr_wait on a send counter wakes when the peer's ACKs (and a
 * rendezvous CTS) arrive: a send completes only then, so the counter's wait
 * object watches the endpoint's socket. Without the progress thread, with
 * one counter for both endpoints (its wait drives both), 1 MiB messages
 * (rendezvous) complete through fi_cntr_wait alone. (This checks that they
 * complete; how soon the wait wakes, which the watched socket changed,
 * is fabtests' fi_rdm_cntr_pingpong's to show: tools/fabtests.sh.)
 */
Test(fi_cntr_wait, send_counter_wakes_on_acks, .timeout = 60)
{
	static uint8_t sb[1 << 20], rb[1 << 20];
	struct fid_cntr *cntr;
	struct rdm r;
	int i, ret;

	setenv("FI_BRAID_PROGRESS_US", "0", 1);	/* read when the provider loads, in this process */
	memset(&r, 0, sizeof(r));
	r.d.info = rdm_info();
	cr_assert_eq(fi_fabric(r.d.info->fabric_attr, &r.d.fabric, NULL), 0);
	cr_assert_eq(fi_domain(r.d.fabric, r.d.info, &r.d.domain, NULL), 0);
	pt_ep_create(&r.d, &r.a, NULL);
	pt_ep_create(&r.d, &r.b, NULL);
	cntr = pt_cntr_open(r.d.domain, FI_WAIT_UNSPEC);
	cr_assert_eq(fi_ep_bind(r.a.ep, &cntr->fid, FI_SEND | FI_RECV), 0);
	cr_assert_eq(fi_ep_bind(r.b.ep, &cntr->fid, FI_SEND | FI_RECV), 0);
	pt_ep_connect(&r.a, &r.b);
	pt_ep_connect(&r.b, &r.a);
	pt_ep_enable(&r.a);
	pt_ep_enable(&r.b);
	for (i = 0; i < 8; i++) {
		cr_assert_eq(fi_recv(r.b.ep, rb, sizeof(rb), NULL, FI_ADDR_UNSPEC, NULL), 0);
		cr_assert_eq(fi_send(r.a.ep, sb, sizeof(sb), NULL, r.a.peer, NULL), 0);
		ret = fi_cntr_wait(cntr, 2 * (uint64_t)(i + 1), 10000);
		cr_assert_eq(ret, 0, "message %d: fi_cntr_wait = %d (%s), counter %lu", i, ret,
			     fi_strerror(-ret), (unsigned long)fi_cntr_read(cntr));
	}
	pt_ep_close(&r.a);
	pt_ep_close(&r.b);
	cr_assert_eq(fi_close(&cntr->fid), 0);
	pt_dom_close(&r.d);
}

/* Read one entry from @cq alone (progressing only its endpoint), bounded; an error fails. */
static int rdm_read_one(struct fid_cq *cq, void *ctx_out[1], long ms)
{
	struct fi_cq_tagged_entry e;
	long deadline = pt_now_ms() + ms;
	ssize_t n;

	do {
		n = fi_cq_read(cq, &e, 1);
		cr_assert_neq(n, -FI_EAVAIL, "a completion failed");
	} while (n == -FI_EAGAIN && pt_now_ms() < deadline);
	if (n == 1 && ctx_out)
		ctx_out[0] = e.op_context;
	return n == 1;
}

/*
 * Without the progress thread (FI_BRAID_PROGRESS_US=0) nothing sends an ACK
 * once the application stops calling, so none may be held past the call that
 * received its data: a and b ping-pong (b answers at once, the case where a
 * receiver would hold its ACK for the answer to carry), then b takes a's last
 * message and never calls again. a's last send must still complete (it
 * needs b's ACK), reading a's CQs only.
 */
Test(fi_tsend, without_the_progress_thread_a_receiver_that_stops_has_acknowledged, .timeout = 60)
{
	static uint8_t ab[64], ba[64], rb_a[64], rb_b[64];
	struct rdm r;
	void *ctx = NULL;
	int i, sends = 0;

	setenv("FI_BRAID_PROGRESS_US", "0", 1);	/* read when the provider loads, in this process */
	setenv("FI_BRAID_SHM_EAGER", "0", 1);	/* (by the engine: its ACKs are the subject) */
	rdm_open(&r, false);
	for (i = 0; i < 64; i++) {
		bool last = i == 63;

		cr_assert_eq(fi_trecv(r.b.ep, rb_b, sizeof(rb_b), NULL, FI_ADDR_UNSPEC, 1, 0, NULL), 0);
		cr_assert_eq(fi_tsend(r.a.ep, ab, sizeof(ab), NULL, r.a.peer, 1,
				      (void *)(uintptr_t)(i + 1)), 0);
		cr_assert(rdm_read_one(r.b.rx_cq, NULL, 5000), "round %d: b got nothing", i);
		if (last)
			break;	/* b's application is done: it never calls in again */
		cr_assert_eq(fi_trecv(r.a.ep, rb_a, sizeof(rb_a), NULL, FI_ADDR_UNSPEC, 2, 0, NULL), 0);
		cr_assert_eq(fi_tsend(r.b.ep, ba, sizeof(ba), NULL, r.b.peer, 2, NULL), 0);
		cr_assert(rdm_read_one(r.a.rx_cq, NULL, 5000), "round %d: a got no answer", i);
		/* (b's send completes when a's ACK comes: b reads its tx CQ now and then) */
		(void)fi_cq_read(r.b.tx_cq, NULL, 0);
	}
	/* a's sends: the last one included, within well under the peer timeout */
	while (sends < 64 && rdm_read_one(r.a.tx_cq, &ctx, 2000))
		sends++;
	cr_assert_eq(sends, 64, "%d of a's 64 sends completed: b holds an ACK it never sends", sends);
	cr_assert_eq(ctx, (void *)64);
	rdm_close(&r);
}

/*
 * FI_DELIVERY_COMPLETE (fi_cq(3)): the send completes once the message is in
 * the peer's receive buffer. With no receive posted the message waits in the
 * receiver's staging, acknowledged: a plain send completes, a
 * delivery-complete one does not until the receive comes.
 */
Test(fi_sendmsg, delivery_complete_waits_for_the_receive)
{
	struct fi_cq_tagged_entry e;
	char buf[64];
	struct rdm r;
	struct iovec iov = { "delivered", 10 };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .context = (void *)9 };
	long until;

	rdm_open(&r, false);
	msg.addr = r.a.peer;
	/* a plain send, acknowledged into b's staging: completes with no receive posted */
	cr_assert_eq(fi_send(r.a.ep, "plain", 6, NULL, r.a.peer, (void *)8), 0);
	cr_assert_eq(rdm_wait(&r, r.a.tx_cq, &e, NULL, NULL, 2000), 1);
	cr_assert_eq(e.op_context, (void *)8);
	cr_assert_eq(fi_sendmsg(r.a.ep, &msg, FI_DELIVERY_COMPLETE | FI_COMPLETION), 0);
	until = pt_now_ms() + 300;
	while (pt_now_ms() < until) {
		cr_assert_eq(fi_cq_read(r.a.tx_cq, &e, 1), -FI_EAGAIN,
			     "delivery complete with no receive posted");
		(void)fi_cq_read(r.b.rx_cq, NULL, 0);
	}
	/* the first receive takes the plain message, the second the delivered one */
	cr_assert_eq(fi_recv(r.b.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, NULL), 0);
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, NULL, 2000), 1);
	pt_cq_expect_empty(r.a.tx_cq);
	cr_assert_eq(fi_recv(r.b.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, NULL), 0);
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, NULL, 2000), 1);
	cr_assert_str_eq(buf, "delivered");
	cr_assert_eq(rdm_wait(&r, r.a.tx_cq, &e, NULL, NULL, 2000), 1);
	cr_assert_eq(e.op_context, (void *)9);
	cr_assert(e.flags & FI_SEND);
	rdm_close(&r);
}

/*
 * fi_endpoint(3): at fi_close pending operations are discarded and the provider may
 * discard completed ones. braid turns a closed endpoint's receive completions still in its
 * CQs into FI_ECANCELED errors (ofi_rxm, over braid's MSG endpoints, read a completed
 * receive of a connection it had closed and reposted the buffer to the freed endpoint; a
 * canceled one it takes back), and leaves send completions (rxm's buffers and credits
 * come back with them). b and a third endpoint c share one receive CQ; a message
 * completes at each; after closing b, c's completion is there and b's is canceled.
 */
Test(fi_close, rdm_closed_endpoint_receive_completions_canceled, .timeout = 30)
{
	static char buf_b[64], buf_c[64];
	struct fi_cq_tagged_entry e[4];
	struct pt_ep c;
	fi_addr_t to_c;
	struct rdm r;
	long deadline;
	int sent = 0;
	ssize_t n;

	rdm_open(&r, false);
	pt_ep_create(&r.d, &c, NULL);
	c.tx_cq = pt_cq_open(r.d.domain, FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE);
	cr_assert_eq(fi_ep_bind(c.ep, &c.tx_cq->fid, FI_TRANSMIT), 0);
	cr_assert_eq(fi_ep_bind(c.ep, &r.b.rx_cq->fid, FI_RECV), 0);
	pt_ep_enable(&c);
	cr_assert_eq(fi_av_insert(r.a.av, &c.name, 1, &to_c, 0, NULL), 1);
	cr_assert_eq(fi_recv(r.b.ep, buf_b, sizeof(buf_b), NULL, FI_ADDR_UNSPEC, (void *)1), 0);
	cr_assert_eq(fi_recv(c.ep, buf_c, sizeof(buf_c), NULL, FI_ADDR_UNSPEC, (void *)2), 0);
	cr_assert_eq(fi_send(r.a.ep, "to b", 4, NULL, r.a.peer, (void *)3), 0);
	cr_assert_eq(fi_send(r.a.ep, "to c", 4, NULL, to_c, (void *)4), 0);
	/* both sends complete once delivered; the shared CQ is progressed, not read */
	deadline = pt_now_ms() + 10000;
	while (sent < 2 && pt_now_ms() < deadline) {
		(void)fi_cq_read(r.b.rx_cq, NULL, 0);
		(void)fi_cq_read(c.tx_cq, NULL, 0);
		(void)fi_cq_read(r.b.tx_cq, NULL, 0);
		n = fi_cq_read(r.a.tx_cq, e, 4);
		if (n > 0)
			sent += (int)n;
	}
	cr_assert_eq(sent, 2, "both messages delivered");
	cr_assert_eq(fi_close(&r.b.ep->fid), 0);
	r.b.ep = NULL;
	{
		struct fi_cq_err_entry err = { 0 };
		int good = 0, canceled = 0;

		for (int k = 0; k < 4; k++) {
			n = fi_cq_read(r.b.rx_cq, e, 1);
			if (n == 1) {
				cr_assert_eq(e[0].op_context, (void *)2, "a success: c's, not the closed b's");
				good++;
			} else if (n == -FI_EAVAIL) {
				cr_assert_eq(fi_cq_readerr(r.b.rx_cq, &err, 0), 1);
				cr_assert_eq(err.op_context, (void *)1, "the error: b's receive");
				cr_assert_eq(err.err, FI_ECANCELED);
				canceled++;
			}
		}
		cr_assert_eq(good, 1, "c's completion stays");
		cr_assert_eq(canceled, 1, "b's receive completion became a cancellation");
	}
	cr_assert_eq(memcmp(buf_c, "to c", 4), 0);
	pt_ep_close(&c);	/* its receive CQ is b's: closed with b's */
	rdm_close(&r);
}

/* FI_SOURCE names a live entry of the sender's address, whichever of several
 * entries of that address were removed (the AV keeps them chained, O(1)). */
Test(fi_av_remove, source_follows_the_live_entries)
{
	uint8_t buf[16];
	struct fi_cq_tagged_entry e;
	fi_addr_t src, dup[2], gone;
	struct rdm r;
	int k;

	rdm_open(&r, false);
	/* b's AV: a's address three times: r.b.peer, dup[0], dup[1] */
	cr_assert_eq(fi_av_insert(r.b.av, &r.a.name, 1, &dup[0], 0, NULL), 1);
	cr_assert_eq(fi_av_insert(r.b.av, &r.a.name, 1, &dup[1], 0, NULL), 1);
	for (k = 0; k < 4; k++) {
		fi_addr_t want = k == 0 ? r.b.peer : k == 3 ? FI_ADDR_NOTAVAIL : dup[0];

		if (k == 1) {
			gone = r.b.peer;	/* the first entry: the next one takes over */
			cr_assert_eq(fi_av_remove(r.b.av, &gone, 1, 0), 0);
		} else if (k == 2) {
			cr_assert_eq(fi_av_remove(r.b.av, &dup[1], 1, 0), 0);	/* the last: no change */
		} else if (k == 3) {
			cr_assert_eq(fi_av_remove(r.b.av, &dup[0], 1, 0), 0);	/* none left */
		}
		cr_assert_eq(fi_recv(r.b.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, (void *)1), 0);
		cr_assert_eq(fi_send(r.a.ep, "who", 4, NULL, r.a.peer, (void *)2), 0);
		cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, &src, NULL, 5000), 1);
		cr_assert_eq(src, want, "round %d: FI_SOURCE %lu, want %lu", k, (unsigned long)src,
			     (unsigned long)want);
		cr_assert_eq(rdm_wait(&r, r.a.tx_cq, &e, NULL, NULL, 5000), 1);
	}
	rdm_close(&r);
}

/* A send keeps the last address it looked up; a removal from its AV ends that. */
Test(fi_av_remove, a_send_after_a_removal_looks_its_address_up_again)
{
	uint8_t buf[16];
	struct fi_cq_tagged_entry e;
	fi_addr_t again, gone;
	struct rdm r;

	rdm_open(&r, false);
	for (int k = 0; k < 2; k++) {	/* (the second send finds it kept) */
		cr_assert_eq(fi_recv(r.b.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, NULL), 0);
		cr_assert_eq(fi_send(r.a.ep, "kept", 5, NULL, r.a.peer, NULL), 0);
		cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, NULL, 5000), 1);
		cr_assert_eq(rdm_wait(&r, r.a.tx_cq, &e, NULL, NULL, 5000), 1);
	}
	gone = r.a.peer;
	cr_assert_eq(fi_av_remove(r.a.av, &gone, 1, 0), 0);
	cr_assert_eq(fi_send(r.a.ep, "gone", 5, NULL, gone, NULL), -FI_EINVAL,
		     "a removed address is no peer, whatever the endpoint kept");
	cr_assert_eq(fi_tsend(r.a.ep, "gone", 5, NULL, gone, 1, NULL), -FI_EINVAL);
	/* inserted again, under a new fi_addr: sends reach b */
	cr_assert_eq(fi_av_insert(r.a.av, &r.b.name, 1, &again, 0, NULL), 1);
	cr_assert_neq(again, gone);
	cr_assert_eq(fi_recv(r.b.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, NULL), 0);
	cr_assert_eq(fi_send(r.a.ep, "back", 5, NULL, again, NULL), 0);
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, NULL, 5000), 1);
	cr_assert_eq(memcmp(buf, "back", 5), 0);
	cr_assert_eq(rdm_wait(&r, r.a.tx_cq, &e, NULL, NULL, 5000), 1);
	cr_assert_eq(fi_send(r.a.ep, "gone", 5, NULL, gone, NULL), -FI_EINVAL);
	rdm_close(&r);
}

/* Read every entry @cq has now: successes into @ok, errors into @errs. */
static void cq_count(struct fid_cq *cq, size_t *ok, size_t *errs)
{
	struct fi_cq_tagged_entry e[16];
	struct fi_cq_err_entry err;
	ssize_t n;

	while ((n = fi_cq_read(cq, e, 16)) > 0 || n == -FI_EAVAIL) {
		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			cr_assert_eq(fi_cq_readerr(cq, &err, 0), 1);
			(*errs)++;
		} else {
			*ok += (size_t)n;
		}
	}
}

/* Progress both endpoints once; count a's send completions and b's receive completions. */
static void rdm_count(struct rdm *r, size_t *sent, size_t *send_errs, size_t *recvd, size_t *recv_errs)
{
	(void)fi_cq_read(r->a.rx_cq, NULL, 0);
	(void)fi_cq_read(r->b.tx_cq, NULL, 0);
	cq_count(r->a.tx_cq, sent, send_errs);
	cq_count(r->b.rx_cq, recvd, recv_errs);
}

/*
 * A large message (rendezvous: its data waits for the receiver's buffer)
 * sent before its receive is posted, then more small messages than braid's
 * flow window (256). Those a window past the large one wait at the sender;
 * the peer stays alive however long the receiver takes (well past the peer
 * timeout), and once the receives come every message arrives. (Before the
 * sender kept to the message window, the one 256 past the large message
 * was dropped and resent, held the PSN window shut, and after the peer
 * timeout every send failed with FI_EHOSTUNREACH.)
 */
Test(fi_tsend, a_message_waiting_for_its_receive_holds_back_later_ones_not_the_peer, .timeout = 60)
{
	enum { NSMALL = 400, BIG = 1 << 20 };
	static uint8_t big[BIG], bigdst[BIG], small[NSMALL][8], smalldst[NSMALL][8];
	size_t sent = 0, send_errs = 0, recvd = 0, recv_errs = 0, i;
	long deadline;
	struct rdm r;

	setenv("FI_BRAID_PEER_TIMEOUT_MS", "400", 1);
	rdm_open(&r, false);
	fill(big, BIG, 5);
	for (i = 0; i <= NSMALL; i++) {
		const void *buf = i ? small[i - 1] : big;
		ssize_t ret;

		if (i)
			memset(small[i - 1], (int)i, 8);
		deadline = pt_now_ms() + 5000;
		while ((ret = fi_tsend(r.a.ep, buf, i ? 8 : BIG, NULL, r.a.peer, i ? 2 : 1,
				       (void *)(uintptr_t)(i + 1))) == -FI_EAGAIN && pt_now_ms() < deadline)
			rdm_count(&r, &sent, &send_errs, &recvd, &recv_errs);
		cr_assert_eq(ret, 0, "send %zu posted (%zd)", i, ret);
	}
	/* no receive for four peer timeouts */
	deadline = pt_now_ms() + 1600;
	while (pt_now_ms() < deadline)
		rdm_count(&r, &sent, &send_errs, &recvd, &recv_errs);
	cr_assert_eq(send_errs, 0, "no send failed while the receiver waited (%zu did)", send_errs);
	cr_assert_lt(sent, NSMALL, "the sends a window past the waiting message wait too (%zu done)", sent);
	cr_assert_eq(fi_trecv(r.b.ep, bigdst, BIG, NULL, FI_ADDR_UNSPEC, 1, 0, (void *)1), 0);
	for (i = 0; i < NSMALL; i++) {
		ssize_t ret;

		deadline = pt_now_ms() + 5000;
		while ((ret = fi_trecv(r.b.ep, smalldst[i], 8, NULL, FI_ADDR_UNSPEC, 2, 0,
				       (void *)(uintptr_t)(i + 2))) == -FI_EAGAIN && pt_now_ms() < deadline)
			rdm_count(&r, &sent, &send_errs, &recvd, &recv_errs);
		cr_assert_eq(ret, 0, "receive %zu posted (%zd)", i, ret);
	}
	deadline = pt_now_ms() + 10000;
	while ((sent + send_errs < NSMALL + 1 || recvd + recv_errs < NSMALL + 1) && pt_now_ms() < deadline)
		rdm_count(&r, &sent, &send_errs, &recvd, &recv_errs);
	cr_assert_eq(send_errs + recv_errs, 0, "no errors (%zu sends, %zu receives)", send_errs, recv_errs);
	cr_assert_eq(sent, NSMALL + 1, "every send completed (%zu)", sent);
	cr_assert_eq(recvd, NSMALL + 1, "every receive completed (%zu)", recvd);
	cr_assert_eq(memcmp(big, bigdst, BIG), 0, "the large message intact");
	for (i = 0; i < NSMALL; i++)
		cr_assert_eq(memcmp(small[i], smalldst[i], 8), 0, "message %zu intact, in order", i + 1);
	rdm_close(&r);
}

#if BRAID_FI_HDR_GE(2, 0)
/*
 * API 2.0's receive capabilities (fi_getinfo(3), fi_tagged(3)):
 * FI_TAGGED_MULTI_RECV lets one tagged receive take many messages, as
 * FI_MULTI_RECV does for untagged ones; without it a tagged multi-receive
 * is a bad flag.
 */
Test(fi_trecvmsg, tagged_multi_recv_buffer_takes_many_tagged_messages)
{
	static uint8_t pool[2048], src[3][300];
	struct fi_context ctx;
	struct fi_cq_tagged_entry e;
	struct iovec iov = { pool, sizeof(pool) };
	struct fi_msg_tagged msg = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
				     .tag = 0x77, .ignore = 0, .context = &ctx };
	struct rdm r, plain;
	int i;

	rdm_open(&plain, false);
	cr_assert_eq(fi_trecvmsg(plain.b.ep, &msg, FI_MULTI_RECV), -FI_EBADFLAGS,
		     "no FI_TAGGED_MULTI_RECV: a tagged multi-receive is refused");
	rdm_close(&plain);

	rdm_open_info(&r, rdm_info_for(PT_VERSION, FI_TAGGED | FI_TAGGED_MULTI_RECV), false);
	cr_assert(r.d.info->caps & FI_TAGGED_MULTI_RECV);
	cr_assert_eq(fi_trecvmsg(r.b.ep, &msg, FI_MULTI_RECV), 0);
	for (i = 0; i < 3; i++) {
		memset(src[i], 'x' + i, sizeof(src[i]));
		cr_assert_eq(fi_tsend(r.a.ep, src[i], sizeof(src[i]), NULL, r.a.peer, 0x77, NULL), 0);
	}
	for (i = 0; i < 3; i++) {
		cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, NULL, 5000), 1, "message %d", i);
		cr_assert(e.flags & FI_TAGGED);
		cr_assert_eq(e.tag, 0x77);
		cr_assert_eq(e.len, 300);
		cr_assert_eq(e.buf, pool + 300 * i, "message %d placed after the previous one", i);
		cr_assert_eq(((uint8_t *)e.buf)[299], 'x' + i);
		cr_assert_eq(e.op_context, &ctx);
	}
	/* a message of another tag does not go into it */
	cr_assert_eq(fi_tsend(r.a.ep, src[0], 10, NULL, r.a.peer, 0x78, NULL), 0);
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, NULL, 300), -FI_EAGAIN);
	cr_assert_eq(fi_cancel(&r.b.ep->fid, &ctx), 0);
	{
		struct fi_cq_err_entry err;

		cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, &err, 2000), -FI_EAVAIL);
		cr_assert_eq(err.err, FI_ECANCELED);
		cr_assert(err.flags & FI_MULTI_RECV, "the buffer is handed back");
	}
	rdm_close(&r);
}

/*
 * FI_TAGGED_DIRECTED_RECV directs tagged receives only: an untagged
 * receive naming a source takes a message from anyone, a tagged one only
 * from its source. FI_EXACT_DIRECTED_RECV refuses FI_ADDR_UNSPEC.
 */
Test(fi_trecv, tagged_directed_recv_directs_tagged_receives_only)
{
	uint8_t buf[2][32] = { { 0 } };
	struct fi_cq_tagged_entry e;
	struct pt_ep c;
	fi_addr_t src;
	struct rdm r;

	rdm_open_info(&r, rdm_info_for(PT_VERSION, FI_MSG | FI_TAGGED | FI_SOURCE |
				       FI_TAGGED_DIRECTED_RECV), false);
	cr_assert(r.d.info->caps & FI_TAGGED_DIRECTED_RECV);
	cr_assert_eq(r.d.info->caps & FI_DIRECTED_RECV, 0);
	/* c: a third endpoint, a stranger to b's receives */
	pt_ep_create(&r.d, &c, NULL);
	pt_ep_bind_cqs(&r.d, &c, FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE, 0, 0);
	pt_ep_connect(&c, &r.b);
	pt_ep_enable(&c);

	/* untagged, naming a: c's message lands in it */
	cr_assert_eq(fi_recv(r.b.ep, buf[0], sizeof(buf[0]), NULL, r.b.peer, (void *)1), 0);
	cr_assert_eq(fi_send(c.ep, "from c", 7, NULL, c.peer, NULL), 0);
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, &src, NULL, 5000), 1);
	cr_assert_eq(e.op_context, (void *)1);
	cr_assert_str_eq((char *)buf[0], "from c");
	cr_assert_neq(src, r.b.peer, "the message was c's");
	/* tagged, naming a: c's message of the same tag waits, a's is taken */
	cr_assert_eq(fi_trecv(r.b.ep, buf[1], sizeof(buf[1]), NULL, r.b.peer, 9, 0, (void *)2), 0);
	cr_assert_eq(fi_tsend(c.ep, "c tagged", 9, NULL, c.peer, 9, NULL), 0);
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, NULL, 300), -FI_EAGAIN);
	cr_assert_eq(fi_tsend(r.a.ep, "a tagged", 9, NULL, r.a.peer, 9, NULL), 0);
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, &src, NULL, 5000), 1);
	cr_assert_eq(e.op_context, (void *)2);
	cr_assert_str_eq((char *)buf[1], "a tagged");
	cr_assert_eq(src, r.b.peer);
	/* c's is still there for a receive from anyone */
	cr_assert_eq(fi_trecv(r.b.ep, buf[1], sizeof(buf[1]), NULL, FI_ADDR_UNSPEC, 9, 0,
			      (void *)3), 0);
	cr_assert_eq(rdm_wait(&r, r.b.rx_cq, &e, NULL, NULL, 5000), 1);
	cr_assert_str_eq((char *)buf[1], "c tagged");
	pt_ep_close(&c);
	rdm_close(&r);

	rdm_open_info(&r, rdm_info_for(PT_VERSION, FI_MSG | FI_TAGGED | FI_DIRECTED_RECV |
				       FI_EXACT_DIRECTED_RECV), false);
	cr_assert(r.d.info->caps & FI_EXACT_DIRECTED_RECV);
	cr_assert_eq(fi_trecv(r.b.ep, buf[0], 8, NULL, FI_ADDR_UNSPEC, 1, 0, NULL), -FI_EINVAL);
	cr_assert_eq(fi_recv(r.b.ep, buf[0], 8, NULL, FI_ADDR_UNSPEC, NULL), -FI_EINVAL);
	cr_assert_eq(fi_recv(r.b.ep, buf[0], 8, NULL, r.b.peer, NULL), 0);
	rdm_close(&r);
}
#endif
