/* SPDX-License-Identifier: BSD-2-Clause */
/* test_threads.c: braid's native RDM endpoints driven by several threads at once: per-endpoint locks, shared CQs, FI_THREAD_DOMAIN. */
#include <stdatomic.h>
#include <stdlib.h>
#include <rdma/fi_tagged.h>

#include "prov_test.h"

/*
 * Each thread owns a sender and a receiver endpoint of one domain and streams
 * MSGS tagged messages of varying sizes (8 B to 96 KiB: eager and multi-packet)
 * from one to the other, checking every byte and the order (FI_ORDER_SAS).
 * The CQs are tiny, so completions race for the last slot.
 */
#define THREADS		2
#define MSGS		20000
#define BIG_EVERY	50	/* one message in BIG_EVERY is large (8 B << k up to MAX_LEN) */
#define MAX_LEN		(96 * 1024)
#define WINDOW		8
#define CQ_SIZE		4
#define DEADLINE_MS	30000

static struct fi_info *thr_info(enum fi_threading threading)
{
	struct fi_info *hints = pt_hints(FI_EP_RDM), *list = NULL, *info;
	int ret;

	hints->caps = FI_MSG | FI_TAGGED;
	hints->domain_attr->threading = threading;
	hints->tx_attr->msg_order = FI_ORDER_SAS;
	hints->rx_attr->msg_order = FI_ORDER_SAS;
	ret = fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &list);
	fi_freeinfo(hints);
	cr_assert_eq(ret, 0, "fi_getinfo(braid RDM) = %d", ret);
	/* the check is of braid's own endpoint, not of a utility provider over it */
	info = pt_take_plain_braid(list);
	cr_assert_eq(info->ep_attr->type, FI_EP_RDM);
	cr_assert_eq(info->domain_attr->threading, threading);
	return info;
}

static struct fid_cq *thr_cq(struct pt_dom *d)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_TAGGED, .size = CQ_SIZE };
	struct fid_cq *cq = NULL;

	cr_assert_eq(fi_cq_open(d->domain, &attr, &cq, NULL), 0);
	return cq;
}

/* an endpoint with its own AV, bound to @tx and @rx (either may be shared), not yet enabled */
static void thr_ep(struct pt_dom *d, struct pt_ep *e, struct fid_cq *tx, struct fid_cq *rx)
{
	pt_ep_create(d, e, NULL);
	e->tx_cq = tx;
	e->rx_cq = rx;
	cr_assert_eq(fi_ep_bind(e->ep, &tx->fid, FI_TRANSMIT), 0);
	cr_assert_eq(fi_ep_bind(e->ep, &rx->fid, FI_RECV), 0);
}

/* mostly small messages (completions race), now and then an eager or multi-packet one */
static size_t msg_len(unsigned i)
{
	unsigned k = (i / BIG_EVERY) % 14;

	if (i % BIG_EVERY)
		return 8 + i % 57;
	return (size_t)8 << k > MAX_LEN ? MAX_LEN - i % 1000 : (size_t)8 << k;
}

static uint8_t msg_byte(unsigned stream, unsigned i, size_t k)
{
	return (uint8_t)(stream * 131 + i * 7 + k);
}

/*
 * One stream: a thread's sender and receiver. Its completions may be read
 * by another thread (shared CQs): what they touch is atomic.
 */
struct stream {
	unsigned id;
	struct pt_ep *tx, *rx;
	/** @sent, @recvd: completions seen, by message index (each exactly once). */
	atomic_uchar sent[MSGS], recvd[MSGS];
	uint8_t *sbuf[WINDOW], *rbuf[WINDOW];
	int posted_recv, posted_send;
	atomic_int done_recv, done_send;
	/** @fail: the first thing that went wrong, or NULL. */
	_Atomic(const char *) fail;
};

/* the stream whose endpoint posted @ctx (contexts are &s->sent[i] or &s->recvd[i]) */
static struct stream *stream_of(struct stream *all, int n, void *ctx, bool *is_send, unsigned *i)
{
	int k;

	for (k = 0; k < n; k++) {
		atomic_uchar *p = ctx;

		if (p >= all[k].sent && p < all[k].sent + MSGS) {
			*is_send = true;
			*i = (unsigned)(p - all[k].sent);
			return &all[k];
		}
		if (p >= all[k].recvd && p < all[k].recvd + MSGS) {
			*is_send = false;
			*i = (unsigned)(p - all[k].recvd);
			return &all[k];
		}
	}
	return NULL;
}

static void take(struct stream *all, int n, struct fi_cq_tagged_entry *e)
{
	struct stream *s;
	bool is_send;
	unsigned i;

	s = stream_of(all, n, e->op_context, &is_send, &i);
	if (!s) {
		all[0].fail = "a completion with a context nobody posted";
		return;
	}
	if (is_send) {
		if (atomic_fetch_add(&s->sent[i], 1))
			s->fail = "a send completed twice";
		atomic_fetch_add(&s->done_send, 1);
		return;
	}
	if (e->tag != ((uint64_t)s->id << 32 | i) || e->len != msg_len(i))
		s->fail = "a receive with the wrong tag or length";
	for (size_t k = 0; k < e->len && !s->fail; k++)
		if (s->rbuf[i % WINDOW][k] != msg_byte(s->id, i, k))
			s->fail = "a received byte is wrong";
	/* counted after the check: its buffer may be reused from then on */
	if (atomic_fetch_add(&s->recvd[i], 1))
		s->fail = "a receive completed twice";
	atomic_fetch_add(&s->done_recv, 1);
}

/* Drain @cq into the streams @all (@n of them); -1 on an error completion. */
static int drain(struct fid_cq *cq, struct stream *all, int n)
{
	struct fi_cq_tagged_entry e[4];
	ssize_t got;
	int j;

	got = fi_cq_read(cq, e, 4);
	if (got == -FI_EAVAIL) {
		struct fi_cq_err_entry err = { 0 };

		(void)fi_cq_readerr(cq, &err, 0);
		all[0].fail = "an error completion";
		return -1;
	}
	for (j = 0; j < got; j++)
		take(all, n, &e[j]);
	return 0;
}

/*
 * Run stream @s to its end: WINDOW receives and sends in flight at once.
 * Completions are read from @cqs (@ncq of them, possibly shared with other
 * threads, whose completions this thread then hands to their streams: @all).
 */
static void stream_run(struct stream *s, struct stream *all, int n, struct fid_cq **cqs, int ncq)
{
	long deadline = pt_now_ms() + DEADLINE_MS;
	int k;

	while ((atomic_load(&s->done_recv) < MSGS || atomic_load(&s->done_send) < MSGS) &&
	       !atomic_load(&s->fail)) {
		if (pt_now_ms() > deadline) {
			s->fail = "the stream did not finish in time";
			return;
		}
		/* a buffer is reused only once the message it held completed */
		while (s->posted_recv < MSGS &&
		       (s->posted_recv < WINDOW || atomic_load(&s->recvd[s->posted_recv - WINDOW]))) {
			unsigned i = (unsigned)s->posted_recv;
			ssize_t r = fi_trecv(s->rx->ep, s->rbuf[i % WINDOW], MAX_LEN, NULL,
					     s->rx->peer, (uint64_t)s->id << 32 | i, 0,
					     &s->recvd[i]);

			if (r == -FI_EAGAIN)
				break;
			if (r) {
				s->fail = "fi_trecv failed";
				return;
			}
			s->posted_recv++;
		}
		while (s->posted_send < MSGS &&
		       (s->posted_send < WINDOW || atomic_load(&s->sent[s->posted_send - WINDOW]))) {
			unsigned i = (unsigned)s->posted_send;
			uint8_t *b = s->sbuf[i % WINDOW];
			ssize_t r;

			for (size_t j = 0; j < msg_len(i); j++)
				b[j] = msg_byte(s->id, i, j);
			r = fi_tsend(s->tx->ep, b, msg_len(i), NULL, s->tx->peer,
				     (uint64_t)s->id << 32 | i, &s->sent[i]);
			if (r == -FI_EAGAIN)
				break;
			if (r) {
				s->fail = "fi_tsend failed";
				return;
			}
			s->posted_send++;
		}
		for (k = 0; k < ncq; k++)
			if (drain(cqs[k], all, n))
				return;
	}
}

static void stream_init(struct stream *s, unsigned id, struct pt_ep *tx, struct pt_ep *rx)
{
	int k;

	memset(s, 0, sizeof(*s));	/* (all-zero atomics are valid zeroes) */
	s->id = id;
	s->tx = tx;
	s->rx = rx;
	for (k = 0; k < WINDOW; k++) {
		s->sbuf[k] = malloc(MAX_LEN);
		s->rbuf[k] = malloc(MAX_LEN);
		cr_assert(s->sbuf[k] && s->rbuf[k]);
	}
}

static void stream_check(struct stream *s)
{
	const char *fail = atomic_load(&s->fail);
	int k;

	cr_expect_null(fail, "stream %u: %s (sent %d/%d, received %d/%d)", s->id,
		       fail ? fail : "", atomic_load(&s->done_send), MSGS,
		       atomic_load(&s->done_recv), MSGS);
	cr_expect_eq(atomic_load(&s->done_send), MSGS);
	cr_expect_eq(atomic_load(&s->done_recv), MSGS);
	for (k = 0; k < MSGS; k++) {
		cr_expect_eq(atomic_load(&s->sent[k]), 1, "stream %u message %d: send completions",
			     s->id, k);
		cr_expect_eq(atomic_load(&s->recvd[k]), 1,
			     "stream %u message %d: receive completions", s->id, k);
	}
	for (k = 0; k < WINDOW; k++) {
		free(s->sbuf[k]);
		free(s->rbuf[k]);
	}
}

/* ---- endpoints of one domain, a thread each ---- */

struct own_arg {
	struct stream *s;
	struct fid_cq *cqs[2];
};

static void *own_main(void *p)
{
	struct own_arg *a = p;

	stream_run(a->s, a->s, 1, a->cqs, 2);
	return NULL;
}

static void run_own(enum fi_threading threading)
{
	struct pt_dom d = { 0 };
	struct pt_ep tx[THREADS], rx[THREADS];
	struct stream st[THREADS];
	struct own_arg arg[THREADS];
	pthread_t th[THREADS];
	int t;

	d.info = thr_info(threading);
	cr_assert_eq(fi_fabric(d.info->fabric_attr, &d.fabric, NULL), 0);
	cr_assert_eq(fi_domain(d.fabric, d.info, &d.domain, NULL), 0);
	for (t = 0; t < THREADS; t++) {
		thr_ep(&d, &tx[t], thr_cq(&d), thr_cq(&d));
		thr_ep(&d, &rx[t], thr_cq(&d), thr_cq(&d));
		pt_ep_connect(&tx[t], &rx[t]);
		pt_ep_connect(&rx[t], &tx[t]);
		pt_ep_enable(&tx[t]);
		pt_ep_enable(&rx[t]);
		stream_init(&st[t], (unsigned)t, &tx[t], &rx[t]);
		arg[t].s = &st[t];
		arg[t].cqs[0] = tx[t].tx_cq;
		arg[t].cqs[1] = rx[t].rx_cq;
	}
	for (t = 0; t < THREADS; t++)
		cr_assert_eq(pthread_create(&th[t], NULL, own_main, &arg[t]), 0);
	for (t = 0; t < THREADS; t++)
		cr_assert(pt_join_within(th[t], NULL, NULL), "thread %d did not end", t);
	for (t = 0; t < THREADS; t++) {
		stream_check(&st[t]);
		pt_ep_close(&tx[t]);	/* closes its CQs and AV too */
		pt_ep_close(&rx[t]);
	}
	pt_dom_close(&d);
}

/* FI_THREAD_SAFE: two threads, each with its own endpoints and CQs, stream at once. */
Test(threads, endpoints_of_one_domain_in_parallel)
{
	run_own(FI_THREAD_SAFE);
}

/* ---- CQs shared by the threads' endpoints ---- */

struct shared_arg {
	struct stream *s, *all;
	struct fid_cq *cqs[2];
};

static void *shared_main(void *p)
{
	struct shared_arg *a = p;

	stream_run(a->s, a->all, THREADS, a->cqs, 2);
	return NULL;
}

/*
 * Two threads, each posting through its own pair of endpoints, while all the
 * senders share one transmit CQ and all the receivers one receive CQ, both of
 * 4 entries, and both threads read both: completions of one thread's
 * operations are read by the other, every one exactly once, none lost when
 * two endpoints race for the last slot.
 */
Test(threads, shared_cqs_read_by_both_threads)
{
	struct pt_dom d = { 0 };
	struct pt_ep tx[THREADS], rx[THREADS];
	struct stream st[THREADS];
	struct shared_arg arg[THREADS];
	struct fid_cq *txcq, *rxcq;
	pthread_t th[THREADS];
	int t;

	d.info = thr_info(FI_THREAD_SAFE);
	cr_assert_eq(fi_fabric(d.info->fabric_attr, &d.fabric, NULL), 0);
	cr_assert_eq(fi_domain(d.fabric, d.info, &d.domain, NULL), 0);
	txcq = thr_cq(&d);
	rxcq = thr_cq(&d);
	for (t = 0; t < THREADS; t++) {
		thr_ep(&d, &tx[t], txcq, rxcq);
		thr_ep(&d, &rx[t], txcq, rxcq);
		pt_ep_connect(&tx[t], &rx[t]);
		pt_ep_connect(&rx[t], &tx[t]);
		pt_ep_enable(&tx[t]);
		pt_ep_enable(&rx[t]);
		stream_init(&st[t], (unsigned)t, &tx[t], &rx[t]);
	}
	for (t = 0; t < THREADS; t++) {
		arg[t] = (struct shared_arg){ &st[t], st, { txcq, rxcq } };
		cr_assert_eq(pthread_create(&th[t], NULL, shared_main, &arg[t]), 0);
	}
	for (t = 0; t < THREADS; t++)
		cr_assert(pt_join_within(th[t], NULL, NULL), "thread %d did not end", t);
	for (t = 0; t < THREADS; t++) {
		stream_check(&st[t]);
		tx[t].tx_cq = tx[t].rx_cq = rx[t].tx_cq = rx[t].rx_cq = NULL;
		pt_ep_close(&tx[t]);
		pt_ep_close(&rx[t]);
	}
	cr_assert_eq(fi_close(&txcq->fid), 0);
	cr_assert_eq(fi_close(&rxcq->fid), 0);
	pt_dom_close(&d);
}

/*
 * FI_THREAD_DOMAIN: the application serialises its calls into the domain.
 * With braid's progress thread on (the default) braid still locks against
 * it; with it off (FI_BRAID_PROGRESS_US=0) it takes no lock at all. Both
 * carry one thread's stream over two endpoints intact.
 */
static void run_serial(void)
{
	struct pt_dom d = { 0 };
	struct pt_ep tx, rx;
	struct stream st;
	struct fid_cq *cqs[2];

	d.info = thr_info(FI_THREAD_DOMAIN);
	cr_assert_eq(fi_fabric(d.info->fabric_attr, &d.fabric, NULL), 0);
	cr_assert_eq(fi_domain(d.fabric, d.info, &d.domain, NULL), 0);
	thr_ep(&d, &tx, thr_cq(&d), thr_cq(&d));
	thr_ep(&d, &rx, thr_cq(&d), thr_cq(&d));
	pt_ep_connect(&tx, &rx);
	pt_ep_connect(&rx, &tx);
	pt_ep_enable(&tx);
	pt_ep_enable(&rx);
	stream_init(&st, 7, &tx, &rx);
	cqs[0] = tx.tx_cq;
	cqs[1] = rx.rx_cq;
	stream_run(&st, &st, 1, cqs, 2);
	stream_check(&st);
	pt_ep_close(&tx);
	pt_ep_close(&rx);
	pt_dom_close(&d);
}

Test(threads, thread_domain_with_the_progress_thread)
{
	run_serial();
}

Test(threads, thread_domain_without_locks)
{
	struct fi_info *hints, *info = NULL;

	/* read when the provider loads: this test's process has not loaded it yet */
	setenv("FI_BRAID_PROGRESS_US", "0", 1);
	/* it took: with no progress thread braid offers no automatic data progress
	 * (and so, with FI_THREAD_DOMAIN, its domain is one that takes no lock) */
	hints = pt_hints(FI_EP_RDM);
	hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
	cr_assert_eq(fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &info),
		     -FI_ENODATA, "FI_BRAID_PROGRESS_US=0 did not take: the progress thread runs");
	fi_freeinfo(hints);
	run_serial();
}
