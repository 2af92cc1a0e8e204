/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * test_udp_local.c: the UDP wire's local peers (providers/udp/braid_udp_shm.c):
 * datagrams between two wire endpoints of this host go through the
 * receiver's ring with the addresses the kernel would give, replies to a
 * path port find the sender's ring, runs are cut, a peek is taken exactly,
 * a full ring holds the sender back, a closed peer is sent to by UDP, a
 * sleeping receiver is woken, and ring bytes that make no sense (another
 * process's: untrusted) are dropped, never followed.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "braid/braid_wire.h"

extern const struct braid_wire_ops braid_udp_wire_ops;

static const struct braid_wire_ops *ops = &braid_udp_wire_ops;

/* the segment's layout (braid_udp_shm.c): a 4 KiB header, then per ring its
 * tail's and its head's cache lines and its bytes */
#define SEG_HDR		4096
#define RING_CTL	128

static struct braid_wire *local_wire_lending(int paths, size_t ring, size_t lend_min)
{
	struct braid_wire_params p = { .paths = paths, .local = true, .local_rings = 4,
				       .local_ring_bytes = ring, .lend_min = lend_min };
	struct braid_wire *w;

	p.addr.sin_family = AF_INET;
	p.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(ops->open(&p, &w), 0);
	cr_assert(w->local.on, "the wire took local peers (needs /dev/shm and /proc/self/ns/net)");
	return w;
}

static struct braid_wire *local_wire(int paths, size_t ring)
{
	return local_wire_lending(paths, ring, 0);
}

static long time_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static uint16_t home(const struct braid_wire *w)
{
	return ntohs(w->name.sin_port);
}

/* send @len bytes of @buf to @port on loopback by path @path (a run of @gso: 0 none); tx_burst's count */
static int tx(struct braid_wire *w, uint16_t port, uint32_t path, const void *buf, size_t len,
	      uint16_t gso)
{
	struct iovec iov = { (void *)buf, len };
	struct braid_pkt p;

	memset(&p, 0, sizeof(p));
	p.iov = &iov;
	p.iovcnt = 1;
	p.path = path;
	p.gso_size = gso;
	p.addr = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(port),
				       .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	return ops->tx_burst(w, &p, 1);
}

static uint8_t rbuf[8][65536];

/* one receive of up to 8 datagrams */
static int rx(struct braid_wire *w, struct braid_pkt *pkts)
{
	static struct iovec iov[8];
	int i;

	memset(pkts, 0, 8 * sizeof(*pkts));
	for (i = 0; i < 8; i++) {
		iov[i] = (struct iovec){ rbuf[i], sizeof(rbuf[i]) };
		pkts[i].iov = &iov[i];
		pkts[i].iovcnt = 1;
	}
	return ops->rx_burst(w, pkts, 8);
}

/* @msg from a to b's home port comes through b's ring as it was sent */
static void goes_through(struct braid_wire *a, struct braid_wire *b, const char *msg)
{
	struct braid_pkt pkts[8];
	size_t len = strlen(msg);

	cr_assert_eq(tx(a, home(b), 0, msg, len, 0), 1);
	cr_assert_eq(rx(b, pkts), 1);
	cr_assert_eq(pkts[0].len, len);
	cr_assert_eq(pkts[0].path, 0);
	cr_assert_eq(memcmp(rbuf[0], msg, len), 0);
}

Test(udp_local, a_datagram_goes_through_the_ring_with_the_kernels_addresses)
{
	struct braid_wire *a = local_wire(4, 0), *b = local_wire(4, 0);
	struct braid_pkt pkts[8];
	uint16_t route;

	cr_assert_eq(tx(a, home(b), 3, "hello", 5, 0), 1);
	cr_assert_eq(a->local.tx, 1);
	cr_assert_eq(a->local.peers, 1);
	cr_assert_eq(rx(b, pkts), 1);
	cr_assert_eq(b->local.rx, 1);
	cr_assert_eq(pkts[0].len, 5);
	cr_assert_eq(memcmp(rbuf[0], "hello", 5), 0);
	cr_assert_eq(pkts[0].path, 0, "to the home port");
	cr_assert_eq(pkts[0].addr.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	route = ntohs(pkts[0].addr.sin_port);
	cr_assert_neq(route, home(a), "from the path's own port");
	/* the reply to that route finds a's ring, and a sees it on that path */
	cr_assert_eq(tx(b, route, 0, "back", 4, 0), 1);
	cr_assert_eq(b->local.tx, 1);
	cr_assert_eq(rx(a, pkts), 1);
	cr_assert_eq(pkts[0].path, 3);
	cr_assert_eq(memcmp(rbuf[0], "back", 4), 0);
	cr_assert_eq(ntohs(pkts[0].addr.sin_port), home(b));
	ops->close(a);
	ops->close(b);
}

Test(udp_local, a_run_is_cut_into_its_datagrams)
{
	struct braid_wire *a = local_wire(1, 0), *b = local_wire(1, 0);
	struct braid_pkt pkts[8];
	uint8_t run[250];

	for (int i = 0; i < 250; i++)
		run[i] = (uint8_t)i;
	cr_assert_eq(tx(a, home(b), 0, run, sizeof(run), 100), 1);
	cr_assert_eq(rx(b, pkts), 3);
	cr_assert_eq(pkts[0].len, 100);
	cr_assert_eq(pkts[1].len, 100);
	cr_assert_eq(pkts[2].len, 50);
	cr_assert_eq(memcmp(rbuf[1], run + 100, 100), 0);
	cr_assert_eq(memcmp(rbuf[2], run + 200, 50), 0);
	ops->close(a);
	ops->close(b);
}

Test(udp_local, a_peek_is_taken_exactly_and_a_changed_datagram_is_dropped)
{
	struct braid_wire *a = local_wire(1, 0), *b = local_wire(1, 0);
	struct sockaddr_in from;
	struct braid_pkt pkt;
	uint8_t head[4], body[16];
	struct iovec iov[2] = { { head, sizeof(head) }, { body, sizeof(body) } };
	uint64_t rx_ns;
	char name[128];
	struct stat ns;
	uint8_t *seg;
	int fd;

	cr_assert_eq(tx(a, home(b), 0, "0123456789abcdef", 16, 0), 1);
	cr_assert_eq(tx(a, home(b), 0, "ABCDEFGHIJKLMNOP", 16, 0), 1);
	cr_assert_eq(ops->rx_peek(b, head, sizeof(head), &from, &rx_ns), 16);
	cr_assert_eq(memcmp(head, "0123", 4), 0);
	memset(&pkt, 0, sizeof(pkt));
	pkt.iov = iov;
	pkt.iovcnt = 2;
	cr_assert_eq(ops->rx_home(b, &pkt, 1), 1);
	cr_assert_eq(pkt.len, 16);
	cr_assert_eq(memcmp(head, "0123", 4), 0);
	cr_assert_eq(memcmp(body, "456789abcdef", 12), 0);
	/* the second, peeked, then changed in the ring before it is taken */
	cr_assert_eq(ops->rx_peek(b, head, sizeof(head), &from, &rx_ns), 16);
	cr_assert_eq(memcmp(head, "ABCD", 4), 0);
	cr_assert_eq(stat("/proc/self/ns/net", &ns), 0);
	snprintf(name, sizeof(name), "/braid.%u.%llx.%08x.%u", (unsigned)getuid(),
		 (unsigned long long)ns.st_ino, INADDR_LOOPBACK, home(b));
	fd = shm_open(name, O_RDWR, 0);
	cr_assert_geq(fd, 0, "b's segment %s", name);
	seg = mmap(NULL, SEG_HDR + RING_CTL + 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	cr_assert_neq(seg, MAP_FAILED);
	/* ring 0's second record: after the first (16 + 16 bytes), its header's 16 */
	cr_assert_eq(seg[SEG_HDR + RING_CTL + 32 + 16], 'A');
	seg[SEG_HDR + RING_CTL + 32 + 16] = 'Z';
	memset(&pkt, 0, sizeof(pkt));
	pkt.iov = iov;
	pkt.iovcnt = 2;
	cr_assert_eq(ops->rx_home(b, &pkt, 1), 0, "what was peeked is not there: dropped");
	cr_assert_eq(b->local.bad, 1);
	munmap(seg, SEG_HDR + RING_CTL + 4096);
	ops->close(a);
	ops->close(b);
}

/* b's segment, mapped by another "process" (this test) to write nonsense into */
static uint8_t *segment_of(struct braid_wire *b, size_t *bytes)
{
	char name[128];
	struct stat ns, sb;
	uint8_t *seg;
	int fd;

	cr_assert_eq(stat("/proc/self/ns/net", &ns), 0);
	snprintf(name, sizeof(name), "/braid.%u.%llx.%08x.%u", (unsigned)getuid(),
		 (unsigned long long)ns.st_ino, INADDR_LOOPBACK, home(b));
	fd = shm_open(name, O_RDWR, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(fstat(fd, &sb), 0);
	*bytes = (size_t)sb.st_size;
	seg = mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	cr_assert_neq(seg, MAP_FAILED);
	return seg;
}

/* b's next receive finds nonsense in ring 0 of @seg: nothing, the ring
 * emptied (its head at its tail), the @bad'th counted */
static void emptied(struct braid_wire *b, const uint8_t *seg, uint64_t bad)
{
	struct braid_pkt pkts[8];

	cr_assert_eq(rx(b, pkts), 0);
	cr_assert_eq(b->local.bad, bad);
	cr_assert_eq(*(const uint64_t *)(seg + SEG_HDR + 64), *(const uint64_t *)(seg + SEG_HDR));
}

Test(udp_local, nonsense_in_a_ring_is_dropped_and_the_ring_goes_on)
{
	struct braid_wire *a = local_wire(1, 0), *b = local_wire(1, 0);
	struct braid_pkt pkts[8];
	size_t bytes;
	uint8_t *seg;
	uint64_t *tail, head;
	uint32_t len;

	cr_assert_eq(tx(a, home(b), 0, "one", 3, 0), 1);
	cr_assert_eq(rx(b, pkts), 1);
	seg = segment_of(b, &bytes);
	tail = (uint64_t *)(seg + SEG_HDR);
	head = *(uint64_t *)(seg + SEG_HDR + 64);
	cr_assert_eq(*tail, head, "read to empty");
	/* a record whose length runs past what was written */
	len = 60000;
	memcpy(seg + SEG_HDR + RING_CTL + (head % 4096), &len, sizeof(len));
	__atomic_store_n(tail, head + 32, __ATOMIC_RELEASE);
	emptied(b, seg, 1);
	/* a tail far past the head (more than the ring holds) */
	head = *(uint64_t *)(seg + SEG_HDR + 64);
	__atomic_store_n(tail, head + (1ULL << 40), __ATOMIC_RELEASE);
	emptied(b, seg, 2);
	/* a tail that cuts a record */
	head = *(uint64_t *)(seg + SEG_HDR + 64);
	__atomic_store_n(tail, head + 7, __ATOMIC_RELEASE);
	emptied(b, seg, 3);
	/* a length beyond any datagram */
	head = *(uint64_t *)(seg + SEG_HDR + 64);
	/* (the head is out of step with 16 now: the length written byte by byte) */
	len = 70000;
	memcpy(seg + SEG_HDR + RING_CTL + (head % 4096), &len, sizeof(len));
	__atomic_store_n(tail, head + 70016 + 16, __ATOMIC_RELEASE);
	emptied(b, seg, 4);
	/* and the sender's next datagram still comes */
	goes_through(a, b, "two");
	munmap(seg, bytes);
	ops->close(a);
	ops->close(b);
}

Test(udp_local, a_full_ring_holds_the_sender_back_and_nothing_is_lost)
{
	struct braid_wire *a = local_wire(1, 4096), *b = local_wire(1, 4096);
	static uint8_t big[60000];
	struct braid_pkt pkts[8];
	int sent = 0, got = 0, n, k;

	for (k = 0; k < 64; k++) {
		memset(big, k, sizeof(big));
		if (tx(a, home(b), 0, big, sizeof(big), 0) != 1)
			break;
		sent++;
	}
	cr_assert_lt(sent, 64, "the ring filled");
	cr_assert_geq(sent, 2, "it holds two of the largest datagrams at least");
	cr_assert_gt(a->local.held, 0);
	cr_assert_eq(a->local.dropped, 0);
	while ((n = rx(b, pkts)) > 0) {
		for (int i = 0; i < n; i++) {
			cr_assert_eq(pkts[i].len, sizeof(big));
			cr_assert_eq(rbuf[i][0], got + i);
			cr_assert_eq(rbuf[i][sizeof(big) - 1], got + i);
		}
		got += n;
	}
	cr_assert_eq(got, sent, "every datagram written came");
	memset(big, sent, sizeof(big));
	cr_assert_eq(tx(a, home(b), 0, big, sizeof(big), 0), 1, "room again");
	ops->close(a);
	ops->close(b);
}

Test(udp_local, a_closed_peer_is_sent_to_by_udp)
{
	struct braid_wire *a = local_wire(1, 0), *b = local_wire(1, 0);
	uint16_t port = home(b);
	uint64_t local_tx;

	cr_assert_eq(tx(a, port, 0, "x", 1, 0), 1);
	cr_assert_eq(a->local.tx, 1);
	ops->close(b);
	/* the first finds the ring closed (dropped, as to a closed port), the next go by UDP */
	cr_assert_eq(tx(a, port, 0, "y", 1, 0), 1);
	cr_assert_eq(a->local.dropped, 1);
	local_tx = a->local.tx;
	cr_assert_eq(tx(a, port, 0, "z", 1, 0), 1);
	cr_assert_eq(a->local.tx, local_tx);
	cr_assert_eq(a->local.peers, 0);
	ops->close(a);
}

Test(udp_local, an_armed_receiver_is_woken_by_a_doorbell_it_never_sees)
{
	struct braid_wire *a = local_wire(2, 0), *b = local_wire(2, 0);
	struct braid_pkt pkts[8];
	struct pollfd pfd = { .fd = ops->wait_fd(b), .events = POLLIN };

	cr_assert_eq(ops->arm(b), false, "nothing there yet");
	cr_assert_eq(poll(&pfd, 1, 0), 0);
	cr_assert_eq(tx(a, home(b), 0, "ding", 4, 0), 1);
	cr_assert_eq(a->local.doorbells, 1);
	cr_assert_eq(poll(&pfd, 1, 5000), 1, "the wait fd woke");
	/* the datagram, and no empty one after it */
	cr_assert_eq(rx(b, pkts), 1);
	cr_assert_eq(memcmp(rbuf[0], "ding", 4), 0);
	for (int i = 0; i < 16; i++)
		cr_assert_eq(rx(b, pkts), 0);
	/* a busy receiver is not rung */
	cr_assert_eq(tx(a, home(b), 0, "dong", 4, 0), 1);
	cr_assert_eq(a->local.doorbells, 1);
	/* armed with something in the ring: not to sleep */
	cr_assert_eq(ops->arm(b), true);
	ops->close(a);
	ops->close(b);
}

Test(udp_local, a_lent_payload_is_read_from_the_senders_memory_into_its_place)
{
	struct braid_wire *a = local_wire_lending(1, 0, 1024), *b = local_wire_lending(1, 0, 1024);
	static uint8_t payload[40000], place[40000];
	uint8_t hdr[24] = "header bytes here.....", got_hdr[24];
	struct iovec out[2] = { { hdr, sizeof(hdr) }, { payload, sizeof(payload) } };
	struct iovec in[2] = { { got_hdr, sizeof(got_hdr) }, { place, sizeof(place) } };
	struct braid_pkt p, q;
	struct sockaddr_in from;
	uint64_t rx_ns;
	uint8_t peek[8];

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7);
	memset(&p, 0, sizeof(p));
	p.iov = out;
	p.iovcnt = 2;
	p.flags = BRAID_PKT_LEND;
	p.addr = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(home(b)),
				       .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	cr_assert_eq(ops->tx_burst(a, &p, 1), 1);
	cr_assert_eq(a->tx_lent, 1, "sent by reference");
	/* peeked (the header, timed by when it was written), then taken into place */
	cr_assert_eq(ops->rx_peek(b, peek, sizeof(peek), &from, &rx_ns), sizeof(hdr) + sizeof(payload));
	cr_assert_eq(memcmp(peek, hdr, sizeof(peek)), 0);
	cr_assert_gt(rx_ns, 0, "a lent payload's arrival is timed");
	memset(&q, 0, sizeof(q));
	q.iov = in;
	q.iovcnt = 2;
	cr_assert_eq(ops->rx_home(b, &q, 1), 1);
	cr_assert_eq(q.len, sizeof(hdr) + sizeof(payload));
	cr_assert_eq(memcmp(got_hdr, hdr, sizeof(hdr)), 0);
	cr_assert_eq(memcmp(place, payload, sizeof(payload)), 0, "every byte, one copy");
	cr_assert_eq(b->local.read_lent, 1);
	/* a short payload (under lend_min) goes copied */
	out[1].iov_len = 100;
	cr_assert_eq(ops->tx_burst(a, &p, 1), 1);
	cr_assert_eq(a->tx_lent, 1);
	ops->close(a);
	ops->close(b);
}

Test(udp_local, a_tail_out_of_step_near_the_rings_end_is_read_and_written_within_the_ring)
{
	struct braid_wire *a = local_wire(1, 0), *b = local_wire(1, 0);
	struct braid_pkt pkts[8];
	size_t bytes;
	uint8_t *seg;
	uint64_t *tail, *next_tail, head;
	uint32_t rb;

	cr_assert_eq(tx(a, home(b), 0, "one", 3, 0), 1);
	cr_assert_eq(rx(b, pkts), 1);
	seg = segment_of(b, &bytes);
	memcpy(&rb, seg + 20, sizeof(rb));
	tail = (uint64_t *)(seg + SEG_HDR);
	next_tail = (uint64_t *)(seg + SEG_HDR + RING_CTL + rb);	/* ring 1's, no one's */
	head = *(uint64_t *)(seg + SEG_HDR + 64);
	*next_tail = 0x5a5a5a5a5a5a5a5aULL;	/* (b reads no ring no one claimed) */
	/* a tail behind the head, 5 bytes before the ring's end: emptied to it */
	__atomic_store_n(tail, head - head % rb - 5, __ATOMIC_RELEASE);
	emptied(b, seg, 1);
	/* the sender goes on from there: no wrap mark fits before the end, none
	 * is written past it; the receiver reads no header there */
	cr_assert_eq(tx(a, home(b), 0, "two", 3, 0), 1);
	cr_assert_eq(*next_tail, 0x5a5a5a5a5a5a5a5aULL, "nothing written past the ring's end");
	emptied(b, seg, 2);	/* the datagram out of step */
	/* and the next is in step again */
	goes_through(a, b, "three");
	cr_assert_eq(*next_tail, 0x5a5a5a5a5a5a5a5aULL);
	munmap(seg, bytes);
	ops->close(a);
	ops->close(b);
}

Test(udp_local, a_record_to_a_port_not_the_receivers_is_dropped)
{
	struct braid_wire *a = local_wire(1, 0), *b = local_wire(1, 0);
	size_t bytes;
	uint8_t *seg, *rec;
	uint64_t head;
	uint16_t port = htons(1);	/* privileged: none of b's sockets */

	cr_assert_eq(tx(a, home(b), 0, "one", 3, 0), 1);
	seg = segment_of(b, &bytes);
	head = *(uint64_t *)(seg + SEG_HDR + 64);
	/* a's record as a's (its addresses, its length), but to another port */
	rec = seg + SEG_HDR + RING_CTL + head % 4096;
	memcpy(rec + 12, &port, sizeof(port));
	emptied(b, seg, 1);	/* no socket of b's would have had it */
	goes_through(a, b, "two");
	munmap(seg, bytes);
	ops->close(a);
	ops->close(b);
}

Test(udp_local, a_peek_taken_into_buffers_shorter_than_it_is_truncated)
{
	struct braid_wire *a = local_wire(1, 0), *b = local_wire(1, 0);
	static uint8_t dgram[400], big[300];
	uint8_t head[16], small[8];
	struct iovec one = { small, sizeof(small) };
	struct iovec two[2] = { { big, sizeof(big) }, { small, sizeof(small) } };
	struct sockaddr_in from;
	struct braid_pkt pkt;
	uint64_t rx_ns;

	for (size_t i = 0; i < sizeof(dgram); i++)
		dgram[i] = (uint8_t)(i * 3);
	/* all of it peeked, taken into 8 bytes */
	cr_assert_eq(tx(a, home(b), 0, dgram, 16, 0), 1);
	cr_assert_eq(ops->rx_peek(b, head, sizeof(head), &from, &rx_ns), 16);
	memset(&pkt, 0, sizeof(pkt));
	pkt.iov = &one;
	pkt.iovcnt = 1;
	cr_assert_eq(ops->rx_home(b, &pkt, 1), 1);
	cr_assert_eq(pkt.len, 16);
	cr_assert(pkt.flags & BRAID_PKT_TRUNC, "8 of its 16 bytes");
	cr_assert_eq(memcmp(small, dgram, sizeof(small)), 0);
	/* 4 bytes peeked, the rest taken after a buffer longer than a peek keeps */
	cr_assert_eq(tx(a, home(b), 0, dgram, sizeof(dgram), 0), 1);
	cr_assert_eq(ops->rx_peek(b, head, 4, &from, &rx_ns), sizeof(dgram));
	memset(&pkt, 0, sizeof(pkt));
	pkt.iov = two;
	pkt.iovcnt = 2;
	cr_assert_eq(ops->rx_home(b, &pkt, 1), 1);
	cr_assert_eq(pkt.len, sizeof(dgram));
	cr_assert(pkt.flags & BRAID_PKT_TRUNC);
	cr_assert_eq(memcmp(big, dgram, sizeof(big)), 0);
	cr_assert_eq(memcmp(small, dgram + sizeof(big), sizeof(small)), 0);
	ops->close(a);
	ops->close(b);
}

/*
 * A lent record by hand in ring 0 of b's @seg at its head: the datagram's
 * first 4 bytes "lent", then @len bytes at @addr of process @pid; the tail
 * after it.
 */
static void put_lent(struct braid_wire *b, uint8_t *seg, uint64_t addr, uint32_t len, uint32_t pid)
{
	uint64_t *tail = (uint64_t *)(seg + SEG_HDR), head = *(uint64_t *)(seg + SEG_HDR + 64);
	uint8_t *rec = seg + SEG_HDR + RING_CTL + head % 4096;
	uint32_t rec_len = 32 + 4, lent_head = 4;
	uint16_t flags = 1, port = htons(home(b));

	cr_assert_eq(*tail, head, "the ring read to empty");
	cr_assert_leq(head % 4096, 4096 - 64);
	memset(rec, 0, 64);
	memcpy(rec, &rec_len, 4);
	memcpy(rec + 12, &port, 2);
	memcpy(rec + 14, &flags, 2);
	memcpy(rec + 16, &addr, 8);
	memcpy(rec + 16 + 16, &len, 4);
	memcpy(rec + 16 + 20, &pid, 4);
	memcpy(rec + 16 + 24, &lent_head, 4);
	memcpy(rec + 16 + 32, "lent", 4);
	__atomic_store_n(tail, head + 64, __ATOMIC_RELEASE);
}

Test(udp_local, a_peek_shows_all_the_bytes_it_says_after_a_lost_datagram_and_past_what_it_keeps)
{
	struct braid_wire *a = local_wire(1, 0), *b = local_wire(1, 0);
	static uint8_t dgram[400], shown[400], got[400];
	struct iovec iov = { got, sizeof(got) };
	struct sockaddr_in from;
	struct braid_pkt pkt;
	uint64_t rx_ns;
	uint8_t *seg;
	size_t bytes;

	for (size_t i = 0; i < sizeof(dgram); i++)
		dgram[i] = (uint8_t)(i * 5 + 1);
	goes_through(a, b, "y");
	seg = segment_of(b, &bytes);
	/* a lent record of 12 bytes from no process (lost when read), then a's */
	put_lent(b, seg, 0x10000, 8, 0x7ffffff0);
	cr_assert_eq(tx(a, home(b), 0, dgram, sizeof(dgram), 0), 1);
	memset(shown, 0, sizeof(shown));
	cr_assert_eq(ops->rx_peek(b, shown, 64, &from, &rx_ns), sizeof(dgram));
	cr_assert_eq(b->local.dropped, 1, "the lent one lost");
	cr_assert_eq(memcmp(shown, dgram, 64), 0, "64 bytes shown, not the lost one's 12");
	memset(&pkt, 0, sizeof(pkt));
	pkt.iov = &iov;
	pkt.iovcnt = 1;
	cr_assert_eq(ops->rx_home(b, &pkt, 1), 1);
	cr_assert_eq(memcmp(got, dgram, sizeof(dgram)), 0);
	/* more than a peek keeps to compare (256 bytes): all shown */
	cr_assert_eq(tx(a, home(b), 0, dgram, sizeof(dgram), 0), 1);
	memset(shown, 0, sizeof(shown));
	cr_assert_eq(ops->rx_peek(b, shown, sizeof(shown), &from, &rx_ns), sizeof(dgram));
	cr_assert_eq(memcmp(shown, dgram, sizeof(dgram)), 0);
	memset(got, 0, sizeof(got));
	cr_assert_eq(ops->rx_home(b, &pkt, 1), 1);
	cr_assert_eq(memcmp(got, dgram, sizeof(dgram)), 0);
	munmap(seg, bytes);
	ops->close(a);
	ops->close(b);
}

Test(udp_local, a_short_read_of_a_lent_payload_loses_it_and_leaves_lending_on)
{
	struct braid_wire *a = local_wire(1, 0), *b = local_wire(1, 0);
	size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes;
	struct braid_pkt pkts[8];
	uint8_t *mem, *seg;

	goes_through(a, b, "y");
	seg = segment_of(b, &bytes);
	/* 100 bytes before a hole: a read of 200 there stops short */
	mem = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(mem, MAP_FAILED);
	cr_assert_eq(munmap(mem + page, page), 0);
	put_lent(b, seg, (uintptr_t)(mem + page - 100), 200, (uint32_t)getpid());
	/* (what errno held before: a short read sets none) */
	errno = EPERM;
	cr_assert_eq(rx(b, pkts), 0);
	cr_assert_eq(b->local.dropped, 1, "lost");
	cr_assert_eq(seg[44], 0, "not the kernel's refusal: lending stays on (nocma 0)");
	goes_through(a, b, "z");
	munmap(mem, page);
	munmap(seg, bytes);
	ops->close(a);
	ops->close(b);
}

/*
 * A peer whose process is gone (killed: it never marked its segment closed)
 * is looked at again within a bound: the sender lets its ring go and sends
 * by UDP (or to whatever endpoint has the address now), so nothing it
 * writes vanishes for longer than that bound.
 */
Test(udp_local, a_peer_whose_process_is_gone_is_let_go)
{
	struct braid_wire *a = local_wire(1, 0), *b = local_wire(1, 0);
	struct braid_pkt pkts[8];
	size_t bytes;
	uint8_t *seg = segment_of(b, &bytes);
	uint64_t rx_local;
	pid_t dead = fork();
	int status, n = 0;
	long until;

	cr_assert_geq(dead, 0);
	if (dead == 0)
		_exit(0);
	cr_assert_eq(waitpid(dead, &status, 0), dead);
	cr_assert_eq(tx(a, home(b), 0, "one", 3, 0), 1);
	cr_assert_eq(rx(b, pkts), 1);
	cr_assert_eq(a->local.peers, 1);
	/* b's segment now says its owner is a process that no longer exists */
	memcpy(seg + 24, &(uint32_t){ (uint32_t)dead }, 4);
	rx_local = b->local.rx;
	for (until = time_ms() + 5000; a->local.peers && time_ms() < until; n++) {
		cr_assert_eq(tx(a, home(b), 0, "two", 3, 0), 1);
		(void)rx(b, pkts);
	}
	cr_assert_eq(a->local.peers, 0, "let go after %d sends", n);
	/* the one that found it gone, and the next, go by UDP, to the socket at that address */
	rx_local = b->local.rx;
	cr_assert_eq(tx(a, home(b), 0, "udp", 3, 0), 1);
	for (until = time_ms() + 5000; time_ms() < until;) {
		n = rx(b, pkts);
		if (n && !memcmp(rbuf[n - 1], "udp", 3))
			break;
	}
	cr_assert_gt(n, 0);
	cr_assert_eq(memcmp(rbuf[n - 1], "udp", 3), 0, "the last came");
	cr_assert_eq(b->local.rx, rx_local, "not through the ring");
	munmap(seg, bytes);
	ops->close(a);
	ops->close(b);
}

/* a segment file as an endpoint of process @pid left it, at port @port */
static void fake_segment(uint16_t port, uint32_t pid, char *path, size_t cap)
{
	uint8_t hdr[4096] = { 0 };
	uint64_t magic = 0x6873642d64696172ULL;	/* protocol.md §7.1 */
	uint32_t version = 1;
	struct stat ns;
	int fd;

	cr_assert_eq(stat("/proc/self/ns/net", &ns), 0);
	snprintf(path, cap, "/dev/shm/braid.%u.%llx.%08x.%u", (unsigned)getuid(),
		 (unsigned long long)ns.st_ino, INADDR_LOOPBACK, port);
	memcpy(hdr, &magic, 8);
	memcpy(hdr + 8, &version, 4);
	memcpy(hdr + 24, &pid, 4);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0, "%s", path);
	cr_assert_eq(write(fd, hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	close(fd);
}

/*
 * Segments whose owner is gone without closing (killed) are unlinked by the
 * next process that opens an endpoint, so their pages go back; a live
 * owner's stay.
 */
Test(udp_local, a_dead_owners_segment_is_swept_at_the_next_process_first_endpoint)
{
	char dead_path[128], live_path[128];
	pid_t dead = fork();
	struct braid_wire *w;
	int status;

	cr_assert_geq(dead, 0);
	if (dead == 0)
		_exit(0);
	cr_assert_eq(waitpid(dead, &status, 0), dead);
	fake_segment(1, (uint32_t)dead, dead_path, sizeof(dead_path));
	fake_segment(2, (uint32_t)getpid(), live_path, sizeof(live_path));
	w = local_wire(1, 0);	/* this process's first endpoint */
	cr_assert_neq(access(dead_path, F_OK), 0, "the dead owner's segment is gone");
	cr_assert_eq(access(live_path, F_OK), 0, "the live owner's stays");
	unlink(live_path);
	ops->close(w);
}

static int took_msgs;

static int take_msg(void *ctx, uint32_t ip, uint16_t port, const void *rec, size_t len)
{
	(void)ctx;
	(void)ip;
	(void)port;
	cr_assert_eq(len, 4);
	cr_assert_eq(memcmp(rec, "whol", 4), 0);
	took_msgs++;
	return 0;
}

/* a message handed whole from a to b (the wire does not read what it carries) */
static int tx_whole(struct braid_wire *a, struct braid_wire *b)
{
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(home(b)),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct iovec iov = { (void *)"ol", 2 };

	return ops->tx_msg(a, &dst, "wh", 2, &iov, 1);
}

Test(udp_local, an_idle_look_stands_for_an_empty_receive_and_leaves_no_datagram_waiting)
{
	struct braid_wire *a = local_wire(2, 0), *b = local_wire(2, 0);
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(home(b)),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct braid_pkt pkts[8];
	int fd, i, looks, got;

	cr_assert_not_null(ops->rx_idle, "the UDP wire has the idle look");
	/* sockets never yet found quiet: every receive looks at them */
	cr_assert_eq(ops->rx_idle(b, false), false);
	/* the local peer active, the sockets empty a few looks running: quiet */
	goes_through(a, b, "ring");
	for (i = 0; i < 16; i++)
		cr_assert_eq(rx(b, pkts), 0);
	cr_assert_eq(ops->rx_idle(b, false), true);
	/* a datagram in a ring, or a message whole: not idle, until taken */
	cr_assert_eq(tx(a, home(b), 0, "next", 4, 0), 1);
	cr_assert_eq(ops->rx_idle(b, false), false);
	cr_assert_eq(rx(b, pkts), 1);
	cr_assert_eq(tx_whole(a, b), 1);
	cr_assert_eq(ops->rx_idle(b, false), false);
	cr_assert_eq(rx(b, pkts), 0, "a message whole stops its ring's datagrams");
	took_msgs = 0;
	cr_assert_eq(ops->rx_msgs(b, take_msg, NULL, 8, false, NULL), 1);
	cr_assert_eq(took_msgs, 1);
	cr_assert_eq(ops->rx_idle(b, false), true);
	/* a receiver that refuses in its idle look is handed nothing whole, and takes again after */
	cr_assert_eq(ops->rx_idle(b, true), true);
	cr_assert_eq(tx_whole(a, b), 0, "refused: by the engine");
	cr_assert_eq(ops->rx_idle(b, false), true);
	cr_assert_eq(tx_whole(a, b), 1);
	cr_assert_eq(ops->rx_msgs(b, take_msg, NULL, 8, false, NULL), 1);
	/* a datagram from outside the rings (another host's, by the socket) is not left
	 * behind idle looks: within one look of the sockets' period a receive finds it */
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(sendto(fd, "sock", 4, 0, (struct sockaddr *)&to, sizeof(to)), 4);
	for (looks = 0, got = 0; looks < 200 && !got; looks++)
		if (!ops->rx_idle(b, false))
			got = rx(b, pkts);
	cr_assert_eq(got, 1, "the socket's datagram came within 200 looks (%d)", looks);
	cr_assert_eq(memcmp(rbuf[0], "sock", 4), 0);
	cr_assert_leq(looks, 65, "a look at the sockets every 64th receive at most: %d", looks);
	close(fd);
	ops->close(a);
	ops->close(b);
}

/*
 * While large datagrams come, the engine reads the home socket by peek and the
 * path sockets by rx_routes, once each a receive: a datagram from another host
 * on the home socket is found within the sockets' period whichever of the two
 * the period's look falls to (a look at the path sockets that finds the wait
 * set ready ends the quiet, so the next peek reads the home socket).
 */
Test(udp_local, a_datagram_on_the_home_socket_is_found_while_receives_peek_and_read_routes)
{
	struct braid_wire *a = local_wire(2, 0), *b = local_wire(2, 0);
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(home(b)),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) }, from;
	struct braid_pkt pkts[8];
	char buf[64];
	uint64_t rx_ns;
	size_t len;
	int fd, i, rounds, phase;

	fd = socket(AF_INET, SOCK_DGRAM, 0);
	cr_assert_geq(fd, 0);
	/* both phases of the period: one more receive (an idle look) shifts it by one */
	for (phase = 0; phase < 2; phase++) {
		goes_through(a, b, "ring");
		for (i = 0; i < 16; i++)
			cr_assert_eq(rx(b, pkts), 0);
		for (i = 0; i <= phase; i++)
			cr_assert_eq(ops->rx_idle(b, false), true, "the sockets are quiet");
		cr_assert_eq(sendto(fd, "sock", 4, 0, (struct sockaddr *)&to, sizeof(to)), 4);
		for (rounds = 0, len = 0; rounds < 200 && !len; rounds++) {
			len = ops->rx_peek(b, buf, sizeof(buf), &from, &rx_ns);
			if (!len)
				cr_assert_eq(ops->rx_routes(b, pkts, 8), 0);
		}
		cr_assert_eq(len, 4, "phase %d: the home socket's datagram was peeked within "
			     "200 receives (%d)", phase, rounds);
		cr_assert_eq(memcmp(buf, "sock", 4), 0);
		cr_assert_leq(rounds, 65, "phase %d: found within the sockets' period: %d receives",
			      phase, rounds);
		cr_assert_eq(ops->rx_home(b, pkts, 1), 1);
		cr_assert_eq(memcmp(rbuf[0], "sock", 4), 0);
	}
	close(fd);
	ops->close(a);
	ops->close(b);
}
