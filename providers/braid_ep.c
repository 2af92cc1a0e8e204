/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_ep.c: the endpoint object (fi_endpoint(3)), what every type shares: open, bind, enable, names, options, close; each type's own part is behind its struct braid_ep_kind (braid_dgram.c, braid_rdm.c, braid_msg.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "braid.h"

#define EP_CQ_FLAGS	(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)
#define EP_CNTR_FLAGS	(FI_SEND | FI_RECV)
#define EP_CNTR_RMA	(FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

/* the endpoint of @fid, or of the alias it is (the alias shares its calls, fi_ep_alias) */
static struct braid_ep *ep_of(struct fid *fid)
{
	return braid_ep_of(braid_container_of(fid, struct fid_ep, fid));
}

void braid_ep_wire_adopt(struct braid_ep *ep, struct braid_wire *wire)
{
	if (ep->wire)
		ep->wire_ops->close(ep->wire);
	ep->wire = wire;
	ep->max_msg_size = ep->kind->max_msg_size(ep);
	if (ep->info->ep_attr->max_msg_size && ep->info->ep_attr->max_msg_size < ep->max_msg_size)
		ep->max_msg_size = ep->info->ep_attr->max_msg_size;
}

int braid_ep_wire_open(struct braid_ep *ep, const struct sockaddr_in *addr)
{
	const struct braid_ep_kind *k = ep->kind;
	struct braid_wire_params params = {
		.addr = *addr,
		.paths = k->one_path ? 1 : braid_cfg.paths,
		.sockbuf = braid_cfg.sockbuf,
		.gro = k->gro && braid_cfg.gro,
		.lend_min = k->lend ? braid_cfg.lend_min : 0,
		.local = k->local && braid_cfg.shm,
		.local_rings = (uint32_t)braid_cfg.shm_peers,
		.local_ring_bytes = braid_cfg.shm_ring,
	};
	struct braid_wire *wire;
	int ret;

	ret = ep->wire_ops->open(&params, &wire);
	if (ret) {
		BRAID_WARN(FI_LOG_EP_CTRL, "cannot open the %s wire: %s\n",
			   ep->wire_ops->name, fi_strerror(-ret));
		return ret;
	}
	braid_ep_wire_adopt(ep, wire);
	return 0;
}


/* Add/remove the wire's fd in the receive-side wait objects (rx CQ, recv counter). */
static void ep_wait_fd(struct braid_wait *wait, int fd, bool add)
{
	if (add)
		braid_wait_add_fd(wait, fd);
	else
		braid_wait_del_fd(wait, fd);
}

static void ep_rx_wait_update(struct braid_ep *ep, bool add)
{
	int fd = ep->wire->ops->wait_fd(ep->wire);

	if (ep->rx_cq)
		ep_wait_fd(&ep->rx_cq->wait, fd, add);
	if (ep->recv_cntr)
		ep_wait_fd(&ep->recv_cntr->wait, fd, add);
}

/*
 * RDM (braid_ep_kind.tx_wire_wait): a send completes when the peer's ACKs
 * arrive, so the transmit-side wait objects (tx CQ, send counter) wait on
 * the wire's fd too; without it fi_cntr_wait on a send counter slept until
 * the next engine timer (fabtests' fi_rdm_cntr_pingpong ran about 7x slower
 * at 64 KiB than fi_rdm_pingpong). (DGRAM sends complete locally; MSG
 * endpoints add their own fds, braid_msg.c.)
 */
static void ep_tx_wait_update(struct braid_ep *ep, bool add)
{
	int fd = ep->wire->ops->wait_fd(ep->wire);

	if (!ep->kind->tx_wire_wait)
		return;
	if (ep->tx_cq)
		ep_wait_fd(&ep->tx_cq->wait, fd, add);
	if (ep->send_cntr)
		ep_wait_fd(&ep->send_cntr->wait, fd, add);
}

void braid_ep_progress(struct braid_ep *ep)
{
	uint64_t now;

	if (!ep->enabled)
		return;
	ep->kind->progress(ep);
	/* its counters, for braid-stat, every FI_BRAID_STAT_MS it is progressed (RDM and MSG
	 * read the clock anyway: no second read on their data path) */
	if (ep->stat_slot >= 0) {
		now = ep->kind->clocked ? ep->progress_ns : braid_now_ns();
		if (now >= ep->stat_next)
			braid_stat_publish(ep, now);
	}
}

void braid_ep_rx_arm(struct braid_ep *ep, bool armed)
{
	int fd = ep->wire->ops->wait_fd(ep->wire);

	if (ep->rx_cq)
		braid_wait_arm_fd(&ep->rx_cq->wait, fd, armed);
	if (ep->recv_cntr)
		braid_wait_arm_fd(&ep->recv_cntr->wait, fd, armed);
}

/*
 * At close (INFO): the datagrams the endpoint dropped, by reason (the wire
 * glue's and, RDM, the engine's), and the peers of its domain's table: how
 * tests see that another job's datagrams created nothing (fi_braid(7)).
 */
static void ep_log_drops(struct braid_ep *ep)
{
	const struct braid_rd_stats *st = ep->kind->rd_stats ? ep->kind->rd_stats(ep) : NULL;
	char drops[BRAID_DROP_MAX * 32] = "";
	size_t off = 0;
	int k;

	for (k = 0; k < BRAID_DROP_MAX; k++) {
		uint64_t n = ep->stats.drops[k] + (st ? st->drops[k] : 0);

		if (n)
			off += (size_t)snprintf(drops + off, sizeof(drops) - off, " %s=%lu",
						braid_drop_reason_str(k), (unsigned long)n);
	}
	BRAID_INFO(FI_LOG_EP_CTRL, "endpoint on port %u closed (%s): drops:%s; %zu peers in the "
		   "domain's table\n", ntohs(ep->wire->name.sin_port),
		   ep->auth.mode ? "keyed" : "keyless", off ? drops : " none",
		   braid_peer_count(ep->domain->peers));
}

static int ep_close(struct fid *fid)
{
	struct braid_ep *ep = ep_of(fid);
	const struct braid_ep_kind *k = ep->kind;
	struct braid_domain *dom = ep->domain;

	if (atomic_load(&ep->aliases))
		return -FI_EBUSY;	/* fi_endpoint(3): aliases are closed first */
	braid_trig_drop(ep);	/* its transfers held for counters go, with no completions */

	/* out of every set first: once removed, no progress pass reaches it */
	braid_epset_remove(&dom->eps, ep);	/* the progress thread lets go of it */
	if (ep->tx_cq)
		braid_epset_remove(&ep->tx_cq->eps, ep);
	if (ep->rx_cq)
		braid_epset_remove(&ep->rx_cq->eps, ep);
	if (ep->send_cntr)
		braid_epset_remove(&ep->send_cntr->eps, ep);
	if (ep->recv_cntr)
		braid_epset_remove(&ep->recv_cntr->eps, ep);
	if (k->detach)
		k->detach(ep);	/* (MSG: takes the domain lock itself) */
	braid_domain_lock(dom);
	/* a call still inside it finishes first (an MSG endpoint's lock is the domain's) */
	if (ep->lockp != &dom->lock)
		braid_ep_lock(ep);
	/* fi_endpoint(3): operations still pending are discarded, with no completions */
	if (k->discard_locked)
		k->discard_locked(ep);
	/* no call of its shared receive context reaches it from now on */
	braid_srx_unlink_locked(ep);
	ep_tx_wait_update(ep, false);
	/* its receives completed but not read yet: canceled (nothing may be reposted to it) */
	braid_cq_ep_closed(ep->tx_cq, ep);
	if (ep->rx_cq != ep->tx_cq)
		braid_cq_ep_closed(ep->rx_cq, ep);
	if (ep->tx_cq)
		atomic_fetch_sub(&ep->tx_cq->ref, 1);
	if (ep->rx_cq) {
		ep_rx_wait_update(ep, false);
		atomic_fetch_sub(&ep->rx_cq->ref, 1);
	}
	if (ep->send_cntr)
		atomic_fetch_sub(&ep->send_cntr->ref, 1);
	if (ep->recv_cntr) {
		braid_wait_del_fd(&ep->recv_cntr->wait, ep->wire->ops->wait_fd(ep->wire));
		atomic_fetch_sub(&ep->recv_cntr->ref, 1);
	}
	if (ep->lockp != &dom->lock)
		braid_ep_unlock(ep);
	braid_domain_unlock(dom);
	braid_stat_detach(ep);	/* nothing progresses it any more */
	ep_log_drops(ep);
	if (k->close)
		k->close(ep);
	/* its engine (RDM) or queue pair (MSG) is gone: it lets go of its shared contexts */
	braid_srx_leave(ep);
	braid_stx_leave(ep);
	free(ep->auth_scratch);
	if (ep->av)
		atomic_fetch_sub(&ep->av->ref, 1);
	if (ep->eq)
		atomic_fetch_sub(&ep->eq->ref, 1);
	if (ep->wire)
		ep->wire_ops->close(ep->wire);
	pthread_mutex_destroy(&ep->lock);
	fi_freeinfo(ep->info);
	atomic_fetch_sub(&dom->ref, 1);
	free(ep);
	return 0;
}

static int ep_bind_cq(struct braid_ep *ep, struct braid_cq *cq, uint64_t flags)
{
	int ret;

	if (flags & ~EP_CQ_FLAGS)
		return -FI_EBADFLAGS;
	if (!(flags & (FI_TRANSMIT | FI_RECV)))
		return -FI_EBADFLAGS;
	if (((flags & FI_TRANSMIT) && ep->tx_cq) || ((flags & FI_RECV) && ep->rx_cq))
		return -FI_EINVAL;
	if (cq->domain != ep->domain)
		return -FI_EINVAL;
	braid_domain_lock(ep->domain);
	if (flags & FI_TRANSMIT) {
		ret = braid_epset_add(&cq->eps, ep);
		if (ret)
			goto out;
		ep->tx_cq = cq;
		ep->tx_selective = !!(flags & FI_SELECTIVE_COMPLETION);
		atomic_fetch_add(&cq->ref, 1);
		ep_tx_wait_update(ep, true);
	}
	if (flags & FI_RECV) {
		ret = braid_epset_add(&cq->eps, ep);
		if (ret)
			goto out;
		ep->rx_cq = cq;
		ep->rx_selective = !!(flags & FI_SELECTIVE_COMPLETION);
		atomic_fetch_add(&cq->ref, 1);
		ep_rx_wait_update(ep, true);
	}
	ret = 0;
out:
	braid_domain_unlock(ep->domain);
	return ret;
}

static int ep_bind_cntr(struct braid_ep *ep, struct braid_cntr *cntr, uint64_t flags)
{
	int ret = 0;

	if ((flags & EP_CNTR_RMA) && !ep->kind->bind_rma_cntrs)
		return -FI_EBADFLAGS;	/* no RMA counters on this endpoint type */
	if (!flags || (flags & ~(EP_CNTR_FLAGS | EP_CNTR_RMA)))
		return -FI_EBADFLAGS;
	if (((flags & FI_SEND) && ep->send_cntr) || ((flags & FI_RECV) && ep->recv_cntr))
		return -FI_EINVAL;
	if (cntr->domain != ep->domain)
		return -FI_EINVAL;
	braid_domain_lock(ep->domain);
	/* (-FI_EINVAL for a kind already bound, before anything is) */
	if (flags & EP_CNTR_RMA)
		ret = ep->kind->bind_rma_cntrs(ep, cntr, flags & EP_CNTR_RMA);
	if (ret)
		goto out;
	if (flags & FI_SEND) {
		ret = braid_epset_add(&cntr->eps, ep);
		if (ret)
			goto out;
		ep->send_cntr = cntr;
		atomic_fetch_add(&cntr->ref, 1);
		ep_tx_wait_update(ep, true);
	}
	if (flags & FI_RECV) {
		ret = braid_epset_add(&cntr->eps, ep);
		if (ret)
			goto out;
		ep->recv_cntr = cntr;
		atomic_fetch_add(&cntr->ref, 1);
		braid_wait_add_fd(&cntr->wait, ep->wire->ops->wait_fd(ep->wire));
	}
out:
	braid_domain_unlock(ep->domain);
	return ret;
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct braid_ep *ep = ep_of(fid);

	if (!bfid)
		return -FI_EINVAL;
	if (ep->enabled)
		return -FI_EOPBADSTATE;
	switch (bfid->fclass) {
	case FI_CLASS_AV: {
		struct braid_av *av = braid_container_of(bfid, struct braid_av, av_fid.fid);

		if (flags)
			return -FI_EBADFLAGS;
		if (ep->av || av->domain != ep->domain)
			return -FI_EINVAL;
		ep->av = av;
		atomic_fetch_add(&av->ref, 1);
		return 0;
	}
	case FI_CLASS_SRX_CTX:
		if (flags)
			return -FI_EBADFLAGS;
		return braid_srx_bind(ep, braid_container_of(bfid, struct braid_srx, ep_fid.fid));
	case FI_CLASS_STX_CTX:
		if (flags)
			return -FI_EBADFLAGS;
		return braid_stx_bind(ep, braid_container_of(bfid, struct braid_stx, stx_fid.fid));
	case FI_CLASS_CQ:
		return ep_bind_cq(ep, braid_container_of(bfid, struct braid_cq, cq_fid.fid), flags);
	case FI_CLASS_CNTR:
		return ep_bind_cntr(ep, braid_container_of(bfid, struct braid_cntr, cntr_fid.fid),
				    flags);
	case FI_CLASS_EQ: {
		struct braid_eq *eq = braid_container_of(bfid, struct braid_eq, eq_fid.fid);

		if (flags)
			return -FI_EBADFLAGS;
		if (ep->eq)
			return -FI_EINVAL;
		if (ep->kind->bind_eq) {
			int ret = ep->kind->bind_eq(ep, eq);

			if (ret)
				return ret;
		}
		ep->eq = eq;
		atomic_fetch_add(&eq->ref, 1);
		return 0;
	}
	default:
		return -FI_EINVAL;
	}
}

void braid_ep_live_locked(struct braid_ep *ep)
{
	ep->app_ns = braid_now_ns();
	braid_stat_attach(ep);
	ep->enabled = true;
}

int braid_ep_join(struct braid_ep *ep)
{
	if (ep->auth.mode && !ep->auth_scratch) {
		/* a datagram's covered bytes, gathered to be tagged (protocol.md §2.4) */
		ep->auth_scratch = malloc(ep->wire->mtu);
		if (!ep->auth_scratch)
			return -FI_ENOMEM;
	}
	braid_domain_lock(ep->domain);
	if (braid_epset_add(&ep->domain->eps, ep)) {
		braid_domain_unlock(ep->domain);
		return -FI_ENOMEM;
	}
	braid_ep_lock(ep);	/* a CQ's progress may look at it from now on */
	if (braid_srx_enable(ep)) {
		/* fi_endpoint(3): the endpoints of a shared receive context share their AV */
		braid_ep_unlock(ep);
		braid_epset_remove(&ep->domain->eps, ep);
		braid_domain_unlock(ep->domain);
		return -FI_EINVAL;
	}
	braid_ep_live_locked(ep);
	braid_ep_unlock(ep);
	braid_domain_unlock(ep->domain);
	BRAID_INFO(FI_LOG_EP_CTRL, "endpoint enabled on port %u, %d paths, max_msg_size %zu, "
		   "mtu %zu, UDP GSO runs of up to %u datagrams, UDP GRO %s\n",
		   ntohs(ep->wire->name.sin_port), ep->wire->paths, ep->max_msg_size,
		   ep->wire->mtu, ep->kind->gso && braid_cfg.gso ? ep->wire->gso_segs : 0,
		   ep->wire->gro ? "on" : "off");
	return 0;
}

static int ep_enable(struct braid_ep *ep)
{
	uint64_t caps = ep->info->caps;
	bool need_tx = (caps & FI_SEND) || !(caps & (FI_SEND | FI_RECV));
	bool need_rx = (caps & FI_RECV) || !(caps & (FI_SEND | FI_RECV));

	if (ep->enabled)
		return 0;
	if (ep->kind->needs_av && !ep->av)
		return -FI_ENOAV;
	if ((need_tx && !ep->tx_cq && !ep->send_cntr) ||
	    (need_rx && !ep->rx_cq && !ep->recv_cntr))
		return -FI_ENOCQ;
	return ep->kind->enable(ep);
}

/* FI_GETOPSFLAG and FI_SETOPSFLAG of @tx or @rx flags (fi_endpoint(3) fi_control) */
static int ep_opsflag(int command, uint64_t *flags, uint64_t *tx, uint64_t *rx)
{
	if (!flags || ((*flags & FI_TRANSMIT) && (*flags & FI_RECV)) ||
	    !(*flags & (FI_TRANSMIT | FI_RECV)))
		return -FI_EINVAL;
	if (command == FI_GETOPSFLAG)
		*flags = (*flags & FI_TRANSMIT) ? *tx : *rx;
	else if (*flags & FI_TRANSMIT)
		*tx = *flags & ~FI_TRANSMIT;
	else
		*rx = *flags & ~FI_RECV;
	return 0;
}

static int ep_alias(struct braid_ep *ep, struct fi_alias *alias);

static int ep_control(struct fid *fid, int command, void *arg)
{
	struct braid_ep *ep = ep_of(fid);
	uint64_t *flags = arg;

	switch (command) {
	case FI_ENABLE:
		return ep_enable(ep);
	case FI_ALIAS:
		return ep_alias(ep, arg);
	case FI_GETOPSFLAG:
	case FI_SETOPSFLAG:
		return ep_opsflag(command, flags, &ep->tx_op_flags, &ep->rx_op_flags);
	default:
		return -FI_ENOSYS;
	}
}

int braid_name_copy(const struct sockaddr_in *bound, void *addr, size_t *addrlen)
{
	struct sockaddr_in name;
	size_t len;

	if (!addrlen || (*addrlen && !addr))
		return -FI_EINVAL;
	name = *bound;
	if (name.sin_addr.s_addr == htonl(INADDR_ANY))
		name.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	len = *addrlen;
	*addrlen = sizeof(name);
	if (len)
		memcpy(addr, &name, len < sizeof(name) ? len : sizeof(name));
	return len < sizeof(name) ? -FI_ETOOSMALL : 0;
}

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	return braid_name_copy(&ep_of(fid)->wire->name, addr, addrlen);
}

static int ep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct braid_ep *ep = ep_of(fid);
	struct sockaddr_in sin;
	int ret;

	if (!addr || addrlen != sizeof(sin))
		return -FI_EINVAL;
	memcpy(&sin, addr, sizeof(sin));
	if (sin.sin_family != AF_INET)
		return -FI_EINVAL;
	if (ep->enabled)
		return -FI_EOPBADSTATE;
	braid_domain_lock(ep->domain);
	ep_rx_wait_update(ep, false);
	ret = braid_ep_wire_open(ep, &sin);
	ep_rx_wait_update(ep, true);
	braid_domain_unlock(ep->domain);
	return ret;
}

int braid_ep_opt_get_size(size_t value, void *optval, size_t *optlen)
{
	if (*optlen < sizeof(size_t))
		return -FI_ETOOSMALL;
	*(size_t *)optval = value;
	*optlen = sizeof(size_t);
	return 0;
}

int braid_ep_opt_set_size(size_t *value, const void *optval, size_t optlen)
{
	if (optlen != sizeof(size_t))
		return -FI_EINVAL;
	*value = *(const size_t *)optval;
	return 0;
}

static int ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	struct braid_ep *ep = ep_of(fid);

	if (!optval || !optlen)
		return -FI_EINVAL;
	if (level != FI_OPT_ENDPOINT || !ep->kind->getopt)
		return -FI_ENOPROTOOPT;
	return ep->kind->getopt(ep, optname, optval, optlen);
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	struct braid_ep *ep = ep_of(fid);

	if (!optval)
		return -FI_EINVAL;
	if (level != FI_OPT_ENDPOINT || !ep->kind->setopt)
		return -FI_ENOPROTOOPT;
	return ep->kind->setopt(ep, optname, optval, optlen);
}

static ssize_t ep_cancel(fid_t fid, void *context)
{
	struct braid_ep *ep = ep_of(fid);

	return ep->kind->cancel(ep, context);
}

static int ep_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		     struct fid_ep **tx_ep, void *context)
{
	return -FI_ENOSYS;
}

static int ep_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		     struct fid_ep **rx_ep, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t ep_rx_size_left(struct fid_ep *ep_fid)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (!ep->kind->rx_size_left)
		return -FI_ENOSYS;
	if (ep->srx)	/* its receives are the shared context's */
		return (ssize_t)braid_srx_room(ep->srx);
	return ep->kind->rx_size_left(ep);
}

static ssize_t ep_tx_size_left(struct fid_ep *ep_fid)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	ssize_t sends;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (!ep->kind->tx_size_left)
		return -FI_ENOSYS;
	sends = ep->kind->tx_size_left(ep);
	/* a shared transmit context bounds it too */
	if (ep->stx && (ssize_t)braid_stx_room(ep->stx) < sends)
		sends = (ssize_t)braid_stx_room(ep->stx);
	return sends;
}

static struct fi_ops ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = ep_close,
	.bind = ep_bind,
	.control = ep_control,
	.ops_open = braid_stat_ops_open,
	.tostr = braid_nosys_tostr,
	.ops_set = braid_nosys_ops_set,
};

bool braid_fid_is_ep(const struct fid *fid)
{
	return fid && fid->fclass == FI_CLASS_EP && fid->ops == &ep_fi_ops;
}

static struct fi_ops_ep ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = ep_cancel,
	.getopt = ep_getopt,
	.setopt = ep_setopt,
	.tx_ctx = ep_tx_ctx,
	.rx_ctx = ep_rx_ctx,
	.rx_size_left = ep_rx_size_left,
	.tx_size_left = ep_tx_size_left,
};

static int ep_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;	/* connectionless */
}

static int ep_connect(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

static int ep_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}

static int ep_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

static int ep_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

static int ep_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int ep_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		   struct fid_mc **mc, void *context)
{
	return -FI_ENOSYS;	/* no multicast */
}

static struct fi_ops_cm ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = ep_setname,
	.getname = ep_getname,
	.getpeer = ep_getpeer,
	.connect = ep_connect,
	.listen = ep_listen,
	.accept = ep_accept,
	.reject = ep_reject,
	.shutdown = ep_shutdown,
	.join = ep_join,
};

/* ---- aliases (fi_ep_alias): the endpoint with default flags of their own ---- */

static struct braid_ep_alias *alias_of(struct fid *fid)
{
	return braid_container_of(fid, struct braid_ep_alias, ep_fid.fid);
}

static int alias_close(struct fid *fid)
{
	struct braid_ep_alias *a = alias_of(fid);

	atomic_fetch_sub(&a->ep->aliases, 1);
	free(a);
	return 0;
}

static int alias_control(struct fid *fid, int command, void *arg)
{
	struct braid_ep_alias *a = alias_of(fid);

	if (command != FI_GETOPSFLAG && command != FI_SETOPSFLAG)
		return -FI_ENOSYS;
	if (command == FI_SETOPSFLAG && arg && (*(uint64_t *)arg & FI_TRIGGER) &&
	    !(a->ep->info->caps & FI_TRIGGER))
		return -FI_EBADFLAGS;
	return ep_opsflag(command, arg, &a->tx_op_flags, &a->rx_op_flags);
}

struct fi_ops braid_alias_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = alias_close,
	.bind = braid_nosys_bind,
	.control = alias_control,
	.ops_open = braid_nosys_ops_open,
	.tostr = braid_nosys_tostr,
	.ops_set = braid_nosys_ops_set,
};

/*
 * fi_ep_alias (fi_endpoint(3)): an RDM endpoint's alias, whose data calls
 * take the default flags given (FI_TRANSMIT and/or FI_RECV selecting which),
 * e.g. FI_TRIGGER for transfers held for a counter (fi_trigger(3)).
 */
static int ep_alias(struct braid_ep *ep, struct fi_alias *alias)
{
	const uint64_t dir = FI_TRANSMIT | FI_RECV;
	struct braid_ep_alias *a;

	if (!alias || !alias->fid || !(alias->flags & dir))
		return -FI_EINVAL;
	if (!ep->kind->aliases)
		return -FI_ENOSYS;
	if ((alias->flags & FI_TRIGGER) && !(ep->info->caps & FI_TRIGGER))
		return -FI_EBADFLAGS;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -FI_ENOMEM;
	a->ep = ep;
	a->tx_op_flags = (alias->flags & FI_TRANSMIT) ? alias->flags & ~dir : ep->tx_op_flags;
	a->rx_op_flags = (alias->flags & FI_RECV) ? alias->flags & ~dir : ep->rx_op_flags;
	a->ep_fid = ep->ep_fid;		/* the endpoint's calls, which find it through ep_of() */
	a->ep_fid.fid.ops = &braid_alias_fi_ops;
	atomic_fetch_add(&ep->aliases, 1);
	*alias->fid = &a->ep_fid.fid;
	return 0;
}

/* the table of an endpoint of @type (fi_info's, checked) */
static const struct braid_ep_kind *ep_kind_of(enum fi_ep_type type)
{
	switch (type) {
	case FI_EP_DGRAM:
		return &braid_dgram_kind;
	case FI_EP_RDM:
		return &braid_rdm_kind;
	case FI_EP_MSG:
		return &braid_msg_kind;
	default:
		return NULL;
	}
}

int braid_ep_open(struct fid_domain *domain, struct fi_info *info,
		  struct fid_ep **ep_out, void *context)
{
	const struct braid_ep_kind *k;
	struct braid_domain *dom;
	struct sockaddr_in addr = { .sin_family = AF_INET };
	struct braid_ep *ep;
	int ret;

	if (!domain || !info || !ep_out)
		return -FI_EINVAL;
	ret = braid_check_info(info);
	if (ret)
		return ret;
	k = ep_kind_of(info->ep_attr->type);
	if (!k)
		return -FI_EINVAL;
	dom = braid_container_of(domain, struct braid_domain, domain_fid);
	if (info->src_addr) {
		if (info->src_addrlen != sizeof(addr) ||
		    ((struct sockaddr *)info->src_addr)->sa_family != AF_INET)
			return -FI_EINVAL;
		memcpy(&addr, info->src_addr, sizeof(addr));
	} else if (dom->info->src_addr && dom->info->src_addrlen == sizeof(addr)) {
		memcpy(&addr, dom->info->src_addr, sizeof(addr));
		addr.sin_port = 0;
	}

	ep = calloc(1, k->size);
	if (!ep)
		return -FI_ENOMEM;
	ep->stat_slot = -1;
	ep->info = fi_dupinfo(info);
	if (!ep->info) {
		free(ep);
		return -FI_ENOMEM;
	}
	ep->domain = dom;
	ep->kind = k;
	ep->type = info->ep_attr->type;
	pthread_mutex_init(&ep->lock, NULL);
	/* MSG endpoints share their domain's RoCEv2 ports: the domain's lock is theirs */
	ep->lockp = !dom->locking ? NULL : k->domain_lock ? &dom->lock : &ep->lock;
	/* fi_endpoint(3): its own authorization key, else the domain's */
	if (info->ep_attr->auth_key_size) {
		ret = braid_auth_attr(&ep->auth, info->ep_attr->auth_key, info->ep_attr->auth_key_size);
		if (ret)
			goto err;
	} else {
		ep->auth = dom->auth;
	}
	ep->mr_auth_ok = !dom->auth.mode || braid_auth_same(&ep->auth, &dom->auth);
	ep->wire_ops = braid_wire_find(braid_cfg.wire);
	braid_dlist_init(&ep->srx_node);
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;

	ep->ep_fid.fid.fclass = FI_CLASS_EP;
	ep->ep_fid.fid.context = context;
	ep->ep_fid.fid.ops = &ep_fi_ops;
	ep->ep_fid.ops = &ep_ops;
	ep->ep_fid.cm = k->cm ? k->cm : &ep_cm_ops;
	ep->ep_fid.msg = k->msg;
	ep->ep_fid.rma = k->rma ? k->rma : &braid_nosys_rma_ops;
	ep->ep_fid.tagged = k->tagged ? k->tagged : &braid_nosys_tagged_ops;
	ep->ep_fid.atomic = k->atomic ? k->atomic : &braid_nosys_atomic_ops;
	ep->ep_fid.collective = &braid_nosys_collective_ops;
	/* its wire and its type's own state (MSG with FI_TAGGED: its tagged ops too) */
	ret = k->open(ep, &addr);
	if (ret)
		goto err;
	atomic_fetch_add(&dom->ref, 1);
	*ep_out = &ep->ep_fid;
	return 0;
err:
	pthread_mutex_destroy(&ep->lock);
	fi_freeinfo(ep->info);
	free(ep);
	return ret;
}
