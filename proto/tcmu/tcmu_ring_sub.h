/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The submitter's side of a TCMU command ring (the kernel's role, played
 * by the engine), no I/O and no locking: the layout is tcmu_ring.h.
 *
 * tcmu_sub_queue() puts one CMD entry (and a PAD before it when it would
 * cross the end of the ring) with its data blocks, nothing is visible to
 * the handler until tcmu_sub_commit() publishes cmd_head. Its data goes
 * in the lowest free blocks of the data area, as the kernel's, so only as
 * much of the area as is in flight is ever touched. tcmu_sub_reap() walks
 * what the handler retired; with OOOC the cmd_id in a retired entry names
 * the command that completed, not the one queued there, so ring space is
 * reclaimed in ring order and data blocks by cmd_id. Whatever the handler
 * writes is checked before it is used.
 *
 * All that changes lives in a "submitters' state" (struct tcmu_sub_state):
 * arrays at offsets from its start, never pointers, so that it may sit in
 * memory other submitters map. Serialising them, and routing completions
 * between them, is the caller's: this file knows neither locks nor
 * processes.
 */
#ifndef TORUS_TCMU_RING_SUB_H
#define TORUS_TCMU_RING_SUB_H

#include "tcmu_ring.h"

struct tcmu_sub_slot;
struct tcmu_sub_ent;

struct tcmu_sub_state {
	uint32_t magic;
	uint64_t size;			/* bytes, arrays included */
	/* Fixed at creation. */
	uint32_t cmdr_off, cmdr_size;
	uint64_t data_off;
	uint32_t blk_size, nr_blks, max_blks, nr_slots, ent_cap;
	uint64_t bitmap_off, ids_off, slots_off, blks_off, ents_off;
	/* Changed by every queue and reap. */
	uint32_t head;			/* next entry goes here */
	uint32_t pub;			/* cmd_head as last published */
	uint32_t cleaned;		/* ring reclaimed up to here */
	uint32_t free_blks;
	uint32_t blk_lo;		/* no free block in the words below */
	uint32_t nr_free;		/* cmd_ids on the free stack */
	uint32_t ent_first, ent_cnt;	/* entries in the ring, ring order */
};

struct tcmu_sub {
	uint8_t *base;
	struct tcmu_mailbox *mb;
	struct tcmu_sub_state *st;	/* the state, maybe others' too */
	bool own_st;			/* st was allocated here */
	/* st's geometry and arrays, as this process maps them */
	uint32_t cmdr_off, cmdr_size;
	uint64_t data_off;
	uint32_t blk_size, nr_blks, max_blks, nr_slots, ent_cap;
	uint32_t blk_shift;		/* log2(blk_size); 0: no power of 2 */
	uint64_t *bitmap;		/* set: block in use */
	uint16_t *free_ids;		/* stack of free cmd_ids */
	struct tcmu_sub_slot *slots;	/* [cmd_id - 1] */
	uint32_t *slot_blks;		/* nr_slots * max_blks */
	struct tcmu_sub_ent *ents;	/* entries in the ring, in ring order */
	struct iovec *iov_tmp;		/* max_blks, for building an entry */
	uint8_t kflags;			/* in each CMD entry: a wake tag */
};

/* What the handler answered for one command, valid in the callback only. */
struct tcmu_done {
	uint16_t cmd_id;
	uint8_t status;			/* SCSI status */
	uint8_t uflags;			/* TCMU_UFLAG_* */
	uint32_t read_len;		/* with TCMU_UFLAG_READ_LEN */
	/* TCMU_SENSE_BUFFERSIZE bytes: with CHECK CONDITION only, else 0s */
	const uint8_t *sense;
};

typedef void (*tcmu_done_fn)(void *arg, const struct tcmu_done *d);

/*
 * Attach to a region laid out by tcmu_region_layout(): the data area is
 * cut into @blk_size blocks; at most @max_cmds (1..65535) commands of at
 * most @max_data bytes each. Allocates everything it will ever use, the
 * state included.
 */
int tcmu_sub_init(struct tcmu_sub *s, void *region, uint64_t region_size,
		  uint32_t blk_size, uint32_t max_cmds, uint32_t max_data);
/* Bytes of state tcmu_sub_init_in() lays out for this geometry (0: none). */
uint64_t tcmu_sub_state_size(const void *region, uint64_t region_size,
			     uint32_t blk_size, uint32_t max_cmds,
			     uint32_t max_data);
/* As tcmu_sub_init(), with the state laid out in @mem (@mem_size, zeroed). */
int tcmu_sub_init_in(struct tcmu_sub *s, void *region, uint64_t region_size,
		     void *mem, uint64_t mem_size, uint32_t blk_size,
		     uint32_t max_cmds, uint32_t max_data);
/*
 * Use the state tcmu_sub_init_in() laid out in @mem (mapped here too):
 * -EINVAL when it does not match the region, -E2BIG when @max_data
 * exceeds the ring's commands.
 */
int tcmu_sub_attach(struct tcmu_sub *s, void *region, uint64_t region_size,
		    void *mem, uint64_t mem_size, uint32_t max_data);
/* Frees what this one allocated; a state in others' memory stays. */
void tcmu_sub_free(struct tcmu_sub *s);

/*
 * Queue a command: @cdb, @data_len bytes of data area, filled from @wbuf
 * when not NULL. Returns the cmd_id, -EBUSY when the ring, the data area
 * or the command slots have no room now, -EINVAL when it never could.
 */
int tcmu_sub_queue(struct tcmu_sub *s, const void *cdb, uint32_t cdb_len,
		   uint32_t data_len, const void *wbuf);
/* Publish everything queued (release store of cmd_head). */
void tcmu_sub_commit(struct tcmu_sub *s);
/*
 * Walk what the handler retired and reclaim its ring space: @fn gets each
 * command's answer, which stays queued (its data blocks and cmd_id its
 * own) until tcmu_sub_release(). Returns how many, or -EPROTO when the
 * handler broke the ring (the state is untouched; stop using the ring).
 */
int tcmu_sub_walk(struct tcmu_sub *s, tcmu_done_fn fn, void *arg);
/* A walked command is over: its data blocks and cmd_id go back. */
void tcmu_sub_release(struct tcmu_sub *s, uint16_t cmd_id);
/* tcmu_sub_walk(), each command released after @fn (which may be NULL). */
int tcmu_sub_reap(struct tcmu_sub *s, tcmu_done_fn fn, void *arg);
/*
 * Copy a command's data area out to @buf (a read's payload), between its
 * walk and its release.
 */
int tcmu_sub_copy_out(const struct tcmu_sub *s, uint16_t cmd_id, void *buf,
		      uint32_t len);
/*
 * The free blocks and cmd_ids again from the commands queued, after a
 * change to the state was cut short halfway.
 */
void tcmu_sub_rebuild(struct tcmu_sub *s);
/* Ring bytes free now (one is always kept back). */
uint32_t tcmu_sub_ring_free(const struct tcmu_sub *s);

#endif /* TORUS_TCMU_RING_SUB_H */
