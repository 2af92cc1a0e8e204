/* SPDX-License-Identifier: BSD-2-Clause */
/* test_ep.c: braid endpoints (fi_endpoint(3), fi_cm(3)): bind, enable, names, options, unsupported ops. */
#include "prov_test.h"

#include <dirent.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

static void ep_new(struct pt_dom *d, struct pt_ep *e)
{
	pt_dom_open(d);
	pt_ep_create(d, e, NULL);
}

static void ep_done(struct pt_dom *d, struct pt_ep *e)
{
	pt_ep_close(e);
	pt_dom_close(d);
}

Test(fi_endpoint, open_close)
{
	struct pt_dom d;
	struct fid_ep *ep;
	int ctx;

	pt_dom_open(&d);
	cr_assert_eq(fi_endpoint(d.domain, d.info, &ep, &ctx), 0);
	cr_expect_eq(ep->fid.fclass, FI_CLASS_EP);
	cr_expect_eq(ep->fid.context, &ctx);
	cr_expect_eq(fi_close(&ep->fid), 0);
	pt_dom_close(&d);
}

Test(fi_ep_bind, cq_both_directions)
{
	struct pt_dom d;
	struct pt_ep e;

	ep_new(&d, &e);
	e.tx_cq = pt_cq_open(d.domain, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE);
	cr_expect_eq(fi_ep_bind(e.ep, &e.tx_cq->fid, FI_TRANSMIT | FI_RECV), 0);
	pt_ep_enable(&e);
	ep_done(&d, &e);
}

/* fi_endpoint(3): "An endpoint may only be bound to a single CQ or counter for a given type
 * of operation." */
Test(fi_ep_bind, double_cq_same_direction)
{
	struct pt_dom d;
	struct pt_ep e;
	struct fid_cq *cq2;

	ep_new(&d, &e);
	pt_ep_bind_cqs(&d, &e, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0, 0);
	cq2 = pt_cq_open(d.domain, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE);
	cr_expect_eq(fi_ep_bind(e.ep, &cq2->fid, FI_TRANSMIT), -FI_EINVAL);
	cr_expect_eq(fi_ep_bind(e.ep, &cq2->fid, FI_RECV), -FI_EINVAL);
	/* the rejected CQ is not held by the endpoint */
	cr_expect_eq(fi_close(&cq2->fid), 0);
	ep_done(&d, &e);
}

Test(fi_ep_bind, double_cntr_same_direction)
{
	struct pt_dom d;
	struct pt_ep e;
	struct fid_cntr *c2;

	ep_new(&d, &e);
	pt_ep_bind_cntrs(&d, &e);
	c2 = pt_cntr_open(d.domain, FI_WAIT_NONE);
	cr_expect_eq(fi_ep_bind(e.ep, &c2->fid, FI_SEND), -FI_EINVAL);
	cr_expect_eq(fi_ep_bind(e.ep, &c2->fid, FI_RECV), -FI_EINVAL);
	cr_expect_eq(fi_close(&c2->fid), 0);
	ep_done(&d, &e);
}

/* fi_endpoint(3): "Connectionless endpoints must be bound to a single address vector." */
Test(fi_ep_bind, second_av)
{
	struct pt_dom d;
	struct pt_ep e;
	struct fid_av *av2;

	ep_new(&d, &e);
	av2 = pt_av_open(d.domain, FI_AV_TABLE);
	cr_expect_eq(fi_ep_bind(e.ep, &av2->fid, 0), -FI_EINVAL);
	cr_expect_eq(fi_close(&av2->fid), 0);
	ep_done(&d, &e);
}

Test(fi_ep_bind, bad_flags)
{
	struct pt_dom d;
	struct pt_ep e;
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	struct fid_av *av2;

	pt_dom_open(&d);
	memset(&e, 0, sizeof(e));
	cr_assert_eq(fi_endpoint(d.domain, d.info, &e.ep, NULL), 0);
	cq = pt_cq_open(d.domain, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE);
	cntr = pt_cntr_open(d.domain, FI_WAIT_NONE);
	av2 = pt_av_open(d.domain, FI_AV_TABLE);
	cr_expect_eq(fi_ep_bind(e.ep, &cq->fid, FI_TRANSMIT | FI_MULTI_RECV), -FI_EBADFLAGS);
	cr_expect_eq(fi_ep_bind(e.ep, &cntr->fid, FI_SEND | FI_MULTI_RECV), -FI_EBADFLAGS);
	cr_expect_eq(fi_ep_bind(e.ep, &av2->fid, FI_MULTI_RECV), -FI_EBADFLAGS);
	/* the rejected binds hold nothing */
	cr_expect_eq(fi_close(&cq->fid), 0);
	cr_expect_eq(fi_close(&cntr->fid), 0);
	cr_expect_eq(fi_close(&av2->fid), 0);
	ep_done(&d, &e);
}

/* fi_endpoint(3): "FI_SELECTIVE_COMPLETION must be OR'ed with FI_TRANSMIT and/or FI_RECV flags." */
Test(fi_ep_bind, selective_without_direction)
{
	struct pt_dom d;
	struct pt_ep e;
	struct fid_cq *cq;

	ep_new(&d, &e);
	cq = pt_cq_open(d.domain, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE);
	cr_expect_lt(fi_ep_bind(e.ep, &cq->fid, FI_SELECTIVE_COMPLETION), 0);
	cr_expect_eq(fi_close(&cq->fid), 0);
	ep_done(&d, &e);
}

Test(fi_ep_bind, null_fid)
{
	struct pt_dom d;
	struct pt_ep e;

	ep_new(&d, &e);
	cr_expect_eq(fi_ep_bind(e.ep, NULL, FI_TRANSMIT), -FI_EINVAL);
	ep_done(&d, &e);
}

Test(fi_ep_bind, after_enable)
{
	struct pt_dom d;
	struct pt_ep e;
	struct fid_cntr *cntr;

	ep_new(&d, &e);
	pt_ep_bind_cqs(&d, &e, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0, 0);
	pt_ep_enable(&e);
	cntr = pt_cntr_open(d.domain, FI_WAIT_NONE);
	cr_expect_eq(fi_ep_bind(e.ep, &cntr->fid, FI_SEND), -FI_EOPBADSTATE);
	cr_expect_eq(fi_close(&cntr->fid), 0);
	ep_done(&d, &e);
}

Test(fi_enable, without_av)
{
	struct pt_dom d;
	struct pt_ep e;

	pt_dom_open(&d);
	memset(&e, 0, sizeof(e));
	cr_assert_eq(fi_endpoint(d.domain, d.info, &e.ep, NULL), 0);
	pt_ep_bind_cqs(&d, &e, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0, 0);
	cr_expect_eq(fi_enable(e.ep), -FI_ENOAV);
	ep_done(&d, &e);
}

Test(fi_enable, without_cq)
{
	struct pt_dom d;
	struct pt_ep e;

	ep_new(&d, &e);
	cr_expect_eq(fi_enable(e.ep), -FI_ENOCQ);
	ep_done(&d, &e);
}

/* Sends and receives both need a CQ (or counter): a transmit CQ alone is not enough. */
Test(fi_enable, without_rx_cq)
{
	struct pt_dom d;
	struct pt_ep e;

	ep_new(&d, &e);
	e.tx_cq = pt_cq_open(d.domain, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE);
	cr_assert_eq(fi_ep_bind(e.ep, &e.tx_cq->fid, FI_TRANSMIT), 0);
	cr_expect_eq(fi_enable(e.ep), -FI_ENOCQ);
	ep_done(&d, &e);
}

/* fi_msg(3): "An endpoint must be enabled before an application can post send or receive
 * operations to it." */
Test(fi_send, before_enable)
{
	struct pt_dom d;
	struct pt_ep e;
	char buf[16] = "early";
	fi_addr_t fa;

	ep_new(&d, &e);
	pt_ep_bind_cqs(&d, &e, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0, 0);
	cr_assert_eq(fi_av_insert(e.av, &e.name, 1, &fa, 0, NULL), 1);
	cr_expect_eq(fi_send(e.ep, buf, sizeof(buf), NULL, fa, NULL), -FI_EOPBADSTATE);
	cr_expect_eq(fi_inject(e.ep, buf, sizeof(buf), fa), -FI_EOPBADSTATE);
	cr_expect_eq(fi_recv(e.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, NULL), -FI_EOPBADSTATE);
	ep_done(&d, &e);
}

Test(fi_getname, address)
{
	struct pt_dom d;
	struct pt_ep e;

	ep_new(&d, &e);
	cr_expect_eq(e.name.sin_family, AF_INET);
	cr_expect_eq(e.name.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	cr_expect_neq(e.name.sin_port, 0);
	ep_done(&d, &e);
}

/* fi_cm(3): "If the actual address is larger than what can fit into the buffer, it will be
 * truncated and -FI_ETOOSMALL will be returned. On output, addrlen is set to the size of
 * the buffer needed". */
Test(fi_getname, too_small)
{
	struct pt_dom d;
	struct pt_ep e;
	uint8_t out[sizeof(struct sockaddr_in)];
	size_t len = 4;

	ep_new(&d, &e);
	memset(out, 0xa5, sizeof(out));
	cr_expect_eq(fi_getname(&e.ep->fid, out, &len), -FI_ETOOSMALL);
	cr_expect_eq(len, sizeof(struct sockaddr_in));
	cr_expect_arr_eq(out, &e.name, 4);
	for (size_t i = 4; i < sizeof(out); i++)
		cr_expect_eq(out[i], 0xa5, "byte %zu written past addrlen", i);
	len = 0;
	cr_expect_eq(fi_getname(&e.ep->fid, NULL, &len), -FI_ETOOSMALL);
	cr_expect_eq(len, sizeof(struct sockaddr_in));
	ep_done(&d, &e);
}

/* fi_cm(3): "If a node or service address is specified, then, upon successful completion of
 * fi_setname, the endpoint will be assigned the given addressing." */
Test(fi_setname, moves_port)
{
	struct pt_dom d;
	struct pt_ep a, b;
	struct sockaddr_in old, sin;
	struct fi_cq_data_entry e;
	char rbuf[16], sbuf[16] = "moved";
	int fd, ctx;

	pt_dom_open(&d);
	pt_ep_create(&d, &a, NULL);
	pt_ep_create(&d, &b, NULL);
	old = b.name;
	sin = pt_sin("127.0.0.1", pt_free_udp_port());
	cr_assert_eq(fi_setname(&b.ep->fid, &sin, sizeof(sin)), 0);
	{
		size_t len = sizeof(b.name);

		cr_assert_eq(fi_getname(&b.ep->fid, &b.name, &len), 0);
	}
	cr_expect_eq(b.name.sin_port, sin.sin_port, "getname port %u, set %u",
		     ntohs(b.name.sin_port), ntohs(sin.sin_port));
	cr_expect_eq(b.name.sin_addr.s_addr, sin.sin_addr.s_addr);
	/* the old port was given back */
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	cr_assert_geq(fd, 0);
	cr_expect_eq(bind(fd, (struct sockaddr *)&old, sizeof(old)), 0, "old port still bound");
	close(fd);
	/* and traffic reaches the new address */
	pt_ep_bind_cqs(&d, &a, FI_CQ_FORMAT_DATA, FI_WAIT_NONE, 0, 0);
	pt_ep_bind_cqs(&d, &b, FI_CQ_FORMAT_DATA, FI_WAIT_NONE, 0, 0);
	pt_ep_connect(&a, &b);
	pt_ep_enable(&a);
	pt_ep_enable(&b);
	cr_assert_eq(fi_recv(b.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, &ctx), 0);
	cr_assert_eq(fi_send(a.ep, sbuf, sizeof(sbuf), NULL, a.peer, NULL), 0);
	cr_assert_eq(pt_cq_poll(b.rx_cq, &e, NULL, NULL), 1);
	cr_expect_eq(e.op_context, &ctx);
	cr_expect_str_eq(rbuf, "moved");
	pt_ep_close(&a);
	pt_ep_close(&b);
	pt_dom_close(&d);
}

Test(fi_setname, port_in_use)
{
	struct pt_dom d;
	struct pt_ep a, b;
	struct sockaddr_in before, after;
	size_t len = sizeof(after);

	pt_dom_open(&d);
	pt_ep_create(&d, &a, NULL);
	pt_ep_create(&d, &b, NULL);
	before = b.name;
	cr_expect_lt(fi_setname(&b.ep->fid, &a.name, sizeof(a.name)), 0);
	cr_assert_eq(fi_getname(&b.ep->fid, &after, &len), 0);
	cr_expect_eq(after.sin_port, before.sin_port, "failed setname changed the address");
	pt_ep_close(&a);
	pt_ep_close(&b);
	pt_dom_close(&d);
}

Test(fi_setname, after_enable)
{
	struct pt_dom d;
	struct pt_ep e;
	struct sockaddr_in sin = pt_sin("127.0.0.1", 0), after;
	size_t len = sizeof(after);

	ep_new(&d, &e);
	pt_ep_bind_cqs(&d, &e, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0, 0);
	pt_ep_enable(&e);
	cr_expect_lt(fi_setname(&e.ep->fid, &sin, sizeof(sin)), 0);
	cr_assert_eq(fi_getname(&e.ep->fid, &after, &len), 0);
	cr_expect_eq(after.sin_port, e.name.sin_port);
	ep_done(&d, &e);
}

Test(fi_getopt, unknown)
{
	struct pt_dom d;
	struct pt_ep e;
	size_t val = 0, len = sizeof(val);

	ep_new(&d, &e);
	cr_expect_eq(fi_getopt(&e.ep->fid, FI_OPT_ENDPOINT, 12345, &val, &len), -FI_ENOPROTOOPT);
	cr_expect_eq(fi_getopt(&e.ep->fid, 777, FI_OPT_MIN_MULTI_RECV, &val, &len), -FI_ENOPROTOOPT);
	ep_done(&d, &e);
}

Test(fi_setopt, unknown)
{
	struct pt_dom d;
	struct pt_ep e;
	size_t val = 1;

	ep_new(&d, &e);
	cr_expect_eq(fi_setopt(&e.ep->fid, FI_OPT_ENDPOINT, 12345, &val, sizeof(val)), -FI_ENOPROTOOPT);
	cr_expect_eq(fi_setopt(&e.ep->fid, 777, FI_OPT_MIN_MULTI_RECV, &val, sizeof(val)),
		     -FI_ENOPROTOOPT);
	ep_done(&d, &e);
}

/* fi_endpoint(3) FI_GETOPSFLAG / FI_SETOPSFLAG: the argument names FI_TRANSMIT or FI_RECV
 * (not both); the set flags then apply to that direction only. */
Test(fi_control, opsflag_set_get)
{
	struct pt_dom d;
	struct pt_ep e;
	uint64_t flags;

	ep_new(&d, &e);
	flags = FI_TRANSMIT | FI_COMPLETION;
	cr_expect_eq(fi_control(&e.ep->fid, FI_SETOPSFLAG, &flags), 0);
	flags = FI_TRANSMIT;
	cr_expect_eq(fi_control(&e.ep->fid, FI_GETOPSFLAG, &flags), 0);
	cr_expect(flags & FI_COMPLETION, "FI_COMPLETION not in the transmit flags: 0x%llx",
		  (unsigned long long)flags);
	flags = FI_RECV;
	cr_expect_eq(fi_control(&e.ep->fid, FI_GETOPSFLAG, &flags), 0);
	cr_expect_eq(flags & FI_COMPLETION, 0, "setting transmit flags changed the receive flags");

	flags = FI_RECV | FI_COMPLETION;
	cr_expect_eq(fi_control(&e.ep->fid, FI_SETOPSFLAG, &flags), 0);
	flags = FI_RECV;
	cr_expect_eq(fi_control(&e.ep->fid, FI_GETOPSFLAG, &flags), 0);
	cr_expect(flags & FI_COMPLETION, "FI_COMPLETION not in the receive flags");

	flags = FI_TRANSMIT | FI_RECV;
	cr_expect_lt(fi_control(&e.ep->fid, FI_GETOPSFLAG, &flags), 0, "both directions accepted");
	flags = FI_COMPLETION;
	cr_expect_lt(fi_control(&e.ep->fid, FI_GETOPSFLAG, &flags), 0, "no direction accepted");
	flags = FI_COMPLETION;
	cr_expect_lt(fi_control(&e.ep->fid, FI_SETOPSFLAG, &flags), 0, "no direction accepted");
	ep_done(&d, &e);
}

/* braid DGRAM has no tagged, RMA, atomic or CM operations: each entry point says
 * -FI_ENOSYS (and never crashes), before and after fi_enable. */
static void expect_unsupported(struct pt_ep *e)
{
	char buf[64];
	uint64_t res[2], cmp[2];
	size_t cnt = 0, len = sizeof(buf);
	struct iovec iov = { buf, sizeof(buf) };
	struct fi_msg_tagged tmsg = { .msg_iov = &iov, .iov_count = 1, .addr = 0 };
	struct fi_rma_iov riov = { 0, sizeof(buf), 1 };
	struct fi_msg_rma rmsg = { .msg_iov = &iov, .iov_count = 1, .rma_iov = &riov, .rma_iov_count = 1 };
	struct fi_ioc ioc = { buf, 1 };
	struct fi_rma_ioc rioc = { 0, 1, 1 };
	struct fi_msg_atomic amsg = {
		.msg_iov = &ioc, .iov_count = 1, .rma_iov = &rioc, .rma_iov_count = 1,
		.datatype = FI_UINT64, .op = FI_SUM,
	};
	struct sockaddr_in sin = pt_sin("127.0.0.1", 9);
	struct fid_mc *mc = NULL;

	cr_expect_eq(fi_tsend(e->ep, buf, 8, NULL, 0, 1, NULL), -FI_ENOSYS);
	cr_expect_eq(fi_trecv(e->ep, buf, 8, NULL, FI_ADDR_UNSPEC, 1, 0, NULL), -FI_ENOSYS);
	cr_expect_eq(fi_tinject(e->ep, buf, 8, 0, 1), -FI_ENOSYS);
	cr_expect_eq(fi_tsenddata(e->ep, buf, 8, NULL, 5, 0, 1, NULL), -FI_ENOSYS);
	cr_expect_eq(fi_tsendmsg(e->ep, &tmsg, 0), -FI_ENOSYS);
	cr_expect_eq(fi_trecvmsg(e->ep, &tmsg, 0), -FI_ENOSYS);
	cr_expect_eq(fi_write(e->ep, buf, 8, NULL, 0, 0, 1, NULL), -FI_ENOSYS);
	cr_expect_eq(fi_read(e->ep, buf, 8, NULL, 0, 0, 1, NULL), -FI_ENOSYS);
	cr_expect_eq(fi_writemsg(e->ep, &rmsg, 0), -FI_ENOSYS);
	cr_expect_eq(fi_inject_write(e->ep, buf, 8, 0, 0, 1), -FI_ENOSYS);
	cr_expect_eq(fi_writedata(e->ep, buf, 8, NULL, 5, 0, 0, 1, NULL), -FI_ENOSYS);
	cr_expect_eq(fi_atomic(e->ep, buf, 1, NULL, 0, 0, 1, FI_UINT64, FI_SUM, NULL), -FI_ENOSYS);
	cr_expect_eq(fi_fetch_atomic(e->ep, buf, 1, NULL, res, NULL, 0, 0, 1, FI_UINT64, FI_SUM, NULL),
		     -FI_ENOSYS);
	cr_expect_eq(fi_compare_atomic(e->ep, buf, 1, NULL, cmp, NULL, res, NULL, 0, 0, 1,
				       FI_UINT64, FI_CSWAP, NULL), -FI_ENOSYS);
	cr_expect_eq(fi_atomicmsg(e->ep, &amsg, 0), -FI_ENOSYS);
	cr_expect_eq(fi_atomicvalid(e->ep, FI_UINT64, FI_SUM, &cnt), -FI_ENOSYS);
	cr_expect_eq(fi_connect(e->ep, &sin, NULL, 0), -FI_ENOSYS);
	cr_expect_eq(fi_accept(e->ep, NULL, 0), -FI_ENOSYS);
	cr_expect_eq(fi_shutdown(e->ep, 0), -FI_ENOSYS);
	cr_expect_eq(fi_getpeer(e->ep, buf, &len), -FI_ENOSYS);
	cr_expect_eq(fi_join(e->ep, &sin, 0, &mc, NULL), -FI_ENOSYS);
}

Test(fi_tsend, unsupported_ops)
{
	struct pt_dom d;
	struct pt_ep e;

	ep_new(&d, &e);
	expect_unsupported(&e);
	pt_ep_bind_cqs(&d, &e, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0, 0);
	pt_ep_enable(&e);
	expect_unsupported(&e);
	pt_cq_expect_empty(e.tx_cq);
	pt_cq_expect_empty(e.rx_cq);
	ep_done(&d, &e);
}

/* fi_av(3), fi_cq(3), fi_cntr(3): closing an object an endpoint still uses gives
 * -FI_EBUSY; once the endpoint is closed it succeeds. */
Test(fi_close, objects_bound_to_ep)
{
	struct pt_dom d;
	struct pt_ep e;

	ep_new(&d, &e);
	pt_ep_bind_cqs(&d, &e, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0, 0);
	pt_ep_bind_cntrs(&d, &e);
	pt_ep_enable(&e);
	cr_expect_eq(fi_close(&e.av->fid), -FI_EBUSY);
	cr_expect_eq(fi_close(&e.tx_cq->fid), -FI_EBUSY);
	cr_expect_eq(fi_close(&e.rx_cq->fid), -FI_EBUSY);
	cr_expect_eq(fi_close(&e.tx_cntr->fid), -FI_EBUSY);
	cr_expect_eq(fi_close(&e.rx_cntr->fid), -FI_EBUSY);
	cr_assert_eq(fi_close(&e.ep->fid), 0);
	e.ep = NULL;
	/* pt_ep_close closes the CQs, counters and AV and asserts 0 for each */
	ep_done(&d, &e);
}

Test(fi_cancel, unknown_context)
{
	struct pt_dom d;
	struct pt_ep e;
	int ctx;

	ep_new(&d, &e);
	pt_ep_bind_cqs(&d, &e, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0, 0);
	pt_ep_enable(&e);
	/* nothing posted: nothing to cancel, and no completion appears */
	(void)fi_cancel(&e.ep->fid, &ctx);
	pt_cq_expect_empty(e.rx_cq);
	pt_cq_expect_empty(e.tx_cq);
	ep_done(&d, &e);
}

Test(fi_ep_bind, eq)
{
	struct pt_dom d;
	struct pt_ep e;
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_NONE };
	struct fid_eq *eq;

	ep_new(&d, &e);
	cr_assert_eq(fi_eq_open(d.fabric, &attr, &eq, NULL), 0);
	cr_expect_eq(fi_ep_bind(e.ep, &eq->fid, 0), 0);
	/* fi_eq(3): "The EQ must not be bound to any other objects prior to being closed,
	 * otherwise the call will return -FI_EBUSY." */
	cr_expect_eq(fi_close(&eq->fid), -FI_EBUSY);
	cr_assert_eq(fi_close(&e.ep->fid), 0);
	e.ep = NULL;
	cr_expect_eq(fi_close(&eq->fid), 0);
	ep_done(&d, &e);
}

/* fi_endpoint(3) fi_close: "Outstanding operations posted to the endpoint when fi_close is
 * called will be discarded. Discarded operations will silently be dropped, with no
 * completions reported." */
Test(fi_close, ep_discards_posted_receives)
{
	struct pt_pair p;
	char rbuf[2][16];
	struct fid_ep *ep;

	pt_pair_open(&p);
	ep = p.b.ep;
	cr_assert_eq(fi_recv(ep, rbuf[0], sizeof(rbuf[0]), NULL, FI_ADDR_UNSPEC, NULL), 0);
	cr_assert_eq(fi_recv(ep, rbuf[1], sizeof(rbuf[1]), NULL, FI_ADDR_UNSPEC, NULL), 0);
	cr_assert_eq(fi_close(&ep->fid), 0);
	p.b.ep = NULL;
	pt_cq_expect_empty(p.b.rx_cq);
	pt_pair_close(&p);
}

/* Same rule for a send still held back by FI_MORE (no later send closed the batch). */
Test(fi_close, ep_discards_pending_sends)
{
	struct pt_pair p;
	char sbuf[16] = "held";
	struct iovec iov = { sbuf, sizeof(sbuf) };
	int ctx;
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .context = &ctx };
	struct fi_cq_data_entry c;
	ssize_t ret;

	pt_pair_open(&p);
	msg.addr = p.a.peer;
	cr_assert_eq(fi_sendmsg(p.a.ep, &msg, FI_MORE), 0);
	cr_assert_eq(fi_close(&p.a.ep->fid), 0);
	p.a.ep = NULL;
	ret = fi_cq_read(p.a.tx_cq, &c, 1);
	cr_expect_eq(ret, -FI_EAGAIN, "fi_cq_read after fi_close(ep) = %zd: a completion for "
		     "an operation outstanding at close was reported", ret);
	pt_pair_close(&p);
}

/* A field of /proc/self/status, in KiB. */
static long status_kb(const char *field)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "r");

	cr_assert(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field)))
			v = strtol(line + strlen(field), NULL, 10);
	fclose(f);
	return v;
}

static long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	cr_assert(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/*
 * An idle endpoint costs what it uses (fi_braid(7), FI_BRAID_IDLE_MS). Each of the last 48 of
 * 64 enabled RDM endpoints in one domain (a CQ each way, an AV) adds under
 * 1 MiB of virtual memory (the pools take memory as their objects are first
 * used; receive buffers belong to the domain's progress, not to each endpoint),
 * and, with one path, one descriptor: its socket (no epoll set, no eventfd for a
 * CQ without a wait object). 10,000 such endpoints fit a process under strict
 * overcommit (bench/braid_ep_strict.sh, docs/benchmarks.md, *What an idle endpoint costs*).
 */
Test(fi_endpoint, an_idle_endpoint_costs_under_1_mib_and_one_descriptor_a_path)
{
	enum { N = 64, Q = 16 };
	static struct pt_ep e[N];
	struct pt_dom d;
	long vm0 = 0, fd0 = 0, vm1, fd1;
	int i;

	setenv("FI_BRAID_PATHS", "1", 1);
	pt_dom_open(&d);
	for (i = 0; i < N; i++) {
		if (i == Q) {
			vm0 = status_kb("VmSize:");
			fd0 = open_fds();
		}
		pt_ep_create(&d, &e[i], NULL);
		pt_ep_bind_cqs(&d, &e[i], FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE, 0, 0);
		pt_ep_enable(&e[i]);
	}
	vm1 = status_kb("VmSize:");
	fd1 = open_fds();
	cr_assert_eq(fd1 - fd0, N - Q, "one descriptor an endpoint with one path (%ld for %d)",
		     fd1 - fd0, N - Q);
#if defined(__SANITIZE_ADDRESS__)
	cr_log_info("virtual memory not judged under ASan (its allocator reserves its own way)");
#else
	cr_assert_lt((vm1 - vm0) / (N - Q), 1024, "an idle endpoint: %ld KiB of virtual memory",
		     (vm1 - vm0) / (N - Q));
#endif
	for (i = N; i-- > 0;)
		pt_ep_close(&e[i]);
	pt_dom_close(&d);
}
