/* SPDX-License-Identifier: BSD-2-Clause */
/* test_eq.c: braid event queues (fi_eq(3)): write/read/peek, error entries, blocking reads, wait fds. */
#include "prov_test.h"

#include <poll.h>

struct eq_fix {
	struct pt_dom d;
	struct fid_eq *eq;
};

static void eq_open(struct eq_fix *f, enum fi_wait_obj wait_obj, size_t size)
{
	struct fi_eq_attr attr = { .wait_obj = wait_obj, .flags = FI_WRITE, .size = size };
	int ret;

	pt_dom_open(&f->d);
	ret = fi_eq_open(f->d.fabric, &attr, &f->eq, NULL);
	cr_assert_eq(ret, 0, "fi_eq_open = %d", ret);
}

static void eq_close(struct eq_fix *f)
{
	cr_expect_eq(fi_close(&f->eq->fid), 0);
	pt_dom_close(&f->d);
}

static void eq_write(struct eq_fix *f, uint32_t event, uint64_t data, void *ctx)
{
	struct fi_eq_entry ev = { .fid = &f->d.fabric->fid, .context = ctx, .data = data };

	cr_assert_eq(fi_eq_write(f->eq, event, &ev, sizeof(ev), 0), (ssize_t)sizeof(ev));
}

Test(fi_eq_open, wait_none)
{
	struct eq_fix f;

	eq_open(&f, FI_WAIT_NONE, 0);
	cr_expect_eq(f.eq->fid.fclass, FI_CLASS_EQ);
	eq_close(&f);
}

Test(fi_eq_read, empty)
{
	struct eq_fix f;
	struct fi_eq_entry ev;
	struct fi_eq_err_entry err;
	uint32_t event;

	eq_open(&f, FI_WAIT_NONE, 0);
	cr_expect_eq(fi_eq_read(f.eq, &event, &ev, sizeof(ev), 0), -FI_EAGAIN);
	memset(&err, 0, sizeof(err));
	cr_expect_eq(fi_eq_readerr(f.eq, &err, 0), -FI_EAGAIN);
	eq_close(&f);
}

/* fi_eq(3): "The number of bytes successfully read from the EQ is returned". */
Test(fi_eq_read, write_then_read)
{
	struct eq_fix f;
	struct fi_eq_entry ev;
	uint32_t event = 0;
	int ctx;

	eq_open(&f, FI_WAIT_NONE, 0);
	eq_write(&f, FI_NOTIFY, 42, &ctx);
	memset(&ev, 0, sizeof(ev));
	cr_expect_eq(fi_eq_read(f.eq, &event, &ev, sizeof(ev), 0), (ssize_t)sizeof(ev));
	cr_expect_eq(event, FI_NOTIFY);
	cr_expect_eq(ev.data, 42);
	cr_expect_eq(ev.context, &ctx);
	cr_expect_eq(ev.fid, &f.d.fabric->fid);
	cr_expect_eq(fi_eq_read(f.eq, &event, &ev, sizeof(ev), 0), -FI_EAGAIN);
	eq_close(&f);
}

Test(fi_eq_read, fifo_order)
{
	struct eq_fix f;
	struct fi_eq_entry ev;
	uint32_t event;
	uint64_t i;

	eq_open(&f, FI_WAIT_NONE, 0);
	for (i = 0; i < 5; i++)
		eq_write(&f, FI_NOTIFY, i, NULL);
	for (i = 0; i < 5; i++) {
		cr_assert_eq(fi_eq_read(f.eq, &event, &ev, sizeof(ev), 0), (ssize_t)sizeof(ev));
		cr_expect_eq(ev.data, i);
	}
	eq_close(&f);
}

/* fi_eq(3): "The FI_PEEK flag may be used to indicate that event data should be read from
 * the EQ without being consumed." */
Test(fi_eq_read, peek)
{
	struct eq_fix f;
	struct fi_eq_entry ev;
	uint32_t event = 0;

	eq_open(&f, FI_WAIT_NONE, 0);
	eq_write(&f, FI_NOTIFY, 7, NULL);
	memset(&ev, 0, sizeof(ev));
	cr_expect_eq(fi_eq_read(f.eq, &event, &ev, sizeof(ev), FI_PEEK), (ssize_t)sizeof(ev));
	cr_expect_eq(ev.data, 7);
	cr_expect_eq(event, FI_NOTIFY);
	memset(&ev, 0, sizeof(ev));
	cr_expect_eq(fi_eq_read(f.eq, &event, &ev, sizeof(ev), FI_PEEK), (ssize_t)sizeof(ev));
	cr_expect_eq(ev.data, 7);
	memset(&ev, 0, sizeof(ev));
	cr_expect_eq(fi_eq_read(f.eq, &event, &ev, sizeof(ev), 0), (ssize_t)sizeof(ev));
	cr_expect_eq(ev.data, 7);
	cr_expect_eq(fi_eq_read(f.eq, &event, &ev, sizeof(ev), 0), -FI_EAGAIN);
	eq_close(&f);
}

Test(fi_eq_read, too_small)
{
	struct eq_fix f;
	struct fi_eq_entry ev;
	uint32_t event;
	char small[4];

	eq_open(&f, FI_WAIT_NONE, 0);
	eq_write(&f, FI_NOTIFY, 9, NULL);
	cr_expect_eq(fi_eq_read(f.eq, &event, small, sizeof(small), 0), -FI_ETOOSMALL);
	/* nothing was consumed */
	cr_expect_eq(fi_eq_read(f.eq, &event, &ev, sizeof(ev), 0), (ssize_t)sizeof(ev));
	cr_expect_eq(ev.data, 9);
	eq_close(&f);
}

/* An error entry (from an FI_EVENT AV insertion that fails) makes fi_eq_read return
 * -FI_EAVAIL until fi_eq_readerr takes it. */
Test(fi_eq_readerr, error_entry)
{
	struct eq_fix f;
	struct fi_av_attr attr = { .type = FI_AV_TABLE, .flags = FI_EVENT };
	struct sockaddr_in bad = pt_sin("127.0.0.1", 0);
	struct fi_eq_err_entry err;
	struct fi_eq_entry ev;
	struct fid_av *av;
	uint32_t event;
	fi_addr_t fa;
	int ctx;
	ssize_t ret;

	eq_open(&f, FI_WAIT_NONE, 0);
	cr_assert_eq(fi_av_open(f.d.domain, &attr, &av, NULL), 0);
	cr_assert_eq(fi_av_bind(av, &f.eq->fid, 0), 0);
	cr_assert_eq(fi_av_insert(av, &bad, 1, &fa, 0, &ctx), 0);
	cr_expect_eq(fi_eq_read(f.eq, &event, &ev, sizeof(ev), 0), -FI_EAVAIL);
	cr_expect_eq(fi_eq_read(f.eq, &event, &ev, sizeof(ev), 0), -FI_EAVAIL,
		     "fi_eq_read consumed the error entry");
	memset(&err, 0, sizeof(err));
	ret = fi_eq_readerr(f.eq, &err, 0);
	cr_expect_eq(ret, (ssize_t)sizeof(err), "fi_eq_readerr = %zd", ret);
	cr_expect_eq(err.fid, &av->fid);
	cr_expect_eq(err.context, &ctx);
	cr_expect_gt(err.err, 0);
	cr_expect_not_null(fi_eq_strerror(f.eq, err.prov_errno, err.err_data, NULL, 0));
	/* then the completion event with 0 inserted */
	cr_expect_eq(fi_eq_read(f.eq, &event, &ev, sizeof(ev), 0), (ssize_t)sizeof(ev));
	cr_expect_eq(event, FI_AV_COMPLETE);
	cr_expect_eq(ev.data, 0);
	cr_expect_eq(fi_close(&av->fid), 0);
	eq_close(&f);
}

Test(fi_eq_sread, timeout, .timeout = 20)
{
	struct eq_fix f;
	struct fi_eq_entry ev;
	uint32_t event;

	eq_open(&f, FI_WAIT_UNSPEC, 0);
	cr_expect_eq(fi_eq_sread(f.eq, &event, &ev, sizeof(ev), 100, 0), -FI_EAGAIN);
	eq_close(&f);
}

Test(fi_eq_sread, timeout_wait_fd, .timeout = 20)
{
	struct eq_fix f;
	struct fi_eq_entry ev;
	uint32_t event;

	eq_open(&f, FI_WAIT_FD, 0);
	cr_expect_eq(fi_eq_sread(f.eq, &event, &ev, sizeof(ev), 100, 0), -FI_EAGAIN);
	eq_close(&f);
}

Test(fi_eq_sread, returns_queued_event, .timeout = 20)
{
	struct eq_fix f;
	struct fi_eq_entry ev;
	uint32_t event = 0;

	eq_open(&f, FI_WAIT_UNSPEC, 0);
	eq_write(&f, FI_NOTIFY, 3, NULL);
	cr_expect_eq(fi_eq_sread(f.eq, &event, &ev, sizeof(ev), 1000, 0), (ssize_t)sizeof(ev));
	cr_expect_eq(event, FI_NOTIFY);
	cr_expect_eq(ev.data, 3);
	eq_close(&f);
}

/* fi_eq(3): "It is invalid for applications to call this function if the EQ has been
 * configured with a wait object of FI_WAIT_NONE". */
Test(fi_eq_sread, wait_none, .timeout = 20)
{
	struct eq_fix f;
	struct fi_eq_entry ev;
	uint32_t event;
	ssize_t ret;

	eq_open(&f, FI_WAIT_NONE, 0);
	ret = fi_eq_sread(f.eq, &event, &ev, sizeof(ev), 100, 0);
	cr_expect(ret < 0 && ret != -FI_EAGAIN, "fi_eq_sread on FI_WAIT_NONE = %zd", ret);
	eq_close(&f);
}

struct sread_arg {
	struct fid_eq *eq;
	ssize_t ret;
	struct fi_eq_entry ev;
};

static void *sread_thread(void *p)
{
	struct sread_arg *a = p;
	uint32_t event;

	a->ret = fi_eq_sread(a->eq, &event, &a->ev, sizeof(a->ev), -1, 0);
	return NULL;
}

static void kick_write(void *eq)
{
	static bool written;
	struct fi_eq_entry ev = { .data = 11 };

	if (!written) {
		written = true;
		cr_expect_eq(fi_eq_write(eq, FI_NOTIFY, &ev, sizeof(ev), 0), (ssize_t)sizeof(ev));
	}
}

Test(fi_eq_sread, wakes_on_write, .timeout = 30)
{
	struct eq_fix f;
	struct sread_arg a;
	pthread_t t;

	eq_open(&f, FI_WAIT_UNSPEC, 0);
	memset(&a, 0, sizeof(a));
	a.eq = f.eq;
	cr_assert_eq(pthread_create(&t, NULL, sread_thread, &a), 0);
	cr_assert(pt_join_within(t, kick_write, f.eq), "fi_eq_sread(-1) not woken by fi_eq_write");
	cr_expect_eq(a.ret, (ssize_t)sizeof(a.ev));
	cr_expect_eq(a.ev.data, 11);
	eq_close(&f);
}

/* FI_WAIT_FD: the fd is usable in poll(2) and becomes readable when an event is queued. */
Test(fi_control, eq_getwait_fd)
{
	struct eq_fix f;
	struct pollfd pfd = { .fd = -1, .events = POLLIN };
	struct fi_eq_entry ev;
	enum fi_wait_obj obj = FI_WAIT_NONE;
	uint32_t event;

	eq_open(&f, FI_WAIT_FD, 0);
	/* what ofi_rxm asks before it waits on the EQ with its CQ */
	cr_assert_eq(fi_control(&f.eq->fid, FI_GETWAITOBJ, &obj), 0);
	cr_assert_eq(obj, FI_WAIT_FD);
	cr_assert_eq(fi_control(&f.eq->fid, FI_GETWAIT, &pfd.fd), 0);
	cr_assert_geq(pfd.fd, 0);
	cr_expect_eq(poll(&pfd, 1, 0), 0, "fd readable on an empty EQ");
	eq_write(&f, FI_NOTIFY, 1, NULL);
	cr_expect_eq(poll(&pfd, 1, 1000), 1, "fd not readable with an event queued");
	cr_expect_eq(fi_eq_read(f.eq, &event, &ev, sizeof(ev), 0), (ssize_t)sizeof(ev));
	eq_close(&f);
}
