// SPDX-License-Identifier: GPL-2.0-only
/*
 * ring-client: plays the kernel's side of TCMU rings against a running
 * tcmu-shim, with nothing but proto/tcmu (the submitter, the CDBs, the
 * attach exchange): a memfd region, two eventfds, the socket. Used by
 * tests/tcmu/test-ring.sh and by benchmarks.
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
 *   ring-client --socket PATH --attach-version N
 *       attach a ring whose mailbox says version N; print the reply's
 *       status and message (exit 0 when the shim refused it).
 *   ring-client --socket PATH --bench SECONDS [--qd N] [--bs BYTES]
 *               [--rw randread|randwrite]
 *       random I/O for SECONDS, then "iops N" and "mib_s N".
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
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
#include "tcmu_cdb.h"
#include "tcmu_ring.h"

#define RING_SIZE	(1u << 20)
#define DATA_SIZE	(64u << 20)
/* --check-scatter: a data area so small that blocks are handed out scattered */
#define SMALL_DATA	(256u << 10)

static uint64_t data_size = DATA_SIZE;
#define MAX_CMDS	256u
#define MAX_DATA	(1u << 20)

struct rec {
	void *rbuf;
	uint32_t rlen;
	bool done;
	uint8_t status, uflags;
	uint32_t read_len;
	uint8_t sense[TCMU_SENSE_BUFFERSIZE];
	uint64_t tag;			/* the caller's */
};

struct ring {
	int sock, region_fd, kick, done;
	uint8_t *region;
	uint64_t size;
	struct tcmu_sub sub;
	struct rec recs[MAX_CMDS + 1];
	unsigned int inflight;
	void (*on_done)(struct ring *r, uint16_t id);
};

static int failures;

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

static int send_attach(struct ring *r)
{
	struct tcmu_attach_req req = {
		.version = TCMU_ATTACH_VERSION,
		.region_size = r->size,
	};
	int fds[3] = { r->region_fd, r->kick, r->done };
	uint8_t buf[TCMU_ATTACH_REQ_LEN];
	union {
		char buf[CMSG_SPACE(sizeof(fds))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
	};
	struct cmsghdr *cm;

	tcmu_attach_req_encode(buf, &req);
	memset(&ctl, 0, sizeof(ctl));
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	return sendmsg(r->sock, &msg, MSG_NOSIGNAL) == sizeof(buf) ? 0 : -1;
}

/* Attach a ring; 0, or the reply's status with its message in msg. */
static int ring_attach(struct ring *r, const char *path, uint16_t version,
		       char *msg, size_t msglen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	uint8_t buf[TCMU_ATTACH_REPLY_LEN];
	struct tcmu_attach_reply rep;
	const char *why;
	size_t got = 0;
	ssize_t n;

	memset(r, 0, sizeof(*r));
	r->size = tcmu_region_size(RING_SIZE - TCMU_MB_SIZE, data_size);
	r->region_fd = memfd_create("ring-client", MFD_CLOEXEC);
	if (r->region_fd < 0 || ftruncate(r->region_fd, r->size))
		die("memfd");
	r->region = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 r->region_fd, 0);
	if (r->region == MAP_FAILED)
		die("mmap");
	if (tcmu_region_layout(r->region, r->size, RING_SIZE - TCMU_MB_SIZE,
			       data_size, TCMU_RING_FLAGS) ||
	    tcmu_sub_init(&r->sub, r->region, r->size, TCMU_DEF_BLK_SIZE,
			  MAX_CMDS, data_size < MAX_DATA ? data_size : MAX_DATA)) {
		fprintf(stderr, "ring-client: cannot lay out the ring\n");
		exit(1);
	}
	((struct tcmu_mailbox *)r->region)->version = version;
	r->kick = eventfd(0, EFD_CLOEXEC);
	r->done = eventfd(0, EFD_CLOEXEC);
	r->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (r->kick < 0 || r->done < 0 || r->sock < 0)
		die("eventfd/socket");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(r->sock, (struct sockaddr *)&sa, sizeof(sa)))
		die(path);
	if (send_attach(r))
		die("sending the attach request");
	while (got < sizeof(buf)) {
		n = recv(r->sock, buf + got, sizeof(buf) - got, 0);
		if (n <= 0) {
			fprintf(stderr, "ring-client: no attach reply\n");
			exit(1);
		}
		got += n;
	}
	if (tcmu_attach_reply_decode(buf, sizeof(buf), &rep, &why)) {
		fprintf(stderr, "ring-client: %s\n", why);
		exit(1);
	}
	snprintf(msg, msglen, "%s", rep.msg);
	return rep.status;
}

static void ring_close(struct ring *r)
{
	close(r->sock);
	tcmu_sub_free(&r->sub);
	munmap(r->region, r->size);
	close(r->region_fd);
	close(r->kick);
	close(r->done);
}

static int queue(struct ring *r, const uint8_t *cdb, uint32_t cdb_len,
		 uint32_t len, const void *wbuf, void *rbuf)
{
	int id = tcmu_sub_queue(&r->sub, cdb, cdb_len, len, wbuf);
	struct rec *rec;

	if (id < 0)
		return id;
	rec = &r->recs[id];
	memset(rec, 0, sizeof(*rec));
	rec->rbuf = rbuf;
	rec->rlen = rbuf ? len : 0;
	r->inflight++;
	return id;
}

static void kick(struct ring *r)
{
	uint64_t one = 1;

	tcmu_sub_commit(&r->sub);
	if (write(r->kick, &one, sizeof(one)) != sizeof(one))
		die("kick");
}

static void on_reap(void *arg, const struct tcmu_done *d)
{
	struct ring *r = arg;
	struct rec *rec = &r->recs[d->cmd_id];

	rec->done = true;
	rec->status = d->status;
	rec->uflags = d->uflags;
	rec->read_len = d->read_len;
	memcpy(rec->sense, d->sense, TCMU_SENSE_BUFFERSIZE);
	if (rec->rbuf && d->status == SCSI_STATUS_GOOD)
		tcmu_sub_copy_out(&r->sub, d->cmd_id, rec->rbuf, rec->rlen);
	r->inflight--;
	if (r->on_done)
		r->on_done(r, d->cmd_id);
}

/* Wait for the handler's word, then reap: how many finished. */
static int reap(struct ring *r)
{
	struct pollfd pfd = { .fd = r->done, .events = POLLIN };
	uint64_t count;
	int n;

	n = tcmu_sub_reap(&r->sub, on_reap, r);
	if (n)
		return n;
	if (poll(&pfd, 1, 10000) <= 0) {
		fprintf(stderr, "ring-client: no completion within 10 s\n");
		exit(1);
	}
	if (read(r->done, &count, sizeof(count)) < 0)
		die("done eventfd");
	n = tcmu_sub_reap(&r->sub, on_reap, r);
	if (n < 0) {
		fprintf(stderr, "ring-client: the handler broke the ring\n");
		exit(1);
	}
	return n;
}

/* One command, start to end. */
static struct rec *exec(struct ring *r, const uint8_t *cdb, uint32_t cdb_len,
			uint32_t len, const void *wbuf, void *rbuf)
{
	int id = queue(r, cdb, cdb_len, len, wbuf, rbuf);

	if (id < 0) {
		fprintf(stderr, "ring-client: queue: %s\n", strerror(-id));
		exit(1);
	}
	kick(r);
	while (!r->recs[id].done)
		reap(r);
	return &r->recs[id];
}

static void sense_of(const struct rec *rec, struct tcmu_sense *s)
{
	if (tcmu_sense_decode(rec->sense, TCMU_SENSE_BUFFERSIZE, s))
		memset(s, 0, sizeof(*s));
}

/* ---- --check ---- */

static uint64_t capacity(struct ring *r, struct tcmu_capacity *out)
{
	uint8_t cdb[16], buf[96];
	struct tcmu_capacity cap;
	struct tcmu_inquiry inq;
	struct rec *rec;

	/* 96 bytes asked, 74 answered: a short data-in, with its length. */
	tcmu_cdb_inquiry(cdb, false, 0, 96);
	rec = exec(r, cdb, 6, 96, NULL, buf);
	CHECK(rec->status == SCSI_STATUS_GOOD, "INQUIRY status %d",
	      rec->status);
	CHECK((rec->uflags & TCMU_UFLAG_READ_LEN) && rec->read_len == 74,
	      "INQUIRY read_len %u (uflags 0x%x)", rec->read_len, rec->uflags);
	CHECK(!tcmu_inquiry_std_decode(buf, TCMU_INQUIRY_STD_LEN, &inq, NULL),
	      "INQUIRY data");
	CHECK(!strcmp(inq.vendor, "TORUS") && !strcmp(inq.product, "tcmu-shim"),
	      "INQUIRY names %s %s", inq.vendor, inq.product);
	CHECK(inq.device_type == 0 && inq.cmdque, "INQUIRY type/CMDQUE");

	tcmu_cdb_read_capacity16(cdb, TCMU_READ_CAPACITY_16_LEN);
	rec = exec(r, cdb, 16, TCMU_READ_CAPACITY_16_LEN, NULL, buf);
	CHECK(rec->status == SCSI_STATUS_GOOD, "READ CAPACITY status");
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

/* Write blocks of 4 KiB, 16 at a time, then read them back 16 at a time. */
static void check_depth(struct ring *r, uint64_t nr_blocks, unsigned int seed)
{
	static uint8_t wbuf[16][4096], rbuf[16][4096];
	uint8_t cdb[16];
	uint64_t lba;
	int ids[16], i;

	for (i = 0; i < 16; i++) {
		lba = (i * 97 % 64) * 8;
		pattern(wbuf[i], 4096, lba, seed);
		tcmu_cdb_write16(cdb, lba, 8, i % 4 == 0);
		ids[i] = queue(r, cdb, 16, 4096, wbuf[i], NULL);
		CHECK(ids[i] > 0, "queue write %d", i);
	}
	kick(r);
	while (r->inflight)
		reap(r);
	for (i = 0; i < 16; i++)
		CHECK(r->recs[ids[i]].status == SCSI_STATUS_GOOD,
		      "write %d status %d", i, r->recs[ids[i]].status);
	for (i = 0; i < 16; i++) {
		lba = (i * 97 % 64) * 8;
		tcmu_cdb_read16(cdb, lba, 8);
		ids[i] = queue(r, cdb, 16, 4096, NULL, rbuf[i]);
	}
	kick(r);
	while (r->inflight)
		reap(r);
	for (i = 0; i < 16; i++) {
		CHECK(r->recs[ids[i]].status == SCSI_STATUS_GOOD,
		      "read %d status", i);
		CHECK(!memcmp(rbuf[i], wbuf[i], 4096),
		      "read %d does not match what was written", i);
	}
	(void)nr_blocks;
}

static void check_unmap(struct ring *r)
{
	uint8_t cdb[16], param[TCMU_UNMAP_PARAM_LEN], buf[4096], zero[4096];
	struct rec *rec;

	memset(zero, 0, sizeof(zero));
	pattern(buf, sizeof(buf), 1000, 1);
	tcmu_cdb_write16(cdb, 1000, 8, false);
	exec(r, cdb, 16, 4096, buf, NULL);
	tcmu_unmap_param(param, sizeof(param), 1000, 8);
	tcmu_cdb_unmap(cdb, sizeof(param));
	rec = exec(r, cdb, 10, sizeof(param), param, NULL);
	CHECK(rec->status == SCSI_STATUS_GOOD, "UNMAP status %d", rec->status);
	tcmu_cdb_read16(cdb, 1000, 8);
	rec = exec(r, cdb, 16, 4096, NULL, buf);
	CHECK(rec->status == SCSI_STATUS_GOOD && !memcmp(buf, zero, 4096),
	      "unmapped blocks do not read as zeroes");
}

static void check_out_of_range(struct ring *r, uint64_t nr_blocks)
{
	uint8_t cdb[16], buf[4096];
	struct tcmu_sense s;
	struct rec *rec;
	char msg[128];

	tcmu_cdb_read16(cdb, nr_blocks - 4, 8);
	rec = exec(r, cdb, 16, 4096, NULL, buf);
	sense_of(rec, &s);
	CHECK(rec->status == SCSI_STATUS_CHECK_CONDITION &&
	      s.key == SCSI_SK_ILLEGAL_REQUEST &&
	      s.asc == SCSI_ASC_LBA_OUT_OF_RANGE,
	      "out-of-range READ: status %d %s", rec->status,
	      tcmu_sense_msg(&s, msg, sizeof(msg)));
	printf("out-of-range READ: %s\n", tcmu_sense_msg(&s, msg, sizeof(msg)));
}

/* Queue, reaping while the ring or the data area is full. */
static int queue_wait(struct ring *r, const uint8_t *cdb, uint32_t cdb_len,
		      uint32_t len, const void *wbuf, void *rbuf)
{
	int id;

	while ((id = queue(r, cdb, cdb_len, len, wbuf, rbuf)) == -EBUSY) {
		kick(r);
		reap(r);
	}
	return id;
}

/* What a read queued by --check-scatter must find: region and write. */
#define SCATTER_REGIONS	64
static uint8_t *scatter_rbuf[MAX_CMDS + 1];

static void scatter_done(struct ring *r, uint16_t id)
{
	const struct rec *rec = &r->recs[id];
	static uint8_t want[128 << 10];
	uint32_t region = rec->tag & 0xff, seed = rec->tag >> 8;

	if (!rec->rbuf)
		return;
	CHECK(rec->status == SCSI_STATUS_GOOD, "read of region %u", region);
	pattern(want, rec->rlen, region * 256, seed);
	CHECK(!memcmp(rec->rbuf, want, rec->rlen),
	      "region %u does not hold write %u (%u bytes)", region, seed,
	      rec->rlen);
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
	static struct ring a;
	struct tcmu_capacity cap;
	char msg[TCMU_ATTACH_MSG_MAX];
	uint32_t len[SCATTER_REGIONS] = { 0 }, seed[SCATTER_REGIONS];
	uint64_t rng = 12345;
	uint8_t cdb[16];
	int round, i, j, id;

	data_size = SMALL_DATA;
	if (ring_attach(&a, path, TCMU_MAILBOX_VERSION, msg, sizeof(msg))) {
		fprintf(stderr, "ring-client: attach refused: %s\n", msg);
		return 1;
	}
	capacity(&a, &cap);
	for (i = 1; i <= MAX_CMDS; i++) {
		scatter_rbuf[i] = malloc(128 << 10);
		if (!scatter_rbuf[i])
			die("malloc");
	}
	a.on_done = scatter_done;
	for (round = 0; round < 16; round++) {
		for (i = 0; i < SCATTER_REGIONS; i++) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			len[i] = (1 + (rng >> 33) % 32) * 4096;
			seed[i] = round * SCATTER_REGIONS + i;
			pattern(wbuf, len[i], i * 256, seed[i]);
			tcmu_cdb_write16(cdb, i * 256, len[i] / 512, false);
			id = queue_wait(&a, cdb, 16, len[i], wbuf, NULL);
			CHECK(id > 0, "queue write %d", i);

			j = (i * 7 + 3) % SCATTER_REGIONS;
			if (len[j]) {
				tcmu_cdb_read16(cdb, j * 256, len[j] / 512);
				id = queue_wait(&a, cdb, 16, len[j], NULL, NULL);
				CHECK(id > 0, "queue read %d", j);
				a.recs[id].rbuf = scatter_rbuf[id];
				a.recs[id].rlen = len[j];
				a.recs[id].tag = j | (uint64_t)seed[j] << 8;
			}
			/* Kick sometimes: completions arrive while queueing. */
			if (rng >> 63)
				kick(&a);
		}
	}
	kick(&a);
	while (a.inflight)
		reap(&a);
	for (i = 0; i < SCATTER_REGIONS; i++) {
		tcmu_cdb_read16(cdb, i * 256, len[i] / 512);
		id = queue_wait(&a, cdb, 16, len[i], NULL, NULL);
		a.recs[id].rbuf = scatter_rbuf[id];
		a.recs[id].rlen = len[i];
		a.recs[id].tag = i | (uint64_t)seed[i] << 8;
	}
	kick(&a);
	while (a.inflight)
		reap(&a);
	ring_close(&a);
	for (i = 1; i <= MAX_CMDS; i++)
		free(scatter_rbuf[i]);
	if (failures)
		return 1;
	printf("check-scatter: all passed\n");
	return 0;
}

/* Any store: the data path and the range check, no trim semantics. */
static int check_rw(const char *path)
{
	static struct ring a;
	struct tcmu_capacity cap;
	char msg[TCMU_ATTACH_MSG_MAX];
	uint64_t nr_blocks;

	if (ring_attach(&a, path, TCMU_MAILBOX_VERSION, msg, sizeof(msg))) {
		fprintf(stderr, "ring-client: attach refused: %s\n", msg);
		return 1;
	}
	nr_blocks = capacity(&a, &cap);
	check_depth(&a, nr_blocks, 5);
	check_out_of_range(&a, nr_blocks);
	ring_close(&a);
	if (failures)
		return 1;
	printf("check-rw: all passed\n");
	return 0;
}

static int check(const char *path)
{
	static struct ring a, b, c;
	uint8_t cdb[16], wbuf[4096], rbuf[4096];
	struct tcmu_capacity cap;
	uint64_t nr_blocks;
	struct rec *rec;
	char msg[TCMU_ATTACH_MSG_MAX];

	if (ring_attach(&a, path, TCMU_MAILBOX_VERSION, msg, sizeof(msg))) {
		fprintf(stderr, "ring-client: attach refused: %s\n", msg);
		return 1;
	}
	nr_blocks = capacity(&a, &cap);
	CHECK(cap.lbpme && cap.lbprz, "LBPME/LBPRZ (memory backend)");
	check_depth(&a, nr_blocks, 1);
	check_unmap(&a);
	check_out_of_range(&a, nr_blocks);

	/* A second ring beside the first: one device behind both. */
	if (ring_attach(&b, path, TCMU_MAILBOX_VERSION, msg, sizeof(msg))) {
		fprintf(stderr, "ring-client: second attach refused: %s\n", msg);
		return 1;
	}
	pattern(wbuf, sizeof(wbuf), 2000, 9);
	tcmu_cdb_write16(cdb, 2000, 8, false);
	rec = exec(&a, cdb, 16, 4096, wbuf, NULL);
	CHECK(rec->status == SCSI_STATUS_GOOD, "write on ring A");
	tcmu_cdb_read16(cdb, 2000, 8);
	rec = exec(&b, cdb, 16, 4096, NULL, rbuf);
	CHECK(rec->status == SCSI_STATUS_GOOD && !memcmp(wbuf, rbuf, 4096),
	      "ring B does not see what ring A wrote");
	check_depth(&b, nr_blocks, 2);

	/* Ring A detaches by closing its socket; B carries on, C attaches. */
	ring_close(&a);
	check_depth(&b, nr_blocks, 3);
	if (ring_attach(&c, path, TCMU_MAILBOX_VERSION, msg, sizeof(msg))) {
		fprintf(stderr, "ring-client: third attach refused: %s\n", msg);
		return 1;
	}
	check_depth(&c, nr_blocks, 4);
	ring_close(&b);
	ring_close(&c);
	if (failures)
		return 1;
	printf("check: all passed\n");
	return 0;
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

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int bench_queue(struct ring *r)
{
	struct bench *b = &bench_state;
	uint32_t blocks = b->bs / 512;
	uint64_t lba = next_rand(&b->rng) % (b->nr_blocks / blocks) * blocks;
	uint8_t cdb[16];

	if (b->write) {
		tcmu_cdb_write16(cdb, lba, blocks, false);
		return queue(r, cdb, 16, b->bs, b->wbuf, NULL);
	}
	tcmu_cdb_read16(cdb, lba, blocks);
	return queue(r, cdb, 16, b->bs, NULL, b->rbuf);
}

static void bench_done(struct ring *r, uint16_t id)
{
	bench_state.done++;
	if (r->recs[id].status != SCSI_STATUS_GOOD)
		bench_state.errors++;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int bench(const char *path, double seconds, unsigned int qd,
		 uint32_t bs, bool write)
{
	static struct ring r;
	struct bench *b = &bench_state;
	struct tcmu_capacity cap;
	double start, end;
	char msg[TCMU_ATTACH_MSG_MAX];
	unsigned int i;

	if (ring_attach(&r, path, TCMU_MAILBOX_VERSION, msg, sizeof(msg))) {
		fprintf(stderr, "ring-client: attach refused: %s\n", msg);
		return 1;
	}
	b->nr_blocks = capacity(&r, &cap);
	b->bs = bs;
	b->write = write;
	b->rng = 0x9e3779b97f4a7c15ull;
	b->wbuf = calloc(1, bs);
	b->rbuf = calloc(1, bs);
	if (!b->wbuf || !b->rbuf)
		die("calloc");
	memset(b->wbuf, 0x5a, bs);
	r.on_done = bench_done;
	for (i = 0; i < qd; i++)
		if (bench_queue(&r) < 0)
			break;
	kick(&r);
	start = now_s();
	end = start + seconds;
	while (r.inflight) {
		unsigned int n = reap(&r);

		if (now_s() >= end)
			continue;	/* drain */
		for (i = 0; i < n; i++)
			if (bench_queue(&r) < 0)
				break;
		kick(&r);
	}
	end = now_s();
	printf("iops %.0f\n", b->done / (end - start));
	printf("mib_s %.1f\n", b->done * (double)bs / (end - start) / 1048576);
	printf("errors %llu\n", (unsigned long long)b->errors);
	ring_close(&r);
	return b->errors ? 1 : 0;
}

/* ---- main ---- */

static void usage(void)
{
	fprintf(stderr,
		"usage: ring-client --socket PATH (--check | --check-rw | --check-scatter |\n"
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
	int version = -1, opt;
	bool do_check = false, do_check_rw = false, write = false;
	bool do_check_scatter = false;
	char msg[TCMU_ATTACH_MSG_MAX];
	struct ring r;
	int status;

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
	if (version >= 0) {
		status = ring_attach(&r, path, version, msg, sizeof(msg));
		printf("status %d: %s\n", status, msg);
		ring_close(&r);
		return status ? 0 : 1;
	}
	if (seconds > 0)
		return bench(path, seconds, qd, bs, write);
	usage();
	return 2;
}
