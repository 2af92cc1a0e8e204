/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_msg_rx.c: the receive side of MSG endpoints: receives posted (untagged, tagged, multi-receive) and matched to each message as the RC queue pair asks for one, unexpected messages of a tagged connection held in a bounded arena, and the receive completions. */
#include <string.h>
#include <sys/mman.h>

#include "braid_msg_int.h"

/*
 * RC places each SEND into the next receive, in PSN order, and asks for it
 * when the SEND's first packet arrives (srq_pull, core/braid_rc.h). The
 * endpoint keeps its receives here rather than on the QP, and answers that
 * question:
 *
 * - without braid's message header (a plain RoCE connection): the oldest
 *   untagged receive, or the next part of the oldest multi-receive buffer;
 *   none: the SEND is RNR NAKed and retried, as on a verbs QP.
 * - with it (both sides asked FI_TAGGED, protocol.md §5.10): the header in
 *   the first packet says tagged or not, the tag and the length; a tagged
 *   message takes the first tagged receive whose tag matches (fi_tagged(3),
 *   in posting order), an untagged one as above; no receive: the message is
 *   received into the arena (unexpected) and matched when a receive is
 *   posted. A full arena or record pool: RNR NAK, the sender waits.
 *
 * A message placed straight into its receive is copied once (by the QP);
 * an unexpected one twice. Messages are matched in the order they were sent
 * (FI_ORDER_SAS): a receive posted while an earlier unexpected message
 * still arrives is bound to it and completes with it.
 *
 * Records (struct rxe) come from one pool: half for the application's
 * receives (posting fails with -FI_EAGAIN beyond it), half for the parts of
 * multi-receive buffers and unexpected messages, so unexpected messages
 * never keep a receive from being posted. Caller holds the domain lock.
 */

#define RX_ALIGN	64	/* arena ranges start on a cache line */

enum rxe_kind {
	RXE_RECV,	/* a receive of the application's (or an FI_PEEK's answer) */
	RXE_MULTI,	/* a multi-receive buffer: never given to the QP itself */
	RXE_PART,	/* one message's part of a multi-receive buffer */
	RXE_UNEXP,	/* an unexpected message: its range of the arena */
	RXE_DISCARD,	/* a message without a valid header: received into nothing */
};

/** struct rxe - one record: a receive, a part, an unexpected message. */
struct rxe {
	/** @node: on posted_msg, posted_tagged, unexp or ready, or none. */
	struct braid_dlist node;
	enum rxe_kind kind;
	/** @iov, @iov_count: where the message goes (RXE_UNEXP: its arena range). */
	struct iovec iov[BRAID_RC_IOV_MAX];
	size_t iov_count;
	/** @context: the application's (RXE_PART: its buffer's). */
	void *context;
	/** @tagged, @tag, @ignore: a tagged receive and what it matches. */
	bool tagged;
	uint64_t tag, ignore;
	/** @silent: no CQ entry on success (FI_SELECTIVE_COMPLETION without FI_COMPLETION). */
	bool silent;
	/* RXE_MULTI */
	/** @cap, @used, @min_free: the buffer, the bytes given to messages, its floor. */
	uint64_t cap, used, min_free;
	/** @refs: parts not reported yet; @retired: off the posted list, handed back by the last. */
	uint32_t refs;
	bool retired;
	/** @parent: RXE_PART: its buffer. */
	struct rxe *parent;
	/* RXE_UNEXP */
	/** @boff, @blen: its arena range (@blen 0: none); @done: all of it arrived. */
	uint64_t boff, blen;
	bool done;
	/** @bound: the receive it goes to once done (posted while it was arriving). */
	struct rxe *bound;
	/** @claim: the context of the FI_PEEK | FI_CLAIM that claimed it, or NULL. */
	void *claim;
	/* the message, then the completion */
	/** @msg_tagged, @msg_tag: what the message's header said. */
	bool msg_tagged;
	uint64_t msg_tag;
	/** @res_*: the completion: FI_* flags beyond the kind's, bytes, lost bytes, error, data. */
	uint64_t res_flags;
	size_t res_len, res_olen;
	int res_err, res_perr;
	uint32_t res_data;
	void *res_buf;
};

/* ---- records ---- */

static struct rxe *rxe_new(struct braid_msg_rx *rx, enum rxe_kind kind)
{
	bool user = kind == RXE_RECV || kind == RXE_MULTI;
	struct rxe *r;

	if (user ? rx->nuser >= rx->size : rx->naux >= rx->size)
		return NULL;
	r = braid_pool_alloc(&rx->pool);
	if (!r)
		return NULL;
	braid_dlist_init(&r->node);
	r->kind = kind;
	if (user)
		rx->nuser++;
	else
		rx->naux++;
	return r;
}

static void rxe_free(struct braid_msg_rx *rx, struct rxe *r)
{
	braid_dlist_remove(&r->node);
	if (r->kind == RXE_RECV || r->kind == RXE_MULTI)
		rx->nuser--;
	else
		rx->naux--;
	braid_pool_release(&rx->pool, r);
}

static uint64_t rxe_capacity(const struct rxe *r)
{
	return braid_iov_len(r->iov, r->iov_count);
}

static bool rxe_matches(const struct rxe *r, uint64_t tag)
{
	return ((r->tag ^ tag) & ~r->ignore) == 0;
}

/* ---- the arena of unexpected messages ---- */

/* A range of @len bytes of the arena (mapped when first needed): 0, or -1 when full. */
static int arena_take(struct braid_msg_rx *rx, struct rxe *u, uint64_t len)
{
	int64_t off;

	u->blen = 0;
	u->iov_count = 0;
	if (!len)
		return 0;
	if (!rx->arena) {
		/* untouched pages cost nothing: an arena of FI_BRAID_UNEXP_BYTES costs what is held */
		void *p = mmap(NULL, rx->arena_size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (p == MAP_FAILED)
			return -1;
		if (braid_extents_construct(&rx->ext, rx->arena_size, RX_ALIGN, rx->size)) {
			munmap(p, rx->arena_size);
			return -1;
		}
		rx->arena = p;
	}
	off = braid_extents_alloc(&rx->ext, len);
	if (off < 0)
		return -1;
	u->boff = (uint64_t)off;
	u->blen = len;
	u->iov[0] = (struct iovec){ rx->arena + off, len };
	u->iov_count = 1;
	return 0;
}

static void unexp_free(struct braid_msg_rx *rx, struct rxe *u)
{
	if (u->blen)
		braid_extents_free(&rx->ext, u->boff, u->blen);
	rxe_free(rx, u);
}

/* ---- completions ---- */

/* the FI_* flags a completion of @r has: its kind's and the message's */
static uint64_t rxe_flags(const struct rxe *r)
{
	if (r->res_flags & FI_REMOTE_WRITE)
		return r->res_flags;
	return FI_RECV | (r->msg_tagged || r->tagged ? FI_TAGGED : FI_MSG) | r->res_flags;
}

/*
 * Write @r's completion to the CQ and counter and release what it held
 * (the CQ has room: the caller checked). A part's buffer is handed back
 * with its last part (FI_MULTI_RECV), even if completions are selective.
 */
static void rxe_report(struct braid_msg_rx *rx, struct rxe *r)
{
	struct braid_ep *ep = rx->ep;
	struct rxe *m = r->kind == RXE_PART ? r->parent : r;
	uint64_t flags = rxe_flags(r);
	bool last = false, count = true;

	if (r->kind == RXE_PART) {
		last = --m->refs == 0 && m->retired;
		if (last)
			flags |= FI_MULTI_RECV;
	} else if (r->kind == RXE_MULTI) {
		/* the buffer alone, handed back (released, or canceled) */
		flags = r->res_flags;
		count = r->res_err != 0;
	}
	braid_msg_write_rx(ep, m->context, flags, r->res_len, r->res_buf, r->res_data,
			   r->msg_tag, r->res_err, r->res_perr, r->res_olen,
			   m->silent && !r->res_err && !(flags & FI_MULTI_RECV), count);
	if (r->kind == RXE_PART) {
		rxe_free(rx, r);
		if (last)
			rxe_free(rx, m);
	} else {
		rxe_free(rx, r);
	}
}

/* @r's completion is ready: reported at the next progress, as the CQ has room */
static void rxe_ready(struct braid_msg_rx *rx, struct rxe *r)
{
	braid_dlist_remove(&r->node);
	braid_dlist_insert_tail(&r->node, &rx->ready);
}

/* A multi-receive buffer leaves the posted list; with no part outstanding it is handed back now. */
static void multi_retire(struct braid_msg_rx *rx, struct rxe *m)
{
	braid_dlist_remove(&m->node);
	m->retired = true;
	if (!m->refs) {
		m->res_flags = FI_MULTI_RECV;
		m->res_len = 0;
		rxe_ready(rx, m);
	}
}

/* a part of @m for a message of up to @len bytes (UINT64_MAX: the rest), or NULL (no record) */
static struct rxe *multi_part(struct braid_msg_rx *rx, struct rxe *m, uint64_t len)
{
	struct rxe *p = rxe_new(rx, RXE_PART);
	uint64_t room = m->cap - m->used;

	if (!p)
		return NULL;
	p->parent = m;
	p->iov[0] = (struct iovec){ (uint8_t *)m->iov[0].iov_base + m->used,
				    (size_t)(len < room ? len : room) };
	p->iov_count = 1;
	p->res_buf = p->iov[0].iov_base;
	m->refs++;
	return p;
}

/* @m's parts took @len more bytes: it retires when less than its floor is left */
static void multi_used(struct braid_msg_rx *rx, struct rxe *m, uint64_t len)
{
	m->used += len < m->cap - m->used ? len : m->cap - m->used;
	if (!m->retired && m->cap - m->used < m->min_free)
		multi_retire(rx, m);
}

/* Unexpected message @u, all arrived, into receive or part @r (its completion set); @u freed. */
static void unexp_deliver(struct braid_msg_rx *rx, struct rxe *u, struct rxe *r)
{
	uint64_t cap = rxe_capacity(r);
	size_t n = u->res_len < cap ? u->res_len : (size_t)cap;

	if (n)
		braid_iov_scatter(r->iov, r->iov_count, 0, u->iov[0].iov_base, n);
	r->msg_tagged = u->msg_tagged;
	r->msg_tag = u->msg_tag;
	r->res_len = n;
	r->res_olen = u->res_len - n + u->res_olen;
	r->res_err = r->res_olen ? FI_ETRUNC : 0;
	r->res_perr = r->res_olen ? BRAID_PERR_TRUNC : BRAID_PERR_OK;
	r->res_data = u->res_data;
	r->res_flags |= u->res_flags;
	if (r->kind == RXE_RECV)
		r->res_buf = r->iov_count ? r->iov[0].iov_base : NULL;
	unexp_free(rx, u);
}

/* @r ends with @err (and the message's nothing): its completion is ready */
static void rxe_fail(struct braid_msg_rx *rx, struct rxe *r, int err, int perr)
{
	r->res_err = err;
	r->res_perr = perr;
	r->res_len = 0;
	r->res_olen = 0;
	rxe_ready(rx, r);
}

/* ---- the RC queue pair asks for a receive ---- */

/*
 * The oldest untagged receive for a message of @len bytes (@known: else
 * more than @len). A multi-receive buffer too short for it is handed back
 * first (fi_msg(3): the buffer holds whole messages) and the next receive
 * is looked at.
 */
static struct rxe *head_untagged(struct braid_msg_rx *rx, bool known, uint64_t len)
{
	while (!braid_dlist_empty(&rx->posted_msg)) {
		struct rxe *r = braid_container_of(rx->posted_msg.next, struct rxe, node);
		uint64_t room;

		if (r->kind != RXE_MULTI)
			return r;
		room = r->cap - r->used;
		if (known ? len <= room : len < room)
			return r;
		multi_retire(rx, r);
	}
	return NULL;
}

static struct rxe *first_tagged(struct braid_msg_rx *rx, uint64_t tag)
{
	struct braid_dlist *it;

	braid_dlist_foreach(&rx->posted_tagged, it) {
		struct rxe *r = braid_container_of(it, struct rxe, node);

		if (rxe_matches(r, tag))
			return r;
	}
	return NULL;
}

static int give(struct rxe *r, uint32_t skip, struct braid_rc_recv *rr)
{
	rr->iov = r->iov;
	rr->iov_count = r->iov_count;
	rr->skip = skip;
	rr->flags = 0;
	rr->context = r;
	return 0;
}

int braid_msg_rx_pull(void *ctx, const struct braid_rc_msg_start *m, struct braid_rc_recv *rr)
{
	struct braid_msg_rx *rx = ctx;
	struct braid_roce_msg_view h = { .kind = BRAID_ROCE_MSG_UNTAGGED };
	uint32_t skip = 0;
	uint64_t len = m->payload_len;
	bool known = m->whole;
	struct rxe *r;

	if (rx->framed && !m->write_imm) {
		if (braid_roce_msg_parse(m->payload, m->payload_len, &h)) {
			/* not braid's header: taken into nothing, dropped */
			r = rxe_new(rx, RXE_DISCARD);
			if (!r)
				return -FI_EAGAIN;
			return give(r, 0, rr);
		}
		skip = BRAID_ROCE_MSG_HDR_LEN;
		len = h.len;
		known = true;
	} else if (m->write_imm) {
		len = 0;
		known = true;
	}
	r = h.kind == BRAID_ROCE_MSG_TAGGED ? first_tagged(rx, h.tag) : head_untagged(rx, known, len);
	if (r && r->kind == RXE_MULTI) {
		struct rxe *p = multi_part(rx, r, UINT64_MAX);

		if (!p)
			return -FI_EAGAIN;
		return give(p, skip, rr);
	}
	if (r) {
		braid_dlist_remove(&r->node);
		r->msg_tagged = h.kind == BRAID_ROCE_MSG_TAGGED;
		r->msg_tag = h.tag;
		return give(r, skip, rr);
	}
	if (!rx->framed || m->write_imm)
		return -FI_EAGAIN;	/* RNR: the sender retries */
	/* unexpected: into the arena, matched when a receive is posted */
	r = rxe_new(rx, RXE_UNEXP);
	if (!r)
		return -FI_EAGAIN;
	if (arena_take(rx, r, len)) {
		rxe_free(rx, r);
		return -FI_EAGAIN;
	}
	r->msg_tagged = h.kind == BRAID_ROCE_MSG_TAGGED;
	r->msg_tag = h.tag;
	braid_dlist_insert_tail(&r->node, &rx->unexp);
	return give(r, skip, rr);
}

void braid_msg_rx_done(void *ctx, void *context, size_t len, int err)
{
	struct braid_msg_rx *rx = ctx;
	struct rxe *r = context;

	(void)err;
	if (r->kind == RXE_PART)
		multi_used(rx, r->parent, len);
}

/* ---- the QP's receive completions ---- */

/* An unexpected message has all arrived (or was flushed). */
static void unexp_arrived(struct braid_msg_rx *rx, struct rxe *u)
{
	struct rxe *b = u->bound;

	u->done = true;
	if (u->res_err && u->res_err != FI_ETRUNC) {
		/* flushed: the QP is gone, and the receive waiting for it */
		if (b)
			rxe_fail(rx, b, u->res_err, u->res_perr);
		unexp_free(rx, u);
		return;
	}
	if (b) {
		unexp_deliver(rx, u, b);
		rxe_ready(rx, b);
	}
}

void braid_msg_rx_comp(struct braid_msg_rx *rx, const struct braid_rc_comp *c)
{
	struct rxe *r = c->context;

	r->res_len = c->len;
	r->res_olen = c->olen;
	r->res_err = c->err;
	r->res_perr = braid_msg_prov_errno(c->err);
	r->res_data = c->imm;
	r->res_flags = (c->flags & BRAID_RC_COMP_IMM) ? FI_REMOTE_CQ_DATA : 0;
	if (c->flags & BRAID_RC_COMP_REMOTE_WRITE)
		r->res_flags |= FI_RMA | FI_REMOTE_WRITE;
	switch (r->kind) {
	case RXE_UNEXP:
		unexp_arrived(rx, r);
		break;
	case RXE_DISCARD:
		if (c->err != FI_ECANCELED)	/* not flushed: received, and dropped */
			rx->ep->stats.drops[c->olen < BRAID_ROCE_MSG_HDR_LEN ? BRAID_DROP_SHORT :
								    BRAID_DROP_TYPE]++;
		rxe_free(rx, r);
		break;
	default:
		if (r->kind == RXE_RECV)
			r->res_buf = c->buf;
		rxe_report(rx, r);
		break;
	}
}

void braid_msg_rx_reap(struct braid_msg_rx *rx)
{
	struct braid_ep *ep = rx->ep;

	while (!braid_dlist_empty(&rx->ready) && braid_cq_room(ep->rx_cq))
		rxe_report(rx, braid_container_of(rx->ready.next, struct rxe, node));
}

/* ---- posting ---- */

/*
 * A receive meets the unexpected messages first, oldest first: one of its
 * kind (and tag) all arrived is delivered now, one still arriving gets the
 * receive bound to it. A multi-receive buffer takes as many untagged ones
 * as fit, in order.
 * Return: true when @r is taken (delivered, bound, or a buffer retired).
 */
static bool post_unexpected(struct braid_msg_rx *rx, struct rxe *r)
{
	struct braid_dlist *it, *tmp;

	braid_dlist_foreach_safe(&rx->unexp, it, tmp) {
		struct rxe *u = braid_container_of(it, struct rxe, node);
		struct rxe *take = r;

		if (u->bound || u->claim || u->msg_tagged != r->tagged ||
		    (r->tagged && !rxe_matches(r, u->msg_tag)))
			continue;
		if (r->kind == RXE_MULTI) {
			uint64_t len = u->done ? u->res_len : u->blen;

			if (len > r->cap - r->used) {
				multi_retire(rx, r);
				return true;
			}
			take = multi_part(rx, r, len);
			if (!take)
				return false;	/* no record: later messages take it as posted */
			multi_used(rx, r, len);
		}
		if (u->done) {
			unexp_deliver(rx, u, take);
			rxe_ready(rx, take);
		} else {
			u->bound = take;
		}
		if (take == r || r->retired)
			return true;
	}
	return false;
}

ssize_t braid_msg_rx_post(struct braid_ep *ep, const struct iovec *iov, size_t count,
			  uint64_t tag, uint64_t ignore, uint64_t flags, void *context, bool tagged)
{
	struct braid_msg_rx *rx;
	struct rxe *r;
	bool multi = flags & FI_MULTI_RECV;

	rx = braid_msg_rx_of(ep);
	if (!rx)
		return -FI_EOPBADSTATE;	/* closing */
	if (braid_msg_rx_closed(ep))
		return -FI_EOPBADSTATE;
	r = rxe_new(rx, multi ? RXE_MULTI : RXE_RECV);
	if (!r)
		return -FI_EAGAIN;
	memcpy(r->iov, iov, count * sizeof(*iov));
	r->iov_count = count;
	r->context = context;
	r->tagged = tagged;
	r->tag = tag;
	r->ignore = ignore;
	r->silent = ep->rx_selective && !(flags & FI_COMPLETION);
	if (multi) {
		r->cap = iov[0].iov_len;
		r->min_free = braid_msg_ep_of(ep)->min_multi_recv;
		r->res_buf = NULL;
	}
	if (!post_unexpected(rx, r))
		braid_dlist_insert_tail(&r->node, tagged ? &rx->posted_tagged : &rx->posted_msg);
	braid_msg_rx_reap(rx);
	return 0;
}

/*
 * FI_PEEK, FI_CLAIM, FI_DISCARD (fi_tagged(3)) among the unexpected
 * messages all arrived: a peek answers with the first that matches (its
 * tag, length and data, no data copied) or FI_ENOMSG; with FI_CLAIM it is
 * kept for the FI_CLAIM receive of the same context, with FI_DISCARD
 * dropped. A message still arriving has not arrived yet.
 */
ssize_t braid_msg_rx_peek(struct braid_ep *ep, const struct iovec *iov, size_t count,
			  uint64_t tag, uint64_t ignore, uint64_t flags, void *context)
{
	struct braid_msg_rx *rx = braid_msg_rx_of(ep);
	struct rxe probe = { .tagged = true, .tag = tag, .ignore = ignore }, *r, *found = NULL;
	struct braid_dlist *it;

	if (!rx || braid_msg_rx_closed(ep))
		return -FI_EOPBADSTATE;
	braid_dlist_foreach(&rx->unexp, it) {
		struct rxe *u = braid_container_of(it, struct rxe, node);

		if (!u->done || u->bound || !u->msg_tagged)
			continue;
		if ((flags & FI_PEEK) ? !u->claim && rxe_matches(&probe, u->msg_tag)
				      : u->claim == context) {
			found = u;
			break;
		}
	}
	r = rxe_new(rx, RXE_RECV);
	if (!r)
		return -FI_EAGAIN;
	r->context = context;
	r->tagged = true;
	r->msg_tag = tag;
	if (!found) {
		rxe_fail(rx, r, FI_ENOMSG, BRAID_PERR_OK);
	} else if ((flags & FI_PEEK) || (flags & FI_DISCARD)) {
		r->msg_tag = found->msg_tag;
		r->res_len = (flags & FI_PEEK) ? found->res_len : 0;
		r->res_data = found->res_data;
		r->res_flags = found->res_flags;
		rxe_ready(rx, r);
		if (flags & FI_DISCARD)
			unexp_free(rx, found);
		else if (flags & FI_CLAIM)
			found->claim = context;
	} else {
		/* the FI_CLAIM receive: the claimed message into its buffers */
		memcpy(r->iov, iov, count * sizeof(*iov));
		r->iov_count = count;
		r->silent = ep->rx_selective && !(flags & FI_COMPLETION);
		unexp_deliver(rx, found, r);
		rxe_ready(rx, r);
	}
	braid_msg_rx_reap(rx);
	return 0;
}

/* ---- cancel, flush, life ---- */

int braid_msg_rx_cancel(struct braid_ep *ep, void *context)
{
	struct braid_msg_rx *rx = braid_msg_rx_of(ep);
	struct braid_dlist *lists[2], *it;
	int l;

	if (!rx)
		return -FI_ENOENT;
	lists[0] = &rx->posted_msg;
	lists[1] = &rx->posted_tagged;
	for (l = 0; l < 2; l++) {
		braid_dlist_foreach(lists[l], it) {
			struct rxe *r = braid_container_of(it, struct rxe, node);

			if (r->context != context)
				continue;
			if (r->kind == RXE_MULTI && r->refs) {
				/* parts still to be reported: the last hands the buffer back */
				struct rxe *e = rxe_new(rx, RXE_RECV);

				if (!e)
					return -FI_EAGAIN;
				braid_dlist_remove(&r->node);
				r->retired = true;
				e->context = context;
				e->res_buf = r->iov[0].iov_base;
				rxe_fail(rx, e, FI_ECANCELED, BRAID_PERR_CANCELED);
			} else {
				if (r->kind == RXE_MULTI)
					r->res_flags = FI_MSG | FI_RECV | FI_MULTI_RECV;
				r->res_buf = r->iov_count ? r->iov[0].iov_base : NULL;
				rxe_fail(rx, r, FI_ECANCELED, BRAID_PERR_CANCELED);
			}
			braid_msg_rx_reap(rx);
			return 0;
		}
	}
	return -FI_ENOENT;
}

void braid_msg_rx_flush(struct braid_msg_rx *rx)
{
	struct braid_dlist *lists[2] = { &rx->posted_msg, &rx->posted_tagged }, *it;
	int l;

	if (rx->flushed)
		return;
	rx->flushed = true;
	for (l = 0; l < 2; l++) {
		while ((it = braid_dlist_pop_head(lists[l]))) {
			struct rxe *r = braid_container_of(it, struct rxe, node);

			if (r->kind == RXE_MULTI && r->refs) {
				r->retired = true;	/* its parts are flushed too: the last hands it back */
				continue;
			}
			if (r->kind == RXE_MULTI)
				r->res_flags = FI_MSG | FI_RECV | FI_MULTI_RECV;
			r->res_buf = r->iov_count ? r->iov[0].iov_base : NULL;
			rxe_fail(rx, r, FI_ECANCELED, BRAID_PERR_RC_FLUSHED);
		}
	}
	/* messages all arrived that nobody took: gone with the connection */
	for (it = rx->unexp.next; it != &rx->unexp;) {
		struct rxe *u = braid_container_of(it, struct rxe, node);

		it = it->next;
		if (u->done)
			unexp_free(rx, u);
	}
}

int braid_msg_rx_construct(struct braid_msg_rx *rx, struct braid_ep *ep, size_t size)
{
	memset(rx, 0, sizeof(*rx));
	rx->ep = ep;
	rx->size = size;
	rx->arena_size = braid_cfg.unexp_bytes;
	braid_dlist_init(&rx->posted_msg);
	braid_dlist_init(&rx->posted_tagged);
	braid_dlist_init(&rx->unexp);
	braid_dlist_init(&rx->ready);
	/* half for posted receives, half for parts and unexpected messages */
	return braid_pool_construct(&rx->pool, sizeof(struct rxe), 2 * size);
}

void braid_msg_rx_destruct(struct braid_msg_rx *rx)
{
	if (rx->arena) {
		braid_extents_destruct(&rx->ext);
		munmap(rx->arena, rx->arena_size);
		rx->arena = NULL;
	}
	braid_pool_destruct(&rx->pool);
}
