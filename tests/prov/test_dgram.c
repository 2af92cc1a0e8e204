/* SPDX-License-Identifier: BSD-2-Clause */
/* test_dgram.c: the braid FI_EP_DGRAM data path (fi_msg(3)) between two endpoints on 127.0.0.1. */
#include "prov_test.h"

static void fill(char *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)(seed + i * 7);
}

/* Wait for one receive completion on @e (successful), return it. */
static struct fi_cq_data_entry rx_one(struct pt_ep *e)
{
	struct fi_cq_data_entry c;
	ssize_t ret;

	memset(&c, 0, sizeof(c));
	ret = pt_cq_poll(e->rx_cq, &c, NULL, NULL);
	cr_assert_eq(ret, 1, "receive completion: fi_cq_read = %zd (%s)", ret,
		     ret < 0 ? fi_strerror((int)-ret) : "");
	return c;
}

static struct fi_cq_data_entry tx_one(struct pt_ep *e)
{
	struct fi_cq_data_entry c;
	ssize_t ret;

	memset(&c, 0, sizeof(c));
	ret = pt_cq_poll(e->tx_cq, &c, NULL, NULL);
	cr_assert_eq(ret, 1, "send completion: fi_cq_read = %zd", ret);
	return c;
}

/* Wait for one error completion on @cq and read it. */
static struct fi_cq_err_entry err_one(struct fid_cq *cq)
{
	struct fi_cq_data_entry c;
	struct fi_cq_err_entry err;
	ssize_t ret;

	ret = pt_cq_poll(cq, &c, NULL, NULL);
	cr_assert_eq(ret, -FI_EAVAIL, "expected an error completion, fi_cq_read = %zd", ret);
	memset(&err, 0, sizeof(err));
	ret = fi_cq_readerr(cq, &err, 0);
	cr_assert_eq(ret, 1, "fi_cq_readerr = %zd", ret);
	return err;
}

Test(fi_send, recv_data)
{
	struct pt_pair p;
	struct fi_cq_data_entry rc, tc;
	char sbuf[200], rbuf[256];
	int sctx, rctx;

	pt_pair_open(&p);
	fill(sbuf, sizeof(sbuf), 1);
	memset(rbuf, 0, sizeof(rbuf));
	cr_assert_eq(fi_recv(p.b.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, &rctx), 0);
	cr_assert_eq(fi_send(p.a.ep, sbuf, sizeof(sbuf), NULL, p.a.peer, &sctx), 0);
	tc = tx_one(&p.a);
	cr_expect_eq(tc.op_context, &sctx);
	cr_expect_eq(tc.flags & (FI_SEND | FI_MSG), FI_SEND | FI_MSG);
	rc = rx_one(&p.b);
	cr_expect_eq(rc.op_context, &rctx);
	cr_expect_eq(rc.len, sizeof(sbuf));
	cr_expect_eq(rc.flags & (FI_RECV | FI_MSG), FI_RECV | FI_MSG);
	cr_expect_eq(rc.flags & FI_REMOTE_CQ_DATA, 0, "FI_REMOTE_CQ_DATA without data");
	cr_expect_arr_eq(rbuf, sbuf, sizeof(sbuf));
	pt_cq_expect_empty(p.a.tx_cq);
	pt_cq_expect_empty(p.b.rx_cq);
	pt_pair_close(&p);
}

/* Both directions work on the same pair. */
Test(fi_send, both_directions)
{
	struct pt_pair p;
	char ab[32] = "a to b", ba[32] = "b to a", ra[32], rb[32];

	pt_pair_open(&p);
	cr_assert_eq(fi_recv(p.a.ep, ra, sizeof(ra), NULL, FI_ADDR_UNSPEC, NULL), 0);
	cr_assert_eq(fi_recv(p.b.ep, rb, sizeof(rb), NULL, FI_ADDR_UNSPEC, NULL), 0);
	cr_assert_eq(fi_send(p.a.ep, ab, sizeof(ab), NULL, p.a.peer, NULL), 0);
	cr_assert_eq(fi_send(p.b.ep, ba, sizeof(ba), NULL, p.b.peer, NULL), 0);
	rx_one(&p.a);
	rx_one(&p.b);
	cr_expect_str_eq(ra, "b to a");
	cr_expect_str_eq(rb, "a to b");
	pt_pair_close(&p);
}

Test(fi_send, zero_length)
{
	struct pt_pair p;
	struct fi_cq_data_entry rc;
	char rbuf[16];
	int rctx;

	pt_pair_open(&p);
	cr_assert_eq(fi_recv(p.b.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, &rctx), 0);
	cr_assert_eq(fi_send(p.a.ep, NULL, 0, NULL, p.a.peer, NULL), 0);
	rc = rx_one(&p.b);
	cr_expect_eq(rc.op_context, &rctx);
	cr_expect_eq(rc.len, 0);
	pt_pair_close(&p);
}

Test(fi_sendv, into_recvv)
{
	struct pt_pair p;
	struct fi_cq_data_entry rc;
	char s0[10], s1[20], s2[30], all[60], r0[25], r1[100];
	struct iovec siov[3] = { { s0, sizeof(s0) }, { s1, sizeof(s1) }, { s2, sizeof(s2) } };
	struct iovec riov[2] = { { r0, sizeof(r0) }, { r1, sizeof(r1) } };
	int rctx, sctx;

	pt_pair_open(&p);
	cr_assert_geq(p.d.info->tx_attr->iov_limit, 3);
	cr_assert_geq(p.d.info->rx_attr->iov_limit, 2);
	fill(s0, sizeof(s0), 10);
	fill(s1, sizeof(s1), 20);
	fill(s2, sizeof(s2), 30);
	memcpy(all, s0, 10);
	memcpy(all + 10, s1, 20);
	memcpy(all + 30, s2, 30);
	cr_assert_eq(fi_recvv(p.b.ep, riov, NULL, 2, FI_ADDR_UNSPEC, &rctx), 0);
	cr_assert_eq(fi_sendv(p.a.ep, siov, NULL, 3, p.a.peer, &sctx), 0);
	cr_expect_eq(tx_one(&p.a).op_context, &sctx);
	rc = rx_one(&p.b);
	cr_expect_eq(rc.op_context, &rctx);
	cr_expect_eq(rc.len, 60);
	cr_expect_arr_eq(r0, all, 25);
	cr_expect_arr_eq(r1, all + 25, 35);
	pt_pair_close(&p);
}

Test(fi_sendv, over_iov_limit)
{
	struct pt_pair p;
	char buf[64];
	struct iovec iov[64];
	size_t i, n;

	pt_pair_open(&p);
	n = p.d.info->tx_attr->iov_limit + 1;
	cr_assert_leq(n, 64);
	for (i = 0; i < n; i++) {
		iov[i].iov_base = buf + i % sizeof(buf);
		iov[i].iov_len = 1;
	}
	cr_expect_lt(fi_sendv(p.a.ep, iov, NULL, n, p.a.peer, NULL), 0);
	pt_cq_expect_empty(p.a.tx_cq);
	pt_pair_close(&p);
}

Test(fi_sendmsg, recvmsg)
{
	struct pt_pair p;
	struct fi_cq_data_entry rc;
	char sbuf[48], r0[16], r1[64];
	struct iovec siov = { sbuf, sizeof(sbuf) };
	struct iovec riov[2] = { { r0, sizeof(r0) }, { r1, sizeof(r1) } };
	int sctx, rctx;
	struct fi_msg smsg = { .msg_iov = &siov, .iov_count = 1, .context = &sctx };
	struct fi_msg rmsg = { .msg_iov = riov, .iov_count = 2, .addr = FI_ADDR_UNSPEC,
			       .context = &rctx };

	pt_pair_open(&p);
	smsg.addr = p.a.peer;
	fill(sbuf, sizeof(sbuf), 3);
	cr_assert_eq(fi_recvmsg(p.b.ep, &rmsg, 0), 0);
	cr_assert_eq(fi_sendmsg(p.a.ep, &smsg, 0), 0);
	cr_expect_eq(tx_one(&p.a).op_context, &sctx);
	rc = rx_one(&p.b);
	cr_expect_eq(rc.op_context, &rctx);
	cr_expect_eq(rc.len, sizeof(sbuf));
	cr_expect_arr_eq(r0, sbuf, 16);
	cr_expect_arr_eq(r1, sbuf + 16, sizeof(sbuf) - 16);
	pt_pair_close(&p);
}

Test(fi_sendmsg, remote_cq_data)
{
	struct pt_pair p;
	struct fi_cq_data_entry rc;
	char sbuf[8] = "msgdata", rbuf[8];
	struct iovec siov = { sbuf, sizeof(sbuf) };
	struct fi_msg smsg = { .msg_iov = &siov, .iov_count = 1, .data = 0xabcdef0123456789ULL };

	pt_pair_open(&p);
	smsg.addr = p.a.peer;
	cr_assert_eq(fi_recv(p.b.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, NULL), 0);
	cr_assert_eq(fi_sendmsg(p.a.ep, &smsg, FI_REMOTE_CQ_DATA), 0);
	rc = rx_one(&p.b);
	cr_expect(rc.flags & FI_REMOTE_CQ_DATA, "FI_REMOTE_CQ_DATA not set");
	cr_expect_eq(rc.data, 0xabcdef0123456789ULL);
	pt_pair_close(&p);
}

/* fi_msg(3) fi_inject: "The data buffer is available for reuse immediately on return from the
 * call, and no CQ entry will be written if the transfer completes successfully." fi_endpoint(3)
 * FI_SEND counter: "Increments the specified counter whenever a message transfer initiated
 * over the endpoint has completed successfully or in error." */
Test(fi_inject, no_completion_counted)
{
	struct pt_pair p;
	struct fi_cq_data_entry rc;
	char sbuf[64], expect[64], rbuf[64];
	long deadline;
	int rctx;

	pt_pair_open_opts(&p, 0, FI_CQ_FORMAT_DATA, FI_WAIT_NONE, true);
	fill(sbuf, sizeof(sbuf), 5);
	memcpy(expect, sbuf, sizeof(sbuf));
	cr_assert_eq(fi_recv(p.b.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, &rctx), 0);
	cr_assert_leq(sizeof(sbuf), p.d.info->tx_attr->inject_size);
	cr_assert_eq(fi_inject(p.a.ep, sbuf, sizeof(sbuf), p.a.peer), 0);
	memset(sbuf, 0, sizeof(sbuf));	/* reuse at once */
	rc = rx_one(&p.b);
	cr_expect_eq(rc.op_context, &rctx);
	cr_expect_eq(rc.len, sizeof(expect));
	cr_expect_arr_eq(rbuf, expect, sizeof(expect));
	deadline = pt_now_ms() + PT_POLL_MS;
	while (fi_cntr_read(p.a.tx_cntr) < 1 && pt_now_ms() < deadline)
		;
	cr_expect_eq(fi_cntr_read(p.a.tx_cntr), 1, "inject not counted");
	cr_expect_eq(fi_cntr_readerr(p.a.tx_cntr), 0);
	cr_expect_eq(fi_cntr_read(p.b.rx_cntr), 1);
	pt_cq_expect_empty(p.a.tx_cq);
	pt_pair_close(&p);
}

Test(fi_inject, over_inject_size)
{
	struct pt_pair p;
	size_t n;
	char *buf;

	pt_pair_open(&p);
	n = p.d.info->tx_attr->inject_size + 1;
	buf = calloc(1, n);
	cr_assert_not_null(buf);
	cr_expect_lt(fi_inject(p.a.ep, buf, n, p.a.peer), 0);
	free(buf);
	pt_pair_close(&p);
}

/* fi_msg(3): FI_INJECT on fi_sendmsg only makes the buffer reusable at once; fi_inject is
 * the call that "behaves as if the FI_INJECT transfer flag were set, selective completions
 * are enabled, and the FI_COMPLETION flag is not specified". Without selective completion,
 * fi_endpoint(3): "By default, data transfer operations write CQ completion entries into
 * the associated completion queue after they have successfully completed." */
Test(fi_sendmsg, inject_flag_completes)
{
	struct pt_pair p;
	char sbuf[32], expect[32], rbuf[32];
	struct iovec siov = { sbuf, sizeof(sbuf) };
	int sctx;
	struct fi_msg smsg = { .msg_iov = &siov, .iov_count = 1, .context = &sctx };
	struct fi_cq_data_entry tc;
	ssize_t ret;

	pt_pair_open(&p);
	smsg.addr = p.a.peer;
	fill(sbuf, sizeof(sbuf), 9);
	memcpy(expect, sbuf, sizeof(sbuf));
	cr_assert_eq(fi_recv(p.b.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, NULL), 0);
	cr_assert_eq(fi_sendmsg(p.a.ep, &smsg, FI_INJECT), 0);
	memset(sbuf, 0, sizeof(sbuf));
	rx_one(&p.b);
	cr_expect_arr_eq(rbuf, expect, sizeof(expect));
	memset(&tc, 0, sizeof(tc));
	ret = pt_cq_poll(p.a.tx_cq, &tc, NULL, NULL);
	cr_expect_eq(ret, 1, "fi_sendmsg(FI_INJECT) wrote no send completion (fi_cq_read = %zd)", ret);
	if (ret == 1)
		cr_expect_eq(tc.op_context, &sctx);
	pt_pair_close(&p);
}

Test(fi_senddata, remote_cq_data)
{
	struct pt_pair p;
	struct fi_cq_data_entry rc;
	char sbuf[16] = "senddata", rbuf[16];
	int rctx;

	pt_pair_open(&p);
	cr_assert_geq(p.d.info->domain_attr->cq_data_size, 8);
	cr_assert_eq(fi_recv(p.b.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, &rctx), 0);
	cr_assert_eq(fi_senddata(p.a.ep, sbuf, sizeof(sbuf), NULL, 0x1122334455667788ULL,
				 p.a.peer, NULL), 0);
	rc = rx_one(&p.b);
	cr_expect_eq(rc.op_context, &rctx);
	cr_expect(rc.flags & FI_REMOTE_CQ_DATA, "FI_REMOTE_CQ_DATA not set");
	cr_expect_eq(rc.data, 0x1122334455667788ULL);
	cr_expect_str_eq(rbuf, "senddata");
	tx_one(&p.a);
	pt_pair_close(&p);
}

Test(fi_injectdata, remote_cq_data)
{
	struct pt_pair p;
	struct fi_cq_data_entry rc;
	char sbuf[16] = "injectdata", rbuf[16];

	pt_pair_open(&p);
	cr_assert_eq(fi_recv(p.b.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, NULL), 0);
	cr_assert_eq(fi_injectdata(p.a.ep, sbuf, sizeof(sbuf), 0xfeedULL, p.a.peer), 0);
	rc = rx_one(&p.b);
	cr_expect(rc.flags & FI_REMOTE_CQ_DATA, "FI_REMOTE_CQ_DATA not set");
	cr_expect_eq(rc.data, 0xfeedULL);
	cr_expect_str_eq(rbuf, "injectdata");
	pt_cq_expect_empty(p.a.tx_cq);
	pt_pair_close(&p);
}

/* fi_cq(3) fi_cq_readfrom: the source address of received data, as an fi_addr_t of the
 * receiver's AV, for endpoints with FI_SOURCE. */
Test(fi_cq_readfrom, source)
{
	struct pt_pair p;
	struct fi_cq_data_entry rc;
	char sbuf[8] = "from", rbuf[8];
	fi_addr_t src = 12345;
	int rctx;

	pt_pair_open_opts(&p, FI_MSG | FI_SOURCE, FI_CQ_FORMAT_DATA, FI_WAIT_NONE, false);
	cr_assert(p.d.info->caps & FI_SOURCE);
	cr_assert_eq(fi_recv(p.b.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, &rctx), 0);
	cr_assert_eq(fi_send(p.a.ep, sbuf, sizeof(sbuf), NULL, p.a.peer, NULL), 0);
	cr_assert_eq(pt_cq_poll(p.b.rx_cq, &rc, &src, NULL), 1);
	cr_expect_eq(rc.op_context, &rctx);
	cr_expect_eq(src, p.b.peer, "source %llu, sender is %llu in the receiver's AV",
		     (unsigned long long)src, (unsigned long long)p.b.peer);
	pt_pair_close(&p);
}

/* fi_cq(3): "If FI_SOURCE is specified without FI_SOURCE_ERR, source addresses which cannot
 * be mapped to a usable fi_addr_t will be reported as FI_ADDR_NOTAVAIL." */
Test(fi_cq_readfrom, source_not_in_av)
{
	struct pt_dom d;
	struct pt_ep a, b;
	struct fi_cq_data_entry rc;
	struct sockaddr_in other = pt_sin("127.0.0.1", 9);
	char sbuf[8] = "who", rbuf[8];
	fi_addr_t src = 0, fa;

	pt_dom_open_caps(&d, FI_MSG | FI_SOURCE);
	pt_ep_create(&d, &a, NULL);
	pt_ep_create(&d, &b, NULL);
	pt_ep_bind_cqs(&d, &a, FI_CQ_FORMAT_DATA, FI_WAIT_NONE, 0, 0);
	pt_ep_bind_cqs(&d, &b, FI_CQ_FORMAT_DATA, FI_WAIT_NONE, 0, 0);
	pt_ep_connect(&a, &b);
	/* b knows some other address, not a's */
	cr_assert_eq(fi_av_insert(b.av, &other, 1, &fa, 0, NULL), 1);
	pt_ep_enable(&a);
	pt_ep_enable(&b);
	cr_assert_eq(fi_recv(b.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, NULL), 0);
	cr_assert_eq(fi_send(a.ep, sbuf, sizeof(sbuf), NULL, a.peer, NULL), 0);
	cr_assert_eq(pt_cq_poll(b.rx_cq, &rc, &src, NULL), 1);
	cr_expect_eq(src, FI_ADDR_NOTAVAIL, "source %llu for an unknown sender",
		     (unsigned long long)src);
	cr_expect_str_eq(rbuf, "who");
	pt_ep_close(&a);
	pt_ep_close(&b);
	pt_dom_close(&d);
}

/* fi_cq(3): "If fi_cq_readfrom is called on an endpoint for which source addressing data is
 * not available, the source address will be set to FI_ADDR_NOTAVAIL." */
Test(fi_cq_readfrom, without_fi_source)
{
	struct pt_pair p;
	struct fi_cq_data_entry rc;
	char sbuf[8] = "nosrc", rbuf[8];
	fi_addr_t src = 0;

	pt_pair_open_opts(&p, FI_MSG, FI_CQ_FORMAT_DATA, FI_WAIT_NONE, false);
	cr_assert_eq(p.d.info->caps & FI_SOURCE, 0);
	cr_assert_eq(fi_recv(p.b.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, NULL), 0);
	cr_assert_eq(fi_send(p.a.ep, sbuf, sizeof(sbuf), NULL, p.a.peer, NULL), 0);
	cr_assert_eq(pt_cq_poll(p.b.rx_cq, &rc, &src, NULL), 1);
	cr_expect_eq(src, FI_ADDR_NOTAVAIL);
	pt_pair_close(&p);
}

/* fi_cq(3) olen: "the amount of data that did not fit into the available receive buffer
 * and was discarded"; len: "how many data bytes were placed into the associated receive
 * buffer". */
Test(fi_recv, truncation)
{
	struct pt_pair p;
	struct fi_cq_err_entry err;
	struct fi_cq_data_entry rc;
	char sbuf[100], rbuf[40], rbuf2[128];
	int rctx, rctx2;

	pt_pair_open(&p);
	fill(sbuf, sizeof(sbuf), 11);
	memset(rbuf, 0, sizeof(rbuf));
	cr_assert_eq(fi_recv(p.b.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, &rctx), 0);
	cr_assert_eq(fi_send(p.a.ep, sbuf, sizeof(sbuf), NULL, p.a.peer, NULL), 0);
	err = err_one(p.b.rx_cq);
	cr_expect_eq(err.err, FI_ETRUNC, "err %d", err.err);
	cr_expect_eq(err.olen, 60, "olen %zu", err.olen);
	cr_expect_eq(err.len, 40, "len %zu", err.len);
	cr_expect_eq(err.op_context, &rctx);
	cr_expect(err.flags & FI_RECV, "FI_RECV not set");
	cr_expect_arr_eq(rbuf, sbuf, sizeof(rbuf));
	pt_cq_expect_empty(p.b.rx_cq);
	/* the endpoint goes on working */
	cr_assert_eq(fi_recv(p.b.ep, rbuf2, sizeof(rbuf2), NULL, FI_ADDR_UNSPEC, &rctx2), 0);
	cr_assert_eq(fi_send(p.a.ep, sbuf, sizeof(sbuf), NULL, p.a.peer, NULL), 0);
	rc = rx_one(&p.b);
	cr_expect_eq(rc.op_context, &rctx2);
	cr_expect_eq(rc.len, sizeof(sbuf));
	cr_expect_arr_eq(rbuf2, sbuf, sizeof(sbuf));
	pt_pair_close(&p);
}

/* fi_endpoint(3) fi_cancel: "An error queue entry will be available in the associated
 * error queue with error code FI_ECANCELED." */
Test(fi_cancel, posted_receive)
{
	struct pt_pair p;
	struct fi_cq_err_entry err;
	struct fi_cq_data_entry rc;
	char rbuf[32], rbuf2[32], sbuf[32] = "after cancel";
	int rctx, rctx2;

	pt_pair_open(&p);
	memset(rbuf, 'Z', sizeof(rbuf));
	cr_assert_eq(fi_recv(p.b.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, &rctx), 0);
	cr_assert_eq(fi_cancel(&p.b.ep->fid, &rctx), 0);
	err = err_one(p.b.rx_cq);
	cr_expect_eq(err.err, FI_ECANCELED, "err %d", err.err);
	cr_expect_eq(err.op_context, &rctx);
	pt_cq_expect_empty(p.b.rx_cq);
	/* the canceled buffer is no longer used: the next message goes to the next receive */
	cr_assert_eq(fi_recv(p.b.ep, rbuf2, sizeof(rbuf2), NULL, FI_ADDR_UNSPEC, &rctx2), 0);
	cr_assert_eq(fi_send(p.a.ep, sbuf, sizeof(sbuf), NULL, p.a.peer, NULL), 0);
	rc = rx_one(&p.b);
	cr_expect_eq(rc.op_context, &rctx2);
	cr_expect_str_eq(rbuf2, "after cancel");
	for (size_t i = 0; i < sizeof(rbuf); i++)
		cr_expect_eq(rbuf[i], 'Z', "canceled buffer written at %zu", i);
	pt_pair_close(&p);
}

/* Counters bound with FI_SEND / FI_RECV count sends and receives next to the CQ entries. */
Test(fi_cntr_read, dgram_send_recv)
{
	struct pt_pair p;
	char sbuf[16] = "count", rbuf[5][16];
	long deadline;
	int i;

	pt_pair_open_opts(&p, 0, FI_CQ_FORMAT_DATA, FI_WAIT_NONE, true);
	for (i = 0; i < 5; i++)
		cr_assert_eq(fi_recv(p.b.ep, rbuf[i], sizeof(rbuf[i]), NULL, FI_ADDR_UNSPEC, NULL), 0);
	cr_assert_eq(fi_send(p.a.ep, sbuf, sizeof(sbuf), NULL, p.a.peer, NULL), 0);
	cr_assert_eq(fi_senddata(p.a.ep, sbuf, sizeof(sbuf), NULL, 1, p.a.peer, NULL), 0);
	cr_assert_eq(fi_inject(p.a.ep, sbuf, sizeof(sbuf), p.a.peer), 0);
	for (i = 0; i < 3; i++)
		rx_one(&p.b);
	deadline = pt_now_ms() + PT_POLL_MS;
	while (fi_cntr_read(p.a.tx_cntr) < 3 && pt_now_ms() < deadline)
		;
	cr_expect_eq(fi_cntr_read(p.a.tx_cntr), 3);
	cr_expect_eq(fi_cntr_read(p.b.rx_cntr), 3);
	cr_expect_eq(fi_cntr_read(p.a.rx_cntr), 0);
	cr_expect_eq(fi_cntr_read(p.b.tx_cntr), 0);
	pt_pair_close(&p);
}

/* fi_endpoint(3) FI_SELECTIVE_COMPLETION: "data transfer operations will not generate CQ
 * entries for successful completions unless FI_COMPLETION is set as an operational flag". */
Test(fi_sendmsg, selective_completion_tx)
{
	struct pt_dom d;
	struct pt_ep a, b;
	struct fi_cq_data_entry tc;
	char sbuf[16] = "sel", rbuf[3][16];
	struct iovec siov = { sbuf, sizeof(sbuf) };
	int c1, c2, c3;
	struct fi_msg smsg = { .msg_iov = &siov, .iov_count = 1, .context = &c2 };
	uint64_t flags;
	int i;

	pt_dom_open(&d);
	pt_ep_create(&d, &a, NULL);
	pt_ep_create(&d, &b, NULL);
	pt_ep_bind_cqs(&d, &a, FI_CQ_FORMAT_DATA, FI_WAIT_NONE, FI_SELECTIVE_COMPLETION, 0);
	pt_ep_bind_cqs(&d, &b, FI_CQ_FORMAT_DATA, FI_WAIT_NONE, 0, 0);
	a.tx_cntr = pt_cntr_open(d.domain, FI_WAIT_NONE);
	cr_assert_eq(fi_ep_bind(a.ep, &a.tx_cntr->fid, FI_SEND), 0);
	pt_ep_connect(&a, &b);
	pt_ep_enable(&a);
	pt_ep_enable(&b);
	smsg.addr = a.peer;
	for (i = 0; i < 3; i++)
		cr_assert_eq(fi_recv(b.ep, rbuf[i], sizeof(rbuf[i]), NULL, FI_ADDR_UNSPEC, NULL), 0);

	cr_assert_eq(fi_send(a.ep, sbuf, sizeof(sbuf), NULL, a.peer, &c1), 0);
	cr_assert_eq(fi_sendmsg(a.ep, &smsg, FI_COMPLETION), 0);
	memset(&tc, 0, sizeof(tc));
	cr_assert_eq(pt_cq_poll(a.tx_cq, &tc, NULL, NULL), 1);
	cr_expect_eq(tc.op_context, &c2, "the completion is not the FI_COMPLETION send's");
	pt_cq_expect_empty(a.tx_cq);

	/* FI_COMPLETION as the endpoint's default transmit flag: fi_send completes too */
	flags = FI_TRANSMIT | FI_COMPLETION;
	cr_assert_eq(fi_control(&a.ep->fid, FI_SETOPSFLAG, &flags), 0);
	cr_assert_eq(fi_send(a.ep, sbuf, sizeof(sbuf), NULL, a.peer, &c3), 0);
	memset(&tc, 0, sizeof(tc));
	cr_assert_eq(pt_cq_poll(a.tx_cq, &tc, NULL, NULL), 1);
	cr_expect_eq(tc.op_context, &c3);
	cr_expect_eq(fi_cntr_read(a.tx_cntr), 3, "all three sends are counted");
	for (i = 0; i < 3; i++)
		rx_one(&b);
	pt_ep_close(&a);
	pt_ep_close(&b);
	pt_dom_close(&d);
}

Test(fi_recvmsg, selective_completion_rx)
{
	struct pt_dom d;
	struct pt_ep a, b;
	struct fi_cq_data_entry rc;
	char s1[16] = "first", s2[16] = "second", r1[16], r2[16];
	struct iovec riov = { r2, sizeof(r2) };
	int c1, c2;
	struct fi_msg rmsg = { .msg_iov = &riov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
			       .context = &c2 };
	long deadline;

	pt_dom_open(&d);
	pt_ep_create(&d, &a, NULL);
	pt_ep_create(&d, &b, NULL);
	pt_ep_bind_cqs(&d, &a, FI_CQ_FORMAT_DATA, FI_WAIT_NONE, 0, 0);
	pt_ep_bind_cqs(&d, &b, FI_CQ_FORMAT_DATA, FI_WAIT_NONE, 0, FI_SELECTIVE_COMPLETION);
	b.rx_cntr = pt_cntr_open(d.domain, FI_WAIT_NONE);
	cr_assert_eq(fi_ep_bind(b.ep, &b.rx_cntr->fid, FI_RECV), 0);
	pt_ep_connect(&a, &b);
	pt_ep_enable(&a);
	pt_ep_enable(&b);
	/* one receive without a completion, then one with */
	cr_assert_eq(fi_recv(b.ep, r1, sizeof(r1), NULL, FI_ADDR_UNSPEC, &c1), 0);
	cr_assert_eq(fi_send(a.ep, s1, sizeof(s1), NULL, a.peer, NULL), 0);
	deadline = pt_now_ms() + PT_POLL_MS;
	while (fi_cntr_read(b.rx_cntr) < 1 && pt_now_ms() < deadline)
		;
	cr_assert_eq(fi_cntr_read(b.rx_cntr), 1, "first message not received");
	cr_expect_str_eq(r1, "first");
	pt_cq_expect_empty(b.rx_cq);
	cr_assert_eq(fi_recvmsg(b.ep, &rmsg, FI_COMPLETION), 0);
	cr_assert_eq(fi_send(a.ep, s2, sizeof(s2), NULL, a.peer, NULL), 0);
	rc = rx_one(&b);
	cr_expect_eq(rc.op_context, &c2);
	cr_expect_str_eq(r2, "second");
	pt_cq_expect_empty(b.rx_cq);
	pt_ep_close(&a);
	pt_ep_close(&b);
	pt_dom_close(&d);
}

/* fi_msg(3) FI_MORE: a batch of sends flagged FI_MORE, closed by one without, all go. */
Test(fi_sendmsg, more_batch)
{
	enum { N = 6 };
	struct pt_pair p;
	struct fi_cq_data_entry c;
	char sbuf[N][32], rbuf[N][32];
	struct iovec siov[N];
	struct fi_msg smsg[N];
	int sctx[N], rctx[N], seen_tx[N] = { 0 }, seen_rx[N] = { 0 };
	int i, k;

	pt_pair_open(&p);
	for (i = 0; i < N; i++) {
		cr_assert_eq(fi_recv(p.b.ep, rbuf[i], sizeof(rbuf[i]), NULL, FI_ADDR_UNSPEC, &rctx[i]), 0);
		snprintf(sbuf[i], sizeof(sbuf[i]), "batch message %d", i);
		siov[i].iov_base = sbuf[i];
		siov[i].iov_len = sizeof(sbuf[i]);
		memset(&smsg[i], 0, sizeof(smsg[i]));
		smsg[i].msg_iov = &siov[i];
		smsg[i].iov_count = 1;
		smsg[i].addr = p.a.peer;
		smsg[i].context = &sctx[i];
	}
	for (i = 0; i < N; i++)
		cr_assert_eq(fi_sendmsg(p.a.ep, &smsg[i], i < N - 1 ? FI_MORE : 0), 0, "send %d", i);
	for (i = 0; i < N; i++) {
		c = tx_one(&p.a);
		k = (int)((int *)c.op_context - sctx);
		cr_assert(k >= 0 && k < N, "unknown send context");
		seen_tx[k]++;
		c = rx_one(&p.b);
		k = (int)((int *)c.op_context - rctx);
		cr_assert(k >= 0 && k < N, "unknown receive context");
		seen_rx[k]++;
	}
	for (i = 0; i < N; i++) {
		cr_expect_eq(seen_tx[i], 1, "send %d completed %d times", i, seen_tx[i]);
		cr_expect_eq(seen_rx[i], 1, "receive %d completed %d times", i, seen_rx[i]);
	}
	/* every message arrived once, whatever the receive it landed in */
	for (i = 0; i < N; i++) {
		int found = 0;

		for (k = 0; k < N; k++)
			found += !strcmp(rbuf[k], sbuf[i]);
		cr_expect_eq(found, 1, "message %d delivered %d times", i, found);
	}
	pt_pair_close(&p);
}

Test(fi_send, max_msg_size)
{
	struct pt_pair p;
	struct fi_cq_data_entry rc;
	size_t max;
	char *sbuf, *rbuf;

	pt_pair_open(&p);
	max = p.d.info->ep_attr->max_msg_size;
	cr_assert_gt(max, 0);
	sbuf = malloc(max + 1);
	rbuf = calloc(1, max + 1);
	cr_assert(sbuf && rbuf);
	fill(sbuf, max + 1, 13);
	/* fi_errno(3) FI_EMSGSIZE: "Message too long" */
	cr_expect_eq(fi_send(p.a.ep, sbuf, max + 1, NULL, p.a.peer, NULL), -FI_EMSGSIZE);
	pt_cq_expect_empty(p.a.tx_cq);
	/* exactly max_msg_size goes through */
	cr_assert_eq(fi_recv(p.b.ep, rbuf, max + 1, NULL, FI_ADDR_UNSPEC, NULL), 0);
	cr_assert_eq(pt_send(&p.a, sbuf, max, NULL), 0);
	rc = rx_one(&p.b);
	cr_expect_eq(rc.len, max);
	cr_expect_arr_eq(rbuf, sbuf, max);
	free(sbuf);
	free(rbuf);
	pt_pair_close(&p);
}

Test(fi_send, addr_not_in_av)
{
	struct pt_pair p;
	char buf[8] = "lost";
	fi_addr_t gone;
	struct sockaddr_in other = pt_sin("127.0.0.1", 9);

	pt_pair_open(&p);
	cr_expect_eq(fi_send(p.a.ep, buf, sizeof(buf), NULL, 12345, NULL), -FI_EINVAL);
	cr_expect_eq(fi_send(p.a.ep, buf, sizeof(buf), NULL, FI_ADDR_NOTAVAIL, NULL), -FI_EINVAL);
	cr_expect_eq(fi_inject(p.a.ep, buf, sizeof(buf), 12345), -FI_EINVAL);
	/* a removed address is no longer usable */
	cr_assert_eq(fi_av_insert(p.a.av, &other, 1, &gone, 0, NULL), 1);
	cr_assert_eq(fi_av_remove(p.a.av, &gone, 1, 0), 0);
	cr_expect_eq(fi_send(p.a.ep, buf, sizeof(buf), NULL, gone, NULL), -FI_EINVAL);
	pt_cq_expect_empty(p.a.tx_cq);
	pt_pair_close(&p);
}

/* A send the network refuses (broadcast without SO_BROADCAST: EACCES) is reported: either
 * by the call or by an error completion carrying the operation's context. */
Test(fi_send, network_error_reported)
{
	struct pt_pair p;
	struct sockaddr_in bcast = pt_sin("255.255.255.255", 9);
	struct fi_cq_err_entry err;
	char buf[8] = "bcast";
	fi_addr_t fa;
	ssize_t ret;
	int ctx;

	pt_pair_open(&p);
	cr_assert_eq(fi_av_insert(p.a.av, &bcast, 1, &fa, 0, NULL), 1);
	ret = fi_send(p.a.ep, buf, sizeof(buf), NULL, fa, &ctx);
	if (ret == 0) {
		err = err_one(p.a.tx_cq);
		cr_expect_eq(err.op_context, &ctx);
		cr_expect_gt(err.err, 0);
	} else {
		cr_expect_lt(ret, 0);
		cr_expect_neq(ret, -FI_EAGAIN);
		pt_cq_expect_empty(p.a.tx_cq);
	}
	pt_pair_close(&p);
}

/* fi_cq(3): "error completions are generated for all operations, including those for which a
 * completion was not requested"; fi_msg(3) fi_inject writes no CQ entry only "if the transfer
 * completes successfully". */
Test(fi_inject, network_error_reported)
{
	struct pt_pair p;
	struct sockaddr_in bcast = pt_sin("255.255.255.255", 9);
	char buf[8] = "bcast";
	fi_addr_t fa;
	ssize_t ret;

	pt_pair_open(&p);
	cr_assert_eq(fi_av_insert(p.a.av, &bcast, 1, &fa, 0, NULL), 1);
	ret = fi_inject(p.a.ep, buf, sizeof(buf), fa);
	if (ret == 0) {
		struct fi_cq_data_entry c;
		struct fi_cq_err_entry err;

		ret = pt_cq_poll(p.a.tx_cq, &c, NULL, NULL);
		cr_expect_eq(ret, -FI_EAVAIL, "failed fi_inject: fi_cq_read = %zd, no error entry", ret);
		if (ret == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			cr_expect_eq(fi_cq_readerr(p.a.tx_cq, &err, 0), 1);
			cr_expect_gt(err.err, 0);
		}
	} else {
		cr_expect_lt(ret, 0);
		cr_expect_neq(ret, -FI_EAGAIN);
	}
	pt_pair_close(&p);
}

static int udp_socket_lo(void)
{
	struct sockaddr_in sin = pt_sin("127.0.0.1", 0);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
}

static void send_foreign(int fd, const struct sockaddr_in *to, const void *buf, size_t len)
{
	cr_assert_eq(sendto(fd, buf, len, 0, (const struct sockaddr *)to, sizeof(*to)), (ssize_t)len);
}

/* Datagrams that are not braid's are dropped: the posted receive stays posted and the next
 * real message completes it. */
Test(fi_recv, foreign_datagram_dropped)
{
	struct pt_pair p;
	struct fi_cq_data_entry rc;
	char junk[64], sbuf[24] = "the real one", rbuf[128];
	int fd, rctx;

	pt_pair_open(&p);
	fd = udp_socket_lo();
	memset(junk, 0x5a, sizeof(junk));
	cr_assert_eq(fi_recv(p.b.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, &rctx), 0);
	send_foreign(fd, &p.b.name, junk, sizeof(junk));
	send_foreign(fd, &p.b.name, junk, 3);
	send_foreign(fd, &p.b.name, junk, 0);
	/* nothing completes for them */
	pt_cq_expect_empty(p.b.rx_cq);
	cr_assert_eq(fi_send(p.a.ep, sbuf, sizeof(sbuf), NULL, p.a.peer, NULL), 0);
	rc = rx_one(&p.b);
	cr_expect_eq(rc.op_context, &rctx);
	cr_expect_eq(rc.len, sizeof(sbuf));
	cr_expect_arr_eq(rbuf, sbuf, sizeof(sbuf));
	pt_cq_expect_empty(p.b.rx_cq);
	close(fd);
	pt_pair_close(&p);
}

/* fi_msg(3) fi_recv: "Posted receives are searched in the order in which they were posted in
 * order to match sends." A dropped foreign datagram must not make a later receive match
 * before an earlier one. Both datagrams are queued before the receiver progresses. */
Test(fi_recv, foreign_datagram_keeps_posting_order)
{
	struct pt_pair p;
	struct fi_cq_data_entry rc;
	char junk[64], s1[16] = "one", s2[16] = "two", r1[64], r2[64];
	int fd, c1, c2;

	pt_pair_open(&p);
	fd = udp_socket_lo();
	memset(junk, 0x5a, sizeof(junk));
	memset(r2, 0, sizeof(r2));
	cr_assert_eq(fi_recv(p.b.ep, r1, sizeof(r1), NULL, FI_ADDR_UNSPEC, &c1), 0);
	cr_assert_eq(fi_recv(p.b.ep, r2, sizeof(r2), NULL, FI_ADDR_UNSPEC, &c2), 0);
	send_foreign(fd, &p.b.name, junk, sizeof(junk));
	cr_assert_eq(fi_send(p.a.ep, s1, sizeof(s1), NULL, p.a.peer, NULL), 0);
	rc = rx_one(&p.b);
	cr_expect_eq(rc.op_context, &c1, "the first message completed the second posted receive");
	pt_cq_expect_empty(p.b.rx_cq);
	cr_assert_eq(fi_send(p.a.ep, s2, sizeof(s2), NULL, p.a.peer, NULL), 0);
	rc = rx_one(&p.b);
	cr_expect_eq(rc.op_context, &c2);
	cr_expect_str_eq(r1, "one");
	cr_expect_str_eq(r2, "two");
	close(fd);
	pt_pair_close(&p);
}

/* A braid-looking datagram with a bad header (unknown version) is dropped as well. */
Test(fi_recv, bad_header_dropped)
{
	struct pt_pair p;
	struct fi_cq_data_entry rc;
	/* magic 0xbd, version 99, type 1, flags 0, port, hdr_len 16, data */
	unsigned char bad[32] = { 0xbd, 99, 1, 0, 0, 0, 0, 16 };
	char sbuf[16] = "good", rbuf[64];
	int fd, rctx;

	pt_pair_open(&p);
	fd = udp_socket_lo();
	cr_assert_eq(fi_recv(p.b.ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, &rctx), 0);
	send_foreign(fd, &p.b.name, bad, sizeof(bad));
	pt_cq_expect_empty(p.b.rx_cq);
	cr_assert_eq(fi_send(p.a.ep, sbuf, sizeof(sbuf), NULL, p.a.peer, NULL), 0);
	rc = rx_one(&p.b);
	cr_expect_eq(rc.op_context, &rctx);
	cr_expect_eq(rc.len, sizeof(sbuf));
	cr_expect_str_eq(rbuf, "good");
	close(fd);
	pt_pair_close(&p);
}

/* fi_domain(3) resource management, DGRAM with FI_RM_ENABLED: "Rx Ctx ... EAGAIN". */
Test(fi_recv, rx_queue_full)
{
	struct pt_dom d;
	struct pt_ep e;
	struct fi_info *info;
	char buf[4][8];
	int i;

	pt_dom_open(&d);
	info = fi_dupinfo(d.info);
	cr_assert_not_null(info);
	info->rx_attr->size = 4;
	pt_ep_create(&d, &e, info);
	pt_ep_bind_cqs(&d, &e, FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, 0, 0);
	pt_ep_enable(&e);
	for (i = 0; i < 4; i++)
		cr_assert_eq(fi_recv(e.ep, buf[i], sizeof(buf[i]), NULL, FI_ADDR_UNSPEC, NULL), 0, "recv %d", i);
	cr_expect_eq(fi_recv(e.ep, buf[0], sizeof(buf[0]), NULL, FI_ADDR_UNSPEC, NULL), -FI_EAGAIN);
	fi_freeinfo(info);
	pt_ep_close(&e);
	pt_dom_close(&d);
}

struct sender_arg {
	struct pt_ep *e;
	int id, count;
	int failures;
};

static void *sender_thread(void *p)
{
	struct sender_arg *a = p;
	char buf[32];

	for (int i = 0; i < a->count; i++) {
		memset(buf, 0, sizeof(buf));
		snprintf(buf, sizeof(buf), "t%d m%d", a->id, i);
		if (fi_inject(a->e->ep, buf, sizeof(buf), a->e->peer))
			a->failures++;
	}
	return NULL;
}

/* The domain is FI_THREAD_SAFE: two threads sending at once lose and mix up nothing. */
Test(fi_inject, concurrent_threads, .timeout = 30)
{
	enum { PER = 50, THREADS = 2 };
	static char rbuf[THREADS * PER][32];
	struct sender_arg args[THREADS];
	pthread_t t[THREADS];
	struct pt_pair p;
	int i, k, seen[THREADS][PER];

	pt_pair_open(&p);
	cr_assert_eq(p.d.info->domain_attr->threading, FI_THREAD_SAFE);
	for (i = 0; i < THREADS * PER; i++)
		cr_assert_eq(fi_recv(p.b.ep, rbuf[i], sizeof(rbuf[i]), NULL, FI_ADDR_UNSPEC, rbuf[i]), 0);
	for (i = 0; i < THREADS; i++) {
		args[i] = (struct sender_arg){ .e = &p.a, .id = i, .count = PER };
		cr_assert_eq(pthread_create(&t[i], NULL, sender_thread, &args[i]), 0);
	}
	for (i = 0; i < THREADS; i++) {
		cr_assert(pt_join_within(t[i], NULL, NULL), "sender %d stuck", i);
		cr_expect_eq(args[i].failures, 0, "sender %d: %d fi_inject failures", i, args[i].failures);
	}
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < THREADS * PER; i++) {
		struct fi_cq_data_entry c = rx_one(&p.b);
		int tid, mid;

		cr_assert_eq(sscanf(c.op_context, "t%d m%d", &tid, &mid), 2,
			     "garbled message \"%.32s\"", (char *)c.op_context);
		cr_assert(tid >= 0 && tid < THREADS && mid >= 0 && mid < PER);
		seen[tid][mid]++;
	}
	for (i = 0; i < THREADS; i++)
		for (k = 0; k < PER; k++)
			cr_expect_eq(seen[i][k], 1, "t%d m%d received %d times", i, k, seen[i][k]);
	pt_pair_close(&p);
}
