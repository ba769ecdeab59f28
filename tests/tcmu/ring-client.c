// SPDX-License-Identifier: GPL-2.0-only
/*
 * ring-client: plays the kernel's side of TCMU rings against a running
 * tcmu-shim, through the TCMU client (client/tcmu: a memfd region, two
 * eventfds, the socket) and proto/tcmu's CDBs; --attach-version alone
 * attaches by hand, to send a mailbox version the client never would.
 * Used by tests/tcmu/test-ring.sh and by benchmarks.
 *
 *   ring-client --socket PATH --check
 *       INQUIRY, READ CAPACITY(16), patterns written and read back at
 *       depth 16, UNMAP then zeroes, an out-of-range READ, two rings at
 *       once, a ring detached by closing its socket. Exit 0 when all hold.
 *   ring-client --socket PATH --check-rw
 *       the same patterns and range check only, for any store.
 *   ring-client --socket PATH --check-scatter
 *       writes and reads through a 256 KiB data area (scattered blocks,
 *       a full area), each read checked against the last write queued.
 *   ring-client --socket PATH --check-shared
 *       three clients on the device's shared ring, two reading in turn,
 *       the third idle: each has a wake tag of its own, and the host
 *       never wakes the idle one. Exit 0 when all hold.
 *   ring-client --socket PATH --check-wake BURSTS
 *       bursts of reads, the last sent as the host's ring thread goes to
 *       sleep, with pauses for it to sleep: no wake-up is lost to the
 *       doorbell (tcmu_doorbell.h), which both skips kicks and sends
 *       some; reads of the device's first 16 MiB, with no set-up
 *       command. Exit 0 when all hold.
 *   ring-client --socket PATH --attach-version N
 *       attach a ring whose mailbox says version N; print the reply's
 *       status and message (exit 0 when the shim refused it).
 *   ring-client --socket PATH --bench SECONDS [--qd N] [--bs BYTES]
 *               [--rw randread|randwrite]
 *       random I/O for SECONDS, then "iops N" and "mib_s N". It reaps
 *       without sleeping, as fio drives the engine (getevents with no
 *       minimum while it can queue), so that it is the ring's limit.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "tcmu_attach.h"
#include "tcmu_cdb_build.h"
#include "tcmu_client.h"
#include "tcmu_client_state.h"
#include "tcmu_ring.h"

#define RING_SIZE	(1u << 20)
#define DATA_SIZE	(64u << 20)
/* --check-scatter: a data area so small that blocks are handed out scattered */
#define SMALL_DATA	(256u << 10)

static uint64_t data_size = DATA_SIZE;
#define MAX_CMDS	256u
#define MAX_DATA	(1u << 20)

typedef void (*done_fn)(const struct tcmu_completion *d);

static int failures;
/* Where the completions of the reap() under way go. */
static done_fn reaping;

/* The client's completer: hands each completion to reap()'s fn. */
static void dispatch(void *arg, const struct tcmu_completion *d)
{
	if (reaping)
		reaping(d);
}

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "ring-client: FAIL %s:%d: ",	\
				__func__, __LINE__);			\
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
			failures++;					\
		}							\
	} while (0)

static void die(const char *what)
{
	fprintf(stderr, "ring-client: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void die_err(const char *what, int err)
{
	errno = err;
	die(what);
}

/* Attach a ring of data_size bytes; exits when the shim refuses it. */
static struct tcmu_client *attach_as(const char *path, const char *label,
				     bool shared)
{
	struct tcmu_client_cfg cfg = {
		.shared = shared,
		.ring_size = RING_SIZE,
		.data_size = data_size,
		.max_cmds = MAX_CMDS,
		.max_data = data_size < MAX_DATA ? data_size : MAX_DATA,
		.timeout_s = 10,
		.complete = dispatch,
	};
	struct tcmu_client *c;
	char err[512];

	c = tcmu_client_attach(path, &cfg, label, err, sizeof(err));
	if (!c) {
		fprintf(stderr, "ring-client: %s\n", err);
		exit(1);
	}
	return c;
}

static struct tcmu_client *ring_attach(const char *path, const char *label)
{
	return attach_as(path, label, false);
}

static void kick(struct tcmu_client *c)
{
	int ret = tcmu_client_submit(c);

	if (ret)
		die_err("kick", -ret);
}

/* Wait for completions, hand each to @fn: how many finished. */
static int reap(struct tcmu_client *c, done_fn fn)
{
	static const struct timespec limit = { .tv_sec = 10 };
	int n;

	reaping = fn;
	n = tcmu_client_reap(c, 1, &limit);
	reaping = NULL;
	if (n < 0)
		die_err("reap", -n);
	if (!n) {
		fprintf(stderr, "ring-client: no completion within 10 s\n");
		exit(1);
	}
	return n;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Spin on cmd_tail until something completes: a sleep in poll() per
 * batch would make the probe slower than the engine it bounds.
 */
static int reap_spin(struct tcmu_client *c, done_fn fn)
{
	double give_up = 0;
	int n;

	for (;;) {
		reaping = fn;
		n = tcmu_client_reap(c, 0, NULL);
		reaping = NULL;
		if (n < 0)
			die_err("reap", -n);
		if (n)
			return n;
		if (!tcmu_client_inflight(c))
			return 0;
		if (!give_up)
			give_up = now_s() + 10;
		else if (now_s() > give_up)
			return reap(c, fn);
	}
}

/* A command's outcome lands where its user pointer says. */
static void store_done(const struct tcmu_completion *d)
{
	*(struct tcmu_completion *)d->user = *d;
}

/* One command, start to end. */
static struct tcmu_completion exec(struct tcmu_client *c, const uint8_t *cdb,
				    uint32_t cdb_len, uint32_t len,
				    const void *wbuf, void *rbuf)
{
	struct tcmu_completion d;
	int ret;

	ret = tcmu_client_exec(c, cdb, cdb_len, len, wbuf, rbuf, &d);
	if (ret)
		die_err("exec", -ret);
	return d;
}

static void sense_of(const struct tcmu_completion *d, struct tcmu_sense *s)
{
	if (d->has_sense)
		*s = d->sense;
	else
		memset(s, 0, sizeof(*s));
}

/* ---- --check ---- */

static uint64_t capacity(struct tcmu_client *c, struct tcmu_capacity *out)
{
	uint8_t cdb[16], buf[96];
	struct tcmu_capacity cap;
	struct tcmu_inquiry inq;
	struct tcmu_completion d;

	/* 96 bytes asked, 74 answered: a short data-in, with its length. */
	tcmu_cdb_inquiry(cdb, false, 0, 96);
	d = exec(c, cdb, 6, 96, NULL, buf);
	CHECK(d.status == SCSI_STATUS_GOOD, "INQUIRY status %d", d.status);
	CHECK(d.data_len == 74, "INQUIRY read_len %u", d.data_len);
	CHECK(!tcmu_inquiry_std_decode(buf, TCMU_INQUIRY_STD_LEN, &inq, NULL),
	      "INQUIRY data");
	CHECK(!strcmp(inq.vendor, "TORUS") && !strcmp(inq.product, "tcmu-shim"),
	      "INQUIRY names %s %s", inq.vendor, inq.product);
	CHECK(inq.device_type == 0 && inq.cmdque, "INQUIRY type/CMDQUE");

	tcmu_cdb_read_capacity16(cdb, TCMU_READ_CAPACITY_16_LEN);
	d = exec(c, cdb, 16, TCMU_READ_CAPACITY_16_LEN, NULL, buf);
	CHECK(d.status == SCSI_STATUS_GOOD, "READ CAPACITY status");
	CHECK(!tcmu_read_capacity16_decode(buf, TCMU_READ_CAPACITY_16_LEN,
					   &cap, NULL),
	      "READ CAPACITY data");
	CHECK(cap.block_len == 512, "block length %u", cap.block_len);
	*out = cap;
	printf("capacity %llu blocks of %u\n",
	       (unsigned long long)cap.last_lba + 1, cap.block_len);
	return cap.last_lba + 1;
}

static void pattern(uint8_t *p, size_t len, uint64_t lba, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(lba * 31 + i * 7 + seed);
}

static void drain(struct tcmu_client *c, done_fn fn)
{
	while (tcmu_client_inflight(c))
		reap(c, fn);
}

/* Write blocks of 4 KiB, 16 at a time, then read them back 16 at a time. */
static void check_depth(struct tcmu_client *c, uint64_t nr_blocks,
			unsigned int seed)
{
	static uint8_t wbuf[16][4096], rbuf[16][4096];
	struct tcmu_completion d[16];
	uint8_t cdb[16];
	uint64_t lba;
	int i, ret;

	for (i = 0; i < 16; i++) {
		lba = (i * 97 % 64) * 8;
		pattern(wbuf[i], 4096, lba, seed);
		tcmu_cdb_write16(cdb, lba, 8, i % 4 == 0);
		ret = tcmu_client_queue(c, cdb, 16, 4096, wbuf[i], NULL, &d[i]);
		CHECK(!ret, "queue write %d", i);
	}
	kick(c);
	drain(c, store_done);
	for (i = 0; i < 16; i++)
		CHECK(d[i].status == SCSI_STATUS_GOOD,
		      "write %d status %d", i, d[i].status);
	for (i = 0; i < 16; i++) {
		lba = (i * 97 % 64) * 8;
		tcmu_cdb_read16(cdb, lba, 8);
		ret = tcmu_client_queue(c, cdb, 16, 4096, NULL, rbuf[i], &d[i]);
		CHECK(!ret, "queue read %d", i);
	}
	kick(c);
	drain(c, store_done);
	for (i = 0; i < 16; i++) {
		CHECK(d[i].status == SCSI_STATUS_GOOD, "read %d status", i);
		CHECK(!memcmp(rbuf[i], wbuf[i], 4096),
		      "read %d does not match what was written", i);
	}
	(void)nr_blocks;
}

static void check_unmap(struct tcmu_client *c)
{
	uint8_t cdb[16], param[TCMU_UNMAP_PARAM_LEN], buf[4096], zero[4096];
	struct tcmu_completion d;

	memset(zero, 0, sizeof(zero));
	pattern(buf, sizeof(buf), 1000, 1);
	tcmu_cdb_write16(cdb, 1000, 8, false);
	exec(c, cdb, 16, 4096, buf, NULL);
	tcmu_unmap_param(param, sizeof(param), 1000, 8);
	tcmu_cdb_unmap(cdb, sizeof(param));
	d = exec(c, cdb, 10, sizeof(param), param, NULL);
	CHECK(d.status == SCSI_STATUS_GOOD, "UNMAP status %d", d.status);
	tcmu_cdb_read16(cdb, 1000, 8);
	d = exec(c, cdb, 16, 4096, NULL, buf);
	CHECK(d.status == SCSI_STATUS_GOOD && !memcmp(buf, zero, 4096),
	      "unmapped blocks do not read as zeroes");
}

static void check_out_of_range(struct tcmu_client *c, uint64_t nr_blocks)
{
	uint8_t cdb[16], buf[4096];
	struct tcmu_completion d;
	struct tcmu_sense s;
	char msg[128];

	tcmu_cdb_read16(cdb, nr_blocks - 4, 8);
	d = exec(c, cdb, 16, 4096, NULL, buf);
	sense_of(&d, &s);
	CHECK(d.status == SCSI_STATUS_CHECK_CONDITION &&
	      s.key == SCSI_SK_ILLEGAL_REQUEST &&
	      s.asc == SCSI_ASC_LBA_OUT_OF_RANGE,
	      "out-of-range READ: status %d %s", d.status,
	      tcmu_sense_msg(&s, msg, sizeof(msg)));
	printf("out-of-range READ: %s\n", tcmu_sense_msg(&s, msg, sizeof(msg)));
}

/* Queue, reaping while the ring or the data area is full. */
static int queue_wait(struct tcmu_client *c, const uint8_t *cdb,
		      uint32_t cdb_len, uint32_t len, const void *wbuf,
		      void *rbuf, void *user, done_fn fn)
{
	int ret;

	while ((ret = tcmu_client_queue(c, cdb, cdb_len, len, wbuf, rbuf,
					user)) == -EBUSY) {
		kick(c);
		reap(c, fn);
	}
	return ret;
}

/* What a read queued by --check-scatter must find: region and write. */
#define SCATTER_REGIONS	64

struct scatter_read {
	uint8_t *buf;
	uint32_t len, region, seed;
	struct scatter_read *next_free;
};

static struct scatter_read scatter_reads[MAX_CMDS];
static struct scatter_read *scatter_free;

static void scatter_done(const struct tcmu_completion *d)
{
	struct scatter_read *sr = d->user;
	static uint8_t want[128 << 10];

	if (!sr)
		return;
	CHECK(d->status == SCSI_STATUS_GOOD, "read of region %u", sr->region);
	pattern(want, sr->len, sr->region * 256, sr->seed);
	CHECK(!memcmp(sr->buf, want, sr->len),
	      "region %u does not hold write %u (%u bytes)", sr->region,
	      sr->seed, sr->len);
	sr->next_free = scatter_free;
	scatter_free = sr;
}

/* Queue a read of region @region, checked against write @seed. */
static int scatter_read(struct tcmu_client *c, uint32_t region, uint32_t len,
			uint32_t seed)
{
	struct scatter_read *sr;
	uint8_t cdb[16];
	int ret;

	while (!scatter_free)
		reap(c, scatter_done);
	sr = scatter_free;
	scatter_free = sr->next_free;
	sr->len = len;
	sr->region = region;
	sr->seed = seed;
	tcmu_cdb_read16(cdb, region * 256, len / 512);
	ret = queue_wait(c, cdb, 16, len, NULL, sr->buf, sr, scatter_done);
	if (ret) {
		sr->next_free = scatter_free;
		scatter_free = sr;
	}
	return ret;
}

/*
 * Writes of 4 KiB to 128 KiB through a 256 KiB data area, 64 regions
 * rewritten 16 times, reads of other regions among them: blocks come back
 * scattered, commands wait for room. Commands run in ring order, so each
 * read must find the region's last write queued before it.
 */
static int check_scatter(const char *path)
{
	static uint8_t wbuf[128 << 10];
	struct tcmu_client *a;
	struct tcmu_capacity cap;
	uint32_t len[SCATTER_REGIONS] = { 0 }, seed[SCATTER_REGIONS];
	uint64_t rng = 12345;
	uint8_t cdb[16];
	int round, i, j, ret;

	data_size = SMALL_DATA;
	a = ring_attach(path, "ring-client");
	capacity(a, &cap);
	for (i = 0; i < (int)MAX_CMDS; i++) {
		scatter_reads[i].buf = malloc(128 << 10);
		if (!scatter_reads[i].buf)
			die("malloc");
		scatter_reads[i].next_free = scatter_free;
		scatter_free = &scatter_reads[i];
	}
	for (round = 0; round < 16; round++) {
		for (i = 0; i < SCATTER_REGIONS; i++) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			len[i] = (1 + (rng >> 33) % 32) * 4096;
			seed[i] = round * SCATTER_REGIONS + i;
			pattern(wbuf, len[i], i * 256, seed[i]);
			tcmu_cdb_write16(cdb, i * 256, len[i] / 512, false);
			ret = queue_wait(a, cdb, 16, len[i], wbuf, NULL, NULL,
					 scatter_done);
			CHECK(!ret, "queue write %d", i);

			j = (i * 7 + 3) % SCATTER_REGIONS;
			if (len[j]) {
				ret = scatter_read(a, j, len[j], seed[j]);
				CHECK(!ret, "queue read %d", j);
			}
			/* Kick sometimes: completions arrive while queueing. */
			if (rng >> 63)
				kick(a);
		}
	}
	kick(a);
	drain(a, scatter_done);
	for (i = 0; i < SCATTER_REGIONS; i++)
		scatter_read(a, i, len[i], seed[i]);
	kick(a);
	drain(a, scatter_done);
	tcmu_client_free(a);
	for (i = 0; i < (int)MAX_CMDS; i++)
		free(scatter_reads[i].buf);
	if (failures)
		return 1;
	printf("check-scatter: all passed\n");
	return 0;
}

/* Any store: the data path and the range check, no trim semantics. */
static int check_rw(const char *path)
{
	struct tcmu_client *a;
	struct tcmu_capacity cap;
	uint64_t nr_blocks;

	a = ring_attach(path, "ring-client");
	nr_blocks = capacity(a, &cap);
	check_depth(a, nr_blocks, 5);
	check_out_of_range(a, nr_blocks);
	tcmu_client_free(a);
	if (failures)
		return 1;
	printf("check-rw: all passed\n");
	return 0;
}

static int check(const char *path)
{
	uint8_t cdb[16], wbuf[4096], rbuf[4096];
	struct tcmu_client *a, *b, *c;
	struct tcmu_capacity cap;
	struct tcmu_completion d;
	uint64_t nr_blocks;

	a = ring_attach(path, "ring-client");
	nr_blocks = capacity(a, &cap);
	CHECK(cap.lbpme && cap.lbprz, "LBPME/LBPRZ (memory store)");
	check_depth(a, nr_blocks, 1);
	check_unmap(a);
	check_out_of_range(a, nr_blocks);

	/* A second ring beside the first: one device behind both. */
	b = ring_attach(path, "ring-client: second ring");
	pattern(wbuf, sizeof(wbuf), 2000, 9);
	tcmu_cdb_write16(cdb, 2000, 8, false);
	d = exec(a, cdb, 16, 4096, wbuf, NULL);
	CHECK(d.status == SCSI_STATUS_GOOD, "write on ring A");
	tcmu_cdb_read16(cdb, 2000, 8);
	d = exec(b, cdb, 16, 4096, NULL, rbuf);
	CHECK(d.status == SCSI_STATUS_GOOD && !memcmp(wbuf, rbuf, 4096),
	      "ring B does not see what ring A wrote");
	check_depth(b, nr_blocks, 2);

	/* Ring A detaches by closing its socket; B carries on, C attaches. */
	tcmu_client_free(a);
	check_depth(b, nr_blocks, 3);
	c = ring_attach(path, "ring-client: third ring");
	check_depth(c, nr_blocks, 4);
	tcmu_client_free(b);
	tcmu_client_free(c);
	if (failures)
		return 1;
	printf("check: all passed\n");
	return 0;
}

/* ---- --check-shared ---- */

static bool readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/*
 * One device, one ring: A makes it, B and C join. A and B read in turn;
 * the host wakes only the owners of what a pass completed, so C, which
 * never queued anything, is never woken.
 */
static int check_shared(const char *path)
{
	struct tcmu_client *a, *b, *c;
	struct tcmu_completion d;
	uint8_t cdb[16], buf[4096];
	unsigned int i;

	a = attach_as(path, "ring-client: shared A", true);
	b = attach_as(path, "ring-client: shared B", true);
	c = attach_as(path, "ring-client: shared C", true);
	CHECK(!a->joined && b->joined && c->joined,
	      "B and C joined A's ring");
	CHECK(a->sh.sub.kflags && b->sh.sub.kflags && c->sh.sub.kflags &&
	      a->sh.sub.kflags != b->sh.sub.kflags &&
	      b->sh.sub.kflags != c->sh.sub.kflags &&
	      a->sh.sub.kflags != c->sh.sub.kflags,
	      "each submitter has a wake tag of its own");
	for (i = 0; i < 64; i++) {
		tcmu_cdb_read16(cdb, i * 8, 8);
		d = exec(i % 2 ? b : a, cdb, 16, 4096, NULL, buf);
		CHECK(d.status == SCSI_STATUS_GOOD, "a read on the shared ring");
	}
	CHECK(!readable(c->done_fd),
	      "the host woke C, which has no command out (its done eventfd is readable)");
	tcmu_client_free(c);
	tcmu_client_free(b);
	tcmu_client_free(a);
	if (failures)
		return 1;
	printf("check-shared: all passed\n");
	return 0;
}

/* ---- --check-wake ---- */

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static unsigned int wake_good;

static void wake_done(const struct tcmu_completion *d)
{
	if (d->status == SCSI_STATUS_GOOD)
		wake_good++;
}

static void spin_us(double us)
{
	double until = now_s() + us / 1e6;

	while (now_s() < until)
		;
}

/* One read of the first 16 MiB, queued and kicked. */
static void wake_read(struct tcmu_client *c, uint64_t *rng, void *buf)
{
	uint8_t cdb[16];
	int ret;

	tcmu_cdb_read16(cdb, next_rand(rng) % ((16u << 20) / 4096) * 8, 8);
	ret = tcmu_client_queue(c, cdb, 16, 4096, NULL, buf, NULL);
	if (ret)
		die_err("queue", -ret);
	kick(c);
}

/*
 * The doorbell (tcmu_doorbell.h) loses no wake-up: @bursts bursts of one
 * to four reads, a kick after each, then one more read as soon as the
 * host has completed one of them (cmd_tail seen to move) and a random
 * spin of up to 1.5 us later: while the host's ring thread finishes its
 * pass and goes to sleep. Then the burst is reaped, by spinning; now and
 * then a pause lets the thread fall asleep. A wake-up lost leaves the
 * last read in the ring with the thread asleep: no completion within 5 s
 * fails. No set-up command goes first, so that every command is one of
 * the bursts: the reads are of the device's first 16 MiB.
 */
static int check_wake(const char *path, unsigned int bursts)
{
	static uint8_t buf[5][4096];
	struct tcmu_client_work w;
	struct tcmu_client *c;
	uint64_t rng = 0x2545f4914f6cdd1dull;
	unsigned int i, j, k, want = 0;
	uint32_t tail;
	double limit;
	int n;

	c = ring_attach(path, "ring-client");
	CHECK(c->bell, "the handler host keeps no doorbell: every kick is sent");
	if (failures)
		return 1;
	for (i = 0; i < bursts; i++) {
		k = 1 + next_rand(&rng) % 4;
		tail = __atomic_load_n(tcmu_mb_tail(c->sh.sub.base),
				       __ATOMIC_ACQUIRE);
		for (j = 0; j < k; j++) {
			spin_us(next_rand(&rng) % 2000 / 1000.0);
			wake_read(c, &rng, buf[j]);
		}
		limit = now_s() + 5;
		while (__atomic_load_n(tcmu_mb_tail(c->sh.sub.base),
				       __ATOMIC_ACQUIRE) == tail &&
		       now_s() < limit)
			;
		spin_us(next_rand(&rng) % 1500 / 1000.0);
		wake_read(c, &rng, buf[k]);
		want += k + 1;
		while (tcmu_client_inflight(c)) {
			reaping = wake_done;
			n = tcmu_client_reap(c, 0, NULL);
			reaping = NULL;
			if (n < 0)
				die_err("reap", -n);
			if (!n && now_s() > limit) {
				fprintf(stderr,
					"ring-client: FAIL: burst %u of %u: %u of its %u reads had no completion within 5 s: a wake-up was lost (the host's ring thread slept with commands in its ring)\n",
					i + 1, bursts, tcmu_client_inflight(c),
					k + 1);
				exit(1);
			}
		}
		if (next_rand(&rng) % 8 == 0)
			usleep(50 + next_rand(&rng) % 300);
	}
	tcmu_client_work(c, &w);
	printf("check-wake: %u bursts, %u reads, %llu kicks, %llu sent\n",
	       bursts, want, (unsigned long long)w.kicks,
	       (unsigned long long)w.woken);
	CHECK(wake_good == want, "%u of %u reads good (is the device 16 MiB?)",
	      wake_good, want);
	CHECK(w.woken && w.woken < w.kicks,
	      "the doorbell both skipped kicks and sent some (%llu of %llu sent)",
	      (unsigned long long)w.woken, (unsigned long long)w.kicks);
	tcmu_client_free(c);
	if (failures)
		return 1;
	printf("check-wake: all passed\n");
	return 0;
}

/* ---- --attach-version ---- */

/*
 * A ring whose mailbox says @version, attached by hand: the client only
 * sends its own version, and takes a refusal for an error. Prints the
 * reply's status and message; exit 0 when the shim refused the ring.
 */
static int attach_version(const char *path, uint16_t version)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint64_t size = tcmu_region_size(RING_SIZE - TCMU_MB_SIZE, data_size);
	int fds[TCMU_ATTACH_NFDS], sock;
	struct tcmu_attach_req req = {
		.version = TCMU_ATTACH_VERSION,
		.region_size = size,
	};
	uint8_t buf[TCMU_ATTACH_REQ_LEN], rbuf[TCMU_ATTACH_REPLY_LEN];
	union {
		char buf[CMSG_SPACE(sizeof(fds))];
		struct cmsghdr align;
	} ctl = { 0 };
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
	};
	struct tcmu_attach_reply rep;
	struct cmsghdr *cm;
	const char *why;
	uint8_t *region;
	size_t got = 0;
	ssize_t n;

	fds[TCMU_FD_REGION] = memfd_create("ring-client", MFD_CLOEXEC);
	if (fds[TCMU_FD_REGION] < 0 || ftruncate(fds[TCMU_FD_REGION], size))
		die("memfd");
	region = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      fds[TCMU_FD_REGION], 0);
	if (region == MAP_FAILED)
		die("mmap");
	tcmu_region_layout(region, size, RING_SIZE - TCMU_MB_SIZE, data_size,
			   TCMU_RING_FLAGS);
	((struct tcmu_mailbox *)region)->version = version;
	fds[TCMU_FD_KICK] = eventfd(0, EFD_CLOEXEC);
	fds[TCMU_FD_DONE] = eventfd(0, EFD_CLOEXEC);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fds[TCMU_FD_KICK] < 0 || fds[TCMU_FD_DONE] < 0 || sock < 0)
		die("eventfd/socket");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(sock, (struct sockaddr *)&sa, sizeof(sa)))
		die(path);

	tcmu_attach_req_encode(buf, &req);
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	if (sendmsg(sock, &msg, MSG_NOSIGNAL) != sizeof(buf))
		die("sending the attach request");
	while (got < sizeof(rbuf)) {
		n = recv(sock, rbuf + got, sizeof(rbuf) - got, 0);
		if (n <= 0) {
			fprintf(stderr, "ring-client: no attach reply\n");
			exit(1);
		}
		got += n;
		/* A hello first (this was slow to send): the reply follows. */
		if (got >= TCMU_ATTACH_HELLO_LEN &&
		    tcmu_attach_magic(rbuf, got) == TCMU_MAGIC_HELLO) {
			got -= TCMU_ATTACH_HELLO_LEN;
			memmove(rbuf, rbuf + TCMU_ATTACH_HELLO_LEN, got);
		}
	}
	if (tcmu_attach_reply_decode(rbuf, sizeof(rbuf), &rep, &why)) {
		fprintf(stderr, "ring-client: %s\n", why);
		exit(1);
	}
	printf("status %d: %s\n", rep.status, rep.msg);
	close(sock);
	munmap(region, size);
	close(fds[TCMU_FD_REGION]);
	close(fds[TCMU_FD_KICK]);
	close(fds[TCMU_FD_DONE]);
	return rep.status ? 0 : 1;
}

/* ---- --bench ---- */

struct bench {
	uint64_t nr_blocks;
	uint32_t bs;
	bool write;
	uint8_t *wbuf, *rbuf;
	uint64_t done, errors;
	uint64_t rng;
};

static struct bench bench_state;

static int bench_queue(struct tcmu_client *c)
{
	struct bench *b = &bench_state;
	uint32_t blocks = b->bs / 512;
	uint64_t lba = next_rand(&b->rng) % (b->nr_blocks / blocks) * blocks;
	uint8_t cdb[16];

	if (b->write) {
		tcmu_cdb_write16(cdb, lba, blocks, false);
		return tcmu_client_queue(c, cdb, 16, b->bs, b->wbuf, NULL,
					 NULL);
	}
	tcmu_cdb_read16(cdb, lba, blocks);
	return tcmu_client_queue(c, cdb, 16, b->bs, NULL, b->rbuf, NULL);
}

static void bench_done(const struct tcmu_completion *d)
{
	bench_state.done++;
	if (d->status != SCSI_STATUS_GOOD)
		bench_state.errors++;
}

static int bench(const char *path, double seconds, unsigned int qd,
		 uint32_t bs, bool write)
{
	struct bench *b = &bench_state;
	struct tcmu_capacity cap;
	struct tcmu_client *c;
	double start, end;
	unsigned int i;

	c = ring_attach(path, "ring-client");
	b->nr_blocks = capacity(c, &cap);
	b->bs = bs;
	b->write = write;
	b->rng = 0x9e3779b97f4a7c15ull;
	b->wbuf = calloc(1, bs);
	b->rbuf = calloc(1, bs);
	if (!b->wbuf || !b->rbuf)
		die("calloc");
	memset(b->wbuf, 0x5a, bs);
	for (i = 0; i < qd; i++)
		if (bench_queue(c) < 0)
			break;
	kick(c);
	start = now_s();
	end = start + seconds;
	while (tcmu_client_inflight(c)) {
		unsigned int n = reap_spin(c, bench_done);

		if (now_s() >= end)
			continue;	/* drain */
		for (i = 0; i < n; i++)
			if (bench_queue(c) < 0)
				break;
		kick(c);
	}
	end = now_s();
	printf("iops %.0f\n", b->done / (end - start));
	printf("mib_s %.1f\n", b->done * (double)bs / (end - start) / 1048576);
	printf("errors %llu\n", (unsigned long long)b->errors);
	tcmu_client_free(c);
	return b->errors ? 1 : 0;
}

/* ---- main ---- */

static void usage(void)
{
	fprintf(stderr,
		"usage: ring-client --socket PATH (--check | --check-rw | --check-scatter |\n"
		"       --check-shared | --check-wake BURSTS |\n"
		"       --attach-version N |\n"
		"       --bench SECONDS [--qd N] [--bs BYTES] [--rw randread|randwrite])\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "check", no_argument, NULL, 'c' },
		{ "check-rw", no_argument, NULL, 'C' },
		{ "check-scatter", no_argument, NULL, 'S' },
		{ "check-shared", no_argument, NULL, 'H' },
		{ "check-wake", required_argument, NULL, 'w' },
		{ "attach-version", required_argument, NULL, 'a' },
		{ "bench", required_argument, NULL, 'b' },
		{ "qd", required_argument, NULL, 'q' },
		{ "bs", required_argument, NULL, 'B' },
		{ "rw", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = NULL;
	double seconds = 0;
	unsigned int qd = 1, bs = 4096;
	int version = -1, opt, wake_bursts = 0;
	bool do_check = false, do_check_rw = false, write = false;
	bool do_check_scatter = false, do_check_shared = false;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			path = optarg;
			break;
		case 'c':
			do_check = true;
			break;
		case 'C':
			do_check_rw = true;
			break;
		case 'S':
			do_check_scatter = true;
			break;
		case 'H':
			do_check_shared = true;
			break;
		case 'w':
			wake_bursts = atoi(optarg);
			if (wake_bursts < 1)
				usage();
			break;
		case 'a':
			version = atoi(optarg);
			break;
		case 'b':
			seconds = atof(optarg);
			break;
		case 'q':
			qd = atoi(optarg);
			break;
		case 'B':
			bs = atoi(optarg);
			break;
		case 'r':
			if (!strcmp(optarg, "randwrite"))
				write = true;
			else if (strcmp(optarg, "randread"))
				usage();
			break;
		default:
			usage();
		}
	}
	if (!path || qd < 1 || qd > MAX_CMDS || bs < 512 || bs % 512 ||
	    bs > MAX_DATA)
		usage();
	if (do_check)
		return check(path);
	if (do_check_rw)
		return check_rw(path);
	if (do_check_scatter)
		return check_scatter(path);
	if (do_check_shared)
		return check_shared(path);
	if (wake_bursts)
		return check_wake(path, wake_bursts);
	if (version >= 0)
		return attach_version(path, version);
	if (seconds > 0)
		return bench(path, seconds, qd, bs, write);
	usage();
	return 2;
}
