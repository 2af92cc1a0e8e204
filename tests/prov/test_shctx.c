/* SPDX-License-Identifier: BSD-2-Clause */
/* test_shctx.c: shared contexts (fi_stx_context, fi_srx_context, FI_SHARED_CONTEXT) of RDM, DGRAM and MSG endpoints through the public API. */
#include <rdma/fi_tagged.h>

#include "prov_test.h"

#define NR	2	/* endpoints sharing the contexts (receivers) */
#define NS	2	/* endpoints of their own that talk to them (senders) */
#define SH_EPS	256	/* domain_attr max_ep_stx_ctx and max_ep_srx_ctx */

/*
 * Receivers r[] bound to one shared transmit and/or receive context and one
 * AV, each with a CQ of its own (so where a completion lands shows which
 * endpoint a message reached); senders s[] with contexts, AVs and CQs of
 * their own; all in one domain on 127.0.0.1.
 */
struct sh {
	struct pt_dom d;
	struct fid_stx *stx;
	struct fid_ep *srx;
	struct fid_av *av;
	struct fid_ep *r[NR];
	struct fid_cq *rcq[NR];
	struct sockaddr_in rname[NR];
	struct pt_ep s[NS];
	/** @s_addr: sender i in the receivers' AV; @r_addr: receiver j in sender i's. */
	fi_addr_t s_addr[NS];
	fi_addr_t r_addr[NS][NR];
};

/* braid's own entry of @type for @caps, with shared contexts asked for as said */
static struct fi_info *sh_info(enum fi_ep_type type, uint64_t caps, bool tx_shared,
			       bool rx_shared)
{
	struct fi_info *hints = pt_hints(type), *list = NULL, *info;
	int ret;

	hints->caps = caps;
	hints->addr_format = FI_SOCKADDR_IN;
	if (tx_shared)
		hints->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
	if (rx_shared)
		hints->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	ret = fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &list);
	fi_freeinfo(hints);
	cr_assert_eq(ret, 0, "fi_getinfo(shared contexts) = %d (%s)", ret, fi_strerror(-ret));
	info = pt_take_plain_braid(list);
	cr_assert_eq(info->ep_attr->type, type);
	return info;
}

/* @stx_size, @srx_size: 0 for none of that kind */
static void sh_open(struct sh *h, enum fi_ep_type type, uint64_t caps, size_t stx_size,
		    size_t srx_size, enum fi_wait_obj wait)
{
	struct fi_tx_attr tattr = { .size = stx_size };
	struct fi_rx_attr rattr = { .size = srx_size };
	size_t len;
	int i, j;

	memset(h, 0, sizeof(*h));
	h->d.info = sh_info(type, caps, stx_size, srx_size);
	cr_assert_eq(fi_fabric(h->d.info->fabric_attr, &h->d.fabric, NULL), 0);
	cr_assert_eq(fi_domain(h->d.fabric, h->d.info, &h->d.domain, NULL), 0);
	if (stx_size)
		cr_assert_eq(fi_stx_context(h->d.domain, &tattr, &h->stx, NULL), 0);
	if (srx_size)
		cr_assert_eq(fi_srx_context(h->d.domain, &rattr, &h->srx, NULL), 0);
	h->av = pt_av_open(h->d.domain, FI_AV_TABLE);
	for (i = 0; i < NR; i++) {
		cr_assert_eq(fi_endpoint(h->d.domain, h->d.info, &h->r[i], NULL), 0);
		h->rcq[i] = pt_cq_open(h->d.domain, FI_CQ_FORMAT_TAGGED, wait);
		cr_assert_eq(fi_ep_bind(h->r[i], &h->av->fid, 0), 0);
		if (h->stx)
			cr_assert_eq(fi_ep_bind(h->r[i], &h->stx->fid, 0), 0);
		if (h->srx)
			cr_assert_eq(fi_ep_bind(h->r[i], &h->srx->fid, 0), 0);
		cr_assert_eq(fi_ep_bind(h->r[i], &h->rcq[i]->fid, FI_TRANSMIT | FI_RECV), 0);
		cr_assert_eq(fi_enable(h->r[i]), 0);
		len = sizeof(h->rname[i]);
		cr_assert_eq(fi_getname(&h->r[i]->fid, &h->rname[i], &len), 0);
	}
	for (i = 0; i < NS; i++) {
		pt_ep_create(&h->d, &h->s[i], NULL);
		pt_ep_bind_cqs(&h->d, &h->s[i], FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE, 0, 0);
		pt_ep_enable(&h->s[i]);
		cr_assert_eq(fi_av_insert(h->av, &h->s[i].name, 1, &h->s_addr[i], 0, NULL), 1);
		for (j = 0; j < NR; j++)
			cr_assert_eq(fi_av_insert(h->s[i].av, &h->rname[j], 1, &h->r_addr[i][j], 0,
						  NULL), 1);
	}
}

static void sh_close(struct sh *h)
{
	int i;

	for (i = 0; i < NS; i++)
		pt_ep_close(&h->s[i]);
	for (i = 0; i < NR; i++) {
		if (h->r[i])
			cr_assert_eq(fi_close(&h->r[i]->fid), 0);
		cr_assert_eq(fi_close(&h->rcq[i]->fid), 0);
	}
	/* the endpoints are gone: the contexts close */
	if (h->srx)
		cr_assert_eq(fi_close(&h->srx->fid), 0);
	if (h->stx)
		cr_assert_eq(fi_close(&h->stx->fid), 0);
	cr_assert_eq(fi_close(&h->av->fid), 0);
	pt_dom_close(&h->d);
}

/*
 * One entry of @cq (ms at most), every CQ progressed meanwhile: 1, or
 * -FI_EAVAIL with the error in *@err, or what the last read returned.
 */
static ssize_t sh_wait(struct sh *h, struct fid_cq *cq, struct fi_cq_tagged_entry *e,
		       fi_addr_t *src, struct fi_cq_err_entry *err)
{
	long deadline = pt_now_ms() + 5000;
	ssize_t ret;
	int i;

	do {
		for (i = 0; i < NS; i++) {
			(void)fi_cq_read(h->s[i].tx_cq, NULL, 0);
			(void)fi_cq_read(h->s[i].rx_cq, NULL, 0);
		}
		for (i = 0; i < NR; i++)
			(void)fi_cq_read(h->rcq[i], NULL, 0);
		ret = src ? fi_cq_readfrom(cq, e, 1, src) : fi_cq_read(cq, e, 1);
		if (ret == -FI_EAVAIL) {
			struct fi_cq_err_entry dummy;

			if (!err)
				err = &dummy;
			memset(err, 0, sizeof(*err));
			return fi_cq_readerr(cq, err, 0) == 1 ? -FI_EAVAIL : -FI_EOTHER;
		}
	} while (ret == -FI_EAGAIN && pt_now_ms() < deadline);
	return ret;
}

/* a successful entry of @cq with context @ctx */
static void sh_expect(struct sh *h, struct fid_cq *cq, void *ctx, struct fi_cq_tagged_entry *e,
		      fi_addr_t *src)
{
	struct fi_cq_err_entry err;
	ssize_t ret = sh_wait(h, cq, e, src, &err);

	cr_assert_eq(ret, 1, "completion of %p: %zd (err %d %s)", ctx, ret,
		     ret == -FI_EAVAIL ? err.err : 0, ret == -FI_EAVAIL ? fi_strerror(err.err) : "");
	cr_assert_eq(e->op_context, ctx, "context %p, want %p", e->op_context, ctx);
}

/* an error entry of @cq with context @ctx and error @want */
static struct fi_cq_err_entry sh_expect_err(struct sh *h, struct fid_cq *cq, void *ctx, int want)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	cr_assert_eq(sh_wait(h, cq, &e, NULL, &err), -FI_EAVAIL, "an error entry for %p", ctx);
	cr_assert_eq(err.op_context, ctx);
	cr_assert_eq(err.err, want, "error %d, want %d", err.err, want);
	return err;
}

/* sender @i's send to receiver @j completed */
static void sh_sent(struct sh *h, int i, void *ctx)
{
	struct fi_cq_tagged_entry e;

	sh_expect(h, h->s[i].tx_cq, ctx, &e, NULL);
	cr_assert(e.flags & FI_SEND);
}

#define RDM_CAPS	(FI_MSG | FI_TAGGED | FI_SOURCE | FI_DIRECTED_RECV | FI_MULTI_RECV)

/* ---- fi_getinfo ---- */

static int sh_getinfo(uint32_t version, struct fi_info *hints, struct fi_info **info)
{
	return fi_getinfo(version, "127.0.0.1", "0", FI_SOURCE, hints, info);
}

Test(fi_getinfo, shared_contexts_of_every_endpoint_type)
{
	enum fi_ep_type types[] = { FI_EP_RDM, FI_EP_DGRAM, FI_EP_MSG };
	uint32_t versions[] = { FI_VERSION(1, 9), PT_VERSION };

	for (size_t v = 0; v < sizeof(versions) / sizeof(versions[0]); v++) {
		for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
			struct fi_info *hints = pt_hints(types[t]), *list = NULL, *info;
			int ret;

			hints->caps = FI_MSG;
			hints->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
			hints->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
			hints->domain_attr->max_ep_stx_ctx = SH_EPS;
			hints->domain_attr->max_ep_srx_ctx = SH_EPS;
			ret = sh_getinfo(versions[v], hints, &list);
			cr_assert_eq(ret, 0, "type %d API %x: fi_getinfo = %d", types[t], versions[v],
				     ret);
			info = pt_take_plain_braid(list);
			cr_expect_eq(info->ep_attr->tx_ctx_cnt, FI_SHARED_CONTEXT);
			cr_expect_eq(info->ep_attr->rx_ctx_cnt, FI_SHARED_CONTEXT);
			cr_expect_eq(info->domain_attr->max_ep_stx_ctx, SH_EPS);
			cr_expect_eq(info->domain_attr->max_ep_srx_ctx, SH_EPS);
			fi_freeinfo(info);

			/* more than braid does: no entry */
			hints->domain_attr->max_ep_stx_ctx = SH_EPS + 1;
			cr_expect_eq(sh_getinfo(versions[v], hints, &list), -FI_ENODATA);
			hints->domain_attr->max_ep_stx_ctx = 0;
			hints->domain_attr->max_ep_srx_ctx = SH_EPS + 1;
			cr_expect_eq(sh_getinfo(versions[v], hints, &list), -FI_ENODATA);
			hints->domain_attr->max_ep_srx_ctx = 0;
			hints->ep_attr->tx_ctx_cnt = 2;
			cr_expect_eq(sh_getinfo(versions[v], hints, &list), -FI_ENODATA);
			hints->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
			hints->ep_attr->rx_ctx_cnt = 2;
			cr_expect_eq(sh_getinfo(versions[v], hints, &list), -FI_ENODATA);
			fi_freeinfo(hints);
		}
	}
}

/* without the hints asking, each entry still says what sharing it has, and one context each */
Test(fi_getinfo, shared_context_limits_reported_without_hints)
{
	struct fi_info *hints = pt_hints(FI_EP_UNSPEC), *list = NULL, *cur;
	int n = 0;

	cr_assert_eq(sh_getinfo(PT_VERSION, hints, &list), 0);
	for (cur = list; cur; cur = cur->next) {
		if (!pt_is_plain_braid(cur))
			continue;
		n++;
		cr_expect_eq(cur->domain_attr->max_ep_stx_ctx, SH_EPS);
		cr_expect_eq(cur->domain_attr->max_ep_srx_ctx, SH_EPS);
		cr_expect_eq(cur->ep_attr->tx_ctx_cnt, 1);
		cr_expect_eq(cur->ep_attr->rx_ctx_cnt, 1);
	}
	cr_assert_geq(n, 3, "RDM, DGRAM and MSG entries");
	fi_freeinfo(list);
	fi_freeinfo(hints);
}

/* ---- RDM ---- */

/*
 * Messages from two peers land in the shared receives in the order they were
 * posted, each completing on the CQ of the endpoint it reached, with its
 * source (FI_SOURCE) resolved in the shared AV; the receivers' own sends
 * through the shared transmit context leave from their own addresses and
 * complete on their own CQs.
 */
Test(fi_srx_context, rdm_messages_from_two_peers_complete_where_they_arrived, .timeout = 60)
{
	char buf[2][32] = { { 0 } }, back[32] = { 0 };
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	struct sh h;

	sh_open(&h, FI_EP_RDM, RDM_CAPS, 16, 16, FI_WAIT_NONE);
	cr_assert_eq(fi_recv(h.srx, buf[0], sizeof(buf[0]), NULL, FI_ADDR_UNSPEC, (void *)10), 0);
	cr_assert_eq(fi_recv(h.srx, buf[1], sizeof(buf[1]), NULL, FI_ADDR_UNSPEC, (void *)11), 0);

	cr_assert_eq(fi_send(h.s[0].ep, "s0 to r1", 9, NULL, h.r_addr[0][1], (void *)1), 0);
	sh_expect(&h, h.rcq[1], (void *)10, &e, &src);
	cr_assert(e.flags & FI_RECV && e.flags & FI_MSG);
	cr_assert_eq(e.len, 9);
	cr_assert_str_eq(buf[0], "s0 to r1");
	cr_assert_eq(src, h.s_addr[0], "FI_SOURCE: sender 0 in the shared AV");
	cr_assert_eq(fi_cq_read(h.rcq[0], &e, 1), -FI_EAGAIN, "nothing reached receiver 0");
	sh_sent(&h, 0, (void *)1);

	cr_assert_eq(fi_send(h.s[1].ep, "s1 to r0", 9, NULL, h.r_addr[1][0], (void *)2), 0);
	sh_expect(&h, h.rcq[0], (void *)11, &e, &src);
	cr_assert_str_eq(buf[1], "s1 to r0");
	cr_assert_eq(src, h.s_addr[1]);
	sh_sent(&h, 1, (void *)2);

	/* a receiver sends through the shared transmit context: from its own address */
	cr_assert_eq(fi_recv(h.s[0].ep, back, sizeof(back), NULL, FI_ADDR_UNSPEC, (void *)3), 0);
	cr_assert_eq(fi_send(h.r[1], "r1 back", 8, NULL, h.s_addr[0], (void *)12), 0);
	sh_expect(&h, h.s[0].rx_cq, (void *)3, &e, &src);
	cr_assert_str_eq(back, "r1 back");
	cr_assert_eq(src, h.r_addr[0][1], "it came from receiver 1's address");
	sh_expect(&h, h.rcq[1], (void *)12, &e, NULL);
	cr_assert(e.flags & FI_SEND);
	cr_assert_eq(fi_cq_read(h.rcq[0], &e, 1), -FI_EAGAIN);
	sh_close(&h);
}

/*
 * Tagged matching through the shared context: tags, a directed receive (its
 * source looked up in the shared AV) that a message from another peer passes
 * by, and a receive posted through an endpoint's own fi_trecv, which goes to
 * the shared context and takes the message left unexpected.
 */
Test(fi_srx_context, rdm_tagged_matching_and_directed_receives, .timeout = 60)
{
	char a[32] = { 0 }, b[32] = { 0 }, c[32] = { 0 };
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	struct sh h;

	sh_open(&h, FI_EP_RDM, RDM_CAPS, 16, 16, FI_WAIT_NONE);
	cr_assert_eq(fi_trecv(h.srx, a, sizeof(a), NULL, h.s_addr[1], 0x22, 0, (void *)20), 0);
	cr_assert_eq(fi_trecv(h.srx, b, sizeof(b), NULL, FI_ADDR_UNSPEC, 0x10, 0x0f, (void *)21), 0);

	/* from sender 0 with tag 0x22: the directed receive is sender 1's */
	cr_assert_eq(fi_tsend(h.s[0].ep, "s0 tag 22", 10, NULL, h.r_addr[0][0], 0x22, (void *)1), 0);
	sh_sent(&h, 0, (void *)1);
	cr_assert_eq(fi_tsend(h.s[0].ep, "s0 tag 1x", 10, NULL, h.r_addr[0][1], 0x17, (void *)2), 0);
	sh_expect(&h, h.rcq[1], (void *)21, &e, &src);
	cr_assert(e.flags & FI_TAGGED && e.flags & FI_RECV);
	cr_assert_eq(e.tag, 0x17, "the ignore bits let tag 0x17 match 0x10");
	cr_assert_str_eq(b, "s0 tag 1x");
	cr_assert_eq(src, h.s_addr[0]);
	sh_sent(&h, 0, (void *)2);

	cr_assert_eq(fi_tsend(h.s[1].ep, "s1 tag 22", 10, NULL, h.r_addr[1][1], 0x22, (void *)3), 0);
	sh_expect(&h, h.rcq[1], (void *)20, &e, &src);
	cr_assert_str_eq(a, "s1 tag 22", "the directed receive took sender 1's message");
	cr_assert_eq(src, h.s_addr[1]);
	sh_sent(&h, 1, (void *)3);

	/* receiver 1's own fi_trecv posts to the shared context: it takes the message
	 * left unexpected at receiver 0, which completes there */
	cr_assert_eq(fi_trecv(h.r[1], c, sizeof(c), NULL, FI_ADDR_UNSPEC, 0x22, 0, (void *)22), 0);
	sh_expect(&h, h.rcq[0], (void *)22, &e, &src);
	cr_assert_str_eq(c, "s0 tag 22");
	cr_assert_eq(src, h.s_addr[0]);
	cr_assert_eq(fi_cq_read(h.rcq[1], &e, 1), -FI_EAGAIN);
	sh_close(&h);
}

/*
 * Unexpected messages wait in the shared context until a receive is posted;
 * FI_PEEK, FI_CLAIM and FI_DISCARD look at them wherever they arrived; a
 * multi-receive buffer takes messages for both endpoints.
 */
Test(fi_srx_context, rdm_unexpected_peek_claim_discard_and_multi_recv, .timeout = 60)
{
	char buf[32] = { 0 }, claimed[32] = { 0 }, multi[256] = { 0 };
	struct fi_context peek_ctx, gone_ctx, none_ctx;
	struct iovec iov = { claimed, sizeof(claimed) };
	struct fi_msg_tagged tm = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
				    .tag = 0x33, .context = &peek_ctx };
	struct fi_msg m = { .msg_iov = &(struct iovec){ multi, sizeof(multi) }, .iov_count = 1,
			    .addr = FI_ADDR_UNSPEC, .context = (void *)40 };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	struct sh h;

	sh_open(&h, FI_EP_RDM, RDM_CAPS, 16, 16, FI_WAIT_NONE);
	/* sent before any receive: complete at the sender once receiver 0 has it */
	cr_assert_eq(fi_send(h.s[0].ep, "early", 6, NULL, h.r_addr[0][0], (void *)1), 0);
	sh_sent(&h, 0, (void *)1);
	cr_assert_eq(fi_recv(h.srx, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, (void *)30), 0);
	sh_expect(&h, h.rcq[0], (void *)30, &e, &src);
	cr_assert_str_eq(buf, "early");
	cr_assert_eq(src, h.s_addr[0]);

	/* peek and claim a message that reached receiver 1 */
	cr_assert_eq(fi_tsend(h.s[1].ep, "claim me", 9, NULL, h.r_addr[1][1], 0x33, (void *)2), 0);
	sh_sent(&h, 1, (void *)2);
	cr_assert_eq(fi_trecvmsg(h.srx, &tm, FI_PEEK | FI_CLAIM), 0);
	sh_expect(&h, h.rcq[1], &peek_ctx, &e, NULL);
	cr_assert_eq(e.len, 9);
	cr_assert_eq(e.tag, 0x33);
	cr_assert_eq(claimed[0], 0, "a peek moves no data");
	cr_assert_eq(fi_trecvmsg(h.srx, &tm, FI_CLAIM), 0);
	sh_expect(&h, h.rcq[1], &peek_ctx, &e, NULL);
	cr_assert_str_eq(claimed, "claim me");

	/* a peek that finds nothing: FI_ENOMSG on the first endpoint's CQ */
	tm.tag = 0x44;
	tm.context = &none_ctx;
	cr_assert_eq(fi_trecvmsg(h.srx, &tm, FI_PEEK), 0);
	err = sh_expect_err(&h, h.rcq[0], &none_ctx, FI_ENOMSG);

	/* FI_DISCARD: the message goes, nothing lands */
	cr_assert_eq(fi_tsend(h.s[0].ep, "drop me", 8, NULL, h.r_addr[0][1], 0x55, (void *)3), 0);
	sh_sent(&h, 0, (void *)3);
	tm.tag = 0x55;
	tm.context = &gone_ctx;
	cr_assert_eq(fi_trecvmsg(h.srx, &tm, FI_PEEK | FI_DISCARD), 0);
	sh_expect(&h, h.rcq[1], &gone_ctx, &e, NULL);
	cr_assert_eq(fi_trecvmsg(h.srx, &tm, FI_PEEK), 0);
	err = sh_expect_err(&h, h.rcq[0], &gone_ctx, FI_ENOMSG);

	/* one multi-receive buffer, a message to each endpoint, then canceled */
	cr_assert_eq(fi_recvmsg(h.srx, &m, FI_MULTI_RECV), 0);
	cr_assert_eq(fi_send(h.s[0].ep, "m-one", 6, NULL, h.r_addr[0][0], (void *)4), 0);
	sh_expect(&h, h.rcq[0], (void *)40, &e, NULL);
	cr_assert_eq(e.buf, multi);
	cr_assert_str_eq((char *)e.buf, "m-one");
	cr_assert_eq(fi_send(h.s[1].ep, "m-two", 6, NULL, h.r_addr[1][1], (void *)5), 0);
	sh_expect(&h, h.rcq[1], (void *)40, &e, NULL);
	cr_assert_eq(e.buf, multi + 6, "the next part of the same buffer");
	cr_assert_str_eq((char *)e.buf, "m-two");
	cr_assert_eq(fi_cancel(&h.srx->fid, (void *)40), 0);
	err = sh_expect_err(&h, h.rcq[0], (void *)40, FI_ECANCELED);
	cr_assert(err.flags & FI_MULTI_RECV, "the buffer is the application's again");
	sh_sent(&h, 0, (void *)4);
	sh_sent(&h, 1, (void *)5);
	sh_close(&h);
}

/* fi_cancel on the context reports on its first endpoint; through an endpoint, on that one */
Test(fi_srx_context, rdm_cancel, .timeout = 60)
{
	char buf[2][16];
	struct fi_cq_tagged_entry e;
	struct sh h;

	sh_open(&h, FI_EP_RDM, RDM_CAPS, 0, 16, FI_WAIT_NONE);
	cr_assert_eq(fi_recv(h.srx, buf[0], sizeof(buf[0]), NULL, FI_ADDR_UNSPEC, (void *)50), 0);
	cr_assert_eq(fi_recv(h.r[1], buf[1], sizeof(buf[1]), NULL, FI_ADDR_UNSPEC, (void *)51), 0);
	cr_assert_eq(fi_rx_size_left(h.srx), 14);
	cr_assert_eq(fi_cancel(&h.srx->fid, (void *)50), 0);
	sh_expect_err(&h, h.rcq[0], (void *)50, FI_ECANCELED);
	cr_assert_eq(fi_cancel(&h.srx->fid, (void *)50), -FI_ENOENT);
	cr_assert_eq(fi_cancel(&h.r[1]->fid, (void *)51), 0);
	sh_expect_err(&h, h.rcq[1], (void *)51, FI_ECANCELED);
	cr_assert_eq(fi_cancel(&h.r[0]->fid, (void *)51), -FI_ENOENT);
	cr_assert_eq(fi_rx_size_left(h.srx), 16);
	/* a canceled receive took nothing: the next message finds none and waits */
	cr_assert_eq(fi_send(h.s[0].ep, "later", 6, NULL, h.r_addr[0][0], (void *)1), 0);
	sh_sent(&h, 0, (void *)1);
	cr_assert_eq(fi_cq_read(h.rcq[0], &e, 1), -FI_EAGAIN);
	cr_assert_eq(fi_recv(h.srx, buf[0], sizeof(buf[0]), NULL, FI_ADDR_UNSPEC, (void *)52), 0);
	sh_expect(&h, h.rcq[0], (void *)52, &e, NULL);
	cr_assert_str_eq(buf[0], "later");
	sh_close(&h);
}

/*
 * An endpoint that closes takes its unexpected messages out of the shared
 * context: a receive posted after is the next message's, wherever it arrives.
 */
Test(fi_srx_context, rdm_closing_endpoint_takes_its_unexpected_messages, .timeout = 60)
{
	char buf[16] = { 0 };
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	struct sh h;

	sh_open(&h, FI_EP_RDM, RDM_CAPS, 0, 16, FI_WAIT_NONE);
	cr_assert_eq(fi_send(h.s[0].ep, "to r0", 6, NULL, h.r_addr[0][0], (void *)1), 0);
	sh_sent(&h, 0, (void *)1);
	cr_assert_eq(fi_close(&h.r[0]->fid), 0);
	h.r[0] = NULL;
	cr_assert_eq(fi_recv(h.srx, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, (void *)2), 0);
	cr_assert_eq(fi_send(h.s[1].ep, "to r1", 6, NULL, h.r_addr[1][1], (void *)3), 0);
	sh_expect(&h, h.rcq[1], (void *)2, &e, &src);
	cr_assert_str_eq(buf, "to r1");
	cr_assert_eq(src, h.s_addr[1]);
	cr_assert_eq(fi_cq_read(h.rcq[0], &e, 1), -FI_EAGAIN);
	sh_sent(&h, 1, (void *)3);
	sh_close(&h);
}

/* A context with endpoints bound does not close; wrong arguments get their errors. */
Test(fi_stx_context, rdm_busy_close_and_bad_arguments, .timeout = 60)
{
	struct fi_tx_attr tattr = { 0 };
	struct fi_rx_attr rattr = { 0 };
	struct fid_ep *ep, *srx2;
	struct fid_stx *stx2;
	struct fid_cq *cq;
	struct fid_av *av2;
	char buf[16];
	struct sh h;

	sh_open(&h, FI_EP_RDM, RDM_CAPS, 16, 16, FI_WAIT_NONE);
	cr_assert_eq(fi_close(&h.srx->fid), -FI_EBUSY, "endpoints take receives from it");
	cr_assert_eq(fi_close(&h.stx->fid), -FI_EBUSY, "endpoints send through it");
	cr_assert_eq(fi_send(h.srx, "x", 2, NULL, h.s_addr[0], NULL), -FI_ENOSYS,
		     "a receive context sends nothing");
	cr_assert_eq(fi_tsend(h.srx, "x", 2, NULL, h.s_addr[0], 1, NULL), -FI_ENOSYS);
	cr_assert_eq(fi_ep_bind(h.r[0], &h.srx->fid, 0), -FI_EOPBADSTATE, "enabled already");

	/* binding: once each, no flags; the shared AV is the endpoints' */
	cr_assert_eq(fi_endpoint(h.d.domain, h.d.info, &ep, NULL), 0);
	cr_assert_eq(fi_ep_bind(ep, &h.srx->fid, FI_RECV), -FI_EBADFLAGS);
	cr_assert_eq(fi_ep_bind(ep, &h.stx->fid, FI_TRANSMIT), -FI_EBADFLAGS);
	cr_assert_eq(fi_ep_bind(ep, &h.srx->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(ep, &h.srx->fid, 0), -FI_EINVAL, "bound twice");
	cr_assert_eq(fi_ep_bind(ep, &h.stx->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(ep, &h.stx->fid, 0), -FI_EINVAL, "bound twice");
	av2 = pt_av_open(h.d.domain, FI_AV_TABLE);
	cq = pt_cq_open(h.d.domain, FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE);
	cr_assert_eq(fi_ep_bind(ep, &av2->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(fi_enable(ep), -FI_EINVAL, "its shared context's endpoints use another AV");
	cr_assert_eq(fi_close(&ep->fid), 0);
	cr_assert_eq(fi_close(&cq->fid), 0);
	cr_assert_eq(fi_close(&av2->fid), 0);

	/* attributes braid cannot give */
	cr_assert_eq(fi_stx_context(h.d.domain, &tattr, NULL, NULL), -FI_EINVAL);
	tattr.caps = FI_MSG | FI_HMEM;
	cr_assert_eq(fi_stx_context(h.d.domain, &tattr, &stx2, NULL), -FI_ENODATA);
	tattr.caps = 0;
	tattr.size = 1ULL << 40;
	cr_assert_eq(fi_stx_context(h.d.domain, &tattr, &stx2, NULL), -FI_EINVAL);
	tattr.size = 0;
	tattr.iov_limit = 1000;
	cr_assert_eq(fi_stx_context(h.d.domain, &tattr, &stx2, NULL), -FI_EINVAL);
	rattr.caps = FI_MSG | FI_HMEM;
	cr_assert_eq(fi_srx_context(h.d.domain, &rattr, &srx2, NULL), -FI_ENODATA);
	rattr.caps = 0;
	rattr.total_buffered_recv = 4096;
	cr_assert_eq(fi_srx_context(h.d.domain, &rattr, &srx2, NULL), -FI_EINVAL);
	rattr.total_buffered_recv = 0;
	rattr.op_flags = FI_INJECT;
	cr_assert_eq(fi_srx_context(h.d.domain, &rattr, &srx2, NULL), -FI_EINVAL);

	/* defaults, filled in; without an endpoint a context has no AV and nothing to look at */
	memset(&tattr, 0, sizeof(tattr));
	cr_assert_eq(fi_stx_context(h.d.domain, &tattr, &stx2, NULL), 0);
	cr_assert_gt(tattr.size, 0);
	cr_assert_neq(tattr.caps & FI_SEND, 0);
	cr_assert_eq(fi_close(&stx2->fid), 0);
	rattr.op_flags = 0;
	cr_assert_eq(fi_srx_context(h.d.domain, &rattr, &srx2, NULL), 0);
	cr_assert_gt(rattr.size, 0);
	cr_assert_neq(rattr.caps & FI_DIRECTED_RECV, 0);
	cr_assert_eq(fi_trecv(srx2, buf, sizeof(buf), NULL, 0, 1, 0, NULL), -FI_EINVAL,
		     "a directed receive with no AV to look its source up in");
	cr_assert_eq(fi_trecvmsg(srx2, &(struct fi_msg_tagged){ .addr = FI_ADDR_UNSPEC },
				 FI_PEEK), -FI_EOPBADSTATE);
	cr_assert_eq(fi_recv(srx2, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, (void *)1), 0);
	cr_assert_eq(fi_cancel(&srx2->fid, (void *)1), 0, "no endpoint to report on: taken back");
	cr_assert_eq(fi_close(&srx2->fid), 0);
	sh_close(&h);
}

/*
 * The shared transmit context bounds the operations outstanding across its
 * endpoints: with two delivery-complete sends waiting for receives at their
 * peers, a third send through either endpoint is -FI_EAGAIN until they
 * complete.
 */
Test(fi_stx_context, rdm_size_bounds_outstanding_sends_of_all_its_endpoints, .timeout = 60)
{
	struct fi_msg m = { .msg_iov = &(struct iovec){ "held", 5 }, .iov_count = 1 };
	char in[2][16];
	struct fi_cq_tagged_entry e;
	struct sh h;
	int i;

	sh_open(&h, FI_EP_RDM, RDM_CAPS, 2, 0, FI_WAIT_NONE);
	for (i = 0; i < 2; i++) {
		m.addr = h.s_addr[i];
		m.context = (void *)(uintptr_t)(60 + i);
		cr_assert_eq(fi_sendmsg(h.r[i], &m, FI_DELIVERY_COMPLETE | FI_COMPLETION), 0);
	}
	cr_assert_eq(fi_send(h.r[0], "third", 6, NULL, h.s_addr[0], (void *)62), -FI_EAGAIN);
	cr_assert_eq(fi_inject(h.r[1], "third", 6, h.s_addr[1]), -FI_EAGAIN);
	cr_assert_eq(fi_tx_size_left(h.r[0]), 0);
	/* the peers take them: they complete, and room comes back */
	for (i = 0; i < 2; i++)
		cr_assert_eq(fi_recv(h.s[i].ep, in[i], sizeof(in[i]), NULL, FI_ADDR_UNSPEC, NULL), 0);
	for (i = 0; i < 2; i++)
		sh_expect(&h, h.rcq[i], (void *)(uintptr_t)(60 + i), &e, NULL);
	cr_assert_eq(fi_tx_size_left(h.r[1]), 2);
	cr_assert_eq(fi_send(h.r[0], "third", 6, NULL, h.s_addr[0], (void *)62), 0);
	cr_assert_eq(fi_recv(h.s[0].ep, in[0], sizeof(in[0]), NULL, FI_ADDR_UNSPEC, NULL), 0);
	sh_expect(&h, h.rcq[0], (void *)62, &e, NULL);
	cr_assert_str_eq(in[0], "third");
	sh_close(&h);
}

/* one receiver's thread: its CQ's messages, in order per sender */
struct reader {
	struct sh *h;
	int idx, want, got, bad;
};

static void *reader_run(void *arg)
{
	struct reader *r = arg;
	long deadline = pt_now_ms() + 20000;
	int next[NS] = { 0 };

	while (__atomic_load_n(&r->got, __ATOMIC_RELAXED) < r->want && pt_now_ms() < deadline) {
		struct fi_cq_tagged_entry e;
		int s, k;

		if (fi_cq_read(r->h->rcq[r->idx], &e, 1) != 1)
			continue;
		if (!(e.flags & FI_RECV) || sscanf(e.buf, "s%d m%d", &s, &k) != 2 || s < 0 ||
		    s >= NS || k != next[s]++)
			r->bad++;
		__atomic_fetch_add(&r->got, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/*
 * Two threads each read one receiver's CQ (progressing it) while the main
 * thread posts the shared receives and sends from both senders: every
 * message lands once, intact, in sender order.
 */
Test(fi_srx_context, rdm_endpoints_progressed_by_their_own_threads, .timeout = 60)
{
	enum { PER = 100 };
	/* (a send's buffer is the application's again only once the send completes) */
	static char bufs[NS * PER][32], msgs[NS * PER][32];
	struct reader rd[NR];
	pthread_t t[NR];
	struct sh h;
	int i, k;

	sh_open(&h, FI_EP_RDM, RDM_CAPS, 0, NS * PER, FI_WAIT_NONE);
	for (i = 0; i < NR; i++) {
		rd[i] = (struct reader){ .h = &h, .idx = i, .want = PER };
		cr_assert_eq(pthread_create(&t[i], NULL, reader_run, &rd[i]), 0);
	}
	for (k = 0; k < PER; k++) {
		for (i = 0; i < NS; i++) {
			char *msg = msgs[k * NS + i];
			ssize_t ret;

			cr_assert_eq(fi_recv(h.srx, bufs[k * NS + i], sizeof(bufs[0]), NULL,
					     FI_ADDR_UNSPEC, NULL), 0);
			snprintf(msg, sizeof(msgs[0]), "s%d m%d", i, k);
			/* sender i to receiver i */
			while ((ret = fi_send(h.s[i].ep, msg, strlen(msg) + 1, NULL, h.r_addr[i][i],
					      NULL)) == -FI_EAGAIN)
				(void)fi_cq_read(h.s[i].tx_cq, NULL, 0);
			cr_assert_eq(ret, 0);
		}
	}
	for (i = 0; i < NR; i++) {
		long deadline = pt_now_ms() + 20000;

		/* the senders' completions, while the readers finish */
		while (__atomic_load_n(&rd[i].got, __ATOMIC_RELAXED) < PER && pt_now_ms() < deadline)
			for (k = 0; k < NS; k++)
				(void)fi_cq_read(h.s[k].tx_cq, NULL, 0);
		cr_assert(pt_join_within(t[i], NULL, NULL));
		cr_assert_eq(rd[i].got, PER, "receiver %d got %d of %d", i, rd[i].got, PER);
		cr_assert_eq(rd[i].bad, 0, "receiver %d: %d out of order or malformed", i, rd[i].bad);
	}
	cr_assert_eq(fi_rx_size_left(h.srx), NS * PER, "every shared receive was used once");
	sh_close(&h);
}

/* ---- DGRAM ---- */

/*
 * Datagrams from two peers land in the shared receives in post order, on the
 * CQ of the endpoint they reached (a waiting reader of it wakes), with their
 * source; cancel reports on the first endpoint, or the one named.
 */
Test(fi_srx_context, dgram_datagrams_land_in_shared_receives, .timeout = 60)
{
	char buf[3][32] = { { 0 } };
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	struct sh h;

	sh_open(&h, FI_EP_DGRAM, FI_MSG | FI_SOURCE, 8, 8, FI_WAIT_UNSPEC);
	cr_assert_eq(fi_recv(h.srx, buf[0], sizeof(buf[0]), NULL, FI_ADDR_UNSPEC, (void *)70), 0);
	cr_assert_eq(fi_recv(h.r[0], buf[1], sizeof(buf[1]), NULL, FI_ADDR_UNSPEC, (void *)71), 0);
	cr_assert_eq(fi_send(h.s[0].ep, "s0 to r1", 9, NULL, h.r_addr[0][1], (void *)1), 0);
	cr_assert_eq(fi_cq_sreadfrom(h.rcq[1], &e, 1, &src, NULL, 5000), 1, "the reader wakes");
	cr_assert_eq(e.op_context, (void *)70);
	cr_assert_eq(e.len, 9);
	cr_assert_str_eq(buf[0], "s0 to r1");
	cr_assert_eq(src, h.s_addr[0]);
	cr_assert_eq(fi_send(h.s[1].ep, "s1 to r0", 9, NULL, h.r_addr[1][0], (void *)2), 0);
	cr_assert_eq(fi_cq_sreadfrom(h.rcq[0], &e, 1, &src, NULL, 5000), 1);
	cr_assert_eq(e.op_context, (void *)71, "the receive posted through receiver 0, second");
	cr_assert_str_eq(buf[1], "s1 to r0");
	cr_assert_eq(src, h.s_addr[1]);
	sh_sent(&h, 0, (void *)1);
	sh_sent(&h, 1, (void *)2);

	cr_assert_eq(fi_recv(h.srx, buf[2], sizeof(buf[2]), NULL, FI_ADDR_UNSPEC, (void *)72), 0);
	cr_assert_eq(fi_recv(h.srx, buf[2], sizeof(buf[2]), NULL, FI_ADDR_UNSPEC, (void *)73), 0);
	cr_assert_eq(fi_cancel(&h.srx->fid, (void *)72), 0);
	sh_expect_err(&h, h.rcq[0], (void *)72, FI_ECANCELED);
	cr_assert_eq(fi_cancel(&h.r[1]->fid, (void *)73), 0);
	sh_expect_err(&h, h.rcq[1], (void *)73, FI_ECANCELED);
	cr_assert_eq(fi_cancel(&h.srx->fid, (void *)73), -FI_ENOENT);
	cr_assert_eq(fi_close(&h.srx->fid), -FI_EBUSY);
	cr_assert_eq(fi_close(&h.stx->fid), -FI_EBUSY);
	sh_close(&h);
}

/* DGRAM sends held by FI_MORE are outstanding: the shared context's size bounds them */
Test(fi_stx_context, dgram_size_bounds_held_sends, .timeout = 60)
{
	struct fi_msg m = { .msg_iov = &(struct iovec){ "more", 5 }, .iov_count = 1 };
	char in[4][16] = { { 0 } };
	struct fi_cq_tagged_entry e;
	struct sh h;
	int i;

	sh_open(&h, FI_EP_DGRAM, FI_MSG | FI_SOURCE, 2, 0, FI_WAIT_NONE);
	for (i = 0; i < 4; i++)
		cr_assert_eq(fi_recv(h.s[0].ep, in[i], sizeof(in[i]), NULL, FI_ADDR_UNSPEC,
				     (void *)(uintptr_t)(80 + i)), 0);
	m.addr = h.s_addr[0];
	for (i = 0; i < 2; i++) {
		m.context = (void *)(uintptr_t)(90 + i);
		cr_assert_eq(fi_sendmsg(h.r[i], &m, FI_MORE | FI_COMPLETION), 0);
	}
	m.context = (void *)92;
	cr_assert_eq(fi_sendmsg(h.r[0], &m, FI_MORE | FI_COMPLETION), -FI_EAGAIN);
	cr_assert_eq(fi_send(h.r[1], "now", 4, NULL, h.s_addr[0], (void *)93), -FI_EAGAIN);
	/* progress sends what was held: room again */
	sh_expect(&h, h.rcq[0], (void *)90, &e, NULL);
	sh_expect(&h, h.rcq[1], (void *)91, &e, NULL);
	cr_assert_eq(fi_send(h.r[1], "now", 4, NULL, h.s_addr[0], (void *)93), 0);
	sh_expect(&h, h.rcq[1], (void *)93, &e, NULL);
	for (i = 0; i < 3; i++)
		sh_expect(&h, h.s[0].rx_cq, (void *)(uintptr_t)(80 + i), &e, NULL);
	cr_assert_str_eq(in[2], "now");
	sh_close(&h);
}

/* ---- MSG ---- */

static void msg_cm_wait(struct fid_eq *eq, uint32_t want, struct fi_eq_cm_entry *e)
{
	long deadline = pt_now_ms() + 5000;
	uint32_t event = 0;
	ssize_t ret;

	do {
		ret = fi_eq_sread(eq, &event, e, sizeof(*e), 50, 0);
	} while (ret == -FI_EAGAIN && pt_now_ms() < deadline);
	cr_assert_eq(ret, (ssize_t)sizeof(*e), "fi_eq_sread = %zd waiting for %u", ret, want);
	cr_assert_eq(event, want);
}

/*
 * Two connected MSG endpoints share a transmit context of size 2: with two
 * sends waiting for receives at their peers (RNR), a third is -FI_EAGAIN
 * until those complete.
 */
Test(fi_stx_context, msg_size_bounds_the_sends_of_its_connections, .timeout = 60)
{
	struct fi_info *info = sh_info(FI_EP_MSG, FI_MSG, true, false);
	struct fid_ep *c[2], *s[2];
	struct fid_eq *ceq, *seq;
	struct fid_cq *ccq, *scq;
	struct fid_pep *pep;
	struct fid_stx *stx;
	struct fi_tx_attr tattr = { .size = 2 };
	struct fi_eq_cm_entry e;
	struct fi_cq_tagged_entry ce;
	struct sockaddr_in listen;
	struct pt_dom d = { .info = info };
	char in[3][16] = { { 0 } };
	size_t len = sizeof(listen);
	long deadline;
	int i, sends = 0, recvs = 0;

	cr_assert_eq(fi_fabric(info->fabric_attr, &d.fabric, NULL), 0);
	cr_assert_eq(fi_domain(d.fabric, info, &d.domain, NULL), 0);
	ceq = pt_eq_open(d.fabric);
	seq = pt_eq_open(d.fabric);
	ccq = pt_cq_open(d.domain, FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE);
	scq = pt_cq_open(d.domain, FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE);
	cr_assert_eq(fi_stx_context(d.domain, &tattr, &stx, NULL), 0);
	cr_assert_eq(fi_passive_ep(d.fabric, info, &pep, NULL), 0);
	cr_assert_eq(fi_pep_bind(pep, &seq->fid, 0), 0);
	cr_assert_eq(fi_listen(pep), 0);
	cr_assert_eq(fi_getname(&pep->fid, &listen, &len), 0);
	for (i = 0; i < 2; i++) {
		cr_assert_eq(fi_endpoint(d.domain, info, &c[i], NULL), 0);
		cr_assert_eq(fi_ep_bind(c[i], &ceq->fid, 0), 0);
		cr_assert_eq(fi_ep_bind(c[i], &stx->fid, 0), 0);
		cr_assert_eq(fi_ep_bind(c[i], &ccq->fid, FI_TRANSMIT | FI_RECV), 0);
		cr_assert_eq(fi_enable(c[i]), 0);
		cr_assert_eq(fi_connect(c[i], &listen, NULL, 0), 0);
		msg_cm_wait(seq, FI_CONNREQ, &e);
		cr_assert_eq(fi_endpoint(d.domain, e.info, &s[i], NULL), 0);
		fi_freeinfo(e.info);
		cr_assert_eq(fi_ep_bind(s[i], &seq->fid, 0), 0);
		cr_assert_eq(fi_ep_bind(s[i], &scq->fid, FI_TRANSMIT | FI_RECV), 0);
		cr_assert_eq(fi_enable(s[i]), 0);
		cr_assert_eq(fi_accept(s[i], NULL, 0), 0);
		msg_cm_wait(ceq, FI_CONNECTED, &e);
		cr_assert_eq(e.fid, &c[i]->fid);
		msg_cm_wait(seq, FI_CONNECTED, &e);
	}
	cr_assert_eq(fi_close(&stx->fid), -FI_EBUSY);
	/* no receives at the peers: the sends wait (RNR), holding the context */
	cr_assert_eq(fi_send(c[0], "first", 6, NULL, 0, (void *)1), 0);
	cr_assert_eq(fi_send(c[1], "second", 7, NULL, 0, (void *)2), 0);
	cr_assert_eq(fi_send(c[0], "third", 6, NULL, 0, (void *)3), -FI_EAGAIN);
	cr_assert_eq(fi_send(c[1], "third", 6, NULL, 0, (void *)3), -FI_EAGAIN);
	for (i = 0; i < 2; i++)
		cr_assert_eq(fi_recv(s[i], in[i], sizeof(in[i]), NULL, 0, NULL), 0);
	cr_assert_eq(fi_recv(s[1], in[2], sizeof(in[2]), NULL, 0, NULL), 0);
	deadline = pt_now_ms() + 5000;
	while (sends < 2 && pt_now_ms() < deadline) {
		if (fi_cq_read(scq, &ce, 1) == 1)
			recvs++;
		if (fi_cq_read(ccq, &ce, 1) == 1) {
			cr_assert(ce.flags & FI_SEND);
			sends++;
		}
	}
	cr_assert_eq(sends, 2, "the held sends completed");
	cr_assert_eq(fi_send(c[1], "third", 6, NULL, 0, (void *)3), 0);
	deadline = pt_now_ms() + 5000;
	while ((sends < 3 || recvs < 3) && pt_now_ms() < deadline) {
		if (fi_cq_read(scq, &ce, 1) == 1)
			recvs++;
		if (fi_cq_read(ccq, &ce, 1) == 1)
			sends++;
	}
	cr_assert_eq(recvs, 3);
	cr_assert_str_eq(in[0], "first");
	cr_assert_str_eq(in[1], "second");
	cr_assert_str_eq(in[2], "third");
	for (i = 0; i < 2; i++) {
		cr_assert_eq(fi_close(&c[i]->fid), 0);
		cr_assert_eq(fi_close(&s[i]->fid), 0);
	}
	cr_assert_eq(fi_close(&stx->fid), 0);
	cr_assert_eq(fi_close(&pep->fid), 0);
	cr_assert_eq(fi_close(&ccq->fid), 0);
	cr_assert_eq(fi_close(&scq->fid), 0);
	cr_assert_eq(fi_close(&ceq->fid), 0);
	cr_assert_eq(fi_close(&seq->fid), 0);
	pt_dom_close(&d);
}
