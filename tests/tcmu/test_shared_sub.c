// SPDX-License-Identifier: GPL-2.0-only
/*
 * One ring, several submitters (client/tcmu/tcmu_shared.c): the submitters'
 * state in shared memory, two owners in one process and one in a child
 * process, the handler answering out of order; every completion reaches
 * its own owner, whoever reaps, with its read data; blocks and cmd_ids
 * all come back; an owner that dies, with or without the ring's lock
 * held, even halfway through queuing a command, does not keep its
 * commands' blocks or cmd_ids or wedge the others; an owner with nothing
 * out sleeps for room, and is given what others handled but kept.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tcmu_ring_hdl.h"
#include "tcmu_shared.h"

#define CMDR	(64u << 10)
#define BLK	4096u
#define NBLK	64u
#define DATA	(NBLK * BLK)
#define SIZE	(128u + CMDR + DATA)
#define CMDS	32u

static uint8_t *rg, *mem;
static uint64_t mem_size;
static struct tcmu_hdl hdl;
static struct iovec iov[8];
static struct tcmu_hdl_cmd hc = { .iov = iov, .iov_max = 8 };

/* What one owner's callback saw. */
struct seen {
	unsigned int n;
	uint16_t ids[CMDS];
	uint8_t first[CMDS];		/* first byte of a read's data */
	struct tcmu_shared *s;
};

static void on_done(void *arg, const struct tcmu_done *d)
{
	struct seen *w = arg;
	uint8_t b = 0;

	assert_int_equal(tcmu_sub_copy_out(&w->s->sub, d->cmd_id, &b, 1), 0);
	w->ids[w->n] = d->cmd_id;
	w->first[w->n++] = b;
}

static void *map_shared(uint64_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	return p;
}

static int setup(void **state)
{
	rg = map_shared(SIZE);
	assert_int_equal(tcmu_region_layout(rg, SIZE, CMDR, DATA,
					    TCMU_RING_FLAGS), 0);
	mem_size = tcmu_shared_size(rg, SIZE, BLK, CMDS, 2 * BLK);
	assert_true(mem_size > 0);
	mem = map_shared(mem_size);
	assert_int_equal(tcmu_hdl_init(&hdl, rg, SIZE), 0);
	return 0;
}

static int teardown(void **state)
{
	munmap(rg, SIZE);
	munmap(mem, mem_size);
	return 0;
}

/* A lock pass: what the owner handled since its last one goes back. */
static void lock_pass(struct tcmu_shared *s)
{
	uint32_t cleaned, pub;

	tcmu_shared_bounds(s, &cleaned, &pub);
}

/* A READ of one block whose data the handler fills with @fill. */
static int queue_read(struct tcmu_shared *s)
{
	static const uint8_t cdb[16] = { 0x88 };

	return tcmu_shared_queue(s, cdb, sizeof(cdb), BLK, NULL);
}

/* The handler takes every published command, in ring order. */
static unsigned int take_all(uint16_t *ids, uint8_t *fill)
{
	unsigned int n = 0;

	while (tcmu_hdl_next(&hdl, &hc) == 1) {
		ids[n] = hc.cmd_id;
		/* The data tells whose it is: its cmd_id. */
		memset(hc.iov[0].iov_base, fill ? fill[n] : hc.cmd_id,
		       hc.iov[0].iov_len);
		n++;
	}
	return n;
}

static void test_routed_to_owner(void **state)
{
	struct tcmu_shared a, b;
	struct seen sa = { .s = &a }, sb = { .s = &b };
	uint16_t ids[8];
	int ida[3], idb[3], i;

	assert_int_equal(tcmu_shared_create(&a, rg, SIZE, mem, mem_size, BLK,
					 CMDS, 2 * BLK), 0);
	assert_int_equal(tcmu_shared_join(&b, rg, SIZE, mem, mem_size, BLK), 0);
	assert_int_not_equal(a.owner, b.owner);
	/* Joining with commands larger than the ring's: refused. */
	{
		struct tcmu_shared c;

		assert_int_equal(tcmu_shared_join(&c, rg, SIZE, mem, mem_size,
					       4 * BLK), -E2BIG);
	}
	/* Interleaved: a, b, a, b, a, b. */
	for (i = 0; i < 3; i++) {
		ida[i] = queue_read(&a);
		idb[i] = queue_read(&b);
		assert_true(ida[i] > 0 && idb[i] > 0);
	}
	assert_int_equal(take_all(ids, NULL), 6);
	/* Out of order: backwards. */
	for (i = 5; i >= 0; i--)
		assert_int_equal(tcmu_hdl_complete(&hdl, ids[i], 0, NULL, 0,
						   -1), 0);
	/* a reaps all: only its own come to it, b's wait in b's list. */
	assert_int_equal(tcmu_shared_reap(&a, on_done, &sa), 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(sa.first[i], sa.ids[i]);
		assert_true(sa.ids[i] == ida[0] || sa.ids[i] == ida[1] ||
			    sa.ids[i] == ida[2]);
	}
	/* a's go back at its next lock pass, b's stay b's until b is done. */
	assert_int_equal(a.sub.st->free_blks, NBLK - 6);
	lock_pass(&a);
	assert_int_equal(a.sub.st->free_blks, NBLK - 3);
	/* b takes them without walking or locking. */
	assert_false(b.st->walked != *tcmu_mb_tail(rg));
	assert_int_equal(tcmu_shared_reap(&b, on_done, &sb), 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(sb.first[i], sb.ids[i]);
		assert_true(sb.ids[i] == idb[0] || sb.ids[i] == idb[1] ||
			    sb.ids[i] == idb[2]);
	}
	assert_int_equal(a.sub.st->free_blks, NBLK - 3);
	lock_pass(&b);
	assert_int_equal(a.sub.st->free_blks, NBLK);
	assert_int_equal(a.sub.st->nr_free, CMDS);
	assert_int_equal(tcmu_shared_reap(&b, on_done, &sb), 0);
	tcmu_shared_free(&b);
	tcmu_shared_free(&a);
}

/* A child joins, queues, and dies: its commands are released by a reap. */
static void test_owner_dies(void **state)
{
	struct tcmu_shared a;
	struct seen sa = { .s = &a };
	uint16_t ids[8];
	int status, id;
	pid_t pid;

	assert_int_equal(tcmu_shared_create(&a, rg, SIZE, mem, mem_size, BLK,
					 CMDS, 2 * BLK), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct tcmu_shared c;

		if (tcmu_shared_join(&c, rg, SIZE, mem, mem_size, BLK) ||
		    queue_read(&c) <= 0 || queue_read(&c) <= 0)
			_exit(1);
		_exit(0);	/* dies without leaving: alive mutex held */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	id = queue_read(&a);
	assert_true(id > 0);
	assert_int_equal(take_all(ids, NULL), 3);
	assert_int_equal(tcmu_hdl_complete(&hdl, ids[2], 0, NULL, 0, -1), 0);
	assert_int_equal(tcmu_hdl_complete(&hdl, ids[0], 0, NULL, 0, -1), 0);
	assert_int_equal(tcmu_hdl_complete(&hdl, ids[1], 0, NULL, 0, -1), 0);
	assert_int_equal(tcmu_shared_reap(&a, on_done, &sa), 1);
	assert_int_equal(sa.ids[0], id);
	lock_pass(&a);
	/* The dead one's were released as they came. */
	assert_int_equal(a.sub.st->free_blks, NBLK);
	assert_int_equal(a.sub.st->nr_free, CMDS);
	assert_int_equal(a.st->nr_owners, 1);
	tcmu_shared_free(&a);
}

/* A child dies holding the ring's lock: the next taker recovers it. */
static void test_holder_dies(void **state)
{
	struct tcmu_shared a;
	struct seen sa = { .s = &a };
	uint16_t ids[8];
	int status, id;
	pid_t pid;

	assert_int_equal(tcmu_shared_create(&a, rg, SIZE, mem, mem_size, BLK,
					 CMDS, 2 * BLK), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct tcmu_shared c;

		if (tcmu_shared_join(&c, rg, SIZE, mem, mem_size, BLK) ||
		    queue_read(&c) <= 0)
			_exit(1);
		pthread_mutex_lock(&c.st->lock);
		c.st->holder = c.owner;
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	id = queue_read(&a);
	assert_true(id > 0);
	assert_int_equal(a.recovered, 1);
	assert_int_equal(take_all(ids, NULL), 2);
	assert_int_equal(tcmu_hdl_complete(&hdl, ids[1], 0, NULL, 0, -1), 0);
	assert_int_equal(tcmu_hdl_complete(&hdl, ids[0], 0, NULL, 0, -1), 0);
	assert_int_equal(tcmu_shared_reap(&a, on_done, &sa), 1);
	assert_int_equal(sa.ids[0], id);
	lock_pass(&a);
	assert_int_equal(a.sub.st->free_blks, NBLK);
	assert_int_equal(a.sub.st->nr_free, CMDS);
	tcmu_shared_free(&a);
}

/*
 * A child dies holding the lock halfway through queuing: blocks taken
 * and a cmd_id popped, its slot not yet busy. The next taker gets both
 * back.
 */
static void test_dies_mid_queue(void **state)
{
	struct tcmu_shared a;
	struct seen sa = { .s = &a };
	uint16_t ids[8];
	int status, id;
	pid_t pid;

	assert_int_equal(tcmu_shared_create(&a, rg, SIZE, mem, mem_size, BLK,
					 CMDS, 2 * BLK), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct tcmu_shared c;

		if (tcmu_shared_join(&c, rg, SIZE, mem, mem_size, BLK))
			_exit(1);
		pthread_mutex_lock(&c.st->lock);
		c.st->holder = c.owner;
		/* What sub_queue() does before the slot is marked busy. */
		c.sub.bitmap[0] |= 0x3;
		c.sub.st->free_blks -= 2;
		c.sub.st->blk_lo = 0;
		c.sub.st->nr_free--;
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	id = queue_read(&a);
	assert_true(id > 0);
	assert_int_equal(a.recovered, 1);
	assert_int_equal(a.sub.st->free_blks, NBLK - 1);
	assert_int_equal(a.sub.st->nr_free, CMDS - 1);
	assert_int_equal(take_all(ids, NULL), 1);
	assert_int_equal(tcmu_hdl_complete(&hdl, ids[0], 0, NULL, 0, -1), 0);
	assert_int_equal(tcmu_shared_reap(&a, on_done, &sa), 1);
	assert_int_equal(sa.ids[0], id);
	lock_pass(&a);
	assert_int_equal(a.sub.st->free_blks, NBLK);
	assert_int_equal(a.sub.st->nr_free, CMDS);
	tcmu_shared_free(&a);
}

/*
 * An owner with nothing out that finds no cmd_id: what another owner
 * took and handled, but has not released yet (it has no next pass soon),
 * is released for it at once.
 */
static void test_idle_takes_spent(void **state)
{
	struct tcmu_shared a, b;
	struct seen sb = { .s = &b };
	uint16_t ids[CMDS];
	unsigned int i, n;

	assert_int_equal(tcmu_shared_create(&a, rg, SIZE, mem, mem_size, BLK,
					 CMDS, 2 * BLK), 0);
	assert_int_equal(tcmu_shared_join(&b, rg, SIZE, mem, mem_size, BLK), 0);
	for (i = 0; i < CMDS; i++)
		assert_true(queue_read(&b) > 0);
	n = take_all(ids, NULL);
	assert_int_equal(n, CMDS);
	for (i = 0; i < n; i++)
		assert_int_equal(tcmu_hdl_complete(&hdl, ids[i], 0, NULL, 0,
						   -1), 0);
	assert_int_equal(tcmu_shared_reap(&b, on_done, &sb), CMDS);
	assert_int_equal(a.sub.st->nr_free, 0);
	/* a is idle and short of ids: b's spent ones go back for it. */
	assert_true(queue_read(&a) > 0);
	assert_int_equal(a.sub.st->nr_free, CMDS - 1);
	/* b's own pass later does not release them twice. */
	lock_pass(&b);
	assert_int_equal(a.sub.st->nr_free, CMDS - 1);
	tcmu_shared_free(&b);
	tcmu_shared_free(&a);
}

struct later {
	struct tcmu_shared *b;
	uint16_t id;
};

/* The other owner's command completes, is reaped and released. */
static void *complete_later(void *arg)
{
	struct later *l = arg;
	struct seen sb = { .s = l->b };

	usleep(20000);
	if (tcmu_hdl_complete(&hdl, l->id, 0, NULL, 0, -1) ||
	    tcmu_shared_reap(l->b, on_done, &sb) != 1)
		return (void *)1;
	lock_pass(l->b);
	return NULL;
}

/*
 * An owner with nothing out and no room sleeps, not spins, until another
 * owner's command is released; then its command goes in.
 */
static void test_idle_sleeps_for_room(void **state)
{
	struct tcmu_shared a, b;
	struct later l = { .b = &b };
	uint16_t ids[CMDS];
	pthread_t th;
	void *res;
	unsigned int i;

	assert_int_equal(tcmu_shared_create(&a, rg, SIZE, mem, mem_size, BLK,
					 CMDS, 2 * BLK), 0);
	assert_int_equal(tcmu_shared_join(&b, rg, SIZE, mem, mem_size, BLK), 0);
	for (i = 0; i < CMDS; i++)
		assert_true(queue_read(&b) > 0);
	assert_int_equal(take_all(ids, NULL), CMDS);
	l.id = ids[5];
	assert_int_equal(pthread_create(&th, NULL, complete_later, &l), 0);
	/* Woken by b's release well within its 100 ms sleep. */
	assert_int_equal(queue_read(&a), ids[5]);
	assert_int_equal(pthread_join(th, &res), 0);
	assert_null(res);
	/* With one of its own out it does not sleep: busy, to reap. */
	assert_int_equal(queue_read(&a), -EBUSY);
	tcmu_shared_free(&b);
	tcmu_shared_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_routed_to_owner, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_owner_dies, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_holder_dies, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_dies_mid_queue, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_idle_takes_spent, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_idle_sleeps_for_room,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
