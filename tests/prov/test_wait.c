/* SPDX-License-Identifier: BSD-2-Clause */
/* test_wait.c: wait objects of CQs, counters and EQs as braid implements them (FI_WAIT_FD, FI_WAIT_UNSPEC, FI_WAIT_YIELD, FI_WAIT_SET), fi_control FI_GETWAIT / FI_GETWAITOBJ, fi_trywait and wait sets (fi_wait). */
#include "prov_test.h"

#include <poll.h>

/* a CQ of @d with wait object @w (and wait set @set): fi_cq_open's return */
static int cq_try(struct pt_dom *d, enum fi_wait_obj w, struct fid_wait *set, struct fid_cq **cq)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_DATA, .wait_obj = w, .wait_set = set };

	*cq = NULL;
	return fi_cq_open(d->domain, &attr, cq, NULL);
}

static int cntr_try(struct pt_dom *d, enum fi_wait_obj w, struct fid_wait *set,
		    struct fid_cntr **cntr)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = w, .wait_set = set };

	*cntr = NULL;
	return fi_cntr_open(d->domain, &attr, cntr, NULL);
}

static int eq_try(struct pt_dom *d, enum fi_wait_obj w, struct fid_eq **eq)
{
	struct fi_eq_attr attr = { .wait_obj = w, .flags = FI_WRITE, .size = 8 };

	*eq = NULL;
	return fi_eq_open(d->fabric, &attr, eq, NULL);
}

static struct fid_wait *waitset_open(struct pt_dom *d)
{
	struct fi_wait_attr attr = { .wait_obj = FI_WAIT_FD };
	struct fid_wait *ws = NULL;

	cr_assert_eq(fi_wait_open(d->fabric, &attr, &ws), 0);
	return ws;
}

/* FI_GETWAITOBJ of @fid, asserted to succeed */
static enum fi_wait_obj waitobj_of(struct fid *fid)
{
	enum fi_wait_obj obj = (enum fi_wait_obj)-1;

	cr_assert_eq(fi_control(fid, FI_GETWAITOBJ, &obj), 0);
	return obj;
}

/*
 * What a CQ's and a counter's wait object is for each request: FI_WAIT_UNSPEC
 * becomes an fd (the UDP wire has one to sleep on); FI_GETWAIT gives an fd only
 * for an fd; FI_GETWAITOBJ says which.
 */
Test(fi_control, getwaitobj_and_getwait_follow_the_requested_wait_object)
{
	static const struct { enum fi_wait_obj req, obj; } cases[] = {
		{ FI_WAIT_NONE, FI_WAIT_NONE },
		{ FI_WAIT_UNSPEC, FI_WAIT_FD },
		{ FI_WAIT_FD, FI_WAIT_FD },
		{ FI_WAIT_YIELD, FI_WAIT_YIELD },
	};
	struct pt_dom d;
	size_t i;

	pt_dom_open(&d);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fid_cq *cq;
		struct fid_cntr *cntr;
		struct fid *fids[2];
		int k;

		cr_assert_eq(cq_try(&d, cases[i].req, NULL, &cq), 0, "CQ, wait_obj %d", cases[i].req);
		cr_assert_eq(cntr_try(&d, cases[i].req, NULL, &cntr), 0, "counter, wait_obj %d",
			     cases[i].req);
		fids[0] = &cq->fid;
		fids[1] = &cntr->fid;
		for (k = 0; k < 2; k++) {
			int fd = -7;
			int ret = fi_control(fids[k], FI_GETWAIT, &fd);

			cr_assert_eq(waitobj_of(fids[k]), cases[i].obj, "%s, wait_obj %d: object %d",
				     k ? "counter" : "CQ", cases[i].req, waitobj_of(fids[k]));
			if (cases[i].obj == FI_WAIT_FD) {
				struct pollfd pfd = { .fd = fd, .events = POLLIN };

				cr_assert_eq(ret, 0);
				cr_assert_geq(fd, 0);
				cr_assert_eq(poll(&pfd, 1, 0), 0, "an idle object's fd is not readable");
			} else {
				cr_assert_eq(ret, -FI_ENODATA, "%s, wait_obj %d: FI_GETWAIT = %d",
					     k ? "counter" : "CQ", cases[i].req, ret);
				cr_assert_eq(fd, -7, "nothing written");
			}
			/* no argument to write to; a command these objects do not have */
			cr_assert_eq(fi_control(fids[k], FI_GETWAIT, NULL), -FI_EINVAL);
			cr_assert_eq(fi_control(fids[k], FI_GETWAITOBJ, NULL), -FI_EINVAL);
			cr_assert_eq(fi_control(fids[k], FI_GETOPSFLAG, &fd), -FI_ENOSYS);
		}
		cr_assert_eq(fi_close(&cq->fid), 0);
		cr_assert_eq(fi_close(&cntr->fid), 0);
	}
	pt_dom_close(&d);
}

/* The wait objects braid does not offer for CQs and counters, and values that are none. */
Test(fi_cq_open, wait_objects_braid_does_not_offer_are_refused_with_their_codes)
{
	struct pt_dom d;
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	struct fid_eq *eq;

	pt_dom_open(&d);
	cr_assert_eq(cq_try(&d, FI_WAIT_MUTEX_COND, NULL, &cq), -FI_ENOSYS);
	cr_assert_eq(cntr_try(&d, FI_WAIT_MUTEX_COND, NULL, &cntr), -FI_ENOSYS);
	cr_assert_eq(cq_try(&d, (enum fi_wait_obj)99, NULL, &cq), -FI_EINVAL);
	cr_assert_eq(cntr_try(&d, (enum fi_wait_obj)99, NULL, &cntr), -FI_EINVAL);
	cr_assert_null(cq);
	cr_assert_null(cntr);
	/* FI_WAIT_SET needs a wait set: none, or another object passed as one */
	cr_assert_eq(cq_try(&d, FI_WAIT_SET, NULL, &cq), -FI_EINVAL);
	cr_assert_eq(cntr_try(&d, FI_WAIT_SET, NULL, &cntr), -FI_EINVAL);
	cr_assert_eq(eq_try(&d, FI_WAIT_FD, &eq), 0);
	cr_assert_eq(cq_try(&d, FI_WAIT_SET, (struct fid_wait *)eq, &cq), -FI_EINVAL);
	cr_assert_eq(cntr_try(&d, FI_WAIT_SET, (struct fid_wait *)eq, &cntr), -FI_EINVAL);
	cr_assert_eq(fi_close(&eq->fid), 0);
	pt_dom_close(&d);
}

/* A blocking read of @eq times out empty, and returns what was written. */
static void eq_sread_works(struct fid_eq *eq)
{
	struct fi_eq_entry ev = { .data = 5 };
	uint32_t event;

	cr_assert_eq(fi_eq_sread(eq, &event, &ev, sizeof(ev), 20, 0), -FI_EAGAIN);
	cr_assert_eq(fi_eq_write(eq, FI_NOTIFY, &ev, sizeof(ev), 0), (ssize_t)sizeof(ev));
	memset(&ev, 0, sizeof(ev));
	cr_assert_eq(fi_eq_sread(eq, &event, &ev, sizeof(ev), 5000, 0), (ssize_t)sizeof(ev));
	cr_assert_eq(event, FI_NOTIFY);
	cr_assert_eq(ev.data, 5);
}

/*
 * EQs: FI_WAIT_UNSPEC is an fd, FI_WAIT_MUTEX_COND gives its mutex and
 * condition, FI_WAIT_NONE and FI_WAIT_YIELD have nothing to give; wait sets
 * are not offered.
 */
Test(fi_eq_open, wait_objects_and_what_fi_control_gives_of_them, .timeout = 30)
{
	struct fi_mutex_cond mc = { 0 };
	struct pt_dom d;
	struct fid_eq *eq;
	int fd = -7;

	pt_dom_open(&d);
	cr_assert_eq(eq_try(&d, FI_WAIT_SET, &eq), -FI_ENOSYS);
	cr_assert_eq(eq_try(&d, (enum fi_wait_obj)99, &eq), -FI_EINVAL);

	cr_assert_eq(eq_try(&d, FI_WAIT_UNSPEC, &eq), 0);
	cr_assert_eq(waitobj_of(&eq->fid), FI_WAIT_FD);
	cr_assert_eq(fi_control(&eq->fid, FI_GETWAIT, &fd), 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fi_control(&eq->fid, FI_GETWAIT, NULL), -FI_EINVAL);
	cr_assert_eq(fi_control(&eq->fid, FI_GETWAITOBJ, NULL), -FI_EINVAL);
	cr_assert_eq(fi_control(&eq->fid, FI_GETOPSFLAG, &fd), -FI_ENOSYS);
	cr_assert_eq(fi_close(&eq->fid), 0);

	fd = -7;
	cr_assert_eq(eq_try(&d, FI_WAIT_NONE, &eq), 0);
	cr_assert_eq(waitobj_of(&eq->fid), FI_WAIT_NONE);
	cr_assert_eq(fi_control(&eq->fid, FI_GETWAIT, &fd), -FI_ENODATA);
	cr_assert_eq(fd, -7);
	cr_assert_eq(fi_close(&eq->fid), 0);

	cr_assert_eq(eq_try(&d, FI_WAIT_MUTEX_COND, &eq), 0);
	cr_assert_eq(waitobj_of(&eq->fid), FI_WAIT_MUTEX_COND);
	cr_assert_eq(fi_control(&eq->fid, FI_GETWAIT, &mc), 0);
	cr_assert_not_null(mc.mutex);
	cr_assert_not_null(mc.cond);
	eq_sread_works(eq);
	cr_assert_eq(fi_close(&eq->fid), 0);

	/* fi_eq(3)'s FI_WAIT_YIELD: no object to give, blocking reads work */
	fd = -7;
	cr_assert_eq(eq_try(&d, FI_WAIT_YIELD, &eq), 0);
	cr_assert_eq(waitobj_of(&eq->fid), FI_WAIT_YIELD);
	cr_assert_eq(fi_control(&eq->fid, FI_GETWAIT, &fd), -FI_ENODATA);
	cr_assert_eq(fd, -7);
	eq_sread_works(eq);
	cr_assert_eq(fi_close(&eq->fid), 0);
	pt_dom_close(&d);
}

/* fi_trywait(3): its arguments, and the objects that cannot be waited on natively. */
Test(fi_trywait, bad_arguments_and_objects_without_a_wait_object)
{
	struct pt_dom d;
	struct fid_cq *cq, *cq_none;
	struct fid_cntr *cntr_none;
	struct fid_eq *eq_none;
	struct fid *fids[2];

	pt_dom_open(&d);
	cr_assert_eq(cq_try(&d, FI_WAIT_FD, NULL, &cq), 0);
	cr_assert_eq(cq_try(&d, FI_WAIT_NONE, NULL, &cq_none), 0);
	cr_assert_eq(cntr_try(&d, FI_WAIT_NONE, NULL, &cntr_none), 0);
	cr_assert_eq(eq_try(&d, FI_WAIT_NONE, &eq_none), 0);
	fids[0] = &cq->fid;
	cr_assert_eq(fi_trywait(d.fabric, NULL, 1), -FI_EINVAL);
	cr_assert_eq(fi_trywait(d.fabric, fids, 0), 0, "nothing to check");
	fids[1] = NULL;
	cr_assert_eq(fi_trywait(d.fabric, fids, 2), -FI_EINVAL, "a NULL entry");
	fids[1] = &d.domain->fid;
	cr_assert_eq(fi_trywait(d.fabric, fids, 2), -FI_EINVAL, "a domain has no wait object");
	fids[1] = &cntr_none->fid;
	cr_assert_eq(fi_trywait(d.fabric, fids, 2), -FI_EINVAL, "a counter without one");
	fids[1] = &eq_none->fid;
	cr_assert_eq(fi_trywait(d.fabric, fids, 2), -FI_EINVAL, "an EQ without one");
	fids[1] = &cq_none->fid;
	cr_assert_eq(fi_trywait(d.fabric, fids, 2), -FI_EINVAL, "a CQ without one");
	cr_assert_eq(fi_trywait(d.fabric, fids, 1), 0, "the CQ with its fd alone may be waited on");
	cr_assert_eq(fi_close(&cq->fid), 0);
	cr_assert_eq(fi_close(&cq_none->fid), 0);
	cr_assert_eq(fi_close(&cntr_none->fid), 0);
	cr_assert_eq(fi_close(&eq_none->fid), 0);
	pt_dom_close(&d);
}

/* A CQ holding an error entry (a canceled receive) has something to read: fi_trywait says so. */
Test(fi_trywait, a_cq_with_an_error_entry_is_not_waited_on)
{
	struct pt_dom d;
	struct pt_ep e;
	struct fi_cq_err_entry err = { 0 };
	struct fid *fids[1];
	char buf[16];

	pt_dom_open(&d);
	pt_ep_create(&d, &e, NULL);
	pt_ep_bind_cqs(&d, &e, FI_CQ_FORMAT_DATA, FI_WAIT_FD, 0, 0);
	pt_ep_enable(&e);
	fids[0] = &e.rx_cq->fid;
	cr_assert_eq(fi_trywait(d.fabric, fids, 1), 0);
	cr_assert_eq(fi_recv(e.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, buf), 0);
	cr_assert_eq(fi_cancel(&e.ep->fid, buf), 0);
	cr_assert_eq(fi_trywait(d.fabric, fids, 1), -FI_EAGAIN);
	cr_assert_eq(fi_cq_readerr(e.rx_cq, &err, 0), 1);
	cr_assert_eq(err.err, FI_ECANCELED);
	cr_assert_eq(fi_trywait(d.fabric, fids, 1), 0, "read: nothing left");
	pt_ep_close(&e);
	pt_dom_close(&d);
}

/*
 * fi_cq_signal makes a CQ's fd readable for an application that waits on
 * it natively, and a blocking read that comes after the signal returns at
 * once, empty (-FI_EAGAIN), not after its timeout.
 */
Test(fi_cq_signal, makes_the_fd_readable_and_ends_the_next_blocking_read, .timeout = 30)
{
	struct pollfd pfd = { .events = POLLIN };
	struct fi_cq_data_entry e;
	struct pt_dom d;
	struct fid_cq *cq;

	pt_dom_open(&d);
	cr_assert_eq(cq_try(&d, FI_WAIT_FD, NULL, &cq), 0);
	cr_assert_eq(fi_control(&cq->fid, FI_GETWAIT, &pfd.fd), 0);
	cr_assert_eq(poll(&pfd, 1, 0), 0);
	cr_assert_eq(fi_cq_signal(cq), 0);
	cr_assert_eq(poll(&pfd, 1, 5000), 1, "signaled: the fd is readable");
	/* a wait of a minute would make the test time out: the signal ends it */
	cr_assert_eq(fi_cq_sread(cq, &e, 1, NULL, 60000), -FI_EAGAIN);
	/* a NULL buffer for entries is refused */
	cr_assert_eq(fi_cq_sread(cq, NULL, 1, NULL, 0), -FI_EINVAL);
	cr_assert_eq(fi_close(&cq->fid), 0);
	pt_dom_close(&d);
}

/* ---- wait sets ---- */

Test(fi_wait_open, bad_arguments_and_wait_objects_it_does_not_offer)
{
	struct fi_wait_attr attr = { .wait_obj = FI_WAIT_FD };
	struct fid_wait *ws = NULL;
	struct pt_dom d;
	int fd = -1;

	pt_dom_open(&d);
	cr_assert_eq(fi_wait_open(d.fabric, NULL, &ws), -FI_EINVAL);
	attr.wait_obj = FI_WAIT_YIELD;
	cr_assert_eq(fi_wait_open(d.fabric, &attr, &ws), -FI_ENOSYS);
	attr.wait_obj = FI_WAIT_MUTEX_COND;
	cr_assert_eq(fi_wait_open(d.fabric, &attr, &ws), -FI_ENOSYS);
	cr_assert_null(ws);
	attr.wait_obj = FI_WAIT_FD;
	cr_assert_eq(fi_wait_open(d.fabric, &attr, &ws), 0);
	cr_assert_eq(ws->fid.fclass, FI_CLASS_WAIT);
	cr_assert_eq(waitobj_of(&ws->fid), FI_WAIT_FD);
	cr_assert_eq(fi_control(&ws->fid, FI_GETWAIT, &fd), 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fi_control(&ws->fid, FI_GETWAIT, NULL), -FI_EINVAL);
	cr_assert_eq(fi_control(&ws->fid, FI_GETOPSFLAG, &fd), -FI_ENOSYS);
	/* a fabric with a wait set open stays open */
	cr_assert_eq(fi_close(&d.fabric->fid), -FI_EBUSY);
	cr_assert_eq(fi_close(&ws->fid), 0);
	pt_dom_close(&d);
}

struct wait_arg {
	struct fid_wait *ws;
	int timeout;
	int ret;
};

static void *wait_thread(void *p)
{
	struct wait_arg *a = p;

	a->ret = fi_wait(a->ws, a->timeout);
	return NULL;
}

static void kick_cntr_add(void *cntr)
{
	cr_assert_eq(fi_cntr_add(cntr, 1), 0);
}

/*
 * A thread blocked in fi_wait with no timeout returns when a member counter
 * changes (another thread adds to it); once the change was reported, the set
 * has nothing until the counter changes again, and a member's error count
 * changing is something too. Members of a set are FI_WAIT_FD objects of
 * their own and can be closed once out of use; the set closes after them.
 */
Test(fi_wait, returns_when_a_member_counter_changes, .timeout = 60)
{
	struct wait_arg a = { .timeout = -1, .ret = 1 };
	struct fid_cntr *cntr;
	struct fid_cq *cq;
	struct pt_dom d;
	pthread_t t;

	pt_dom_open(&d);
	a.ws = waitset_open(&d);
	cr_assert_eq(cntr_try(&d, FI_WAIT_SET, a.ws, &cntr), 0);
	cr_assert_eq(cq_try(&d, FI_WAIT_SET, a.ws, &cq), 0);
	cr_assert_eq(waitobj_of(&cntr->fid), FI_WAIT_FD, "a member is an fd object of its own");
	cr_assert_eq(fi_wait(a.ws, 0), -FI_ETIMEDOUT, "nothing yet");
	cr_assert_eq(pthread_create(&t, NULL, wait_thread, &a), 0);
	cr_assert(pt_join_within(t, kick_cntr_add, cntr), "fi_wait(-1) returned for a counter add");
	cr_assert_eq(a.ret, 0, "fi_wait = %d", a.ret);
	cr_assert_geq(fi_cntr_read(cntr), 1);
	/* reported: nothing new until it changes again (the set's own wait times out) */
	cr_assert_eq(fi_wait(a.ws, 1), -FI_ETIMEDOUT);
	cr_assert_eq(fi_cntr_adderr(cntr, 1), 0);
	cr_assert_eq(fi_wait(a.ws, 5000), 0, "an error count that changed is something too");
	cr_assert_eq(fi_wait(a.ws, 1), -FI_ETIMEDOUT);
	/* a member CQ blocks on its own as well (its object is the set's member) */
	{
		struct fi_cq_data_entry e;

		cr_assert_eq(fi_cq_sread(cq, &e, 1, NULL, 1), -FI_EAGAIN);
	}
	cr_assert_eq(fi_close(&a.ws->fid), -FI_EBUSY, "members first");
	cr_assert_eq(fi_close(&cntr->fid), 0);
	cr_assert_eq(fi_close(&a.ws->fid), -FI_EBUSY, "one member left");
	cr_assert_eq(fi_close(&cq->fid), 0);
	cr_assert_eq(fi_close(&a.ws->fid), 0);
	pt_dom_close(&d);
}

static void kick_cq_signal(void *cq)
{
	cr_assert_eq(fi_cq_signal(cq), 0);
}

/*
 * fi_cq_signal on a member signals a thread blocked in fi_wait: the wait goes on
 * (a signal is no completion) until its timeout, and sees the CQ's completion
 * when one comes. The set's fd is readable while a member has something.
 */
Test(fi_wait, a_member_cq_signal_is_no_completion_and_the_set_fd_shows_arrivals, .timeout = 60)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_SET };
	struct pollfd pfd = { .events = POLLIN };
	struct fi_cq_data_entry e;
	struct pt_pair p;
	char buf[32];

	memset(&p, 0, sizeof(p));
	pt_dom_open(&p.d);
	ca.wait_set = waitset_open(&p.d);
	cr_assert_eq(fi_control(&ca.wait_set->fid, FI_GETWAIT, &pfd.fd), 0);
	pt_ep_create(&p.d, &p.a, NULL);
	pt_ep_create(&p.d, &p.b, NULL);
	p.a.tx_cq = pt_cq_open(p.d.domain, FI_CQ_FORMAT_DATA, FI_WAIT_NONE);
	p.b.tx_cq = pt_cq_open(p.d.domain, FI_CQ_FORMAT_DATA, FI_WAIT_NONE);
	p.a.rx_cq = pt_cq_open(p.d.domain, FI_CQ_FORMAT_DATA, FI_WAIT_NONE);
	cr_assert_eq(fi_cq_open(p.d.domain, &ca, &p.b.rx_cq, NULL), 0);
	cr_assert_eq(fi_ep_bind(p.a.ep, &p.a.tx_cq->fid, FI_TRANSMIT), 0);
	cr_assert_eq(fi_ep_bind(p.a.ep, &p.a.rx_cq->fid, FI_RECV), 0);
	cr_assert_eq(fi_ep_bind(p.b.ep, &p.b.tx_cq->fid, FI_TRANSMIT), 0);
	cr_assert_eq(fi_ep_bind(p.b.ep, &p.b.rx_cq->fid, FI_RECV), 0);
	pt_ep_connect(&p.a, &p.b);
	pt_ep_enable(&p.a);
	pt_ep_enable(&p.b);
	{
		struct wait_arg a = { .ws = ca.wait_set, .timeout = 300, .ret = 1 };
		pthread_t t;

		cr_assert_eq(pthread_create(&t, NULL, wait_thread, &a), 0);
		cr_assert(pt_join_within(t, kick_cq_signal, p.b.rx_cq), "fi_wait(300) returned");
		cr_assert_eq(a.ret, -FI_ETIMEDOUT, "a signal is not a completion: %d", a.ret);
	}
	/* the signals above were for a waiter: the fd may still show them; read them away */
	cr_assert_eq(fi_wait(ca.wait_set, 1), -FI_ETIMEDOUT);
	cr_assert_eq(fi_recv(p.b.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, buf), 0);
	cr_assert_eq(pt_send(&p.a, "set", 4, NULL), 0);
	cr_assert_eq(poll(&pfd, 1, 5000), 1, "the set's fd is readable once the datagram came");
	cr_assert_eq(fi_wait(ca.wait_set, 5000), 0);
	cr_assert_eq(fi_cq_read(p.b.rx_cq, &e, 1), 1);
	cr_assert_eq(e.op_context, buf);
	cr_assert_str_eq(buf, "set");
	pt_ep_close(&p.a);
	pt_ep_close(&p.b);
	cr_assert_eq(fi_close(&ca.wait_set->fid), 0);
	pt_dom_close(&p.d);
}

/*
 * fi_poll(3): "The following types of fabric descriptors may be passed into
 * fi_trywait: event queues, completion queues, counters, and wait sets", and
 * for objects in a set "only the wait set itself needs to be passed". A set
 * whose member CQ holds a completion is not waited on; once read, it is.
 */
Test(fi_trywait, takes_a_wait_set, .timeout = 30)
{
	struct fid_cntr *cntr;
	struct fid_wait *ws;
	struct fid *fids[1];
	struct pt_dom d;

	pt_dom_open(&d);
	ws = waitset_open(&d);
	cr_assert_eq(cntr_try(&d, FI_WAIT_SET, ws, &cntr), 0);
	fids[0] = &ws->fid;
	cr_assert_eq(fi_trywait(d.fabric, fids, 1), 0, "an idle set may be waited on");
	cr_assert_eq(fi_cntr_add(cntr, 1), 0);
	cr_assert_eq(fi_trywait(d.fabric, fids, 1), -FI_EAGAIN, "a member changed");
	cr_assert_eq(fi_wait(ws, 0), 0, "fi_wait reports the change");
	cr_assert_eq(fi_trywait(d.fabric, fids, 1), 0, "reported: nothing left");
	cr_assert_eq(fi_close(&cntr->fid), 0);
	cr_assert_eq(fi_close(&ws->fid), 0);
	pt_dom_close(&d);
}

/* ---- native waits while something else drives the endpoint ---- */

/*
 * @p: a sends to b; b's receive CQ has an fd, and b a receive counter with
 * none; @info (NULL: the DGRAM entry) is the domain's entry, taken over.
 * A receive is posted on b, fi_trywait on b's CQ said it may be waited
 * on, and a has sent "native": *@fd is the CQ's fd.
 */
static void native_pair_send(struct pt_pair *p, struct fi_info *info, char *buf, size_t len,
			     int *fd)
{
	struct fid *fids[1];

	memset(p, 0, sizeof(*p));
	if (info) {
		p->d.info = info;
		cr_assert_eq(fi_fabric(info->fabric_attr, &p->d.fabric, NULL), 0);
		cr_assert_eq(fi_domain(p->d.fabric, info, &p->d.domain, NULL), 0);
	} else {
		pt_dom_open(&p->d);
	}
	pt_ep_create(&p->d, &p->a, NULL);
	pt_ep_create(&p->d, &p->b, NULL);
	pt_ep_bind_cqs(&p->d, &p->a, FI_CQ_FORMAT_DATA, FI_WAIT_NONE, 0, 0);
	pt_ep_bind_cqs(&p->d, &p->b, FI_CQ_FORMAT_DATA, FI_WAIT_FD, 0, 0);
	p->b.rx_cntr = pt_cntr_open(p->d.domain, FI_WAIT_NONE);
	cr_assert_eq(fi_ep_bind(p->b.ep, &p->b.rx_cntr->fid, FI_RECV), 0);
	pt_ep_connect(&p->a, &p->b);
	pt_ep_enable(&p->a);
	pt_ep_enable(&p->b);
	cr_assert_eq(fi_control(&p->b.rx_cq->fid, FI_GETWAIT, fd), 0);
	cr_assert_eq(fi_recv(p->b.ep, buf, len, NULL, FI_ADDR_UNSPEC, buf), 0);
	fids[0] = &p->b.rx_cq->fid;
	cr_assert_eq(fi_trywait(p->d.fabric, fids, 1), 0);
	cr_assert_eq(pt_send(&p->a, "native", 7, NULL), 0);
}

/*
 * The receive completed behind the CQ's back: its fd must be readable, the
 * completion there. @quiet: nothing else can come (no resent copies, DGRAM).
 */
static void native_expect(struct pt_pair *p, int fd, const char *buf, bool quiet)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct fi_cq_data_entry e;
	struct fid *fids[1] = { &p->b.rx_cq->fid };

	cr_assert_eq(poll(&pfd, 1, 10000), 1, "the receive CQ's fd is readable");
	cr_assert_eq(fi_cq_read(p->b.rx_cq, &e, 1), 1);
	cr_assert_eq(e.op_context, buf);
	cr_assert_str_eq(buf, "native");
	/* read: the next fi_trywait may block again, and the fd is quiet */
	cr_assert_eq(fi_trywait(p->d.fabric, fids, 1), 0);
	if (quiet)
		cr_assert_eq(poll(&pfd, 1, 0), 0, "nothing left to wake for");
}

/*
 * fi_poll(3)'s pattern (fi_trywait, then poll(2) on the CQ's fd, then read)
 * while the endpoint is driven through another of its objects (here the
 * receive counter: another thread of the application could be reading it):
 * the datagram is taken off the socket and the receive completes into the
 * CQ without a look at the CQ. The CQ's fd must become readable all the
 * same, or the application sleeps with a completion waiting.
 */
Test(fi_trywait, the_fd_shows_a_completion_made_while_another_object_drove_the_endpoint,
     .timeout = 60)
{
	struct pt_pair p;
	long deadline;
	char buf[32];
	int fd;

	native_pair_send(&p, NULL, buf, sizeof(buf), &fd);
	deadline = pt_now_ms() + 10000;
	while (fi_cntr_read(p.b.rx_cntr) < 1 && pt_now_ms() < deadline)
		;
	cr_assert_eq(fi_cntr_read(p.b.rx_cntr), 1, "the receive completed");
	native_expect(&p, fd, buf, true);
	pt_pair_close(&p);
}

static struct fi_info *rdm_info(void)
{
	struct fi_info *hints = pt_hints(FI_EP_RDM), *list = NULL;

	hints->caps = FI_MSG;
	cr_assert_eq(fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &list), 0);
	fi_freeinfo(hints);
	return pt_take_plain_braid(list);
}

/*
 * The same while braid's progress thread drives the receiver (RDM): the
 * application left it alone after fi_trywait; the thread took the message
 * off the socket and completed the receive. The sender's send completes
 * only on the receiver's ACK, which only the progress thread can have sent
 * (the test drives the sender alone): once it completes, the thread has
 * taken the message. (Whether the fd would have been readable anyway, for
 * a resent copy of the message not read yet, is chance.)
 */
Test(fi_trywait, the_fd_shows_a_completion_the_progress_thread_made, .timeout = 60)
{
	struct fi_cq_data_entry e;
	struct pt_pair p;
	long deadline;
	char buf[32];
	ssize_t ret;
	int fd;

	setenv("FI_BRAID_PROGRESS_US", "1000", 1);	/* the default, whatever the environment says */
	native_pair_send(&p, rdm_info(), buf, sizeof(buf), &fd);
	deadline = pt_now_ms() + 10000;
	do {
		ret = fi_cq_read(p.a.tx_cq, &e, 1);
	} while (ret == -FI_EAGAIN && pt_now_ms() < deadline);
	cr_assert_eq(ret, 1, "the send completed (the receiver's progress thread acknowledged it)");
	native_expect(&p, fd, buf, false);
	pt_pair_close(&p);
}
