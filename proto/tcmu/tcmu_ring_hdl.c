// SPDX-License-Identifier: GPL-2.0-only
/*
 * The handler's side of a TCMU command ring (see tcmu_ring_hdl.h). The
 * submitter may be hostile: every value read from the region is read once
 * into a local and checked there, so it cannot change under a check.
 */
#include <errno.h>
#include <string.h>

#include "tcmu_ring_hdl.h"

int tcmu_hdl_init(struct tcmu_hdl *h, void *region, uint64_t size)
{
	struct tcmu_mailbox mb;
	uint32_t tail;

	memset(h, 0, sizeof(*h));
	if (size < TCMU_MB_SIZE)
		return -EINVAL;
	memcpy(&mb, region, sizeof(mb));
	if (mb.version != TCMU_MAILBOX_VERSION)
		return -EPROTONOSUPPORT;
	if (mb.cmdr_off < TCMU_MB_SIZE || mb.cmdr_off % TCMU_ENT_ALIGN ||
	    !mb.cmdr_size || mb.cmdr_size % TCMU_ENT_ALIGN ||
	    (uint64_t)mb.cmdr_off + mb.cmdr_size > size)
		return -EINVAL;
	tail = __atomic_load_n(tcmu_mb_tail(region), __ATOMIC_ACQUIRE);
	if (tail >= mb.cmdr_size || tail % TCMU_ENT_ALIGN)
		return -EINVAL;
	h->base = region;
	h->size = size;
	h->cmdr_off = mb.cmdr_off;
	h->cmdr_size = mb.cmdr_size;
	h->data_off = (uint64_t)mb.cmdr_off + mb.cmdr_size;
	h->next = h->tail = tail;
	return 0;
}

/* An entry's header at @pos, with its length checked against @avail. */
static int hdl_hdr(const struct tcmu_hdl *h, uint32_t pos, uint32_t avail,
		   struct tcmu_cmd_entry_hdr *hdr)
{
	uint32_t len;

	memcpy(hdr, h->base + h->cmdr_off + pos, sizeof(*hdr));
	len = tcmu_hdr_get_len(hdr->len_op);
	/* Whole, aligned, never past the head nor across the ring's end. */
	if (!len || len > avail || len > h->cmdr_size - pos)
		return -EPROTO;
	return 0;
}

static uint32_t hdl_head(const struct tcmu_hdl *h, int *err)
{
	uint32_t head;

	head = __atomic_load_n(tcmu_mb_head(h->base), __ATOMIC_ACQUIRE);
	*err = head >= h->cmdr_size || head % TCMU_ENT_ALIGN ? -EPROTO : 0;
	return head;
}

/* Retire entries at the tail that need no completion, then publish. */
static int hdl_retire(struct tcmu_hdl *h)
{
	struct tcmu_cmd_entry_hdr hdr;

	while (h->tail != h->next) {
		uint32_t avail = tcmu_ring_used(h->next, h->tail, h->cmdr_size);

		if (hdl_hdr(h, h->tail, avail, &hdr))
			return -EPROTO;
		if (tcmu_hdr_get_op(hdr.len_op) == TCMU_OP_CMD)
			break;
		h->tail = (h->tail + tcmu_hdr_get_len(hdr.len_op)) %
			  h->cmdr_size;
	}
	__atomic_store_n(tcmu_mb_tail(h->base), h->tail, __ATOMIC_RELEASE);
	return 0;
}

/* Check a CMD entry's request (read once into a copy) and translate it. */
static int hdl_cmd(const struct tcmu_hdl *h, uint32_t pos, uint32_t len,
		   struct tcmu_hdl_cmd *cmd)
{
	const uint8_t *ent = h->base + h->cmdr_off + pos;
	uint64_t ent_off = (uint64_t)h->cmdr_off + pos, iov_end, cdb_off;
	struct tcmu_cmd_entry e;
	uint32_t i;

	memcpy(&e, ent, sizeof(e));
	cmd->iov_cnt = 0;
	cmd->cdb = NULL;
	cmd->cdb_max = 0;
	/* No bidirectional or DIF data: we never offer either. */
	if (e.req.iov_bidi_cnt || e.req.iov_dif_cnt ||
	    e.req.iov_cnt > cmd->iov_max ||
	    e.req.iov_cnt > (len - TCMU_IOV_OFF) / sizeof(struct iovec))
		return -EINVAL;
	iov_end = ent_off + TCMU_IOV_OFF + (uint64_t)e.req.iov_cnt *
		  sizeof(struct iovec);
	/*
	 * The CDB lies in the entry after the iovecs and the response, as the
	 * kernel puts it: completing another command here leaves it intact.
	 */
	cdb_off = e.req.cdb_off;
	if (cdb_off < iov_end || cdb_off < ent_off + TCMU_ENT_MIN ||
	    cdb_off >= ent_off + len)
		return -EINVAL;
	for (i = 0; i < e.req.iov_cnt; i++) {
		struct iovec v;
		uint64_t off;

		memcpy(&v, ent + TCMU_IOV_OFF + i * sizeof(v), sizeof(v));
		off = (uint64_t)(uintptr_t)v.iov_base;
		/* Data lives in the data area only, and ends inside it. */
		if (off < h->data_off || off > h->size ||
		    v.iov_len > h->size - off)
			return -EINVAL;
		cmd->iov[i].iov_base = h->base + off;
		cmd->iov[i].iov_len = v.iov_len;
	}
	cmd->iov_cnt = e.req.iov_cnt;
	cmd->cdb = h->base + cdb_off;
	cmd->cdb_max = ent_off + len - cdb_off;
	if (cmd->cdb_max > TCMU_CDB_MAX)
		cmd->cdb_max = TCMU_CDB_MAX;
	return 0;
}

int tcmu_hdl_next(struct tcmu_hdl *h, struct tcmu_hdl_cmd *cmd)
{
	struct tcmu_cmd_entry_hdr hdr;
	uint32_t head;
	int err;

	head = hdl_head(h, &err);
	if (err)
		return err;
	/*
	 * The head never moves back over entries already handed out: that
	 * would hand out commands still outstanding a second time.
	 */
	if (tcmu_ring_used(head, h->tail, h->cmdr_size) <
	    tcmu_ring_used(h->next, h->tail, h->cmdr_size))
		return -EPROTO;
	while (h->next != head) {
		uint32_t avail = tcmu_ring_used(head, h->next, h->cmdr_size);
		uint32_t pos = h->next, len;
		uint8_t *uflags;

		if (hdl_hdr(h, pos, avail, &hdr))
			return -EPROTO;
		len = tcmu_hdr_get_len(hdr.len_op);
		h->next = (pos + len) % h->cmdr_size;
		switch (tcmu_hdr_get_op(hdr.len_op)) {
		case TCMU_OP_PAD:
			break;
		case TCMU_OP_CMD:
			/* Too short to carry a response: cannot be completed. */
			if (len < TCMU_ENT_MIN)
				return -EPROTO;
			cmd->cmd_id = hdr.cmd_id;
			cmd->kflags = hdr.kflags;
			err = hdl_cmd(h, pos, len, cmd);
			return err ? err : 1;
		default:
			/* Tell the submitter; it needs no completion. */
			uflags = h->base + h->cmdr_off + pos +
				 offsetof(struct tcmu_cmd_entry_hdr, uflags);
			*uflags |= TCMU_UFLAG_UNKNOWN_OP;
			break;
		}
		if (hdl_retire(h))
			return -EPROTO;
	}
	return 0;
}

int tcmu_hdl_complete(struct tcmu_hdl *h, uint16_t cmd_id, uint8_t status,
		      const void *sense, uint32_t sense_len, int64_t read_len)
{
	struct tcmu_cmd_entry_hdr hdr;
	struct tcmu_cmd_entry *ent;
	uint32_t avail;

	/* hdl_retire() left the tail on a CMD entry, or at next. */
	if (h->tail == h->next)
		return -EPROTO;
	avail = tcmu_ring_used(h->next, h->tail, h->cmdr_size);
	if (hdl_hdr(h, h->tail, avail, &hdr) ||
	    tcmu_hdr_get_len(hdr.len_op) < TCMU_ENT_MIN)
		return -EPROTO;
	ent = (void *)(h->base + h->cmdr_off + h->tail);
	/* With OOOC the entry names whichever command completed. */
	ent->hdr.cmd_id = cmd_id;
	ent->rsp.scsi_status = status;
	if (sense_len > TCMU_SENSE_BUFFERSIZE)
		sense_len = TCMU_SENSE_BUFFERSIZE;
	memset(ent->rsp.sense_buffer, 0, TCMU_SENSE_BUFFERSIZE);
	if (sense)
		memcpy(ent->rsp.sense_buffer, sense, sense_len);
	if (read_len >= 0) {
		ent->rsp.read_len = read_len;
		ent->hdr.uflags |= TCMU_UFLAG_READ_LEN;
	}
	h->tail = (h->tail + tcmu_hdr_get_len(hdr.len_op)) % h->cmdr_size;
	return hdl_retire(h);
}
