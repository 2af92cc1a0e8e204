/* SPDX-License-Identifier: BSD-2-Clause */
/* test_progress.c: how braid's progress is driven (fi_domain(3) "Progress Models"): the progress models fi_info offers, the domain's progress thread, and threads blocked in braid woken by another endpoint's traffic. */
#include "prov_test.h"

#include <signal.h>
#include <sys/wait.h>

/* braid's RDM entry for hints with @data_progress and @control_progress (0: unset) */
static int rdm_getinfo(uint32_t version, enum fi_progress data, enum fi_progress control,
		       struct fi_info **info)
{
	struct fi_info *hints = pt_hints(FI_EP_RDM), *list = NULL;
	int ret;

	hints->caps = FI_MSG;
	hints->domain_attr->data_progress = data;
	hints->domain_attr->control_progress = control;
	ret = fi_getinfo(version, "127.0.0.1", "0", FI_SOURCE, hints, &list);
	fi_freeinfo(hints);
	*info = ret ? NULL : pt_take_plain_braid(list);
	return ret;
}

/* @e with its AV, a transmit CQ of @tx_wait, a receive CQ of @rx_wait and, @cntrs, counters */
static void rdm_ep_open(struct pt_dom *d, struct pt_ep *e, enum fi_wait_obj tx_wait,
			enum fi_wait_obj rx_wait, bool cntrs)
{
	pt_ep_create(d, e, NULL);
	e->tx_cq = pt_cq_open(d->domain, FI_CQ_FORMAT_DATA, tx_wait);
	e->rx_cq = pt_cq_open(d->domain, FI_CQ_FORMAT_DATA, rx_wait);
	cr_assert_eq(fi_ep_bind(e->ep, &e->tx_cq->fid, FI_TRANSMIT), 0);
	cr_assert_eq(fi_ep_bind(e->ep, &e->rx_cq->fid, FI_RECV), 0);
	if (cntrs)
		pt_ep_bind_cntrs(d, e);
}

/* The RDM pair @p of @info (taken over), a and b as rdm_ep_open makes them, knowing each other. */
static void rdm_pair_open(struct pt_pair *p, struct fi_info *info, enum fi_wait_obj tx_wait,
			  enum fi_wait_obj rx_wait, bool cntrs)
{
	struct pt_ep *e[2] = { &p->a, &p->b };
	int i;

	memset(p, 0, sizeof(*p));
	p->d.info = info;
	cr_assert_eq(fi_fabric(info->fabric_attr, &p->d.fabric, NULL), 0);
	cr_assert_eq(fi_domain(p->d.fabric, info, &p->d.domain, NULL), 0);
	for (i = 0; i < 2; i++)
		rdm_ep_open(&p->d, e[i], tx_wait, rx_wait, cntrs);
	for (i = 0; i < 2; i++) {
		pt_ep_connect(e[i], e[!i]);
		pt_ep_enable(e[i]);
	}
}

/* a's next send completion (or error), driving a alone: b is not called into */
static ssize_t a_send_done(struct pt_pair *p, struct fi_cq_err_entry *err)
{
	struct fi_cq_data_entry e;
	long deadline = pt_now_ms() + 10000;
	ssize_t ret;

	do {
		ret = fi_cq_read(p->a.tx_cq, &e, 1);
	} while (ret == -FI_EAGAIN && pt_now_ms() < deadline);
	if (ret == -FI_EAVAIL) {
		memset(err, 0, sizeof(*err));
		cr_assert_eq(fi_cq_readerr(p->a.tx_cq, err, 0), 1);
	}
	return ret;
}

/*
 * With the progress thread (the default), FI_PROGRESS_AUTO data progress is
 * offered, the entry opens, and it is true: a receiver whose application
 * never calls in after posting its receive acknowledges the message (the
 * sender's send completes, which needs the receiver's ACK) and completes
 * the receive.
 */
Test(progress, auto_data_progress_is_offered_and_a_receiver_left_alone_acknowledges,
     .timeout = 60)
{
	struct fi_cq_err_entry err;
	struct fi_cq_data_entry e;
	struct fi_info *info;
	struct pt_pair p;
	char buf[32];

	setenv("FI_BRAID_PROGRESS_US", "1000", 1);	/* the default, whatever the environment says */
	/* by the engine, acknowledged: a message handed whole to the local peer
	 * would complete at a before b's thread took it (fi_braid(7), LOCAL PEERS) */
	setenv("FI_BRAID_SHM_EAGER", "0", 1);
	cr_assert_eq(rdm_getinfo(PT_VERSION, FI_PROGRESS_AUTO, 0, &info), 0);
	cr_assert_eq(info->domain_attr->data_progress, FI_PROGRESS_AUTO);
	rdm_pair_open(&p, info, FI_WAIT_NONE, FI_WAIT_NONE, false);
	cr_assert_eq(fi_recv(p.b.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, buf), 0);
	cr_assert_eq(fi_send(p.a.ep, "auto", 5, NULL, p.a.peer, NULL), 0);
	cr_assert_eq(a_send_done(&p, &err), 1, "the send completed without the receiver's calls");
	/* the first look at b finds the receive complete */
	cr_assert_eq(fi_cq_read(p.b.rx_cq, &e, 1), 1);
	cr_assert_eq(e.op_context, buf);
	cr_assert_str_eq(buf, "auto");
	pt_pair_close(&p);
}

/*
 * FI_BRAID_PROGRESS_US=0: no thread. FI_PROGRESS_AUTO is not offered (no
 * entry; an entry asking for it does not open), and progress is the
 * application's alone: a receiver that never calls in is silent to its
 * peer, whose send fails FI_EHOSTUNREACH at the peer timeout. (A message
 * that goes by the engine: one handed whole to a local peer is in the
 * peer's memory at once, and completes: the next test.)
 */
Test(progress, without_the_thread_auto_is_refused_and_a_receiver_left_alone_is_unreachable,
     .timeout = 60)
{
	struct fi_cq_err_entry err;
	struct fi_info *info;
	struct fid_domain *dom;
	struct pt_pair p;
	char buf[32];

	setenv("FI_BRAID_PROGRESS_US", "0", 1);
	setenv("FI_BRAID_PEER_TIMEOUT_MS", "500", 1);
	setenv("FI_BRAID_SHM_EAGER", "0", 1);
	cr_assert_eq(rdm_getinfo(PT_VERSION, FI_PROGRESS_AUTO, 0, &info), -FI_ENODATA);
	cr_assert_eq(rdm_getinfo(PT_VERSION, FI_PROGRESS_MANUAL, 0, &info), 0);
	cr_assert_eq(info->domain_attr->data_progress, FI_PROGRESS_MANUAL);
	rdm_pair_open(&p, info, FI_WAIT_NONE, FI_WAIT_NONE, false);
	info->domain_attr->data_progress = FI_PROGRESS_AUTO;
	cr_assert_eq(fi_domain(p.d.fabric, info, &dom, NULL), -FI_ENODATA);
	info->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	cr_assert_eq(fi_recv(p.b.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, buf), 0);
	cr_assert_eq(fi_send(p.a.ep, "manual", 7, NULL, p.a.peer, buf), 0);
	cr_assert_eq(a_send_done(&p, &err), -FI_EAVAIL, "the send fails");
	cr_assert_eq(err.err, FI_EHOSTUNREACH, "err %d", err.err);
	cr_assert_eq(err.op_context, buf);
	pt_pair_close(&p);
}

/*
 * The same without the thread, the message small enough to be handed whole
 * to its local peer (fi_braid(7), LOCAL PEERS): the send completes at once
 * (transmit complete: the message is in the receiver's ring), with no
 * call of the receiver's, and the receiver's first read, much later than
 * the peer timeout, delivers it.
 */
Test(progress, without_the_thread_a_message_handed_whole_waits_in_the_ring, .timeout = 60)
{
	struct fi_cq_err_entry err;
	struct fi_cq_data_entry e;
	struct fi_info *info;
	struct pt_pair p;
	char buf[32];
	long until;
	ssize_t ret;

	setenv("FI_BRAID_PROGRESS_US", "0", 1);
	setenv("FI_BRAID_PEER_TIMEOUT_MS", "500", 1);
	cr_assert_eq(rdm_getinfo(PT_VERSION, FI_PROGRESS_MANUAL, 0, &info), 0);
	rdm_pair_open(&p, info, FI_WAIT_NONE, FI_WAIT_NONE, false);
	cr_assert_eq(fi_recv(p.b.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, buf), 0);
	cr_assert_eq(fi_send(p.a.ep, "whole", 6, NULL, p.a.peer, buf), 0);
	cr_assert_eq(a_send_done(&p, &err), 1, "the send completed without the receiver's calls");
	/* a's reads past the peer timeout: nothing of it is waiting on b */
	until = pt_now_ms() + 1000;
	while (pt_now_ms() < until)
		cr_assert_eq(fi_cq_read(p.a.tx_cq, &e, 1), -FI_EAGAIN);
	ret = fi_cq_read(p.b.rx_cq, &e, 1);
	cr_assert_eq(ret, 1, "b's first read: %zd", ret);
	cr_assert_eq(e.op_context, buf);
	cr_assert_str_eq(buf, "whole");
	pt_pair_close(&p);
}

/* fi_domain(3): control progress is manual (the EQ's reads drive the handshake), for 1.x APIs. */
Test(progress, auto_control_progress_is_refused)
{
	struct fi_info *info;
	struct fid_fabric *fab;
	struct fid_domain *dom;

	cr_assert_eq(rdm_getinfo(FI_VERSION(1, 17), 0, FI_PROGRESS_AUTO, &info), -FI_ENODATA);
	cr_assert_eq(rdm_getinfo(FI_VERSION(1, 17), 0, FI_PROGRESS_MANUAL, &info), 0);
	cr_assert_eq(info->domain_attr->control_progress, FI_PROGRESS_MANUAL);
	cr_assert_eq(fi_fabric(info->fabric_attr, &fab, NULL), 0);
	info->domain_attr->control_progress = FI_PROGRESS_AUTO;
	cr_assert_eq(fi_domain(fab, info, &dom, NULL), -FI_ENODATA);
	cr_assert_eq(fi_close(&fab->fid), 0);
	fi_freeinfo(info);
}

struct blocked {
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	struct fi_cq_data_entry e;
	ssize_t ret;
};

static void *sread_main(void *arg)
{
	struct blocked *b = arg;

	b->ret = fi_cq_sread(b->cq, &b->e, 1, NULL, -1);
	return NULL;
}

static void *cntr_wait_main(void *arg)
{
	struct blocked *b = arg;

	b->ret = fi_cntr_wait(b->cntr, 1, -1);
	return NULL;
}

/* the main thread's part: a sends (once), and a alone is driven */
static void kick_a_send(void *arg)
{
	struct pt_pair *p = arg;
	static bool sent;

	if (!sent) {
		sent = true;
		cr_assert_eq(fi_send(p->a.ep, "woken", 6, NULL, p->a.peer, NULL), 0);
	}
	(void)fi_cq_read(p->a.tx_cq, NULL, 0);
	(void)fi_cq_read(p->a.rx_cq, NULL, 0);
}

/*
 * No progress thread: a thread blocked in braid on b (@main, on @b's CQ or
 * counter of @wait, @cntrs) is b's only driver; a's message (its first: the
 * pair proves itself first, protocol.md §4.9) wakes it. Returns the pair.
 */
static void woken_by_a(struct pt_pair *p, void *(*main)(void *), struct blocked *b,
		       enum fi_wait_obj wait, bool cntrs, char *buf, size_t len)
{
	struct fi_info *info;
	pthread_t t;

	setenv("FI_BRAID_PROGRESS_US", "0", 1);
	cr_assert_eq(rdm_getinfo(PT_VERSION, 0, 0, &info), 0);
	rdm_pair_open(p, info, FI_WAIT_NONE, wait, cntrs);
	cr_assert_eq(fi_recv(p->b.ep, buf, len, NULL, FI_ADDR_UNSPEC, buf), 0);
	b->cq = p->b.rx_cq;
	b->cntr = p->b.rx_cntr;
	cr_assert_eq(pthread_create(&t, NULL, main, b), 0);
	cr_assert(pt_join_within(t, kick_a_send, p), "the blocked call returned");
	cr_assert_str_eq(buf, "woken");
}

/* fi_cq_sread(-1) on b's receive CQ returns the completion. */
Test(progress, a_thread_in_cq_sread_is_woken_by_another_endpoints_message, .timeout = 60)
{
	struct blocked b = { .ret = 0 };
	struct pt_pair p;
	char buf[32] = "";

	woken_by_a(&p, sread_main, &b, FI_WAIT_FD, false, buf, sizeof(buf));
	cr_assert_eq(b.ret, 1, "fi_cq_sread = %zd", b.ret);
	cr_assert_eq(b.e.op_context, buf);
	pt_pair_close(&p);
}

/* fi_cntr_wait(1, -1) on b's receive counter returns 0 with the counter at 1. */
Test(progress, a_thread_in_cntr_wait_is_woken_by_another_endpoints_message, .timeout = 60)
{
	struct blocked b = { .ret = 1 };
	struct pt_pair p;
	char buf[32] = "";

	woken_by_a(&p, cntr_wait_main, &b, FI_WAIT_NONE, true, buf, sizeof(buf));
	cr_assert_eq(b.ret, 0, "fi_cntr_wait = %zd", b.ret);
	cr_assert_eq(fi_cntr_read(p.b.rx_cntr), 1);
	pt_pair_close(&p);
}

/* the main thread's part: b receives (driving b alone) */
static void kick_b_recv(void *arg)
{
	struct pt_pair *p = arg;

	(void)fi_cq_read(p->b.rx_cq, NULL, 0);
	(void)fi_cq_read(p->b.tx_cq, NULL, 0);
}

/*
 * No progress thread: a thread blocked in fi_cq_sread(-1) on the sender's
 * transmit CQ; the send completes when the receiver's ACK comes, which the
 * receiver sends when its own application (the main thread) reads. The
 * ACK's arrival wakes the blocked thread.
 */
Test(progress, a_thread_in_cq_sread_on_a_send_is_woken_by_the_receivers_ack, .timeout = 60)
{
	struct blocked b = { .ret = 0 };
	struct fi_info *info;
	struct pt_pair p;
	char buf[32] = "";
	pthread_t t;
	int ctx;

	setenv("FI_BRAID_PROGRESS_US", "0", 1);
	setenv("FI_BRAID_SHM_EAGER", "0", 1);	/* (handed whole, it would complete at once) */
	cr_assert_eq(rdm_getinfo(PT_VERSION, 0, 0, &info), 0);
	rdm_pair_open(&p, info, FI_WAIT_FD, FI_WAIT_NONE, false);
	cr_assert_eq(fi_recv(p.b.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, buf), 0);
	cr_assert_eq(fi_send(p.a.ep, "acked", 6, NULL, p.a.peer, &ctx), 0);
	b.cq = p.a.tx_cq;
	cr_assert_eq(pthread_create(&t, NULL, sread_main, &b), 0);
	cr_assert(pt_join_within(t, kick_b_recv, &p), "fi_cq_sread(-1) returned");
	cr_assert_eq(b.ret, 1, "fi_cq_sread = %zd", b.ret);
	cr_assert_eq(b.e.op_context, &ctx);
	cr_assert(b.e.flags & FI_SEND);
	pt_pair_close(&p);
}

/*
 * A forked child has its parent's domain but not the progress thread: it
 * closes its copies of the endpoints, domain and fabric without waiting for
 * a thread it does not have; the parent's domain goes on.
 */
Test(progress, a_forked_child_closes_the_domain_without_its_thread, .timeout = 60)
{
	struct fi_info *info;
	struct pt_pair p;
	long deadline;
	pid_t pid;
	int status = -1;

	setenv("FI_BRAID_PROGRESS_US", "1000", 1);	/* with the thread */
	cr_assert_eq(rdm_getinfo(PT_VERSION, 0, 0, &info), 0);
	rdm_pair_open(&p, info, FI_WAIT_NONE, FI_WAIT_NONE, false);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int ok = fi_close(&p.a.ep->fid) == 0 && fi_close(&p.b.ep->fid) == 0;

		ok = ok && fi_close(&p.a.tx_cq->fid) == 0 && fi_close(&p.a.rx_cq->fid) == 0 &&
		     fi_close(&p.b.tx_cq->fid) == 0 && fi_close(&p.b.rx_cq->fid) == 0 &&
		     fi_close(&p.a.av->fid) == 0 && fi_close(&p.b.av->fid) == 0 &&
		     fi_close(&p.d.domain->fid) == 0 && fi_close(&p.d.fabric->fid) == 0;
		_exit(ok ? 0 : 1);
	}
	deadline = pt_now_ms() + 20000;
	while (waitpid(pid, &status, WNOHANG) == 0 && pt_now_ms() < deadline)
		(void)fi_cq_read(p.a.tx_cq, NULL, 0);
	if (status == -1) {
		kill(pid, SIGKILL);
		(void)waitpid(pid, &status, 0);
		cr_assert_fail("the child did not finish closing");
	}
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's closes returned 0");
	pt_pair_close(&p);
}
