/* SPDX-License-Identifier: BSD-2-Clause */
/* test_cq.c: braid completion queues (fi_cq(3)): formats, empty reads, blocking reads, signals, errors, wait objects. */
#include "prov_test.h"

#include <poll.h>

static void open_format(enum fi_cq_format format)
{
	struct pt_dom d;
	struct fid_cq *cq;
	struct fi_cq_tagged_entry e;

	pt_dom_open(&d);
	cq = pt_cq_open(d.domain, format, FI_WAIT_NONE);
	cr_expect_eq(cq->fid.fclass, FI_CLASS_CQ);
	cr_expect_eq(fi_cq_read(cq, &e, 1), -FI_EAGAIN);
	cr_expect_eq(fi_close(&cq->fid), 0);
	pt_dom_close(&d);
}

Test(fi_cq_open, format_unspec)
{
	open_format(FI_CQ_FORMAT_UNSPEC);
}

Test(fi_cq_open, format_context)
{
	open_format(FI_CQ_FORMAT_CONTEXT);
}

Test(fi_cq_open, format_msg)
{
	open_format(FI_CQ_FORMAT_MSG);
}

Test(fi_cq_open, format_data)
{
	open_format(FI_CQ_FORMAT_DATA);
}

Test(fi_cq_open, format_tagged)
{
	open_format(FI_CQ_FORMAT_TAGGED);
}

Test(fi_cq_open, bad_format)
{
	struct pt_dom d;
	struct fi_cq_attr attr = { .format = (enum fi_cq_format)99 };
	struct fid_cq *cq = NULL;

	pt_dom_open(&d);
	cr_expect_lt(fi_cq_open(d.domain, &attr, &cq, NULL), 0);
	pt_dom_close(&d);
}

Test(fi_cq_read, empty)
{
	struct pt_dom d;
	struct fid_cq *cq;
	struct fi_cq_data_entry e;
	fi_addr_t src;

	pt_dom_open(&d);
	cq = pt_cq_open(d.domain, FI_CQ_FORMAT_DATA, FI_WAIT_NONE);
	cr_expect_eq(fi_cq_read(cq, &e, 1), -FI_EAGAIN);
	cr_expect_eq(fi_cq_readfrom(cq, &e, 1, &src), -FI_EAGAIN);
	/* count 0 only drives progress */
	cr_expect_eq(fi_cq_read(cq, NULL, 0), -FI_EAGAIN);
	cr_expect_eq(fi_close(&cq->fid), 0);
	pt_dom_close(&d);
}

Test(fi_cq_readerr, empty)
{
	struct pt_dom d;
	struct fid_cq *cq;
	struct fi_cq_err_entry err;

	pt_dom_open(&d);
	cq = pt_cq_open(d.domain, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE);
	memset(&err, 0, sizeof(err));
	cr_expect_eq(fi_cq_readerr(cq, &err, 0), -FI_EAGAIN);
	cr_expect_eq(fi_close(&cq->fid), 0);
	pt_dom_close(&d);
}

/* Send two messages b -> a and read both receive completions in one call, in @format. */
static void formats_roundtrip(enum fi_cq_format format)
{
	struct pt_pair p;
	char rbuf[2][64], sbuf[2][64];
	int rctx[2], sctx[2];
	union {
		struct fi_cq_entry ctx[2];
		struct fi_cq_msg_entry msg[2];
		struct fi_cq_data_entry data[2];
		struct fi_cq_tagged_entry tagged[2];
	} u;
	size_t got = 0, esize;
	long deadline;
	ssize_t ret;
	int i;

	switch (format) {
	case FI_CQ_FORMAT_CONTEXT: esize = sizeof(struct fi_cq_entry); break;
	case FI_CQ_FORMAT_MSG: esize = sizeof(struct fi_cq_msg_entry); break;
	case FI_CQ_FORMAT_DATA: esize = sizeof(struct fi_cq_data_entry); break;
	default: esize = sizeof(struct fi_cq_tagged_entry); break;
	}
	pt_pair_open_opts(&p, 0, format, FI_WAIT_NONE, false);
	for (i = 0; i < 2; i++)
		cr_assert_eq(fi_recv(p.a.ep, rbuf[i], sizeof(rbuf[i]), NULL, FI_ADDR_UNSPEC, &rctx[i]), 0);
	for (i = 0; i < 2; i++) {
		memset(sbuf[i], 'a' + i, sizeof(sbuf[i]));
		cr_assert_eq(fi_senddata(p.b.ep, sbuf[i], (size_t)(10 + i), NULL, 0x1000u + (unsigned)i,
					 p.b.peer, &sctx[i]), 0);
	}
	memset(&u, 0, sizeof(u));
	deadline = pt_now_ms() + PT_POLL_MS;
	do {
		ret = fi_cq_read(p.a.rx_cq, (uint8_t *)&u + got * esize, 2 - got);
		if (ret > 0)
			got += (size_t)ret;
	} while ((ret > 0 || ret == -FI_EAGAIN) && got < 2 && pt_now_ms() < deadline);
	cr_assert_eq(got, 2, "receive completions: %zu (last fi_cq_read %zd)", got, ret);

	for (i = 0; i < 2; i++) {
		/* DGRAM does not promise order: find which receive this is */
		void *ctx = format == FI_CQ_FORMAT_CONTEXT ? u.ctx[i].op_context :
			    format == FI_CQ_FORMAT_MSG ? u.msg[i].op_context :
			    format == FI_CQ_FORMAT_DATA ? u.data[i].op_context :
			    u.tagged[i].op_context;
		int k = ctx == &rctx[0] ? 0 : ctx == &rctx[1] ? 1 : -1;

		cr_assert_neq(k, -1, "entry %d: unknown op_context %p", i, ctx);
		if (format == FI_CQ_FORMAT_CONTEXT)
			continue;
		{
			uint64_t flags = format == FI_CQ_FORMAT_MSG ? u.msg[i].flags :
					 format == FI_CQ_FORMAT_DATA ? u.data[i].flags : u.tagged[i].flags;
			size_t len = format == FI_CQ_FORMAT_MSG ? u.msg[i].len :
				     format == FI_CQ_FORMAT_DATA ? u.data[i].len : u.tagged[i].len;

			cr_expect(flags & FI_RECV, "entry %d: FI_RECV not set", i);
			cr_expect(flags & FI_MSG, "entry %d: FI_MSG not set", i);
			cr_expect_eq(len, (size_t)(10 + k), "entry %d: len %zu", i, len);
			if (format == FI_CQ_FORMAT_MSG)
				continue;
			cr_expect(flags & FI_REMOTE_CQ_DATA, "entry %d: FI_REMOTE_CQ_DATA not set", i);
			cr_expect_eq(format == FI_CQ_FORMAT_DATA ? u.data[i].data : u.tagged[i].data,
				     0x1000u + (unsigned)k);
		}
	}
	cr_expect_eq(memcmp(rbuf[0], sbuf[0], 10), 0);
	cr_expect_eq(memcmp(rbuf[1], sbuf[1], 11), 0);
	pt_pair_close(&p);
}

Test(fi_cq_read, format_context)
{
	formats_roundtrip(FI_CQ_FORMAT_CONTEXT);
}

Test(fi_cq_read, format_msg)
{
	formats_roundtrip(FI_CQ_FORMAT_MSG);
}

Test(fi_cq_read, format_data)
{
	formats_roundtrip(FI_CQ_FORMAT_DATA);
}

Test(fi_cq_read, format_tagged)
{
	formats_roundtrip(FI_CQ_FORMAT_TAGGED);
}

Test(fi_cq_read, send_completion)
{
	struct pt_pair p;
	struct fi_cq_msg_entry e;
	char buf[32] = "hello";
	int ctx;

	pt_pair_open_opts(&p, 0, FI_CQ_FORMAT_MSG, FI_WAIT_NONE, false);
	cr_assert_eq(fi_send(p.a.ep, buf, sizeof(buf), NULL, p.a.peer, &ctx), 0);
	cr_assert_eq(pt_cq_poll(p.a.tx_cq, &e, NULL, NULL), 1);
	cr_expect_eq(e.op_context, &ctx);
	cr_expect(e.flags & FI_SEND, "FI_SEND not set");
	cr_expect(e.flags & FI_MSG, "FI_MSG not set");
	pt_cq_expect_empty(p.a.tx_cq);
	pt_pair_close(&p);
}

static void sread_timeout(enum fi_wait_obj wait_obj)
{
	struct pt_dom d;
	struct fid_cq *cq;
	struct fi_cq_entry e;

	pt_dom_open(&d);
	cq = pt_cq_open(d.domain, FI_CQ_FORMAT_CONTEXT, wait_obj);
	cr_expect_eq(fi_cq_sread(cq, &e, 1, NULL, 100), -FI_EAGAIN);
	cr_expect_eq(fi_close(&cq->fid), 0);
	pt_dom_close(&d);
}

Test(fi_cq_sread, timeout_wait_fd, .timeout = 20)
{
	sread_timeout(FI_WAIT_FD);
}

Test(fi_cq_sread, timeout_wait_unspec, .timeout = 20)
{
	sread_timeout(FI_WAIT_UNSPEC);
}

Test(fi_cq_sread, timeout_wait_yield, .timeout = 20)
{
	sread_timeout(FI_WAIT_YIELD);
}

/* fi_cq(3): "It is invalid for applications to call these functions if the CQ has been
 * configured with a wait object of FI_WAIT_NONE". */
Test(fi_cq_sread, wait_none, .timeout = 20)
{
	struct pt_dom d;
	struct fid_cq *cq;
	struct fi_cq_entry e;
	ssize_t ret;

	pt_dom_open(&d);
	cq = pt_cq_open(d.domain, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE);
	ret = fi_cq_sread(cq, &e, 1, NULL, 100);
	cr_expect(ret < 0 && ret != -FI_EAGAIN, "fi_cq_sread on FI_WAIT_NONE = %zd", ret);
	cr_expect_eq(fi_close(&cq->fid), 0);
	pt_dom_close(&d);
}

struct sread_arg {
	struct fid_cq *cq;
	int timeout;
	ssize_t ret;
	struct fi_cq_entry entry;
};

static void *sread_thread(void *p)
{
	struct sread_arg *a = p;

	a->ret = fi_cq_sread(a->cq, &a->entry, 1, NULL, a->timeout);
	return NULL;
}

static void kick_signal(void *cq)
{
	cr_expect_eq(fi_cq_signal(cq), 0);
}

/* fi_cq(3): "The fi_cq_signal call will unblock any thread waiting in fi_cq_sread". */
Test(fi_cq_signal, wakes_sread, .timeout = 30)
{
	struct pt_dom d;
	struct sread_arg a = { .timeout = -1 };
	pthread_t t;

	pt_dom_open(&d);
	a.cq = pt_cq_open(d.domain, FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD);
	cr_assert_eq(pthread_create(&t, NULL, sread_thread, &a), 0);
	cr_assert(pt_join_within(t, kick_signal, a.cq), "fi_cq_sread(-1) was not woken by fi_cq_signal");
	cr_expect_eq(a.ret, -FI_EAGAIN, "signaled fi_cq_sread = %zd", a.ret);
	cr_expect_eq(fi_close(&a.cq->fid), 0);
	pt_dom_close(&d);
}

Test(fi_cq_sread, returns_arrived_message, .timeout = 30)
{
	struct pt_pair p;
	struct fi_cq_data_entry e;
	char rbuf[16], sbuf[16] = "x";
	int ctx;

	pt_pair_open_opts(&p, 0, FI_CQ_FORMAT_DATA, FI_WAIT_FD, false);
	cr_assert_eq(fi_recv(p.a.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, &ctx), 0);
	cr_assert_eq(fi_send(p.b.ep, sbuf, sizeof(sbuf), NULL, p.b.peer, NULL), 0);
	cr_expect_eq(fi_cq_sread(p.a.rx_cq, &e, 1, NULL, 5000), 1);
	cr_expect_eq(e.op_context, &ctx);
	pt_pair_close(&p);
}

static void kick_send(void *arg)
{
	struct pt_ep *b = arg;
	static int sent;
	static char sbuf[8] = "wake";

	if (!sent++)
		cr_expect_eq(fi_send(b->ep, sbuf, sizeof(sbuf), NULL, b->peer, NULL), 0);
}

/* A thread blocked in fi_cq_sread with no timeout is woken by a message arriving. */
Test(fi_cq_sread, wakes_on_arrival, .timeout = 30)
{
	struct pt_pair p;
	struct sread_arg a = { .timeout = -1 };
	char rbuf[16];
	int ctx;
	pthread_t t;

	pt_pair_open_opts(&p, 0, FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD, false);
	cr_assert_eq(fi_recv(p.a.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, &ctx), 0);
	a.cq = p.a.rx_cq;
	cr_assert_eq(pthread_create(&t, NULL, sread_thread, &a), 0);
	cr_assert(pt_join_within(t, kick_send, &p.b), "fi_cq_sread(-1) not woken by an arrival");
	cr_expect_eq(a.ret, 1, "fi_cq_sread = %zd", a.ret);
	cr_expect_eq(a.entry.op_context, &ctx);
	cr_expect_str_eq(rbuf, "wake");
	pt_pair_close(&p);
}

Test(fi_cq_strerror, canceled_entry)
{
	struct pt_pair p;
	struct fi_cq_err_entry err;
	struct fi_cq_data_entry e;
	char rbuf[16], text[128];
	const char *s;
	int ctx;

	pt_pair_open(&p);
	cr_assert_eq(fi_recv(p.a.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, &ctx), 0);
	cr_assert_eq(fi_cancel(&p.a.ep->fid, &ctx), 0);
	cr_assert_eq(pt_cq_poll(p.a.rx_cq, &e, NULL, NULL), -FI_EAVAIL);
	memset(&err, 0, sizeof(err));
	cr_assert_eq(fi_cq_readerr(p.a.rx_cq, &err, 0), 1);
	s = fi_cq_strerror(p.a.rx_cq, err.prov_errno, err.err_data, text, sizeof(text));
	cr_assert_not_null(s);
	cr_expect_gt(strlen(s), 0, "empty error string");
	s = fi_cq_strerror(p.a.rx_cq, err.prov_errno, err.err_data, NULL, 0);
	cr_assert_not_null(s);
	cr_expect_gt(strlen(s), 0, "empty error string");
	pt_pair_close(&p);
}

Test(fi_control, cq_getwait_fd)
{
	struct pt_dom d;
	struct fid_cq *cq;
	int fd = -1;

	pt_dom_open(&d);
	cq = pt_cq_open(d.domain, FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD);
	cr_expect_eq(fi_control(&cq->fid, FI_GETWAIT, &fd), 0);
	cr_expect_geq(fd, 0);
	cr_expect_eq(fi_close(&cq->fid), 0);
	pt_dom_close(&d);
}

/* fi_poll(3) fi_trywait pattern: trywait succeeds, the fd becomes readable when a message
 * arrives, trywait then reports -FI_EAGAIN and the completion can be read. */
Test(fi_control, cq_wait_fd_signals_arrival, .timeout = 30)
{
	struct pt_pair p;
	struct fi_cq_data_entry e;
	struct pollfd pfd = { .events = POLLIN };
	struct fid *fids[1];
	char rbuf[16], sbuf[16] = "fd";
	int ctx;

	pt_pair_open_opts(&p, 0, FI_CQ_FORMAT_DATA, FI_WAIT_FD, false);
	cr_assert_eq(fi_control(&p.a.rx_cq->fid, FI_GETWAIT, &pfd.fd), 0);
	cr_assert_eq(fi_recv(p.a.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, &ctx), 0);
	fids[0] = &p.a.rx_cq->fid;
	cr_assert_eq(fi_trywait(p.d.fabric, fids, 1), FI_SUCCESS);
	cr_assert_eq(fi_send(p.b.ep, sbuf, sizeof(sbuf), NULL, p.b.peer, NULL), 0);
	cr_expect_eq(poll(&pfd, 1, 5000), 1, "wait fd not readable after an arrival");
	cr_expect_eq(fi_trywait(p.d.fabric, fids, 1), -FI_EAGAIN);
	cr_expect_eq(fi_cq_read(p.a.rx_cq, &e, 1), 1);
	cr_expect_eq(e.op_context, &ctx);
	pt_pair_close(&p);
}

/* fi_cq(3): "If resources are still associated with the CQ when attempting to close, the
 * call will return -FI_EBUSY." */
Test(fi_close, cq_bound_to_ep)
{
	struct pt_dom d;
	struct pt_ep e;
	struct fid_cq *tx, *rx;

	pt_dom_open(&d);
	pt_ep_create(&d, &e, NULL);
	pt_ep_bind_cqs(&d, &e, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0, 0);
	tx = e.tx_cq;
	rx = e.rx_cq;
	cr_expect_eq(fi_close(&tx->fid), -FI_EBUSY);
	cr_expect_eq(fi_close(&rx->fid), -FI_EBUSY);
	cr_assert_eq(fi_close(&e.ep->fid), 0);
	e.ep = NULL;
	cr_expect_eq(fi_close(&tx->fid), 0);
	cr_expect_eq(fi_close(&rx->fid), 0);
	e.tx_cq = e.rx_cq = NULL;
	pt_ep_close(&e);
	pt_dom_close(&d);
}

/* fi_domain(3) resource management: a DGRAM endpoint with FI_RM_ENABLED gets -FI_EAGAIN,
 * not an overrun, when its transmit CQ is full. */
Test(fi_send, tx_cq_full)
{
	struct pt_dom d;
	struct pt_ep a, b;
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_CONTEXT, .size = 4 };
	struct fi_cq_entry e;
	char buf[8] = "full";
	int i;

	pt_dom_open(&d);
	cr_assert_eq(d.info->domain_attr->resource_mgmt, FI_RM_ENABLED);
	pt_ep_create(&d, &a, NULL);
	pt_ep_create(&d, &b, NULL);
	cr_assert_eq(fi_cq_open(d.domain, &attr, &a.tx_cq, NULL), 0);
	a.rx_cq = pt_cq_open(d.domain, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE);
	cr_assert_eq(fi_ep_bind(a.ep, &a.tx_cq->fid, FI_TRANSMIT), 0);
	cr_assert_eq(fi_ep_bind(a.ep, &a.rx_cq->fid, FI_RECV), 0);
	pt_ep_bind_cqs(&d, &b, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0, 0);
	pt_ep_connect(&a, &b);
	pt_ep_enable(&a);
	pt_ep_enable(&b);
	for (i = 0; i < 4; i++)
		cr_assert_eq(fi_send(a.ep, buf, sizeof(buf), NULL, a.peer, NULL), 0, "send %d", i);
	cr_expect_eq(fi_send(a.ep, buf, sizeof(buf), NULL, a.peer, NULL), -FI_EAGAIN);
	cr_assert_eq(fi_cq_read(a.tx_cq, &e, 1), 1);
	cr_expect_eq(fi_send(a.ep, buf, sizeof(buf), NULL, a.peer, NULL), 0);
	pt_ep_close(&a);
	pt_ep_close(&b);
	pt_dom_close(&d);
}

/* fi_cq(3) fi_cq_sread: "If the topmost completion is for a failed transfer (an error
 * entry), returns -FI_EAVAIL." */
Test(fi_cq_sread, error_entry, .timeout = 20)
{
	struct pt_pair p;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	char rbuf[16];
	int ctx;

	pt_pair_open_opts(&p, 0, FI_CQ_FORMAT_DATA, FI_WAIT_FD, false);
	cr_assert_eq(fi_recv(p.a.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, &ctx), 0);
	cr_assert_eq(fi_cancel(&p.a.ep->fid, &ctx), 0);
	cr_expect_eq(fi_cq_sread(p.a.rx_cq, &e, 1, NULL, 5000), -FI_EAVAIL);
	memset(&err, 0, sizeof(err));
	cr_expect_eq(fi_cq_readerr(p.a.rx_cq, &err, 0), 1);
	cr_expect_eq(err.op_context, &ctx);
	cr_expect_eq(err.err, FI_ECANCELED);
	pt_pair_close(&p);
}
