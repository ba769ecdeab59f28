/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One TCMU command ring being served: the handler side of the ring
 * (proto/tcmu), the SCSI target's per-ring state, and the two wake-ups.
 * Over a socket these are the engine's eventfds (8-byte counters); from a
 * kernel both are the UIO fd (4-byte read to wait, 4-byte write to say
 * that commands were retired).
 *
 * A store with asynchronous requests (store_ops.aio) gets the ring's
 * I/O started, not waited for: a command in flight keeps its state in a
 * struct ring_cmd of the ring's, one for every command the ring can hold,
 * and completes when the store says so, in any order.
 */
#ifndef TCMU_SHIM_RING_H
#define TCMU_SHIM_RING_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "scsi_target.h"
#include "tcmu_attach.h"
#include "tcmu_doorbell.h"
#include "tcmu_ring_hdl.h"
#include "timeline_rec.h"

/* A command's iovecs kept inline; one with more runs synchronously. */
#define RING_CMD_IOV		16

struct ring;

/*
 * A shared ring's submitters: each one's done eventfd at its wake tag's
 * index (tag - 1; -1: free), as long as it is attached.
 */
#define RING_PEERS_MAX		TCMU_TAG_MAX

struct ring_peers {
	pthread_mutex_t lock;
	unsigned int n;
	int fds[RING_PEERS_MAX];
};

struct ring_cmd {
	struct scsi_io io;
	struct ring *r;
	uint16_t cmd_id;
	uint8_t opcode;
	uint8_t tag;			/* its submitter's wake tag */
	struct iovec iov[RING_CMD_IOV];	/* the data area's, copied */
	struct tl_rec rec;		/* --timeline (ring_stamps.h) */
};

struct ring {
	char name[64];
	struct tcmu_hdl hdl;
	struct tcmu_hdl_cmd cmd;	/* its iov array is ours */
	struct scsi_lu lu;
	int wait_fd;			/* readable: cmd_head moved */
	int notify_fd;			/* written: cmd_tail moved */
	/*
	 * The client's doorbell (tcmu_doorbell.h): set before each sleep,
	 * so that a client kicks only a ring thread that may be asleep.
	 * NULL: a kernel's ring, or a client without one.
	 */
	struct tcmu_doorbell *bell;
	/*
	 * Or, for a ring its submitters share, each one's fd: a pass wakes
	 * the submitters whose commands it completed (the entry's kflags
	 * name them), as the kernel completes each command to its initiator.
	 */
	struct ring_peers *peers;
	uint64_t wake;			/* tags (bit tag - 1) to wake */
	bool wake_all;			/* an untagged command completed */
	bool uio;			/* 4-byte UIO reads and writes */
	bool read_len;			/* the producer takes short reads */
	bool ooo;			/* and completions out of order */
	uint64_t nr_cmds;

	/* Asynchronous store requests; store_fd -1: all synchronous. */
	int store_fd;
	struct ring_cmd *cmds;
	struct ring_cmd **free_cmds;	/* a stack, so few are touched */
	uint32_t nr_slots, nr_free;
	uint32_t inflight, max_inflight;
	uint32_t started;		/* since the last commit */
	uint32_t done;			/* completed since the last notify */
	bool reap_due;			/* the store may have finished some */
	bool broken;			/* a completion could not be written */

	/* --timeline (ring_stamps.h); tl NULL: off */
	struct tl_writer *tl;
	struct tl_rec rec;		/* the command being taken */
	uint16_t stream;		/* the ring's number */
	uint32_t look_from, look_head;	/* the last look: entries it saw */
	uint64_t look_ns;		/* and when */
};

/*
 * Check the mailbox of @region (@size bytes mapped) and allocate every
 * buffer the ring will need; in the thread that will run it (a store's
 * asynchronous requests are set up here). 0, or -errno with a message in @err:
 * -EPROTONOSUPPORT for a mailbox version other than 2.
 */
int ring_init(struct ring *r, const char *name, void *region, uint64_t size,
	      const struct scsi_target *t, struct store *st, char *err,
	      size_t errlen);
void ring_free(struct ring *r);

/* The ring's figures at detach: commands, most in flight to the store. */
void ring_report(const struct ring *r);

/*
 * Serve commands until @stop_fd (a socket or a signalfd) has an event:
 * returns 1 then, with what was in flight to the store cancelled;
 * -EPROTO when the producer broke the ring; -errno when waiting or
 * notifying failed.
 */
int ring_run(struct ring *r, int stop_fd);

#endif /* TCMU_SHIM_RING_H */
