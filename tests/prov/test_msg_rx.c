/* SPDX-License-Identifier: BSD-2-Clause */
/* test_msg_rx.c: the receive side of FI_EP_MSG through the public API: multi-receive buffers, tagged messages (braid's message header over RC), unexpected messages, FI_PEEK/FI_CLAIM/FI_DISCARD, fi_cancel. */
#include "prov_test.h"
#include "msg_pair.h"

#include <rdma/fi_tagged.h>

static char ctx_a, ctx_b, ctx_c, ctx_d, ctx_tx;

/* both ends connected, endpoints of @caps, CQs of the tagged format */
static void rx_pair(struct mpair *p, uint64_t caps)
{
	pair_open_full(p, caps, FI_CONTEXT, false, FI_CQ_FORMAT_TAGGED);
	pair_connect(p, "c", "s", NULL);
}

/* the server's next receive completion, which must be a success */
static struct fi_cq_tagged_entry rx_ok(struct mpair *p)
{
	struct fi_cq_tagged_entry e = { 0 };
	ssize_t ret = cq_one(p->scq, p->ccq, &e);

	if (ret == -FI_EAVAIL) {
		struct fi_cq_err_entry err = cq_err(p->scq);

		cr_assert_fail("error completion %d (%s)", err.err, fi_strerror(err.err));
	}
	cr_assert_eq(ret, 1, "fi_cq_read = %zd (%s)", ret, fi_strerror((int)-ret));
	return e;
}

/* the server's next receive completion, which must be an error */
static struct fi_cq_err_entry rx_err(struct mpair *p)
{
	struct fi_cq_tagged_entry e;

	cr_assert_eq(cq_one(p->scq, p->ccq, &e), -FI_EAVAIL);
	return cq_err(p->scq);
}

/* the client's next send completion */
static void tx_ok(struct mpair *p)
{
	struct fi_cq_tagged_entry e;

	cr_assert_eq(cq_one(p->ccq, p->scq, &e), 1, "a send completes");
	cr_assert(e.flags & FI_SEND);
}

static bool same_fill(const uint8_t *b, size_t n, unsigned seed)
{
	static uint8_t ref[1 << 20];

	cr_assert_leq(n, sizeof(ref));
	fill(ref, n, seed);
	return memcmp(b, ref, n) == 0;
}

/* the client sends @n bytes of @seed, tagged @tag (~0: untagged), and sees it complete */
static void send_fill(struct mpair *p, size_t n, unsigned seed, uint64_t tag)
{
	static uint8_t tx[1 << 20];

	fill(tx, n, seed);
	if (tag == ~0ULL)
		cr_assert_eq(fi_send(p->cep, tx, n, NULL, 0, &ctx_tx), 0);
	else
		cr_assert_eq(fi_tsend(p->cep, tx, n, NULL, 0, tag, &ctx_tx), 0);
	tx_ok(p);
}

static void post_multi(struct mpair *p, void *buf, size_t len, void *context)
{
	struct iovec iov = { buf, len };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .context = context };

	cr_assert_eq(fi_recvmsg(p->sep, &msg, FI_MULTI_RECV), 0);
}

static void set_min_multi(struct mpair *p, size_t min)
{
	cr_assert_eq(fi_setopt(&p->sep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min,
			       sizeof(min)), 0);
}

/* ---- fi_getinfo ---- */

Test(fi_getinfo, msg_offers_multi_recv_and_tagged_when_asked)
{
	struct fi_info *hints = pt_hints(FI_EP_MSG), *info = NULL;

	cr_assert_eq(fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &info), 0);
	cr_assert(info->caps & FI_MULTI_RECV);
	cr_assert_eq(info->caps & FI_TAGGED, 0, "a tagged connection only when asked for");
	fi_freeinfo(info);
	info = NULL;
	hints->caps = FI_TAGGED;
	hints->rx_attr->op_flags = FI_MULTI_RECV;
	cr_assert_eq(fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &info), 0);
	cr_assert(pt_is_plain_braid(info));
	cr_assert(info->caps & FI_TAGGED);
	cr_assert(info->tx_attr->caps & FI_TAGGED);
	cr_assert(info->rx_attr->caps & FI_TAGGED);
	cr_assert_eq(info->rx_attr->op_flags, FI_MULTI_RECV);
	cr_assert_neq(info->ep_attr->mem_tag_format, 0);
	fi_freeinfo(info);
	info = NULL;
	/* a shared receive context holds untagged receives only */
	hints->rx_attr->op_flags = 0;
	hints->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	cr_assert_eq(fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &info), -FI_ENODATA);
	fi_freeinfo(hints);
}

Test(fi_ep_bind, shared_receive_context_refuses_a_tagged_endpoint)
{
	struct fi_info *info = msg_info_caps(FI_MSG | FI_TAGGED, FI_CONTEXT);
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *srx, *ep;

	cr_assert_eq(fi_fabric(info->fabric_attr, &fabric, NULL), 0);
	cr_assert_eq(fi_domain(fabric, info, &domain, NULL), 0);
	cr_assert_eq(fi_srx_context(domain, NULL, &srx, NULL), 0);
	cr_assert_eq(fi_endpoint(domain, info, &ep, NULL), 0);
	cr_assert_eq(fi_ep_bind(ep, &srx->fid, 0), -FI_EOPNOTSUPP);
	cr_assert_eq(fi_close(&ep->fid), 0);
	cr_assert_eq(fi_close(&srx->fid), 0);
	cr_assert_eq(fi_close(&domain->fid), 0);
	cr_assert_eq(fi_close(&fabric->fid), 0);
	fi_freeinfo(info);
}

/* ---- multi-receive buffers (fi_msg(3) FI_MULTI_RECV, fi_cq(3)) ---- */

/*
 * One buffer takes message after message, each completion pointing at its
 * place in it; the one after which less than FI_OPT_MIN_MULTI_RECV is left
 * carries FI_MULTI_RECV: the buffer is the application's again.
 */
Test(fi_recvmsg, multi_recv_packs_messages_and_hands_the_buffer_back, .timeout = 60)
{
	static uint8_t buf[1000];
	struct fi_cq_tagged_entry e;
	size_t got = 0, len = sizeof(got), min = 100;
	struct mpair p;
	int i;

	rx_pair(&p, FI_MSG | FI_MULTI_RECV);
	cr_assert_eq(fi_getopt(&p.sep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &got, &len), 0);
	cr_assert_eq(got, 64, "the default floor");
	cr_assert_eq(fi_setopt(&p.sep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, 4),
		     -FI_EINVAL);
	set_min_multi(&p, 100);
	cr_assert_eq(fi_getopt(&p.sep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &got, &len), 0);
	cr_assert_eq(got, 100);
	post_multi(&p, buf, sizeof(buf), &ctx_a);
	for (i = 0; i < 10; i++) {
		send_fill(&p, 100, 10 + i, ~0ULL);
		e = rx_ok(&p);
		cr_assert_eq(e.op_context, &ctx_a);
		cr_assert_eq(e.buf, buf + 100 * i, "message %d at %p, not %p", i, e.buf,
			     (void *)(buf + 100 * i));
		cr_assert_eq(e.len, 100);
		cr_assert_eq(e.flags & (FI_MSG | FI_RECV), FI_MSG | FI_RECV);
		cr_assert_eq(!!(e.flags & FI_MULTI_RECV), i == 9,
			     "released after the tenth message (0 bytes left < 100)");
		cr_assert(same_fill(e.buf, 100, 10 + i));
	}
	pair_close(&p);
}

/*
 * Posting order holds across kinds: a receive, a multi-receive buffer, a
 * receive; the buffer takes messages until it is released, then the next
 * receive takes the next message.
 */
Test(fi_recvmsg, multi_recv_keeps_the_posting_order_with_plain_receives, .timeout = 60)
{
	static uint8_t r1[100], mb[250], r2[100];
	struct fi_cq_tagged_entry e;
	struct mpair p;

	rx_pair(&p, FI_MSG | FI_MULTI_RECV);
	set_min_multi(&p, 100);
	cr_assert_eq(fi_recv(p.sep, r1, sizeof(r1), NULL, 0, &ctx_a), 0);
	post_multi(&p, mb, sizeof(mb), &ctx_b);
	cr_assert_eq(fi_recv(p.sep, r2, sizeof(r2), NULL, 0, &ctx_c), 0);
	send_fill(&p, 100, 1, ~0ULL);
	e = rx_ok(&p);
	cr_assert_eq(e.op_context, &ctx_a);
	cr_assert_eq(e.flags & FI_MULTI_RECV, 0);
	send_fill(&p, 100, 2, ~0ULL);
	e = rx_ok(&p);
	cr_assert_eq(e.op_context, &ctx_b);
	cr_assert_eq(e.buf, mb);
	cr_assert_eq(e.flags & FI_MULTI_RECV, 0, "150 bytes left");
	send_fill(&p, 100, 3, ~0ULL);
	e = rx_ok(&p);
	cr_assert_eq(e.op_context, &ctx_b);
	cr_assert_eq(e.buf, mb + 100);
	cr_assert(e.flags & FI_MULTI_RECV, "50 bytes left: released");
	send_fill(&p, 100, 4, ~0ULL);
	e = rx_ok(&p);
	cr_assert_eq(e.op_context, &ctx_c);
	cr_assert(same_fill(r1, 100, 1) && same_fill(mb, 100, 2) && same_fill(mb + 100, 100, 3) &&
		  same_fill(r2, 100, 4));
	pair_close(&p);
}

/*
 * A message longer than what is left of a buffer does not go into it: the
 * buffer is handed back first (a completion with FI_MULTI_RECV and no
 * FI_RECV) and the message takes the next receive, for a one-packet message
 * (its length known) and a longer one alike.
 */
Test(fi_recvmsg, multi_recv_buffer_too_short_for_the_next_message_is_handed_back, .timeout = 60)
{
	static uint8_t mb[300], mb2[10200], r2[8192], r3[8192];
	struct fi_cq_tagged_entry e;
	struct mpair p;

	rx_pair(&p, FI_MSG | FI_MULTI_RECV);
	set_min_multi(&p, 1);
	post_multi(&p, mb, sizeof(mb), &ctx_a);
	cr_assert_eq(fi_recv(p.sep, r2, sizeof(r2), NULL, 0, &ctx_b), 0);
	send_fill(&p, 200, 1, ~0ULL);
	e = rx_ok(&p);
	cr_assert_eq(e.op_context, &ctx_a);
	cr_assert_eq(e.flags & FI_MULTI_RECV, 0);
	send_fill(&p, 200, 2, ~0ULL);
	e = rx_ok(&p);
	cr_assert_eq(e.op_context, &ctx_a);
	cr_assert_eq(e.flags, FI_MULTI_RECV, "the buffer alone, no message");
	cr_assert_eq(e.len, 0);
	e = rx_ok(&p);
	cr_assert_eq(e.op_context, &ctx_b);
	cr_assert_eq(e.len, 200);
	cr_assert(same_fill(r2, 200, 2));
	/* messages of more than one packet: their length is known only at the end */
	set_min_multi(&p, 64);
	post_multi(&p, mb2, sizeof(mb2), &ctx_c);
	cr_assert_eq(fi_recv(p.sep, r3, sizeof(r3), NULL, 0, &ctx_d), 0);
	send_fill(&p, 5000, 3, ~0ULL);
	e = rx_ok(&p);
	cr_assert_eq(e.op_context, &ctx_c);
	cr_assert_eq(e.buf, mb2);
	cr_assert_eq(e.len, 5000);
	send_fill(&p, 5000, 4, ~0ULL);
	e = rx_ok(&p);
	cr_assert_eq(e.buf, mb2 + 5000);
	cr_assert_eq(e.flags & FI_MULTI_RECV, 0, "200 bytes left, more than the floor");
	send_fill(&p, 5000, 5, ~0ULL);
	e = rx_ok(&p);
	cr_assert_eq(e.op_context, &ctx_c);
	cr_assert_eq(e.flags, FI_MULTI_RECV, "200 bytes cannot hold a packet: handed back");
	e = rx_ok(&p);
	cr_assert_eq(e.op_context, &ctx_d);
	cr_assert_eq(e.len, 5000);
	cr_assert(same_fill(mb2, 5000, 3) && same_fill(mb2 + 5000, 5000, 4) &&
		  same_fill(r3, 5000, 5));
	pair_close(&p);
}

/*
 * A message of several packets whose end turns out to pass the end of the
 * buffer (more was left than one packet) is truncated, and the buffer,
 * full, comes back with that message's error completion.
 */
Test(fi_recvmsg, multi_recv_truncates_a_long_message_that_did_not_fit, .timeout = 60)
{
	static uint8_t mb[4500 + 5000];
	struct fi_cq_err_entry err;
	struct fi_cq_tagged_entry e;
	struct mpair p;

	rx_pair(&p, FI_MSG | FI_MULTI_RECV);
	post_multi(&p, mb, sizeof(mb), &ctx_a);
	send_fill(&p, 5000, 1, ~0ULL);
	e = rx_ok(&p);
	cr_assert_eq(e.len, 5000);
	send_fill(&p, 5000, 2, ~0ULL);
	err = rx_err(&p);
	cr_assert_eq(err.err, FI_ETRUNC);
	cr_assert_eq(err.op_context, &ctx_a);
	cr_assert_eq(err.len, 4500);
	cr_assert_eq(err.olen, 500);
	cr_assert(err.flags & FI_MULTI_RECV, "nothing left: the buffer comes back with it");
	cr_assert(same_fill(mb + 5000, 4500, 2));
	pair_close(&p);
}

/* fi_cancel of a posted receive and of a multi-receive buffer, used or not */
Test(fi_cancel, msg_posted_receives_and_multi_recv_buffers, .timeout = 60)
{
	static uint8_t r[64], mb[1000], mb2[1000];
	struct fi_cq_err_entry err;
	struct fi_cq_tagged_entry e;
	struct mpair p;

	rx_pair(&p, FI_MSG | FI_MULTI_RECV);
	cr_assert_eq(fi_recv(p.sep, r, sizeof(r), NULL, 0, &ctx_a), 0);
	cr_assert_eq(fi_cancel(&p.sep->fid, &ctx_a), 0);
	err = rx_err(&p);
	cr_assert_eq(err.err, FI_ECANCELED);
	cr_assert_eq(err.op_context, &ctx_a);
	cr_assert_eq(fi_cancel(&p.sep->fid, &ctx_a), -FI_ENOENT, "gone already");
	/* a buffer never used */
	post_multi(&p, mb, sizeof(mb), &ctx_b);
	cr_assert_eq(fi_cancel(&p.sep->fid, &ctx_b), 0);
	err = rx_err(&p);
	cr_assert_eq(err.err, FI_ECANCELED);
	cr_assert_eq(err.op_context, &ctx_b);
	cr_assert(err.flags & FI_MULTI_RECV, "the buffer is handed back");
	/* a buffer that took a message */
	post_multi(&p, mb2, sizeof(mb2), &ctx_c);
	send_fill(&p, 100, 7, ~0ULL);
	e = rx_ok(&p);
	cr_assert_eq(e.op_context, &ctx_c);
	cr_assert_eq(e.flags & FI_MULTI_RECV, 0);
	cr_assert_eq(fi_cancel(&p.sep->fid, &ctx_c), 0);
	err = rx_err(&p);
	cr_assert_eq(err.err, FI_ECANCELED);
	cr_assert(err.flags & FI_MULTI_RECV);
	cr_assert_eq(fi_cancel(&p.cep->fid, &ctx_d), -FI_ENOENT);
	pair_close(&p);
}

Test(fi_recvmsg, msg_receive_flags_are_checked)
{
	static uint8_t b[64];
	struct iovec iov[2] = { { b, 32 }, { b + 32, 32 } };
	struct fi_msg msg = { .msg_iov = iov, .iov_count = 2, .context = &ctx_a };
	struct fi_msg_tagged tmsg = { .msg_iov = iov, .iov_count = 1, .context = &ctx_a };
	struct mpair p;

	pair_open_full(&p, FI_MSG | FI_TAGGED, FI_CONTEXT, false, FI_CQ_FORMAT_TAGGED);
	cr_assert_eq(fi_recvmsg(p.cep, &msg, FI_MULTI_RECV), -FI_EINVAL, "not asked for");
	cr_assert_eq(fi_recvmsg(p.cep, &msg, FI_PEEK), -FI_EBADFLAGS, "a tagged flag");
	cr_assert_eq(fi_trecvmsg(p.cep, &tmsg, FI_MULTI_RECV), -FI_EBADFLAGS);
	cr_assert_eq(fi_trecvmsg(p.cep, &tmsg, FI_DISCARD), -FI_EBADFLAGS,
		     "FI_DISCARD goes with FI_PEEK or FI_CLAIM");
	cr_assert_eq(fi_trecvmsg(p.cep, &tmsg, FI_INJECT), -FI_EBADFLAGS);
	cr_assert_eq(fi_recv(p.cep, NULL, 8, NULL, 0, &ctx_a), -FI_EINVAL, "bytes at no address");
	pair_close(&p);
	pair_open_full(&p, FI_MSG | FI_MULTI_RECV, FI_CONTEXT, false, FI_CQ_FORMAT_TAGGED);
	cr_assert_eq(fi_recvmsg(p.cep, &msg, FI_MULTI_RECV), -FI_EINVAL, "one buffer");
	cr_assert_eq(fi_tsend(p.cep, b, 1, NULL, 0, 1, NULL), -FI_ENOSYS, "no FI_TAGGED asked");
	pair_close(&p);
}

/* ---- tagged messages (fi_tagged(3)) ---- */

/* A message takes the first receive, in posting order, whose tag matches but for its ignore bits. */
Test(fi_trecv, msg_matches_by_tag_and_ignore_mask, .timeout = 60)
{
	static uint8_t a[64], b[64], c[64], d[64];
	struct fi_cq_tagged_entry e;
	struct mpair p;

	rx_pair(&p, FI_TAGGED);
	cr_assert_eq(fi_trecv(p.sep, a, sizeof(a), NULL, 0, 0x100, 0xff, &ctx_a), 0);
	cr_assert_eq(fi_trecv(p.sep, b, sizeof(b), NULL, 0, 0x5, 0, &ctx_b), 0);
	send_fill(&p, 40, 1, 0x5);
	e = rx_ok(&p);
	cr_assert_eq(e.op_context, &ctx_b, "0x5 is not 0x1xx");
	cr_assert_eq(e.tag, 0x5);
	cr_assert_eq(e.len, 40);
	cr_assert_eq(e.flags & (FI_TAGGED | FI_RECV | FI_MSG), FI_TAGGED | FI_RECV);
	send_fill(&p, 50, 2, 0x1ab);
	e = rx_ok(&p);
	cr_assert_eq(e.op_context, &ctx_a);
	cr_assert_eq(e.tag, 0x1ab, "the message's tag, not the receive's");
	cr_assert(same_fill(a, 50, 2) && same_fill(b, 40, 1));
	/* two that match: the one posted first */
	cr_assert_eq(fi_trecv(p.sep, c, sizeof(c), NULL, 0, 0x100, 0xff, &ctx_c), 0);
	cr_assert_eq(fi_trecv(p.sep, d, sizeof(d), NULL, 0, 0x1ff, 0, &ctx_d), 0);
	send_fill(&p, 10, 3, 0x1ff);
	cr_assert_eq(rx_ok(&p).op_context, &ctx_c);
	send_fill(&p, 10, 4, 0x1ff);
	cr_assert_eq(rx_ok(&p).op_context, &ctx_d);
	pair_close(&p);
}

/*
 * Messages that arrive before their receive are held and matched when it is
 * posted, whatever the order receives are posted in: large ones (several
 * packets), empty ones and untagged ones on the tagged connection too.
 */
Test(fi_trecv, msg_unexpected_messages_wait_for_their_receive, .timeout = 60)
{
	static uint8_t big[200000], small[100], plain[100];
	struct fi_cq_tagged_entry e;
	struct mpair p;

	rx_pair(&p, FI_MSG | FI_TAGGED);
	send_fill(&p, 100, 1, 1);
	send_fill(&p, sizeof(big), 2, 2);
	send_fill(&p, 0, 3, 3);
	send_fill(&p, 60, 4, ~0ULL);
	/* all four were acknowledged: the server holds them */
	cr_assert_eq(fi_trecv(p.sep, NULL, 0, NULL, 0, 3, 0, &ctx_c), 0);
	e = rx_ok(&p);
	cr_assert_eq(e.op_context, &ctx_c);
	cr_assert_eq(e.len, 0);
	cr_assert_eq(e.tag, 3);
	cr_assert_eq(fi_trecv(p.sep, big, sizeof(big), NULL, 0, 2, 0, &ctx_b), 0);
	e = rx_ok(&p);
	cr_assert_eq(e.op_context, &ctx_b);
	cr_assert_eq(e.len, sizeof(big));
	cr_assert(same_fill(big, sizeof(big), 2));
	cr_assert_eq(fi_recv(p.sep, plain, sizeof(plain), NULL, 0, &ctx_d), 0);
	e = rx_ok(&p);
	cr_assert_eq(e.op_context, &ctx_d);
	cr_assert_eq(e.flags & (FI_MSG | FI_TAGGED), FI_MSG, "an untagged message");
	cr_assert_eq(e.len, 60);
	cr_assert(same_fill(plain, 60, 4));
	cr_assert_eq(fi_trecv(p.sep, small, sizeof(small), NULL, 0, 1, 0, &ctx_a), 0);
	e = rx_ok(&p);
	cr_assert_eq(e.op_context, &ctx_a);
	cr_assert(same_fill(small, 100, 1));
	pair_close(&p);
}

/* Messages of one tag match their receives in the order they were sent (FI_ORDER_SAS). */
Test(fi_trecv, msg_same_tag_matches_in_send_order, .timeout = 60)
{
	static uint8_t r[5][64];
	struct fi_cq_tagged_entry e;
	struct mpair p;
	int i;

	rx_pair(&p, FI_TAGGED);
	cr_assert_eq(fi_trecv(p.sep, r[0], 64, NULL, 0, 7, 0, &ctx_a), 0);
	for (i = 0; i < 5; i++)
		send_fill(&p, 64, 20 + i, 7);
	e = rx_ok(&p);
	cr_assert_eq(e.op_context, &ctx_a);
	for (i = 1; i < 5; i++) {
		cr_assert_eq(fi_trecv(p.sep, r[i], 64, NULL, 0, 7, 0, &ctx_b), 0);
		(void)rx_ok(&p);
	}
	for (i = 0; i < 5; i++)
		cr_assert(same_fill(r[i], 64, 20 + i), "receive %d got message %d", i, i);
	pair_close(&p);
}

/* Remote CQ data travels with a tagged message, received at once or held first. */
Test(fi_tsenddata, msg_carries_cq_data_with_the_tag, .timeout = 60)
{
	static uint8_t tx[32], r[2][32];
	struct fi_cq_tagged_entry e;
	struct mpair p;
	int i;

	rx_pair(&p, FI_TAGGED);
	cr_assert_eq(fi_trecv(p.sep, r[0], 32, NULL, 0, 9, 0, &ctx_a), 0);
	for (i = 0; i < 2; i++) {
		fill(tx, sizeof(tx), 30 + i);
		cr_assert_eq(fi_tsenddata(p.cep, tx, sizeof(tx), NULL, 0xdead0000u + i, 0, 9, &ctx_tx),
			     0);
		tx_ok(&p);
	}
	for (i = 0; i < 2; i++) {
		if (i)
			cr_assert_eq(fi_trecv(p.sep, r[1], 32, NULL, 0, 9, 0, &ctx_b), 0);
		e = rx_ok(&p);
		cr_assert(e.flags & FI_REMOTE_CQ_DATA);
		cr_assert_eq(e.data, 0xdead0000u + i);
		cr_assert_eq(e.tag, 9);
		cr_assert(same_fill(r[i], 32, 30 + i));
	}
	pair_close(&p);
}

/* A receive shorter than its message gets FI_ETRUNC, the tag and the bytes lost. */
Test(fi_trecv, msg_short_receive_truncates, .timeout = 60)
{
	static uint8_t r[2][10];
	struct fi_cq_err_entry err;
	struct mpair p;
	int i;

	rx_pair(&p, FI_TAGGED);
	cr_assert_eq(fi_trecv(p.sep, r[0], 10, NULL, 0, 4, 0, &ctx_a), 0);
	send_fill(&p, 100, 40, 4);
	send_fill(&p, 100, 41, 4);	/* held: no receive yet */
	for (i = 0; i < 2; i++) {
		if (i)
			cr_assert_eq(fi_trecv(p.sep, r[1], 10, NULL, 0, 4, 0, &ctx_b), 0);
		err = rx_err(&p);
		cr_assert_eq(err.err, FI_ETRUNC);
		cr_assert_eq(err.op_context, i ? &ctx_b : &ctx_a);
		cr_assert_eq(err.len, 10);
		cr_assert_eq(err.olen, 90);
		cr_assert_eq(err.tag, 4);
		cr_assert(err.flags & FI_TAGGED);
		cr_assert(same_fill(r[i], 10, 40 + i));
	}
	pair_close(&p);
}

/* fi_tinject: the tag goes, the buffer is free at once, no send completion is written. */
Test(fi_tinject, msg_tagged_inject, .timeout = 60)
{
	static uint8_t tx[16], r[16];
	struct fi_cq_tagged_entry e;
	struct mpair p;

	rx_pair(&p, FI_TAGGED);
	cr_assert_eq(fi_trecv(p.sep, r, sizeof(r), NULL, 0, 0x77, 0, &ctx_a), 0);
	fill(tx, sizeof(tx), 50);
	cr_assert_eq(fi_tinject(p.cep, tx, sizeof(tx), 0, 0x77), 0);
	memset(tx, 0, sizeof(tx));
	e = rx_ok(&p);
	cr_assert_eq(e.tag, 0x77);
	cr_assert(same_fill(r, sizeof(r), 50));
	cr_assert_eq(fi_cq_read(p.ccq, &e, 1), -FI_EAGAIN, "an injected send writes no completion");
	pair_close(&p);
}

/* FI_PEEK, FI_CLAIM and FI_DISCARD among the messages held (fi_tagged(3)). */
Test(fi_trecvmsg, msg_peek_claim_discard, .timeout = 60)
{
	static uint8_t r[64];
	struct iovec iov = { r, sizeof(r) };
	struct fi_msg_tagged m = { .msg_iov = &iov, .iov_count = 1, .tag = 7, .context = &ctx_a };
	struct fi_cq_err_entry err;
	struct fi_cq_tagged_entry e;
	struct mpair p;

	rx_pair(&p, FI_TAGGED);
	m.tag = 8;
	cr_assert_eq(fi_trecvmsg(p.sep, &m, FI_PEEK), 0);
	err = rx_err(&p);
	cr_assert_eq(err.err, FI_ENOMSG, "nothing with tag 8");
	send_fill(&p, 48, 60, 7);
	send_fill(&p, 24, 61, 7);
	m.tag = 7;
	cr_assert_eq(fi_trecvmsg(p.sep, &m, FI_PEEK), 0);
	e = rx_ok(&p);
	cr_assert_eq(e.op_context, &ctx_a);
	cr_assert_eq(e.len, 48, "the first message's length");
	cr_assert_eq(e.tag, 7);
	m.context = &ctx_b;
	cr_assert_eq(fi_trecvmsg(p.sep, &m, FI_PEEK | FI_CLAIM), 0);
	(void)rx_ok(&p);
	/* the claimed one is not matched again: the next peek sees the second */
	m.context = &ctx_c;
	cr_assert_eq(fi_trecvmsg(p.sep, &m, FI_PEEK | FI_DISCARD), 0);
	e = rx_ok(&p);
	cr_assert_eq(e.len, 24, "the second message, now discarded");
	m.context = &ctx_b;
	cr_assert_eq(fi_trecvmsg(p.sep, &m, FI_CLAIM), 0);
	e = rx_ok(&p);
	cr_assert_eq(e.op_context, &ctx_b);
	cr_assert_eq(e.len, 48);
	cr_assert(same_fill(r, 48, 60), "the claimed message lands in the FI_CLAIM receive");
	m.context = &ctx_d;
	cr_assert_eq(fi_trecvmsg(p.sep, &m, FI_PEEK), 0);
	cr_assert_eq(rx_err(&p).err, FI_ENOMSG, "the discarded one is gone");
	pair_close(&p);
}

/*
 * A multi-receive buffer posted on a tagged connection takes the untagged
 * messages held for it, in order, and the tagged ones stay for fi_trecv.
 */
Test(fi_recvmsg, msg_multi_recv_takes_held_untagged_messages, .timeout = 60)
{
	static uint8_t mb[1000], t[64];
	struct fi_cq_tagged_entry e;
	struct mpair p;

	rx_pair(&p, FI_MSG | FI_TAGGED | FI_MULTI_RECV);
	send_fill(&p, 100, 70, ~0ULL);
	send_fill(&p, 30, 71, 5);
	send_fill(&p, 200, 72, ~0ULL);
	post_multi(&p, mb, sizeof(mb), &ctx_a);
	e = rx_ok(&p);
	cr_assert_eq(e.op_context, &ctx_a);
	cr_assert_eq(e.buf, mb);
	cr_assert_eq(e.len, 100);
	e = rx_ok(&p);
	cr_assert_eq(e.buf, mb + 100);
	cr_assert_eq(e.len, 200);
	cr_assert(same_fill(mb, 100, 70) && same_fill(mb + 100, 200, 72));
	cr_assert_eq(fi_trecv(p.sep, t, sizeof(t), NULL, 0, 5, 0, &ctx_b), 0);
	e = rx_ok(&p);
	cr_assert_eq(e.op_context, &ctx_b);
	cr_assert(same_fill(t, 30, 71));
	pair_close(&p);
}

/* A tagged send needs both sides to have asked FI_TAGGED; plain messages go as before. */
Test(fi_tsend, msg_needs_a_tagged_peer, .timeout = 60)
{
	struct fi_info *plain = msg_info_caps(FI_MSG, FI_CONTEXT);
	static uint8_t r[16];
	struct fi_cq_tagged_entry e;
	struct mpair p;

	pair_open_full(&p, FI_MSG | FI_TAGGED, FI_CONTEXT, false, FI_CQ_FORMAT_TAGGED);
	/* the client without FI_TAGGED */
	cr_assert_eq(fi_close(&p.cep->fid), 0);
	cr_assert_eq(fi_endpoint(p.domain, plain, &p.cep, NULL), 0);
	ep_setup(&p, p.cep, p.ceq, p.ccq);
	pair_connect(&p, "c", "s", NULL);
	cr_assert_eq(fi_tsend(p.sep, "x", 1, NULL, 0, 1, NULL), -FI_EOPNOTSUPP);
	cr_assert_eq(fi_recv(p.cep, r, sizeof(r), NULL, 0, &ctx_a), 0);
	cr_assert_eq(fi_send(p.sep, "hello", 6, NULL, 0, &ctx_tx), 0);
	cr_assert_eq(cq_one(p.ccq, p.scq, &e), 1);
	cr_assert_eq(e.op_context, &ctx_a);
	cr_assert_eq(e.len, 6, "no header on a plain connection");
	cr_assert_str_eq((char *)r, "hello");
	pair_close(&p);
	fi_freeinfo(plain);
}

/*
 * Held messages cost bounded memory: with FI_BRAID_UNEXP_BYTES of 64 KiB the
 * sender is told to wait (RNR) once that much is held, and its sends go on
 * as the receiver takes messages.
 */
Test(fi_trecv, msg_held_messages_are_bounded_and_the_sender_waits, .timeout = 60)
{
	static uint8_t r[10][16384];
	static uint8_t tx[10][16384];
	struct fi_cq_tagged_entry e;
	struct mpair p;
	int i, sent = 0, spins;

	setenv("FI_BRAID_UNEXP_BYTES", "65536", 1);
	rx_pair(&p, FI_TAGGED);
	for (i = 0; i < 10; i++) {
		fill(tx[i], sizeof(tx[i]), 80 + i);
		cr_assert_eq(fi_tsend(p.cep, tx[i], sizeof(tx[i]), NULL, 0, 100 + i, &ctx_tx), 0);
	}
	/* four fit; the rest wait however long the receiver is busy elsewhere */
	for (spins = 0; spins < 20000 && sent <= 4; spins++) {
		(void)fi_cq_read(p.scq, NULL, 0);
		if (fi_cq_read(p.ccq, &e, 1) == 1)
			sent++;
		if (sent == 4 && spins > 2000)
			break;
	}
	cr_assert_eq(sent, 4, "%d sends completed while 64 KiB are held", sent);
	for (i = 0; i < 10; i++) {
		cr_assert_eq(fi_trecv(p.sep, r[i], sizeof(r[i]), NULL, 0, 100 + i, 0, &ctx_a), 0);
		e = rx_ok(&p);
		cr_assert_eq(e.tag, 100 + (uint64_t)i);
		cr_assert(same_fill(r[i], sizeof(r[i]), 80 + i));
	}
	while (sent < 10) {
		cr_assert_eq(cq_one(p.ccq, p.scq, &e), 1);
		sent++;
	}
	pair_close(&p);
}
