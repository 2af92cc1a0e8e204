/* SPDX-License-Identifier: BSD-2-Clause */
/* test_cm.c: the RC connection handshake (core/braid_cm.c): two engines and a listener over a tiny lossy wire in virtual time. */
#include <criterion/criterion.h>
#include <string.h>
#include <rdma/fi_errno.h>

#include "braid_cm.h"

#define US	1000ULL
#define MS	1000000ULL
#define SEC	1000000000ULL
#define DELAY	(50 * US)	/* one way, every message */
#define RETRY	(200 * MS)
#define T0	(1 * SEC)	/* virtual time starts here (0 is nothing special) */

/* the nodes: A connects, L listens, B accepts; B's socket shares L's IP (§6.1) */
enum { A = 0, B = 1, L = 2, NODES };
static const uint32_t node_ip[NODES] = { 0x0a000001, 0x0a000002, 0x0a000002 };
static const uint16_t node_port[NODES] = { 50000, 50001, 7471 };
static const struct braid_cm_qp qp_a = { .qpn = 0x000a11, .psn = 0x123456, .mtu = 4096,
					 .rc_port = 4791 };
static const struct braid_cm_qp qp_b = { .qpn = 0x000b22, .psn = 0x654321, .mtu = 1024,
					 .rc_port = 4792 };
#define CONN_ID	0x0123456789abcdefULL

#define EV_MAX	32
#define Q_MAX	256
#define MSG_MAX	(sizeof(struct braid_cm_hdr) + BRAID_CM_DATA_MAX)

struct rec_event {
	struct braid_cm_event ev;
	uint64_t at;
	uint8_t pdata[BRAID_CM_DATA_MAX];	/* a copy: the engine's is valid for one call */
};

struct node {
	struct braid_cm_conn c;
	/** @peer: where its messages go (A: L until a REP names B, as the provider's address) */
	int peer;
	struct rec_event ev[EV_MAX];
	int nev;
	/** @qp_ret: what creating the QP returns; @qp_creates, @flushes: actions taken */
	int qp_ret, qp_creates, flushes;
	/** @input_drops: braid_cm_input refusals (index: drop reason) */
	int input_drops[BRAID_DROP_MAX];
	int addr_drops;
};

struct wmsg {
	int src, dst;
	uint64_t at;
	uint8_t buf[MSG_MAX];
	size_t len;
};

struct world {
	uint64_t now;
	struct node n[2];
	struct braid_cm_listener l;
	/** @reqs: FI_CONNREQ number i is reqs[i] */
	struct braid_cm_req reqs[8];
	int nreqs, dup_reqs, l_drops, decode_drops;
	struct wmsg q[Q_MAX];
	int nq;
	/** @sent: messages put on the wire, per sender and kind (lost ones included) */
	int sent[NODES][BRAID_CM_KIND_MAX];
	/** @sent_at: when the last one of each went */
	uint64_t sent_at[NODES][BRAID_CM_KIND_MAX];
	/** @drop: lose the next n messages of this kind from this sender (-1: all) */
	int drop[NODES][BRAID_CM_KIND_MAX];
	int lost;
};

static struct world W;

/* ---- the wire ---- */

static void wire_put(struct world *w, int src, int dst, const uint8_t *buf, size_t len)
{
	struct wmsg *m;

	cr_assert_lt(w->nq, Q_MAX, "wire overflow");
	m = &w->q[w->nq++];
	m->src = src;
	m->dst = dst;
	m->at = w->now + DELAY;
	memcpy(m->buf, buf, len);
	m->len = len;
}

/* encode @v as the provider does (braid_cm_write + private data) and send it, unless lost */
static void wire_send(struct world *w, int src, int dst, const struct braid_cm_view *v)
{
	uint8_t buf[MSG_MAX];
	int *drop = &w->drop[src][v->kind];

	cr_assert_leq(v->pdata_len, BRAID_CM_DATA_MAX);
	braid_cm_write((struct braid_cm_hdr *)buf, node_port[src], v);
	if (v->pdata_len)
		memcpy(buf + sizeof(struct braid_cm_hdr), v->pdata, v->pdata_len);
	w->sent[src][v->kind]++;
	w->sent_at[src][v->kind] = w->now;
	if (*drop) {
		if (*drop > 0)
			(*drop)--;
		w->lost++;
		return;
	}
	wire_put(w, src, dst, buf, sizeof(struct braid_cm_hdr) + v->pdata_len);
}

/* ---- the provider's part: act on events, send the messages ---- */

static void pump(struct world *w, int i, int from)
{
	struct node *n = &w->n[i];
	struct braid_cm_event ev;
	struct braid_cm_view out;

	while (braid_cm_poll(&n->c, &ev, 1) == 1) {
		struct rec_event *r;

		cr_assert_lt(n->nev, EV_MAX);
		r = &n->ev[n->nev++];
		r->ev = ev;
		r->at = w->now;
		if (ev.pdata_len)
			memcpy(r->pdata, ev.pdata, ev.pdata_len);
		switch (ev.type) {
		case BRAID_CM_EV_QP_CREATE:
			/* a REP's source is the peer from now on (§6.3) */
			if (from >= 0)
				n->peer = from;
			n->qp_creates++;
			braid_cm_qp_created(&n->c, n->qp_ret, w->now);
			break;
		case BRAID_CM_EV_QP_FLUSH:
			n->flushes++;
			break;
		default:
			break;
		}
	}
	while (braid_cm_output(&n->c, &out, 1) == 1)
		wire_send(w, i, n->peer, &out);
}

static void deliver(struct world *w, const struct wmsg *m)
{
	struct braid_cm_view v;
	int ret;

	if (braid_cm_decode(m->buf, m->len, &v)) {
		w->decode_drops++;
		return;
	}
	if (m->dst == L) {
		if (v.kind != BRAID_CM_REQ) {
			w->l_drops++;
			return;
		}
		if (braid_cm_listener_find(&w->l, &v, node_ip[m->src], node_port[m->src])) {
			w->dup_reqs++;
			return;
		}
		cr_assert_lt(w->nreqs, 8);
		braid_cm_listener_add(&w->l, &w->reqs[w->nreqs++], &v, node_ip[m->src],
				      node_port[m->src]);
		return;
	}
	/* the provider checks the source IP; the engine the conn_id */
	if (node_ip[m->src] != node_ip[w->n[m->dst].peer]) {
		w->n[m->dst].addr_drops++;
		return;
	}
	ret = braid_cm_input(&w->n[m->dst].c, &v, w->now);
	if (ret < 0) {
		cr_assert_lt(-ret - 1, BRAID_DROP_MAX);
		w->n[m->dst].input_drops[-ret - 1]++;
		return;
	}
	cr_assert_eq(ret, 0);
	pump(w, m->dst, m->src);
}

static uint64_t next_event(const struct world *w)
{
	uint64_t t = BRAID_CM_NONE;
	int i;

	for (i = 0; i < w->nq; i++)
		if (w->q[i].at < t)
			t = w->q[i].at;
	for (i = 0; i < 2; i++)
		if (braid_cm_next_deadline(&w->n[i].c) < t)
			t = braid_cm_next_deadline(&w->n[i].c);
	return t;
}

/* advance virtual time to @until, event by event: arrivals in order, then due timers */
static void run_until(struct world *w, uint64_t until)
{
	for (;;) {
		uint64_t t = next_event(w);
		int i;

		if (t > until) {
			w->now = until;
			return;
		}
		cr_assert_geq(t, w->now, "time went backwards");
		w->now = t;
		for (i = 0; i < w->nq;) {
			if (w->q[i].at <= w->now) {
				struct wmsg m = w->q[i];

				w->q[i] = w->q[--w->nq];
				deliver(w, &m);
				i = 0;	/* delivery may have queued more */
			} else {
				i++;
			}
		}
		for (i = 0; i < 2; i++)
			if (braid_cm_next_deadline(&w->n[i].c) <= w->now) {
				braid_cm_timer(&w->n[i].c, w->now);
				pump(w, i, -1);
			}
	}
}

static void run_for(struct world *w, uint64_t d)
{
	run_until(w, w->now + d);
}

/* ---- scenario steps ---- */

static struct world *world_init(void)
{
	struct world *w = &W;

	memset(w, 0, sizeof(*w));
	w->now = T0;
	braid_cm_construct(&w->n[A].c, NULL);
	braid_cm_construct(&w->n[B].c, NULL);
	w->n[A].peer = L;
	w->n[B].peer = A;
	braid_cm_listener_construct(&w->l);
	return w;
}

static void connect_a(struct world *w, const char *pdata)
{
	cr_assert_eq(braid_cm_connect(&w->n[A].c, CONN_ID, &qp_a, pdata,
				      pdata ? strlen(pdata) + 1 : 0, w->now), 0);
	pump(w, A, -1);
}

static int accept_b(struct world *w, int req, const char *pdata)
{
	int ret = braid_cm_accept(&w->n[B].c, &w->reqs[req], &qp_b, pdata,
				  pdata ? strlen(pdata) + 1 : 0, w->now);

	if (!ret)
		pump(w, B, -1);
	return ret;
}

static void shutdown_node(struct world *w, int i)
{
	cr_assert_eq(braid_cm_shutdown(&w->n[i].c, w->now), 0);
	pump(w, i, -1);
}

static int count_ev(const struct node *n, enum braid_cm_event_type type)
{
	int i, k = 0;

	for (i = 0; i < n->nev; i++)
		k += n->ev[i].ev.type == type;
	return k;
}

static const struct rec_event *find_ev(const struct node *n, enum braid_cm_event_type type)
{
	int i;

	for (i = 0; i < n->nev; i++)
		if (n->ev[i].ev.type == type)
			return &n->ev[i];
	cr_assert_fail("no event %d", type);
	return NULL;
}

/* B accepts the one request; both are up 1 ms later */
static void accept_and_settle(struct world *w, const char *pdata)
{
	cr_assert_eq(w->nreqs, 1);
	cr_assert_eq(accept_b(w, 0, pdata), 0);
	run_for(w, 1 * MS);
	cr_assert_eq(w->n[A].c.state, BRAID_CM_ESTABLISHED);
	cr_assert_eq(w->n[B].c.state, BRAID_CM_ESTABLISHED);
}

/* connected both ways with nothing lost; returns when everything has settled */
static struct world *connected_pair(void)
{
	struct world *w = world_init();

	connect_a(w, "hello");
	run_for(w, 1 * MS);
	accept_and_settle(w, "welcome");
	return w;
}

/* every RTU lost: A is up, B still in REP_SENT (resending REP) */
static struct world *rtu_lost_pair(void)
{
	struct world *w = world_init();

	w->drop[A][BRAID_CM_RTU] = -1;
	connect_a(w, NULL);
	run_for(w, 1 * MS);
	cr_assert_eq(accept_b(w, 0, NULL), 0);
	run_for(w, 1 * MS);
	cr_assert_eq(w->n[A].c.state, BRAID_CM_ESTABLISHED);
	cr_assert_eq(w->n[B].c.state, BRAID_CM_REP_SENT);
	return w;
}

static void assert_quiet(const struct world *w)
{
	cr_assert_eq(braid_cm_next_deadline(&w->n[A].c), BRAID_CM_NONE, "A has a timer armed");
	cr_assert_eq(braid_cm_next_deadline(&w->n[B].c), BRAID_CM_NONE, "B has a timer armed");
	cr_assert_eq(w->nq, 0, "messages still on the wire");
}

/* ---- the handshake ---- */

Test(braid_cm_connect, clean_handshake_exchanges_qps_and_private_data)
{
	struct world *w = world_init();
	const struct rec_event *e;
	uint64_t t_acc;

	cr_assert_eq(braid_cm_next_deadline(&w->n[A].c), BRAID_CM_NONE);
	connect_a(w, "hello");
	cr_assert_eq(w->n[A].c.state, BRAID_CM_REQ_SENT);
	cr_assert_eq(braid_cm_next_deadline(&w->n[A].c), T0 + RETRY);
	cr_assert_eq(braid_cm_post_check(&w->n[A].c), -FI_ENOTCONN);
	run_for(w, 1 * MS);
	/* L holds one request with A's QP, address and conn_id */
	cr_assert_eq(w->nreqs, 1);
	cr_assert_eq(w->reqs[0].conn_id, CONN_ID);
	cr_assert_eq(w->reqs[0].qp.qpn, qp_a.qpn);
	cr_assert_eq(w->reqs[0].qp.psn, qp_a.psn);
	cr_assert_eq(w->reqs[0].qp.mtu, 4096);
	cr_assert_eq(w->reqs[0].qp.rc_port, qp_a.rc_port);
	cr_assert_eq(w->reqs[0].ip, node_ip[A]);
	cr_assert_eq(w->reqs[0].port, node_port[A]);
	cr_assert_eq(braid_cm_listener_first(&w->l), &w->reqs[0]);

	t_acc = w->now;
	cr_assert_eq(accept_b(w, 0, "welcome"), 0);
	/* B's QP exists before its REP goes out; the MTU is the smaller one */
	cr_assert_eq(w->n[B].qp_creates, 1);
	cr_assert_eq(w->n[B].c.state, BRAID_CM_REP_SENT);
	cr_assert(w->reqs[0].accepted);
	cr_assert_eq(w->n[B].c.local.mtu, 1024);
	cr_assert_eq(w->n[B].c.peer.qpn, qp_a.qpn);
	cr_assert_eq(w->n[B].c.peer.psn, qp_a.psn);
	cr_assert_eq(w->n[B].c.peer.rc_port, qp_a.rc_port);
	cr_assert_eq(braid_cm_post_check(&w->n[B].c), 0, "B's QP takes work from fi_accept on");
	run_for(w, 1 * MS);

	/* A: QP from the REP, RTU, CONNECTED with B's private data */
	cr_assert_eq(w->n[A].c.state, BRAID_CM_ESTABLISHED);
	cr_assert_eq(w->n[A].qp_creates, 1);
	cr_assert_eq(w->n[A].peer, B, "the REP's source is the peer from then on");
	cr_assert_eq(w->n[A].c.local.mtu, 1024);
	cr_assert_eq(w->n[A].c.peer.qpn, qp_b.qpn);
	cr_assert_eq(w->n[A].c.peer.psn, qp_b.psn);
	cr_assert_eq(w->n[A].c.peer.rc_port, qp_b.rc_port);
	e = find_ev(&w->n[A], BRAID_CM_EV_CONNECTED);
	cr_assert_eq(e->ev.pdata_len, 8);
	cr_assert_str_eq((const char *)e->pdata, "welcome");
	cr_assert_eq(e->at, t_acc + DELAY, "connected as the REP arrives");
	/* B: CONNECTED on the RTU, no private data */
	cr_assert_eq(w->n[B].c.state, BRAID_CM_ESTABLISHED);
	e = find_ev(&w->n[B], BRAID_CM_EV_CONNECTED);
	cr_assert_eq(e->ev.pdata_len, 0);
	cr_assert_eq(e->at, t_acc + 2 * DELAY);
	cr_assert_eq(w->n[A].nev, 2, "QP_CREATE and CONNECTED only");
	cr_assert_eq(w->n[B].nev, 2);
	cr_assert_eq(w->sent[A][BRAID_CM_REQ], 1);
	cr_assert_eq(w->sent[B][BRAID_CM_REP], 1);
	cr_assert_eq(w->sent[A][BRAID_CM_RTU], 1);
	cr_assert_eq(braid_cm_connect(&w->n[A].c, 1, &qp_a, NULL, 0, w->now), -FI_EISCONN);
	cr_assert_eq(braid_cm_accept(&w->n[B].c, &w->reqs[0], &qp_b, NULL, 0, w->now),
		     -FI_EALREADY);
	run_for(w, 10 * SEC);
	assert_quiet(w);
	cr_assert_eq(w->sent[A][BRAID_CM_REQ] + w->sent[B][BRAID_CM_REP], 2, "nothing resent");
}

Test(braid_cm_connect, lost_req_is_resent_after_200ms)
{
	struct world *w = world_init();

	w->drop[A][BRAID_CM_REQ] = 1;
	connect_a(w, "hello");
	run_for(w, RETRY - 1);
	cr_assert_eq(w->nreqs, 0);
	cr_assert_eq(w->sent[A][BRAID_CM_REQ], 1);
	run_for(w, 1);
	cr_assert_eq(w->sent[A][BRAID_CM_REQ], 2);
	cr_assert_eq(w->sent_at[A][BRAID_CM_REQ], T0 + RETRY);
	run_for(w, 1 * MS);
	accept_and_settle(w, "x");
	cr_assert_eq(count_ev(&w->n[A], BRAID_CM_EV_CONNECTED), 1);
	cr_assert_eq(count_ev(&w->n[B], BRAID_CM_EV_CONNECTED), 1);
	run_for(w, 10 * SEC);
	assert_quiet(w);
}

Test(braid_cm_accept, lost_rep_is_resent_until_it_gets_through)
{
	struct world *w = world_init();
	uint64_t t_acc;

	connect_a(w, NULL);
	run_for(w, 1 * MS);
	w->drop[B][BRAID_CM_REP] = 2;
	t_acc = w->now;
	cr_assert_eq(accept_b(w, 0, "rep data"), 0);
	run_for(w, 2 * RETRY - 1);
	cr_assert_eq(w->sent[B][BRAID_CM_REP], 2);
	cr_assert_eq(w->sent_at[B][BRAID_CM_REP], t_acc + RETRY);
	cr_assert_eq(w->n[A].c.state, BRAID_CM_REQ_SENT, "still waiting, still sending REQ");
	/* A's REQ repeats reach L as duplicates: no second request */
	cr_assert_geq(w->dup_reqs, 1);
	cr_assert_eq(w->nreqs, 1);
	run_for(w, 1 * MS);
	cr_assert_eq(w->sent[B][BRAID_CM_REP], 3);
	cr_assert_eq(w->n[A].c.state, BRAID_CM_ESTABLISHED);
	cr_assert_eq(w->n[B].c.state, BRAID_CM_ESTABLISHED);
	cr_assert_str_eq((const char *)find_ev(&w->n[A], BRAID_CM_EV_CONNECTED)->pdata, "rep data");
	cr_assert_eq(w->sent[A][BRAID_CM_RTU], 1);
	run_for(w, 10 * SEC);
	assert_quiet(w);
}

/* The RTU is lost and RC data arrives first: the provider calls the hook and B is up (IBTA
 * "communication established"); it stops resending REP. */
Test(braid_cm_comm_established, first_rc_packet_establishes_when_rtu_is_lost)
{
	struct world *w = rtu_lost_pair();
	int reps;

	cr_assert_eq(count_ev(&w->n[B], BRAID_CM_EV_CONNECTED), 0);

	/* the hook does nothing where it has no meaning */
	braid_cm_comm_established(&w->n[A].c);
	pump(w, A, -1);
	cr_assert_eq(count_ev(&w->n[A], BRAID_CM_EV_CONNECTED), 1);

	/* A's first RC packet reaches B's QP */
	braid_cm_comm_established(&w->n[B].c);
	pump(w, B, -1);
	cr_assert_eq(w->n[B].c.state, BRAID_CM_ESTABLISHED);
	cr_assert_eq(count_ev(&w->n[B], BRAID_CM_EV_CONNECTED), 1);
	cr_assert_eq(find_ev(&w->n[B], BRAID_CM_EV_CONNECTED)->at, w->now);
	reps = w->sent[B][BRAID_CM_REP];
	braid_cm_comm_established(&w->n[B].c);	/* later packets: nothing more */
	pump(w, B, -1);
	cr_assert_eq(count_ev(&w->n[B], BRAID_CM_EV_CONNECTED), 1);
	run_for(w, 10 * SEC);
	cr_assert_eq(w->sent[B][BRAID_CM_REP], reps, "REP resent after the connection was up");
	assert_quiet(w);
}

/* The RTU is lost and no RC data comes: B's REP retry makes A answer RTU again (§6.4). */
Test(braid_cm_input, repeated_rep_is_answered_with_rtu)
{
	struct world *w = world_init();
	uint64_t t_acc;

	w->drop[A][BRAID_CM_RTU] = 1;
	connect_a(w, NULL);
	run_for(w, 1 * MS);
	t_acc = w->now;
	cr_assert_eq(accept_b(w, 0, NULL), 0);
	run_for(w, RETRY - 1);
	cr_assert_eq(w->n[B].c.state, BRAID_CM_REP_SENT);
	cr_assert_eq(w->sent[A][BRAID_CM_RTU], 1);
	run_for(w, 1 * MS);
	cr_assert_eq(w->sent_at[B][BRAID_CM_REP], t_acc + RETRY);
	cr_assert_eq(w->sent[A][BRAID_CM_RTU], 2);
	cr_assert_eq(w->n[B].c.state, BRAID_CM_ESTABLISHED);
	cr_assert_eq(find_ev(&w->n[B], BRAID_CM_EV_CONNECTED)->at, t_acc + RETRY + 2 * DELAY);
	cr_assert_eq(count_ev(&w->n[A], BRAID_CM_EV_CONNECTED), 1, "A reports CONNECTED once");
	cr_assert_eq(w->n[A].qp_creates, 1, "and creates its QP once");
	run_for(w, 10 * SEC);
	assert_quiet(w);
}

/* ---- the listener ---- */

Test(braid_cm_listener_find, repeated_req_is_one_request_before_and_after_accept)
{
	struct world *w = world_init();
	struct braid_cm_view v = { .kind = BRAID_CM_REQ, .conn_id = CONN_ID, .qpn = 1, .psn = 1,
				   .mtu = 4096, .rc_port = 1 };
	uint8_t buf[MSG_MAX];

	connect_a(w, "hello");
	/* the application takes 700 ms to decide: A resends REQ three times meanwhile */
	run_for(w, 700 * MS);
	cr_assert_eq(w->sent[A][BRAID_CM_REQ], 4);
	cr_assert_eq(w->nreqs, 1, "one FI_CONNREQ");
	cr_assert_eq(w->dup_reqs, 3);
	cr_assert_eq(accept_b(w, 0, NULL), 0);
	/* a copy of the REQ still in the network after accept: still no new request */
	braid_cm_write((struct braid_cm_hdr *)buf, node_port[A], &v);
	wire_put(w, A, L, buf, sizeof(struct braid_cm_hdr));
	run_for(w, 1 * MS);
	cr_assert_eq(w->nreqs, 1);
	cr_assert_eq(w->dup_reqs, 4);
	cr_assert_eq(w->n[A].c.state, BRAID_CM_ESTABLISHED, "the endpoint's REP answered it");
	cr_assert_eq(w->n[B].c.state, BRAID_CM_ESTABLISHED);

	/* the key is conn_id and address: another port or another conn_id is a new request */
	cr_assert_null(braid_cm_listener_find(&w->l, &v, node_ip[A], node_port[A] + 1));
	v.conn_id++;
	cr_assert_null(braid_cm_listener_find(&w->l, &v, node_ip[A], node_port[A]));
	v.conn_id--;
	cr_assert_eq(braid_cm_listener_find(&w->l, &v, node_ip[A], node_port[A]), &w->reqs[0]);
	/* its endpoint closes: forgotten (twice is harmless) */
	braid_cm_listener_remove(&w->reqs[0]);
	braid_cm_listener_remove(&w->reqs[0]);
	cr_assert_null(braid_cm_listener_first(&w->l));
	cr_assert_null(braid_cm_listener_find(&w->l, &v, node_ip[A], node_port[A]));
}

Test(braid_cm_listener_reject, refused_with_private_data)
{
	struct world *w = world_init();
	struct braid_cm_view rej;
	const struct rec_event *e;

	connect_a(w, "let me in");
	run_for(w, 1 * MS);
	cr_assert_eq(braid_cm_listener_reject(&w->reqs[0], FI_ECONNREFUSED, "go away", 8, &rej), 0);
	cr_assert_null(braid_cm_listener_first(&w->l), "a refused request is forgotten");
	cr_assert_eq(rej.kind, BRAID_CM_REJ);
	cr_assert_eq(rej.conn_id, CONN_ID);
	wire_send(w, L, A, &rej);
	run_for(w, 1 * MS);
	cr_assert_eq(w->n[A].c.state, BRAID_CM_ERROR);
	cr_assert_eq(w->n[A].nev, 1);
	e = find_ev(&w->n[A], BRAID_CM_EV_REJECTED);
	cr_assert_eq(e->ev.err, FI_ECONNREFUSED);
	cr_assert_eq(e->ev.pdata_len, 8);
	cr_assert_str_eq((const char *)e->pdata, "go away");
	cr_assert_eq(braid_cm_post_check(&w->n[A].c), -FI_EOPBADSTATE);
	cr_assert_eq(braid_cm_shutdown(&w->n[A].c, w->now), -FI_ENOTCONN);
	run_for(w, 10 * SEC);
	cr_assert_eq(w->sent[A][BRAID_CM_REQ], 1, "no REQ after the REJ");
	assert_quiet(w);
}

Test(braid_cm_listener_busy, full_eq_refuses_with_ebusy)
{
	struct world *w = world_init();
	struct braid_cm_view req, rej;
	uint8_t buf[MSG_MAX];

	connect_a(w, NULL);
	/* what the provider does when its EQ has no room for FI_CONNREQ */
	braid_cm_write((struct braid_cm_hdr *)buf, node_port[A],
		       &(struct braid_cm_view){ .kind = BRAID_CM_REQ, .conn_id = CONN_ID,
						.mtu = 4096, .rc_port = 1 });
	cr_assert_eq(braid_cm_decode(buf, sizeof(struct braid_cm_hdr), &req), 0);
	braid_cm_listener_busy(&req, &rej);
	cr_assert_eq(rej.status, FI_EBUSY);
	wire_send(w, L, A, &rej);
	run_for(w, 1 * MS);
	cr_assert_eq(find_ev(&w->n[A], BRAID_CM_EV_REJECTED)->ev.err, FI_EBUSY);
	cr_assert_eq(w->n[A].c.state, BRAID_CM_ERROR);
}

Test(braid_cm_listener_reject, accepted_request_cannot_be_refused)
{
	struct world *w = connected_pair();
	struct braid_cm_view rej;

	cr_assert_eq(braid_cm_listener_reject(&w->reqs[0], FI_ECONNREFUSED, NULL, 0, &rej),
		     -FI_EINVAL);
	cr_assert_eq(braid_cm_listener_first(&w->l), &w->reqs[0], "still kept");
}

Test(braid_cm_input, rej_without_status_is_econnrefused)
{
	struct world *w = world_init();
	struct braid_cm_view rej = { .kind = BRAID_CM_REJ, .conn_id = CONN_ID };

	connect_a(w, NULL);
	wire_send(w, L, A, &rej);
	run_for(w, 1 * MS);
	cr_assert_eq(find_ev(&w->n[A], BRAID_CM_EV_REJECTED)->ev.err, FI_ECONNREFUSED);
	cr_assert_eq(find_ev(&w->n[A], BRAID_CM_EV_REJECTED)->ev.pdata_len, 0);
}

/* ---- time-outs ---- */

Test(braid_cm_timer, connect_times_out_at_the_deadline_not_before)
{
	struct world *w = world_init();
	int ticks = 0;

	w->drop[A][BRAID_CM_REQ] = -1;	/* nobody answers */
	connect_a(w, NULL);
	while (w->n[A].c.state == BRAID_CM_REQ_SENT) {
		uint64_t d = braid_cm_next_deadline(&w->n[A].c);

		cr_assert_eq(d, T0 + (uint64_t)(ticks + 1) * RETRY, "ticks every 200 ms");
		/* just before the tick: nothing */
		braid_cm_timer(&w->n[A].c, d - 1);
		pump(w, A, -1);
		cr_assert_eq(w->n[A].nev, 0);
		run_until(w, d);
		ticks++;
		if (d < T0 + BRAID_CM_TIMEOUT_NS)
			cr_assert_eq(w->n[A].nev, 0, "an event at %llu ms, before the deadline",
				     (unsigned long long)((d - T0) / MS));
	}
	cr_assert_eq(w->n[A].c.state, BRAID_CM_ERROR);
	cr_assert_eq(w->n[A].nev, 1);
	cr_assert_eq(find_ev(&w->n[A], BRAID_CM_EV_TIMEDOUT)->ev.err, FI_ETIMEDOUT);
	cr_assert_eq(find_ev(&w->n[A], BRAID_CM_EV_TIMEDOUT)->at, T0 + 5 * SEC);
	cr_assert_eq(ticks, 25);
	cr_assert_eq(w->sent[A][BRAID_CM_REQ], 25, "the first and one every 200 ms until 4.8 s");
	run_for(w, 10 * SEC);
	assert_quiet(w);
	cr_assert_eq(w->sent[A][BRAID_CM_REQ], 25);
}

Test(braid_cm_timer, connect_deadline_follows_the_configured_timeout)
{
	struct world *w = world_init();
	struct braid_cm_config cfg;

	braid_cm_config_default(&cfg);
	cr_assert_eq(cfg.retry_ns, RETRY);
	cr_assert_eq(cfg.timeout_ns, 5 * SEC);
	cr_assert_eq(cfg.dreq_tries, 5);
	cfg.timeout_ns = 600 * MS;	/* what prov/test_msg sets through FI_BRAID_PEER_TIMEOUT_MS */
	braid_cm_construct(&w->n[A].c, &cfg);
	w->drop[A][BRAID_CM_REQ] = -1;
	connect_a(w, NULL);
	run_for(w, 600 * MS - 1);
	cr_assert_eq(w->n[A].nev, 0);
	run_for(w, 1);
	cr_assert_eq(find_ev(&w->n[A], BRAID_CM_EV_TIMEDOUT)->at, T0 + 600 * MS);
}

Test(braid_cm_timer, accept_times_out_without_rtu_or_rc_traffic)
{
	struct world *w = world_init();
	uint64_t t_acc;

	connect_a(w, NULL);
	run_for(w, 1 * MS);
	w->drop[B][BRAID_CM_REP] = -1;
	t_acc = w->now;
	cr_assert_eq(accept_b(w, 0, NULL), 0);
	run_until(w, t_acc + 5 * SEC - 1);
	cr_assert_eq(count_ev(&w->n[B], BRAID_CM_EV_TIMEDOUT), 0);
	run_until(w, t_acc + 5 * SEC);
	cr_assert_eq(w->n[B].c.state, BRAID_CM_ERROR);
	cr_assert_eq(find_ev(&w->n[B], BRAID_CM_EV_TIMEDOUT)->at, t_acc + 5 * SEC);
	cr_assert_eq(w->sent[B][BRAID_CM_REP], 25);
	/* A, hearing nothing either, gives up at its own deadline */
	run_until(w, T0 + 5 * SEC);
	cr_assert_eq(find_ev(&w->n[A], BRAID_CM_EV_TIMEDOUT)->at, T0 + 5 * SEC);
	run_for(w, 10 * SEC);
	assert_quiet(w);
}

/* ---- disconnection ---- */

Test(braid_cm_shutdown, peer_gets_shutdown_and_drep)
{
	struct world *w = connected_pair();
	uint64_t t;

	t = w->now;
	shutdown_node(w, A);
	cr_assert_eq(w->n[A].flushes, 1, "QP flushed before DREQ");
	cr_assert_eq(w->n[A].c.state, BRAID_CM_DREQ_SENT);
	cr_assert_eq(braid_cm_post_check(&w->n[A].c), -FI_EOPBADSTATE);
	cr_assert_eq(braid_cm_shutdown(&w->n[A].c, w->now), -FI_ENOTCONN);
	run_for(w, 1 * MS);
	cr_assert_eq(w->n[B].c.state, BRAID_CM_CLOSED);
	cr_assert_eq(w->n[B].flushes, 1);
	cr_assert_eq(find_ev(&w->n[B], BRAID_CM_EV_SHUTDOWN)->at, t + DELAY);
	cr_assert_eq(w->n[A].c.state, BRAID_CM_CLOSED);
	/* the closing side hears the disconnect done (the DREP), as rdma_cm's and tcp's do */
	cr_assert_eq(count_ev(&w->n[A], BRAID_CM_EV_SHUTDOWN), 1);
	cr_assert_eq(find_ev(&w->n[A], BRAID_CM_EV_SHUTDOWN)->at, t + 2 * DELAY);
	cr_assert_eq(w->sent[A][BRAID_CM_DREQ], 1);
	cr_assert_eq(w->sent[B][BRAID_CM_DREP], 1);
	run_for(w, 10 * SEC);
	assert_quiet(w);
}

Test(braid_cm_shutdown, simultaneous_close_settles_both_sides)
{
	struct world *w = connected_pair();

	shutdown_node(w, A);
	shutdown_node(w, B);
	run_for(w, 1 * MS);
	/* both asked to close and both heard the other close: FI_SHUTDOWN each (fi_cm(3)) */
	cr_assert_eq(w->n[A].c.state, BRAID_CM_CLOSED);
	cr_assert_eq(w->n[B].c.state, BRAID_CM_CLOSED);
	cr_assert_eq(count_ev(&w->n[A], BRAID_CM_EV_SHUTDOWN), 1);
	cr_assert_eq(count_ev(&w->n[B], BRAID_CM_EV_SHUTDOWN), 1);
	cr_assert_eq(w->n[A].flushes, 1, "flushed once");
	cr_assert_eq(w->n[B].flushes, 1);
	cr_assert_eq(w->sent[A][BRAID_CM_DREQ], 1);
	cr_assert_eq(w->sent[B][BRAID_CM_DREQ], 1);
	cr_assert_eq(w->sent[A][BRAID_CM_DREP], 1);
	cr_assert_eq(w->sent[B][BRAID_CM_DREP], 1);
	run_for(w, 10 * SEC);
	assert_quiet(w);
	cr_assert_eq(w->sent[A][BRAID_CM_DREQ] + w->sent[B][BRAID_CM_DREQ], 2, "no DREQ resent");
	cr_assert_eq(count_ev(&w->n[A], BRAID_CM_EV_SHUTDOWN), 1);
	cr_assert_eq(count_ev(&w->n[B], BRAID_CM_EV_SHUTDOWN), 1);
}

Test(braid_cm_shutdown, lost_dreq_is_resent)
{
	struct world *w = connected_pair();
	uint64_t t = w->now;

	w->drop[A][BRAID_CM_DREQ] = 1;
	shutdown_node(w, A);
	run_for(w, RETRY - 1);
	cr_assert_eq(w->n[B].c.state, BRAID_CM_ESTABLISHED);
	run_for(w, 1 * MS);
	cr_assert_eq(w->sent[A][BRAID_CM_DREQ], 2);
	cr_assert_eq(w->sent_at[A][BRAID_CM_DREQ], t + RETRY);
	cr_assert_eq(find_ev(&w->n[B], BRAID_CM_EV_SHUTDOWN)->at, t + RETRY + DELAY);
	cr_assert_eq(w->n[A].c.state, BRAID_CM_CLOSED);
	run_for(w, 10 * SEC);
	assert_quiet(w);
}

Test(braid_cm_shutdown, lost_drep_gets_another_drep_and_one_shutdown)
{
	struct world *w = connected_pair();

	w->drop[B][BRAID_CM_DREP] = 1;
	shutdown_node(w, A);
	run_for(w, RETRY + 1 * MS);
	/* B closed on the first DREQ and answers the repeat too (§6.5) */
	cr_assert_eq(w->sent[A][BRAID_CM_DREQ], 2);
	cr_assert_eq(w->sent[B][BRAID_CM_DREP], 2);
	cr_assert_eq(count_ev(&w->n[B], BRAID_CM_EV_SHUTDOWN), 1);
	cr_assert_eq(w->n[B].flushes, 1);
	cr_assert_eq(w->n[A].c.state, BRAID_CM_CLOSED);
	cr_assert_eq(count_ev(&w->n[A], BRAID_CM_EV_SHUTDOWN), 1);
	run_for(w, 10 * SEC);
	assert_quiet(w);
	cr_assert_eq(count_ev(&w->n[A], BRAID_CM_EV_SHUTDOWN), 1, "one, though two DREPs came");
}

Test(braid_cm_shutdown, silent_peer_gets_five_more_dreqs_then_nothing)
{
	struct world *w = connected_pair();
	uint64_t t = w->now;

	w->drop[A][BRAID_CM_DREQ] = -1;
	shutdown_node(w, A);
	run_for(w, 5 * RETRY - 1);
	cr_assert_eq(w->n[A].c.state, BRAID_CM_DREQ_SENT);
	cr_assert_eq(braid_cm_next_deadline(&w->n[A].c), t + 5 * RETRY);
	run_for(w, 1);
	cr_assert_eq(w->sent[A][BRAID_CM_DREQ], 6, "the first and 5 resends");
	cr_assert_eq(w->sent_at[A][BRAID_CM_DREQ], t + 5 * RETRY);
	cr_assert_eq(w->n[A].c.state, BRAID_CM_CLOSED);
	cr_assert_eq(count_ev(&w->n[A], BRAID_CM_EV_SHUTDOWN), 1, "closed all the same, once");
	run_for(w, 10 * SEC);
	assert_quiet(w);
	cr_assert_eq(w->sent[A][BRAID_CM_DREQ], 6);
	cr_assert_eq(count_ev(&w->n[A], BRAID_CM_EV_SHUTDOWN), 1);
}

Test(braid_cm_shutdown, accepting_side_may_close_before_the_rtu)
{
	struct world *w = rtu_lost_pair();

	shutdown_node(w, B);
	run_for(w, 1 * MS);
	cr_assert_eq(w->n[A].c.state, BRAID_CM_CLOSED);
	cr_assert_eq(count_ev(&w->n[A], BRAID_CM_EV_SHUTDOWN), 1);
	cr_assert_eq(w->n[B].c.state, BRAID_CM_CLOSED);
	run_for(w, 10 * SEC);
	assert_quiet(w);
	cr_assert_eq(w->sent[B][BRAID_CM_REP], 1, "no REP after the shutdown");
}

Test(braid_cm_qp_error, failed_qp_reports_shutdown_once)
{
	struct world *w = connected_pair();

	braid_cm_qp_error(&w->n[A].c);
	pump(w, A, -1);
	braid_cm_qp_error(&w->n[A].c);
	pump(w, A, -1);
	cr_assert_eq(w->n[A].c.state, BRAID_CM_ERROR);
	cr_assert_eq(count_ev(&w->n[A], BRAID_CM_EV_SHUTDOWN), 1);
	cr_assert_eq(w->n[A].flushes, 0, "the QP is in error already");
	cr_assert_eq(braid_cm_post_check(&w->n[A].c), -FI_EOPBADSTATE);
	cr_assert_eq(w->nq, 0, "nothing sent");
}

/* ---- QP creation failing ---- */

Test(braid_cm_qp_created, active_failure_rejects_and_reports)
{
	struct world *w = world_init();

	w->n[A].qp_ret = -FI_ENOMEM;
	connect_a(w, NULL);
	run_for(w, 1 * MS);
	cr_assert_eq(accept_b(w, 0, NULL), 0);
	run_for(w, 1 * MS);
	cr_assert_eq(w->n[A].c.state, BRAID_CM_ERROR);
	cr_assert_eq(find_ev(&w->n[A], BRAID_CM_EV_ERROR)->ev.err, FI_ENOMEM);
	cr_assert_eq(count_ev(&w->n[A], BRAID_CM_EV_CONNECTED), 0);
	cr_assert_eq(w->sent[A][BRAID_CM_REJ], 1);
	cr_assert_eq(w->sent[A][BRAID_CM_RTU], 0);
	/* A's REJ reaches B in REP_SENT, which takes no REJ (as before the engine): B
	 * keeps resending REP until its deadline */
	cr_assert_eq(w->n[B].c.state, BRAID_CM_REP_SENT);
}

Test(braid_cm_qp_created, passive_failure_leaves_the_request_open)
{
	struct world *w = world_init();
	struct braid_cm_view rej;

	connect_a(w, NULL);
	run_for(w, 1 * MS);
	w->n[B].qp_ret = -FI_ENOMEM;
	cr_assert_eq(accept_b(w, 0, NULL), 0);
	cr_assert_eq(w->n[B].qp_creates, 1);
	cr_assert_eq(w->n[B].c.state, BRAID_CM_IDLE, "fi_accept fails, the endpoint is as before");
	cr_assert_not(w->reqs[0].accepted);
	cr_assert_eq(w->sent[B][BRAID_CM_REP], 0);
	cr_assert_eq(braid_cm_next_deadline(&w->n[B].c), BRAID_CM_NONE);
	/* a second try works */
	w->n[B].qp_ret = 0;
	accept_and_settle(w, NULL);
	cr_assert_eq(braid_cm_listener_reject(&w->reqs[0], FI_ECONNREFUSED, NULL, 0, &rej),
		     -FI_EINVAL);
}

/* ---- untrusted input ---- */

Test(braid_cm_input, foreign_conn_id_and_garbage_are_ignored)
{
	static const uint8_t kinds[] = { BRAID_CM_REP, BRAID_CM_RTU, BRAID_CM_REJ,
					 BRAID_CM_DREQ, BRAID_CM_DREP };
	struct world *w = world_init();
	uint8_t buf[MSG_MAX];
	size_t k;
	int i;

	connect_a(w, NULL);
	run_for(w, 1 * MS);
	/* while A connects and once both are up: every kind with another conn_id */
	for (i = 0; i < 2; i++) {
		int to = i ? B : A, from = i ? A : B;
		enum braid_cm_state before = w->n[to].c.state;
		int nev = w->n[to].nev;

		for (k = 0; k < sizeof(kinds); k++) {
			struct braid_cm_view v = { .kind = kinds[k], .conn_id = CONN_ID ^ 1,
						   .qpn = 7, .psn = 7, .mtu = 256,
						   .rc_port = 9, .status = FI_ECONNREFUSED };

			braid_cm_write((struct braid_cm_hdr *)buf, node_port[from], &v);
			wire_put(w, from, to, buf, sizeof(struct braid_cm_hdr));
		}
		run_for(w, 1 * MS);
		cr_assert_eq(w->n[to].input_drops[BRAID_DROP_NO_STATE], (int)sizeof(kinds));
		cr_assert_eq(w->n[to].c.state, before);
		cr_assert_eq(w->n[to].nev, nev, "an event from a foreign message");
		cr_assert_eq(w->sent[to][BRAID_CM_DREP], 0, "a DREP to a foreign DREQ");
		if (!i) {
			cr_assert_eq(accept_b(w, 0, NULL), 0);
			run_for(w, 1 * MS);
		}
	}
	cr_assert_eq(w->n[A].c.state, BRAID_CM_ESTABLISHED);
	cr_assert_eq(w->n[B].c.state, BRAID_CM_ESTABLISHED);
	cr_assert_eq(w->n[A].c.peer.qpn, qp_b.qpn, "a foreign REP changed nothing");

	/* a REQ is for listeners, even with the right conn_id */
	{
		struct braid_cm_view v = { .kind = BRAID_CM_REQ, .conn_id = CONN_ID, .mtu = 4096,
					   .rc_port = 1 };

		cr_assert_eq(braid_cm_input(&w->n[B].c, &v, w->now), -(BRAID_DROP_TYPE + 1));
	}
	/* bytes that are no CM message never reach it; nor does a truncated one */
	memset(buf, 0xa5, sizeof(buf));
	wire_put(w, B, A, buf, 60);
	braid_cm_write((struct braid_cm_hdr *)buf, node_port[B],
		       &(struct braid_cm_view){ .kind = BRAID_CM_DREQ, .conn_id = CONN_ID,
						.pdata_len = 10 });
	wire_put(w, B, A, buf, sizeof(struct braid_cm_hdr) + 3);
	run_for(w, 1 * MS);
	cr_assert_eq(w->decode_drops, 2);
	cr_assert_eq(w->n[A].c.state, BRAID_CM_ESTABLISHED);
	run_for(w, 10 * SEC);
	assert_quiet(w);
}

Test(braid_cm_input, unexpected_kinds_for_the_state_are_ignored)
{
	struct world *w = world_init();
	struct braid_cm_view v = { .conn_id = CONN_ID };

	connect_a(w, NULL);
	/* an RTU, DREP or DREQ to a connecting endpoint: no state change, only the DREP answer */
	v.kind = BRAID_CM_RTU;
	cr_assert_eq(braid_cm_input(&w->n[A].c, &v, w->now), 0);
	v.kind = BRAID_CM_DREP;
	cr_assert_eq(braid_cm_input(&w->n[A].c, &v, w->now), 0);
	v.kind = BRAID_CM_DREQ;
	cr_assert_eq(braid_cm_input(&w->n[A].c, &v, w->now), 0);
	cr_assert_eq(w->n[A].c.state, BRAID_CM_REQ_SENT);
	pump(w, A, -1);
	cr_assert_eq(w->n[A].nev, 0);
	cr_assert_eq(w->sent[A][BRAID_CM_DREP], 1, "every DREQ gets a DREP (§6.5)");
	/* an IDLE endpoint takes nothing and sends nothing but DREPs */
	v.kind = BRAID_CM_REP;
	v.conn_id = 0;
	v.mtu = 4096;
	v.rc_port = 1;
	cr_assert_eq(braid_cm_input(&w->n[B].c, &v, w->now), 0);
	cr_assert_eq(w->n[B].c.state, BRAID_CM_IDLE);
	pump(w, B, -1);
	cr_assert_eq(w->n[B].nev, 0);
	cr_assert_eq(w->sent[B][BRAID_CM_RTU], 0);
}

/* ---- API edges ---- */

Test(braid_cm_connect, validates_state_and_private_data)
{
	struct world *w = world_init();
	uint8_t big[BRAID_CM_DATA_MAX + 1] = { 0 };

	cr_assert_eq(braid_cm_connect(&w->n[A].c, CONN_ID, &qp_a, big, sizeof(big), w->now),
		     -FI_EINVAL);
	cr_assert_eq(braid_cm_connect(&w->n[A].c, CONN_ID, &qp_a, NULL, 4, w->now), -FI_EINVAL);
	cr_assert_eq(w->n[A].c.state, BRAID_CM_IDLE);
	cr_assert_eq(braid_cm_shutdown(&w->n[A].c, w->now), -FI_ENOTCONN);
	cr_assert_eq(braid_cm_connect(&w->n[A].c, CONN_ID, &qp_a, big, BRAID_CM_DATA_MAX, w->now),
		     0);
	cr_assert_eq(braid_cm_connect(&w->n[A].c, CONN_ID, &qp_a, NULL, 0, w->now), -FI_EALREADY);
	pump(w, A, -1);
	cr_assert_eq(w->sent[A][BRAID_CM_REQ], 1);
}

Test(braid_cm_state_str, every_state_has_a_name)
{
	int s;

	for (s = 0; s < BRAID_CM_NSTATES; s++) {
		cr_assert_not_null(braid_cm_state_str(s));
		cr_assert_str_neq(braid_cm_state_str(s), "?");
	}
	cr_assert_str_eq(braid_cm_state_str(BRAID_CM_ESTABLISHED), "ESTABLISHED");
	cr_assert_str_eq(braid_cm_state_str(BRAID_CM_NSTATES), "?");
}

/* Each side announces its flags in REQ and REP (§6.2); each learns the other's. */
static void flags_exchange(uint8_t fa, uint8_t fb)
{
	struct world *w = world_init();
	struct braid_cm_qp a = qp_a, b = qp_b;

	a.flags = fa;
	b.flags = fb;
	cr_assert_eq(braid_cm_connect(&w->n[A].c, CONN_ID, &a, NULL, 0, w->now), 0);
	pump(w, A, -1);
	run_for(w, 1 * MS);
	cr_assert_eq(w->nreqs, 1);
	cr_assert_eq(w->reqs[0].qp.flags, fa, "the listener keeps the REQ's flags");
	cr_assert_eq(braid_cm_accept(&w->n[B].c, &w->reqs[0], &b, NULL, 0, w->now), 0);
	pump(w, B, -1);
	run_for(w, 1 * MS);
	cr_assert_eq(w->n[A].c.state, BRAID_CM_ESTABLISHED);
	cr_assert_eq(w->n[B].c.peer.flags, fa);
	cr_assert_eq(w->n[A].c.peer.flags, fb);
	cr_assert_eq(w->n[A].c.local.flags & w->n[A].c.peer.flags,
		     w->n[B].c.local.flags & w->n[B].c.peer.flags, "both sides agree");
}

Test(braid_cm_connect, flags_are_exchanged_and_agreed)
{
	flags_exchange(BRAID_CM_F_TAGGED, BRAID_CM_F_TAGGED);
	flags_exchange(BRAID_CM_F_TAGGED, 0);
	flags_exchange(0, BRAID_CM_F_TAGGED);
}

Test(braid_cm_decode, flags_travel_and_unknown_bits_are_kept)
{
	uint8_t buf[MSG_MAX];
	struct braid_cm_view v = { .kind = BRAID_CM_REQ, .conn_id = 5, .qpn = 7, .psn = 9,
				   .mtu = 1024, .rc_port = 4791, .flags = 0x81 }, d;

	braid_cm_write((struct braid_cm_hdr *)buf, 1234, &v);
	cr_assert_eq(buf[9], 0x81, "flags at offset 9");
	cr_assert_eq(braid_cm_decode(buf, sizeof(struct braid_cm_hdr), &d), 0);
	cr_assert_eq(d.flags, 0x81);
}
