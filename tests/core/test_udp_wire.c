/* SPDX-License-Identifier: BSD-2-Clause */
/* test_udp_wire.c: the UDP wire's receive (providers/udp/braid_udp.c): the home socket first, the path sockets (ACKs, CTS) looked at every receive while the home socket is quiet, every other one while it has data, first after a burst the home socket filled, and every eighth while they are quiet themselves (the replies ride in the answers); GRO runs; lent payloads. Each test waits for its datagrams with a fence datagram, not a sleep. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <sched.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "braid/braid_wire.h"

extern const struct braid_wire_ops braid_udp_wire_ops;

static const struct braid_wire_ops *ops = &braid_udp_wire_ops;

/* A plain UDP socket on loopback, its port in *@port. */
static int plain_socket(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* Every test runs on one CPU, so that delivered() can tell when its datagrams have arrived. */
static void pin_cpu(void)
{
	cpu_set_t set;
	int cpu = sched_getcpu();

	cr_assert_geq(cpu, 0);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	cr_assert_eq(sched_setaffinity(0, sizeof(set), &set), 0);
}

/*
 * Wait until every datagram this thread has sent has reached its socket.
 * Loopback hands each datagram to the sending CPU's backlog queue, which
 * delivers in order: once a fence datagram sent after them has arrived (a
 * blocking receive, 5 s at most), they have arrived too.
 */
static void delivered(void)
{
	static int fence = -1;
	static uint16_t port;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tmo = { .tv_sec = 5 };
	char b;

	if (fence < 0) {
		fence = plain_socket(&port);
		cr_assert_eq(setsockopt(fence, SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo)), 0);
	}
	a.sin_port = htons(port);
	cr_assert_eq(sendto(fence, "f", 1, 0, (struct sockaddr *)&a, sizeof(a)), 1);
	cr_assert_eq(recv(fence, &b, 1, 0), 1, "the fence datagram did not come back in 5 s");
}

static void send_to(int fd, uint16_t port, char tag)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	cr_assert_eq(sendto(fd, &tag, 1, 0, (struct sockaddr *)&a, sizeof(a)), 1);
}

/* One receive of up to 8 datagrams; their first bytes into @tags. */
static int rx(struct braid_wire *w, char *tags)
{
	char buf[8][64];
	struct iovec iov[8];
	struct braid_pkt pkts[8];
	int n, i;

	memset(pkts, 0, sizeof(pkts));
	for (i = 0; i < 8; i++) {
		iov[i] = (struct iovec){ buf[i], sizeof(buf[i]) };
		pkts[i].iov = &iov[i];
		pkts[i].iovcnt = 1;
	}
	delivered();
	n = ops->rx_burst(w, pkts, 8);
	for (i = 0; i < n; i++)
		tags[i] = buf[i][0];
	tags[n] = 0;
	return n;
}

/*
 * A wire of two paths on loopback and a plain socket to talk to it (*@peer):
 * the wire's home port in *@home, and in *@route the port its path 1 sends
 * from (where the replies to what it sends on that path come back).
 */
static struct braid_wire *wire_with_peer(int *peer, uint16_t *home, uint16_t *route)
{
	struct braid_wire_params p = { .paths = 2 };
	struct braid_wire *w;
	struct braid_pkt out;
	struct iovec iov;
	char byte = 'x';
	uint16_t peer_port;
	struct sockaddr_in from;
	socklen_t len = sizeof(from);

	p.addr.sin_family = AF_INET;
	p.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(ops->open(&p, &w), 0);
	*home = ntohs(w->name.sin_port);
	*peer = plain_socket(&peer_port);
	memset(&out, 0, sizeof(out));
	iov = (struct iovec){ &byte, 1 };
	out.iov = &iov;
	out.iovcnt = 1;
	out.path = 1;
	out.addr = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(peer_port),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	cr_assert_eq(ops->tx_burst(w, &out, 1), 1);
	cr_assert_eq(recvfrom(*peer, &byte, 1, 0, (struct sockaddr *)&from, &len), 1);
	*route = ntohs(from.sin_port);
	cr_assert_neq(*route, *home);
	return w;
}

Test(udp_wire, path_sockets_wait_at_most_one_receive_while_the_home_socket_is_busy, .init = pin_cpu)
{
	struct braid_wire *w;
	char tags[9];
	uint16_t home, route;
	int peer, round;

	w = wire_with_peer(&peer, &home, &route);

	/* the home socket quiet: a path datagram is read by the next receive, every time */
	for (round = 0; round < 3; round++) {
		send_to(peer, route, 'p');
		cr_assert_eq(rx(w, tags), 1, "round %d", round);
		cr_assert_str_eq(tags, "p");
	}
	/* the home socket never empty at a receive: the home datagram at once, the path one
	 * by the next receive at the latest */
	for (round = 0; round < 6; round++) {
		send_to(peer, route, 'p');
		send_to(peer, home, 'h');
		cr_assert_geq(rx(w, tags), 1);
		cr_assert(strchr(tags, 'h'), "round %d: the home datagram first (%s)", round, tags);
		if (strchr(tags, 'p'))
			continue;
		send_to(peer, home, 'h');
		cr_assert_eq(rx(w, tags), 2, "round %d: %s", round, tags);
		cr_assert(strchr(tags, 'p') && strchr(tags, 'h'),
			  "round %d: the path datagram one receive on (%s)", round, tags);
	}
	/* a stream into the home socket deeper than a burst: the path datagram is in
	 * the second receive, not after the stream (replies to our own sends must not
	 * wait for the peer to stop sending) */
	{
		int i, got, seen = 0;

		send_to(peer, route, 'p');
		for (i = 0; i < 20; i++)
			send_to(peer, home, 'h');
		for (round = 0; round < 2 && !seen; round++) {
			got = rx(w, tags);
			cr_assert_eq(got, 8, "a full burst each time (%d)", got);
			seen = strchr(tags, 'p') != NULL;
		}
		cr_assert(seen, "the path datagram within two receives");
		while (rx(w, tags) > 0)
			;
	}
	/* and the skipped look is not forgotten: nothing is left behind */
	cr_assert_eq(rx(w, tags), 0);
	close(peer);
	ops->close(w);
}

/*
 * The replies come in the answers to the home socket (a ping-pong, §4.8):
 * after eight datagrams there and none on a path socket, a receive that
 * finds the home socket empty does not look at the path sockets (one
 * system call, not two), but every eighth receive does; a datagram found
 * there ends the quiet, and the next one is read by the next receive.
 */
Test(udp_wire, quiet_path_sockets_are_looked_at_every_eighth_receive, .init = pin_cpu)
{
	struct braid_wire *w;
	char tags[9];
	uint16_t home, route;
	int peer, i, got;

	w = wire_with_peer(&peer, &home, &route);

	/* eight datagrams to the home socket, one receive each: the path sockets go quiet */
	for (i = 0; i < 8; i++) {
		send_to(peer, home, 'h');
		cr_assert_eq(rx(w, tags), 1);
		cr_assert_str_eq(tags, "h");
	}
	/* a reply to a path socket: read within eight receives, not by the first */
	send_to(peer, route, 'p');
	cr_assert_eq(rx(w, tags), 0, "quiet: the first receive reads the home socket alone");
	for (i = 1, got = 0; i < 8 && !got; i++)
		got = rx(w, tags);
	cr_assert_eq(got, 1, "the path datagram within eight receives");
	cr_assert_str_eq(tags, "p");
	/* the quiet is over: the next reply is read by the next receive */
	send_to(peer, route, 'q');
	cr_assert_eq(rx(w, tags), 1);
	cr_assert_str_eq(tags, "q");
	close(peer);
	ops->close(w);
}

/*
 * UDP GRO: a wire opened with .gro takes a run of datagrams coalesced by the
 * host in one receive, told by pkt.gso_size (on loopback a run sent with UDP
 * GSO arrives whole at a GRO socket, as a NIC's GRO would hand it over); a
 * wire without it gets the datagrams one by one, as before.
 */
Test(udp_wire, a_gro_wire_takes_a_coalesced_run_in_one_receive_and_a_plain_one_datagram_by_datagram, .init = pin_cpu)
{
	static uint8_t run[3000], got[8][65536];
	struct braid_wire_params p = { .paths = 2 };
	struct braid_wire *tx, *gro, *plain;
	struct braid_pkt out, in[8];
	struct iovec iov, iovs[8];
	size_t i;
	int k, n;

	p.addr.sin_family = AF_INET;
	p.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(ops->open(&p, &tx), 0);
	cr_assert_eq(ops->open(&p, &plain), 0);
	cr_assert(!plain->gro && plain->rx_max == plain->mtu, "no GRO unless asked");
	p.gro = true;
	cr_assert_eq(ops->open(&p, &gro), 0);
	if (!gro->gro) {
		ops->close(tx);
		ops->close(plain);
		ops->close(gro);
		cr_skip_test("this kernel has no UDP_GRO");
	}
	cr_assert_geq(gro->rx_max, 65535, "a run's 64 KiB fit one receive buffer");
	for (i = 0; i < sizeof(run); i++)
		run[i] = (uint8_t)(i / 1000 + 1);
	for (k = 0; k < 2; k++) {
		struct braid_wire *to = k ? plain : gro;

		memset(&out, 0, sizeof(out));
		iov = (struct iovec){ run, sizeof(run) };
		out.iov = &iov;
		out.iovcnt = 1;
		out.gso_size = 1000;	/* three datagrams of 1000 bytes */
		out.addr = to->name;
		cr_assert_eq(ops->tx_burst(tx, &out, 1), 1);
		cr_assert_eq(out.status, 0);
		delivered();
		memset(in, 0, sizeof(in));
		for (i = 0; i < 8; i++) {
			iovs[i] = (struct iovec){ got[i], braid_wire_rx_max(to) };
			in[i].iov = &iovs[i];
			in[i].iovcnt = 1;
			in[i].gso_size = 0xbeef;	/* the wire sets it on every receive */
		}
		n = ops->rx_burst(to, in, 8);
		if (!k) {
			cr_assert_eq(n, 1, "the GRO wire: one receive for the run (%d)", n);
			cr_assert_eq(in[0].len, sizeof(run));
			cr_assert_eq(in[0].gso_size, 1000, "the run's datagram length (%u)", in[0].gso_size);
			cr_assert_eq(memcmp(got[0], run, sizeof(run)), 0);
		} else {
			cr_assert_eq(n, 3, "the plain wire: the datagrams one by one (%d)", n);
			for (i = 0; i < 3; i++) {
				cr_assert_eq(in[i].len, 1000);
				cr_assert_eq(in[i].gso_size, 0, "no run");
				cr_assert_eq(memcmp(got[i], run + 1000 * i, 1000), 0);
			}
		}
	}
	/* a datagram alone at a GRO wire is no run */
	memset(&out, 0, sizeof(out));
	iov = (struct iovec){ run, 500 };
	out.iov = &iov;
	out.iovcnt = 1;
	out.addr = gro->name;
	cr_assert_eq(ops->tx_burst(tx, &out, 1), 1);
	delivered();
	in[0].gso_size = 0xbeef;
	cr_assert_eq(ops->rx_burst(gro, in, 1), 1);
	cr_assert_eq(in[0].len, 500);
	cr_assert_eq(in[0].gso_size, 0);
	ops->close(tx);
	ops->close(plain);
	ops->close(gro);
}

/*
 * Payloads sent by reference (BRAID_PKT_LEND, the wire's lend_min): the
 * datagrams arrive whole and in order, with the header copied first, from a
 * payload that starts anywhere in a page and spans more pages than a
 * datagram may hold (the first ones are then copied with the header); a
 * packet not marked, or shorter than lend_min, is copied; the peek gives
 * the datagram's arrival time.
 */
/* (page-aligned: the offsets below are where in a page a payload starts) */
static uint8_t lend_src[3 * 65536] __attribute__((aligned(4096))), lend_dst[65536];

Test(udp_wire, lent_payloads_arrive_whole_and_the_peek_tells_when, .init = pin_cpu)
{
	struct braid_wire_params p = { .paths = 2, .lend_min = 16384, .sockbuf = 4 << 20 };
	const size_t offs[] = { 0, 1, 4095, 4097, 12345 }, lens[] = { 61440, 65000, 60000, 24000, 40000 };
	struct braid_wire *tx, *rx;
	uint8_t hdr[24], peek[24];
	struct sockaddr_in from;
	uint64_t lent, rx_ns;
	int i;

	p.addr.sin_family = AF_INET;
	p.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(ops->open(&p, &tx), 0);
	p.lend_min = 0;
	cr_assert_eq(ops->open(&p, &rx), 0);
	cr_assert_eq(rx->lend_min, 0, "opened without lending");
	if (!tx->lend_min)
		cr_skip_test("this kernel lends nothing (no max_skb_frags to read)");
	cr_assert_eq(tx->lend_min, 16384);
	for (size_t k = 0; k < sizeof(lend_src); k++)
		lend_src[k] = (uint8_t)(k * 7 + (k >> 9));
	for (i = 0; i < 7; i++) {
		size_t off = offs[i % 5], len = i < 5 ? lens[i] : 8000;
		struct iovec iov[2] = { { hdr, sizeof(hdr) }, { lend_src + off, len } }, in[2];
		struct braid_pkt out = { .iov = iov, .iovcnt = 2, .path = 1,
					 .flags = i == 6 ? 0 : BRAID_PKT_LEND };
		struct braid_pkt got = { .iov = in, .iovcnt = 2 };
		size_t whole = sizeof(hdr) + len;

		memset(hdr, 'a' + i, sizeof(hdr));
		out.addr = rx->name;
		lent = tx->tx_lent;
		cr_assert_eq(ops->tx_burst(tx, &out, 1), 1, "datagram %d", i);
		cr_assert_eq(out.status, 0);
		if (i < 5)
			cr_assert_eq(tx->tx_lent, lent + 1, "datagram %d lent", i);
		else
			cr_assert_eq(tx->tx_lent, lent, "datagram %d copied (short or not marked)", i);
		delivered();
		cr_assert_eq(ops->rx_peek(rx, peek, sizeof(peek), &from, &rx_ns), whole);
		cr_assert_eq(memcmp(peek, hdr, sizeof(hdr)), 0);
		cr_assert_gt(rx_ns, 0, "the peek tells when it came");
		memset(lend_dst, 0, sizeof(lend_dst));
		in[0] = (struct iovec){ peek, sizeof(peek) };
		in[1] = (struct iovec){ lend_dst, sizeof(lend_dst) };
		cr_assert_eq(ops->rx_home(rx, &got, 1), 1);
		cr_assert_eq(got.len, whole);
		cr_assert_eq(memcmp(peek, hdr, sizeof(hdr)), 0, "datagram %d: its header", i);
		cr_assert_eq(memcmp(lend_dst, lend_src + off, len), 0, "datagram %d: its payload", i);
	}
	ops->close(tx);
	ops->close(rx);
}
