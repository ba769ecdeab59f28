// SPDX-License-Identifier: GPL-2.0-only
/*
 * The engine's timeline (see timeline.h): per-request stamps kept in
 * slots made at sizing, a record per wire command written when its
 * request goes back to fio, and per-phase histograms for the summary,
 * counted from the record file at close so that the I/O pays only for
 * its stamps and its record.
 *
 * Histograms are log-linear: values below 32 ns exactly, above that 32
 * buckets per power of two, so a percentile read off a bucket's middle
 * is within 1.6% of the value. The JSON gives the buckets' edges.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timeline.h"
#include "timeline_clock.h"
#include "timeline_rec.h"

#define HIST_SUB_BITS	5
#define HIST_SUB	(1u << HIST_SUB_BITS)
/* Values from 2^HIST_TOP ns (18 minutes) on share the last bucket. */
#define HIST_TOP	40
#define HIST_BUCKETS	((HIST_TOP - HIST_SUB_BITS + 1) * HIST_SUB)
#define MAX_STAMPS	5
#define MAX_PHASES	5
/* A job's records per request: beyond this, sizing fails. */
#define MAX_SLOTS	(1u << 22)

/* Where a phase's time goes (the phase summary schema's "where"). */
struct phase_def {
	const char *name;
	const char *where;
	unsigned int from, to;		/* stamps */
};

struct source_def {
	const char *transport;
	const char *source;
	const char *key;
	unsigned int nr_stamps;
	const char *stamps[MAX_STAMPS];
	unsigned int nr_phases;
	struct phase_def phases[MAX_PHASES];
};

/* The stamps' names and the phases are fixed by docs/timeline.md. */
static const struct source_def sources[] = {
	{
		.transport = "nbd", .source = "engine-nbd", .key = "nbd-cookie",
		.nr_stamps = 5,
		.stamps = { "queued", "sent", "header", "payload", "handed" },
		.nr_phases = 5,
		.phases = {
			{ "client submit", "client", 0, 1 },
			{ "server and wire", "server-and-wire", 1, 2 },
			{ "payload", "wire", 2, 3 },
			{ "hand back", "client", 3, 4 },
			{ "total", "total", 0, 4 },
		},
	},
	{
		.transport = "tcmu", .source = "engine-tcmu", .key = "tcmu-cmd-id",
		.nr_stamps = 4,
		.stamps = { "queued", "published", "seen", "handed" },
		.nr_phases = 4,
		.phases = {
			{ "client submit", "client", 0, 1 },
			{ "handler and wake-ups", "server-and-wire", 1, 2 },
			{ "hand back", "client", 2, 3 },
			{ "total", "total", 0, 3 },
		},
	},
	{
		/* libnbd's cookie is the handle on the wire, as nbd-shim keys it. */
		.transport = "libnbd", .source = "engine-libnbd",
		.key = "nbd-cookie",
		.nr_stamps = 3,
		.stamps = { "queued", "callback", "handed" },
		.nr_phases = 3,
		.phases = {
			{ "libnbd, server and wire", "server-and-wire", 0, 1 },
			{ "hand back", "client", 1, 2 },
			{ "total", "total", 0, 2 },
		},
	},
};

struct phase {
	uint64_t count;
	uint64_t sum_ns;
	uint64_t hist[HIST_BUCKETS];
};

/* A request in flight: when it was queued, its finished commands. */
struct tl_req {
	uint64_t queued;
	unsigned int nr_cmds;
};

struct torus_tl {
	const struct source_def *def;
	struct tl_clock clock;
	struct tl_writer *w;
	char rec_path[512];
	char json_path[512];
	unsigned int nr_reqs, cmds;
	struct tl_req *reqs;			/* nr_reqs */
	struct torus_wire_stamps *wire;		/* nr_reqs * cmds */
	uint64_t dropped;			/* commands beyond cmds */
	int64_t nr_recs;			/* read back at close */
	struct phase phases[MAX_PHASES];
};

static unsigned int bucket(uint64_t v)
{
	unsigned int p;

	if (v < HIST_SUB)
		return v;
	p = 63 - __builtin_clzll(v);
	if (p >= HIST_TOP)
		return HIST_BUCKETS - 1;
	return (p - HIST_SUB_BITS + 1) * HIST_SUB +
	       (unsigned int)((v >> (p - HIST_SUB_BITS)) - HIST_SUB);
}

/* Bucket i holds [edge(i), edge(i + 1)); i may be HIST_BUCKETS. */
static uint64_t edge(unsigned int i)
{
	unsigned int p;

	if (i < HIST_SUB)
		return i;
	p = i / HIST_SUB + HIST_SUB_BITS - 1;
	return (uint64_t)(HIST_SUB + i % HIST_SUB) << (p - HIST_SUB_BITS);
}

/* Nearest rank: the middle of the bucket the rank falls in, in µs. */
static double percentile_us(const struct phase *ph, double q)
{
	uint64_t rank, seen = 0;
	unsigned int i;

	if (!ph->count)
		return 0;
	rank = (uint64_t)(q * ph->count);
	if ((double)rank < q * ph->count)
		rank++;
	if (!rank)
		rank = 1;
	for (i = 0; i < HIST_BUCKETS; i++) {
		seen += ph->hist[i];
		if (seen >= rank)
			break;
	}
	if (i == HIST_BUCKETS)
		i--;
	return (edge(i) + (edge(i + 1) - edge(i) - 1) / 2.0) / 1000.0;
}

static double mean_us(const struct phase *ph)
{
	return ph->count ? ph->sum_ns / 1000.0 / ph->count : 0;
}

struct torus_tl *torus_tl_open(const char *dir, unsigned int job,
			       const char *transport, char *err,
			       size_t errlen)
{
	const struct source_def *def = NULL;
	struct torus_tl *tl;
	unsigned int i;

	for (i = 0; i < sizeof(sources) / sizeof(sources[0]); i++)
		if (!strcmp(sources[i].transport, transport))
			def = &sources[i];
	if (!def) {
		snprintf(err, errlen, "timeline: no stamps for the %s transport",
			 transport);
		return NULL;
	}
	if (tl_dir(dir, err, errlen))
		return NULL;
	tl = calloc(1, sizeof(*tl));
	if (!tl) {
		snprintf(err, errlen, "timeline: out of memory");
		return NULL;
	}
	tl->def = def;
	tl_clock_init(&tl->clock, true);
	snprintf(tl->rec_path, sizeof(tl->rec_path), "%s/engine-%u.rec", dir,
		 job);
	snprintf(tl->json_path, sizeof(tl->json_path), "%s/engine-%u.json",
		 dir, job);
	tl->w = tl_open(tl->rec_path, def->source, def->key, def->stamps,
			def->nr_stamps, err, errlen);
	if (!tl->w) {
		free(tl);
		return NULL;
	}
	return tl;
}

int torus_tl_size(struct torus_tl *tl, unsigned int nr_reqs,
		  unsigned int cmds, char *err, size_t errlen)
{
	if (!cmds)
		cmds = 1;
	if ((uint64_t)nr_reqs * cmds > MAX_SLOTS) {
		snprintf(err, errlen,
			 "timeline: %u requests of up to %u wire commands each need more than %u slots; use a smaller bs or iodepth with timeline=",
			 nr_reqs, cmds, MAX_SLOTS);
		return -1;
	}
	tl->reqs = calloc(nr_reqs, sizeof(*tl->reqs));
	tl->wire = calloc((size_t)nr_reqs * cmds, sizeof(*tl->wire));
	if (!tl->reqs || !tl->wire) {
		free(tl->reqs);
		free(tl->wire);
		tl->reqs = NULL;
		tl->wire = NULL;
		snprintf(err, errlen,
			 "timeline: out of memory for %u requests of %u commands",
			 nr_reqs, cmds);
		return -1;
	}
	tl->nr_reqs = nr_reqs;
	tl->cmds = cmds;
	return 0;
}

uint64_t torus_tl_queued(struct torus_tl *tl, unsigned int req)
{
	uint64_t now = tl_clock_now(&tl->clock);

	if (req < tl->nr_reqs) {
		tl->reqs[req].queued = now;
		tl->reqs[req].nr_cmds = 0;
	}
	return now;
}

uint64_t torus_tl_now(struct torus_tl *tl)
{
	return tl_clock_now(&tl->clock);
}

void torus_tl_cmd(struct torus_tl *tl, unsigned int req,
		  const struct torus_wire_stamps *w)
{
	struct tl_req *r;

	if (req >= tl->nr_reqs) {
		tl->dropped++;
		return;
	}
	r = &tl->reqs[req];
	if (r->nr_cmds >= tl->cmds) {
		tl->dropped++;
		return;
	}
	tl->wire[(size_t)req * tl->cmds + r->nr_cmds++] = *w;
}

/* tl_read()'s callback: one record's phases into the histograms. */
static void count(void *arg, const struct tl_rec *rec)
{
	struct torus_tl *tl = arg;
	const uint64_t *t = rec->t;
	unsigned int i;

	for (i = 0; i < tl->def->nr_phases; i++) {
		const struct phase_def *pd = &tl->def->phases[i];
		struct phase *ph = &tl->phases[i];
		uint64_t a = t[pd->from], b = t[pd->to];

		/* A stamp not taken (a failed command) leaves the phase out. */
		if (!a || !b || b < a)
			continue;
		ph->count++;
		ph->sum_ns += b - a;
		ph->hist[bucket(b - a)]++;
	}
}

void torus_tl_handed(struct torus_tl *tl, unsigned int req, unsigned int op,
		     uint64_t now)
{
	unsigned int last = tl->def->nr_stamps - 1, i, k;
	const struct torus_wire_stamps *w;
	struct tl_rec *rec;
	struct tl_req *r;

	if (req >= tl->nr_reqs)
		return;
	r = &tl->reqs[req];
	w = &tl->wire[(size_t)req * tl->cmds];
	for (i = 0; i < r->nr_cmds; i++, w++) {
		rec = tl_next(tl->w);
		rec->key = w->key;
		rec->offset = w->offset;
		rec->len = w->len;
		rec->op = op;
		rec->stream = w->stream;
		rec->t[0] = r->queued;
		for (k = 1; k < last; k++)
			rec->t[k] = w->t[k - 1];
		rec->t[last] = now;
	}
	r->nr_cmds = 0;
}

/* The table on stderr, in one write so that jobs' tables do not mix. */
static void print_table(const struct torus_tl *tl)
{
	char buf[2048];
	size_t n = 0;
	unsigned int i;

	n += snprintf(buf + n, sizeof(buf) - n,
		      "torus: timeline: %s: %" PRId64 " records (%s: phases of the engine alone, in µs)\n",
		      tl->rec_path, tl->nr_recs, tl->def->source);
	n += snprintf(buf + n, sizeof(buf) - n,
		      "torus: timeline: %-22s %10s %10s %10s %10s %10s\n",
		      "phase", "mean", "p50", "p99", "p99.9", "count");
	for (i = 0; i < tl->def->nr_phases && n < sizeof(buf); i++) {
		const struct phase *ph = &tl->phases[i];

		n += snprintf(buf + n, sizeof(buf) - n,
			      "torus: timeline: %-22s %10.2f %10.2f %10.2f %10.2f %10" PRIu64 "\n",
			      tl->def->phases[i].name, mean_us(ph),
			      percentile_us(ph, 0.50), percentile_us(ph, 0.99),
			      percentile_us(ph, 0.999), ph->count);
	}
	if (tl->dropped && n < sizeof(buf))
		snprintf(buf + n, sizeof(buf) - n,
			 "torus: timeline: %" PRIu64 " wire commands had no room in their request's slot (or no slot) and have no record\n",
			 tl->dropped);
	fputs(buf, stderr);
}

static void write_hist(FILE *f, const struct phase *ph)
{
	unsigned int lo = 0, hi = HIST_BUCKETS, i;

	while (lo < hi && !ph->hist[lo])
		lo++;
	while (hi > lo && !ph->hist[hi - 1])
		hi--;
	fprintf(f, ", \"histogram\": {\"edges_ns\": [");
	for (i = lo; i <= hi; i++)
		fprintf(f, "%s%" PRIu64, i == lo ? "" : ", ", edge(i));
	fprintf(f, "], \"counts\": [");
	for (i = lo; i < hi; i++)
		fprintf(f, "%s%" PRIu64, i == lo ? "" : ", ", ph->hist[i]);
	fprintf(f, "]}");
}

/* The phase summary schema (docs/timeline.md), with histograms. */
static int write_json(const struct torus_tl *tl, char *err, size_t errlen)
{
	FILE *f = fopen(tl->json_path, "w");
	unsigned int i;
	int bad;

	if (!f) {
		snprintf(err, errlen,
			 "timeline: cannot create %s: %s (give a directory that exists and is writable)",
			 tl->json_path, strerror(errno));
		return -1;
	}
	fprintf(f, "[\n");
	for (i = 0; i < tl->def->nr_phases; i++) {
		const struct phase_def *pd = &tl->def->phases[i];
		const struct phase *ph = &tl->phases[i];

		/* from and to: scripts/timelinelib.py takes the phases from here */
		fprintf(f,
			"  {\"name\": \"%s\", \"where\": \"%s\", \"from\": \"%s\", \"to\": \"%s\", \"count\": %" PRIu64 ", \"mean_us\": %.3f, \"p50_us\": %.3f, \"p99_us\": %.3f, \"p99.9_us\": %.3f",
			pd->name, pd->where, tl->def->stamps[pd->from],
			tl->def->stamps[pd->to], ph->count, mean_us(ph),
			percentile_us(ph, 0.50), percentile_us(ph, 0.99),
			percentile_us(ph, 0.999));
		write_hist(f, ph);
		fprintf(f, "}%s\n", i + 1 < tl->def->nr_phases ? "," : "");
	}
	fprintf(f, "]\n");
	bad = ferror(f);
	errno = 0;
	if (fclose(f) || bad) {
		snprintf(err, errlen, "timeline: writing %s failed: %s",
			 tl->json_path, errno ? strerror(errno) : "a write error");
		return -1;
	}
	return 0;
}

int torus_tl_close(struct torus_tl *tl, char *err, size_t errlen)
{
	int ret;

	if (!tl)
		return 0;
	ret = tl_close(tl->w, err, errlen) ? -1 : 0;
	/* A job that failed before its I/O began has no phases to show. */
	if (!ret && tl->reqs) {
		tl->nr_recs = tl_read(tl->rec_path, count, tl, err, errlen);
		if (tl->nr_recs < 0)
			ret = -1;
	}
	if (!ret && tl->reqs) {
		print_table(tl);
		ret = write_json(tl, err, errlen);
	}
	free(tl->reqs);
	free(tl->wire);
	free(tl);
	return ret;
}
