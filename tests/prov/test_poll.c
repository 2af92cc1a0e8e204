/* SPDX-License-Identifier: BSD-2-Clause */
/* test_poll.c: poll sets (fi_poll_open) and wait sets (fi_wait_open) of CQs and counters, fi_poll(3), on a DGRAM pair on 127.0.0.1. */
#include "prov_test.h"

#include <poll.h>

static char tx_tag, rx_tag, cntr_tag;

/*
 * A pair whose CQs (and b's receive counter) were opened with contexts and
 * wait objects @w, in @p's domain (opened here unless it is already).
 */
static void pair_open_ctx(struct pt_pair *p, enum fi_wait_obj w, struct fid_wait *set)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_DATA, .wait_obj = w, .wait_set = set };
	struct fi_cntr_attr na = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = w, .wait_set = set };

	if (!p->d.domain)
		pt_dom_open_caps(&p->d, 0);
	pt_ep_create(&p->d, &p->a, NULL);
	pt_ep_create(&p->d, &p->b, NULL);
	cr_assert_eq(fi_cq_open(p->d.domain, &ca, &p->a.tx_cq, &tx_tag), 0);
	cr_assert_eq(fi_cq_open(p->d.domain, &ca, &p->b.rx_cq, &rx_tag), 0);
	cr_assert_eq(fi_cq_open(p->d.domain, &ca, &p->a.rx_cq, NULL), 0);
	cr_assert_eq(fi_cq_open(p->d.domain, &ca, &p->b.tx_cq, NULL), 0);
	cr_assert_eq(fi_cntr_open(p->d.domain, &na, &p->b.rx_cntr, &cntr_tag), 0);
	cr_assert_eq(fi_ep_bind(p->a.ep, &p->a.tx_cq->fid, FI_TRANSMIT), 0);
	cr_assert_eq(fi_ep_bind(p->a.ep, &p->a.rx_cq->fid, FI_RECV), 0);
	cr_assert_eq(fi_ep_bind(p->b.ep, &p->b.tx_cq->fid, FI_TRANSMIT), 0);
	cr_assert_eq(fi_ep_bind(p->b.ep, &p->b.rx_cq->fid, FI_RECV), 0);
	cr_assert_eq(fi_ep_bind(p->b.ep, &p->b.rx_cntr->fid, FI_RECV), 0);
	pt_ep_connect(&p->a, &p->b);
	pt_ep_connect(&p->b, &p->a);
	pt_ep_enable(&p->a);
	pt_ep_enable(&p->b);
}

Test(fi_poll, reports_cqs_with_completions_and_counters_that_changed, .timeout = 30)
{
	struct fi_poll_attr attr = { 0 };
	struct fid_poll *ps;
	struct pt_pair p;
	void *ctx[8];
	char buf[64];
	bool tx = false, rx = false, cn = false;
	long deadline;
	int n, i;

	memset(&p, 0, sizeof(p));
	pair_open_ctx(&p, FI_WAIT_NONE, NULL);
	cr_assert_eq(fi_poll_open(p.d.domain, &attr, &ps), 0);
	cr_assert_eq(fi_poll_add(ps, &p.a.tx_cq->fid, 0), 0);
	cr_assert_eq(fi_poll_add(ps, &p.b.rx_cq->fid, 0), 0);
	cr_assert_eq(fi_poll_add(ps, &p.b.rx_cntr->fid, 0), 0);
	cr_assert_eq(fi_poll(ps, ctx, 8), 0, "nothing happened yet");
	cr_assert_eq(fi_recv(p.b.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, buf), 0);
	cr_assert_eq(pt_send(&p.a, "poll", 5, buf), 0);
	deadline = pt_now_ms() + 5000;
	while (!(tx && rx && cn) && pt_now_ms() < deadline) {
		n = fi_poll(ps, ctx, 8);
		cr_assert_geq(n, 0);
		for (i = 0; i < n; i++) {
			tx |= ctx[i] == &tx_tag;
			rx |= ctx[i] == &rx_tag;
			cn |= ctx[i] == &cntr_tag;
			cr_assert(ctx[i] == &tx_tag || ctx[i] == &rx_tag || ctx[i] == &cntr_tag);
		}
	}
	cr_assert(tx && rx && cn, "reported: tx %d rx %d counter %d", tx, rx, cn);
	/* the CQs still hold their completions; the counter has not changed again */
	n = fi_poll(ps, ctx, 8);
	cr_assert_eq(n, 2, "%d", n);
	for (i = 0; i < n; i++)
		cr_assert_neq(ctx[i], &cntr_tag, "an unchanged counter is not reported");
	cr_assert_eq(fi_poll(ps, ctx, 1), 1, "at most count contexts");
	/* read empty, nothing is left to report */
	cr_assert_eq(fi_cq_read(p.a.tx_cq, buf, 1), 1);
	cr_assert_eq(fi_cq_read(p.b.rx_cq, buf, 1), 1);
	cr_assert_eq(fi_poll(ps, ctx, 8), 0);
	/* membership: CQs and counters only, once; a member cannot be closed */
	cr_assert_eq(fi_poll_add(ps, &p.a.ep->fid, 0), -FI_EINVAL);
	cr_assert_eq(fi_poll_add(ps, &p.a.tx_cq->fid, 0), -FI_EALREADY);
	cr_assert_eq(fi_poll_add(ps, &p.a.rx_cq->fid, 1), -FI_EBADFLAGS);
	cr_assert_eq(fi_poll_del(ps, &p.a.rx_cq->fid, 0), -FI_ENOENT);
	cr_assert_eq(fi_close(&p.b.rx_cntr->fid), -FI_EBUSY);
	cr_assert_eq(fi_poll_del(ps, &p.a.tx_cq->fid, 0), 0);
	cr_assert_eq(fi_close(&ps->fid), 0);
	pt_pair_close(&p);
}

Test(fi_wait, wakes_when_a_member_has_something_and_times_out_otherwise, .timeout = 30)
{
	struct fi_wait_attr attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fid_wait *ws;
	struct pt_pair p;
	struct fi_cq_data_entry e;
	char buf[64];
	long t0;
	int fd = -1, ret;

	memset(&p, 0, sizeof(p));
	pt_dom_open_caps(&p.d, 0);
	attr.flags = 1;
	cr_assert_eq(fi_wait_open(p.d.fabric, &attr, &ws), -FI_EBADFLAGS);
	attr.flags = 0;
	cr_assert_eq(fi_wait_open(p.d.fabric, &attr, &ws), 0);
	cr_assert_eq(fi_control(&ws->fid, FI_GETWAIT, &fd), 0);
	cr_assert_geq(fd, 0);
	pair_open_ctx(&p, FI_WAIT_SET, ws);
	cr_assert_eq(fi_close(&ws->fid), -FI_EBUSY, "a set with members stays open");
	/* fi_wait sleeps out its timeout when nothing comes (a lower bound: a
	 * loaded machine only makes it longer) */
	t0 = pt_now_ms();
	cr_assert_eq(fi_wait(ws, 200), -FI_ETIMEDOUT);
	cr_assert_geq(pt_now_ms() - t0, 190, "fi_wait returned before its timeout");
	cr_assert_eq(fi_recv(p.b.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, buf), 0);
	cr_assert_eq(pt_send(&p.a, "wait", 5, buf), 0);
	/* until both completions are read: each fi_wait returns because a member has one */
	for (int got = 0; got < 2;) {
		ret = fi_wait(ws, 5000);
		cr_assert_eq(ret, 0, "fi_wait = %d", ret);
		got += fi_cq_read(p.a.tx_cq, &e, 1) == 1;
		got += fi_cq_read(p.b.rx_cq, &e, 1) == 1;
	}
	/* a wait set member needs its set */
	{
		struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_SET };
		struct fid_cq *cq = NULL;

		cr_assert_eq(fi_cq_open(p.d.domain, &ca, &cq, NULL), -FI_EINVAL);
	}
	pt_ep_close(&p.a);
	pt_ep_close(&p.b);
	cr_assert_eq(fi_close(&ws->fid), 0);
	pt_dom_close(&p.d);
}
