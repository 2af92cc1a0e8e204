/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fuzz_shm.c: libFuzzer target for the receive side of the local peers'
 * rings (providers/udp/braid_udp_shm.c, protocol.md §7): one UDP wire
 * endpoint on 127.0.0.1 with local peers on, two rings; the target claims
 * them as a local sender would and writes the input's bytes into them (its
 * format: fuzz_common.h, fuzz_shm). Every byte of a ring is another
 * process's: nothing may crash, read or write outside the ring and the
 * caller's buffers, or hit UB; a packet has at most 64 KiB - 1 bytes, is
 * marked truncated exactly when it is longer than its buffers, and comes
 * from one of the wire's routes; the published head stays between where it
 * was and the tail written; bytes that make no sense empty the ring and are
 * counted; no read of a lent payload is refused for want of rights.
 *
 * The receiver's own mapping of the segment is found in /proc/self/maps and
 * its bytes outside the rings it may use (ring 1's control lines but for
 * its tail and head, the rest of the last page) are poisoned for ASan, so
 * that a read past ring 0's or ring 1's end is caught.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sanitizer/asan_interface.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "braid/braid_wire.h"
#include "fuzz_common.h"

extern const struct braid_wire_ops braid_udp_wire_ops;

static const struct braid_wire_ops *ops = &braid_udp_wire_ops;
static struct braid_wire *wire;
static uint8_t *seg;		/* our mapping of its segment, as a sender's */
static size_t seg_bytes;
static uint32_t ring_bytes;
static uint16_t ports[FSHM_PATHS];	/* the wire's paths' ports: its home, path 1's */
static uint8_t lend_buf[2 * FSHM_LEND_SPAN];	/* lent payloads' place (FSHM_CTL_LEND_OWN) */
static bool lent_anywhere;	/* this input lent from this process at the input's address */

static inline _Atomic uint64_t *ring_word(int k, size_t off)
{
	return (_Atomic uint64_t *)(seg + FSHM_SEG_HDR + (size_t)k * (FSHM_RING_CTL + ring_bytes) +
				    off);
}

static inline uint8_t *ring_data(int k)
{
	return seg + FSHM_SEG_HDR + (size_t)k * (FSHM_RING_CTL + ring_bytes) + FSHM_RING_CTL;
}

/* the receiver's own mapping of the segment (not ours): its start, or 0 */
static uintptr_t receiver_mapping(const char *name)
{
	char line[512], path[160];
	uintptr_t found = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	FUZZ_CHECK(f);
	snprintf(path, sizeof(path), "/dev/shm%s", name);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char *p = strchr(line, '/');

		if (!p || sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			continue;
		p[strcspn(p, "\n")] = 0;
		if (!strcmp(p, path) && lo != (uintptr_t)seg && hi - lo >= seg_bytes)
			found = lo;
	}
	fclose(f);
	return found;
}

/* the port of the wire's path @path: a datagram to itself by that path, received by UDP */
static uint16_t path_port(uint32_t path)
{
	struct iovec iov = { (void *)"x", 1 };
	struct braid_pkt pkt = { .iov = &iov, .iovcnt = 1, .path = path, .addr = wire->name };
	uint8_t buf[16];

	FUZZ_CHECK(ops->tx_burst(wire, &pkt, 1) == 1 && pkt.status == 0);
	iov = (struct iovec){ buf, sizeof(buf) };
	for (int tries = 0; tries < 1000; tries++) {
		memset(&pkt, 0, sizeof(pkt));
		pkt.iov = &iov;
		pkt.iovcnt = 1;
		if (ops->rx_burst(wire, &pkt, 1) == 1)
			return ntohs(pkt.addr.sin_port);
		usleep(1000);
	}
	fuzz_fail(__FILE__, __LINE__, "a datagram to itself by UDP");
	return 0;
}

/* at exit: the wire closed, its segment unlinked (nothing left in /dev/shm) */
static void wire_close(void)
{
	ops->close(wire);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct braid_wire_params p = { .paths = FSHM_PATHS, .local = true, .local_rings = FSHM_RINGS };
	struct braid_pkt pkt = { 0 };
	uint8_t buf[16];
	struct iovec iov = { buf, sizeof(buf) };
	char name[128];
	struct stat ns, sb;
	uintptr_t rx_seg, r1;
	int fd;

	(void)argc;
	(void)argv;
	p.addr.sin_family = AF_INET;
	p.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	FUZZ_CHECK(ops->open(&p, &wire) == 0);
	FUZZ_CHECK(wire->local.on);
	atexit(wire_close);
	ports[0] = ntohs(wire->name.sin_port);
	ports[1] = path_port(1);
	FUZZ_CHECK(stat("/proc/self/ns/net", &ns) == 0);
	snprintf(name, sizeof(name), "/braid.%u.%llx.%08x.%u", (unsigned)getuid(),
		 (unsigned long long)ns.st_ino, INADDR_LOOPBACK, ntohs(wire->name.sin_port));
	fd = shm_open(name, O_RDWR, 0);
	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(fstat(fd, &sb) == 0);
	seg_bytes = (size_t)sb.st_size;
	seg = mmap(NULL, seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	FUZZ_CHECK(seg != MAP_FAILED);
	memcpy(&ring_bytes, seg + FSHM_OFF_RING_BYTES, sizeof(ring_bytes));
	FUZZ_CHECK(ring_bytes >= 4096 && !(ring_bytes & (ring_bytes - 1)));
	FUZZ_CHECK(seg_bytes >= FSHM_SEG_HDR + FSHM_RINGS * (FSHM_RING_CTL + (size_t)ring_bytes));
	/* both rings claimed, as a sender does: our owner word, the active bit */
	for (int k = 0; k < FSHM_RINGS; k++) {
		uint64_t tag = (uint64_t)(uint32_t)getpid() << 32 | (0xf00u + (unsigned)k);

		atomic_store((_Atomic uint64_t *)(seg + FSHM_OFF_OWNER + 8 * k), tag);
		atomic_fetch_or((_Atomic uint64_t *)(seg + FSHM_OFF_ACTIVE), 1ULL << k);
	}
	/* the receiver maps its rings at the first active bit */
	pkt.iov = &iov;
	pkt.iovcnt = 1;
	FUZZ_CHECK(ops->rx_burst(wire, &pkt, 1) == 0);
	rx_seg = receiver_mapping(name);
	FUZZ_CHECK(rx_seg);
	r1 = rx_seg + FSHM_SEG_HDR + FSHM_RING_CTL + ring_bytes;	/* ring 1's control lines */
	ASAN_POISON_MEMORY_REGION((void *)(r1 + 8), FSHM_RING_HEAD - 8);
	ASAN_POISON_MEMORY_REGION((void *)(r1 + FSHM_RING_HEAD + 8), FSHM_RING_CTL - FSHM_RING_HEAD - 8);
	{
		uintptr_t end = rx_seg + FSHM_SEG_HDR + FSHM_RINGS * (FSHM_RING_CTL + (uintptr_t)ring_bytes);
		uintptr_t page = ((end + 4095) & ~(uintptr_t)4095);

		if (page > end)
			ASAN_POISON_MEMORY_REGION((void *)end, page - end);
	}
	return 0;
}

/* @len bytes of @src into ring @k from position @at on (wrapping) */
static void ring_write(int k, uint64_t at, const uint8_t *src, size_t len)
{
	uint8_t *d = ring_data(k);

	for (size_t i = 0; i < len; i++)
		d[(at + i) & (ring_bytes - 1)] = src[i];
}

static void ring_read(int k, uint64_t at, void *dst, size_t len)
{
	const uint8_t *d = ring_data(k);

	for (size_t i = 0; i < len; i++)
		((uint8_t *)dst)[i] = d[(at + i) & (ring_bytes - 1)];
}

static inline uint64_t rec_bytes(uint64_t len)
{
	return (FSHM_REC_HDR + len + 15) & ~(uint64_t)15;
}

/*
 * The records in the @n bytes of ring @k from @at (those just written, and
 * older ones up to the tail: all the receiver may read): a dst_port of 0
 * or 1 made the port of the wire's path 0 (home) or 1 (its route's); lent
 * ones' process and address made ones the harness may be read at
 * (FSHM_CTL_LEND_OWN: this process, inside lend_buf), or else a process
 * that is not there or none, or this one at the input's address (a read
 * that may fail): never another process's memory.
 */
static void rec_fix(int k, uint64_t at, uint64_t n, bool own)
{
	uint64_t pos = at, end = at + n;

	while (pos + FSHM_REC_HDR <= end) {
		uint32_t len, pid;
		uint16_t flags, dport;
		uint64_t addr;
		uint64_t off = pos & (ring_bytes - 1);

		ring_read(k, pos, &len, 4);
		ring_read(k, pos + 14, &flags, 2);
		ring_read(k, pos + 12, &dport, 2);
		if (len != UINT32_MAX && dport < FSHM_PATHS) {
			dport = htons(ports[dport]);
			ring_write(k, pos + 12, (uint8_t *)&dport, 2);
		}
		if (len == UINT32_MAX) {
			if (!off)
				break;
			pos += ring_bytes - off;
			continue;
		}
		if (len > UINT16_MAX)
			break;
		if ((flags & 1) && len >= FSHM_LENT_BYTES && pos + FSHM_REC_HDR + FSHM_LENT_BYTES <= end) {
			ring_read(k, pos + FSHM_REC_HDR + FSHM_LENT_ADDR, &addr, 8);
			ring_read(k, pos + FSHM_REC_HDR + FSHM_LENT_PID, &pid, 4);
			if (own) {
				addr = (uintptr_t)lend_buf + addr % FSHM_LEND_SPAN;
				pid = (uint32_t)getpid();
			} else {
				pid = (pid & 3) == 0 ? 0 : (pid & 3) == 1 ? (uint32_t)getpid() : FSHM_NO_PID;
				lent_anywhere |= pid != 0 && pid != FSHM_NO_PID;
			}
			ring_write(k, pos + FSHM_REC_HDR + FSHM_LENT_ADDR, (uint8_t *)&addr, 8);
			ring_write(k, pos + FSHM_REC_HDR + FSHM_LENT_PID, (uint8_t *)&pid, 4);
		}
		pos += rec_bytes(len);
	}
}

/* a received packet: its length, flags, route, and where its bytes went */
static void check_pkt(const struct braid_pkt *p, size_t cap)
{
	FUZZ_CHECK(p->len <= UINT16_MAX);
	FUZZ_CHECK(!(p->flags & ~BRAID_PKT_TRUNC));
	FUZZ_CHECK(!!(p->flags & BRAID_PKT_TRUNC) == (p->len > cap));
	FUZZ_CHECK(p->addr.sin_family == AF_INET);
	FUZZ_CHECK(p->path < wire->entropies);
}

static size_t buf_len(uint8_t sel)
{
	static const size_t lens[4] = { 8, 48, 700, 65536 };

	return lens[sel & 3];
}

/* rx_burst of 1 + (@npk & 7) packets, each 1 or 2 buffers sized by @sel */
static int do_burst(uint8_t npk, uint8_t sel)
{
	int n = 1 + (npk & 7), got;
	struct braid_pkt pkts[8];
	struct iovec iov[8][2];
	size_t cap[8];
	struct fuzz_bufs bs = { .n = 0 };

	memset(pkts, 0, sizeof(pkts));
	for (int i = 0; i < n; i++) {
		uint8_t s = (uint8_t)(sel >> (i & 3) * 2);

		pkts[i].iov = iov[i];
		pkts[i].iovcnt = (npk >> 3 & 1) && (i & 1) ? 2 : 1;
		cap[i] = 0;
		for (int j = 0; j < pkts[i].iovcnt; j++) {
			size_t l = buf_len((uint8_t)(s + j));

			iov[i][j] = (struct iovec){ fuzz_buf(&bs, l), l };
			cap[i] += l;
		}
	}
	got = ops->rx_burst(wire, pkts, n);
	FUZZ_CHECK(got >= 0 && got <= n);
	for (int i = 0; i < got; i++) {
		check_pkt(&pkts[i], cap[i]);
		for (int j = 0; j < pkts[i].iovcnt; j++)
			fuzz_read(iov[i][j].iov_base, iov[i][j].iov_len);
	}
	fuzz_bufs_free(&bs);
	return got;
}

/* rx_peek of @cap bytes; @rewrite (its @rn bytes at @at of ring @k, the records in @span
 * fixed) before rx_home */
static int do_peek_home(uint16_t cap, uint8_t sel, int k, uint64_t at, const uint8_t *rewrite,
			size_t rn, size_t span, bool own)
{
	struct fuzz_bufs bs = { .n = 0 };
	uint8_t *peek = fuzz_buf(&bs, cap);
	struct sockaddr_in from;
	struct braid_pkt pkt;
	struct iovec iov[3];
	uint64_t rx_ns;
	size_t len, total = 0;
	int got, cnt = 1 + sel % 3;

	len = ops->rx_peek(wire, peek, cap, &from, &rx_ns);
	FUZZ_CHECK(len <= UINT16_MAX);
	if (!len) {
		fuzz_bufs_free(&bs);
		return 0;
	}
	FUZZ_CHECK(from.sin_family == AF_INET);
	if (rn) {
		ring_write(k, at, rewrite, rn);
		rec_fix(k, at, span > rn ? span : rn, own);
	}
	for (int j = 0; j < cnt; j++) {
		size_t l = buf_len((uint8_t)(sel >> 2 * j));

		iov[j] = (struct iovec){ fuzz_buf(&bs, l), l };
		total += l;
	}
	memset(&pkt, 0, sizeof(pkt));
	pkt.iov = iov;
	pkt.iovcnt = cnt;
	got = ops->rx_home(wire, &pkt, 1);
	FUZZ_CHECK(got == 0 || got == 1);
	if (got) {
		check_pkt(&pkt, total);
		FUZZ_CHECK(pkt.len == len);
		/* the bytes the peek showed (all it said it had) are the ones taken
		 * (unless rewritten since, or read again from memory that may have
		 * changed) */
		if (!rn && !lent_anywhere)
			for (size_t at = 0, j = 0; j < (size_t)cnt && at < cap && at < len; j++) {
				size_t l = iov[j].iov_len;

				if (l > cap - at)
					l = cap - at;
				if (l > len - at)
					l = len - at;
				FUZZ_CHECK(!memcmp(iov[j].iov_base, peek + at, l));
				at += l;
			}
	}
	fuzz_bufs_free(&bs);
	return got;
}

/* rx_msgs' callback: reads every byte it is shown; leaves the record when the selector says */
static int msg_seen(void *ctx, uint32_t ip, uint16_t port, const void *rec, size_t len)
{
	uint8_t *sel = ctx;

	FUZZ_CHECK(len <= UINT16_MAX);
	(void)ip;
	(void)port;
	fuzz_read(rec, len);
	*sel = (uint8_t)(*sel >> 1 | *sel << 7);
	return (*sel & 1) ? -1 : 0;
}

/* the message records at the rings' heads (protocol.md §7.4), some left, some taken */
static int do_msgs(uint8_t sel)
{
	bool more = false, refuse = sel & 0x80;
	int got, max = 1 + (sel & 7);

	/* an idle look says so only with every ring empty (and stands for this call then) */
	if (ops->rx_idle(wire, refuse)) {
		for (int k = 0; k < FSHM_RINGS; k++)
			FUZZ_CHECK(atomic_load(ring_word(k, 0)) ==
				   atomic_load(ring_word(k, FSHM_RING_HEAD)));
		FUZZ_CHECK(!!atomic_load((_Atomic uint32_t *)(seg + FSHM_OFF_NOMSG)) == refuse);
	}
	/* (the heads: the step's checks after it) */
	got = ops->rx_msgs(wire, msg_seen, &sel, max, refuse, &more);
	FUZZ_CHECK(got >= 0 && got <= max);
	/* what the receiver tells its senders is what it was asked to */
	FUZZ_CHECK(!!atomic_load((_Atomic uint32_t *)(seg + FSHM_OFF_NOMSG)) == refuse);
	return got;
}

/* one step of an input: a record (fuzz_common.h, fuzz_shm) */
static void step(void *state, uint8_t ctl, uint8_t *rec, size_t n)
{
	int k = ctl & FSHM_CTL_RING, call = (ctl & FSHM_CTL_CALL) >> 1, tmode = (ctl & FSHM_CTL_TAIL) >> 3;
	bool own = ctl & FSHM_CTL_LEND_OWN;
	_Atomic uint64_t *tailw = ring_word(k, 0), *headw = ring_word(k, FSHM_RING_HEAD);
	uint64_t head, tail, bad = wire->local.bad, avail;
	bool other_empty = atomic_load(ring_word(!k, 0)) == atomic_load(ring_word(!k, FSHM_RING_HEAD));
	uint16_t delta, cap;
	uint8_t npk, sel;
	size_t wn, rn = 0, span;
	const uint8_t *bytes;

	(void)state;
	if (n < FSHM_STEP_HDR)
		return;
	delta = (uint16_t)(rec[0] | rec[1] << 8);
	npk = rec[2];
	sel = rec[3];
	cap = (uint16_t)(rec[4] | rec[5] << 8);
	bytes = rec + FSHM_STEP_HDR;
	wn = n - FSHM_STEP_HDR;
	if (call == FSHM_CALL_REWRITE) {
		rn = wn / 2;
		wn -= rn;
	}
	head = atomic_load(headw);
	ring_write(k, head, bytes, wn);
	switch (tmode) {
	case 0:
		tail = head + rec_bytes(wn) - FSHM_REC_HDR;	/* wn rounded up to 16 */
		break;
	case 1:
		tail = head + delta;
		break;
	case 2:
		tail = head + ((uint64_t)delta << 16);
		break;
	default:
		tail = head - delta;
		break;
	}
	avail = tail - head;
	/* every record the receiver may read: those written, and older bytes up to the tail */
	span = avail <= ring_bytes && avail > wn ? avail : wn;
	rec_fix(k, head, span, own);
	atomic_store(tailw, tail);
	switch (call) {
	case FSHM_CALL_BURST:
		do_burst(npk, sel);
		do_msgs(npk);
		break;
	case FSHM_CALL_PEEK:
		do_peek_home(cap, sel, k, 0, NULL, 0, 0, own);
		break;
	case FSHM_CALL_REWRITE:
		do_peek_home(cap, sel, k, head, bytes + wn, rn, span, own);
		break;
	default:
		return;
	}
	/* the head moved forward, never past the tail */
	FUZZ_CHECK(atomic_load(headw) - head <= tail - head);
	FUZZ_CHECK(wire->local.bad >= bad);
	/* a tail that makes no sense: the ring was emptied, and that counted */
	if (avail && (avail > (uint64_t)ring_bytes || (avail & 15)) && other_empty) {
		FUZZ_CHECK(wire->local.bad > bad);
		FUZZ_CHECK(atomic_load(headw) == tail);
	}
	/* nothing refused a read of this process's memory */
	FUZZ_CHECK(!atomic_load((_Atomic uint32_t *)(seg + FSHM_OFF_NOCMA)));
}

/*
 * Each input starts with both rings' heads at their start (an input does
 * what it did alone): filler records (of 64 KiB at most) up to the ring's
 * end, received; a head left unaligned by a ring emptied to a bad tail is
 * set right by a tail that makes no sense either (the ring emptied to it).
 */
static void rings_rewind(void)
{
	struct fuzz_bufs bs = { .n = 0 };
	struct iovec iov[2];
	struct braid_pkt pkts[2];
	uint16_t home = wire->name.sin_port;

	for (int k = 0; k < FSHM_RINGS; k++) {
		iov[k] = (struct iovec){ fuzz_buf(&bs, 65536), 65536 };
		pkts[k] = (struct braid_pkt){ .iov = &iov[k], .iovcnt = 1 };
	}
	for (int round = 0; round < 4; round++) {
		bool moved = false;

		for (int k = 0; k < FSHM_RINGS; k++) {
			uint64_t head = atomic_load(ring_word(k, FSHM_RING_HEAD));
			uint64_t pos = head & (ring_bytes - 1), fill = ring_bytes - pos;
			uint32_t len;

			if (!pos) {
				atomic_store(ring_word(k, 0), head);
				continue;
			}
			moved = true;
			if (pos & 15) {
				atomic_store(ring_word(k, 0), head + fill);
				continue;
			}
			if (fill > 65536)
				fill = 65536;
			len = (uint32_t)fill - FSHM_REC_HDR;
			memset(ring_data(k) + pos, 0, FSHM_REC_HDR);
			memcpy(ring_data(k) + pos, &len, 4);
			memcpy(ring_data(k) + pos + 12, &home, 2);
			atomic_store(ring_word(k, 0), head + fill);
		}
		if (!moved)
			break;
		FUZZ_CHECK(ops->rx_burst(wire, pkts, 2) <= 2);
	}
	for (int k = 0; k < FSHM_RINGS; k++)
		FUZZ_CHECK(!(atomic_load(ring_word(k, FSHM_RING_HEAD)) & (ring_bytes - 1)));
	fuzz_bufs_free(&bs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	rings_rewind();
	lent_anywhere = false;
	fuzz_records(data, size, step, NULL);
	return 0;
}
