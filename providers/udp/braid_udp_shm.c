/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * braid_udp_shm.c: local peers through shared memory, under the UDP wire
 * (fi_braid(7), LOCAL PEERS; the segment, rings and doorbell: docs/protocol.md §7).
 *
 * Every UDP wire endpoint opened with local peers on has an inbound
 * segment in /dev/shm, named after its home address in its user's and its
 * network namespace's scope: "/braid.UID.NETNS.IP.PORT". It holds up to
 * 256 rings; a local sender claims one for itself and writes into it the
 * same datagrams it would have sent by UDP, each with the addresses the
 * kernel would have given. The receiver reads its rings before its sockets,
 * so the engine above sees what it would over loopback, and every check,
 * the tag included, stays where it is. A segment's bytes come from other
 * processes: every length and position is checked before it is used, and a
 * ring whose bytes do not make sense is emptied.
 *
 * A ring is one sender's and one receiver's: the sender alone moves @tail
 * (after the bytes are written), the receiver alone @head (after they are
 * read). A record is a 16-byte header and the datagram, padded to 16; one
 * that would cross the ring's end is preceded by a wrap mark.
 *
 * A receiver that sleeps on its fd sets @armed first and looks at its
 * rings once more; a sender that writes to an armed receiver takes @armed
 * and sends its home socket an empty datagram (the doorbell), which the
 * wire drops. Busy pollers pay nothing.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <ifaddrs.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <rdma/fi_errno.h>

#include "braid_udp_shm.h"

#define SHM_MAGIC	0x6873642d64696172ULL	/* "raid-dsh" */
#define SHM_VERSION	1
#define SHM_RINGS_MAX	256
#define SHM_REC_HDR	16
#define SHM_ALIGN	16
#define SHM_WRAP	UINT32_MAX		/* a record's len: the rest of the ring is skipped */
#define SHM_HDR_BYTES	4096
#define SHM_CACHE	1024			/* destinations remembered (a power of two) */
#define SHM_LEARN	256			/* senders' path ports seen (a power of two) */
#define SHM_MISS_NS	100000000ULL		/* a destination found not local: looked up again after */
#define SHM_FULL_NS	5000000ULL		/* a ring full this long: sends to it are dropped */
#define SHM_CHECK_NS	50000000ULL		/* a peer's process looked at, at most this often */
#define SHM_CHECK_MSG_NS	1000000ULL	/* ... before a message is handed it whole */
#define SHM_LOCAL_IPS	32
#define SHM_PEEK_MAX	256			/* the bytes of a peeked datagram kept to compare */

/* the segment's header page; each ring follows it: struct shm_ring, then its bytes */
struct shm_hdr {
	uint64_t magic;
	uint32_t version, hdr_bytes;
	uint32_t rings, ring_bytes;
	uint32_t pid, ip;
	uint32_t port, rx_max;
	_Atomic uint32_t closed;
	_Atomic uint32_t nocma;
	/* the receiver's staging ran over: senders hand it no message whole (§7.4) */
	_Atomic uint32_t nomsg;
	alignas(64) _Atomic uint32_t armed;
	alignas(64) _Atomic uint64_t active[SHM_RINGS_MAX / 64];
	alignas(64) _Atomic uint64_t owner[SHM_RINGS_MAX];
};

struct shm_ring {
	alignas(64) _Atomic uint64_t tail;
	alignas(64) _Atomic uint64_t head;
};
#define SHM_RING_CTL	128

/* the layout docs/protocol.md §7.1 fixes */
_Static_assert(sizeof(struct shm_hdr) <= SHM_HDR_BYTES, "the header fits its page");
_Static_assert(offsetof(struct shm_hdr, closed) == 40 && offsetof(struct shm_hdr, nocma) == 44 &&
	       offsetof(struct shm_hdr, nomsg) == 48 && offsetof(struct shm_hdr, armed) == 64 &&
	       offsetof(struct shm_hdr, active) == 128 && offsetof(struct shm_hdr, owner) == 192,
	       "protocol.md §7.1");
_Static_assert(sizeof(struct shm_ring) == SHM_RING_CTL, "a ring's control lines");

/* a record's header, as written into the ring */
struct shm_rec {
	uint32_t len;		/* the datagram's bytes, or SHM_WRAP */
	uint32_t src_ip;	/* network order, as the kernel gives it */
	uint16_t src_port;	/* the sender's route (source port), network order */
	uint16_t src_home;	/* the sender's home port, network order */
	uint16_t dst_port;	/* the port it was sent to, network order */
	uint16_t flags;		/* SHM_REC_LENT */
};
_Static_assert(sizeof(struct shm_rec) == SHM_REC_HDR, "record header");

/*
 * SHM_REC_LENT: the record holds a struct shm_lent and the datagram's first
 * @head bytes; the other @len bytes are in the sender's memory, read by
 * the receiver with process_vm_readv (one copy, straight to where they
 * belong) - the payload the engine lends (BRAID_PKT_LEND: unchanged until
 * acknowledged; protocol.md §4.2 "Lent payloads", §7.2).
 */
#define SHM_REC_LENT	1u
/*
 * SHM_REC_MSG: the record is a message handed whole (protocol.md §7.4:
 * struct braid_rd_local_hdr and its payload), not a datagram: the engine
 * above matches it with no packets and no acknowledgements. Datagram
 * readers stop at it (it is taken in order, by udp_shm_rx_msgs()).
 */
#define SHM_REC_MSG	2u

struct shm_lent {
	uint64_t addr;		/* in the sender's address space */
	uint64_t ns;		/* when it was written (CLOCK_MONOTONIC: one host) */
	uint32_t len;		/* bytes there */
	uint32_t pid;		/* the sender's process */
	uint32_t head;		/* bytes after this struct: the datagram's first ones */
	uint32_t pad;
};
_Static_assert(sizeof(struct shm_lent) == 32, "lent record");

/* a mapped segment: our own, or a local peer's */
struct shm_seg {
	struct shm_hdr *hdr;
	size_t bytes;
	uint32_t ip;		/* host order */
	uint16_t port;		/* host order */
	int ring;		/* a peer's: the ring we claimed in it (-1: none) */
	uint64_t head_seen;	/* a peer's: its ring's head when last read */
	uint64_t full_since;	/* a peer's: when its ring was first found full (0: not) */
	uint64_t checked_ns;	/* a peer's: when its process was last seen alive */
	uint32_t gen;		/* bumped when the slot is let go: cache entries name it */
	bool used;
};

struct shm_cache_ent {
	uint32_t ip;		/* host order */
	uint16_t port;		/* host order; 0: empty */
	uint16_t peer;		/* the peers slot, or SHM_NOT_LOCAL */
	uint32_t gen;
	uint64_t until;		/* SHM_NOT_LOCAL: looked up again after */
};
#define SHM_NOT_LOCAL	UINT16_MAX

struct shm_learn_ent {
	uint32_t ip;		/* host order */
	uint16_t port, home;	/* host order */
};

struct braid_udp_shm {
	struct shm_seg self;
	char name[96];
	uint32_t ring_bytes, rings;
	size_t rx_max, max_rec;
	size_t lend_min;		/* payloads of this many bytes lent are sent by reference (0: never) */
	size_t seg_bytes;		/* our segment's, rings included */
	bool nocma;			/* this process may not read others' memory: nothing lent to us */
	uint32_t pid;
	uint64_t tag;			/* our claims' owner word */
	const uint16_t *ports;
	int nports, doorbell_fd;
	uint32_t local_ips[SHM_LOCAL_IPS];	/* host order */
	int nlocal;
	uint64_t netns;
	struct shm_seg *peers;
	int npeers, peers_cap;
	uint64_t now;			/* the clock, read once a send burst (0: not yet) */
	uint16_t touched[8];		/* peers written to in this burst */
	int ntouched;
	bool touched_over;
	uint64_t head[SHM_RINGS_MAX];	/* our rings' heads (ours alone) */
	uint32_t rr;			/* the ring receives start at */
	/* what the last udp_shm_rx that looked at every ring saw: the rings with a
	 * message whole at their head (udp_shm_rx_msgs looks at those alone) */
	uint64_t msg_at[SHM_RINGS_MAX / 64];
	bool msg_at_valid;
	int peeked;			/* the ring of a peek not yet taken, or -1 */
	uint8_t peek_bytes[SHM_PEEK_MAX];
	size_t peek_len, peek_cap;
	struct braid_wire_local *st;
	struct shm_cache_ent cache[SHM_CACHE];
	struct shm_learn_ent learn[SHM_LEARN];
};

static _Atomic uint32_t shm_serial;

static uint64_t shm_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline size_t shm_rec_bytes(size_t len)
{
	return (SHM_REC_HDR + len + SHM_ALIGN - 1) & ~(size_t)(SHM_ALIGN - 1);
}

static inline struct shm_ring *shm_ring_at(struct shm_hdr *h, uint32_t k, uint32_t ring_bytes)
{
	return (struct shm_ring *)((uint8_t *)h + SHM_HDR_BYTES +
				   (size_t)k * (SHM_RING_CTL + ring_bytes));
}

static inline uint8_t *shm_ring_data(struct shm_ring *r)
{
	return (uint8_t *)r + SHM_RING_CTL;
}

/* nothing in our ring @k (a look, no more: shm_next reads what is there) */
static inline bool shm_ring_empty(const struct braid_udp_shm *s, uint32_t k)
{
	struct shm_ring *r = shm_ring_at(s->self.hdr, k, s->ring_bytes);

	return atomic_load_explicit(&r->tail, memory_order_relaxed) == s->head[k];
}

static size_t shm_seg_bytes(uint32_t rings, uint32_t ring_bytes)
{
	return SHM_HDR_BYTES + (size_t)rings * (SHM_RING_CTL + ring_bytes);
}

static void shm_seg_name(const struct braid_udp_shm *s, uint32_t ip, uint16_t port, char *buf,
			 size_t cap)
{
	snprintf(buf, cap, "/braid.%u.%llx.%08x.%u", (unsigned)getuid(),
		 (unsigned long long)s->netns, ip, port);
}

static bool shm_pid_gone(uint32_t pid)
{
	return pid && kill((pid_t)pid, 0) && errno == ESRCH;
}

/* the addresses of this network namespace: only these can name a local endpoint */
static void shm_local_ips(struct braid_udp_shm *s)
{
	struct ifaddrs *list, *ifa;

	s->nlocal = 0;
	if (getifaddrs(&list))
		return;
	for (ifa = list; ifa && s->nlocal < SHM_LOCAL_IPS; ifa = ifa->ifa_next) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)ifa->ifa_addr;

		if (sin && sin->sin_family == AF_INET)
			s->local_ips[s->nlocal++] = ntohl(sin->sin_addr.s_addr);
	}
	freeifaddrs(list);
}

static inline bool shm_ip_local(const struct braid_udp_shm *s, uint32_t ip)
{
	int i;

	if ((ip >> 24) == 127)
		return true;
	for (i = 0; i < s->nlocal; i++)
		if (s->local_ips[i] == ip)
			return true;
	return false;
}

/* ---- our own segment ---- */

/*
 * Segments left by endpoints whose process is gone without closing them
 * (killed, or an exit without fi_close): each holds the pages its senders
 * touched until its name is unlinked. Once a process, at its first
 * endpoint, the segments of this user and namespace whose owner no longer
 * exists are unlinked (a sender still mapping one keeps its pages until
 * it lets go).
 */
static void shm_sweep(const struct braid_udp_shm *s)
{
	char prefix[64], path[sizeof("/dev/shm/") + NAME_MAX];
	size_t plen;
	struct dirent *e;
	DIR *d;

	snprintf(prefix, sizeof(prefix), "braid.%u.%llx.", (unsigned)getuid(),
		 (unsigned long long)s->netns);
	plen = strlen(prefix);
	d = opendir("/dev/shm");
	if (!d)
		return;
	while ((e = readdir(d))) {
		struct shm_hdr h;
		ssize_t r;
		int fd;

		if (strncmp(e->d_name, prefix, plen))
			continue;
		snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		r = pread(fd, &h, offsetof(struct shm_hdr, closed), 0);
		close(fd);
		if (r == (ssize_t)offsetof(struct shm_hdr, closed) && h.magic == SHM_MAGIC &&
		    shm_pid_gone(h.pid))
			(void)unlink(path);
	}
	closedir(d);
}

static void shm_sweep_once(const struct braid_udp_shm *s)
{
	static atomic_flag swept = ATOMIC_FLAG_INIT;

	if (!atomic_flag_test_and_set(&swept))
		shm_sweep(s);
}

static int shm_self_create(struct braid_udp_shm *s, uint32_t ip, uint16_t port)
{
	size_t bytes = shm_seg_bytes(s->rings, s->ring_bytes);
	struct shm_hdr *h;
	int fd;

	shm_seg_name(s, ip, port, s->name, sizeof(s->name));
	/*
	 * The home port is ours (the socket is bound): a segment of that name
	 * is left by an endpoint that is gone (a process that was killed).
	 */
	(void)shm_unlink(s->name);
	fd = shm_open(s->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -FI_EACCES;
	if (ftruncate(fd, (off_t)bytes)) {
		close(fd);
		shm_unlink(s->name);
		return -FI_ENOMEM;
	}
	/* the header alone until a sender claims a ring (shm_self_rings): an idle
	 * endpoint maps 4 KiB, not its rings */
	h = mmap(NULL, SHM_HDR_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (h == MAP_FAILED) {
		shm_unlink(s->name);
		return -FI_ENOMEM;
	}
	h->version = SHM_VERSION;
	h->hdr_bytes = SHM_HDR_BYTES;
	h->rings = s->rings;
	h->ring_bytes = s->ring_bytes;
	h->pid = (uint32_t)getpid();
	h->ip = ip;
	h->port = port;
	h->rx_max = (uint32_t)s->rx_max;
	atomic_store(&h->closed, 0);
	atomic_store_explicit((_Atomic uint64_t *)&h->magic, SHM_MAGIC, memory_order_release);
	s->self = (struct shm_seg){ .hdr = h, .bytes = SHM_HDR_BYTES, .ip = ip, .port = port,
				    .ring = -1, .used = true };
	s->seg_bytes = bytes;
	return 0;
}

/*
 * Our rings mapped, at the first sign of a sender (an active bit). Return
 * false when they cannot be: the segment is closed then, and senders go by
 * UDP.
 */
static bool shm_self_rings(struct braid_udp_shm *s)
{
	void *h;

	if (s->self.bytes == s->seg_bytes)
		return true;
	h = mremap(s->self.hdr, s->self.bytes, s->seg_bytes, MREMAP_MAYMOVE);
	if (h == MAP_FAILED) {
		atomic_store(&s->self.hdr->closed, 1);
		shm_unlink(s->name);
		return false;
	}
	s->self.hdr = h;
	s->self.bytes = s->seg_bytes;
	return true;
}

int udp_shm_open(struct braid_udp_shm **shm, const struct sockaddr_in *name, const uint16_t *ports,
		 int nports, uint32_t rings, size_t ring_bytes, size_t rx_max, size_t lend_min,
		 int doorbell_fd, struct braid_wire_local *st)
{
	struct braid_udp_shm *s;
	struct stat ns;
	size_t rb = 4096;
	int ret;

	if (name->sin_addr.s_addr == htonl(INADDR_ANY) || !rings || rx_max > UINT16_MAX + 1)
		return -FI_EINVAL;
	if (stat("/proc/self/ns/net", &ns))
		return -FI_ENOSYS;	/* no way to tell namespaces apart: no local peers */
	if (rings > SHM_RINGS_MAX)
		rings = SHM_RINGS_MAX;
	/* a power of two that holds two of the largest records */
	while (rb < ring_bytes || rb < 2 * shm_rec_bytes(rx_max))
		rb <<= 1;
	if (rb > (1u << 30))
		return -FI_EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -FI_ENOMEM;
	s->netns = (uint64_t)ns.st_ino;
	s->rings = rings;
	s->ring_bytes = (uint32_t)rb;
	s->rx_max = rx_max;
	s->ports = ports;
	s->nports = nports;
	s->doorbell_fd = doorbell_fd;
	s->peeked = -1;
	s->st = st;
	s->max_rec = rx_max;
	s->lend_min = lend_min;
	s->pid = (uint32_t)getpid();
	s->tag = ((uint64_t)(uint32_t)getpid() << 32) | (atomic_fetch_add(&shm_serial, 1) + 1);
	shm_local_ips(s);
	shm_sweep_once(s);
	ret = shm_self_create(s, ntohl(name->sin_addr.s_addr), ports[0]);
	if (ret) {
		free(s);
		return ret;
	}
	*shm = s;
	return 0;
}

/* ---- local peers' segments ---- */

static void shm_peer_release(struct braid_udp_shm *s, struct shm_seg *p)
{
	if (p->ring >= 0) {
		uint64_t mine = s->tag;

		(void)atomic_compare_exchange_strong(&p->hdr->owner[p->ring], &mine, 0);
	}
	munmap(p->hdr, p->bytes);
	p->hdr = NULL;
	p->used = false;
	p->gen++;
	if (s->st->peers)
		s->st->peers--;
}

void udp_shm_close(struct braid_udp_shm *s)
{
	int i;

	if (!s)
		return;
	for (i = 0; i < s->npeers; i++)
		if (s->peers[i].used)
			shm_peer_release(s, &s->peers[i]);
	atomic_store(&s->self.hdr->closed, 1);
	shm_unlink(s->name);
	munmap(s->self.hdr, s->self.bytes);
	free(s->peers);
	free(s);
}

/* claim a ring in @h: a free one, else one whose owner's process is gone */
static int shm_claim(struct braid_udp_shm *s, struct shm_hdr *h, uint32_t rings)
{
	uint32_t k;

	for (int pass = 0; pass < 2; pass++) {
		for (k = 0; k < rings; k++) {
			uint64_t cur = atomic_load(&h->owner[k]);

			if (cur && (!pass || !shm_pid_gone((uint32_t)(cur >> 32))))
				continue;
			if (atomic_compare_exchange_strong(&h->owner[k], &cur, s->tag)) {
				atomic_fetch_or(&h->active[k / 64], 1ULL << (k % 64));
				return (int)k;
			}
		}
	}
	return -1;
}

/*
 * Map the segment of the local endpoint whose home address is @ip:@port and
 * claim a ring in it. Return its peers slot, or -1 (none there: not local).
 */
static int shm_attach(struct braid_udp_shm *s, uint32_t ip, uint16_t port)
{
	char name[96];
	struct shm_hdr *h;
	struct stat sb;
	int fd, i, slot = -1;
	size_t bytes;
	int ring;

	if (ip == s->self.ip && port == s->self.port)
		return -1;	/* ourselves: by UDP (the engine never sends itself anything) */
	for (i = 0; i < s->npeers; i++) {
		if (s->peers[i].used && s->peers[i].ip == ip && s->peers[i].port == port)
			return i;
		if (!s->peers[i].used && slot < 0)
			slot = i;
	}
	shm_seg_name(s, ip, port, name, sizeof(name));
	fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (fstat(fd, &sb) || sb.st_uid != getuid() || (size_t)sb.st_size < SHM_HDR_BYTES) {
		close(fd);
		return -1;
	}
	bytes = (size_t)sb.st_size;
	h = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (h == MAP_FAILED)
		return -1;
	/* another process's page: every field is checked before it is believed */
	if (atomic_load_explicit((_Atomic uint64_t *)&h->magic, memory_order_acquire) != SHM_MAGIC ||
	    h->version != SHM_VERSION || h->hdr_bytes != SHM_HDR_BYTES || !h->rings ||
	    h->rings > SHM_RINGS_MAX || h->ring_bytes < 4096 ||
	    (h->ring_bytes & (h->ring_bytes - 1)) || h->ring_bytes > (1u << 30) ||
	    shm_seg_bytes(h->rings, h->ring_bytes) > bytes || h->ip != ip || h->port != port ||
	    atomic_load(&h->closed) || shm_pid_gone(h->pid) ||
	    2 * shm_rec_bytes(s->max_rec) > h->ring_bytes ||
	    (ring = shm_claim(s, h, h->rings)) < 0) {
		munmap(h, bytes);
		return -1;
	}
	if (slot < 0) {
		if (s->npeers == s->peers_cap) {
			int cap = s->peers_cap ? s->peers_cap * 2 : 8;
			struct shm_seg *np = cap < SHM_NOT_LOCAL ?
					     realloc(s->peers, (size_t)cap * sizeof(*np)) : NULL;

			if (!np) {
				uint64_t mine = s->tag;

				(void)atomic_compare_exchange_strong(&h->owner[ring], &mine, 0);
				munmap(h, bytes);
				return -1;
			}
			memset(np + s->peers_cap, 0, (size_t)(cap - s->peers_cap) * sizeof(*np));
			s->peers = np;
			s->peers_cap = cap;
		}
		slot = s->npeers++;
	}
	s->peers[slot] = (struct shm_seg){ .hdr = h, .bytes = bytes, .ip = ip, .port = port,
					   .ring = ring, .gen = s->peers[slot].gen, .used = true };
	s->peers[slot].head_seen = atomic_load_explicit(&shm_ring_at(h, (uint32_t)ring,
							h->ring_bytes)->head, memory_order_acquire);
	s->st->peers++;
	return slot;
}

static inline struct shm_cache_ent *shm_cache_at(struct braid_udp_shm *s, uint32_t ip, uint16_t port)
{
	uint32_t x = ip * 0x9e3779b1u ^ (uint32_t)port * 0x85ebca6bu;

	return &s->cache[(x ^ (x >> 15)) & (SHM_CACHE - 1)];
}

static inline struct shm_learn_ent *shm_learn_at(struct braid_udp_shm *s, uint32_t ip, uint16_t port)
{
	uint32_t x = ip * 0x85ebca6bu ^ (uint32_t)port * 0x9e3779b1u;

	return &s->learn[(x ^ (x >> 13)) & (SHM_LEARN - 1)];
}

/*
 * The local peer that @ip:@port (host order) names: its home port, or a path
 * port a datagram from it came from. Return its peers slot, or -1.
 */
static int shm_find(struct braid_udp_shm *s, uint32_t ip, uint16_t port)
{
	struct shm_cache_ent *e = shm_cache_at(s, ip, port);
	struct shm_learn_ent *l;
	uint64_t now;
	int slot;

	if (e->port == port && e->ip == ip) {
		if (e->peer != SHM_NOT_LOCAL) {
			if (s->peers[e->peer].used && s->peers[e->peer].gen == e->gen)
				return e->peer;
		} else if (shm_now() < e->until) {
			return -1;
		}
	}
	l = shm_learn_at(s, ip, port);
	slot = shm_attach(s, ip, l->ip == ip && l->port == port ? l->home : port);
	if (slot < 0 && l->ip == ip && l->port == port)
		slot = shm_attach(s, ip, port);
	e->ip = ip;
	e->port = port;
	if (slot >= 0) {
		e->peer = (uint16_t)slot;
		e->gen = s->peers[slot].gen;
		return slot;
	}
	now = shm_now();
	e->peer = SHM_NOT_LOCAL;
	e->until = now + SHM_MISS_NS;
	return -1;
}

/* ---- sending ---- */

/* gather @len bytes from @iov (from byte @off on) into @dst */
static void shm_gather(uint8_t *dst, const struct iovec *iov, int iovcnt, size_t off, size_t len)
{
	int i;

	for (i = 0; i < iovcnt && len; i++) {
		size_t l = iov[i].iov_len;

		if (off >= l) {
			off -= l;
			continue;
		}
		l -= off;
		if (l > len)
			l = len;
		memcpy(dst, (const uint8_t *)iov[i].iov_base + off, l);
		dst += l;
		len -= l;
		off = 0;
	}
}

/* room for @need more bytes in @p's ring (tail @tail)? */
static bool shm_room(struct shm_seg *p, struct shm_ring *r, uint64_t tail, size_t need)
{
	uint32_t rb = p->hdr->ring_bytes;

	if (tail + need - p->head_seen <= rb)
		return true;
	p->head_seen = atomic_load_explicit(&r->head, memory_order_acquire);
	/* (the head is the peer's word: one past the tail is a lie) */
	return tail - p->head_seen <= rb && tail + need - p->head_seen <= rb;
}

/* the ring to @p has been full: hold the burst back, or drop into it once too long */
static int shm_full(struct braid_udp_shm *s, int slot)
{
	struct shm_seg *p = &s->peers[slot];
	uint64_t now = shm_now();

	if (!p->full_since)
		p->full_since = now;
	if (now - p->full_since < SHM_FULL_NS && !shm_pid_gone(p->hdr->pid)) {
		s->st->held++;
		return -1;
	}
	/* a receiver that does not read (gone, or away for a while): dropped, as
	 * a full socket's datagrams are; the engine's timers resend or fail them */
	if (shm_pid_gone(p->hdr->pid))
		shm_peer_release(s, p);
	s->st->dropped++;
	return 1;
}

static void shm_touch(struct braid_udp_shm *s, int slot)
{
	int i;

	for (i = 0; i < s->ntouched; i++)
		if (s->touched[i] == slot)
			return;
	if (s->ntouched < (int)(sizeof(s->touched) / sizeof(s->touched[0])))
		s->touched[s->ntouched++] = (uint16_t)slot;
	else
		s->touched_over = true;
}

/* a record's header for @len bytes of @pkt's from route @src_port */
static inline struct shm_rec shm_rec_of(const struct braid_udp_shm *s, const struct braid_pkt *pkt,
					size_t len, uint16_t src_port, uint16_t flags)
{
	return (struct shm_rec){
		.len = (uint32_t)len, .src_ip = htonl(s->self.ip), .src_port = htons(src_port),
		.src_home = htons(s->self.port), .dst_port = pkt->addr.sin_port, .flags = flags,
	};
}

/* the place of a record of @len bytes at *@tail (a wrap mark first if it would cross the end) */
static uint8_t *shm_rec_place(struct shm_ring *r, uint32_t rb, uint64_t *tail, size_t len)
{
	size_t pos = *tail & (rb - 1);
	uint8_t *d = shm_ring_data(r);

	if (pos + shm_rec_bytes(len) > rb) {
		struct shm_rec w = { .len = SHM_WRAP };

		/* (a tail out of step with 16, the peer's word: no room for the
		 * mark before the end, and the receiver drops what it finds there) */
		if (pos <= rb - sizeof(w))
			memcpy(d + pos, &w, sizeof(w));
		*tail += rb - pos;
		pos = 0;
	}
	*tail += shm_rec_bytes(len);
	return d + pos;
}

/* @pkt's payload may go by reference to @p (the engine lends it; the peer can read us) */
static inline bool shm_lendable(const struct braid_udp_shm *s, const struct shm_seg *p,
				const struct braid_pkt *pkt)
{
	return s->lend_min && (pkt->flags & BRAID_PKT_LEND) && !pkt->gso_size && pkt->iovcnt > 1 &&
	       pkt->iov[pkt->iovcnt - 1].iov_len >= s->lend_min &&
	       !atomic_load_explicit(&p->hdr->nocma, memory_order_relaxed);
}

/* @pkt as a lent record: its head copied, its payload's place for the receiver to read */
static int shm_tx_lent(struct braid_udp_shm *s, int slot, struct shm_ring *r, uint64_t tail,
		       struct braid_pkt *pkt, size_t total, uint16_t src_port)
{
	struct shm_seg *p = &s->peers[slot];
	const struct iovec *last = &pkt->iov[pkt->iovcnt - 1];
	size_t head = total - last->iov_len, len = sizeof(struct shm_lent) + head;
	uint32_t rb = p->hdr->ring_bytes;
	size_t pos = tail & (rb - 1), need = shm_rec_bytes(len) + (pos + shm_rec_bytes(len) > rb ?
								  rb - pos : 0);
	struct shm_lent l = { .addr = (uintptr_t)last->iov_base, .ns = shm_now(),
			      .len = (uint32_t)last->iov_len, .pid = s->pid, .head = (uint32_t)head };
	struct shm_rec h = shm_rec_of(s, pkt, len, src_port, SHM_REC_LENT);
	uint8_t *d;

	if (!shm_room(p, r, tail, need))
		return shm_full(s, slot);
	p->full_since = 0;
	d = shm_rec_place(r, rb, &tail, len);
	memcpy(d, &h, sizeof(h));
	memcpy(d + SHM_REC_HDR, &l, sizeof(l));
	shm_gather(d + SHM_REC_HDR + sizeof(l), pkt->iov, pkt->iovcnt - 1, 0, head);
	s->st->tx++;
	atomic_store_explicit(&r->tail, tail, memory_order_release);
	shm_touch(s, slot);
	pkt->status = 0;
	return 2;
}

/*
 * Local peer @slot (found for @ip:@port), looked at again if it was last
 * looked at @every ns ago or more: a process killed cannot say it closed,
 * and another endpoint may have its address by now: what we write must not
 * vanish for longer. Return: its slot now (the address's new owner's), or
 * -1: none.
 */
static int shm_alive(struct braid_udp_shm *s, int slot, uint32_t ip, uint16_t port, uint64_t every)
{
	struct shm_seg *p = &s->peers[slot];

	if (!s->now)
		s->now = shm_now();	/* once a burst */
	if (s->now - p->checked_ns < every)
		return slot;
	p->checked_ns = s->now;
	if (!shm_pid_gone(p->hdr->pid))
		return slot;
	shm_peer_release(s, p);
	return shm_find(s, ip, port);
}

int udp_shm_tx_msg(struct braid_udp_shm *s, uint32_t ip, uint16_t port, const void *hdr,
		   size_t hdr_len, const struct iovec *iov, int iovcnt)
{
	size_t total = hdr_len, pos, need;
	struct shm_ring *r;
	struct shm_seg *p;
	struct shm_rec h;
	uint64_t tail;
	uint32_t rb;
	uint8_t *d;
	int i, slot;

	if (!shm_ip_local(s, ip))
		return 0;
	slot = shm_find(s, ip, port);
	if (slot < 0)
		return 0;
	p = &s->peers[slot];
	if (atomic_load_explicit(&p->hdr->closed, memory_order_relaxed)) {
		shm_peer_release(s, p);
		return 0;	/* gone: the engine's way tells the sender */
	}
	/* (what it is handed is not resent: the window for a peer that died is short) */
	slot = shm_alive(s, slot, ip, port, SHM_CHECK_MSG_NS);
	if (slot < 0)
		return 0;
	p = &s->peers[slot];
	if (atomic_load_explicit(&p->hdr->nomsg, memory_order_relaxed))
		return 0;	/* its staging ran over: by the engine, which waits for room */
	for (i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (total > p->hdr->rx_max || total > s->max_rec || total > UINT16_MAX)
		return 0;
	rb = p->hdr->ring_bytes;
	r = shm_ring_at(p->hdr, (uint32_t)p->ring, rb);
	tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	pos = tail & (rb - 1);
	need = shm_rec_bytes(total) + (pos + shm_rec_bytes(total) > rb ? rb - pos : 0);
	if (!shm_room(p, r, tail, need))
		return 0;	/* (full: the engine's way holds it back) */
	p->full_since = 0;
	h = (struct shm_rec){
		.len = (uint32_t)total, .src_ip = htonl(s->self.ip), .src_port = htons(s->self.port),
		.src_home = htons(s->self.port), .dst_port = htons(port), .flags = SHM_REC_MSG,
	};
	d = shm_rec_place(r, rb, &tail, total);
	memcpy(d, &h, sizeof(h));
	memcpy(d + SHM_REC_HDR, hdr, hdr_len);
	shm_gather(d + SHM_REC_HDR + hdr_len, iov, iovcnt, 0, total - hdr_len);
	s->st->tx++;
	s->st->tx_msgs++;
	atomic_store_explicit(&r->tail, tail, memory_order_release);
	shm_touch(s, slot);
	return 1;
}

bool udp_shm_local(struct braid_udp_shm *s, const struct braid_pkt *pkt)
{
	uint32_t ip = ntohl(pkt->addr.sin_addr.s_addr);

	return shm_ip_local(s, ip) && shm_find(s, ip, ntohs(pkt->addr.sin_port)) >= 0;
}

int udp_shm_tx(struct braid_udp_shm *s, struct braid_pkt *pkt, uint16_t src_port)
{
	uint32_t ip = ntohl(pkt->addr.sin_addr.s_addr);
	size_t total = 0, seg, off, need = 0;
	struct shm_ring *r;
	struct shm_seg *p;
	uint64_t tail;
	uint32_t rb;
	int i, slot;

	if (!shm_ip_local(s, ip))
		return 0;
	slot = shm_find(s, ip, ntohs(pkt->addr.sin_port));
	if (slot < 0)
		return 0;
	p = &s->peers[slot];
	if (atomic_load_explicit(&p->hdr->closed, memory_order_relaxed)) {
		shm_peer_release(s, p);
		s->st->dropped++;
		return 1;	/* gone: as a datagram to a closed port */
	}
	slot = shm_alive(s, slot, ip, ntohs(pkt->addr.sin_port), SHM_CHECK_NS);
	if (slot < 0)
		return 0;	/* by UDP, as to any address without a ring */
	p = &s->peers[slot];
	for (i = 0; i < pkt->iovcnt; i++)
		total += pkt->iov[i].iov_len;
	if (!total)
		return 0;	/* (nothing the engine sends; by UDP, as it was) */
	seg = pkt->gso_size ? pkt->gso_size : total;
	if ( seg > p->hdr->rx_max || seg > s->max_rec) {
		pkt->status = -FI_EMSGSIZE;
		return 1;
	}
	rb = p->hdr->ring_bytes;
	r = shm_ring_at(p->hdr, (uint32_t)p->ring, rb);
	tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	if (shm_lendable(s, p, pkt))
		return shm_tx_lent(s, slot, r, tail, pkt, total, src_port);
	/* the whole run (UDP GSO) or nothing: the bytes it needs, wraps included */
	for (off = 0; off < total; off += seg) {
		size_t len = total - off < seg ? total - off : seg;
		size_t rec = shm_rec_bytes(len), pos = (tail + need) & (rb - 1);

		if (pos + rec > rb)
			need += rb - pos;
		need += rec;
	}
	if (!shm_room(p, r, tail, need))
		return shm_full(s, slot);
	p->full_since = 0;
	for (off = 0; off < total; off += seg) {
		size_t len = total - off < seg ? total - off : seg;
		struct shm_rec h = shm_rec_of(s, pkt, len, src_port, 0);
		uint8_t *d = shm_rec_place(r, rb, &tail, len);

		memcpy(d, &h, sizeof(h));
		shm_gather(d + SHM_REC_HDR, pkt->iov, pkt->iovcnt, off, len);
	}
	s->st->tx++;	/* a datagram or a run of them, as the wire's tx_packets count */
	atomic_store_explicit(&r->tail, tail, memory_order_release);
	shm_touch(s, slot);
	pkt->status = 0;
	return 1;
}

static void shm_doorbell(struct braid_udp_shm *s, struct shm_seg *p)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(p->port),
				  .sin_addr.s_addr = htonl(p->ip) };

	if (atomic_load_explicit(&p->hdr->armed, memory_order_relaxed) &&
	    atomic_exchange(&p->hdr->armed, 0)) {
		(void)sendto(s->doorbell_fd, NULL, 0, MSG_DONTWAIT, (struct sockaddr *)&to, sizeof(to));
		s->st->doorbells++;
	}
}

void udp_shm_tx_done(struct braid_udp_shm *s)
{
	int i;

	s->now = 0;
	if (!s->ntouched && !s->touched_over)
		return;
	/* our tails before their armed words (they store armed, then read tails) */
	atomic_thread_fence(memory_order_seq_cst);
	if (s->touched_over) {
		for (i = 0; i < s->npeers; i++)
			if (s->peers[i].used)
				shm_doorbell(s, &s->peers[i]);
	} else {
		for (i = 0; i < s->ntouched; i++)
			if (s->peers[s->touched[i]].used)
				shm_doorbell(s, &s->peers[s->touched[i]]);
	}
	s->ntouched = 0;
	s->touched_over = false;
}

/* ---- receiving ---- */

/* a datagram in one of our rings, as its record says */
struct shm_dgram {
	struct shm_rec h;
	const uint8_t *bytes;	/* the bytes in the ring: all of it, or a lent one's head */
	size_t copied;		/* their count */
	size_t len;		/* the datagram's */
	struct shm_lent lent;	/* SHM_REC_LENT: the rest, in the sender's memory */
	uint32_t path;		/* the socket of ours its dst_port names */
	bool msg;		/* SHM_REC_MSG: a message handed whole, not a datagram */
};

/* the path (socket) of ours whose port is @dst_port (network order); -1: none of ours */
static int shm_path_of(const struct braid_udp_shm *s, uint16_t dst_port)
{
	for (int i = 0; i < s->nports; i++)
		if (dst_port == htons(s->ports[i]))
			return i;
	return -1;
}

/*
 * The next datagram of our ring @k into *@g (false: none). Wrap marks are
 * passed; bytes that make no sense empty the ring: among them a datagram
 * to a port that is none of ours (no socket of ours would have had it).
 */
static bool shm_next(struct braid_udp_shm *s, uint32_t k, struct shm_dgram *g)
{
	struct shm_ring *r = shm_ring_at(s->self.hdr, k, s->ring_bytes);
	uint32_t rb = s->ring_bytes;
	uint8_t *d = shm_ring_data(r);
	int path;

	for (;;) {
		uint64_t head = s->head[k];
		uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
		uint64_t avail = tail - head;
		size_t pos = head & (rb - 1);

		if (!avail)
			return false;
		/* (a head another process's tail left out of step with 16 may sit
		 * closer to the end than a record's header: none is read there) */
		if (avail > rb || (avail & (SHM_ALIGN - 1)) || pos > rb - SHM_REC_HDR)
			goto bad;
		memcpy(&g->h, d + pos, sizeof(g->h));
		if (g->h.len == SHM_WRAP) {
			if (!pos || avail < rb - pos)
				goto bad;
			s->head[k] = head + (rb - pos);
			atomic_store_explicit(&r->head, s->head[k], memory_order_release);
			continue;
		}
		if (g->h.len > UINT16_MAX || shm_rec_bytes(g->h.len) > avail ||
		    pos + shm_rec_bytes(g->h.len) > rb)
			goto bad;
		path = shm_path_of(s, g->h.dst_port);
		if (path < 0)
			goto bad;
		g->path = (uint32_t)path;
		g->bytes = d + pos + SHM_REC_HDR;
		g->copied = g->len = g->h.len;
		g->msg = g->h.flags & SHM_REC_MSG;
		if (g->msg && (g->h.flags != SHM_REC_MSG || path != 0))
			goto bad;	/* (to the home port only, and nothing else) */
		if (g->h.flags & SHM_REC_LENT) {
			if (g->h.len < sizeof(g->lent))
				goto bad;
			memcpy(&g->lent, g->bytes, sizeof(g->lent));
			if (g->lent.head != g->h.len - sizeof(g->lent) ||
			    (uint64_t)g->lent.head + g->lent.len > UINT16_MAX || !g->lent.pid)
				goto bad;
			g->bytes += sizeof(g->lent);
			g->copied = g->lent.head;
			g->len = g->copied + g->lent.len;
		}
		return true;
bad:
		s->st->bad++;
		s->head[k] = tail;
		atomic_store_explicit(&r->head, tail, memory_order_release);
		return false;
	}
}

/* consume ring @k's record */
static void shm_advance(struct braid_udp_shm *s, uint32_t k, const struct shm_dgram *g)
{
	struct shm_ring *r = shm_ring_at(s->self.hdr, k, s->ring_bytes);

	s->head[k] += shm_rec_bytes(g->h.len);
	atomic_store_explicit(&r->head, s->head[k], memory_order_release);
}

/* @g's sender as the kernel would give it, and what its ports say about it */
static void shm_from(struct braid_udp_shm *s, const struct shm_dgram *g, struct braid_pkt *pkt)
{
	const struct shm_rec *h = &g->h;
	uint32_t ip = ntohl(h->src_ip);
	uint16_t port = ntohs(h->src_port);
	struct shm_learn_ent *l;

	memset(&pkt->addr, 0, sizeof(pkt->addr));
	pkt->addr.sin_family = AF_INET;
	pkt->addr.sin_addr.s_addr = h->src_ip;
	pkt->addr.sin_port = h->src_port;
	pkt->path = g->path;
	pkt->flags = 0;
	/* a lent payload: when it was written (one host, one clock), so that the
	 * engine can tell one that waited too long (protocol.md §4.2) */
	pkt->rx_ns = (h->flags & SHM_REC_LENT) ? g->lent.ns : 0;
	pkt->gso_size = 0;
	/* a reply to this route goes to the sender's ring, found by its home port */
	l = shm_learn_at(s, ip, port);
	if (l->ip != ip || l->port != port || l->home != ntohs(h->src_home))
		*l = (struct shm_learn_ent){ .ip = ip, .port = port, .home = ntohs(h->src_home) };
}

/*
 * @g's bytes from @off on into @iov (as many as it holds, up to the
 * datagram's end). A lent payload is read from its sender's memory; a read
 * the kernel refuses (no right to read another process: ptrace rules) tells
 * local peers to lend us nothing more. Return: the bytes copied, or -1 when
 * the read failed (the datagram is lost: its sender resends it, copied).
 */
static ssize_t shm_copy(struct braid_udp_shm *s, const struct shm_dgram *g, size_t off,
			const struct iovec *iov, int iovcnt)
{
	struct iovec local[64], remote;
	size_t done = 0, want;
	int i, nl = 0;
	ssize_t got;

	for (i = 0; i < iovcnt && off + done < g->len; i++) {
		size_t l = iov[i].iov_len, at = off + done, inring;

		if (l > g->len - at)
			l = g->len - at;
		inring = at < g->copied ? g->copied - at : 0;
		if (inring > l)
			inring = l;
		memcpy(iov[i].iov_base, g->bytes + at, inring);
		if (l > inring) {
			if (nl == (int)(sizeof(local) / sizeof(local[0])))
				break;
			local[nl++] = (struct iovec){ (uint8_t *)iov[i].iov_base + inring, l - inring };
		}
		done += l;
	}
	if (!nl)
		return (ssize_t)done;
	/* the lent bytes: one read into every piece */
	want = 0;
	for (i = 0; i < nl; i++)
		want += local[i].iov_len;
	remote.iov_base = (void *)(uintptr_t)(g->lent.addr + (off + done - want - g->copied));
	remote.iov_len = want;
	got = process_vm_readv((pid_t)g->lent.pid, local, (unsigned long)nl, &remote, 1, 0);
	if (got != (ssize_t)want) {
		/* (a short read, part of it unmapped, leaves errno as it was) */
		if (got < 0 && errno == EPERM && !s->nocma) {
			s->nocma = true;
			atomic_store(&s->self.hdr->nocma, 1);
		}
		s->st->dropped++;
		return -1;
	}
	s->st->read_lent++;
	return (ssize_t)done;
}

/* @g into @pkt's buffers (what does not fit: truncated); false: lost */
static bool shm_deliver(struct braid_udp_shm *s, const struct shm_dgram *g, struct braid_pkt *pkt)
{
	ssize_t got = shm_copy(s, g, 0, pkt->iov, pkt->iovcnt);

	if (got < 0)
		return false;
	pkt->len = g->len;
	if ((size_t)got < g->len)
		pkt->flags |= BRAID_PKT_TRUNC;
	return true;
}

/* a receive starts: no peek stands, no scan is known, and we are not asleep */
static void shm_rx_begin(struct braid_udp_shm *s)
{
	s->peeked = -1;
	s->msg_at_valid = false;
	if (atomic_load_explicit(&s->self.hdr->armed, memory_order_relaxed))
		atomic_store_explicit(&s->self.hdr->armed, 0, memory_order_relaxed);
}

/* tell our senders whether we take messages whole (§7.4), when it changed */
static void shm_say_nomsg(struct braid_udp_shm *s, bool refuse)
{
	if (atomic_load_explicit(&s->self.hdr->nomsg, memory_order_relaxed) != refuse)
		atomic_store_explicit(&s->self.hdr->nomsg, refuse, memory_order_relaxed);
}

int udp_shm_rx(struct braid_udp_shm *s, struct braid_pkt *pkts, int n)
{
	uint32_t w, j, words = (s->rings + 63) / 64, start = s->rr;
	int got = 0;

	shm_rx_begin(s);
	for (j = 0; j < words && got < n; j++) {
		uint64_t bits;

		w = (start / 64 + j) % words;
		s->msg_at[w] = 0;
		bits = atomic_load_explicit(&s->self.hdr->active[w], memory_order_acquire);
		if (bits && !shm_self_rings(s))
			break;
		while (bits && got < n) {
			uint32_t k = w * 64 + (uint32_t)__builtin_ctzll(bits);
			struct shm_dgram g;
			bool next;

			bits &= bits - 1;
			if (k >= s->rings) {
				bits = 0;	/* (no such ring) */
				break;
			}
			if (shm_ring_empty(s, k))
				continue;
			/* (a message handed whole stops its ring: udp_shm_rx_msgs takes it) */
			while ((next = got < n && shm_next(s, k, &g)) && !g.msg) {
				shm_from(s, &g, &pkts[got]);
				if (shm_deliver(s, &g, &pkts[got]))
					got++;
				shm_advance(s, k, &g);
			}
			if (next)
				s->msg_at[w] |= 1ULL << (k % 64);
			s->rr = k + 1 < s->rings ? k + 1 : 0;
		}
		if (bits)
			break;	/* (the burst is full: the rest of this word was not looked at) */
	}
	/* every ring looked at: udp_shm_rx_msgs needs look only where a message was */
	s->msg_at_valid = j == words && got < n;
	s->st->rx += (uint64_t)got;
	return got;
}

bool udp_shm_idle(struct braid_udp_shm *s, bool refuse)
{
	uint32_t words = (s->rings + 63) / 64;

	for (uint32_t w = 0; w < words; w++) {
		uint64_t bits = atomic_load_explicit(&s->self.hdr->active[w], memory_order_acquire);

		if (bits && s->self.bytes != s->seg_bytes)
			return false;	/* (udp_shm_rx maps them) */
		while (bits) {
			uint32_t k = w * 64 + (uint32_t)__builtin_ctzll(bits);

			bits &= bits - 1;
			if (k < s->rings && !shm_ring_empty(s, k))
				return false;
		}
	}
	/* what an empty udp_shm_rx and udp_shm_rx_msgs leave */
	shm_rx_begin(s);
	shm_say_nomsg(s, refuse);
	return true;
}

/* the first of our rings with a datagram (@msgs: or a message record); -1: none */
static int shm_first(struct braid_udp_shm *s, struct shm_dgram *g, bool msgs)
{
	uint32_t words = (s->rings + 63) / 64;

	for (uint32_t w = 0; w < words; w++) {
		uint64_t bits = atomic_load_explicit(&s->self.hdr->active[w], memory_order_acquire);

		if (bits && !shm_self_rings(s))
			return -1;
		while (bits) {
			uint32_t k = w * 64 + (uint32_t)__builtin_ctzll(bits);

			bits &= bits - 1;
			if (k >= s->rings)
				break;
			if (!shm_ring_empty(s, k) && shm_next(s, k, g) && (msgs || !g->msg))
				return (int)k;
		}
	}
	return -1;
}

size_t udp_shm_peek(struct braid_udp_shm *s, void *buf, size_t cap, struct sockaddr_in *from,
		    uint64_t *rx_ns)
{
	struct braid_pkt pkt;
	struct shm_dgram g;
	struct iovec iov;
	size_t shown;
	int k;

	s->peeked = -1;
	for (;;) {
		k = shm_first(s, &g, false);
		if (k < 0)
			return 0;
		/* (each datagram's own: one lost before it shows as many bytes) */
		shown = cap < g.len ? cap : g.len;
		iov = (struct iovec){ buf, shown };
		if (shm_copy(s, &g, 0, &iov, 1) >= 0)
			break;
		shm_advance(s, (uint32_t)k, &g);	/* lost: the next */
	}
	/* the bytes shown, as many as a peek keeps, are the ones rx_home takes */
	s->peek_cap = shown < SHM_PEEK_MAX ? shown : SHM_PEEK_MAX;
	memcpy(s->peek_bytes, buf, s->peek_cap);
	shm_from(s, &g, &pkt);
	*from = pkt.addr;
	*rx_ns = pkt.rx_ns;
	s->peeked = k;
	s->peek_len = g.len;
	return g.len;
}

bool udp_shm_peeked(const struct braid_udp_shm *s)
{
	return s->peeked >= 0;
}

int udp_shm_take(struct braid_udp_shm *s, struct braid_pkt *pkt)
{
	uint32_t k = (uint32_t)s->peeked;
	struct iovec rest[BRAID_WIRE_IOV_MAX];
	struct shm_dgram g;
	size_t done = 0, skip = s->peek_cap;
	int i, nr = 0;
	ssize_t got;

	s->peeked = -1;
	if (!shm_next(s, k, &g) || g.msg)
		return 0;
	shm_from(s, &g, pkt);
	/* the sender may have written over it since the peek: the bytes the peek
	 * saw (which placed the rest) must be the ones taken, or it is dropped */
	if (g.len != s->peek_len ||
	    memcmp(g.bytes, s->peek_bytes, g.copied < s->peek_cap ? g.copied : s->peek_cap)) {
		shm_advance(s, k, &g);
		s->st->bad++;
		return 0;
	}
	/* the peeked bytes from the copy the peek kept, the rest from the datagram */
	for (i = 0; i < pkt->iovcnt; i++) {
		size_t l = pkt->iov[i].iov_len, from_peek = skip > done ? skip - done : 0;

		if (from_peek > l)
			from_peek = l;
		if (from_peek)
			memcpy(pkt->iov[i].iov_base, s->peek_bytes + done, from_peek);
		if (l > from_peek)
			rest[nr++] = (struct iovec){ (uint8_t *)pkt->iov[i].iov_base + from_peek,
						     l - from_peek };
		done += l;
	}
	got = shm_copy(s, &g, skip, rest, nr);
	shm_advance(s, k, &g);
	if (got < 0)
		return 0;
	pkt->len = g.len;
	/* (buffers shorter than the peek hold less than it saw) */
	if ((done < skip ? done : skip) + (size_t)got < g.len)
		pkt->flags |= BRAID_PKT_TRUNC;
	s->st->rx++;
	return 1;
}

bool udp_shm_arm(struct braid_udp_shm *s)
{
	struct shm_dgram g;

	atomic_store(&s->self.hdr->armed, 1);	/* seq_cst: before the rings are read */
	if (shm_first(s, &g, true) >= 0) {
		atomic_store_explicit(&s->self.hdr->armed, 0, memory_order_relaxed);
		return true;
	}
	return false;
}

int udp_shm_rx_msgs(struct braid_udp_shm *s,
		    int (*fn)(void *ctx, uint32_t ip, uint16_t port, const void *rec, size_t len),
		    void *ctx, int max, bool refuse, bool *more)
{
	uint32_t words = (s->rings + 63) / 64;
	int got = 0;
	bool valid;

	shm_say_nomsg(s, refuse);
	if (max <= 0)
		return 0;
	s->peeked = -1;
	valid = s->msg_at_valid;
	s->msg_at_valid = false;
	for (uint32_t w = 0; w < words && got < max; w++) {
		uint64_t bits = valid ? s->msg_at[w] :
			atomic_load_explicit(&s->self.hdr->active[w], memory_order_acquire);

		if (!valid && bits && !shm_self_rings(s))
			break;
		while (bits && got < max) {
			uint32_t k = w * 64 + (uint32_t)__builtin_ctzll(bits);
			struct shm_dgram g;
			int took = 0;
			bool next;

			bits &= bits - 1;
			if (k >= s->rings)
				break;
			if (shm_ring_empty(s, k))
				continue;
			while ((next = got < max && shm_next(s, k, &g)) && g.msg) {
				if (fn(ctx, ntohl(g.h.src_ip), ntohs(g.h.src_home), g.bytes, g.len) < 0)
					break;	/* left where it is: the next call hands it again */
				shm_advance(s, k, &g);
				got++;
				took++;
			}
			if (more && took && next && !g.msg)
				*more = true;	/* (datagrams behind what was taken) */
		}
	}
	s->st->rx += (uint64_t)got;
	s->st->rx_msgs += (uint64_t)got;
	return got;
}
