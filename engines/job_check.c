// SPDX-License-Identifier: GPL-2.0-only
/*
 * A job before any I/O (job_check.h): which transport and target it
 * gets, and whether the target can do what the job asks.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fio.h"
#include "fio_compat.h"

#include "job_check.h"
#include "option_table.h"
#include "torus_bits.h"
#include "transport.h"

#define DEFAULT_EMBEDDED_SIZE	(1ULL << 30)

/*
 * The engine's ops (engine.c), exported: a job uses torus when its setup
 * is ours. Declared visible here too, or the link would hide the symbol.
 */
extern struct ioengine_ops ioengine __attribute__((visibility("default")));

/* Bytes the job touches, for sizing the embedded server. */
static uint64_t job_extent(struct thread_data *td)
{
	uint64_t end = td->o.size;

	if (!end)
		return 0;
	if (!td->o.start_offset_percent)
		end += td->o.start_offset +
		       (uint64_t)td->subjob_number * td->o.offset_increment;
	return end;
}

static bool uses_torus(struct thread_data *td)
{
	return td->io_ops && td->io_ops->setup == ioengine.setup;
}

static const char *transport_name(const struct torus_options *o)
{
	/* The first transport listed is the default. */
	return o->transport && *o->transport ? o->transport :
	       torus_transports[0]->name;
}

/*
 * Largest extent among this run's jobs on one embedded server (two
 * transports may share one: libnbd uses the nbd transport's).
 */
static uint64_t embedded_size(const struct torus_transport *tp)
{
	uint64_t size = 0;

	torus_for_each_td(td) {
		struct torus_options *o = td->eo;
		const struct torus_transport *other;

		if (!uses_torus(td) || !o || (o->uri && *o->uri))
			continue;
		other = torus_transport_named(transport_name(o));
		if (!other || other->embedded != tp->embedded)
			continue;
		if (job_extent(td) > size)
			size = job_extent(td);
	} torus_end_for_each();
	return size ? size : DEFAULT_EMBEDDED_SIZE;
}

/* transport= given, other than the default (which a uri overrides). */
static bool transport_chosen(const struct torus_options *o)
{
	return o->transport && *o->transport &&
	       strcmp(o->transport, torus_transports[0]->name);
}

int torus_job_resolve(struct thread_data *td,
		      const struct torus_transport **tpp,
		      struct torus_params *params, char *uri, size_t urilen)
{
	struct torus_options *o = td->eo;
	const struct torus_transport *tp = NULL;
	char err[1024];

	if (o->request_timeout > MAX_REQUEST_TIMEOUT) {
		log_err("torus: request_timeout=%d is out of range: use 0 (wait forever) to %d seconds\n",
			(int)o->request_timeout, MAX_REQUEST_TIMEOUT);
		return 1;
	}
	if (o->uri && *o->uri) {
		snprintf(uri, urilen, "%s", o->uri);
		if (!transport_chosen(o))
			tp = torus_transport_for_uri(uri);
		if (!transport_chosen(o) && !tp) {
			log_err("torus: unsupported uri '%s': expected %s\n",
				uri, torus_transport_uri_forms());
			return 1;
		}
	}
	if (!tp) {
		tp = torus_transport_named(transport_name(o));
		if (!tp) {
			log_err("torus: unknown transport=%s: use one of %s\n",
				transport_name(o), torus_transport_names());
			return 1;
		}
		if (uri[0] && !tp->handles(uri)) {
			log_err("torus: transport=%s does not serve uri '%s'; it serves %s: change the uri, or drop transport= to let the uri pick its transport\n",
				tp->name, uri, tp->uri_forms);
			return 1;
		}
	}
	params->opts = torus_option_table_block(td->eo, tp);
	if (tp->check_options(params->opts, err, sizeof(err))) {
		log_err("torus: %s\n", err);
		return 1;
	}
	if (!uri[0] &&
	    tp->embedded(embedded_size(tp), uri, urilen,
			    err, sizeof(err))) {
		log_err("torus: %s\n", err);
		return 1;
	}
	*tpp = tp;
	params->uri = uri;
	params->timeout_s = o->request_timeout;
	params->stop = &td->terminate;
	return 0;
}

int torus_job_validate(struct thread_data *td,
		       const struct torus_transport *tp,
		       const struct torus_params *p,
		       const struct torus_target *t, struct fio_file *f)
{
	struct torus_options *o = td->eo;
	uint64_t start, inc = (uint64_t)td->o.offset_increment;
	struct torus_job job;
	char where[160] = "", err[1024];
	int ddir;

	if (!t->size) {
		log_err("torus: %s: the export is empty (0 bytes), so there is nothing to read or write; give the server a non-empty export\n",
			t->label);
		return 1;
	}
	start = get_start_offset(td, f);
	if (inc && td->subjob_number)
		snprintf(where, sizeof(where),
			 " (offset=%" PRIu64 " + offset_increment=%" PRIu64 " x job %u)",
			 (uint64_t)td->o.start_offset, inc, td->subjob_number);
	if (start >= t->size) {
		log_err("torus: %s: job '%s' starts at offset %" PRIu64 "%s, at or past the end of the export (%" PRIu64 " bytes), so it would do no I/O; lower offset=, offset_increment= or numjobs=\n",
			t->label, td->o.name, start, where, t->size);
		return 1;
	}
	if (td->o.size && start + td->o.size > t->size) {
		log_err("torus: %s: the job needs %" PRIu64 " bytes (size=%" PRIu64 " + offset=%" PRIu64 "%s) but the export has %" PRIu64 ": lower size= or offset=, or use a larger export\n",
			t->label, start + (uint64_t)td->o.size, (uint64_t)td->o.size,
			start, where, t->size);
		return 1;
	}
	if ((td_write(td) || td_trim(td)) && t->read_only) {
		log_err("torus: %s: the export is read-only but the job writes; use a read workload or a writable export\n",
			t->label);
		return 1;
	}
	job.writes = td_write(td);
	job.trims = td_trim(td);
	job.fua = o->fua;
	if (tp->check(p, &job, t, err, sizeof(err))) {
		log_err("torus: %s\n", err);
		return 1;
	}
	for (ddir = DDIR_READ; ddir <= DDIR_TRIM; ddir++) {
		static const char *const name[] = { "read", "write", "trim" };
		unsigned long long min_bs = td->o.min_bs[ddir];
		unsigned long long max_bs = td->o.max_bs[ddir];

		if (!(td->o.td_ddir & (1 << ddir)))
			continue;
		if (max_bs > t->max_block) {
			log_err("torus: %s: %s block size %llu exceeds the server's maximum request size %u; use bs=%u or less\n",
				t->label, name[ddir], max_bs, t->max_block,
				t->max_block);
			return 1;
		}
		if (td->o.bs_unaligned && t->min_block > 1) {
			log_err("torus: %s: bs_unaligned=1 allows %s block sizes that are not multiples of the server's minimum block size %u; drop bs_unaligned=1 (or use a server whose minimum block size is 1)\n",
				t->label, name[ddir], t->min_block);
			return 1;
		}
		if (min_bs % t->min_block) {
			log_err("torus: %s: %s block size %llu is not a multiple of the server's minimum block size %u; use a multiple of %u\n",
				t->label, name[ddir], min_bs, t->min_block,
				t->min_block);
			return 1;
		}
		if (td->o.ba[ddir] % t->min_block) {
			log_err("torus: %s: %s block alignment %llu is not a multiple of the server's minimum block size %u; set blockalign= to a multiple of %u\n",
				t->label, name[ddir],
				(unsigned long long)td->o.ba[ddir], t->min_block,
				t->min_block);
			return 1;
		}
	}
	if (is_pow2(t->min_block) && td->o.start_offset % t->min_block) {
		log_err("torus: %s: offset=%" PRIu64 " is not a multiple of the server's minimum block size %u\n",
			t->label, (uint64_t)td->o.start_offset, t->min_block);
		return 1;
	}
	return 0;
}
