// SPDX-License-Identifier: GPL-2.0-only
/*
 * fio-layout-check: a throw-away engine built against the configured fio
 * tree exactly as libtorus.so is, and loaded into the real fio by the
 * engine-fio-layout test (and by scripts/build.sh): do fio and the tree's
 * config-host.h agree on struct layouts? It checks option values it was
 * given (first, middle and last members of struct thread_options), its
 * io_u and fio_file fields, and sizeof(struct thread_data) against the
 * distance between two jobs' thread_data in fio's exported segments.
 */
#include "fio.h"
#include "optgroup.h"

extern struct thread_segment segments[];

static int bad(struct thread_data *td, const char *what, unsigned long long got,
	       unsigned long long want)
{
	fprintf(stderr, "layout: %s: got %llu, expected %llu\n", what, got, want);
	td_verror(td, EINVAL, "layout check");
	return 1;
}

static int layout_setup(struct thread_data *td)
{
	if (td->files_index == 1 && td->files[0])
		td->files[0]->real_file_size = 1 << 20;
	return 0;
}

static int layout_init(struct thread_data *td)
{
	char *base = (char *)segments[0].threads;
	int err = 0;

	err |= td->o.bs[DDIR_READ] != 12288 ?
		bad(td, "o.bs", td->o.bs[DDIR_READ], 12288) : 0;
	err |= td->o.thinktime_blocks != 5 ?
		bad(td, "o.thinktime_blocks", td->o.thinktime_blocks, 5) : 0;
	err |= td->o.log_entries != 4099 ?
		bad(td, "o.log_entries", td->o.log_entries, 4099) : 0;
	err |= strcmp(td->o.name, "torus-layout") ?
		bad(td, "o.name", 0, 1) : 0;
	if (td->thread_number == 2) {
		unsigned long long stride = (char *)td - base;

		err |= stride != sizeof(struct thread_data) ?
			bad(td, "sizeof(struct thread_data) here vs in fio", sizeof(struct thread_data), stride) : 0;
		if (!err)
			printf("layout: sizeof(struct thread_data) %zu matches fio\n",
			       sizeof(struct thread_data));
	}
	return err;
}

static enum fio_q_status layout_queue(struct thread_data *td, struct io_u *io_u)
{
	if (io_u->buflen != 12288 || io_u->ddir != DDIR_READ ||
	    io_u->file != td->files[0] || io_u->offset % 12288 ||
	    io_u->file->real_file_size != 1 << 20 ||
	    strcmp(io_u->file->file_name, "torus-layout-file")) {
		bad(td, "io_u", io_u->buflen, 12288);
		io_u->error = EINVAL;
	}
	return FIO_Q_COMPLETED;
}

static int layout_open(struct thread_data *td, struct fio_file *f)
{
	return 0;
}

struct ioengine_ops ioengine = {
	.name = "torus-layout",
	.version = FIO_IOOPS_VERSION,
	.setup = layout_setup,
	.init = layout_init,
	.queue = layout_queue,
	.open_file = layout_open,
	.flags = FIO_SYNCIO | FIO_DISKLESSIO | FIO_NOEXTEND,
};
