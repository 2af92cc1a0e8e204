/* SPDX-License-Identifier: BSD-2-Clause */
/* test_av_shm.c: named address vectors shared between processes (fi_av(3) name, FI_READ, map_addr; FI_SHARED_AV). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "braid/braid_av_shm.h"
#include "prov_test.h"

/*
 * Every test names its AVs after its own pid (tests run in parallel), and
 * the suite's fini removes whatever segment of those names is left, also
 * after a failed assertion.
 */
#define NAMES_MAX	8
#define PATH_LEN	1024	/* more than any name's path */
static char names[NAMES_MAX][64];
static int n_names;

static const char *av_name(const char *tag)
{
	cr_assert_lt(n_names, NAMES_MAX);
	snprintf(names[n_names], sizeof(names[0]), "braidtest-%d-%s", (int)getpid(), tag);
	return names[n_names++];
}

static void shm_path_of(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, BRAID_AV_SHM_FMT, (unsigned int)getuid(), name);
}

static bool shm_exists(const char *name)
{
	char path[PATH_LEN];
	int fd;

	shm_path_of(name, path, sizeof(path));
	fd = shm_open(path, O_RDONLY, 0);
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

static void unlink_names(void)
{
	char path[PATH_LEN];
	int i;

	for (i = 0; i < n_names; i++) {
		shm_path_of(names[i], path, sizeof(path));
		shm_unlink(path);
	}
	n_names = 0;
}

TestSuite(named_av, .fini = unlink_names);

static int av_open_named(struct fid_domain *domain, const char *name, uint64_t flags,
			 size_t count, enum fi_av_type type, struct fid_av **av, fi_addr_t **map)
{
	struct fi_av_attr attr = { .type = type, .name = name, .flags = flags, .count = count };
	int ret;

	*av = NULL;
	ret = fi_av_open(domain, &attr, av, NULL);
	if (!ret && map)
		*map = attr.map_addr;
	return ret;
}

static struct fid_av *writer_open(struct pt_dom *d, const char *name, size_t count,
				  fi_addr_t **map)
{
	struct fid_av *av;
	int ret = av_open_named(d->domain, name, 0, count, FI_AV_TABLE, &av, map);

	cr_assert_eq(ret, 0, "fi_av_open(%s) = %d (%s)", name, ret, fi_strerror(-ret));
	if (map)
		cr_assert_not_null(*map, "no map_addr");
	return av;
}

static struct fid_av *reader_open(struct pt_dom *d, const char *name, fi_addr_t **map)
{
	struct fid_av *av;
	int ret = av_open_named(d->domain, name, FI_READ, 0, FI_AV_UNSPEC, &av, map);

	cr_assert_eq(ret, 0, "fi_av_open(%s, FI_READ) = %d (%s)", name, ret, fi_strerror(-ret));
	return av;
}

/* @av maps @fa to ip:port */
static bool lookup_is(struct fid_av *av, fi_addr_t fa, const char *ip, uint16_t port)
{
	struct sockaddr_in sin, want = pt_sin(ip, port);
	size_t len = sizeof(sin);

	memset(&sin, 0, sizeof(sin));
	return fi_av_lookup(av, fa, &sin, &len) == 0 && len == sizeof(sin) &&
	       sin.sin_family == AF_INET && sin.sin_addr.s_addr == want.sin_addr.s_addr &&
	       sin.sin_port == want.sin_port;
}

static int lookup_ret(struct fid_av *av, fi_addr_t fa)
{
	struct sockaddr_in sin;
	size_t len = sizeof(sin);

	return fi_av_lookup(av, fa, &sin, &len);
}

/* ---- fi_getinfo ---- */

/* braid's own entry for @type with FI_SHARED_AV asked in the caps, or in the domain's (@in_domain) */
static struct fi_info *getinfo_shared_in(enum fi_ep_type type, bool in_domain)
{
	struct fi_info *hints = pt_hints(type), *list = NULL;
	int ret;

	hints->caps = FI_MSG | (in_domain ? 0 : FI_SHARED_AV);
	hints->domain_attr->caps = in_domain ? FI_SHARED_AV : 0;
	ret = fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &list);
	fi_freeinfo(hints);
	if (ret)
		return NULL;
	return pt_take_plain_braid(list);
}

static struct fi_info *getinfo_shared(enum fi_ep_type type)
{
	return getinfo_shared_in(type, false);
}

Test(named_av, getinfo_reports_shared_av)
{
	enum fi_ep_type types[] = { FI_EP_RDM, FI_EP_DGRAM };
	size_t i;

	for (i = 0; i < 4; i++) {
		struct fi_info *info = getinfo_shared_in(types[i / 2], i % 2);

		cr_assert_not_null(info, "no braid entry for FI_SHARED_AV, type %d", types[i / 2]);
		if (i % 2 == 0)
			cr_expect(info->caps & FI_SHARED_AV, "caps lack FI_SHARED_AV");
		cr_expect(info->domain_attr->caps & FI_SHARED_AV, "domain caps lack FI_SHARED_AV");
		fi_freeinfo(info);
	}
}

Test(named_av, getinfo_msg_has_no_shared_av)
{
	struct fi_info *hints = pt_hints(FI_EP_MSG), *list = NULL, *cur;
	int ret;

	hints->caps = FI_MSG;
	hints->domain_attr->caps = FI_SHARED_AV;
	ret = fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &list);
	fi_freeinfo(hints);
	for (cur = ret ? NULL : list; cur; cur = cur->next)
		cr_expect(!pt_is_plain_braid(cur), "braid's MSG domain offered FI_SHARED_AV");
	fi_freeinfo(list);
	list = NULL;
	hints = pt_hints(FI_EP_MSG);
	hints->caps = FI_MSG | FI_SHARED_AV;
	ret = fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &list);
	fi_freeinfo(hints);
	for (cur = ret ? NULL : list; cur; cur = cur->next)
		cr_expect(!pt_is_plain_braid(cur), "braid's MSG endpoint offered FI_SHARED_AV");
	fi_freeinfo(list);
}

/* ---- one process ---- */

Test(named_av, create_and_reopen_read_only)
{
	const char *name = av_name("reopen");
	struct sockaddr_in sins[3] = {
		pt_sin("127.0.0.1", 5001), pt_sin("127.0.0.2", 5002), pt_sin("10.0.0.3", 5003),
	};
	struct pt_dom d;
	struct fid_av *w, *r;
	fi_addr_t *wmap, *rmap, fa[3], bad = FI_ADDR_NOTAVAIL;
	int i;

	pt_dom_open(&d);
	w = writer_open(&d, name, 8, &wmap);
	cr_expect(shm_exists(name));
	for (i = 0; i < 8; i++)
		cr_expect_eq(wmap[i], FI_ADDR_NOTAVAIL, "map_addr[%d] of a new AV", i);
	cr_assert_eq(fi_av_insert(w, sins, 3, fa, 0, NULL), 3);
	for (i = 0; i < 3; i++) {
		cr_expect_eq(fa[i], (fi_addr_t)i);
		cr_expect_eq(wmap[i], (fi_addr_t)i, "writer map_addr[%d] = %llu", i,
			     (unsigned long long)wmap[i]);
	}
	cr_expect_eq(wmap[3], FI_ADDR_NOTAVAIL);

	r = reader_open(&d, name, &rmap);
	cr_assert_not_null(rmap);
	for (i = 0; i < 3; i++)
		cr_expect_eq(rmap[i], (fi_addr_t)i, "reader map_addr[%d]", i);
	cr_expect(lookup_is(r, 0, "127.0.0.1", 5001));
	cr_expect(lookup_is(r, 1, "127.0.0.2", 5002));
	cr_expect(lookup_is(r, 2, "10.0.0.3", 5003));
	cr_expect_eq(lookup_ret(r, 3), -FI_EINVAL);

	/* read-only: no inserts, no removals, nothing changes */
	cr_expect_eq(fi_av_insert(r, sins, 1, &bad, 0, NULL), -FI_EPERM);
	cr_expect_eq(fi_av_insertsvc(r, "127.0.0.1", "6000", &bad, 0, NULL), -FI_EPERM);
	cr_expect_eq(fi_av_remove(r, fa, 1, 0), -FI_EPERM);
	cr_expect(lookup_is(w, 0, "127.0.0.1", 5001));
	cr_expect_eq(wmap[3], FI_ADDR_NOTAVAIL);

	cr_expect_eq(fi_close(&r->fid), 0);
	cr_expect_eq(fi_close(&w->fid), 0);
	cr_expect(!shm_exists(name), "the creator's close leaves the segment");
	pt_dom_close(&d);
}

static void reader_follows(enum fi_av_type type)
{
	const char *name = av_name("follow");
	struct sockaddr_in a = pt_sin("127.0.0.1", 7001), b = pt_sin("127.0.0.1", 7002);
	struct pt_dom d;
	struct fid_av *w, *r;
	fi_addr_t *rmap, fa, fb, fc;

	pt_dom_open(&d);
	cr_assert_eq(av_open_named(d.domain, name, 0, 4, type, &w, NULL), 0);
	r = reader_open(&d, name, &rmap);
	cr_expect_eq(lookup_ret(r, 0), -FI_EINVAL, "an empty AV");

	cr_assert_eq(fi_av_insert(w, &a, 1, &fa, 0, NULL), 1);
	cr_assert_eq(fi_av_insert(w, &b, 1, &fb, 0, NULL), 1);
	cr_expect_eq(fa, 0);
	cr_expect_eq(fb, 1);
	cr_expect(lookup_is(r, fa, "127.0.0.1", 7001), "the reader sees a later insert");
	cr_expect(lookup_is(r, fb, "127.0.0.1", 7002));
	cr_expect_eq(rmap[1], 1);

	cr_assert_eq(fi_av_remove(w, &fa, 1, 0), 0);
	cr_expect_eq(lookup_ret(r, fa), -FI_EINVAL, "the reader still sees a removed entry");
	cr_expect_eq(rmap[0], FI_ADDR_NOTAVAIL);
	cr_expect(lookup_is(r, fb, "127.0.0.1", 7002));

	/* an index is handed out once, FI_AV_MAP's included */
	cr_assert_eq(fi_av_insert(w, &a, 1, &fc, 0, NULL), 1);
	cr_expect_eq(fc, 2, "re-insert got %llu", (unsigned long long)fc);
	cr_expect(lookup_is(r, fc, "127.0.0.1", 7001));
	cr_expect_eq(lookup_ret(r, 0), -FI_EINVAL);

	cr_expect_eq(fi_close(&r->fid), 0);
	cr_expect_eq(fi_close(&w->fid), 0);
	pt_dom_close(&d);
}

Test(named_av, reader_follows_table)
{
	reader_follows(FI_AV_TABLE);
}

Test(named_av, reader_follows_map)
{
	reader_follows(FI_AV_MAP);
}

Test(named_av, capacity_is_fixed)
{
	const char *name = av_name("cap");
	struct sockaddr_in sins[3] = {
		pt_sin("127.0.0.1", 5001), pt_sin("127.0.0.1", 5002), pt_sin("127.0.0.1", 5003),
	};
	struct pt_dom d;
	struct fid_av *w;
	fi_addr_t fa[3];
	int err[3];

	pt_dom_open(&d);
	w = writer_open(&d, name, 2, NULL);
	cr_expect_eq(fi_av_insert(w, sins, 3, fa, FI_SYNC_ERR, err), 2);
	cr_expect_eq(err[0], 0);
	cr_expect_eq(err[1], 0);
	cr_expect_eq(err[2], FI_ENOSPC);
	cr_expect_eq(fa[2], FI_ADDR_NOTAVAIL);
	/* a removed index is not handed out again: still full */
	cr_assert_eq(fi_av_remove(w, fa, 1, 0), 0);
	cr_expect_eq(fi_av_insert(w, &sins[2], 1, fa, FI_SYNC_ERR, err), 0);
	cr_expect_eq(err[0], FI_ENOSPC);
	cr_expect_eq(fi_close(&w->fid), 0);
	pt_dom_close(&d);
}

Test(named_av, bad_arguments)
{
	char longname[BRAID_AV_NAME_MAX + 2];
	const char *bad[] = { "", "a/b", "with space", "tab\there", "..\n", longname };
	struct pt_dom d;
	struct fid_av *av;
	size_t i;

	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	pt_dom_open(&d);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(av_open_named(d.domain, bad[i], 0, 4, FI_AV_TABLE, &av, NULL), -FI_EINVAL,
			     "name %zu taken", i);
		cr_expect_eq(av_open_named(d.domain, bad[i], FI_READ, 0, FI_AV_TABLE, &av, NULL),
			     -FI_EINVAL, "name %zu taken read-only", i);
	}
	/* fi_av(3): FI_READ needs a name */
	cr_expect_eq(av_open_named(d.domain, NULL, FI_READ, 0, FI_AV_TABLE, &av, NULL), -FI_EINVAL);
	/* more entries than a segment holds */
	cr_expect_eq(av_open_named(d.domain, av_name("huge"), 0, (size_t)BRAID_AV_SHM_MAX_CAP + 1,
				   FI_AV_TABLE, &av, NULL), -FI_EINVAL);
	cr_expect(!shm_exists(names[n_names - 1]));
	pt_dom_close(&d);
}

Test(named_av, read_only_of_missing_name)
{
	const char *name = av_name("missing");
	struct pt_dom d;
	struct fid_av *av;

	pt_dom_open(&d);
	cr_expect_eq(av_open_named(d.domain, name, FI_READ, 0, FI_AV_TABLE, &av, NULL), -FI_ENOENT);
	cr_expect(!shm_exists(name), "a read-only open made a segment");
	pt_dom_close(&d);
}

Test(named_av, reader_outlives_creator)
{
	const char *name = av_name("outlive");
	struct sockaddr_in a = pt_sin("127.0.0.1", 7001);
	struct pt_dom d;
	struct fid_av *w, *r, *w2;
	fi_addr_t fa;

	pt_dom_open(&d);
	w = writer_open(&d, name, 4, NULL);
	cr_assert_eq(fi_av_insert(w, &a, 1, &fa, 0, NULL), 1);
	r = reader_open(&d, name, NULL);
	cr_expect_eq(fi_close(&w->fid), 0);
	cr_expect(!shm_exists(name), "the creator's close removes the name");
	cr_expect(lookup_is(r, fa, "127.0.0.1", 7001), "the reader keeps its mapping");
	/* the name is free again: a new, empty AV */
	w2 = writer_open(&d, name, 4, NULL);
	cr_expect_eq(lookup_ret(w2, 0), -FI_EINVAL);
	cr_expect(lookup_is(r, fa, "127.0.0.1", 7001));
	cr_expect_eq(fi_close(&w2->fid), 0);
	cr_expect_eq(fi_close(&r->fid), 0);
	pt_dom_close(&d);
}

Test(named_av, second_writer_joins)
{
	const char *name = av_name("join");
	struct sockaddr_in a = pt_sin("127.0.0.1", 7001), b = pt_sin("127.0.0.1", 7002);
	struct pt_dom d;
	struct fid_av *w1, *w2;
	fi_addr_t *map2, fa, fb;

	pt_dom_open(&d);
	w1 = writer_open(&d, name, 4, NULL);
	cr_assert_eq(fi_av_insert(w1, &a, 1, &fa, 0, NULL), 1);
	/* fi_av(3): a named AV is created if it does not already exist: this one does */
	w2 = writer_open(&d, name, 64, &map2);
	cr_expect(lookup_is(w2, fa, "127.0.0.1", 7001));
	cr_assert_eq(fi_av_insert(w2, &b, 1, &fb, 0, NULL), 1);
	cr_expect_eq(fb, 1);
	cr_expect(lookup_is(w1, fb, "127.0.0.1", 7002));
	cr_assert_eq(fi_av_remove(w1, &fa, 1, 0), 0);
	cr_expect_eq(lookup_ret(w2, fa), -FI_EINVAL);
	cr_expect_eq(map2[0], FI_ADDR_NOTAVAIL);
	cr_expect_eq(fi_close(&w2->fid), 0);
	cr_expect(shm_exists(name), "only the creator removes the name");
	cr_expect_eq(fi_close(&w1->fid), 0);
	cr_expect(!shm_exists(name));
	pt_dom_close(&d);
}

/* ---- writers at once ---- */

#define CW_THREADS	3
#define CW_EACH		2500	/* more than one batch of the AV's lock */

struct cw_arg {
	struct fid_av *av;
	int t;
	int ret;
};

static void *cw_insert(void *p)
{
	struct cw_arg *a = p;
	struct sockaddr_in *sins = calloc(CW_EACH, sizeof(*sins));
	int i;

	for (i = 0; i < CW_EACH; i++) {
		sins[i].sin_family = AF_INET;
		sins[i].sin_addr.s_addr = htonl(0x0a000000u | ((uint32_t)a->t << 16) | (uint32_t)i);
		sins[i].sin_port = htons(1000);
	}
	a->ret = fi_av_insert(a->av, sins, CW_EACH, NULL, 0, NULL);
	free(sins);
	return NULL;
}

/* Two threads on one open and a third on another open of the name: each address lands at an index of its own. */
Test(named_av, concurrent_writers)
{
	const char *name = av_name("writers");
	struct cw_arg args[CW_THREADS];
	pthread_t th[CW_THREADS];
	static bool seen[CW_THREADS][CW_EACH];
	struct pt_dom d;
	struct fid_av *w1, *w2, *r;
	int i;

	pt_dom_open(&d);
	w1 = writer_open(&d, name, CW_THREADS * CW_EACH, NULL);
	w2 = writer_open(&d, name, 0, NULL);
	for (i = 0; i < CW_THREADS; i++) {
		args[i] = (struct cw_arg){ .av = i < 2 ? w1 : w2, .t = i };
		cr_assert_eq(pthread_create(&th[i], NULL, cw_insert, &args[i]), 0);
	}
	for (i = 0; i < CW_THREADS; i++) {
		cr_assert(pt_join_within(th[i], NULL, NULL), "an insert did not return");
		cr_expect_eq(args[i].ret, CW_EACH, "thread %d inserted %d", i, args[i].ret);
	}
	r = reader_open(&d, name, NULL);
	for (i = 0; i < CW_THREADS * CW_EACH; i++) {
		struct sockaddr_in sin;
		size_t len = sizeof(sin);
		uint32_t ip;

		cr_assert_eq(fi_av_lookup(r, (fi_addr_t)i, &sin, &len), 0, "index %d", i);
		ip = ntohl(sin.sin_addr.s_addr);
		cr_assert_eq(ip >> 24, 10);
		cr_assert_lt((ip >> 16) & 0xff, CW_THREADS);
		cr_assert_lt(ip & 0xffff, CW_EACH);
		cr_assert(!seen[(ip >> 16) & 0xff][ip & 0xffff], "index %d holds an address twice", i);
		seen[(ip >> 16) & 0xff][ip & 0xffff] = true;
	}
	cr_expect_eq(lookup_ret(w2, CW_THREADS * CW_EACH), -FI_EINVAL);
	cr_expect_eq(fi_close(&r->fid), 0);
	cr_expect_eq(fi_close(&w2->fid), 0);
	cr_expect_eq(fi_close(&w1->fid), 0);
	pt_dom_close(&d);
}

/* ---- segments another process made or spoiled ---- */

/*
 * Make segment @name by hand: @size bytes, the header @hdr (NULL: none),
 * and, with @hold, a shared lock on its users' byte as a live user holds.
 * Returns the fd (the lock lasts while it is open).
 */
static int fake_segment(const char *name, size_t size, const struct braid_av_shm_hdr *hdr,
			bool hold)
{
	struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET,
			    .l_start = BRAID_AV_SHM_LOCK_USERS, .l_len = 1 };
	char path[PATH_LEN];
	int fd;

	shm_path_of(name, path, sizeof(path));
	fd = shm_open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0, "shm_open: %s", strerror(errno));
	cr_assert_eq(ftruncate(fd, (off_t)size), 0);
	if (hdr)
		cr_assert_eq(pwrite(fd, hdr, sizeof(*hdr), 0), (ssize_t)sizeof(*hdr));
	if (hold)
		cr_assert_eq(fcntl(fd, F_OFD_SETLK, &fl), 0, "lock: %s", strerror(errno));
	return fd;
}

static struct braid_av_shm_hdr good_hdr(uint64_t cap)
{
	struct braid_av_shm_hdr h = {
		.magic = BRAID_AV_SHM_MAGIC, .version = BRAID_AV_SHM_VERSION,
		.hdr_size = sizeof(h), .entry_size = sizeof(struct braid_av_shm_entry),
		.cap = cap,
	};
	return h;
}

/* A live segment with header @h, @size bytes: readers and writers alike refuse it with -FI_EIO. */
static void expect_refused(const struct braid_av_shm_hdr *h, size_t size, const char *what)
{
	const char *name = av_name("bad");
	struct pt_dom d;
	struct fid_av *av;
	int fd = fake_segment(name, size, h, true);

	pt_dom_open(&d);
	cr_expect_eq(av_open_named(d.domain, name, FI_READ, 0, FI_AV_TABLE, &av, NULL), -FI_EIO,
		     "reader took %s", what);
	cr_expect_eq(av_open_named(d.domain, name, 0, 4, FI_AV_TABLE, &av, NULL), -FI_EIO,
		     "writer took %s", what);
	pt_dom_close(&d);
	close(fd);
	unlink_names();
}

Test(named_av, corrupt_header_refused)
{
	struct braid_av_shm_hdr h;
	size_t size = braid_av_shm_size(4);

	memset(&h, 0xa5, sizeof(h));
	expect_refused(&h, size, "garbage");
	h = good_hdr(4);
	h.magic ^= 1;
	expect_refused(&h, size, "a bad magic");
	h = good_hdr(4);
	h.version = BRAID_AV_SHM_VERSION + 1;
	expect_refused(&h, size, "another version");
	h = good_hdr(4);
	h.entry_size = 16;
	expect_refused(&h, size, "another entry size");
	h = good_hdr(0);
	expect_refused(&h, braid_av_shm_size(0), "no capacity");
	h = good_hdr((uint64_t)BRAID_AV_SHM_MAX_CAP * 4);
	expect_refused(&h, size, "a huge capacity");
	h = good_hdr(4);
	expect_refused(&h, braid_av_shm_size(4) - 8, "a short segment");
	expect_refused(&h, braid_av_shm_size(5), "a long segment");
	expect_refused(NULL, 16, "a segment shorter than its header");
}

Test(named_av, writer_garbage_after_open)
{
	const char *name = av_name("garbage");
	struct sockaddr_in sins[2] = { pt_sin("127.0.0.1", 7001), pt_sin("127.0.0.1", 7002) };
	struct braid_av_shm_hdr *h;
	struct braid_av_shm_entry *ent;
	struct pt_dom d;
	struct fid_av *w, *r;
	fi_addr_t *map, fa[2];
	char path[PATH_LEN];
	int fd;

	pt_dom_open(&d);
	w = writer_open(&d, name, 4, NULL);
	cr_assert_eq(fi_av_insert(w, sins, 1, fa, 0, NULL), 1);
	r = reader_open(&d, name, NULL);
	cr_expect(lookup_is(r, 0, "127.0.0.1", 7001));

	/* another process scribbles on the segment */
	shm_path_of(name, path, sizeof(path));
	fd = shm_open(path, O_RDWR, 0);
	cr_assert_geq(fd, 0);
	h = mmap(NULL, braid_av_shm_size(4), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(h, MAP_FAILED);
	map = (fi_addr_t *)((char *)h + BRAID_AV_SHM_MAP_OFF);
	ent = (struct braid_av_shm_entry *)((char *)h + braid_av_shm_ent_off(4));

	/* entries that do not say their own index, or hold no address: holes */
	map[1] = 12345;
	map[2] = 2;
	ent[2].ip = 0;
	ent[2].port = htons(9);
	h->count = 3;
	cr_expect_eq(lookup_ret(r, 1), -FI_EINVAL);
	cr_expect_eq(lookup_ret(r, 2), -FI_EINVAL);
	cr_expect(lookup_is(r, 0, "127.0.0.1", 7001), "a good entry still serves");

	/* a count past the capacity, or going back: errors, the copy stays */
	h->count = 1000;
	cr_expect_eq(fi_av_insert(w, &sins[1], 1, fa, 0, NULL), -FI_EIO);
	cr_expect(lookup_is(r, 0, "127.0.0.1", 7001));
	h->count = 0;
	cr_expect_eq(fi_av_remove(w, fa, 1, 0), -FI_EIO);
	cr_expect(lookup_is(w, 0, "127.0.0.1", 7001));

	munmap(h, braid_av_shm_size(4));
	close(fd);
	cr_expect_eq(fi_close(&r->fid), 0);
	cr_expect_eq(fi_close(&w->fid), 0);
	pt_dom_close(&d);
}

/* Random bytes over random parts of a live segment, again and again: every call returns one of its codes. */
Test(named_av, random_garbage)
{
	const char *name = av_name("random");
	struct sockaddr_in a = pt_sin("127.0.0.1", 7001);
	size_t size = braid_av_shm_size(64);
	unsigned int seed = 12345;
	struct pt_dom d;
	struct fid_av *w, *r, *r2;
	fi_addr_t *rmap, fa;
	char path[PATH_LEN];
	uint8_t *seg;
	int fd, i, j, ret;

	pt_dom_open(&d);
	w = writer_open(&d, name, 64, NULL);
	for (i = 0; i < 8; i++)
		cr_assert_eq(fi_av_insert(w, &a, 1, &fa, 0, NULL), 1);
	r = reader_open(&d, name, &rmap);
	shm_path_of(name, path, sizeof(path));
	fd = shm_open(path, O_RDWR, 0);
	cr_assert_geq(fd, 0);
	seg = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	cr_assert_neq(seg, MAP_FAILED);
	for (i = 0; i < 500; i++) {
		/* the header's counts (bytes 24..47) half the time, else anywhere after the magic */
		size_t off = rand_r(&seed) % 2 ? 24 + (size_t)rand_r(&seed) % 24 :
				8 + (size_t)rand_r(&seed) % (size - 8);
		size_t len = 1 + rand_r(&seed) % 16;

		for (j = 0; j < (int)len && off + j < size; j++)
			seg[off + j] = (uint8_t)rand_r(&seed);
		for (j = 0; j < 4; j++) {
			fi_addr_t idx = rand_r(&seed) % 80;

			ret = lookup_ret(r, idx);
			cr_assert(ret == 0 || ret == -FI_EINVAL, "reader lookup = %d", ret);
			ret = lookup_ret(w, idx);
			cr_assert(ret == 0 || ret == -FI_EINVAL, "writer lookup = %d", ret);
		}
		ret = fi_av_insert(w, &a, 1, &fa, 0, NULL);
		cr_assert(ret == 1 || ret == 0 || ret == -FI_EIO, "insert = %d", ret);
		fa = rand_r(&seed) % 80;
		ret = fi_av_remove(w, &fa, 1, 0);
		cr_assert(ret == 0 || ret == -FI_EINVAL || ret == -FI_EIO, "remove = %d", ret);
		(void)rmap[rand_r(&seed) % 64];
	}
	cr_expect_eq(fi_close(&r->fid), 0);
	/* a header of garbage sizes: a new reader is refused */
	memset(seg + 8, 0xff, 40);
	cr_expect_eq(av_open_named(d.domain, name, FI_READ, 0, FI_AV_TABLE, &r2, NULL), -FI_EIO);
	munmap(seg, size);
	close(fd);
	cr_expect_eq(fi_close(&w->fid), 0);
	pt_dom_close(&d);
}

/* An empty segment someone holds: its maker has not made it yet. */
Test(named_av, segment_not_made_yet)
{
	const char *name = av_name("unmade");
	struct pt_dom d;
	struct fid_av *av;
	int fd = fake_segment(name, 0, NULL, true);

	pt_dom_open(&d);
	cr_expect_eq(av_open_named(d.domain, name, FI_READ, 0, FI_AV_TABLE, &av, NULL), -FI_ENOENT);
	/* a writer waits for the holder to let go, a bounded time */
	cr_expect_eq(av_open_named(d.domain, name, 0, 4, FI_AV_TABLE, &av, NULL), -FI_EBUSY);
	close(fd);
	/* let go: the writer makes it */
	cr_assert_eq(av_open_named(d.domain, name, 0, 4, FI_AV_TABLE, &av, NULL), 0);
	cr_expect_eq(lookup_ret(av, 0), -FI_EINVAL);
	cr_expect_eq(fi_close(&av->fid), 0);
	pt_dom_close(&d);
}

Test(named_av, segment_left_by_dead_processes)
{
	const char *name = av_name("stale");
	struct braid_av_shm_hdr h = good_hdr(4);
	struct sockaddr_in a = pt_sin("127.0.0.1", 7001);
	struct pt_dom d;
	struct fid_av *av;
	fi_addr_t fa;
	int fd;

	/* no one holds it: what its users left when they died */
	fd = fake_segment(name, braid_av_shm_size(4), &h, false);
	close(fd);
	pt_dom_open(&d);
	cr_expect_eq(av_open_named(d.domain, name, FI_READ, 0, FI_AV_TABLE, &av, NULL), -FI_ENOENT);
	/* garbage too: a writer makes it anew */
	fd = fake_segment(name, 100, NULL, false);
	close(fd);
	av = writer_open(&d, name, 2, NULL);
	cr_expect_eq(lookup_ret(av, 0), -FI_EINVAL);
	cr_assert_eq(fi_av_insert(av, &a, 1, &fa, 0, NULL), 1);
	cr_expect_eq(fa, 0);
	cr_expect_eq(fi_close(&av->fid), 0);
	cr_expect(!shm_exists(name));
	pt_dom_close(&d);
}

/* ---- FI_SOURCE through a reader ---- */

Test(named_av, source_through_reader)
{
	const char *name = av_name("source");
	struct sockaddr_in other = pt_sin("127.0.0.9", 7009), rx_name;
	struct pt_dom d;
	struct pt_ep s;
	struct fid_av *w, *r;
	struct fid_ep *rx;
	struct fid_cq *rx_cq;
	struct fi_cq_msg_entry e;
	fi_addr_t src, fa[3];
	size_t len = sizeof(rx_name);
	char buf[64], msg[] = "from s";
	int i;

	pt_dom_open_caps(&d, FI_MSG | FI_SOURCE);
	w = writer_open(&d, name, 8, NULL);
	r = reader_open(&d, name, NULL);
	cr_assert_eq(fi_endpoint(d.domain, d.info, &rx, NULL), 0);
	rx_cq = pt_cq_open(d.domain, FI_CQ_FORMAT_MSG, FI_WAIT_NONE);
	cr_assert_eq(fi_ep_bind(rx, &r->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(rx, &rx_cq->fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(fi_enable(rx), 0);
	cr_assert_eq(fi_getname(&rx->fid, &rx_name, &len), 0);

	pt_ep_create(&d, &s, NULL);
	pt_ep_bind_cqs(&d, &s, FI_CQ_FORMAT_MSG, FI_WAIT_NONE, 0, 0);
	pt_ep_enable(&s);
	cr_assert_eq(fi_av_insert(s.av, &rx_name, 1, &s.peer, 0, NULL), 1);

	/* the writer learns s's address after the reader opened: index 1 */
	cr_assert_eq(fi_av_insert(w, &other, 1, &fa[0], 0, NULL), 1);
	cr_assert_eq(fi_av_insert(w, &s.name, 1, &fa[1], 0, NULL), 1);
	cr_assert_eq(fa[1], 1);
	for (i = 0; i < 3; i++) {
		if (i == 1)	/* the writer takes it out ... */
			cr_assert_eq(fi_av_remove(w, &fa[1], 1, 0), 0);
		if (i == 2)	/* ... and puts it back at a new index */
			cr_assert_eq(fi_av_insert(w, &s.name, 1, &fa[2], 0, NULL), 1);
		cr_assert_eq(fi_recv(rx, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, NULL), 0);
		cr_assert_eq(pt_send(&s, msg, sizeof(msg), NULL), 0);
		cr_assert_eq(pt_cq_poll(rx_cq, &e, &src, s.tx_cq), 1, "message %d", i);
		cr_expect_str_eq(buf, msg);
		if (i == 0)
			cr_expect_eq(src, fa[1], "FI_SOURCE %llu", (unsigned long long)src);
		if (i == 1)
			cr_expect_eq(src, FI_ADDR_NOTAVAIL, "FI_SOURCE of a removed address");
		if (i == 2)
			cr_expect_eq(src, 2, "FI_SOURCE %llu", (unsigned long long)src);
	}

	cr_expect_eq(fi_close(&rx->fid), 0);
	cr_expect_eq(fi_close(&rx_cq->fid), 0);
	pt_ep_close(&s);
	cr_expect_eq(fi_close(&r->fid), 0);
	cr_expect_eq(fi_close(&w->fid), 0);
	pt_dom_close(&d);
}

/* ---- another process ---- */

/*
 * The parent and a child forked before either touched libfabric, with a
 * pipe each way: a step is one byte written by one side, read by the
 * other (a read that finds the other side gone fails the step).
 */
struct forked {
	pid_t pid;
	int to_child[2], to_parent[2];
};

static void fork_child(struct forked *f)
{
	cr_assert_eq(pipe(f->to_child), 0);
	cr_assert_eq(pipe(f->to_parent), 0);
	f->pid = fork();
	cr_assert_geq(f->pid, 0, "fork: %s", strerror(errno));
	if (f->pid == 0) {
		close(f->to_child[1]);
		close(f->to_parent[0]);
	} else {
		close(f->to_child[0]);
		close(f->to_parent[1]);
	}
}

static bool step_send(int fd)
{
	char c = 1;

	return write(fd, &c, 1) == 1;
}

static bool step_wait(int fd)
{
	char c;

	return read(fd, &c, 1) == 1;
}

/* The child's exit status, waiting at most @ms while @progress (if any) keeps being read. */
static int child_status(struct forked *f, struct fid_cq *progress, long ms)
{
	long deadline = pt_now_ms() + ms;
	int status;
	pid_t ret;

	close(f->to_child[1]);
	do {
		if (progress)
			(void)fi_cq_read(progress, NULL, 0);
		ret = waitpid(f->pid, &status, WNOHANG);
	} while (ret == 0 && pt_now_ms() < deadline);
	if (ret == 0) {
		kill(f->pid, SIGKILL);
		waitpid(f->pid, &status, 0);
		return -1;
	}
	close(f->to_parent[0]);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* the child's own fabric and domain (no Criterion assertions in the child: exit codes) */
static int child_domain(struct fid_fabric **fabric, struct fid_domain **domain,
			struct fi_info **info, enum fi_ep_type type, uint64_t caps)
{
	struct fi_info *hints = fi_allocinfo(), *list = NULL, *cur;
	int ret;

	if (!hints)
		return -1;
	hints->fabric_attr->prov_name = strdup("braid");
	hints->ep_attr->type = type;
	hints->caps = caps;
	ret = fi_getinfo(PT_VERSION, "127.0.0.1", "0", FI_SOURCE, hints, &list);
	fi_freeinfo(hints);
	if (ret)
		return -1;
	for (cur = list; cur && !pt_is_plain_braid(cur); cur = cur->next)
		;
	*info = cur ? fi_dupinfo(cur) : NULL;
	fi_freeinfo(list);
	if (!*info || fi_fabric((*info)->fabric_attr, fabric, NULL) ||
	    fi_domain(*fabric, *info, domain, NULL))
		return -1;
	return 0;
}

/* The child of forked_reader: checks the parent's AV step by step; exit code 0 or the failed check. */
static int forked_reader_child(struct forked *f, const char *name)
{
	struct sockaddr_in a = pt_sin("127.0.0.1", 7001);
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fi_info *info;
	struct fid_av *r;
	fi_addr_t *map, fa;

	if (child_domain(&fabric, &domain, &info, FI_EP_RDM, FI_MSG | FI_SHARED_AV))
		return 2;
	if (!step_wait(f->to_child[0]))		/* the parent inserted two */
		return 3;
	if (av_open_named(domain, name, FI_READ, 0, FI_AV_UNSPEC, &r, &map) || !map)
		return 4;
	if (map[0] != 0 || map[1] != 1 || map[2] != FI_ADDR_NOTAVAIL)
		return 5;
	if (!lookup_is(r, 0, "127.0.0.1", 7001) || !lookup_is(r, 1, "127.0.0.2", 7002))
		return 6;
	if (fi_av_insert(r, &a, 1, &fa, 0, NULL) != -FI_EPERM ||
	    fi_av_remove(r, map, 1, 0) != -FI_EPERM)
		return 7;
	if (!step_send(f->to_parent[1]) || !step_wait(f->to_child[0]))	/* remove 0, insert 2 */
		return 8;
	if (lookup_ret(r, 0) != -FI_EINVAL || map[0] != FI_ADDR_NOTAVAIL)
		return 9;
	if (map[2] != 2 || !lookup_is(r, 2, "127.0.0.3", 7003) || !lookup_is(r, 1, "127.0.0.2", 7002))
		return 10;
	if (fi_close(&r->fid) || fi_close(&domain->fid) || fi_close(&fabric->fid))
		return 11;
	fi_freeinfo(info);
	return 0;
}

Test(named_av, forked_reader)
{
	const char *name = av_name("fork");
	struct sockaddr_in sins[2] = { pt_sin("127.0.0.1", 7001), pt_sin("127.0.0.2", 7002) };
	struct sockaddr_in c = pt_sin("127.0.0.3", 7003);
	struct forked f;
	struct pt_dom d;
	struct fid_av *w;
	fi_addr_t fa[2], fc;

	fork_child(&f);
	if (f.pid == 0)
		_exit(forked_reader_child(&f, name));
	pt_dom_open(&d);
	w = writer_open(&d, name, 8, NULL);
	cr_assert_eq(fi_av_insert(w, sins, 2, fa, 0, NULL), 2);
	cr_assert(step_send(f.to_child[1]));
	if (!step_wait(f.to_parent[0]))
		cr_assert_fail("the child stopped early (exit %d)", child_status(&f, NULL, 5000));
	cr_assert_eq(fi_av_remove(w, fa, 1, 0), 0);
	cr_assert_eq(fi_av_insert(w, &c, 1, &fc, 0, NULL), 1);
	cr_assert_eq(fc, 2);
	cr_assert(step_send(f.to_child[1]));
	cr_expect_eq(child_status(&f, NULL, 10000), 0, "the child's check failed");
	cr_expect_eq(fi_close(&w->fid), 0);
	cr_expect(!shm_exists(name));
	pt_dom_close(&d);
}

/* The child of forked_send: sends to map_addr[0] of the parent's AV through its own read-only open. */
static int forked_send_child(struct forked *f, const char *name, const char *msg)
{
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fi_info *info;
	struct fid_av *r;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fi_cq_entry e;
	fi_addr_t *map;
	long deadline;
	ssize_t ret;

	if (child_domain(&fabric, &domain, &info, FI_EP_RDM, FI_MSG | FI_SHARED_AV))
		return 2;
	if (!step_wait(f->to_child[0]))		/* the parent's AV holds its endpoint */
		return 3;
	if (av_open_named(domain, name, FI_READ, 0, FI_AV_UNSPEC, &r, &map) || !map)
		return 4;
	if (fi_endpoint(domain, info, &ep, NULL) || fi_cq_open(domain, &cq_attr, &cq, NULL) ||
	    fi_ep_bind(ep, &r->fid, 0) || fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) ||
	    fi_enable(ep))
		return 5;
	deadline = pt_now_ms() + 10000;
	do {
		ret = fi_send(ep, msg, strlen(msg) + 1, NULL, map[0], NULL);
		if (ret == -FI_EAGAIN)
			(void)fi_cq_read(cq, NULL, 0);
	} while (ret == -FI_EAGAIN && pt_now_ms() < deadline);
	if (ret)
		return 6;
	do {
		ret = fi_cq_read(cq, &e, 1);
	} while (ret == -FI_EAGAIN && pt_now_ms() < deadline);
	if (ret != 1)
		return 7;
	if (fi_close(&ep->fid) || fi_close(&cq->fid) || fi_close(&r->fid) ||
	    fi_close(&domain->fid) || fi_close(&fabric->fid))
		return 8;
	fi_freeinfo(info);
	return 0;
}

Test(named_av, forked_send_through_reader)
{
	const char *name = av_name("send");
	const char *msg = "hello from the child";
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_MSG };
	struct fi_cq_msg_entry e;
	struct sockaddr_in me;
	struct forked f;
	struct pt_dom d;
	struct fid_av *w;
	struct fid_ep *ep;
	struct fid_cq *cq;
	size_t len = sizeof(me);
	fi_addr_t fa;
	char buf[64] = "";
	long deadline;
	ssize_t ret;

	fork_child(&f);
	if (f.pid == 0)
		_exit(forked_send_child(&f, name, msg));
	memset(&d, 0, sizeof(d));
	d.info = getinfo_shared(FI_EP_RDM);
	cr_assert_not_null(d.info);
	cr_assert_eq(fi_fabric(d.info->fabric_attr, &d.fabric, NULL), 0);
	cr_assert_eq(fi_domain(d.fabric, d.info, &d.domain, NULL), 0);
	w = writer_open(&d, name, 4, NULL);
	cr_assert_eq(fi_endpoint(d.domain, d.info, &ep, NULL), 0);
	cr_assert_eq(fi_cq_open(d.domain, &cq_attr, &cq, NULL), 0);
	cr_assert_eq(fi_ep_bind(ep, &w->fid, 0), 0);
	cr_assert_eq(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV), 0);
	cr_assert_eq(fi_enable(ep), 0);
	cr_assert_eq(fi_getname(&ep->fid, &me, &len), 0);
	cr_assert_eq(fi_av_insert(w, &me, 1, &fa, 0, NULL), 1);
	cr_assert_eq(fa, 0);
	cr_assert_eq(fi_recv(ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, NULL), 0);
	cr_assert(step_send(f.to_child[1]));

	deadline = pt_now_ms() + 10000;
	do {
		ret = fi_cq_read(cq, &e, 1);
	} while (ret == -FI_EAGAIN && pt_now_ms() < deadline);
	cr_expect_eq(ret, 1, "no message from the child (fi_cq_read %zd)", ret);
	cr_expect(e.flags & FI_RECV);
	cr_expect_str_eq(buf, msg);
	/* the endpoint keeps progressing (acknowledging) until the child is done */
	cr_expect_eq(child_status(&f, cq, 10000), 0, "the child's send failed");

	cr_expect_eq(fi_close(&ep->fid), 0);
	cr_expect_eq(fi_close(&cq->fid), 0);
	cr_expect_eq(fi_close(&w->fid), 0);
	cr_expect(!shm_exists(name));
	pt_dom_close(&d);
}
