/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rdm_progress.c: the FI_EP_RDM endpoint's progress: the RD engine's packets out to the wire (keyed when the job has a key), datagrams in (in bursts, or large ones straight into place), the engine's completions to the CQs and counters, the receive buffers the domain lends. */
#include <sys/mman.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "braid.h"

#define RDM_RX_BURST	BRAID_RDM_RX_BURST
/* datagrams at least this long are received straight into place when they can be */
#define RDM_DIRECT_MIN	8192
/* more small datagrams than this in one look while placing: back to receiving in bursts */
#define RDM_DIRECT_SMALL	4

/* iovecs for the datagrams of one braid_rd_output() burst, keyed ones included */
#define RDM_OUT_IOVS	(BRAID_RDM_OUT_BURST * (BRAID_RD_IOV_MAX + 3))

/*
 * braid_rd_out_dgram() for a keyed endpoint (protocol.md §2.4): the same
 * datagram, its first header copied into @hdrs[0] and sealed there (version
 * 2, the tag after it); a GSO run has each of its datagrams sealed so, in
 * @hdrs[0], @hdrs[1], ..., and *@seg counts the tag. Return: packets taken.
 */
static int rdm_out_keyed(struct braid_ep *ep, const struct braid_rd_out *out, int n,
			 struct iovec *iov, int *iovcnt, size_t *seg,
			 uint8_t (*hdrs)[BRAID_AUTH_HDR_MAX])
{
	struct iovec plain[BRAID_RD_BUNDLE_MAX * (BRAID_RD_IOV_MAX + 2)];
	int took, j, cnt, runs;
	size_t len;

	took = braid_rd_out_dgram(out, n, plain, (int)(sizeof(plain) / sizeof(plain[0])), &cnt,
				  &len, seg);
	runs = *seg ? took : 1;
	*iovcnt = 0;
	for (j = 0; j < runs; j++) {
		/* its first header: the bundle's (the first 8 bytes of its frame) or the packet's */
		size_t hlen = out[j].frame_len ? BRAID_RD_BUNDLE_HDR : out[j].hdr_len;
		int k;

		if (*seg)	/* one datagram of the run */
			(void)braid_rd_out_dgram(out + j, 1, plain,
						 (int)(sizeof(plain) / sizeof(plain[0])), &cnt, &len, NULL);
		memcpy(hdrs[j], plain[0].iov_base, hlen);
		k = braid_iov_slice(plain, (size_t)cnt, hlen, len - hlen, iov + *iovcnt + 1, cnt);
		iov[*iovcnt].iov_base = hdrs[j];
		iov[*iovcnt].iov_len = (size_t)braid_auth_seal(&ep->auth, hdrs[j], iov + *iovcnt + 1, k,
							       ep->auth_scratch);
		*iovcnt += k + 1;
	}
	if (*seg)
		*seg += BRAID_AUTH_TAG;
	return took;
}

/* Hand every packet the engine wants out to the wire (the caller holds the endpoint's lock). */
void braid_rdm_flush(struct braid_ep *ep, uint64_t now)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);
	struct braid_rd_out out[BRAID_RDM_OUT_BURST];
	struct braid_pkt pkts[BRAID_RDM_OUT_BURST];
	struct iovec iovs[RDM_OUT_IOVS];
	uint8_t hdrs[BRAID_RDM_OUT_BURST][BRAID_AUTH_HDR_MAX];
	int first[BRAID_RDM_OUT_BURST + 1];
	int n, i, d, k, sent;
	uint64_t lent;

	while ((n = braid_rd_output(r->rd, now, out, BRAID_RDM_OUT_BURST)) > 0) {
		/* a datagram per packet, or per bundle of them (§4.8) */
		for (i = 0, d = 0, k = 0; i < n; d++) {
			size_t len, seg;
			int cnt, took;

			if (ep->auth.mode)
				took = rdm_out_keyed(ep, out + i, n - i, iovs + k, &cnt, &seg, hdrs + i);
			else
				took = braid_rd_out_dgram(out + i, n - i, iovs + k, RDM_OUT_IOVS - k,
							  &cnt, &len, &seg);

			first[d] = i;
			pkts[d].gso_size = (uint16_t)seg;	/* a run of full packets: one GSO write */
			pkts[d].iov = iovs + k;
			pkts[d].iovcnt = cnt;
			k += cnt;
			/* the path's entropy is the wire's route selector (UDP: the socket,
			 * that is the source port); a reply goes from the home port to the
			 * source port its packet came from: the reverse 5-tuple, which a
			 * symmetric ECMP hash sends back along the same path */
			pkts[d].path = out[i].entropy;
			pkts[d].status = 0;
			/* a LENT packet that is a datagram alone may go by reference */
			pkts[d].flags = (out[i].lend && !seg && took == 1 && !out[i].frame_len) ?
					BRAID_PKT_LEND : 0;
			memset(&pkts[d].addr, 0, sizeof(pkts[d].addr));
			pkts[d].addr.sin_family = AF_INET;
			pkts[d].addr.sin_addr.s_addr = htonl(out[i].dst_ip);
			pkts[d].addr.sin_port = htons(out[i].dst_port);
			if (out[i].reply_route >= 0)	/* its entropy is 0: the home socket */
				pkts[d].addr.sin_port = htons((uint16_t)out[i].reply_route);
			i += took;
		}
		first[d] = n;
		lent = ep->wire->tx_lent;
		sent = ep->wire->ops->tx_burst(ep->wire, pkts, d);
		ep->stats.tx_dgrams += (uint64_t)sent;
		if (ep->wire->tx_lent != lent) {
			ep->stats.tx_lent += ep->wire->tx_lent - lent;
			r->lent_ns = braid_now_ns();
		}
		if (sent < d) {
			/* the socket is full: the rest goes back to the engine, to go next time */
			ep->stats.tx_refused += (uint64_t)(d - sent);
			braid_rd_unsent(r->rd, out + first[sent], n - first[sent]);
			break;
		}
		now = braid_now_ns();	/* the next burst is stamped when it leaves */
	}
}

static fi_addr_t rdm_source(struct braid_ep *ep, uint64_t peer)
{
	struct in_addr ip = { htonl((uint32_t)(peer >> 16)) };

	if (!(ep->info->caps & FI_SOURCE) || !ep->av)
		return FI_ADDR_NOTAVAIL;
	return braid_av_reverse(ep->av, ip, (uint16_t)peer);
}

/* An RMA or atomic completion (initiator) or event (target, BRAID_RD_COMP_REMOTE). */
static void rdm_report_rma(struct braid_ep *ep, const struct braid_rd_comp *c)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);
	bool remote = c->flags & BRAID_RD_COMP_REMOTE;
	bool atomic = c->flags & BRAID_RD_COMP_ATOMIC;
	/* what counts as a read: an RMA read, a fetching or compare atomic (fi_endpoint(3)) */
	bool read = c->flags & BRAID_RD_COMP_READ;
	struct braid_cntr *cntr = r->rma_cntr[remote ? (read ? BRAID_CNTR_REMOTE_READ :
							     BRAID_CNTR_REMOTE_WRITE) :
						 (read ? BRAID_CNTR_READ : BRAID_CNTR_WRITE)];
	uint64_t flags = (atomic ? FI_ATOMIC : FI_RMA) |
			 (remote ? (read ? FI_REMOTE_READ : FI_REMOTE_WRITE) : (read ? FI_READ : FI_WRITE));

	if (remote) {
		/* counters bound to the region (fi_mr_bind): at the target an atomic is a write */
		if (ep->info->caps & FI_RMA_EVENT)
			braid_mr_count(ep->domain, c->rkey, !read || atomic);
		/* the target: an entry for remote CQ data, or for every access with FI_RMA_EVENT */
		if (c->flags & BRAID_RD_COMP_CQ_DATA)
			flags |= FI_REMOTE_CQ_DATA;
		if (ep->rx_cq && ((c->flags & BRAID_RD_COMP_CQ_DATA) || (ep->info->caps & FI_RMA_EVENT)))
			braid_cq_write(ep->rx_cq, ep, NULL, flags, c->len, NULL, c->data, 0,
				       rdm_source(ep, c->peer));
	} else if (c->err) {
		if (ep->tx_cq)
			braid_cq_write_err(ep->tx_cq, ep, c->context, flags, 0, NULL, 0, 0, 0, c->err,
					   c->prov_errno, FI_ADDR_NOTAVAIL);
		if (cntr)
			braid_cntr_inc_err(cntr);
		return;
	} else if (ep->tx_cq && !(c->flags & BRAID_RD_COMP_SILENT)) {
		braid_cq_write(ep->tx_cq, ep, c->context, flags, c->len, NULL, 0, 0, FI_ADDR_NOTAVAIL);
	}
	if (cntr)
		braid_cntr_inc(cntr);
}

/* Report one engine completion on the CQ and counters. */
static void rdm_report(struct braid_ep *ep, const struct braid_rd_comp *c)
{
	bool recv = c->flags & BRAID_RD_COMP_RECV;
	struct braid_cq *cq = recv ? ep->rx_cq : ep->tx_cq;
	struct braid_cntr *cntr = recv ? ep->recv_cntr : ep->send_cntr;
	uint64_t flags = (recv ? FI_RECV : FI_SEND) |
			 ((c->flags & BRAID_RD_COMP_TAGGED) ? FI_TAGGED : FI_MSG);
	fi_addr_t src = recv ? rdm_source(ep, c->peer) : FI_ADDR_NOTAVAIL;

	if (c->flags & (BRAID_RD_COMP_WRITE | BRAID_RD_COMP_READ | BRAID_RD_COMP_ATOMIC)) {
		rdm_report_rma(ep, c);
		return;
	}
	if (recv && (c->flags & BRAID_RD_COMP_CQ_DATA))
		flags |= FI_REMOTE_CQ_DATA;
	if (c->flags & BRAID_RD_COMP_MULTI_RECV)
		flags |= FI_MULTI_RECV;	/* the buffer is the application's again */
	if (c->err) {
		if (cq)
			braid_cq_write_err(cq, ep, c->context, flags, c->len, c->buf, c->data,
					   c->tag, c->olen, c->err, c->prov_errno, src);
		if (cntr)
			braid_cntr_inc_err(cntr);
		return;
	}
	/* (a receive of a shared context asks for no completion unless FI_COMPLETION:
	 * only a selective endpoint leaves it out) */
	if (cq && (!(c->flags & BRAID_RD_COMP_SILENT) || (recv && !ep->rx_selective)))
		braid_cq_write(cq, ep, c->context, flags, c->len, recv ? c->buf : NULL, c->data,
			       recv ? c->tag : 0, src);
	if (cntr)
		braid_cntr_inc(cntr);
}

/* both CQs can take an entry (a completion never overruns one) */
static bool rdm_cqs_room(struct braid_ep *ep)
{
	return braid_cq_room(ep->tx_cq) && braid_cq_room(ep->rx_cq);
}

/*
 * Move engine completions to the CQs while they have room (never overrun),
 * or (@all) every one, what does not fit going to a CQ's overflow.
 */
static void rdm_reap_comps(struct braid_ep *ep, bool all)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);
	struct braid_rd_comp c;

	while (braid_rd_comps_waiting(r->rd) && (all || rdm_cqs_room(ep)) &&
	       braid_rd_poll(r->rd, &c, 1) == 1) {
		/* a transmit operation ended: room in its shared transmit context */
		if (!(c.flags & (BRAID_RD_COMP_RECV | BRAID_RD_COMP_REMOTE)))
			braid_ep_tx_give(ep, 1);
		/* (device memory: results to the device, the application's context back) */
		if (__builtin_expect(r->hmem.ops != NULL, 0)) {
			struct braid_hmem_op *h = braid_hmem_op_of(&r->hmem, c.context);

			if (h)
				braid_hmem_comp(&r->hmem, h, &c);
		}
		rdm_report(ep, &c);
	}
}

void braid_rdm_reap(struct braid_ep *ep)
{
	rdm_reap_comps(ep, false);
}

void braid_rdm_sent_whole(struct braid_ep *ep, const struct braid_rd_send *req, size_t len)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);
	struct braid_rd_comp c;

	if (braid_rd_comps_waiting(r->rd) || !rdm_cqs_room(ep)) {
		/* behind the engine's completions, in their order */
		braid_rd_local_sent(r->rd, req, len, NULL);
		rdm_reap_comps(ep, false);
		return;
	}
	braid_rd_local_sent(r->rd, req, len, &c);
	braid_ep_tx_give(ep, 1);	/* (as rdm_reap_comps: a transmit operation ended) */
	rdm_report(ep, &c);
}

void braid_rdm_srx_leave_locked(struct braid_ep *ep)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);

	if (!r->rd)
		return;
	/* receives its messages had taken come back canceled: onto its CQ now, which
	 * cancels its receive completions as it closes (braid_cq_ep_closed) */
	braid_rd_rxq_leave(r->rd);
	rdm_reap_comps(ep, true);
}

/*
 * A keyed endpoint's datagram (protocol.md §2.4), received whole at *@buf:
 * checked, and its tag taken out, before the engine sees anything of it;
 * *@buf and *@len then name the version-1 datagram it carries. false: it
 * was dropped and counted (another job's, a keyless sender's, a forgery).
 */
static bool rdm_rx_open(struct braid_ep *ep, uint8_t **buf, size_t *len)
{
	int ret = braid_auth_open(&ep->auth, *buf, *len, ep->auth_scratch);

	if (ret < 0) {
		ep->stats.drops[-ret - 1]++;
		return false;
	}
	*buf += BRAID_AUTH_TAG;
	*len -= BRAID_AUTH_TAG;
	return true;
}

/*
 * When a datagram the wire gives no time of arrival for came: after the
 * wire was last read to empty. The engine tells the time a datagram waited
 * for us (descheduled, computing) from the fabric's delay by it (§4.5).
 */
static uint64_t rdm_rx_since(const struct braid_rdm_ep *r, const struct braid_pkt *pkt)
{
	return pkt->rx_ns ? pkt->rx_ns : r->rx_drained_ns;
}

/*
 * A datagram received whole into @run (a run of them, when the host
 * coalesced one sender's datagrams: UDP GRO), each datagram to the engine
 * on its own, as if it came alone.
 */
static void rdm_rx_whole(struct braid_ep *ep, const struct braid_pkt *pkt, uint8_t *run,
			 uint64_t now)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);
	size_t left = pkt->len, seg = left;

	if (pkt->flags & BRAID_PKT_TRUNC) {
		ep->stats.rx_dgrams++;
		ep->stats.drops[BRAID_DROP_BAD_LEN]++;
		return;
	}
	if (ep->wire->gro && pkt->gso_size) {
		seg = pkt->gso_size;	/* a run the host coalesced (UDP GRO) */
		ep->stats.rx_gro_runs++;
		ep->stats.rx_gro_dgrams += (left + seg - 1) / seg;
	}
	braid_rd_arrived(r->rd, rdm_rx_since(r, pkt));
	do {
		uint8_t *buf = run;
		size_t len = seg < left ? seg : left;

		run += len;
		left -= len;
		ep->stats.rx_dgrams++;
		if (ep->auth.mode && !rdm_rx_open(ep, &buf, &len))
			continue;
		/* large datagrams on the home route: look before taking the next
		 * (not where the tag covers the payload: it must be checked
		 * before it lands) */
		if (pkt->path == 0 && len >= RDM_DIRECT_MIN && ep->wire->ops->rx_peek &&
		    ep->auth.mode != BRAID_AUTH_MAC)
			r->rx_direct = true;
		braid_rd_input_from(r->rd, buf, len, ntohl(pkt->addr.sin_addr.s_addr),
				    ntohs(pkt->addr.sin_port), pkt->flags & BRAID_PKT_ECN_CE, now);
	} while (left);
}

/*
 * Large datagrams straight into place (docs/internals.md, "Receive
 * placement"): while they come, look at each one's header first and, when
 * the engine knows where its payload goes (a matched receive, a WRITE's
 * region, a read's result buffers), receive the payload there: one copy,
 * the kernel's, instead of a second from the wire's buffer. A copy of a
 * datagram received already (the sender's RTO was early: this host was
 * away) is received as its header alone, its payload dropped uncopied.
 * Costs a peek per datagram, worth it only for large ones. Return:
 * datagrams taken.
 *
 * A keyed endpoint (job mode: never with FI_BRAID_AUTH=mac, whose tag covers
 * the payload) places only a datagram whose tag the peeked header verifies
 * (an RD_DATA or RD_RMA tag covers its header alone), receives the header
 * and tag into @hdr, never into the application's memory, and checks them
 * again as received.
 */
static int rdm_rx_direct(struct braid_ep *ep, uint64_t *now)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);
	const struct braid_wire_ops *ops = ep->wire->ops;
	size_t tag = ep->auth.mode ? BRAID_AUTH_TAG : 0;
	uint8_t hdr[BRAID_AUTH_HDR_MAX];
	int taken = 0, small = 0;

	while (taken < RDM_RX_BURST) {
		struct iovec iov[BRAID_RD_IOV_MAX + 1];
		struct sockaddr_in from;
		struct braid_pkt pkt = { .iov = iov };
		uint64_t rx_ns;
		size_t len = ops->rx_peek(ep->wire, hdr, BRAID_RD_MAX_HDR + tag, &from, &rx_ns), hlen;
		uint32_t ip = ntohl(from.sin_addr.s_addr);
		bool dup = false;
		int k = 0;

		if (!len)
			break;
		if (len > ep->wire->mtu || (len < RDM_DIRECT_MIN && ++small > RDM_DIRECT_SMALL)) {
			/* a coalesced run (UDP GRO), or small ones again: the usual way */
			r->rx_direct = false;
			break;
		}
		hlen = braid_hdr_len(hdr);	/* a keyed one's counts its tag */
		/* when it came: a lent payload that waited too long is not placed (§4.2) */
		pkt.rx_ns = rx_ns;
		braid_rd_arrived(r->rd, rdm_rx_since(r, &pkt));
		/* a small one among large ones (a message's last packet, an ACK) is
		 * taken whole, and the large ones after it are still placed */
		if (len >= RDM_DIRECT_MIN &&
		    (!tag || braid_auth_open_hdr(&ep->auth, hdr, BRAID_RD_MAX_HDR + tag, len, NULL, 0,
						 ep->auth_scratch) >= 0))
			k = braid_rd_place(r->rd, hdr, BRAID_RD_MAX_HDR, len - tag, ip, iov + 1,
					   BRAID_RD_IOV_MAX, *now);
		if (k) {
			iov[0].iov_base = hdr;
			iov[0].iov_len = hlen;
			pkt.iovcnt = k + 1;
		} else if (!tag && len >= RDM_DIRECT_MIN && hlen <= BRAID_RD_MAX_HDR &&
			   braid_rd_is_dup(r->rd, hdr, BRAID_RD_MAX_HDR, len, ip)) {
			/* a copy of what came already: its header alone, the host
			 * drops the payload uncopied */
			iov[0].iov_base = hdr;
			iov[0].iov_len = hlen;
			pkt.iovcnt = 1;
			dup = true;
		} else {
			/* not for a place known yet (a message's first packet): whole */
			iov[0].iov_base = r->rx_bufs;
			iov[0].iov_len = ep->wire->mtu;
			pkt.iovcnt = 1;
		}
		if (ops->rx_home(ep->wire, &pkt, 1) != 1)
			break;
		*now = braid_now_ns();
		taken++;
		braid_rd_arrived(r->rd, rdm_rx_since(r, &pkt));
		if (!k && !dup) {
			rdm_rx_whole(ep, &pkt, r->rx_bufs, *now);
			continue;
		}
		ep->stats.rx_dgrams++;
		if (dup) {
			ep->stats.rx_dup_skipped++;
			braid_rd_input_placed(r->rd, hdr, pkt.len, ntohl(pkt.addr.sin_addr.s_addr),
					      ntohs(pkt.addr.sin_port), pkt.flags & BRAID_PKT_ECN_CE, *now);
			continue;
		}
		if (pkt.flags & BRAID_PKT_TRUNC) {
			ep->stats.drops[BRAID_DROP_BAD_LEN]++;
			continue;
		}
		if (tag) {
			int ret = braid_auth_open_hdr(&ep->auth, hdr, hlen, pkt.len, NULL, 0,
						      ep->auth_scratch);

			/* (the datagram peeked: a failure here is one the wire swapped) */
			if (ret < 0) {
				ep->stats.drops[-ret - 1]++;
				continue;
			}
		}
		ep->stats.rx_placed++;
		braid_rd_input_placed(r->rd, hdr, pkt.len - tag, ntohl(pkt.addr.sin_addr.s_addr),
				      ntohs(pkt.addr.sin_port), pkt.flags & BRAID_PKT_ECN_CE, *now);
	}
	return taken;
}

/*
 * The buffers of a receive burst: RDM_RX_BURST datagrams of the wire's MTU
 * (2 MiB on loopback). The domain keeps the sets for whichever endpoints
 * progress next (the engine copies what it keeps before progress returns),
 * so an endpoint costs none of it while idle; threads progressing endpoints
 * at the same moment take a set each (BRAID_RX_CACHE are kept).
 */
static struct braid_rxbuf *rdm_rxbuf_take(struct braid_ep *ep)
{
	size_t need = (size_t)RDM_RX_BURST * braid_wire_rx_max(ep->wire);
	struct braid_rxbuf *rb = NULL;
	int i;

	for (i = 0; i < BRAID_RX_CACHE && !rb; i++) {
		if (atomic_load_explicit(&ep->domain->rx_cache[i], memory_order_relaxed))
			rb = atomic_exchange(&ep->domain->rx_cache[i], NULL);
	}
	if (rb && rb->size < need) {
		free(rb);
		rb = NULL;
	}
	if (!rb) {
		rb = malloc(sizeof(*rb) + need);
		if (rb) {
			rb->size = need;
			rb->warm = false;
		}
	}
	return rb;
}

static void rdm_rxbuf_give(struct braid_ep *ep, struct braid_rxbuf *rb)
{
	for (int i = 0; i < BRAID_RX_CACHE; i++) {
		struct braid_rxbuf *none = NULL;

		if (atomic_compare_exchange_strong(&ep->domain->rx_cache[i], &none, rb))
			return;
	}
	free(rb);	/* more threads than sets kept: this one goes */
}

/*
 * A set that carried datagrams gives its pages back once its endpoint has
 * no traffic state left (every peer quiet for FI_BRAID_IDLE_MS): the pages a
 * burst touched (up to the whole set, with GRO's runs) are not kept for an
 * endpoint that is idle; they come back, zeroed, when next written.
 */
static void rdm_rxbuf_cool(struct braid_rxbuf *rb)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = ((uintptr_t)rb->data + page - 1) & ~(page - 1);
	uintptr_t hi = ((uintptr_t)rb->data + rb->size) & ~(page - 1);

	if (hi > lo)
		(void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
	rb->warm = false;
}

static int rdm_progress_rx(struct braid_ep *ep, uint64_t now, bool *wrote);

/*
 * What has arrived, into the engine, in one burst's buffers. Nothing to
 * receive (the wire's idle look: the local peers' rings empty, no socket due
 * a look) takes no buffers. Return: the clock after it.
 */
static uint64_t rdm_progress_in(struct braid_ep *ep, uint64_t now)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);
	struct braid_rxbuf *rb;
	bool wrote = false;
	int took;

	if (!r->rx_direct && ep->wire->ops->rx_idle &&
	    ep->wire->ops->rx_idle(ep->wire, ep->auth.mode || braid_rd_local_over(r->rd))) {
		r->rx_drained_ns = now;
		return now;
	}
	rb = rdm_rxbuf_take(ep);
	if (!rb)
		return now;	/* (no memory for a burst now: nothing is received this time) */
	r->rx_bufs = rb->data;
	took = rdm_progress_rx(ep, now, &wrote);
	r->rx_bufs = NULL;
	/* (messages handed whole are read in their ring: the buffers stay cold) */
	if (wrote)
		rb->warm = true;
	else if (rb->warm && !braid_rd_get_stats(r->rd)->flows_active)
		rdm_rxbuf_cool(rb);
	rdm_rxbuf_give(ep, rb);
	/* what arrived was handled by a later clock: read it again (a look that
	 * found nothing keeps the one clock read of its poll) */
	return took ? braid_now_ns() : now;
}

void braid_rdm_progress_locked(struct braid_ep *ep)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);
	uint64_t now = rdm_progress_in(ep, braid_now_ns());

	/* (timers run whatever came) */
	ep->progress_ns = now;
	if (braid_rd_next_deadline(r->rd) <= now)
		braid_rd_timer(r->rd, now);
	braid_rdm_flush(ep, now);
	r->unflushed = 0;
	braid_rdm_reap(ep);
}

/* A message a local peer handed whole (protocol.md §7.4), to the engine. */
static int rdm_local_in(void *ctx, uint32_t ip, uint16_t port, const void *rec, size_t len)
{
	struct braid_ep *ep = ctx;
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);
	int ret;

	if (ep->auth.mode) {
		/* a keyed endpoint takes keyed datagrams only: never a message whole (§2.4) */
		ep->stats.drops[BRAID_DROP_AUTH]++;
		return 0;
	}
	ret = braid_rd_local_input(r->rd, braid_peer_key(ip, port), rec, len, r->rx_msg_ns);
	if (ret == -FI_EAGAIN)
		return -1;	/* no record for it now: it stays in its ring */
	if (ret) {
		ep->stats.drops[BRAID_DROP_BAD_LEN]++;	/* nonsense: dropped */
		return 0;
	}
	r->rx_last_ns = r->rx_msg_ns;
	ep->stats.rx_dgrams++;	/* (a record from the ring, as a datagram there is) */
	return 0;
}

/* Return: datagrams and messages taken; *@wrote: datagrams were, into the burst's buffers. */
static int rdm_progress_rx(struct braid_ep *ep, uint64_t now, bool *wrote)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);
	struct braid_pkt *pkts = r->rx_pkts;
	int n, i, rounds, msgs, all = 0;
	bool more;

	for (rounds = 0; rounds < 8; rounds++) {
		bool direct = r->rx_direct;
		/* large datagrams: the home route one at a time, then the others as usual
		 * (every round: a stream into the home route must not starve the replies
		 * to our own sends) */
		int took = direct ? rdm_rx_direct(ep, &now) : 0;

		if (direct && r->rx_direct) {
			if (r->rx_set != r->rx_bufs) {
				braid_wire_rx_reset(ep->wire, pkts, r->rx_iovs, r->rx_bufs, RDM_RX_BURST);
				r->rx_set = r->rx_bufs;
			}
			n = ep->wire->ops->rx_routes(ep->wire, pkts, RDM_RX_BURST);
		} else {
			/* the DPDK wire lends its frames: the engine reads them in place */
			n = braid_wire_rx_kept(ep->wire, pkts, r->rx_iovs, r->rx_bufs, &r->rx_set,
					       RDM_RX_BURST);
		}
		/* a fresh clock per burst: a stale one (the host may deschedule us
		 * mid-progress) would make RTT samples lie, and the CC and every
		 * RTT-scaled timer with them */
		if (n > 0) {
			now = braid_now_ns();
			r->rx_last_ns = now;
		}
		for (i = 0; i < n; i++)
			rdm_rx_whole(ep, &pkts[i], r->rx_iovs[i].iov_base, now);
		braid_wire_rx_done(ep->wire, pkts, n);
		if (n > 0)	/* (the packets a burst used, ready for the next) */
			braid_wire_rx_reset(ep->wire, pkts, r->rx_iovs, r->rx_bufs, n);
		/* then the messages local peers handed whole, in their rings' order:
		 * a ring's datagrams behind one come in the next round */
		msgs = 0;
		more = false;
		if (ep->wire->local.on && ep->wire->ops->rx_msgs) {
			r->rx_msg_ns = now;	/* (their clock: rdm_local_in) */
			msgs = ep->wire->ops->rx_msgs(ep->wire, rdm_local_in, ep, RDM_RX_BURST,
						      ep->auth.mode || braid_rd_local_over(r->rd),
						      &more);
		}
		all += took + n + msgs;
		if (took + n)
			*wrote = true;
		/* (another round for the datagrams behind the messages, or for more of them) */
		if (n < RDM_RX_BURST && took < RDM_RX_BURST && !more && msgs < RDM_RX_BURST) {
			r->rx_drained_ns = now;	/* read to empty, by about now */
			break;
		}
	}
	return all;
}

int braid_rdm_cancel_locked(struct braid_ep *ep, void *context)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);
	/* a receive into device memory is known to the engine by its record */
	struct braid_hmem_op *h = r->hmem.ops ? braid_hmem_op_find(&r->hmem, context) : NULL;
	int ret = braid_rd_cancel(r->rd, h ? (void *)h : context);

	if (!ret)
		braid_rdm_reap(ep);
	return ret;
}
