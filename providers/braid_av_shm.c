/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_av_shm.c: the POSIX shared-memory segment behind a named AV: its name, making it, opening it, checking it, and the locks that say who uses it. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "braid.h"

/* how long an open or a writer waits for a lock another process holds */
#define AV_SHM_WAIT_NS	1000000000LL

static long long shm_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* a pause between tries for a lock, growing from 10 us to 1 ms */
static void shm_backoff(long *ns)
{
	struct timespec ts = { .tv_nsec = *ns };

	nanosleep(&ts, NULL);
	if (*ns < 1000000)
		*ns *= 2;
}

/* the shm_open(3) name of AV @name; -FI_EINVAL for a name braid does not take */
static int shm_path(char *buf, size_t len, const char *name)
{
	size_t i, n = strnlen(name, BRAID_AV_NAME_MAX + 1);

	if (n == 0 || n > BRAID_AV_NAME_MAX)
		return -FI_EINVAL;
	for (i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return -FI_EINVAL;
	}
	if ((size_t)snprintf(buf, len, BRAID_AV_SHM_FMT, (unsigned int)getuid(), name) >= len)
		return -FI_EINVAL;
	return 0;
}

/* Try to lock byte @byte (F_RDLCK, F_WRLCK or F_UNLCK) without waiting: 0, -FI_EAGAIN or the error. */
static int shm_lock_try(int fd, short type, off_t byte)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = byte, .l_len = 1 };

	if (!fcntl(fd, F_OFD_SETLK, &fl))
		return 0;
	return errno == EAGAIN || errno == EACCES ? -FI_EAGAIN : -errno;
}

/* Another open file description holds a lock on the users' byte. */
static bool shm_others_use(int fd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET,
			    .l_start = BRAID_AV_SHM_LOCK_USERS, .l_len = 1 };

	if (fcntl(fd, F_OFD_GETLK, &fl))
		return true;	/* cannot tell: take it as used */
	return fl.l_type != F_UNLCK;
}

/* Its name was removed (by its creator's close) since we opened it. */
static bool shm_unlinked(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && st.st_nlink == 0;
}

/*
 * Map @fd as it is and check the header before believing any of it.
 * -FI_EAGAIN: it is empty, not made yet (its maker is between creating the
 * name and locking it, and another opener holds the lock meanwhile).
 */
static int shm_attach(struct braid_av_shm *s, int fd)
{
	const struct braid_av_shm_hdr *h;
	struct stat st;
	uint64_t cap;
	void *p;

	if (fstat(fd, &st))
		return -errno;
	if (st.st_size == 0)
		return -FI_EAGAIN;
	if (st.st_size < (off_t)sizeof(*h) ||
	    st.st_size > (off_t)braid_av_shm_size(BRAID_AV_SHM_MAX_CAP))
		return -FI_EIO;
	p = mmap(NULL, (size_t)st.st_size, s->read_only ? PROT_READ : PROT_READ | PROT_WRITE,
		 MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	h = p;
	cap = __atomic_load_n(&h->cap, __ATOMIC_RELAXED);
	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != BRAID_AV_SHM_MAGIC ||
	    h->version != BRAID_AV_SHM_VERSION || h->hdr_size != sizeof(*h) ||
	    h->entry_size != sizeof(struct braid_av_shm_entry) ||
	    cap == 0 || cap > BRAID_AV_SHM_MAX_CAP ||
	    (size_t)st.st_size != braid_av_shm_size(cap)) {
		munmap(p, (size_t)st.st_size);
		return -FI_EIO;
	}
	s->hdr = p;
	s->size = (size_t)st.st_size;
	s->cap = cap;
	return 0;
}

/* Holding the users' byte exclusively: (re)make the segment with @cap free entries, then share the byte. */
static int shm_make(struct braid_av_shm *s, int fd, uint64_t cap)
{
	size_t size = braid_av_shm_size(cap);
	struct braid_av_shm_hdr *h;
	uint64_t *map;
	uint64_t i;
	int ret;

	/* whatever was there (a segment its users left) goes */
	if (ftruncate(fd, 0) || ftruncate(fd, (off_t)size))
		return -errno;
	/* the pages now, so that a full /dev/shm is an error here, not a SIGBUS later */
	ret = posix_fallocate(fd, 0, (off_t)size);
	if (ret)
		return ret == ENOSPC ? -FI_ENOMEM : -ret;
	h = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED)
		return -errno;
	h->version = BRAID_AV_SHM_VERSION;
	h->hdr_size = sizeof(*h);
	h->entry_size = sizeof(struct braid_av_shm_entry);
	h->cap = cap;
	map = (uint64_t *)((char *)h + BRAID_AV_SHM_MAP_OFF);
	for (i = 0; i < cap; i++)
		map[i] = FI_ADDR_NOTAVAIL;
	__atomic_store_n(&h->magic, BRAID_AV_SHM_MAGIC, __ATOMIC_RELEASE);
	/* a conversion: no one can take the byte in between */
	ret = shm_lock_try(fd, F_RDLCK, BRAID_AV_SHM_LOCK_USERS);
	if (ret) {
		munmap(h, size);
		return ret;
	}
	s->hdr = h;
	s->size = size;
	s->cap = cap;
	s->creator = true;
	return 0;
}

/*
 * One try at opening the segment for writing: make it if no one uses it
 * (new, or left by processes that are gone), else join it. -FI_EAGAIN:
 * try again (another process is making it, or it went away meanwhile).
 */
static int shm_open_writer(struct braid_av_shm *s, uint64_t cap)
{
	int fd, ret;

	fd = shm_open(s->path, O_RDWR | O_CREAT, 0600);
	if (fd < 0)
		return -errno;
	ret = shm_lock_try(fd, F_WRLCK, BRAID_AV_SHM_LOCK_USERS);
	if (!ret) {
		ret = shm_unlinked(fd) ? -FI_EAGAIN : shm_make(s, fd, cap);
		if (ret && ret != -FI_EAGAIN)
			shm_unlink(s->path);	/* no one uses it: leave nothing half made */
	} else if (ret == -FI_EAGAIN) {
		ret = shm_lock_try(fd, F_RDLCK, BRAID_AV_SHM_LOCK_USERS);
		if (!ret)
			ret = shm_unlinked(fd) ? -FI_EAGAIN : shm_attach(s, fd);
	}
	if (ret) {
		close(fd);
		return ret;
	}
	s->fd = fd;
	return 0;
}

/* One try at opening an existing segment for reading; -FI_EAGAIN: try again. */
static int shm_open_reader(struct braid_av_shm *s)
{
	int fd, ret;

	fd = shm_open(s->path, O_RDONLY, 0);
	if (fd < 0)
		return errno == ENOENT ? -FI_ENOENT : -errno;
	ret = shm_lock_try(fd, F_RDLCK, BRAID_AV_SHM_LOCK_USERS);
	if (!ret && shm_unlinked(fd))
		ret = -FI_EAGAIN;
	else if (!ret && !shm_others_use(fd))
		ret = -FI_ENOENT;	/* left by processes that are gone: no AV of that name exists */
	if (!ret) {
		ret = shm_attach(s, fd);
		if (ret == -FI_EAGAIN)
			ret = -FI_ENOENT;	/* not made yet: there is no such AV so far */
	}
	if (ret) {
		close(fd);
		return ret;
	}
	s->fd = fd;
	return 0;
}

int braid_av_shm_open(struct braid_av_shm *s, const char *name, bool read_only, size_t count)
{
	long long deadline = shm_now_ns() + AV_SHM_WAIT_NS;
	long pause = 10000;
	int ret;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->read_only = read_only;
	ret = shm_path(s->path, sizeof(s->path), name);
	if (ret)
		return ret;
	if (!read_only && count > BRAID_AV_SHM_MAX_CAP)
		return -FI_EINVAL;
	for (;;) {
		ret = read_only ? shm_open_reader(s) :
		      shm_open_writer(s, count ? count : BRAID_AV_SHM_DEFAULT_CAP);
		if (ret != -FI_EAGAIN)
			break;
		if (shm_now_ns() > deadline)
			return -FI_EBUSY;
		shm_backoff(&pause);
	}
	if (ret)
		return ret;
	s->map = (uint64_t *)((char *)s->hdr + BRAID_AV_SHM_MAP_OFF);
	s->ent = (struct braid_av_shm_entry *)((char *)s->hdr + braid_av_shm_ent_off(s->cap));
	pthread_mutex_init(&s->write_lock, NULL);
	return 0;
}

/* Remove the name if it is still this segment's (not one made since under the same name). */
static void shm_unlink_own(const struct braid_av_shm *s)
{
	struct stat mine, named;
	int fd = shm_open(s->path, O_RDONLY, 0);

	if (fd < 0)
		return;
	if (!fstat(s->fd, &mine) && !fstat(fd, &named) &&
	    mine.st_dev == named.st_dev && mine.st_ino == named.st_ino)
		shm_unlink(s->path);
	close(fd);
}

void braid_av_shm_close(struct braid_av_shm *s)
{
	if (s->hdr) {
		munmap(s->hdr, s->size);
		pthread_mutex_destroy(&s->write_lock);
	}
	if (s->fd >= 0) {
		if (s->creator)
			shm_unlink_own(s);
		close(s->fd);	/* drops its locks */
	}
	s->hdr = NULL;
	s->fd = -1;
}

/* the process's threads first (an OFD lock does not tell them apart), then the other processes */
int braid_av_shm_lock(struct braid_av_shm *s)
{
	long long deadline = shm_now_ns() + AV_SHM_WAIT_NS;
	long pause = 10000;
	int ret;

	pthread_mutex_lock(&s->write_lock);
	while ((ret = shm_lock_try(s->fd, F_WRLCK, BRAID_AV_SHM_LOCK_WRITE)) == -FI_EAGAIN) {
		if (shm_now_ns() > deadline) {
			ret = -FI_EBUSY;
			break;
		}
		shm_backoff(&pause);
	}
	if (ret)
		pthread_mutex_unlock(&s->write_lock);
	return ret;
}

void braid_av_shm_unlock(struct braid_av_shm *s)
{
	(void)shm_lock_try(s->fd, F_UNLCK, BRAID_AV_SHM_LOCK_WRITE);
	pthread_mutex_unlock(&s->write_lock);
}

int braid_av_shm_state(const struct braid_av_shm *s, uint64_t *count, uint64_t *removed)
{
	*removed = __atomic_load_n(&s->hdr->removed, __ATOMIC_ACQUIRE);
	*count = __atomic_load_n(&s->hdr->count, __ATOMIC_ACQUIRE);
	return *count > s->cap ? -FI_EIO : 0;
}

bool braid_av_shm_live(const struct braid_av_shm *s, uint64_t idx)
{
	return __atomic_load_n(&s->map[idx], __ATOMIC_ACQUIRE) == idx;
}

bool braid_av_shm_get(const struct braid_av_shm *s, uint64_t idx, struct sockaddr_in *sin)
{
	const struct braid_av_shm_entry *e = &s->ent[idx];
	uint32_t ip;
	uint16_t port;

	if (!braid_av_shm_live(s, idx))
		return false;
	ip = __atomic_load_n(&e->ip, __ATOMIC_RELAXED);
	port = __atomic_load_n(&e->port, __ATOMIC_RELAXED);
	/* what fi_av_insert would have refused */
	if (ip == htonl(INADDR_ANY) || port == 0)
		return false;
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = ip;
	sin->sin_port = port;
	return true;
}

void braid_av_shm_publish(struct braid_av_shm *s, uint64_t idx, const struct sockaddr_in *sin)
{
	struct braid_av_shm_entry *e = &s->ent[idx];

	__atomic_store_n(&e->ip, sin->sin_addr.s_addr, __ATOMIC_RELAXED);
	__atomic_store_n(&e->port, sin->sin_port, __ATOMIC_RELAXED);
	__atomic_store_n(&s->map[idx], idx, __ATOMIC_RELEASE);
	__atomic_store_n(&s->hdr->count, idx + 1, __ATOMIC_RELEASE);
}

uint64_t braid_av_shm_unpublish(struct braid_av_shm *s, uint64_t idx)
{
	__atomic_store_n(&s->map[idx], FI_ADDR_NOTAVAIL, __ATOMIC_RELEASE);
	return __atomic_add_fetch(&s->hdr->removed, 1, __ATOMIC_RELEASE);
}
