/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The TCMU shared region, both sides, no I/O: the layout the kernel gives
 * a user backstore (<linux/target_core_user.h>), the submitter (the
 * kernel's role, played by the engine) and the handler that consumes the
 * command ring. Wake-ups (eventfd, UIO fd) belong to the owners.
 *
 * Submitter: tcmu_sub_queue() puts one CMD entry (and a PAD before it when
 * it would cross the end of the ring) with its data blocks, nothing is
 * visible to the handler until tcmu_sub_commit() publishes cmd_head.
 * Its data goes in the lowest free blocks of the data area, as the
 * kernel's, so only as much of the area as is in flight is ever touched.
 * tcmu_sub_reap() walks what the handler retired; with OOOC the cmd_id in
 * a retired entry names the command that completed, not the one queued
 * there, so ring space is reclaimed in ring order and data blocks by
 * cmd_id. Whatever the handler writes is checked before it is used.
 *
 * Handler: tcmu_hdl_next() hands out commands with the CDB and iovecs as
 * pointers, after checking every offset and length in the entry against
 * the region; tcmu_hdl_complete() answers one and moves cmd_tail.
 */
#ifndef TORUS_TCMU_RING_H
#define TORUS_TCMU_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/uio.h>

/*
 * The UAPI header pulls in <linux/uio.h>, whose struct iovec clashes with
 * libc's (same layout): keep libc's, so that socket code can include both.
 */
#ifndef __LINUX_UIO_H
#define __LINUX_UIO_H
#endif
#include <linux/types.h>
#include <linux/target_core_user.h>

/* The kernel's defaults: an 8 MiB map before the data area, 1 GiB of data. */
#define TCMU_MB_SIZE		((uint32_t)sizeof(struct tcmu_mailbox))
#define TCMU_DEF_CMDR_SIZE	((8u << 20) - TCMU_MB_SIZE)
#define TCMU_DEF_DATA_SIZE	(1ull << 30)
#define TCMU_DEF_BLK_SIZE	4096u
/* What we offer: out-of-order completion and short reads. */
#define TCMU_RING_FLAGS		(TCMU_MAILBOX_FLAG_CAP_OOOC | \
				 TCMU_MAILBOX_FLAG_CAP_READ_LEN)
/* The longest CDB SCSI defines (variable length, 260 bytes). */
#define TCMU_CDB_MAX		260u

/* Bytes needed for a region of this ring and data size. */
uint64_t tcmu_region_size(uint32_t cmdr_size, uint64_t data_size);

/*
 * Lay out mailbox and ring in @mem (@mem_size bytes, at least
 * tcmu_region_size()): version 2, @flags, cmdr_off right after the
 * mailbox, head = tail = 0. The data area is left as it is.
 * -EINVAL when a size is not a multiple of 8 or does not fit.
 */
int tcmu_region_layout(void *mem, uint64_t mem_size, uint32_t cmdr_size,
		       uint64_t data_size, uint16_t flags);

/* Bytes of the entry a command with @iov_cnt iovecs and a CDB needs. */
uint32_t tcmu_cmd_entry_size(uint32_t iov_cnt, uint32_t cdb_len);

/* ---- submitter (the kernel's side) ---- */

/*
 * Several submitters may share one ring, as every process writing to one
 * TCMU device shares the kernel's (under its cmdr_lock): then all that
 * changes lives in a shared "submitters' state" (struct tcmu_sub_state, in
 * memory every submitter maps), arrays at offsets from its start, never
 * pointers, under a process-shared robust mutex. Each submitter is an
 * owner, a small index taken at join; each command records its owner. A
 * submitter alone (tcmu_sub_init()) keeps the same state in private
 * memory and takes no lock; so does a shared ring's creator until another
 * joins (join_req and in_op, a two-flag handshake), and while alone it
 * completes its commands as it walks them, as a private one does.
 */
#define TCMU_SUB_OWNERS		64

struct tcmu_sub_slot;
struct tcmu_sub_ent;

struct tcmu_sub_owner {
	/* Held by the owner from join to leave: EOWNERDEAD says it died. */
	pthread_mutex_t alive;
	uint32_t state;			/* TCMU_OWNER_* */
	uint32_t busy;			/* its commands not yet released */
	uint16_t done_first, done_last;	/* its completions, oldest first */
	int32_t pid;
};

enum {
	TCMU_OWNER_FREE,
	TCMU_OWNER_LIVE,
	TCMU_OWNER_GONE,		/* left or died, commands still out */
};

struct tcmu_sub_state {
	uint32_t magic;
	uint32_t holder;		/* owner holding the lock */
	pthread_mutex_t lock;
	uint64_t size;			/* bytes, arrays included */
	/* Fixed at creation. */
	uint32_t cmdr_off, cmdr_size;
	uint64_t data_off;
	uint32_t blk_size, nr_blks, max_blks, nr_slots, ent_cap;
	uint64_t bitmap_off, ids_off, slots_off, blks_off, ents_off;
	/* Under the lock. */
	uint32_t head;			/* next entry goes here */
	uint32_t pub;			/* cmd_head as last published */
	uint32_t cleaned;		/* ring reclaimed up to here */
	uint32_t free_blks;
	uint32_t blk_lo;		/* no free block in the words below */
	uint32_t nr_free;		/* cmd_ids on the free stack */
	uint32_t ent_first, ent_cnt;	/* entries in the ring, ring order */
	uint32_t nr_owners;		/* live ones */
	uint32_t join_req;		/* another asked in: creator, lock */
	uint32_t in_op;			/* the creator, alone, is in an op */
	struct tcmu_sub_owner owners[TCMU_SUB_OWNERS];
};

struct tcmu_sub {
	uint8_t *base;
	struct tcmu_mailbox *mb;
	struct tcmu_sub_state *st;	/* shared, or private to this one */
	bool shared;			/* st is shared: lock it */
	bool solo;			/* the creator, no one joined yet */
	bool own_st;			/* st was allocated here */
	uint32_t owner;			/* this submitter's index */
	/* st's geometry and arrays, as this process maps them */
	uint32_t cmdr_off, cmdr_size;
	uint64_t data_off;
	uint32_t blk_size, nr_blks, max_blks, nr_slots, ent_cap;
	uint64_t *bitmap;		/* set: block in use */
	uint16_t *free_ids;		/* stack of free cmd_ids */
	struct tcmu_sub_slot *slots;	/* [cmd_id - 1] */
	uint32_t *slot_blks;		/* nr_slots * max_blks */
	struct tcmu_sub_ent *ents;	/* entries in the ring, in ring order */
	struct iovec *iov_tmp;		/* max_blks, for building an entry */
	uint32_t recovered;		/* dead holders this one recovered from */
};

/* What the handler answered for one command, valid in the callback only. */
struct tcmu_done {
	uint16_t cmd_id;
	uint8_t status;			/* SCSI status */
	uint8_t uflags;			/* TCMU_UFLAG_* */
	uint32_t read_len;		/* with TCMU_UFLAG_READ_LEN */
	const uint8_t *sense;		/* TCMU_SENSE_BUFFERSIZE bytes */
};

typedef void (*tcmu_done_fn)(void *arg, const struct tcmu_done *d);

/*
 * Attach to a region laid out by tcmu_region_layout(): the data area is
 * cut into @blk_size blocks; at most @max_cmds (1..65535) commands of at
 * most @max_data bytes each. Allocates everything it will ever use; the
 * only submitter of the ring.
 */
int tcmu_sub_init(struct tcmu_sub *s, void *region, uint64_t region_size,
		  uint32_t blk_size, uint32_t max_cmds, uint32_t max_data);
/* Bytes of shared state tcmu_sub_create() lays out for this geometry. */
uint64_t tcmu_sub_state_size(const void *region, uint64_t region_size,
			     uint32_t blk_size, uint32_t max_cmds,
			     uint32_t max_data);
/*
 * As tcmu_sub_init(), with the state laid out in @mem (@mem_size bytes,
 * zeroed, mapped shared) for others to join; this one is owner 0.
 */
int tcmu_sub_create(struct tcmu_sub *s, void *region, uint64_t region_size,
		    void *mem, uint64_t mem_size, uint32_t blk_size,
		    uint32_t max_cmds, uint32_t max_data);
/*
 * Join the ring whose shared state is @mem: -EINVAL when the state does
 * not match the region, -E2BIG when @max_data exceeds the ring's commands,
 * -EUSERS when TCMU_SUB_OWNERS submitters are in already.
 */
int tcmu_sub_join(struct tcmu_sub *s, void *region, uint64_t region_size,
		  void *mem, uint64_t mem_size, uint32_t max_data);
/*
 * Leave: this owner's commands still out are released as they complete,
 * by whoever reaps them. Frees what tcmu_sub_init() allocated.
 */
void tcmu_sub_free(struct tcmu_sub *s);

/*
 * Queue a command: @cdb, @data_len bytes of data area, filled from @wbuf
 * when not NULL. Returns the cmd_id, -EBUSY when the ring, the data area
 * or the command slots have no room now, -EINVAL when it never could.
 * On a shared ring cmd_head is published at once (others publish too).
 */
int tcmu_sub_queue(struct tcmu_sub *s, const void *cdb, uint32_t cdb_len,
		   uint32_t data_len, const void *wbuf);
/* Publish everything queued (release store of cmd_head). */
void tcmu_sub_commit(struct tcmu_sub *s);
/*
 * Walk what the handler retired, reclaim its ring space, and hand every
 * completion to its owner; call @fn for this owner's (others' were handed
 * to theirs), outside the lock, then release their data blocks and
 * cmd_ids. Returns how many of this owner's, or -EPROTO when the handler
 * broke the ring (the submitters' own memory is untouched; stop using
 * the ring).
 */
int tcmu_sub_reap(struct tcmu_sub *s, tcmu_done_fn fn, void *arg);
/* Copy a command's data area out (a read's payload); in the callback. */
int tcmu_sub_copy_out(const struct tcmu_sub *s, uint16_t cmd_id, void *buf,
		      uint32_t len);
/* cmd_tail's bounds for a check: cleaned and published head, now. */
void tcmu_sub_bounds(struct tcmu_sub *s, uint32_t *cleaned, uint32_t *pub);
/* Ring bytes free now (one is always kept back). */
uint32_t tcmu_sub_ring_free(const struct tcmu_sub *s);

/* ---- handler ---- */

struct tcmu_hdl {
	uint8_t *base;
	uint64_t size;
	uint32_t cmdr_off, cmdr_size;	/* read once, checked */
	uint64_t data_off;
	uint32_t next;			/* next entry to read */
	uint32_t tail;			/* completions retired up to here */
};

struct tcmu_hdl_cmd {
	uint16_t cmd_id;
	/* In the ring: parse it before the next tcmu_hdl_complete(). */
	const uint8_t *cdb;
	uint32_t cdb_max;		/* bytes readable at cdb (<= TCMU_CDB_MAX) */
	uint32_t iov_cnt;
	struct iovec *iov;		/* caller's array, pointers into the region */
	uint32_t iov_max;		/* its size */
};

/* Check the mailbox (version 2, ring inside @size) and start at cmd_tail. */
int tcmu_hdl_init(struct tcmu_hdl *h, void *region, uint64_t size);
/*
 * Next command: 1 with @cmd filled, 0 when nothing is new, -EINVAL when
 * the entry is malformed (cmd->cmd_id set: complete it with a CHECK
 * CONDITION), -EPROTO when the ring cannot be walked (stop). PAD entries
 * are skipped, others are marked TCMU_UFLAG_UNKNOWN_OP and skipped.
 */
int tcmu_hdl_next(struct tcmu_hdl *h, struct tcmu_hdl_cmd *cmd);
/*
 * Complete the oldest unretired entry as @cmd_id (OOOC): status, sense
 * (up to TCMU_SENSE_BUFFERSIZE bytes, may be NULL), a short read's length
 * when @read_len >= 0; then cmd_tail moves (release store). -EPROTO when
 * nothing is outstanding.
 */
int tcmu_hdl_complete(struct tcmu_hdl *h, uint16_t cmd_id, uint8_t status,
		      const void *sense, uint32_t sense_len, int64_t read_len);

#endif /* TORUS_TCMU_RING_H */
