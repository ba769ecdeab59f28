/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the TCMU client's two halves share: tcmu_client_attach.c makes the
 * region and attaches it (or joins the device's ring), tcmu_client_io.c
 * queues and reaps. Not for use outside client/tcmu.
 */
#ifndef TORUS_TCMU_CLIENT_STATE_H
#define TORUS_TCMU_CLIENT_STATE_H

#include "tcmu_client.h"
#include "tcmu_doorbell.h"
#include "tcmu_shared.h"

/* Waits are cut into slices so that a stop request is seen. */
#define SLICE_MS		100

/* What one cmd_id is for, until the handler completes it. */
struct cmd_rec {
	void *user;
	void *rbuf;
	uint32_t rlen;
	uint64_t start_ns;
	bool busy;
	uint8_t opcode;		/* its CDB's, for messages */
};

struct tcmu_client {
	int sock, region_fd, kick_fd, done_fd, state_fd;
	uint8_t *region;
	uint64_t region_size;
	void *state;			/* shared submitters' state, mapped */
	uint64_t state_size;
	bool shared, joined;
	uint32_t recovered;		/* dead lock holders reported */
	struct tcmu_shared sh;		/* the ring, maybe shared */
	struct tcmu_doorbell *page;	/* the region's doorbell page, mapped */
	struct tcmu_doorbell *bell;	/* the page, if the host keeps it */
	struct cmd_rec *cmds;		/* [cmd_id], 1..nr_ids */
	uint32_t max_cmds;		/* this client's commands at once */
	uint32_t nr_ids;		/* the ring's cmd_ids */
	tcmu_complete_fn *complete;	/* where completions go */
	void *complete_arg;
	unsigned int completed;		/* handed on by this reap() */
	unsigned int inflight;		/* queued, not yet completed */
	unsigned int held;		/* queued, cmd_head not yet moved */
	unsigned int unkicked;		/* queued since the last wake-up */
	bool hold;			/* cmd_head moves at submit() */
	bool down;
	bool in_exec;			/* a set-up command: not counted */
	bool stamp_seen;		/* every pass's clock, for seen_ns */
	bool time_pass;			/* this reap pass is timed */
	uint64_t pass_ns;		/* this reap pass's first completion */
	/* The kernel's shares so far (tcmu_client_work() sums them up). */
	uint64_t passes, timed_ns, timed_cmds, work_cmds;
	uint64_t walk_ns;		/* a shared ring's walks, all timed */
	uint64_t sub_ns, sub_timed, sub_cmds;
	uint64_t kick_ns, kick_timed, kicks;
	uint64_t woken;			/* kicks that wrote the eventfd */
	uint32_t sub_gap;		/* commands to queue untimed */
	uint32_t kick_gap;		/* kicks to send untimed */
	uint32_t sub_rand;		/* the gaps' generator */
	uint64_t clock_ns;		/* a clock read's cost (0: not yet) */
	unsigned int timeout_s;
	uint64_t next_scan_ns;
	const volatile bool *stop;
	char label[256];
};

#endif /* TORUS_TCMU_CLIENT_STATE_H */
