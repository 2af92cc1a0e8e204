/* SPDX-License-Identifier: BSD-2-Clause */
/* test_cntr.c: braid completion counters (fi_cntr(3)): values, error values, waits. */
#include "prov_test.h"

static struct fid_cntr *open_cntr(struct pt_dom *d, enum fi_wait_obj wait_obj)
{
	pt_dom_open(d);
	return pt_cntr_open(d->domain, wait_obj);
}

static void close_cntr(struct pt_dom *d, struct fid_cntr *cntr)
{
	cr_expect_eq(fi_close(&cntr->fid), 0);
	pt_dom_close(d);
}

Test(fi_cntr_open, starts_at_zero)
{
	struct pt_dom d;
	struct fid_cntr *cntr = open_cntr(&d, FI_WAIT_NONE);

	cr_expect_eq(cntr->fid.fclass, FI_CLASS_CNTR);
	cr_expect_eq(fi_cntr_read(cntr), 0);
	cr_expect_eq(fi_cntr_readerr(cntr), 0);
	close_cntr(&d, cntr);
}

Test(fi_cntr_open, bad_flags)
{
	struct pt_dom d;
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP, .flags = FI_SEND };
	struct fid_cntr *cntr = NULL;

	pt_dom_open(&d);
	/* fi_cntr(3): "Flags are reserved for future use, and must be set to 0." */
	cr_expect_lt(fi_cntr_open(d.domain, &attr, &cntr, NULL), 0);
	pt_dom_close(&d);
}

Test(fi_cntr_add, adds)
{
	struct pt_dom d;
	struct fid_cntr *cntr = open_cntr(&d, FI_WAIT_NONE);

	cr_expect_eq(fi_cntr_add(cntr, 5), 0);
	cr_expect_eq(fi_cntr_add(cntr, 7), 0);
	cr_expect_eq(fi_cntr_read(cntr), 12);
	cr_expect_eq(fi_cntr_readerr(cntr), 0, "add touched the error value");
	close_cntr(&d, cntr);
}

Test(fi_cntr_set, sets)
{
	struct pt_dom d;
	struct fid_cntr *cntr = open_cntr(&d, FI_WAIT_NONE);

	cr_expect_eq(fi_cntr_add(cntr, 5), 0);
	cr_expect_eq(fi_cntr_set(cntr, 100), 0);
	cr_expect_eq(fi_cntr_read(cntr), 100);
	cr_expect_eq(fi_cntr_set(cntr, 3), 0);
	cr_expect_eq(fi_cntr_read(cntr), 3);
	cr_expect_eq(fi_cntr_readerr(cntr), 0);
	close_cntr(&d, cntr);
}

Test(fi_cntr_adderr, adds_errors)
{
	struct pt_dom d;
	struct fid_cntr *cntr = open_cntr(&d, FI_WAIT_NONE);

	cr_expect_eq(fi_cntr_adderr(cntr, 2), 0);
	cr_expect_eq(fi_cntr_adderr(cntr, 3), 0);
	cr_expect_eq(fi_cntr_readerr(cntr), 5);
	cr_expect_eq(fi_cntr_read(cntr), 0, "adderr touched the success value");
	close_cntr(&d, cntr);
}

Test(fi_cntr_seterr, sets_errors)
{
	struct pt_dom d;
	struct fid_cntr *cntr = open_cntr(&d, FI_WAIT_NONE);

	cr_expect_eq(fi_cntr_adderr(cntr, 2), 0);
	cr_expect_eq(fi_cntr_seterr(cntr, 40), 0);
	cr_expect_eq(fi_cntr_readerr(cntr), 40);
	cr_expect_eq(fi_cntr_seterr(cntr, 0), 0);
	cr_expect_eq(fi_cntr_readerr(cntr), 0);
	cr_expect_eq(fi_cntr_read(cntr), 0);
	close_cntr(&d, cntr);
}

Test(fi_cntr_wait, already_reached, .timeout = 20)
{
	struct pt_dom d;
	struct fid_cntr *cntr = open_cntr(&d, FI_WAIT_UNSPEC);

	cr_expect_eq(fi_cntr_set(cntr, 5), 0);
	cr_expect_eq(fi_cntr_wait(cntr, 5, 1000), 0);
	cr_expect_eq(fi_cntr_wait(cntr, 3, 0), 0);
	cr_expect_geq(fi_cntr_read(cntr), 5);
	close_cntr(&d, cntr);
}

/* fi_cntr(3): "If the call returns due to timeout, -FI_ETIMEDOUT will be returned. The error
 * value associated with the counter remains unchanged." */
static void wait_timeout(enum fi_wait_obj wait_obj)
{
	struct pt_dom d;
	struct fid_cntr *cntr = open_cntr(&d, wait_obj);

	cr_expect_eq(fi_cntr_add(cntr, 1), 0);
	cr_expect_eq(fi_cntr_wait(cntr, 2, 100), -FI_ETIMEDOUT);
	cr_expect_eq(fi_cntr_readerr(cntr), 0);
	cr_expect_eq(fi_cntr_read(cntr), 1);
	close_cntr(&d, cntr);
}

Test(fi_cntr_wait, timeout_wait_unspec, .timeout = 20)
{
	wait_timeout(FI_WAIT_UNSPEC);
}

Test(fi_cntr_wait, timeout_wait_fd, .timeout = 20)
{
	wait_timeout(FI_WAIT_FD);
}

Test(fi_cntr_wait, timeout_wait_yield, .timeout = 20)
{
	wait_timeout(FI_WAIT_YIELD);
}

/*
 * fi_cntr(3) calls fi_cntr_wait on an FI_WAIT_NONE counter invalid; braid
 * waits on one as on FI_WAIT_YIELD (progressing, yielding the CPU), as
 * fabtests' fi_rdm_rma_trigger expects (fi_braid(7)).
 */
Test(fi_cntr_wait, wait_none_polls, .timeout = 20)
{
	struct pt_dom d;
	struct fid_cntr *cntr = open_cntr(&d, FI_WAIT_NONE);

	cr_expect_eq(fi_cntr_set(cntr, 2), 0);
	cr_expect_eq(fi_cntr_wait(cntr, 2, 1000), 0);
	close_cntr(&d, cntr);
	wait_timeout(FI_WAIT_NONE);
}

struct wait_arg {
	struct fid_cntr *cntr;
	uint64_t threshold;
	int ret;
};

static void *wait_thread(void *p)
{
	struct wait_arg *a = p;

	a->ret = fi_cntr_wait(a->cntr, a->threshold, 20000);
	return NULL;
}

static void kick_add(void *cntr)
{
	cr_expect_eq(fi_cntr_add(cntr, 1), 0);
}

/* A waiter blocked below the threshold returns once other threads' adds reach it. */
Test(fi_cntr_wait, reaches_threshold, .timeout = 30)
{
	struct pt_dom d;
	struct wait_arg a = { .threshold = 3 };
	pthread_t t;

	a.cntr = open_cntr(&d, FI_WAIT_UNSPEC);
	cr_assert_eq(pthread_create(&t, NULL, wait_thread, &a), 0);
	cr_assert(pt_join_within(t, kick_add, a.cntr), "fi_cntr_wait did not return");
	cr_expect_eq(a.ret, 0, "fi_cntr_wait = %d", a.ret);
	cr_expect_geq(fi_cntr_read(a.cntr), 3);
	close_cntr(&d, a.cntr);
}

static void kick_adderr(void *cntr)
{
	cr_expect_eq(fi_cntr_adderr(cntr, 1), 0);
}

/* fi_cntr(3): "Any change in a counter's error value will unblock any thread inside
 * fi_cntr_wait." (It did not reach its threshold, nor time out.) */
Test(fi_cntr_wait, error_unblocks, .timeout = 30)
{
	struct pt_dom d;
	struct wait_arg a = { .threshold = 1000 };
	pthread_t t;

	a.cntr = open_cntr(&d, FI_WAIT_UNSPEC);
	cr_assert_eq(pthread_create(&t, NULL, wait_thread, &a), 0);
	cr_assert(pt_join_within(t, kick_adderr, a.cntr), "fi_cntr_wait not unblocked by adderr");
	cr_expect(a.ret < 0 && a.ret != -FI_ETIMEDOUT, "fi_cntr_wait = %d", a.ret);
	cr_expect_gt(fi_cntr_readerr(a.cntr), 0);
	close_cntr(&d, a.cntr);
}

Test(fi_control, cntr_getwait_fd)
{
	struct pt_dom d;
	struct fid_cntr *cntr = open_cntr(&d, FI_WAIT_FD);
	int fd = -1;

	cr_expect_eq(fi_control(&cntr->fid, FI_GETWAIT, &fd), 0);
	cr_expect_geq(fd, 0);
	close_cntr(&d, cntr);
}

/* Counters bound to endpoints count completed sends and receives. */
Test(fi_cntr_read, counts_traffic)
{
	struct pt_pair p;
	char rbuf[4][16], sbuf[16] = "cntr";
	long deadline;
	int i;

	pt_pair_open_opts(&p, 0, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, true);
	for (i = 0; i < 4; i++)
		cr_assert_eq(fi_recv(p.b.ep, rbuf[i], sizeof(rbuf[i]), NULL, FI_ADDR_UNSPEC, NULL), 0);
	for (i = 0; i < 3; i++)
		cr_assert_eq(pt_send(&p.a, sbuf, sizeof(sbuf), NULL), 0);
	deadline = pt_now_ms() + PT_POLL_MS;
	while (fi_cntr_read(p.b.rx_cntr) < 3 && pt_now_ms() < deadline)
		;
	cr_expect_eq(fi_cntr_read(p.b.rx_cntr), 3);
	cr_expect_eq(fi_cntr_read(p.a.tx_cntr), 3);
	cr_expect_eq(fi_cntr_read(p.a.rx_cntr), 0);
	cr_expect_eq(fi_cntr_read(p.b.tx_cntr), 0);
	cr_expect_eq(fi_cntr_readerr(p.b.rx_cntr), 0);
	cr_expect_eq(fi_cntr_readerr(p.a.tx_cntr), 0);
	pt_pair_close(&p);
}

/* fi_cntr_wait drives progress: a receive counter reaches its threshold by waiting alone. */
Test(fi_cntr_wait, counts_receive, .timeout = 30)
{
	struct pt_pair p;
	char rbuf[16], sbuf[16] = "wait";

	pt_pair_open_opts(&p, 0, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, true);
	cr_assert_eq(fi_recv(p.b.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, NULL), 0);
	cr_assert_eq(pt_send(&p.a, sbuf, sizeof(sbuf), NULL), 0);
	cr_expect_eq(fi_cntr_wait(p.b.rx_cntr, 1, 5000), 0);
	cr_expect_str_eq(rbuf, "wait");
	pt_pair_close(&p);
}

/* fi_cntr(3): "When closing the counter, there must be no opened endpoints ... associated
 * with the counter. If resources are still associated ... the call will return -FI_EBUSY." */
Test(fi_close, cntr_bound_to_ep)
{
	struct pt_dom d;
	struct pt_ep e;
	struct fid_cntr *tx, *rx;

	pt_dom_open(&d);
	pt_ep_create(&d, &e, NULL);
	pt_ep_bind_cntrs(&d, &e);
	tx = e.tx_cntr;
	rx = e.rx_cntr;
	cr_expect_eq(fi_close(&tx->fid), -FI_EBUSY);
	cr_expect_eq(fi_close(&rx->fid), -FI_EBUSY);
	cr_assert_eq(fi_close(&e.ep->fid), 0);
	e.ep = NULL;
	cr_expect_eq(fi_close(&tx->fid), 0);
	cr_expect_eq(fi_close(&rx->fid), 0);
	e.tx_cntr = e.rx_cntr = NULL;
	pt_ep_close(&e);
	pt_dom_close(&d);
}
