/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_dgram.c: the FI_EP_DGRAM endpoint: posted receives filled straight from the wire, sends sprayed over the paths, and its type table (struct braid_ep_kind). */
#include <string.h>

#include "braid.h"

#define DGRAM_RX_FLAGS	(FI_COMPLETION | FI_MORE | FI_REMOTE_CQ_DATA)
#define DGRAM_TX_FLAGS	(FI_COMPLETION | FI_MORE | FI_INJECT | FI_REMOTE_CQ_DATA | \
			 FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE)

static inline struct braid_ep *dgram_ep(struct fid_ep *ep_fid)
{
	return braid_container_of(ep_fid, struct braid_ep, ep_fid);
}

/* ---- receive ---- */

/*
 * Watch (@armed) or ignore the receive fds of the endpoints whose datagrams
 * land in the receives of @ep's queue: its own, or every endpoint's of its
 * shared receive context (a waiting thread must not spin on datagrams no
 * receive can take, nor sleep through ones that one can).
 */
static void dgram_srx_arm(struct braid_srx *srx, bool armed)
{
	struct braid_dlist *it;

	braid_dlist_foreach(&srx->eps, it)
		braid_ep_rx_arm(braid_container_of(it, struct braid_ep, srx_node), armed);
}

static void dgram_rx_arm(struct braid_ep *ep, bool armed)
{
	if (ep->srx)
		dgram_srx_arm(ep->srx, armed);
	else
		braid_ep_rx_arm(ep, armed);
}

static int dgram_rx_check(const struct iovec *iov, size_t count, uint64_t flags)
{
	size_t i;

	if (count > BRAID_IOV_LIMIT || (count && !iov))
		return -FI_EINVAL;
	if (flags & ~DGRAM_RX_FLAGS)
		return -FI_EBADFLAGS;
	for (i = 0; i < count; i++) {
		if (!iov[i].iov_base && iov[i].iov_len)
			return -FI_EINVAL;
	}
	return 0;
}

/*
 * Queue a receive on @q (the caller holds its lock). Its first iovec is
 * the header's (and a keyed datagram's tag): the receiving endpoint sizes it
 * (dgram_progress_rx). Return: 0, -FI_EAGAIN; *@was_empty: @q had none.
 */
static ssize_t dgram_rxq_post(struct braid_rxq *q, const struct iovec *iov, size_t count,
			      void *context, uint64_t flags, bool *was_empty)
{
	struct braid_rx_entry *rx = braid_pool_alloc(&q->pool);
	size_t i;

	if (!rx)
		return -FI_EAGAIN;
	rx->iov[0].iov_base = &rx->hdr;
	rx->capacity = 0;
	for (i = 0; i < count; i++) {
		rx->iov[i + 1] = iov[i];
		rx->capacity += iov[i].iov_len;
	}
	rx->iov_count = count;
	rx->context = context;
	rx->flags = flags;
	*was_empty = braid_dlist_empty(&q->posted);
	braid_dlist_insert_tail(&rx->node, &q->posted);
	return 0;
}

static ssize_t dgram_post_recv(struct braid_ep *ep, const struct iovec *iov, size_t count,
			       void *context, uint64_t flags)
{
	struct braid_dgram_ep *d = braid_dgram_ep_of(ep);
	bool was_empty;
	ssize_t ret;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (ep->srx)	/* its receives are its shared context's */
		return braid_dgram_srx_post(ep->srx, iov, count, context, flags);
	ret = dgram_rx_check(iov, count, flags);
	if (ret)
		return ret;
	braid_ep_lock(ep);
	ret = dgram_rxq_post(d->rxq, iov, count, context, flags, &was_empty);
	if (!ret && was_empty)
		braid_ep_rx_arm(ep, true);
	braid_ep_unlock(ep);
	return ret;
}

ssize_t braid_dgram_srx_post(struct braid_srx *srx, const struct iovec *iov, size_t count,
			     void *context, uint64_t flags)
{
	bool was_empty;
	ssize_t ret = dgram_rx_check(iov, count, flags);

	if (ret)
		return ret;
	braid_srx_lock(srx);
	ret = dgram_rxq_post(&srx->q, iov, count, context, flags, &was_empty);
	if (!ret && was_empty)
		dgram_srx_arm(srx, true);
	braid_srx_unlock(srx);
	return ret;
}

static ssize_t dgram_recv(struct fid_ep *ep_fid, void *buf, size_t len, void *desc,
			  fi_addr_t src_addr, void *context)
{
	struct braid_ep *ep = dgram_ep(ep_fid);
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return dgram_post_recv(ep, &iov, 1, context, ep->rx_op_flags & DGRAM_RX_FLAGS);
}

static ssize_t dgram_recvv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			   size_t count, fi_addr_t src_addr, void *context)
{
	struct braid_ep *ep = dgram_ep(ep_fid);

	return dgram_post_recv(ep, iov, count, context, ep->rx_op_flags & DGRAM_RX_FLAGS);
}

static ssize_t dgram_recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return dgram_post_recv(dgram_ep(ep_fid), msg->msg_iov, msg->iov_count,
			       msg->context, flags);
}

/* Deliver one packet that landed in @rx (already unlinked from its queue). */
static void dgram_rx_complete(struct braid_ep *ep, struct braid_rx_entry *rx,
			      const struct braid_pkt *pkt, const struct braid_dgram_view *v)
{
	size_t payload = pkt->len - v->hdr_len;
	uint64_t flags = FI_RECV | FI_MSG | (v->has_data ? FI_REMOTE_CQ_DATA : 0);
	bool comp = ep->rx_cq && (!ep->rx_selective || (rx->flags & FI_COMPLETION));
	void *buf = rx->iov_count ? rx->iov[1].iov_base : NULL;
	fi_addr_t src = FI_ADDR_NOTAVAIL;

	if ((ep->info->caps & FI_SOURCE) && ep->av)
		src = braid_av_reverse(ep->av, pkt->addr.sin_addr, v->src_port);
	ep->stats.rx_dgrams++;
	if (payload > rx->capacity) {
		ep->stats.rx_trunc++;
		/* fi_msg(3): truncation is an error completion carrying olen */
		if (ep->rx_cq)
			braid_cq_write_err(ep->rx_cq, ep, rx->context, flags, rx->capacity, buf,
					   v->cq_data, 0, payload - rx->capacity, FI_ETRUNC,
					   BRAID_PERR_TRUNC, src);
		if (ep->recv_cntr)
			braid_cntr_inc_err(ep->recv_cntr);
		return;
	}
	if (comp)
		braid_cq_write(ep->rx_cq, ep, rx->context, flags, payload, buf, v->cq_data, 0, src);
	if (ep->recv_cntr)
		braid_cntr_inc(ep->recv_cntr);
}

/*
 * Copy the payload that landed in @from's buffers into @to's (same packet,
 * earlier receive). @pkt->len is the version-1 datagram's (a keyed one's
 * tag is out: dgram_rx_open).
 */
static void dgram_rx_move(struct braid_rx_entry *from, struct braid_rx_entry *to,
			  struct braid_pkt *pkt)
{
	size_t have = pkt->len - BRAID_DGRAM_HDR, done = 0, fi = 1, fo = 0, ti = 1, to_off = 0;

	if (have > from->capacity)
		have = from->capacity;	/* what did not fit in @from is lost: report truncation */
	to->hdr = from->hdr;
	while (done < have && fi <= from->iov_count && ti <= to->iov_count) {
		size_t a = from->iov[fi].iov_len - fo, b = to->iov[ti].iov_len - to_off;
		size_t l = a < b ? a : b;

		if (l > have - done)
			l = have - done;
		memmove((uint8_t *)to->iov[ti].iov_base + to_off,
			(uint8_t *)from->iov[fi].iov_base + fo, l);
		done += l;
		fo += l;
		to_off += l;
		if (fo == from->iov[fi].iov_len) {
			fi++;
			fo = 0;
		}
		if (to_off == to->iov[ti].iov_len) {
			ti++;
			to_off = 0;
		}
	}
	if (pkt->len - BRAID_DGRAM_HDR > from->capacity)
		pkt->flags |= BRAID_PKT_TRUNC;
}

/*
 * A keyed endpoint's datagram (protocol.md §2.4), its header and tag in
 * @rx->hdr, its payload in the receive's buffers: checked (mac mode: the
 * payload too, so a datagram larger than the buffers cannot be, and is
 * dropped), and its header made the version-1 one it carries; @pkt->len
 * becomes that datagram's length. Return: 0, or -(drop reason + 1).
 */
static int dgram_rx_open(struct braid_ep *ep, struct braid_rx_entry *rx, struct braid_pkt *pkt)
{
	struct iovec payload[BRAID_IOV_LIMIT];
	size_t keyed = sizeof(rx->hdr);
	int n = 0, ret;

	if (pkt->len > keyed) {
		if (ep->auth.mode == BRAID_AUTH_MAC && pkt->len - keyed > rx->capacity)
			return -(BRAID_DROP_AUTH + 1);
		n = braid_iov_slice(rx->iov + 1, rx->iov_count, 0, pkt->len - keyed, payload,
				    BRAID_IOV_LIMIT);
	}
	ret = braid_auth_open_hdr(&ep->auth, (uint8_t *)&rx->hdr, keyed, pkt->len, payload, n,
				  ep->auth_scratch);
	if (ret < 0)
		return ret;
	pkt->len -= BRAID_AUTH_TAG;
	return 0;
}

static void dgram_progress_rx(struct braid_ep *ep)
{
	struct braid_dgram_ep *d = braid_dgram_ep_of(ep);
	struct braid_rx_entry *rxs[BRAID_MAX_BATCH];
	struct braid_pkt pkts[BRAID_MAX_BATCH];
	struct braid_dgram_view view;
	struct braid_dlist *it;
	int n, got, i, ret, next;
	size_t room;

	while (!braid_dlist_empty(&d->rxq->posted)) {
		room = BRAID_MAX_BATCH;
		if (ep->rx_cq) {
			room = braid_cq_free(ep->rx_cq);
			if (room > BRAID_MAX_BATCH)
				room = BRAID_MAX_BATCH;
		}
		n = 0;
		braid_dlist_foreach(&d->rxq->posted, it) {
			if ((size_t)n >= room)
				break;
			rxs[n] = braid_container_of(it, struct braid_rx_entry, node);
			/* the header (and a keyed datagram's tag) as this endpoint receives it */
			rxs[n]->iov[0].iov_len = sizeof(rxs[n]->hdr.h) +
						 (ep->auth.mode ? BRAID_AUTH_TAG : 0);
			pkts[n].iov = rxs[n]->iov;
			pkts[n].iovcnt = (int)rxs[n]->iov_count + 1;
			n++;
		}
		if (!n)
			return;
		got = ep->wire->ops->rx_burst(ep->wire, pkts, n);
		/*
		 * Receives complete in the order they were posted (fi_msg(3)). A
		 * dropped packet leaves its receive posted; a later good packet in
		 * the same burst landed in a later receive's buffer, so its payload
		 * moves to the earliest receive still waiting.
		 */
		next = 0;
		for (i = 0; i < got; i++) {
			ret = ep->auth.mode ? dgram_rx_open(ep, rxs[i], &pkts[i]) : 0;
			if (!ret)
				ret = braid_dgram_hdr_decode(&rxs[i]->hdr, pkts[i].len, &view);
			if (ret) {
				/* protocol.md §2.3: drop and count; the receive stays posted */
				ep->stats.drops[-ret - 1]++;
				continue;
			}
			if (next != i)
				dgram_rx_move(rxs[i], rxs[next], &pkts[i]);
			braid_dlist_remove(&rxs[next]->node);
			dgram_rx_complete(ep, rxs[next], &pkts[i], &view);
			braid_pool_release(&d->rxq->pool, rxs[next]);
			next++;
		}
		if (got < n)
			break;
	}
	if (braid_dlist_empty(&d->rxq->posted))
		dgram_rx_arm(ep, false);
}

/* ---- transmit ---- */

static void dgram_tx_done(struct braid_ep *ep, struct braid_tx_pending *tx, int status)
{
	bool comp = tx->comp;
	uint64_t flags = FI_SEND | FI_MSG;

	if (status) {
		/* fi_cq(3): errors are reported for every operation, fi_inject's too */
		if (ep->tx_cq)
			braid_cq_write_err(ep->tx_cq, ep, tx->context, flags, tx->len, tx->buf, 0, 0,
					   0, -status, BRAID_PERR_WIRE_SEND, FI_ADDR_NOTAVAIL);
		if (ep->send_cntr)
			braid_cntr_inc_err(ep->send_cntr);
		return;
	}
	ep->stats.tx_dgrams++;
	if (comp)
		braid_cq_write(ep->tx_cq, ep, tx->context, flags, tx->len, tx->buf, 0, 0,
			       FI_ADDR_NOTAVAIL);
	if (ep->send_cntr)
		braid_cntr_inc(ep->send_cntr);
}

static void braid_dgram_flush_locked(struct braid_ep *ep)
{
	struct braid_dgram_ep *d = braid_dgram_ep_of(ep);
	struct braid_pkt pkts[BRAID_MAX_BATCH];
	int i, n = d->tx_npending, sent;
	size_t reserved;

	if (!n)
		return;
	for (i = 0; i < n; i++) {
		struct braid_tx_pending *tx = &d->tx_pending[i];

		tx->iov[0].iov_base = &tx->hdr;
		pkts[i].iov = tx->iov;
		pkts[i].iovcnt = tx->iovcnt;
		pkts[i].addr = tx->dest;
		pkts[i].path = d->next_path++ % (uint32_t)ep->wire->paths;
		pkts[i].status = 0;
		pkts[i].gso_size = 0;
		pkts[i].flags = 0;	/* a datagram is complete when sent: its bytes are copied */
	}
	sent = ep->wire->ops->tx_burst(ep->wire, pkts, n);
	for (i = 0, reserved = 0; i < sent; i++)
		reserved += d->tx_pending[i].comp;
	if (reserved) {
		/* their promised slots given back, then taken by their completions */
		braid_cq_unreserve(ep->tx_cq, reserved);
		d->pending_comps -= reserved;
	}
	for (i = 0; i < sent; i++)
		dgram_tx_done(ep, &d->tx_pending[i], pkts[i].status);
	braid_ep_tx_give(ep, (size_t)sent);	/* done: room in a shared transmit context */
	if (sent < n)
		memmove(d->tx_pending, d->tx_pending + sent,
			(size_t)(n - sent) * sizeof(d->tx_pending[0]));
	d->tx_npending = n - sent;
}

/*
 * @nocomp: fi_inject/fi_injectdata, which behave as if selective completion
 * were on and FI_COMPLETION off (fi_msg(3)); FI_INJECT alone only means the
 * buffer is free on return and does not suppress the completion.
 */
static ssize_t dgram_send_common(struct braid_ep *ep, const struct iovec *iov, size_t count,
				 fi_addr_t dest, void *context, uint64_t data, uint64_t flags,
				 bool nocomp)
{
	struct braid_dgram_ep *d = braid_dgram_ep_of(ep);
	struct braid_tx_pending *tx;
	struct sockaddr_in sin;
	bool comp;
	size_t i, len = 0;
	ssize_t ret = 0;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (count > BRAID_IOV_LIMIT || (count && !iov))
		return -FI_EINVAL;
	if (flags & ~DGRAM_TX_FLAGS)
		return -FI_EBADFLAGS;
	for (i = 0; i < count; i++) {
		if (!iov[i].iov_base && iov[i].iov_len)
			return -FI_EINVAL;
		len += iov[i].iov_len;
	}
	if (len > ep->max_msg_size)
		return -FI_EMSGSIZE;
	if ((flags & FI_INJECT) && len > ep->info->tx_attr->inject_size)
		return -FI_EMSGSIZE;
	if (braid_av_lookup_addr(ep->av, dest, &sin))
		return -FI_EINVAL;

	comp = !nocomp && ep->tx_cq && (!ep->tx_selective || (flags & FI_COMPLETION));
	braid_ep_lock(ep);
	if (d->tx_npending == BRAID_MAX_BATCH)
		braid_dgram_flush_locked(ep);
	if (d->tx_npending == BRAID_MAX_BATCH || braid_ep_tx_take(ep)) {
		ret = -FI_EAGAIN;
		goto out;
	}
	if (comp && !braid_cq_reserve(ep->tx_cq)) {
		/* make room: completions drain only when the app reads the CQ */
		braid_ep_tx_give(ep, 1);
		ret = -FI_EAGAIN;
		goto out;
	}
	tx = &d->tx_pending[d->tx_npending];
	braid_dgram_hdr_write(&tx->hdr.h, ntohs(ep->wire->name.sin_port),
			      !!(flags & FI_REMOTE_CQ_DATA), data);
	tx->iov[0].iov_len = sizeof(tx->hdr.h);
	for (i = 0; i < count; i++)
		tx->iov[i + 1] = iov[i];
	/* keyed (protocol.md §2.4): tagged now, while the payload is the caller's to read */
	if (ep->auth.mode)
		tx->iov[0].iov_len = (size_t)braid_auth_seal(&ep->auth, (uint8_t *)&tx->hdr, iov,
							     (int)count, ep->auth_scratch);
	tx->iovcnt = (int)count + 1;
	tx->len = len;
	tx->context = context;
	tx->flags = flags;
	tx->buf = count ? iov[0].iov_base : NULL;
	tx->dest = sin;
	tx->comp = comp;
	d->tx_npending++;
	if (comp)
		d->pending_comps++;	/* its slot reserved above */
	/* FI_MORE: hold it for one sendmmsg with what follows (inject data must go now) */
	if ((flags & FI_MORE) && !(flags & FI_INJECT))
		goto out;
	braid_dgram_flush_locked(ep);
	if (d->tx_npending) {
		/* the wire is full: the newest send is withdrawn, older ones stay queued */
		d->tx_npending--;
		braid_ep_tx_give(ep, 1);
		if (comp) {
			braid_cq_unreserve(ep->tx_cq, 1);
			d->pending_comps--;
		}
		ret = -FI_EAGAIN;
	}
out:
	braid_ep_unlock(ep);
	return ret;
}

static ssize_t dgram_send(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
			  fi_addr_t dest_addr, void *context)
{
	struct braid_ep *ep = dgram_ep(ep_fid);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return dgram_send_common(ep, &iov, 1, dest_addr, context, 0,
				 ep->tx_op_flags & DGRAM_TX_FLAGS, false);
}

static ssize_t dgram_sendv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			   size_t count, fi_addr_t dest_addr, void *context)
{
	struct braid_ep *ep = dgram_ep(ep_fid);

	return dgram_send_common(ep, iov, count, dest_addr, context, 0,
				 ep->tx_op_flags & DGRAM_TX_FLAGS, false);
}

static ssize_t dgram_sendmsg(struct fid_ep *ep_fid, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return dgram_send_common(dgram_ep(ep_fid), msg->msg_iov, msg->iov_count, msg->addr,
				 msg->context, msg->data, flags, false);
}

static ssize_t dgram_inject(struct fid_ep *ep_fid, const void *buf, size_t len,
			    fi_addr_t dest_addr)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return dgram_send_common(dgram_ep(ep_fid), &iov, 1, dest_addr, NULL, 0, FI_INJECT, true);
}

static ssize_t dgram_senddata(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
			      uint64_t data, fi_addr_t dest_addr, void *context)
{
	struct braid_ep *ep = dgram_ep(ep_fid);
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return dgram_send_common(ep, &iov, 1, dest_addr, context, data,
				 (ep->tx_op_flags & DGRAM_TX_FLAGS) | FI_REMOTE_CQ_DATA, false);
}

static ssize_t dgram_injectdata(struct fid_ep *ep_fid, const void *buf, size_t len,
				uint64_t data, fi_addr_t dest_addr)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return dgram_send_common(dgram_ep(ep_fid), &iov, 1, dest_addr, NULL, data,
				 FI_INJECT | FI_REMOTE_CQ_DATA, true);
}

struct fi_ops_msg braid_dgram_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = dgram_recv,
	.recvv = dgram_recvv,
	.recvmsg = dgram_recvmsg,
	.send = dgram_send,
	.sendv = dgram_sendv,
	.sendmsg = dgram_sendmsg,
	.inject = dgram_inject,
	.senddata = dgram_senddata,
	.injectdata = dgram_injectdata,
};

/* Drop sends still held by FI_MORE, with no completions (endpoint close). */
static void braid_dgram_discard_locked(struct braid_ep *ep)
{
	struct braid_dgram_ep *d = braid_dgram_ep_of(ep);
	int i;

	for (i = 0; i < d->tx_npending; i++) {
		if (d->tx_pending[i].comp && ep->tx_cq)
			braid_cq_unreserve(ep->tx_cq, 1);
	}
	braid_ep_tx_give(ep, (size_t)d->tx_npending);
	d->tx_npending = 0;
	d->pending_comps = 0;
}

/* ---- progress and cancel ---- */

static void braid_dgram_progress_locked(struct braid_ep *ep)
{
	braid_dgram_flush_locked(ep);
	dgram_progress_rx(ep);
}

/*
 * Cancel the receive posted with @context to @q: its FI_ECANCELED completion
 * on @report's CQ (NULL: none). Return: 0, -FI_ENOENT.
 */
static int dgram_rxq_cancel(struct braid_rxq *q, void *context, struct braid_ep *report)
{
	struct braid_dlist *it;

	braid_dlist_foreach(&q->posted, it) {
		struct braid_rx_entry *rx = braid_container_of(it, struct braid_rx_entry, node);

		if (rx->context != context)
			continue;
		braid_dlist_remove(&rx->node);
		if (report && report->rx_cq)
			braid_cq_write_err(report->rx_cq, report, rx->context, FI_RECV | FI_MSG, 0,
					   rx->iov_count ? rx->iov[1].iov_base : NULL, 0, 0, 0,
					   FI_ECANCELED, BRAID_PERR_CANCELED, FI_ADDR_NOTAVAIL);
		braid_pool_release(&q->pool, rx);
		return 0;
	}
	return -FI_ENOENT;
}

static int braid_dgram_cancel_locked(struct braid_ep *ep, void *context)
{
	struct braid_dgram_ep *d = braid_dgram_ep_of(ep);
	int ret = dgram_rxq_cancel(d->rxq, context, ep);

	if (!ret && braid_dlist_empty(&d->rxq->posted))
		dgram_rx_arm(ep, false);
	return ret;
}

/* a shared context's receive: reported on its first enabled endpoint (fi_endpoint(3): it has no CQ) */
int braid_dgram_srx_cancel(struct braid_srx *srx, void *context)
{
	int ret;

	braid_srx_lock(srx);
	ret = dgram_rxq_cancel(&srx->q, context, braid_srx_home(srx));
	if (!ret && braid_dlist_empty(&srx->q.posted))
		dgram_srx_arm(srx, false);
	braid_srx_unlock(srx);
	return ret;
}

/* ---- the endpoint's type (struct braid_ep_kind): what braid_ep.c asks of DGRAM ---- */

/* its own receive queue (FI_BRAID_RX_SIZE or rx_attr.size records), then its wire */
static int dgram_open(struct braid_ep *ep, const struct sockaddr_in *addr)
{
	struct braid_dgram_ep *d = braid_dgram_ep_of(ep);
	const struct fi_info *info = ep->info;
	size_t rx_size = info->rx_attr && info->rx_attr->size ? info->rx_attr->size :
			 braid_cfg.rx_size;
	int ret;

	ret = braid_pool_construct(&d->rxq_own.pool, sizeof(struct braid_rx_entry), rx_size);
	if (ret)
		return ret;
	braid_dlist_init(&d->rxq_own.posted);
	d->rxq = &d->rxq_own;
	ret = braid_ep_wire_open(ep, addr);
	if (ret)
		braid_pool_destruct(&d->rxq_own.pool);
	return ret;
}

/* one datagram, a keyed one 8 bytes longer (protocol.md §2.4) */
static size_t dgram_max_msg_size(const struct braid_ep *ep)
{
	size_t mtu = ep->wire->mtu;

	return mtu > BRAID_DGRAM_HDR + BRAID_AUTH_TAG ?
	       mtu - BRAID_DGRAM_HDR - (ep->auth.mode ? BRAID_AUTH_TAG : 0) : 0;
}

static int dgram_cancel(struct braid_ep *ep, void *context)
{
	int ret;

	braid_ep_lock(ep);
	ret = braid_dgram_cancel_locked(ep, context);
	braid_ep_unlock(ep);
	return ret;
}

static ssize_t dgram_rx_size_left(struct braid_ep *ep)
{
	const struct braid_rxq *q = braid_dgram_ep_of(ep)->rxq;

	return (ssize_t)(q->pool.count - q->pool.in_use);
}

static ssize_t dgram_tx_size_left(struct braid_ep *ep)
{
	return (ssize_t)(braid_cfg.tx_size - (size_t)braid_dgram_ep_of(ep)->tx_npending);
}

static void dgram_close(struct braid_ep *ep)
{
	braid_pool_destruct(&braid_dgram_ep_of(ep)->rxq_own.pool);
}

const struct braid_ep_kind braid_dgram_kind = {
	.size = sizeof(struct braid_dgram_ep),
	.msg = &braid_dgram_msg_ops,
	.needs_av = true,
	.open = dgram_open,
	.max_msg_size = dgram_max_msg_size,
	.enable = braid_ep_join,
	.progress = braid_dgram_progress_locked,
	.cancel = dgram_cancel,
	.rx_size_left = dgram_rx_size_left,
	.tx_size_left = dgram_tx_size_left,
	.discard_locked = braid_dgram_discard_locked,
	.close = dgram_close,
};
