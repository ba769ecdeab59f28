/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The kernel's side of a TCMU ring, in userspace: a region in a memfd laid
 * out as the kernel lays it out, attached to a handler host over a Unix
 * socket with two eventfds for the UIO fd's two directions
 * (proto/tcmu/tcmu_attach.h). It sends SCSI CDBs the caller builds and
 * copies data into and out of the data area, as the kernel does. It knows
 * nothing of fio: a command carries an opaque user pointer, handed back
 * with its completion.
 *
 * queue() puts a command in the ring and publishes cmd_head (release) at
 * once, as the kernel does; submit() wakes the handler, once for all that
 * was queued since the last wake-up, as the kernel notifies once per
 * unplug. With hold, cmd_head only moves at submit(). reap() retires
 * what the handler completed, in any order, handing each completion to
 * the caller's function as it is retired. All memory is allocated at
 * attach.
 *
 * A shared ring is one per handler device, as the kernel has: clients
 * in any process join it, each an owner of the commands it queues, and
 * whoever walks the retired entries hands each completion to its owner
 * (tcmu_shared.h); the handler host wakes a client's own done eventfd
 * only after a pass that completed one of its commands (the wake tag it
 * gave the client at attach, in each entry's kflags), and the client
 * finds them walked already or walks them itself.
 */
#ifndef TORUS_TCMU_CLIENT_H
#define TORUS_TCMU_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "tcmu_sense.h"

struct tcmu_client;

/* A finished command: its user pointer, errno and what the handler said. */
struct tcmu_completion {
	void *user;
	uint16_t cmd_id;		/* its ring id (0: failed unanswered) */
	int error;			/* 0 or a positive errno */
	uint8_t status;			/* SCSI status (0xff: never answered) */
	bool has_sense;
	struct tcmu_sense sense;	/* with has_sense only */
	/*
	 * Data-in bytes copied out: less than asked when the handler said
	 * so (READ_LEN), a residual as the kernel's, not an error.
	 */
	uint32_t data_len;
	uint64_t seen_ns;		/* its reap pass's clock (stamp_seen) */
	/* The cause, when status and sense miss it; "" otherwise. */
	char why[96];
};

typedef void tcmu_complete_fn(void *arg, const struct tcmu_completion *done);

struct tcmu_client_cfg {
	uint32_t ring_size;		/* mailbox + command ring, bytes */
	uint64_t data_size;		/* data area, bytes */
	uint32_t max_cmds;		/* commands outstanding, 1..65535 */
	uint32_t max_data;		/* bytes of data per command */
	unsigned int timeout_s;		/* attach and per command; 0: none */
	const volatile bool *stop;	/* give up waiting when set (or NULL) */
	bool hold;			/* publish at submit(), not at queue() */
	/*
	 * Every completion's seen_ns (timeline=): the clock read at each
	 * reap pass that finds any; without, seen_ns is 0.
	 */
	bool stamp_seen;
	/*
	 * Share the device's ring with every other client that asks to: the
	 * first one's region, the others join it (their ring_size, data_size
	 * and max_cmds then give way to the ring's; max_data must fit).
	 */
	bool shared;
	/* Gets every completion, once, from reap() or cancel(). */
	tcmu_complete_fn *complete;
	void *complete_arg;
};

/*
 * How many commands to give a ring (cfg->max_cmds) with a data area of
 * data_size bytes and commands of up to max_data bytes: want, but each
 * command keeps a list of the data area's blocks for max_data, so not
 * many more than four data areas' worth of the largest (and not fewer
 * than least for that); at most the ring's 65535 (tcmu_client_size.c).
 */
uint32_t tcmu_client_cmds_for(uint64_t data_size, uint32_t max_data,
			      uint32_t want, uint32_t least);

/*
 * Creates the region and attaches it to the handler host listening on
 * socket_path. NULL with a message naming label in err.
 */
struct tcmu_client *tcmu_client_attach(const char *socket_path,
				       const struct tcmu_client_cfg *cfg,
				       const char *label, char *err,
				       size_t errlen);

/*
 * Queues a command. wbuf (data_len bytes) is copied into the data area
 * now; a read's data_len bytes are copied out to rbuf when it completes.
 * 0, -EBUSY (no room in the ring, data area or commands: reap first),
 * -EINVAL (never fits), -ENOTCONN (the ring is down).
 */
int tcmu_client_queue(struct tcmu_client *c, const uint8_t *cdb,
		      uint32_t cdb_len, uint32_t data_len, const void *wbuf,
		      void *rbuf, void *user);
/* Publishes what is held and wakes the handler (once): 0 or -errno. */
int tcmu_client_submit(struct tcmu_client *c);
/*
 * Hands every completion the handler posted to cfg->complete, waiting
 * until at least min have come or timeout passes (NULL: no limit): the
 * count handed on, or -errno.
 */
int tcmu_client_reap(struct tcmu_client *c, unsigned int min,
		     const struct timespec *timeout);
/* Fails everything outstanding with error and takes the ring down. */
void tcmu_client_cancel(struct tcmu_client *c, int error);
/* Commands queued and held back from the handler (hold only). */
unsigned int tcmu_client_held(const struct tcmu_client *c);
/* Commands queued and not yet completed. */
unsigned int tcmu_client_inflight(const struct tcmu_client *c);

/*
 * One command start to end, for set-up (INQUIRY and the like), with no
 * other command outstanding: 0 with *done filled (its error may be set),
 * or -errno when it never completed.
 */
int tcmu_client_exec(struct tcmu_client *c, const uint8_t *cdb,
		     uint32_t cdb_len, uint32_t data_len, const void *wbuf,
		     void *rbuf, struct tcmu_completion *done);

/*
 * The work done here on the kernel's behalf, both sides of it.
 *
 * Completion, which the kernel does inside the handler's notify write():
 * nanoseconds from finding completions in the ring to having handed them
 * on (walking entries, copying reads out, freeing blocks and cmd_ids, and
 * the completer, where the kernel only queues each completion for a
 * kworker), and the commands it was for. Without stamp_seen, one pass
 * with completions in TCMU_WORK_SAMPLE is timed: ns is what those passes
 * took per command, times every command.
 *
 * Submission, which the kernel does in a kworker: putting a command in
 * the ring (its cmd_id, data blocks, entry and CDB, a write's data copied
 * in, cmd_head published), timed on a sample of the commands (sub_timed
 * of sub_cmds: about one in 16, at random gaps) so that the clock is not
 * read twice per command, and waking the handler (submit()'s write, the
 * kernel's uio_event_notify from tcmu_unplug_device), timed on a sample
 * of the kicks alike (kick_timed of kicks): the doorbell's look, and the
 * eventfd write() when the handler may be asleep (woken of kicks; the
 * kernel's wake_up costs little when it is not). sub_ns is both, per
 * command, times every command.
 *
 * Each span is counted less one clock read's cost, which it holds besides
 * its work. Set-up commands (exec()) are not counted in either.
 */
#define TCMU_WORK_SAMPLE	8
struct tcmu_client_work {
	uint64_t ns;
	uint64_t cmds;
	uint64_t sub_ns;		/* estimated for all sub_cmds */
	uint64_t sub_timed;		/* commands timed */
	uint64_t sub_cmds;
	uint64_t kick_timed;		/* wake-ups timed, of kicks */
	uint64_t kicks;
	uint64_t woken;			/* kicks that wrote the eventfd */
};
void tcmu_client_work(const struct tcmu_client *c,
		      struct tcmu_client_work *w);

/* Detaches (closes the socket) and frees everything. */
void tcmu_client_free(struct tcmu_client *c);

#endif /* TORUS_TCMU_CLIENT_H */
