// SPDX-License-Identifier: GPL-2.0-only
/*
 * The TCMU transport before any I/O (tcmu_inspect.h): its options, the
 * ring attached for a uri, what INQUIRY, READ CAPACITY(16), MODE SENSE and
 * the Block Limits page say (tcmu_identify.c) as the glue's target, and
 * the checks that refuse a job the device cannot serve.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* fio's option table types (struct fio_option, FIO_OPT_*). */
#include "fio.h"
#include "optgroup.h"

#include "../option_table.h"
#include "tcmu_inspect.h"
#include "tcmu_uri.h"

static int set_trim_mode(void *eo, const char *value)
{
	return torus_option_set(eo, "trim_mode", value);
}

static int set_ring(void *eo, const char *value)
{
	return torus_option_set(eo, "ring", value);
}

struct fio_option tcmu_options[] = {
	{
		.name	= "ring_size",
		.lname	= "TCMU command ring size",
		.help	= "Bytes of the mailbox and command ring, a multiple of 8; the kernel's cmd_ring_size_mb",
		.type	= FIO_OPT_STR_VAL,
		.off1	= offsetof(struct tcmu_opts, ring_size),
		.def	= DEF_RING_SIZE,
		.minval	= MIN_RING_SIZE,
		.maxval	= MAX_RING_SIZE,
	},
	{
		.name	= "data_size",
		.lname	= "TCMU data area size",
		.help	= "Bytes of the data area commands' payloads pass through, a multiple of 4k and at least max_transfer; the kernel's max_data_area_mb",
		.type	= FIO_OPT_STR_VAL,
		.off1	= offsetof(struct tcmu_opts, data_size),
		.def	= DEF_DATA_SIZE,
		.minval	= MIN_DATA_SIZE,
		.maxval	= MAX_DATA_SIZE,
	},
	{
		.name	= "max_transfer",
		.lname	= "TCMU maximum transfer",
		.help	= "Largest command in bytes, a multiple of 512; larger I/O is split as the block layer splits it; 0 is the kernel's hw_max_sectors, 128 logical blocks (64k on a 512-byte device, 512k on a 4096-byte one); the handler's Block Limits page can lower it",
		.type	= FIO_OPT_STR_VAL,
		.off1	= offsetof(struct tcmu_opts, max_transfer),
		.def	= DEF_MAX_TRANSFER,
		.minval	= 0,
		.maxval	= MAX_TRANSFER,
	},
	{
		.name	= "trim_mode",
		.lname	= "TCMU trim command",
		.help	= "The SCSI command a trim becomes: unmap or write_same",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct tcmu_opts, trim_mode),
		.cb	= set_trim_mode,
		.def	= "unmap",
		.posval	= {
			{ .ival = "unmap", .oval = TRIM_UNMAP,
			  .help = "UNMAP with one block descriptor" },
			{ .ival = "write_same", .oval = TRIM_WRITE_SAME,
			  .help = "WRITE SAME(16) with the UNMAP bit" },
		},
	},
	{
		.name	= "hold_batch",
		.lname	= "TCMU hold commands for a batch",
		.help	= "At iodepth 16 and more, while the handler has 8 or more commands, hold up to iodepth/8 new ones back (cmd_head unmoved, no wake-up) until fio next reaps, to send them with one wake-up; 0 publishes each command as it is queued and wakes the handler once per fio commit, as the kernel does",
		.type	= FIO_OPT_BOOL,
		.off1	= offsetof(struct tcmu_opts, hold_batch),
		.def	= "0",
	},
	{
		.name	= "ring",
		.lname	= "TCMU ring per device or per job",
		.help	= "Which ring a job submits into: shared, the device's one ring, which every job and thread on the same handler socket joins, as every writer to one TCMU device shares the kernel's; or private, a ring (and handler thread) of the job's own",
		.type	= FIO_OPT_STR,
		.off1	= offsetof(struct tcmu_opts, ring),
		.cb	= set_ring,
		.def	= "shared",
		.posval	= {
			{ .ival = "shared", .oval = RING_SHARED,
			  .help = "One ring per device, joined by every job on it" },
			{ .ival = "private", .oval = RING_PRIVATE,
			  .help = "A ring of the job's own" },
		},
	},
	{
		.name	= NULL,
	},
};

/*
 * fio enforces the tables' ranges; what it cannot (multiples, one option
 * against another) is checked here, with the ranges again for messages.
 */
int tcmu_opts_check(const void *opts, char *err, size_t errlen)
{
	const struct tcmu_opts *o = opts;

	if (o->ring_size < MIN_RING_SIZE || o->ring_size > MAX_RING_SIZE ||
	    o->ring_size % 8) {
		snprintf(err, errlen,
			 "ring_size=%llu is out of range: use a multiple of 8 bytes from 64k to 256M (the kernel's default is 8M)",
			 o->ring_size);
		return -1;
	}
	if (o->max_transfer && (o->max_transfer < MIN_TRANSFER ||
				o->max_transfer % 512 ||
				o->max_transfer > MAX_TRANSFER)) {
		snprintf(err, errlen,
			 "max_transfer=%llu is out of range: use a multiple of 512 bytes up to 1G, or 0 for the kernel's default (128 of the device's logical blocks)",
			 o->max_transfer);
		return -1;
	}
	if (o->data_size < o->max_transfer || o->data_size % TCMU_DEF_BLK_SIZE ||
	    o->data_size < MIN_DATA_SIZE || o->data_size > MAX_DATA_SIZE) {
		snprintf(err, errlen,
			 "data_size=%llu is out of range: use a multiple of 4k, at least max_transfer=%llu, at most 64G (the kernel's default is 1G)",
			 o->data_size, o->max_transfer);
		return -1;
	}
	return 0;
}

uint64_t tcmu_split_size(const struct tcmu_opts *o, uint32_t block_size)
{
	return o->max_transfer ? o->max_transfer :
	       (uint64_t)HW_MAX_SECTORS * block_size;
}

int tcmu_check_data_size(const struct tcmu_opts *o,
			 const struct torus_target *t, char *err,
			 size_t errlen)
{
	uint64_t xfer = tcmu_split_size(o, t->min_block);

	if (o->data_size >= xfer)
		return 0;
	snprintf(err, errlen,
		 "%s: data_size=%llu is smaller than one command of max_transfer=%" PRIu64 " (0: 128 of the device's %u-byte blocks); raise data_size or lower max_transfer",
		 t->label, o->data_size, xfer, t->min_block);
	return -1;
}

bool tcmu_handles(const char *uri)
{
	return tcmu_uri_is_tcmu(uri);
}

/* Every job inspects: say what the uri ignores once, not once per job. */
static void warn_once(const char *uri, const char *warning)
{
	static char last[512];

	if (!warning[0] || !strncmp(last, uri, sizeof(last)))
		return;
	snprintf(last, sizeof(last), "%s", uri);
	fprintf(stderr, "torus: warning: %s: %s\n", uri, warning);
}

struct tcmu_client *tcmu_target_attach(const struct torus_params *p,
				       const struct tcmu_client_cfg *cfg,
				       char *label, size_t labellen,
				       char *err, size_t errlen)
{
	struct tcmu_uri u;

	if (tcmu_uri_parse(p->uri, &u, err, errlen))
		return NULL;
	warn_once(p->uri, u.warning);
	snprintf(label, labellen, "%s", p->uri);
	return tcmu_client_attach(u.socket, cfg, label, err, errlen);
}

void tcmu_target_describe(const struct tcmu_dev *dev, const char *label,
			  struct torus_target *t)
{
	snprintf(t->label, sizeof(t->label), "%s", label);
	t->size = dev->blocks * dev->block_size;
	t->read_only = dev->read_only;
	t->can_flush = dev->write_cache;
	t->can_trim = dev->thin;
	t->can_fua = dev->fua;
	t->min_block = dev->block_size;
	/* Larger requests are split, as the block layer splits them. */
	t->max_block = UINT32_MAX;
	snprintf(t->detail, sizeof(t->detail),
		 "TCMU ring to '%s', %u-byte blocks, max transfer %u%s%s%s%s",
		 dev->product, dev->block_size, dev->max_transfer,
		 dev->thin ? ", thin (UNMAP)" : "",
		 dev->read_only ? ", write protected" : "",
		 dev->fua ? ", FUA" : "",
		 dev->write_cache ? ", write cache" : "");
}

int tcmu_inspect(const struct torus_params *p, struct torus_target *t,
		 char *err, size_t errlen)
{
	/* A small ring: set-up commands only. */
	struct tcmu_client_cfg cfg = {
		.ring_size = MIN_RING_SIZE,
		.data_size = 1 << 20,
		.max_cmds = 4,
		.max_data = 4096,
		.timeout_s = p->timeout_s,
		.stop = p->stop,
	};
	struct tcmu_client *c;
	struct tcmu_dev dev;
	char label[512];
	int ret;

	c = tcmu_target_attach(p, &cfg, label, sizeof(label), err, errlen);
	if (!c)
		return -1;
	ret = tcmu_identify(c, label, &dev, err, errlen);
	tcmu_client_free(c);
	if (ret)
		return -1;
	tcmu_target_describe(&dev, label, t);
	return 0;
}

int tcmu_job_check(const struct torus_params *p, const struct torus_job *job,
		   const struct torus_target *t, char *err, size_t errlen)
{
	const struct tcmu_opts *o = p->opts;

	if (job->trims && !t->can_trim) {
		snprintf(err, errlen,
			 "%s: the device is not thin-provisioned (READ CAPACITY(16) has LBPME clear), so it takes no UNMAP; remove rw=trim/randtrim/trimwrite from the job",
			 t->label);
		return -1;
	}
	if (job->fua && !t->can_fua) {
		snprintf(err, errlen,
			 "%s: fua=1 but the device does not honour FUA (MODE SENSE has DPOFUA clear); drop fua=1",
			 t->label);
		return -1;
	}
	if (o->max_transfer % t->min_block) {
		snprintf(err, errlen,
			 "%s: max_transfer=%llu is not a multiple of the device's %u-byte blocks",
			 t->label, o->max_transfer, t->min_block);
		return -1;
	}
	return tcmu_check_data_size(o, t, err, errlen);
}
