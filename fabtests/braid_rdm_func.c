/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rdm_func.c: functional FI_EP_RDM sub-tests, each reported PASS, FAIL or SKIP by name. */
#include "ft_common.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RF_POOL      2100         /* ops: 2 sync + the largest sub-test (2 * RF_MANY) */
#define RF_BUF       (4u << 20)   /* small-message area, carved anew by each sub-test */
#define RF_GAP       16           /* guard bytes after every receive buffer */
#define RF_CANARY    0xC3         /* receive buffers and guards are filled with it */
#define RF_HDR       8            /* kind and index in front of every pattern */
#define RF_MLOG      256          /* multi-recv completions kept per phase */

#define RF_UNEXP_N   16           /* unexpected: tagged and untagged messages each */
#define RF_MANY      1000         /* many: messages each way */
#define RF_MANY_SIZE 64
#define RF_MR_BUFS   4            /* multi_recv: buffers per phase */
#define RF_MR_BUF    8000         /* bytes per buffer */
#define RF_MR_MSG    1000         /* bytes per message */
#define RF_MR_MIN    1500         /* FI_OPT_MIN_MULTI_RECV: 7 messages per buffer */
#define RF_MR_N      28           /* messages per phase: fills the 4 buffers exactly */
#define RF_LARGE_MAX (16u << 20)  /* largest default size, fully compared */
#define RF_HUGE      (1ull << 30) /* -L */

/* A sub-test's tags: its kind in the top 16 bits, its own number below. */
#define RF_TAG(kind, n) (((uint64_t)(kind) << 48) | (uint64_t)(n))
#define RF_TAG_SYNC     RF_TAG(0x5943, 0)
#define RF_SYNC_MAGIC   0x53594e43u /* "SYNC" */

static const char rf_about[] =
	"Functional tests of an FI_EP_RDM endpoint (default -e rdm), each a\n"
	"sub-test printed with its name and PASS, FAIL or SKIP (SKIP when the\n"
	"provider lacks what it needs: FI_MULTI_RECV, FI_SOURCE, remote CQ data).\n"
	"Sub-tests (-t NAME, or a list NAME,NAME; default all, in this order):\n"
	"  unexpected  16 tagged (two tags) and 16 untagged messages, 8 B to 70 KB,\n"
	"              sent before the server posts any receive; all must arrive\n"
	"              with the right tag and data, in order where FI_ORDER_SAS\n"
	"  peek        fi_trecvmsg with FI_PEEK (a miss is FI_ENOMSG; a hit gives\n"
	"              len and tag, with and without an ignore mask), FI_CLAIM\n"
	"              then a claiming receive, FI_PEEK|FI_DISCARD, FI_CLAIM|FI_DISCARD\n"
	"  cancel      fi_cancel of a posted tagged and untagged receive gives\n"
	"              FI_ECANCELED; later messages go to new receives\n"
	"  trunc       messages larger than the buffer (eager and large, tagged\n"
	"              and untagged) give FI_ETRUNC with the right olen; nothing\n"
	"              is written past the buffer; the endpoint keeps working\n"
	"  multi_recv  FI_MULTI_RECV buffers with FI_OPT_MIN_MULTI_RECV, posted\n"
	"              before and after the messages; FI_MULTI_RECV flag on release\n"
	"  many        1000 tagged sends each way posted back to back, retrying on\n"
	"              -FI_EAGAIN while progressing the CQs\n"
	"  large       1 MiB and 16 MiB each way (fully compared), and with -L\n"
	"              1 GiB client to server (sampled)\n"
	"  source      fi_cq_readfrom gives the sender's fi_addr (expected and\n"
	"              unexpected, tagged and untagged), both ways\n"
	"  cqdata      fi_tsenddata, fi_senddata (also 0 bytes), fi_tinjectdata,\n"
	"              fi_injectdata: FI_REMOTE_CQ_DATA and the value; none for fi_tsend\n"
	"Exit status 77 when every selected sub-test was skipped.";

struct rf;

/* One sub-test. */
struct rf_test {
	const char *name;
	const char *what;            /* one line for the report, if the run left none */
	/* Why it cannot run with this endpoint, or NULL. */
	const char *(*lacks)(const struct rf *rf);
	/* Both sides run it; 0 or a negative FI_E* (already printed). */
	int (*run)(struct rf *rf);
};

/* Everything one run needs besides the common context. */
struct rf {
	struct ft_ctx ctx;
	struct ft_opts opts;
	uint32_t select;             /* -t: bit per sub-test; 0 = all */
	bool huge;                   /* -L: also 1 GiB */
	bool sas;                    /* FI_ORDER_SAS granted both ways */
	bool multi_recv;             /* FI_MULTI_RECV granted */
	uint64_t data_mask;          /* remote CQ data bits (cq_data_size) */
	uint32_t test;               /* index of the running sub-test */
	/* Operations: pool[0] and [1] are the sync ops, the rest is carved per sub-test. */
	struct ft_op *pool;
	struct ft_comp *comp;        /* the completion of each op, once it came */
	uint64_t *seq;               /* completion order of each op; 0 = outstanding */
	bool *multi;                 /* a FI_MULTI_RECV buffer: completions go to mlog */
	uint64_t nseq;
	size_t nused;                /* ops handed out */
	size_t carve;                /* bytes of ctx->buf handed out */
	struct ft_op *sync_tx, *sync_rx;
	uint32_t sync_code;          /* sequence of the sync messages sent */
	uint32_t sync_seen;          /* ... and received */
	struct ft_comp mlog[RF_MLOG];
	size_t nmlog;
	char detail[256];            /* what the sub-test did, for its report line */
	char *big_tx, *big_rx, *huge_buf; /* the large sub-test's buffers */
	struct fid_mr *big_tx_mr, *big_rx_mr, *huge_mr;
	void *big_tx_desc, *big_rx_desc, *huge_desc;
};

/* ---- operations and their completions ---- */

static size_t rf_index(const struct rf *rf, const struct ft_op *op)
{
	return (size_t)(op - rf->pool);
}

/* Start a sub-test's carving: only the sync ops and their buffers stay. */
static void rf_reset(struct rf *rf)
{
	size_t i;

	for (i = 2; i < rf->nused; i++)
		rf->multi[i] = false;
	rf->nused = 2;
	rf->carve = 2 * 64;
	rf->nmlog = 0;
}

/*
 * Hand out n ops of cap payload bytes each, laid out one after another in
 * ctx->buf, RF_GAP guard bytes after each. NULL (printed) if that does
 * not fit: a bug of this program.
 */
static struct ft_op *rf_ops(struct rf *rf, size_t n, size_t cap, const char *name)
{
	struct ft_ctx *ctx = &rf->ctx;
	size_t i, region = (cap + RF_GAP + 63) & ~(size_t)63;
	struct ft_op *first = &rf->pool[rf->nused];

	if (rf->nused + n > RF_POOL || rf->carve + n * region > RF_BUF) {
		ft_fail(ctx, "internal: sub-test needs more than %d ops or %u bytes", RF_POOL,
			RF_BUF);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		ft_op_init(ctx, &first[i], name, ctx->buf + rf->carve, cap, 1, NULL, RF_GAP);
		memset(ctx->buf + rf->carve, RF_CANARY, cap + RF_GAP);
		rf->seq[rf->nused + i] = 0;
		rf->carve += region;
	}
	rf->nused += n;
	return first;
}

/* Mark op submitted: the provider owns its context until it completes. */
static void rf_posted(struct rf *rf, struct ft_op *op)
{
	op->posted = true;
	rf->seq[rf_index(rf, op)] = 0;
}

/* Take one completion from cq, if any, and file it with its op. 1, 0 or a negative FI_E*. */
static int rf_reap_cq(struct rf *rf, struct ft_cq *cq)
{
	struct ft_ctx *ctx = &rf->ctx;
	uintptr_t at, lo = (uintptr_t)rf->pool, hi = (uintptr_t)(rf->pool + RF_POOL);
	struct ft_comp c;
	struct ft_op *op;
	size_t idx;
	int ret;

	ret = ft_cq_poll_comp(ctx, cq, &c);
	if (ret <= 0)
		return ret;
	at = (uintptr_t)c.e.op_context;
	if (at < lo || at >= hi || (at - lo) % sizeof(struct ft_op)) {
		if (c.err)
			return ft_comp_fail(ctx, cq, &c, "a completion for no operation of this "
					    "sub-test");
		ft_fail(ctx, "completion on the %s cq (flags %s, len %zu) for op_context %p, "
			"which is no operation of this sub-test%s", cq->name,
			fi_tostr(&c.e.flags, FI_TYPE_CQ_EVENT_FLAGS), c.e.len, c.e.op_context,
			c.e.op_context == &ctx->ctrl_rx.fctx ? " but the control receive" : "");
		return -FI_EOTHER;
	}
	op = (struct ft_op *)c.e.op_context;
	idx = rf_index(rf, op);
	if (!op->posted) {
		ft_fail(ctx, "a completion (flags %s, err %d) for %s %zu, which was not "
			"outstanding", fi_tostr(&c.e.flags, FI_TYPE_CQ_EVENT_FLAGS), c.err,
			op->name, idx);
		return -FI_EOTHER;
	}
	if (rf->multi[idx]) {
		/* A multi-recv buffer completes once per message. */
		if (rf->nmlog == RF_MLOG) {
			ft_fail(ctx, "multi_recv: more than %d completions", RF_MLOG);
			return -FI_EOTHER;
		}
		rf->mlog[rf->nmlog++] = c;
		if (!(c.e.flags & FI_MULTI_RECV) && !c.err)
			return 1;
	}
	op->posted = false;
	rf->comp[idx] = c;
	rf->seq[idx] = ++rf->nseq;
	return 1;
}

/* One pass over both CQs: 1 if something completed, 0, or a negative FI_E*. */
static int rf_reap(struct rf *rf)
{
	int a, b;

	a = rf_reap_cq(rf, &rf->ctx.txcq);
	if (a < 0)
		return a;
	b = rf_reap_cq(rf, &rf->ctx.rxcq);
	if (b < 0)
		return b;
	return a || b;
}

/*
 * Reap until n ops (those with posted still set are the ones waited for)
 * have completed; the deadline moves with every completion.
 */
static int rf_wait_ops(struct rf *rf, struct ft_op *const *ops, size_t n, const char *what)
{
	struct ft_ctx *ctx = &rf->ctx;
	uint64_t deadline = ft_deadline(ctx);
	unsigned long spins = 0;
	size_t i, left;
	int ret;

	for (;;) {
		for (i = 0, left = 0; i < n; i++)
			left += ops[i]->posted;
		if (!left)
			return 0;
		ret = rf_reap(rf);
		if (ret < 0)
			return ret;
		if (ret) {
			deadline = ft_deadline(ctx);
			spins = 0;
			continue;
		}
		if ((++spins & 63) == 0 && ft_now_ns() > deadline) {
			ft_fail(ctx, "timeout: %zu of %zu operations still outstanding after %d s "
				"waiting for %s", left, n, ctx->opts->timeout_sec, what);
			return -FI_ETIMEDOUT;
		}
		if (spins > 2000)
			sched_yield();
	}
}

static int rf_wait(struct rf *rf, struct ft_op *op, const char *what)
{
	return rf_wait_ops(rf, &op, 1, what);
}

/* Wait for ops[0..n), an array. */
static int rf_wait_array(struct rf *rf, struct ft_op *ops, size_t n, const char *what)
{
	struct ft_op *list[64];
	size_t i, k;
	int ret;

	for (i = 0; i < n; i += k) {
		for (k = 0; k < 64 && i + k < n; k++)
			list[k] = &ops[i + k];
		ret = rf_wait_ops(rf, list, k, what);
		if (ret)
			return ret;
	}
	return 0;
}

static const struct ft_comp *rf_comp(const struct rf *rf, const struct ft_op *op)
{
	return &rf->comp[rf_index(rf, op)];
}

/* ---- posting ---- */

static int rf_trecv(struct rf *rf, struct ft_op *op, uint64_t tag, uint64_t ignore)
{
	struct ft_ctx *ctx = &rf->ctx;
	ssize_t ret;

	FT_POST(ret, ctx, "fi_trecv",
		fi_trecv(ctx->ep, op->base, op->cap, op->desc[0], FI_ADDR_UNSPEC, tag, ignore,
			 &op->fctx));
	if (!ret)
		rf_posted(rf, op);
	return (int)ret;
}

static int rf_recv(struct rf *rf, struct ft_op *op)
{
	struct ft_ctx *ctx = &rf->ctx;
	ssize_t ret;

	FT_POST(ret, ctx, "fi_recv",
		fi_recv(ctx->ep, op->base, op->cap, op->desc[0], FI_ADDR_UNSPEC, &op->fctx));
	if (!ret)
		rf_posted(rf, op);
	return (int)ret;
}

static int rf_trecvmsg(struct rf *rf, struct ft_op *op, uint64_t tag, uint64_t ignore,
		       uint64_t flags)
{
	struct ft_ctx *ctx = &rf->ctx;
	struct fi_msg_tagged msg = {
		.msg_iov = op->iov,
		.desc = op->desc,
		.iov_count = 1,
		.addr = FI_ADDR_UNSPEC,
		.tag = tag,
		.ignore = ignore,
		.context = &op->fctx,
	};
	ssize_t ret;

	FT_POST(ret, ctx, "fi_trecvmsg", fi_trecvmsg(ctx->ep, &msg, flags));
	if (!ret)
		rf_posted(rf, op);
	return (int)ret;
}

static int rf_tsend(struct rf *rf, struct ft_op *op, size_t len, uint64_t tag)
{
	struct ft_ctx *ctx = &rf->ctx;
	ssize_t ret;

	FT_POST(ret, ctx, "fi_tsend",
		fi_tsend(ctx->ep, op->base, len, op->desc[0], ctx->peer, tag, &op->fctx));
	if (!ret)
		rf_posted(rf, op);
	return (int)ret;
}

static int rf_send(struct rf *rf, struct ft_op *op, size_t len)
{
	struct ft_ctx *ctx = &rf->ctx;
	ssize_t ret;

	FT_POST(ret, ctx, "fi_send",
		fi_send(ctx->ep, op->base, len, op->desc[0], ctx->peer, &op->fctx));
	if (!ret)
		rf_posted(rf, op);
	return (int)ret;
}

/* ---- message contents ---- */

/* Every test message: kind and index (little-endian words), then a pattern of both. */
static uint64_t rf_seed(uint32_t kind, uint32_t index)
{
	return ft_seed(0x7266, kind, index, 0);
}

static void rf_fill(void *buf, size_t size, uint32_t kind, uint32_t index)
{
	uint32_t hdr[2] = { kind, index };

	if (size < RF_HDR) {
		ft_fill(buf, size, rf_seed(kind, index));
		return;
	}
	memcpy(buf, hdr, RF_HDR);
	ft_fill((char *)buf + RF_HDR, size - RF_HDR, rf_seed(kind, index));
}

/*
 * Check a message of kind: its index (returned in *index) and pattern.
 * Messages shorter than the header carry only the pattern of want_index.
 */
static int rf_check(struct rf *rf, const void *buf, size_t len, uint32_t kind,
		    uint32_t want_index, uint32_t *index, const char *what)
{
	uint32_t hdr[2];
	ssize_t bad;

	if (len < RF_HDR) {
		bad = ft_check(buf, len, rf_seed(kind, want_index));
		*index = want_index;
	} else {
		memcpy(hdr, buf, RF_HDR);
		if (hdr[0] != kind) {
			ft_fail(&rf->ctx, "%s: %zu bytes that are not a message of this sub-test "
				"(kind 0x%x, expected 0x%x)", what, len, hdr[0], kind);
			return -FI_EOTHER;
		}
		*index = hdr[1];
		bad = ft_check((const char *)buf + RF_HDR, len - RF_HDR, rf_seed(kind, hdr[1]));
		if (bad >= 0)
			bad += RF_HDR;
	}
	if (bad < 0)
		return 0;
	ft_fail(&rf->ctx, "%s: message %u, %zu bytes: data mismatch at offset %zd", what,
		*index, len, bad);
	return -FI_EOTHER;
}

/* The guard bytes after op's buffer must still hold the canary. */
static int rf_check_guard(struct rf *rf, const struct ft_op *op, const char *what)
{
	const unsigned char *g = (const unsigned char *)op->base + op->cap;
	size_t i;

	for (i = 0; i < RF_GAP; i++) {
		if (g[i] != RF_CANARY) {
			ft_fail(&rf->ctx, "%s: byte %zu after the %zu-byte receive buffer was "
				"overwritten (0x%02x): write beyond the posted buffer", what, i,
				op->cap, g[i]);
			return -FI_EOTHER;
		}
	}
	return 0;
}

/*
 * Check a successful receive completion: flags (FI_RECV, and FI_TAGGED
 * exactly when tagged), the tag, the length, the source where FI_SOURCE
 * is granted, and the guard after the buffer.
 */
static int rf_check_recv(struct rf *rf, const struct ft_op *op, bool tagged, uint64_t tag,
			 size_t len, const char *what)
{
	struct ft_ctx *ctx = &rf->ctx;
	const struct ft_comp *c = rf_comp(rf, op);
	uint64_t kind = tagged ? FI_TAGGED : FI_MSG;

	if (c->err)
		return ft_comp_fail(ctx, &ctx->rxcq, c, what);
	if (!(c->e.flags & FI_RECV) || !(c->e.flags & kind) ||
	    (c->e.flags & (FI_SEND | FI_RMA | FI_ATOMIC | (tagged ? FI_MSG : FI_TAGGED)))) {
		ft_fail(ctx, "%s: receive completion flags %s, expected %s", what,
			fi_tostr(&c->e.flags, FI_TYPE_CQ_EVENT_FLAGS),
			tagged ? "FI_TAGGED | FI_RECV" : "FI_MSG | FI_RECV");
		return -FI_EOTHER;
	}
	if (tagged && c->e.tag != tag) {
		ft_fail(ctx, "%s: completion tag 0x%016llx, expected 0x%016llx", what,
			(unsigned long long)c->e.tag, (unsigned long long)tag);
		return -FI_EOTHER;
	}
	if (c->e.len != len) {
		ft_fail(ctx, "%s: received %zu bytes, expected %zu", what, c->e.len, len);
		return -FI_EOTHER;
	}
	if (ctx->source && c->src != ctx->peer) {
		ft_fail(ctx, "%s: FI_SOURCE: fi_cq_readfrom gave source fi_addr 0x%llx, but the "
			"peer was inserted as 0x%llx", what, (unsigned long long)c->src,
			(unsigned long long)ctx->peer);
		return -FI_EOTHER;
	}
	return rf_check_guard(rf, op, what);
}

/* A send completion: success, FI_SEND, and FI_TAGGED or FI_MSG. */
static int rf_check_send(struct rf *rf, const struct ft_op *op, bool tagged, const char *what)
{
	struct ft_ctx *ctx = &rf->ctx;
	const struct ft_comp *c = rf_comp(rf, op);
	uint64_t kind = tagged ? FI_TAGGED : FI_MSG;

	if (c->err)
		return ft_comp_fail(ctx, &ctx->txcq, c, what);
	if (!(c->e.flags & FI_SEND) || !(c->e.flags & kind) ||
	    (c->e.flags & (FI_RECV | FI_REMOTE_CQ_DATA | (tagged ? FI_MSG : FI_TAGGED)))) {
		ft_fail(ctx, "%s: send completion flags %s, expected %s", what,
			fi_tostr(&c->e.flags, FI_TYPE_CQ_EVENT_FLAGS),
			tagged ? "FI_TAGGED | FI_SEND" : "FI_MSG | FI_SEND");
		return -FI_EOTHER;
	}
	return 0;
}

/* ---- sync messages: tagged, so they never take an untagged receive ---- */

struct rf_sync {
	uint32_t magic;
	uint32_t test;
	uint32_t code;
	uint32_t status;
};

/* Tell the peer something (code: which step; status: 0 or 1 = failed). */
static int rf_sync_send(struct rf *rf, uint32_t code, uint32_t status)
{
	struct rf_sync m = { RF_SYNC_MAGIC, rf->test, code, status };
	int ret;

	ft_debug(&rf->ctx, "sync send %u status %u", code, status);
	memcpy(rf->sync_tx->base, &m, sizeof(m));
	ret = rf_tsend(rf, rf->sync_tx, sizeof(m), RF_TAG_SYNC);
	if (!ret)
		ret = rf_wait(rf, rf->sync_tx, "the send of a sync message");
	if (!ret)
		ret = rf_check_send(rf, rf->sync_tx, true, "sync message");
	return ret;
}

/* Wait for the peer's sync code; its status in *status (NULL: must be 0). */
static int rf_sync_wait(struct rf *rf, uint32_t code, uint32_t *status, const char *what)
{
	struct ft_ctx *ctx = &rf->ctx;
	struct rf_sync m;
	int ret;

	if (!rf->sync_rx->posted) {
		rf->sync_rx->cap = sizeof(m);
		ret = rf_trecv(rf, rf->sync_rx, RF_TAG_SYNC, 0);
		if (ret)
			return ret;
	}
	ret = rf_wait(rf, rf->sync_rx, what);
	if (ret)
		return ret;
	ret = rf_check_recv(rf, rf->sync_rx, true, RF_TAG_SYNC, sizeof(m), what);
	if (ret)
		return ret;
	memcpy(&m, rf->sync_rx->base, sizeof(m));
	if (m.magic != RF_SYNC_MAGIC || m.test != rf->test || m.code != code) {
		ft_fail(ctx, "%s: sync message of sub-test %u step %u, expected sub-test %u step "
			"%u: the two sides are out of step", what, m.test, m.code, rf->test, code);
		return -FI_EOTHER;
	}
	ft_debug(ctx, "sync received %u status %u", code, m.status);
	if (status) {
		*status = m.status;
	} else if (m.status) {
		ft_fail(ctx, "%s: the peer reported a failure (see its output)", what);
		return -FI_EOTHER;
	}
	return 0;
}

/* The receiving side's verdict at the end of a one-way sub-test. */
static int rf_fin_send(struct rf *rf, int status)
{
	int ret = rf_sync_send(rf, 99, status != 0);

	return status ? status : ret;
}

static int rf_fin_wait(struct rf *rf, int status)
{
	uint32_t peer = 0;
	int ret = rf_sync_wait(rf, 99, &peer, "the receiver's verdict");

	if (status)
		return status;
	if (ret)
		return ret;
	if (peer) {
		ft_fail(&rf->ctx, "the receiving side reported a failure (see its output)");
		return -FI_EOTHER;
	}
	return 0;
}

static bool rf_server(const struct rf *rf)
{
	return ft_is_server(&rf->opts);
}

/* ---- unexpected ---- */

#define RF_K_UNEXP_T 0x55a1
#define RF_K_UNEXP_U 0x55a2

static size_t rf_unexp_size(uint32_t i)
{
	static const size_t sizes[] = { 8, 100, 4000, 70000 };

	return sizes[i % 4];
}

/* Even messages carry tag A, odd ones tag B: several unexpected messages per tag. */
static uint64_t rf_unexp_tag(uint32_t i)
{
	return RF_TAG(0x0a, i & 1 ? 0xB : 0xA);
}

static int rf_unexp_receive(struct rf *rf)
{
	struct ft_op *rt, *ru;
	uint32_t k, idx;
	bool seen_t[RF_UNEXP_N] = { false }, seen_u[RF_UNEXP_N] = { false };
	char what[96];
	int ret;

	ret = rf_sync_wait(rf, 1, NULL, "the client's sync after its sends");
	if (ret)
		return ret;
	rt = rf_ops(rf, RF_UNEXP_N, 70000, "tagged receive");
	ru = rf_ops(rf, RF_UNEXP_N, 70000, "untagged receive");
	if (!rt || !ru)
		return -FI_EOTHER;
	/* Tag B's receives first, then tag A's: not the order of sending. */
	for (k = 0; k < RF_UNEXP_N / 2; k++) {
		ret = rf_trecv(rf, &rt[k], rf_unexp_tag(1), 0);
		if (ret)
			return ret;
	}
	for (k = 0; k < RF_UNEXP_N / 2; k++) {
		ret = rf_trecv(rf, &rt[RF_UNEXP_N / 2 + k], rf_unexp_tag(0), 0);
		if (ret)
			return ret;
	}
	for (k = 0; k < RF_UNEXP_N; k++) {
		ret = rf_recv(rf, &ru[k]);
		if (ret)
			return ret;
	}
	ret = rf_wait_array(rf, rt, RF_UNEXP_N, "the unexpected tagged messages");
	if (!ret)
		ret = rf_wait_array(rf, ru, RF_UNEXP_N, "the unexpected untagged messages");
	if (ret)
		return rf_fin_send(rf, ret);

	for (k = 0; k < RF_UNEXP_N && !ret; k++) {
		/* rt[k], k < 8: the (k)th message of tag B = message 2k + 1; then tag A. */
		uint32_t want = k < RF_UNEXP_N / 2 ? 2 * k + 1 : 2 * (k - RF_UNEXP_N / 2);
		const struct ft_comp *c = rf_comp(rf, &rt[k]);

		snprintf(what, sizeof(what), "unexpected: tagged receive %u (tag %c)", k,
			 k < RF_UNEXP_N / 2 ? 'B' : 'A');
		if (c->err) {
			ret = ft_comp_fail(&rf->ctx, &rf->ctx.rxcq, c, what);
			break;
		}
		ret = rf_check(rf, rt[k].base, c->e.len < rt[k].cap ? c->e.len : rt[k].cap,
			       RF_K_UNEXP_T, 0, &idx, what);
		if (ret)
			break;
		if (idx >= RF_UNEXP_N || seen_t[idx] || (idx & 1) != (want & 1) ||
		    (rf->sas && idx != want)) {
			ft_fail(&rf->ctx, "%s: got message %u, expected %s%u%s", what, idx,
				rf->sas ? "" : "one of tag's messages, like ", want,
				rf->sas ? " (FI_ORDER_SAS: same-tag messages match in send order)" :
				"");
			ret = -FI_EOTHER;
			break;
		}
		seen_t[idx] = true;
		ret = rf_check_recv(rf, &rt[k], true, rf_unexp_tag(idx), rf_unexp_size(idx), what);
	}
	for (k = 0; k < RF_UNEXP_N && !ret; k++) {
		const struct ft_comp *c = rf_comp(rf, &ru[k]);

		snprintf(what, sizeof(what), "unexpected: untagged receive %u", k);
		if (c->err) {
			ret = ft_comp_fail(&rf->ctx, &rf->ctx.rxcq, c, what);
			break;
		}
		ret = rf_check(rf, ru[k].base, c->e.len < ru[k].cap ? c->e.len : ru[k].cap,
			       RF_K_UNEXP_U, 0, &idx, what);
		if (ret)
			break;
		if (idx >= RF_UNEXP_N || seen_u[idx] || (rf->sas && idx != k)) {
			ft_fail(&rf->ctx, "%s: got message %u%s", what, idx,
				rf->sas ? " (FI_ORDER_SAS: untagged messages match in send order)" :
				", a second time");
			ret = -FI_EOTHER;
			break;
		}
		seen_u[idx] = true;
		ret = rf_check_recv(rf, &ru[k], false, 0, rf_unexp_size(idx), what);
	}
	snprintf(rf->detail, sizeof(rf->detail), "%d tagged (2 tags) + %d untagged, 8 B..70 KB, "
		 "all sent before any receive was posted; order %s", RF_UNEXP_N, RF_UNEXP_N,
		 rf->sas ? "checked (FI_ORDER_SAS)" : "not checked (no FI_ORDER_SAS)");
	return rf_fin_send(rf, ret);
}

static int rf_unexp_send(struct rf *rf)
{
	struct ft_op *tt, *tu;
	uint32_t i;
	int ret;

	tt = rf_ops(rf, RF_UNEXP_N, 70000, "tagged send");
	tu = rf_ops(rf, RF_UNEXP_N, 70000, "untagged send");
	if (!tt || !tu)
		return -FI_EOTHER;
	for (i = 0; i < RF_UNEXP_N; i++) {
		rf_fill(tt[i].base, rf_unexp_size(i), RF_K_UNEXP_T, i);
		rf_fill(tu[i].base, rf_unexp_size(i), RF_K_UNEXP_U, i);
		ret = rf_tsend(rf, &tt[i], rf_unexp_size(i), rf_unexp_tag(i));
		if (!ret)
			ret = rf_send(rf, &tu[i], rf_unexp_size(i));
		if (ret)
			return ret;
	}
	/*
	 * Behind them (FI_ORDER_SAS), the sync that lets the server post its
	 * receives. Large sends may complete only once received: wait after.
	 */
	ret = rf_sync_send(rf, 1, 0);
	if (!ret)
		ret = rf_wait_array(rf, tt, RF_UNEXP_N, "the tagged sends");
	if (!ret)
		ret = rf_wait_array(rf, tu, RF_UNEXP_N, "the untagged sends");
	for (i = 0; i < RF_UNEXP_N && !ret; i++) {
		ret = rf_check_send(rf, &tt[i], true, "unexpected: tagged send");
		if (!ret)
			ret = rf_check_send(rf, &tu[i], false, "unexpected: untagged send");
	}
	return rf_fin_wait(rf, ret);
}

static int rf_unexpected(struct rf *rf)
{
	return rf_server(rf) ? rf_unexp_receive(rf) : rf_unexp_send(rf);
}

/* ---- peek / claim / discard ---- */

#define RF_K_PEEK 0x9ee4
#define RF_PEEK_N 4

static uint64_t rf_peek_tag(uint32_t i)
{
	return RF_TAG(0x0b, 0x100 + i);  /* P1..P4: differ in the low byte only */
}

static size_t rf_peek_size(uint32_t i)
{
	return 64 + 100 * i;
}

static uint64_t rf_peek_data(const struct rf *rf)
{
	return 0x5eed0000cafe0002ull & rf->data_mask;
}

/*
 * Peek for tag/ignore with op; flags adds FI_CLAIM or FI_DISCARD. hit:
 * whether a message must be found (a miss must be FI_ENOMSG). A hit is
 * retried (on FI_ENOMSG) until the timeout, since without FI_ORDER_SAS the
 * message may still be on its way.
 */
static int rf_peek(struct rf *rf, struct ft_op *op, uint64_t tag, uint64_t ignore,
		   uint64_t flags, bool hit, const char *what)
{
	struct ft_ctx *ctx = &rf->ctx;
	uint64_t deadline = ft_deadline(ctx);
	const struct ft_comp *c;
	int ret;

	for (;;) {
		memset(op->base, RF_CANARY, op->cap);
		ret = rf_trecvmsg(rf, op, tag, ignore, FI_PEEK | flags);
		if (!ret)
			ret = rf_wait(rf, op, what);
		if (ret)
			return ret;
		c = rf_comp(rf, op);
		if (!hit) {
			if (c->err == FI_ENOMSG)
				return 0;
			if (c->err)
				return ft_comp_fail(ctx, &ctx->rxcq, c, what);
			ft_fail(ctx, "%s: the peek found a message (tag 0x%016llx, len %zu), but "
				"none should match", what, (unsigned long long)c->e.tag, c->e.len);
			return -FI_EOTHER;
		}
		if (!c->err)
			return 0;
		if (c->err != FI_ENOMSG)
			return ft_comp_fail(ctx, &ctx->rxcq, c, what);
		if (ft_now_ns() > deadline) {
			ft_fail(ctx, "%s: the peek still gave FI_ENOMSG after %d s, though the "
				"message was sent", what, ctx->opts->timeout_sec);
			return -FI_ETIMEDOUT;
		}
		sched_yield();
	}
}

/* A peek hit: flags, the tag and length of message i, data if returned. */
static int rf_peek_hit(struct rf *rf, const struct ft_op *op, uint32_t i, bool data,
		       const char *what)
{
	struct ft_ctx *ctx = &rf->ctx;
	const struct ft_comp *c = rf_comp(rf, op);
	uint32_t idx;

	if ((c->e.flags & (FI_TAGGED | FI_RECV)) != (FI_TAGGED | FI_RECV)) {
		ft_fail(ctx, "%s: peek completion flags %s, expected FI_TAGGED | FI_RECV", what,
			fi_tostr(&c->e.flags, FI_TYPE_CQ_EVENT_FLAGS));
		return -FI_EOTHER;
	}
	if (c->e.tag != rf_peek_tag(i) || c->e.len != rf_peek_size(i)) {
		ft_fail(ctx, "%s: the peek reported tag 0x%016llx, len %zu; the message has tag "
			"0x%016llx, len %zu", what, (unsigned long long)c->e.tag, c->e.len,
			(unsigned long long)rf_peek_tag(i), rf_peek_size(i));
		return -FI_EOTHER;
	}
	if ((c->e.flags & FI_REMOTE_CQ_DATA) && (!data || c->e.data != rf_peek_data(rf))) {
		ft_fail(ctx, "%s: the peek reported remote CQ data 0x%llx%s", what,
			(unsigned long long)c->e.data, data ? ", which is not the one sent" :
			" for a message sent without");
		return -FI_EOTHER;
	}
	/* A provider may return data with the peek: then it must be right. */
	if (c->e.buf)
		return rf_check(rf, op->base, rf_peek_size(i) < op->cap ? rf_peek_size(i) : op->cap,
				RF_K_PEEK, i, &idx, what);
	return 0;
}

static int rf_peek_receive(struct rf *rf)
{
	struct ft_ctx *ctx = &rf->ctx;
	bool data = rf->data_mask != 0;
	struct ft_op *op;
	const struct ft_comp *c;
	uint64_t family = rf_peek_tag(0) & ~0xFFull;
	uint32_t i, idx;
	int ret;

	op = rf_ops(rf, 6, 512, "peek receive");
	if (!op)
		return -FI_EOTHER;
	/* 1: nothing sent yet: a miss. */
	ret = rf_peek(rf, &op[0], rf_peek_tag(0), 0, 0, false, "peek before any message");
	if (!ret)
		ret = rf_sync_send(rf, 1, 0);
	if (!ret)
		ret = rf_sync_wait(rf, 2, NULL, "the client's sync after its sends");
	if (ret)
		return rf_fin_send(rf, ret);
	/* 2: P1 exactly, twice (a peek leaves the message), and the family with a mask. */
	ret = rf_peek(rf, &op[0], rf_peek_tag(0), 0, 0, true, "peek P1");
	if (!ret)
		ret = rf_peek_hit(rf, &op[0], 0, false, "peek P1");
	if (!ret)
		ret = rf_peek(rf, &op[0], rf_peek_tag(0), 0, 0, true, "peek P1 again");
	if (!ret)
		ret = rf_peek_hit(rf, &op[0], 0, false, "peek P1 again");
	if (!ret)
		ret = rf_peek(rf, &op[1], family, 0xFF, 0, true, "peek with ignore mask 0xff");
	if (!ret) {
		c = rf_comp(rf, &op[1]);
		i = (uint32_t)(c->e.tag - rf_peek_tag(0));
		if ((c->e.tag & ~0xFFull) != family || i >= RF_PEEK_N || (rf->sas && i != 0)) {
			ft_fail(ctx, "peek with ignore mask 0xff: reported tag 0x%016llx, expected "
				"%s", (unsigned long long)c->e.tag, rf->sas ?
				"P1's (FI_ORDER_SAS: the first sent)" : "one of P1..P4");
			ret = -FI_EOTHER;
		} else {
			ret = rf_peek_hit(rf, &op[1], i, data && i == 1, "peek with ignore mask");
		}
	}
	/* 3: peek + claim P2, then the claiming receive gets its data. */
	if (!ret)
		ret = rf_peek(rf, &op[2], rf_peek_tag(1), 0, FI_CLAIM, true, "peek|claim P2");
	if (!ret)
		ret = rf_peek_hit(rf, &op[2], 1, data, "peek|claim P2");
	if (!ret) {
		/* As an application would: a buffer of the size the peek reported. */
		memset(op[2].base, RF_CANARY, op[2].cap + RF_GAP);
		op[2].cap = rf_comp(rf, &op[2])->e.len;
		op[2].iov[0].iov_len = op[2].cap;
		ret = rf_trecvmsg(rf, &op[2], rf_peek_tag(1), 0, FI_CLAIM);
	}
	if (!ret)
		ret = rf_wait(rf, &op[2], "the claiming receive of P2");
	if (!ret)
		ret = rf_check_recv(rf, &op[2], true, rf_peek_tag(1), rf_peek_size(1),
				    "claiming receive of P2");
	if (!ret)
		ret = rf_check(rf, op[2].base, rf_peek_size(1), RF_K_PEEK, 1, &idx,
			       "claiming receive of P2");
	if (!ret && idx != 1) {
		ft_fail(ctx, "claiming receive of P2: got message %u", idx);
		ret = -FI_EOTHER;
	}
	if (!ret && data) {
		c = rf_comp(rf, &op[2]);
		if (!(c->e.flags & FI_REMOTE_CQ_DATA) || c->e.data != rf_peek_data(rf)) {
			ft_fail(ctx, "claiming receive of P2: remote CQ data %s0x%llx, expected "
				"0x%llx", c->e.flags & FI_REMOTE_CQ_DATA ? "" :
				"missing (no FI_REMOTE_CQ_DATA), value ",
				(unsigned long long)c->e.data,
				(unsigned long long)rf_peek_data(rf));
			ret = -FI_EOTHER;
		}
	}
	/* 4: peek + discard P3: gone afterwards. */
	if (!ret)
		ret = rf_peek(rf, &op[3], rf_peek_tag(2), 0, FI_DISCARD, true, "peek|discard P3");
	if (!ret && rf_comp(rf, &op[3])->e.tag && rf_comp(rf, &op[3])->e.tag != rf_peek_tag(2)) {
		ft_fail(ctx, "peek|discard P3: completion tag 0x%016llx",
			(unsigned long long)rf_comp(rf, &op[3])->e.tag);
		ret = -FI_EOTHER;
	}
	if (!ret)
		ret = rf_peek(rf, &op[3], rf_peek_tag(2), 0, 0, false, "peek P3 after its discard");
	/* 5: peek + claim P4, then claim + discard: gone afterwards. */
	if (!ret)
		ret = rf_peek(rf, &op[4], rf_peek_tag(3), 0, FI_CLAIM, true, "peek|claim P4");
	if (!ret)
		ret = rf_peek_hit(rf, &op[4], 3, false, "peek|claim P4");
	if (!ret)
		ret = rf_trecvmsg(rf, &op[4], rf_peek_tag(3), 0, FI_CLAIM | FI_DISCARD);
	if (!ret)
		ret = rf_wait(rf, &op[4], "the claim|discard of P4");
	if (!ret && rf_comp(rf, &op[4])->err)
		ret = ft_comp_fail(ctx, &ctx->rxcq, rf_comp(rf, &op[4]), "claim|discard P4");
	if (!ret)
		ret = rf_peek(rf, &op[4], rf_peek_tag(3), 0, 0, false, "peek P4 after its discard");
	/* 6: P1, peeked three times, is still there for a plain receive. */
	if (!ret) {
		memset(op[5].base, RF_CANARY, op[5].cap);
		ret = rf_trecv(rf, &op[5], rf_peek_tag(0), 0);
	}
	if (!ret)
		ret = rf_wait(rf, &op[5], "the receive of P1");
	if (!ret)
		ret = rf_check_recv(rf, &op[5], true, rf_peek_tag(0), rf_peek_size(0),
				    "receive of P1 after peeks");
	if (!ret)
		ret = rf_check(rf, op[5].base, rf_peek_size(0), RF_K_PEEK, 0, &idx,
			       "receive of P1 after peeks");
	/* 7: nothing of the family is left. */
	if (!ret)
		ret = rf_peek(rf, &op[1], family, 0xFF, 0, false, "peek with ignore mask at the end");
	snprintf(rf->detail, sizeof(rf->detail), "miss = FI_ENOMSG; hit exact and masked; "
		 "claim + FI_CLAIM receive%s; peek|discard; claim|discard",
		 data ? " (with remote CQ data)" : "");
	return rf_fin_send(rf, ret);
}

static int rf_peek_send(struct rf *rf)
{
	struct ft_ctx *ctx = &rf->ctx;
	struct ft_op *tx;
	uint32_t i;
	ssize_t ret;

	tx = rf_ops(rf, RF_PEEK_N, 512, "peek send");
	if (!tx)
		return -FI_EOTHER;
	ret = rf_sync_wait(rf, 1, NULL, "the server's first peek");
	for (i = 0; i < RF_PEEK_N && !ret; i++) {
		rf_fill(tx[i].base, rf_peek_size(i), RF_K_PEEK, i);
		if (i == 1 && rf->data_mask) {
			FT_POST(ret, ctx, "fi_tsenddata",
				fi_tsenddata(ctx->ep, tx[i].base, rf_peek_size(i), tx[i].desc[0],
					     rf_peek_data(rf), ctx->peer, rf_peek_tag(i),
					     &tx[i].fctx));
			if (!ret)
				rf_posted(rf, &tx[i]);
		} else {
			ret = rf_tsend(rf, &tx[i], rf_peek_size(i), rf_peek_tag(i));
		}
	}
	if (!ret)
		ret = rf_sync_send(rf, 2, 0);
	if (!ret)
		ret = rf_wait_array(rf, tx, RF_PEEK_N, "the peeked messages' sends");
	for (i = 0; i < RF_PEEK_N && !ret; i++)
		ret = rf_check_send(rf, &tx[i], true, "peek: send");
	return rf_fin_wait(rf, (int)ret);
}

static int rf_peek_test(struct rf *rf)
{
	return rf_server(rf) ? rf_peek_receive(rf) : rf_peek_send(rf);
}

/* ---- cancel ---- */

#define RF_K_CANCEL 0xca4c

static int rf_cancel_one(struct rf *rf, struct ft_op *op, const char *what)
{
	struct ft_ctx *ctx = &rf->ctx;
	const struct ft_comp *c;
	ssize_t ret;

	ret = fi_cancel(&ctx->ep->fid, &op->fctx);
	if (ret) {
		ft_fail(ctx, "%s: fi_cancel returned %zd (%s)", what, ret, fi_strerror((int)-ret));
		return (int)ret;
	}
	ret = rf_wait(rf, op, what);
	if (ret)
		return (int)ret;
	c = rf_comp(rf, op);
	if (c->err != FI_ECANCELED) {
		if (c->err)
			return ft_comp_fail(ctx, &ctx->rxcq, c, what);
		ft_fail(ctx, "%s: the canceled receive completed successfully (len %zu, flags %s)",
			what, c->e.len, fi_tostr(&c->e.flags, FI_TYPE_CQ_EVENT_FLAGS));
		return -FI_EOTHER;
	}
	/* Canceling it again finds nothing: no second completion (rf_reap checks). */
	ret = fi_cancel(&ctx->ep->fid, &op->fctx);
	if (ret && ret != -FI_ENOENT) {
		ft_fail(ctx, "%s: a second fi_cancel returned %zd (%s)", what, ret,
			fi_strerror((int)-ret));
		return (int)ret;
	}
	return 0;
}

static int rf_cancel(struct rf *rf)
{
	struct ft_op *op;
	uint32_t idx, i;
	uint64_t tag = RF_TAG(0x0c, 1);
	char what[64];
	int ret;

	op = rf_ops(rf, 4, 256, "cancel test op");
	if (!op)
		return -FI_EOTHER;
	/* Both sides: cancel a posted tagged and untagged receive. */
	ret = rf_trecv(rf, &op[0], tag, 0);
	if (!ret)
		ret = rf_recv(rf, &op[1]);
	if (!ret)
		ret = rf_cancel_one(rf, &op[0], "fi_cancel of a posted tagged receive");
	if (!ret)
		ret = rf_cancel_one(rf, &op[1], "fi_cancel of a posted untagged receive");
	if (rf_server(rf)) {
		/* The messages the client now sends go to new receives. */
		if (!ret)
			ret = rf_trecv(rf, &op[2], tag, 0);
		if (!ret)
			ret = rf_recv(rf, &op[3]);
		if (!ret)
			ret = rf_sync_send(rf, 1, 0);
		if (ret)
			return rf_fin_send(rf, ret);
		ret = rf_wait_array(rf, &op[2], 2, "the messages after the cancels");
		for (i = 0; i < 2 && !ret; i++) {
			snprintf(what, sizeof(what), "%s receive posted after the cancels",
				 i ? "untagged" : "tagged");
			ret = rf_check_recv(rf, &op[2 + i], !i, tag, 100 + i, what);
			if (!ret)
				ret = rf_check(rf, op[2 + i].base, 100 + i, RF_K_CANCEL, i, &idx, what);
		}
		snprintf(rf->detail, sizeof(rf->detail), "tagged and untagged receives canceled "
			 "(FI_ECANCELED) on both sides; later messages land in new receives");
		return rf_fin_send(rf, ret);
	}
	if (!ret)
		ret = rf_sync_wait(rf, 1, NULL, "the server's cancels");
	if (ret)
		return rf_fin_wait(rf, ret);
	rf_fill(op[2].base, 100, RF_K_CANCEL, 0);
	rf_fill(op[3].base, 101, RF_K_CANCEL, 1);
	ret = rf_tsend(rf, &op[2], 100, tag);
	if (!ret)
		ret = rf_send(rf, &op[3], 101);
	if (!ret)
		ret = rf_wait_array(rf, &op[2], 2, "the sends after the cancels");
	if (!ret)
		ret = rf_check_send(rf, &op[2], true, "cancel: tagged send");
	if (!ret)
		ret = rf_check_send(rf, &op[3], false, "cancel: untagged send");
	return rf_fin_wait(rf, ret);
}

/* ---- truncation ---- */

#define RF_K_TRUNC 0x7a0c
#define RF_TRUNC_N 4

/* Message i: sent bytes, receive buffer, tagged. The last fits: the endpoint still works. */
static const struct {
	size_t sent, buf;
	bool tagged;
} rf_trunc_plan[RF_TRUNC_N] = {
	{ 100, 64, true },
	{ 300000, 131072, true },
	{ 100, 64, false },
	{ 1000, 4096, true },
};

static int rf_trunc_receive(struct rf *rf)
{
	struct ft_ctx *ctx = &rf->ctx;
	struct ft_op *rx[RF_TRUNC_N];
	char *expect = NULL;
	const struct ft_comp *c;
	bool noted = false;
	char what[96];
	uint32_t i, idx;
	int ret = 0;

	for (i = 0; i < RF_TRUNC_N && !ret; i++) {
		rx[i] = rf_ops(rf, 1, rf_trunc_plan[i].buf, "truncation receive");
		if (!rx[i])
			return -FI_EOTHER;
		ret = rf_trunc_plan[i].tagged ? rf_trecv(rf, rx[i], RF_TAG(0x0d, i), 0) :
		      rf_recv(rf, rx[i]);
	}
	if (!ret)
		ret = rf_sync_send(rf, 1, 0);
	if (!ret)
		ret = rf_wait_ops(rf, rx, RF_TRUNC_N, "the truncated messages");
	if (ret)
		return rf_fin_send(rf, ret);
	expect = malloc(rf_trunc_plan[1].sent);
	if (!expect)
		return rf_fin_send(rf, -FI_ENOMEM);
	for (i = 0; i < RF_TRUNC_N && !ret; i++) {
		size_t sent = rf_trunc_plan[i].sent, buf = rf_trunc_plan[i].buf;

		c = rf_comp(rf, rx[i]);
		snprintf(what, sizeof(what), "trunc: %zu bytes into a %zu-byte %s receive", sent,
			 buf, rf_trunc_plan[i].tagged ? "tagged" : "untagged");
		if (sent <= buf) {
			ret = rf_check_recv(rf, rx[i], true, RF_TAG(0x0d, i), sent, what);
			if (!ret)
				ret = rf_check(rf, rx[i]->base, sent, RF_K_TRUNC, i, &idx, what);
			continue;
		}
		if (c->err != FI_ETRUNC) {
			if (c->err) {
				ret = ft_comp_fail(ctx, &ctx->rxcq, c, what);
			} else {
				ft_fail(ctx, "%s: a successful completion (len %zu, flags %s), not "
					"FI_ETRUNC", what, c->e.len,
					fi_tostr(&c->e.flags, FI_TYPE_CQ_EVENT_FLAGS));
				ret = -FI_EOTHER;
			}
			break;
		}
		if (c->olen != sent - buf) {
			ft_fail(ctx, "%s: FI_ETRUNC with olen %zu, expected %zu (the bytes that did "
				"not fit)", what, c->olen, sent - buf);
			ret = -FI_EOTHER;
			break;
		}
		if (c->e.len != buf && c->e.len != sent) {
			ft_fail(ctx, "%s: FI_ETRUNC with len %zu, expected %zu (placed) or %zu "
				"(sent)", what, c->e.len, buf, sent);
			ret = -FI_EOTHER;
			break;
		}
		if (c->e.len == sent && !noted) {
			noted = true;
			ft_msg(ctx, "note: %s: the FI_ETRUNC entry's len is the message size, "
			       "not the %zu bytes placed", what, buf);
		}
		if (rf_trunc_plan[i].tagged && c->e.tag && c->e.tag != RF_TAG(0x0d, i)) {
			ft_fail(ctx, "%s: FI_ETRUNC entry with tag 0x%016llx", what,
				(unsigned long long)c->e.tag);
			ret = -FI_EOTHER;
			break;
		}
		/* What fits is placed; nothing beyond the buffer. */
		rf_fill(expect, sent, RF_K_TRUNC, i);
		if (memcmp(rx[i]->base, expect, buf)) {
			size_t off = 0;

			while (((char *)rx[i]->base)[off] == expect[off])
				off++;
			ft_fail(ctx, "%s: the first %zu bytes were not placed as sent: first "
				"difference at offset %zu", what, buf, off);
			ret = -FI_EOTHER;
			break;
		}
		ret = rf_check_guard(rf, rx[i], what);
	}
	free(expect);
	snprintf(rf->detail, sizeof(rf->detail), "FI_ETRUNC and olen for 100 B into 64 B (tagged, "
		 "untagged) and 300000 B into 128 KiB; a fitting message afterwards");
	return rf_fin_send(rf, ret);
}

static int rf_trunc_send(struct rf *rf)
{
	struct ft_ctx *ctx = &rf->ctx;
	struct ft_op *tx[RF_TRUNC_N];
	const struct ft_comp *c;
	char what[96];
	uint32_t i;
	int ret;

	for (i = 0; i < RF_TRUNC_N; i++) {
		tx[i] = rf_ops(rf, 1, rf_trunc_plan[i].sent, "truncation send");
		if (!tx[i])
			return -FI_EOTHER;
		rf_fill(tx[i]->base, rf_trunc_plan[i].sent, RF_K_TRUNC, i);
	}
	ret = rf_sync_wait(rf, 1, NULL, "the server's receives");
	for (i = 0; i < RF_TRUNC_N && !ret; i++)
		ret = rf_trunc_plan[i].tagged ?
		      rf_tsend(rf, tx[i], rf_trunc_plan[i].sent, RF_TAG(0x0d, i)) :
		      rf_send(rf, tx[i], rf_trunc_plan[i].sent);
	if (!ret)
		ret = rf_wait_ops(rf, tx, RF_TRUNC_N, "the sends of the truncated messages");
	for (i = 0; i < RF_TRUNC_N && !ret; i++) {
		c = rf_comp(rf, tx[i]);
		snprintf(what, sizeof(what), "trunc: the send of %zu bytes (the receiver's buffer "
			 "holds %zu)", rf_trunc_plan[i].sent, rf_trunc_plan[i].buf);
		if (c->err) {
			ret = ft_comp_fail(ctx, &ctx->txcq, c, what);
			ft_fail(ctx, "%s: a truncation is the receiver's matter (fi_msg(3)); the "
				"send itself must complete successfully", what);
		} else {
			ret = rf_check_send(rf, tx[i], rf_trunc_plan[i].tagged, what);
		}
	}
	return rf_fin_wait(rf, ret);
}

static int rf_trunc(struct rf *rf)
{
	return rf_server(rf) ? rf_trunc_receive(rf) : rf_trunc_send(rf);
}

/* ---- multi-recv ---- */

#define RF_K_MR 0x3717

static const char *rf_mr_lacks(const struct rf *rf)
{
	return rf->multi_recv ? NULL : "the endpoint has no FI_MULTI_RECV";
}

static int rf_mr_post(struct rf *rf, struct ft_op *op)
{
	struct ft_ctx *ctx = &rf->ctx;
	struct fi_msg msg = {
		.msg_iov = op->iov,
		.desc = op->desc,
		.iov_count = 1,
		.addr = FI_ADDR_UNSPEC,
		.context = &op->fctx,
	};
	ssize_t ret;

	memset(op->base, RF_CANARY, op->cap + RF_GAP);
	FT_POST(ret, ctx, "fi_recvmsg(FI_MULTI_RECV)", fi_recvmsg(ctx->ep, &msg, FI_MULTI_RECV));
	if (!ret) {
		rf_posted(rf, op);
		rf->multi[rf_index(rf, op)] = true;
	}
	return (int)ret;
}

/* Take the completions of one phase: RF_MR_N messages into the buffers, each released once. */
static int rf_mr_collect(struct rf *rf, struct ft_op *buf, uint32_t phase, size_t *ncomp)
{
	struct ft_ctx *ctx = &rf->ctx;
	struct ft_op *list[RF_MR_BUFS];
	size_t used[RF_MR_BUFS] = { 0 }, nmsg[RF_MR_BUFS] = { 0 };
	size_t start[RF_MR_BUFS][RF_MR_N], end[RF_MR_BUFS][RF_MR_N];
	bool released[RF_MR_BUFS] = { false }, seen[RF_MR_N] = { false };
	char what[96];
	size_t i, b, k, off, total = 0;
	uint32_t idx;
	int ret;

	for (b = 0; b < RF_MR_BUFS; b++)
		list[b] = &buf[b];
	/* An op stays posted until its FI_MULTI_RECV completion. */
	ret = rf_wait_ops(rf, list, RF_MR_BUFS, "the release of the multi-recv buffers");
	if (ret)
		return ret;
	*ncomp = rf->nmlog;
	for (i = 0; i < rf->nmlog; i++) {
		const struct ft_comp *c = &rf->mlog[i];

		for (b = 0; b < RF_MR_BUFS && c->e.op_context != &buf[b].fctx; b++)
			;
		snprintf(what, sizeof(what), "multi_recv phase %u: completion %zu (buffer %zu)",
			 phase, i, b);
		if (c->err)
			return ft_comp_fail(ctx, &ctx->rxcq, c, what);
		if (b == RF_MR_BUFS || released[b]) {
			ft_fail(ctx, "%s: %s", what, b == RF_MR_BUFS ? "not one of the buffers" :
				"after the buffer was released (FI_MULTI_RECV)");
			return -FI_EOTHER;
		}
		if (c->e.len) {
			if (!(c->e.flags & FI_RECV) || (c->e.flags & (FI_TAGGED | FI_SEND))) {
				ft_fail(ctx, "%s: flags %s, expected FI_MSG | FI_RECV", what,
					fi_tostr(&c->e.flags, FI_TYPE_CQ_EVENT_FLAGS));
				return -FI_EOTHER;
			}
			if (!c->e.buf || (char *)c->e.buf < buf[b].base ||
			    (char *)c->e.buf + c->e.len > buf[b].base + RF_MR_BUF) {
				ft_fail(ctx, "%s: buf %p, len %zu: not inside the posted buffer %p "
					"(%d bytes)", what, c->e.buf, c->e.len, (void *)buf[b].base,
					RF_MR_BUF);
				return -FI_EOTHER;
			}
			off = (size_t)((char *)c->e.buf - buf[b].base);
			for (k = 0; k < nmsg[b]; k++) {
				if (off < end[b][k] && off + c->e.len > start[b][k]) {
					ft_fail(ctx, "%s: bytes %zu..%zu overlap an earlier message "
						"at %zu..%zu", what, off, off + c->e.len,
						start[b][k], end[b][k]);
					return -FI_EOTHER;
				}
			}
			if (nmsg[b] == RF_MR_N || c->e.len != RF_MR_MSG) {
				ft_fail(ctx, "%s: len %zu, expected %d", what, c->e.len, RF_MR_MSG);
				return -FI_EOTHER;
			}
			start[b][nmsg[b]] = off;
			end[b][nmsg[b]++] = off + c->e.len;
			ret = rf_check(rf, c->e.buf, c->e.len, RF_K_MR + phase, 0, &idx, what);
			if (ret)
				return ret;
			if (idx >= RF_MR_N || seen[idx]) {
				ft_fail(ctx, "%s: message %u a second time", what, idx);
				return -FI_EOTHER;
			}
			seen[idx] = true;
			if (ctx->source && c->src != ctx->peer) {
				ft_fail(ctx, "%s: FI_SOURCE gave 0x%llx, not the peer 0x%llx", what,
					(unsigned long long)c->src, (unsigned long long)ctx->peer);
				return -FI_EOTHER;
			}
			used[b] += c->e.len;
			total++;
		}
		if (c->e.flags & FI_MULTI_RECV) {
			released[b] = true;
			if (RF_MR_BUF - used[b] >= RF_MR_MIN) {
				ft_fail(ctx, "%s: released (FI_MULTI_RECV) with %zu bytes free, though "
					"FI_OPT_MIN_MULTI_RECV is %d", what, RF_MR_BUF - used[b],
					RF_MR_MIN);
				return -FI_EOTHER;
			}
		}
	}
	if (total != RF_MR_N) {
		ft_fail(ctx, "multi_recv phase %u: %zu messages, expected %d", phase, total, RF_MR_N);
		return -FI_EOTHER;
	}
	for (b = 0; b < RF_MR_BUFS; b++) {
		snprintf(what, sizeof(what), "multi_recv phase %u buffer %zu", phase, b);
		ret = rf_check_guard(rf, &buf[b], what);
		if (ret)
			return ret;
	}
	rf->nmlog = 0;
	return 0;
}

static int rf_mr_receive(struct rf *rf)
{
	struct ft_ctx *ctx = &rf->ctx;
	size_t min = RF_MR_MIN, got = 0, len = sizeof(got), n1 = 0, n2 = 0;
	struct ft_op *buf;
	uint32_t b;
	int ret;

	buf = rf_ops(rf, RF_MR_BUFS, RF_MR_BUF, "multi-recv buffer");
	if (!buf)
		return -FI_EOTHER;
	ret = fi_setopt(&ctx->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, sizeof(min));
	if (ret) {
		ft_error(ctx, "fi_setopt(FI_OPT_MIN_MULTI_RECV)", ret);
		return rf_fin_send(rf, ret);
	}
	ret = fi_getopt(&ctx->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &got, &len);
	if (ret || got != min) {
		if (ret)
			ft_error(ctx, "fi_getopt(FI_OPT_MIN_MULTI_RECV)", ret);
		else
			ft_fail(ctx, "fi_getopt(FI_OPT_MIN_MULTI_RECV) gave %zu after setting %zu",
				got, min);
		return rf_fin_send(rf, ret ? ret : -FI_EOTHER);
	}
	/* Phase 1: buffers posted before the messages are sent. */
	for (b = 0; b < RF_MR_BUFS && !ret; b++)
		ret = rf_mr_post(rf, &buf[b]);
	if (!ret)
		ret = rf_sync_send(rf, 1, 0);
	if (!ret)
		ret = rf_mr_collect(rf, buf, 1, &n1);
	/* Phase 2: the messages wait unexpected; the buffers come after them. */
	if (!ret)
		ret = rf_sync_send(rf, 2, 0);
	if (!ret)
		ret = rf_sync_wait(rf, 3, NULL, "the client's sync after phase 2's sends");
	for (b = 0; b < RF_MR_BUFS && !ret; b++)
		ret = rf_mr_post(rf, &buf[b]);
	if (!ret)
		ret = rf_mr_collect(rf, buf, 2, &n2);
	snprintf(rf->detail, sizeof(rf->detail), "%d x %d B into %d buffers of %d B, min %d: "
		 "posted before (%zu completions) and after (%zu) the sends", RF_MR_N, RF_MR_MSG,
		 RF_MR_BUFS, RF_MR_BUF, RF_MR_MIN, n1, n2);
	return rf_fin_send(rf, ret);
}

static int rf_mr_send(struct rf *rf)
{
	struct ft_op *tx;
	uint32_t i, phase;
	int ret = 0;

	tx = rf_ops(rf, RF_MR_N, RF_MR_MSG, "multi-recv send");
	if (!tx)
		return -FI_EOTHER;
	for (phase = 1; phase <= 2 && !ret; phase++) {
		ret = rf_sync_wait(rf, phase, NULL, "the server's multi-recv buffers");
		for (i = 0; i < RF_MR_N && !ret; i++) {
			rf_fill(tx[i].base, RF_MR_MSG, RF_K_MR + phase, i);
			ret = rf_send(rf, &tx[i], RF_MR_MSG);
		}
		if (!ret && phase == 2)
			ret = rf_sync_send(rf, 3, 0);
		if (!ret)
			ret = rf_wait_array(rf, tx, RF_MR_N, "the multi-recv sends");
		for (i = 0; i < RF_MR_N && !ret; i++)
			ret = rf_check_send(rf, &tx[i], false, "multi_recv: send");
	}
	return rf_fin_wait(rf, ret);
}

static int rf_multi_recv(struct rf *rf)
{
	return rf_server(rf) ? rf_mr_receive(rf) : rf_mr_send(rf);
}

/* ---- many in flight ---- */

#define RF_K_MANY 0x3a4e

static int rf_many(struct rf *rf)
{
	struct ft_ctx *ctx = &rf->ctx;
	uint32_t me = rf_server(rf), peer = !me, idx;
	uint64_t deadline = ft_deadline(ctx), last = 0;
	unsigned long eagain_tx = 0, eagain_rx = 0;
	struct ft_op *rx, *tx;
	size_t nrx = 0, ntx = 0, k;
	char what[96];
	ssize_t ret;

	rx = rf_ops(rf, RF_MANY, RF_MANY_SIZE, "many: receive");
	tx = rf_ops(rf, RF_MANY, RF_MANY_SIZE, "many: send");
	if (!rx || !tx)
		return -FI_EOTHER;
	for (k = 0; k < RF_MANY; k++)
		rf_fill(tx[k].base, RF_MANY_SIZE, RF_K_MANY + me, (uint32_t)k);
	/*
	 * Both sides at once: post receives while the provider takes them,
	 * then the sends back to back; on -FI_EAGAIN progress the CQs and
	 * post more receives.
	 */
	for (;;) {
		while (nrx < RF_MANY) {
			ret = fi_trecv(ctx->ep, rx[nrx].base, RF_MANY_SIZE, rx[nrx].desc[0],
				       FI_ADDR_UNSPEC, RF_TAG(0x0f, (peer << 16) | nrx), 0,
				       &rx[nrx].fctx);
			if (ret == -FI_EAGAIN) {
				eagain_rx++;
				break;
			}
			if (ret) {
				ft_error(ctx, "fi_trecv", (int)ret);
				return (int)ret;
			}
			rf_posted(rf, &rx[nrx++]);
		}
		while (ntx < RF_MANY) {
			ret = fi_tsend(ctx->ep, tx[ntx].base, RF_MANY_SIZE, tx[ntx].desc[0],
				       ctx->peer, RF_TAG(0x0f, (me << 16) | ntx), &tx[ntx].fctx);
			if (ret == -FI_EAGAIN) {
				eagain_tx++;
				break;
			}
			if (ret) {
				ft_error(ctx, "fi_tsend", (int)ret);
				return (int)ret;
			}
			rf_posted(rf, &tx[ntx++]);
		}
		if (nrx == RF_MANY && ntx == RF_MANY)
			break;
		ret = rf_reap(rf);
		if (ret < 0)
			return (int)ret;
		if (ret) {
			deadline = ft_deadline(ctx);
		} else if (ft_now_ns() > deadline) {
			ft_fail(ctx, "timeout: many: %zu sends and %zu receives posted of %d after "
				"%d s of -FI_EAGAIN", ntx, nrx, RF_MANY, ctx->opts->timeout_sec);
			return -FI_ETIMEDOUT;
		}
	}
	ret = rf_wait_array(rf, tx, RF_MANY, "the sends");
	if (!ret)
		ret = rf_wait_array(rf, rx, RF_MANY, "the receives");
	for (k = 0; k < RF_MANY && !ret; k++) {
		snprintf(what, sizeof(what), "many: send %zu", k);
		ret = rf_check_send(rf, &tx[k], true, what);
	}
	for (k = 0; k < RF_MANY && !ret; k++) {
		size_t i = rf_index(rf, &rx[k]);

		snprintf(what, sizeof(what), "many: receive %zu", k);
		ret = rf_check_recv(rf, &rx[k], true, RF_TAG(0x0f, (peer << 16) | k),
				    RF_MANY_SIZE, what);
		if (!ret)
			ret = rf_check(rf, rx[k].base, RF_MANY_SIZE, RF_K_MANY + peer, 0, &idx, what);
		if (!ret && idx != k) {
			ft_fail(ctx, "%s: holds message %u", what, idx);
			ret = -FI_EOTHER;
		}
		/* Exact tags: with FI_ORDER_SAS the receives complete in sending order. */
		if (!ret && rf->sas && rf->seq[i] < last) {
			ft_fail(ctx, "%s completed before an earlier message's receive, though "
				"FI_ORDER_SAS is granted", what);
			ret = -FI_EOTHER;
		}
		last = rf->seq[i];
	}
	snprintf(rf->detail, sizeof(rf->detail), "%d tagged %d-byte messages each way at once; "
		 "%lu send and %lu receive -FI_EAGAIN retries here", RF_MANY, RF_MANY_SIZE,
		 eagain_tx, eagain_rx);
	return (int)ret;
}

/* ---- large messages ---- */

static const char *rf_large_lacks(const struct rf *rf)
{
	return rf->ctx.max_payload < (1u << 20) ? "max_msg_size is below 1 MiB" : NULL;
}

static uint64_t rf_large_seed(size_t size, uint32_t dir)
{
	return ft_seed(0x1a26, size, dir, 0);
}

/* Above RF_LARGE_MAX: the first page, one 16-byte sample per page, the end. */
static ssize_t rf_large_check(const char *buf, size_t size, uint64_t seed)
{
	size_t page, off, i;
	ssize_t bad;

	if (size <= RF_LARGE_MAX)
		return ft_check(buf, size, seed);
	bad = ft_check(buf, 4096, seed);
	if (bad >= 0)
		return bad;
	for (page = 4096; page + 4096 <= size; page += 4096) {
		off = page + (((page >> 12) * 2654435761u) % (4096 - 16));
		for (i = off; i < off + 16; i++)
			if ((unsigned char)buf[i] != ft_pattern_byte(seed, i))
				return (ssize_t)i;
	}
	for (i = size - 16; i < size; i++)
		if ((unsigned char)buf[i] != ft_pattern_byte(seed, i))
			return (ssize_t)i;
	return -1;
}

static int rf_large_one(struct rf *rf, size_t size, bool client_sends, char *note, size_t nlen)
{
	struct ft_ctx *ctx = &rf->ctx;
	bool sender = client_sends != rf_server(rf), huge = size > RF_LARGE_MAX;
	uint64_t tag = RF_TAG(0x10, (size >> 20) << 1 | client_sends), t0;
	uint64_t seed = rf_large_seed(size, client_sends);
	char *buf = huge ? rf->huge_buf : sender ? rf->big_tx : rf->big_rx;
	void *desc = huge ? rf->huge_desc : sender ? rf->big_tx_desc : rf->big_rx_desc;
	struct ft_op *op;
	char what[96];
	ssize_t bad;
	int ret;

	op = rf_ops(rf, 1, 0, "large message");
	if (!op)
		return -FI_EOTHER;
	ft_op_init(ctx, op, "large message", buf, size, 1, NULL, 0);
	op->desc[0] = desc;
	snprintf(what, sizeof(what), "large: %zu bytes %s", size,
		 client_sends ? "client -> server" : "server -> client");
	if (sender) {
		ft_fill(buf, size, seed);
		ret = rf_sync_wait(rf, 10 + client_sends, NULL, "the receiver's large receive");
		t0 = ft_now_ns();
		if (!ret)
			ret = rf_tsend(rf, op, size, tag);
		if (!ret)
			ret = rf_wait(rf, op, what);
		if (!ret)
			ret = rf_check_send(rf, op, true, what);
		if (!ret && note)
			snprintf(note, nlen, "%.0f MB/s", (double)size * 1e3 /
				 (double)(ft_now_ns() - t0 + 1));
		return rf_fin_wait(rf, ret);
	}
	memset(buf, RF_CANARY, size + RF_GAP);
	ret = rf_trecv(rf, op, tag, 0);
	if (!ret)
		ret = rf_sync_send(rf, 10 + client_sends, 0);
	t0 = ft_now_ns();
	if (!ret)
		ret = rf_wait(rf, op, what);
	if (!ret && note)
		snprintf(note, nlen, "%.0f MB/s", (double)size * 1e3 /
			 (double)(ft_now_ns() - t0 + 1));
	if (!ret)
		ret = rf_check_recv(rf, op, true, tag, size, what);
	if (!ret) {
		bad = rf_large_check(buf, size, seed);
		if (bad >= 0) {
			ft_fail(ctx, "%s: data mismatch at offset %zd: 0x%02x, expected 0x%02x%s",
				what, bad, (unsigned char)buf[bad], ft_pattern_byte(seed, (size_t)bad),
				huge ? " (sampled check)" : "");
			ret = -FI_EOTHER;
		}
	}
	return rf_fin_send(rf, ret);
}

static int rf_large_alloc(struct rf *rf)
{
	struct ft_ctx *ctx = &rf->ctx;
	size_t big = RF_LARGE_MAX + 4096;
	int ret;

	if (!rf->big_tx) {
		rf->big_tx = aligned_alloc(4096, big);
		rf->big_rx = aligned_alloc(4096, big);
		if (!rf->big_tx || !rf->big_rx)
			goto nomem;
		ret = ft_reg(ctx, rf->big_tx, big, FI_SEND, &rf->big_tx_mr, &rf->big_tx_desc);
		if (!ret)
			ret = ft_reg(ctx, rf->big_rx, big, FI_RECV, &rf->big_rx_mr, &rf->big_rx_desc);
		if (ret)
			return ret;
	}
	if (rf->huge && !rf->huge_buf && ctx->max_payload >= RF_HUGE) {
		rf->huge_buf = aligned_alloc(4096, RF_HUGE + 4096);
		if (!rf->huge_buf)
			goto nomem;
		ret = ft_reg(ctx, rf->huge_buf, RF_HUGE + 4096,
			     rf_server(rf) ? FI_RECV : FI_SEND, &rf->huge_mr, &rf->huge_desc);
		if (ret)
			return ret;
	}
	return 0;
nomem:
	ft_fail(ctx, "large: cannot allocate the message buffers");
	return -FI_ENOMEM;
}

static int rf_large(struct rf *rf)
{
	static const size_t sizes[] = { 1u << 20, RF_LARGE_MAX };
	char note[2][32] = { "", "" };
	size_t i, len = 0;
	int dir, ret;

	ret = rf_large_alloc(rf);
	if (ret)
		return ret;
	len = (size_t)snprintf(rf->detail, sizeof(rf->detail), "each way, fully compared:");
	for (i = 0; i < 2; i++) {
		for (dir = 1; dir >= 0; dir--) {
			rf_reset(rf);
			ret = rf_large_one(rf, sizes[i], dir, note[dir], sizeof(note[dir]));
			if (ret)
				return ret;
		}
		len += (size_t)snprintf(rf->detail + len, sizeof(rf->detail) - len,
					" %zu MiB (%s%s%s)", sizes[i] >> 20, note[1],
					note[1][0] && note[0][0] ? ", " : "", note[0]);
	}
	if (rf->huge) {
		if (rf->ctx.max_payload < RF_HUGE) {
			len += (size_t)snprintf(rf->detail + len, sizeof(rf->detail) - len,
						"; 1 GiB skipped: max_msg_size %zu",
						rf->ctx.max_payload);
			return 0;
		}
		rf_reset(rf);
		note[1][0] = '\0';
		ret = rf_large_one(rf, RF_HUGE, true, note[1], sizeof(note[1]));
		if (ret)
			return ret;
		snprintf(rf->detail + len, sizeof(rf->detail) - len,
			 "; 1 GiB client -> server, sampled (%s)", note[1]);
	} else {
		snprintf(rf->detail + len, sizeof(rf->detail) - len, "; 1 GiB only with -L");
	}
	return 0;
}

/* ---- FI_SOURCE ---- */

#define RF_K_SOURCE 0x50c3

static const char *rf_source_lacks(const struct rf *rf)
{
	if (rf->ctx.source)
		return NULL;
	return rf->opts.no_source ? "FI_SOURCE not asked for (-u)" : "FI_SOURCE is not granted";
}

static int rf_source_dir(struct rf *rf, bool client_sends)
{
	struct ft_ctx *ctx = &rf->ctx;
	bool sender = client_sends != rf_server(rf);
	uint64_t tag1 = RF_TAG(0x11, 2 * client_sends), tag2 = RF_TAG(0x11, 2 * client_sends + 1);
	struct ft_op *op;
	char what[96];
	uint32_t i, idx;
	int ret;

	op = rf_ops(rf, 3, 128, sender ? "source: send" : "source: receive");
	if (!op)
		return -FI_EOTHER;
	if (sender) {
		ret = rf_sync_wait(rf, 20 + client_sends, NULL, "the receiver's receives");
		for (i = 0; i < 3 && !ret; i++) {
			rf_fill(op[i].base, 40 + i, RF_K_SOURCE + client_sends, i);
			ret = i == 1 ? rf_send(rf, &op[i], 40 + i) :
			      rf_tsend(rf, &op[i], 40 + i, i ? tag2 : tag1);
		}
		if (!ret)
			ret = rf_sync_send(rf, 30 + client_sends, 0);
		if (!ret)
			ret = rf_wait_array(rf, op, 3, "the sends");
		for (i = 0; i < 3 && !ret; i++)
			ret = rf_check_send(rf, &op[i], i != 1, "source: send");
		return rf_fin_wait(rf, ret);
	}
	/* Two receives posted before the messages (expected), one after (unexpected). */
	ret = rf_trecv(rf, &op[0], tag1, 0);
	if (!ret)
		ret = rf_recv(rf, &op[1]);
	if (!ret)
		ret = rf_sync_send(rf, 20 + client_sends, 0);
	if (!ret)
		ret = rf_sync_wait(rf, 30 + client_sends, NULL, "the sender's sync");
	if (!ret)
		ret = rf_trecv(rf, &op[2], tag2, 0);
	if (!ret)
		ret = rf_wait_array(rf, op, 3, "the messages");
	for (i = 0; i < 3 && !ret; i++) {
		const struct ft_comp *c = rf_comp(rf, &op[i]);

		snprintf(what, sizeof(what), "source: %s %s message from the %s",
			 i == 2 ? "unexpected" : "expected", i == 1 ? "untagged" : "tagged",
			 client_sends ? "client" : "server");
		if (!c->err && (c->src == FI_ADDR_NOTAVAIL || c->src == FI_ADDR_UNSPEC)) {
			ft_fail(ctx, "%s: fi_cq_readfrom gave no source (0x%llx)", what,
				(unsigned long long)c->src);
			ret = -FI_EOTHER;
			break;
		}
		ret = rf_check_recv(rf, &op[i], i != 1, i ? tag2 : tag1, 40 + i, what);
		if (!ret)
			ret = rf_check(rf, op[i].base, 40 + i, RF_K_SOURCE + client_sends, i, &idx,
				       what);
	}
	return rf_fin_send(rf, ret);
}

static int rf_source(struct rf *rf)
{
	int ret;

	ret = rf_source_dir(rf, true);
	if (ret)
		return ret;
	rf_reset(rf);
	ret = rf_source_dir(rf, false);
	snprintf(rf->detail, sizeof(rf->detail), "fi_cq_readfrom = the sender's fi_addr, for "
		 "expected tagged/untagged and unexpected tagged messages, both ways");
	return ret;
}

/* ---- remote CQ data ---- */

#define RF_K_CQDATA 0xcda7
#define RF_CQD_N    6

static const char *rf_cqdata_lacks(const struct rf *rf)
{
	return rf->data_mask ? NULL : "domain_attr->cq_data_size is 0 (no remote CQ data)";
}

/* Message i: how it is sent, and its length; tagged ones have tag RF_TAG(0x12, i). */
enum rf_cqd_call { RF_TSENDDATA, RF_SENDDATA, RF_TSEND, RF_TINJECTDATA, RF_INJECTDATA };
static const struct {
	enum rf_cqd_call call;
	size_t len;
	const char *name;
} rf_cqd_plan[RF_CQD_N] = {
	{ RF_TSENDDATA, 100, "fi_tsenddata" },
	{ RF_SENDDATA, 100, "fi_senddata" },
	{ RF_TSENDDATA, 0, "fi_tsenddata of 0 bytes" },
	{ RF_TSEND, 100, "fi_tsend (no data)" },
	{ RF_TINJECTDATA, 16, "fi_tinjectdata" },
	{ RF_INJECTDATA, 16, "fi_injectdata" },
};

static bool rf_cqd_tagged(size_t i)
{
	return rf_cqd_plan[i].call != RF_SENDDATA && rf_cqd_plan[i].call != RF_INJECTDATA;
}

static uint64_t rf_cqd_value(const struct rf *rf, size_t i, bool client_sends)
{
	uint64_t v = ft_seed(0xDA7A, i, client_sends, 0) & rf->data_mask;

	return v ? v : 1;
}

/* How many of the plan run: the inject ones need inject_size >= 16. */
static size_t rf_cqd_count(const struct rf *rf)
{
	return rf->ctx.info->tx_attr->inject_size >= 16 ? RF_CQD_N : RF_CQD_N - 2;
}

static int rf_cqd_send(struct rf *rf, bool client_sends)
{
	struct ft_ctx *ctx = &rf->ctx;
	size_t i, n = rf_cqd_count(rf), len;
	struct ft_op *op;
	uint64_t tag;
	char what[64];
	ssize_t ret;

	op = rf_ops(rf, RF_CQD_N, 128, "cqdata: send");
	if (!op)
		return -FI_EOTHER;
	ret = rf_sync_wait(rf, 40 + client_sends, NULL, "the receiver's receives");
	for (i = 0; i < n && !ret; i++) {
		uint64_t data = rf_cqd_value(rf, i, client_sends);

		len = rf_cqd_plan[i].len;
		tag = RF_TAG(0x12, i);
		rf_fill(op[i].base, len, RF_K_CQDATA + client_sends, (uint32_t)i);
		switch (rf_cqd_plan[i].call) {
		case RF_TSENDDATA:
			FT_POST(ret, ctx, "fi_tsenddata",
				fi_tsenddata(ctx->ep, op[i].base, len, op[i].desc[0], data,
					     ctx->peer, tag, &op[i].fctx));
			break;
		case RF_SENDDATA:
			FT_POST(ret, ctx, "fi_senddata",
				fi_senddata(ctx->ep, op[i].base, len, op[i].desc[0], data,
					    ctx->peer, &op[i].fctx));
			break;
		case RF_TSEND:
			FT_POST(ret, ctx, "fi_tsend",
				fi_tsend(ctx->ep, op[i].base, len, op[i].desc[0], ctx->peer, tag,
					 &op[i].fctx));
			break;
		case RF_TINJECTDATA:
			FT_POST(ret, ctx, "fi_tinjectdata",
				fi_tinjectdata(ctx->ep, op[i].base, len, data, ctx->peer, tag));
			break;
		case RF_INJECTDATA:
			FT_POST(ret, ctx, "fi_injectdata",
				fi_injectdata(ctx->ep, op[i].base, len, data, ctx->peer));
			break;
		}
		if (ret)
			break;
		if (rf_cqd_plan[i].call == RF_TINJECTDATA || rf_cqd_plan[i].call == RF_INJECTDATA)
			memset(op[i].base, 0xEE, len);  /* the buffer is ours again */
		else
			rf_posted(rf, &op[i]);
	}
	for (i = 0; i < n && !ret; i++) {
		if (rf_cqd_plan[i].call == RF_TINJECTDATA || rf_cqd_plan[i].call == RF_INJECTDATA)
			continue;
		snprintf(what, sizeof(what), "cqdata: %s", rf_cqd_plan[i].name);
		ret = rf_wait(rf, &op[i], what);
		if (!ret)
			ret = rf_check_send(rf, &op[i], rf_cqd_tagged(i), what);
	}
	/* No completion may come for the injects: rf_reap would fail on one. */
	return rf_fin_wait(rf, (int)ret);
}

static int rf_cqd_receive(struct rf *rf, bool client_sends)
{
	struct ft_ctx *ctx = &rf->ctx;
	size_t i, n = rf_cqd_count(rf), k;
	bool seen[RF_CQD_N] = { false };
	struct ft_op *op;
	char what[96];
	uint32_t idx;
	int ret = 0;

	op = rf_ops(rf, RF_CQD_N, 128, "cqdata: receive");
	if (!op)
		return -FI_EOTHER;
	for (i = 0; i < n && !ret; i++)
		ret = rf_cqd_tagged(i) ? rf_trecv(rf, &op[i], RF_TAG(0x12, i), 0) :
		      rf_recv(rf, &op[i]);
	if (!ret)
		ret = rf_sync_send(rf, 40 + client_sends, 0);
	if (!ret)
		ret = rf_wait_array(rf, op, n, "the messages with remote CQ data");
	for (k = 0; k < n && !ret; k++) {
		const struct ft_comp *c = rf_comp(rf, &op[k]);

		/* Untagged receives may take either untagged message: its header says which. */
		i = k;
		if (!rf_cqd_tagged(k) && !c->err && c->e.len >= RF_HDR) {
			memcpy(&idx, op[k].base + 4, sizeof(idx));
			i = idx < n && !rf_cqd_tagged(idx) ? idx : k;
		}
		snprintf(what, sizeof(what), "cqdata: %s (%s)", rf_cqd_plan[i].name,
			 client_sends ? "client -> server" : "server -> client");
		if (seen[i] || (rf->sas && i != k)) {
			ft_fail(ctx, "%s: landed in receive %zu%s", what, k,
				seen[i] ? " a second time" : " (FI_ORDER_SAS)");
			ret = -FI_EOTHER;
			break;
		}
		seen[i] = true;
		ret = rf_check_recv(rf, &op[k], rf_cqd_tagged(i), RF_TAG(0x12, i),
				    rf_cqd_plan[i].len, what);
		if (!ret)
			ret = rf_check(rf, op[k].base, rf_cqd_plan[i].len,
				       RF_K_CQDATA + client_sends, (uint32_t)i, &idx, what);
		if (ret)
			break;
		if (rf_cqd_plan[i].call == RF_TSEND) {
			if (c->e.flags & FI_REMOTE_CQ_DATA) {
				ft_fail(ctx, "%s: FI_REMOTE_CQ_DATA set (data 0x%llx) for a message "
					"sent without", what, (unsigned long long)c->e.data);
				ret = -FI_EOTHER;
			}
		} else if (!(c->e.flags & FI_REMOTE_CQ_DATA) ||
			   c->e.data != rf_cqd_value(rf, i, client_sends)) {
			ft_fail(ctx, "%s: %s0x%llx, expected FI_REMOTE_CQ_DATA with 0x%llx", what,
				c->e.flags & FI_REMOTE_CQ_DATA ? "data " :
				"no FI_REMOTE_CQ_DATA in the flags, data ",
				(unsigned long long)c->e.data,
				(unsigned long long)rf_cqd_value(rf, i, client_sends));
			ret = -FI_EOTHER;
		}
	}
	return rf_fin_send(rf, ret);
}

static int rf_cqdata(struct rf *rf)
{
	int dir, ret = 0;

	for (dir = 1; dir >= 0 && !ret; dir--) {
		rf_reset(rf);
		ret = (dir != rf_server(rf)) ? rf_cqd_send(rf, dir) : rf_cqd_receive(rf, dir);
	}
	snprintf(rf->detail, sizeof(rf->detail), "%zu-byte data: fi_tsenddata (100 B, 0 B), "
		 "fi_senddata, fi_tsend without%s, both ways", rf->ctx.info->domain_attr->cq_data_size,
		 rf_cqd_count(rf) == RF_CQD_N ? ", fi_tinjectdata, fi_injectdata" :
		 " (inject_size < 16: no inject calls)");
	return ret;
}

/* ---- driver ---- */

static const struct rf_test rf_tests[] = {
	{ "unexpected", "sender: 16 tagged + 16 untagged messages, then the sync",
	  NULL, rf_unexpected },
	{ "peek", "sender: 4 tagged messages to peek at", NULL, rf_peek_test },
	{ "cancel", "fi_cancel of posted receives; sender: 2 messages after them",
	  NULL, rf_cancel },
	{ "trunc", "sender: 4 messages, 3 larger than their receive buffers",
	  NULL, rf_trunc },
	{ "multi_recv", "sender: 2 x 28 untagged messages into multi-recv buffers",
	  rf_mr_lacks, rf_multi_recv },
	{ "many", "1000 tagged messages each way", NULL, rf_many },
	{ "large", "1 MiB and 16 MiB each way", rf_large_lacks, rf_large },
	{ "source", "FI_SOURCE both ways", rf_source_lacks, rf_source },
	{ "cqdata", "remote CQ data both ways", rf_cqdata_lacks, rf_cqdata },
};
#define RF_NTESTS (sizeof(rf_tests) / sizeof(rf_tests[0]))

static int rf_parse(void *arg, int c, const char *optarg)
{
	struct rf *rf = arg;
	char *copy, *tok, *save;
	size_t i;

	if (c == 'L') {
		rf->huge = true;
		return 0;
	}
	copy = strdup(optarg);
	if (!copy)
		return -FI_ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < RF_NTESTS && strcmp(tok, rf_tests[i].name); i++)
			;
		if (i == RF_NTESTS) {
			fprintf(stderr, "braid_rdm_func: error: -t %s: no such sub-test; they are:",
				tok);
			for (i = 0; i < RF_NTESTS; i++)
				fprintf(stderr, " %s", rf_tests[i].name);
			fprintf(stderr, "\n");
			free(copy);
			return -FI_EINVAL;
		}
		rf->select |= 1u << i;
	}
	free(copy);
	return 0;
}

/*
 * Cancel what a failed sub-test left posted and take the completions
 * that come within a second, so that the next control message finds
 * the receive meant for it.
 */
static void rf_cleanup(struct rf *rf)
{
	uint64_t end = ft_now_ns() + 1000000000ull;
	size_t i, left;

	for (i = 0; i < rf->nused; i++)
		if (rf->pool[i].posted)
			fi_cancel(&rf->ctx.ep->fid, &rf->pool[i].fctx);
	do {
		for (i = 0, left = 0; i < rf->nused; i++)
			left += rf->pool[i].posted;
		if (!left || rf_reap(rf) < 0)
			break;
	} while (ft_now_ns() < end);
	for (i = 0; i < rf->nused; i++)
		rf->pool[i].posted = false;
}

enum rf_result { RF_PASS, RF_FAIL, RF_SKIP };

/*
 * One sub-test: agree with the peer whether it can run (START / READY
 * carry each side's answer), run it, exchange the verdicts (DONE).
 * Returns the result; *stop when the control channel itself broke.
 */
static enum rf_result rf_run_test(struct rf *rf, uint32_t t, bool *stop)
{
	struct ft_ctx *ctx = &rf->ctx;
	const struct rf_test *test = &rf_tests[t];
	const char *why = test->lacks ? test->lacks(rf) : NULL;
	bool server = rf_server(rf);
	uint64_t t0;
	struct ft_ctrl m;
	uint32_t peer_status = 0;
	int ret;

	rf->test = t;
	rf_reset(rf);
	rf->detail[0] = '\0';
	ret = ft_ctrl_post(ctx);
	if (!ret && !server)
		ret = ft_ctrl_send(ctx, FT_CTRL_START, t, !why);
	if (!ret)
		ret = ft_ctrl_wait(ctx, &m, 0, server ? "the client's START" : "the server's READY");
	if (!ret && (m.type != (server ? FT_CTRL_START : FT_CTRL_READY) || m.arg0 != t)) {
		ft_fail(ctx, "sub-test %s: expected %s %u, received %s %u: the sides disagree",
			test->name, server ? "START" : "READY", t, ft_ctrl_str(m.type), m.arg0);
		ret = -FI_EOTHER;
	}
	if (!ret && server)
		ret = ft_ctrl_send(ctx, FT_CTRL_READY, t, !why);
	if (ret) {
		*stop = true;
		printf("%-11s FAIL  (the control exchange before it failed)\n", test->name);
		return RF_FAIL;
	}
	if (why || !m.arg1) {
		printf("%-11s SKIP  (%s)\n", test->name, why ? why : "the peer lacks what it needs");
		fflush(stdout);
		return RF_SKIP;
	}

	t0 = ft_now_ns();
	ret = test->run(rf);
	if (ret)
		rf_cleanup(rf);
	/* Verdicts: both sides learn of a failure on either. */
	if (ft_ctrl_post(ctx) ||
	    (!server && ft_ctrl_send(ctx, FT_CTRL_DONE, t, ret != 0)) ||
	    ft_ctrl_wait(ctx, &m, 0, "the peer's verdict") ||
	    (server && ft_ctrl_send(ctx, FT_CTRL_DONE, t, ret != 0))) {
		*stop = true;
		ret = ret ? ret : -FI_EOTHER;
	} else if (m.type != FT_CTRL_DONE || m.arg0 != t) {
		ft_fail(ctx, "sub-test %s: expected DONE %u, received %s %u", test->name, t,
			ft_ctrl_str(m.type), m.arg0);
		*stop = true;
		ret = ret ? ret : -FI_EOTHER;
	} else {
		peer_status = m.arg1;
	}
	if (!ret && peer_status)
		ft_msg(ctx, "sub-test %s: the peer reported a failure (see its output)", test->name);
	printf("%-11s %s  %.2f s  %s\n", test->name, ret || peer_status ? "FAIL" : "PASS",
	       (double)(ft_now_ns() - t0) / 1e9, rf->detail[0] ? rf->detail : test->what);
	fflush(stdout);
	return ret || peer_status ? RF_FAIL : RF_PASS;
}

static int rf_alloc(struct rf *rf)
{
	struct ft_ctx *ctx = &rf->ctx;

	rf->pool = calloc(RF_POOL, sizeof(*rf->pool));
	rf->comp = calloc(RF_POOL, sizeof(*rf->comp));
	rf->seq = calloc(RF_POOL, sizeof(*rf->seq));
	rf->multi = calloc(RF_POOL, sizeof(*rf->multi));
	if (!rf->pool || !rf->comp || !rf->seq || !rf->multi || ft_alloc_buf(ctx, RF_BUF))
		return -FI_ENOMEM;
	rf->sync_tx = &rf->pool[0];
	rf->sync_rx = &rf->pool[1];
	ft_op_init(ctx, rf->sync_tx, "sync send", ctx->buf, sizeof(struct rf_sync), 1, NULL, 0);
	ft_op_init(ctx, rf->sync_rx, "sync receive", ctx->buf + 64, sizeof(struct rf_sync), 1,
		   NULL, 0);
	memset(ctx->buf, RF_CANARY, 2 * 64);
	rf->nused = 2;
	return 0;
}

/* Every optional capability, then fewer: FI_SOURCE, FI_MULTI_RECV, FI_ORDER_SAS. */
static size_t rf_wants(struct ft_want *want)
{
	static const uint8_t order[] = { 7, 6, 5, 3, 4, 2, 1, 0 }; /* bits: source, multi, sas */
	size_t i;

	for (i = 0; i < sizeof(order); i++) {
		want[i].caps = FI_MSG | FI_TAGGED | (order[i] & 4 ? FI_SOURCE : 0) |
			       (order[i] & 2 ? FI_MULTI_RECV : 0);
		want[i].msg_order = order[i] & 1 ? FI_ORDER_SAS : 0;
	}
	return i;
}

static int rf_run(struct rf *rf)
{
	struct ft_ctx *ctx = &rf->ctx;
	struct ft_want want[8];
	const struct fi_info *info;
	unsigned npass = 0, nfail = 0, nskip = 0;
	bool stop = false;
	fi_addr_t self;
	size_t cqd;
	uint32_t t;
	int ret;

	ret = ft_setup(ctx, &rf->opts, want, rf_wants(want));
	if (ret)
		return ret == -FI_ENODATA ? FT_EXIT_USAGE : FT_EXIT_FAIL;
	info = ctx->info;
	if (ctx->prefix) {
		ft_fail(ctx, "the provider requires FI_MSG_PREFIX, which this test does not support");
		return FT_EXIT_FAIL;
	}
	ctx->txcq.keep_errors = true;
	ctx->rxcq.keep_errors = true;
	rf->sas = (info->tx_attr->msg_order & info->rx_attr->msg_order & FI_ORDER_SAS) != 0;
	rf->multi_recv = (info->caps & FI_MULTI_RECV) != 0;
	cqd = info->domain_attr->cq_data_size;
	rf->data_mask = cqd >= 8 ? ~0ull : cqd ? (1ull << (8 * cqd)) - 1 : 0;
	if (rf_alloc(rf))
		return FT_EXIT_FAIL;
	ft_print_info(ctx);
	ft_msg(ctx, "FI_ORDER_SAS %s, FI_MULTI_RECV %s, FI_SOURCE %s, caps %s",
	       rf->sas ? "yes" : "no", rf->multi_recv ? "yes" : "no", ctx->source ? "yes" : "no",
	       fi_tostr(&info->caps, FI_TYPE_CAPS));

	ctx->config = ft_seed(ft_config_hash(0x7266, NULL, 0, 0), rf->select, rf->huge,
			      ctx->source);
	if (rf_server(rf)) {
		/*
		 * Our own address first, so that the client is not fi_addr 0 here:
		 * a provider whose fi_cq_readfrom always gives 0 cannot pass.
		 */
		if (ctx->source && fi_av_insert(ctx->av, ctx->local_name, 1, &self, 0, NULL) != 1)
			ft_msg(ctx, "note: fi_av_insert of our own address failed: the client will "
			       "be fi_addr 0, and a source of 0 is not proof of FI_SOURCE");
		ret = ft_hello_server_wait(ctx);
		if (!ret)
			ret = ft_hello_server_ack(ctx);
	} else {
		ret = ft_hello_client(ctx);
	}
	if (ret)
		return FT_EXIT_FAIL;

	for (t = 0; t < RF_NTESTS && !stop; t++) {
		if (rf->select && !(rf->select & (1u << t)))
			continue;
		switch (rf_run_test(rf, t, &stop)) {
		case RF_PASS:
			npass++;
			break;
		case RF_FAIL:
			nfail++;
			break;
		default:
			nskip++;
			break;
		}
	}
	ft_msg(ctx, "%u passed, %u failed, %u skipped%s", npass, nfail, nskip,
	       stop ? " (stopped: the control exchange failed)" : "");
	if (nfail || stop)
		return FT_EXIT_FAIL;
	return npass ? FT_EXIT_PASS : FT_EXIT_SKIP;
}

int main(int argc, char **argv)
{
	static struct rf rf;
	static const struct ft_extra_opts extra = {
		.ep_type = FI_EP_RDM,
		.optstring = "t:L",
		.usage = "  -t NAME    run only this sub-test (a list NAME,NAME or repeated -t);\n"
			 "             unexpected peek cancel trunc multi_recv many large source cqdata\n"
			 "  -L         large: also a 1 GiB message (1 GiB of memory on each side)\n",
		.parse = rf_parse,
		.arg = &rf,
	};
	int ret;

	ft_parse_opts_extra(&rf.opts, argc, argv, rf_about, &extra);
	ret = rf_run(&rf);
	if (rf.big_tx_mr)
		fi_close(&rf.big_tx_mr->fid);
	if (rf.big_rx_mr)
		fi_close(&rf.big_rx_mr->fid);
	if (rf.huge_mr)
		fi_close(&rf.huge_mr->fid);
	ft_teardown(&rf.ctx);
	free(rf.big_tx);
	free(rf.big_rx);
	free(rf.huge_buf);
	free(rf.pool);
	free(rf.comp);
	free(rf.seq);
	free(rf.multi);
	printf("%s: %s %s over %s: %s\n", rf.opts.prog,
	       ft_is_server(&rf.opts) ? "server" : "client",
	       ft_ep_type_str(rf.opts.ep_type),
	       rf.opts.prov_name ? rf.opts.prov_name : "(any provider)",
	       ret == FT_EXIT_PASS ? "PASS" : ret == FT_EXIT_SKIP ? "SKIP" : "FAIL");
	return ret;
}
