// SPDX-License-Identifier: GPL-2.0-only
/*
 * store-io: drives the nbd and runner stores (bridges/protocol_stores.h)
 * directly, without a ring: opens one, runs the steps given, and says
 * what differs. The tests then check the image with qemu-io / qemu-img.
 *
 *   store-io [-d PLUGIN_DIR] [-s SIZE] [-b BLOCK] STORE STEP...
 *     STORE: nbd:URI | runner:SUBTYPE:CFG
 *     STEP:  size | write:OFF:LEN:BYTE | read:OFF:LEN:BYTE (checks every
 *            byte) | zero:OFF:LEN | trim:OFF:LEN | flush |
 *            session (the next steps use store_session(), in a new thread)
 *
 * Exit 0 when every step did what it should, 1 otherwise (with a line on
 * stderr saying expected and actual), 2 on bad usage.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol_stores.h"

struct run {
	struct store *st;
	char **steps;
	int nsteps;
	uint8_t *buf;
	int ret;
};

static int parse(const char *s, const char *name, uint64_t *v, int n)
{
	char *end;
	int i;

	s = strchr(s, ':');
	for (i = 0; i < n; i++) {
		if (!s) {
			fprintf(stderr, "store-io: %s needs %d numbers\n", name, n);
			return -1;
		}
		v[i] = strtoull(s + 1, &end, 0);
		s = *end == ':' ? end : NULL;
	}
	return 0;
}

static int step(struct store *st, const char *s, uint8_t *buf)
{
	uint64_t v[3];
	size_t i;
	int ret;

	if (!strcmp(s, "size")) {
		printf("%llu\n", (unsigned long long)st->size);
		return 0;
	}
	if (!strcmp(s, "flush")) {
		ret = store_flush(st);
		goto done;
	}
	if (!strncmp(s, "write:", 6) || !strncmp(s, "read:", 5)) {
		if (parse(s, "write/read", v, 3))
			return -1;
		if (v[1] > (64u << 20)) {
			fprintf(stderr, "store-io: at most 64 MiB per step\n");
			return -1;
		}
		if (s[0] == 'w') {
			memset(buf, (int)v[2], v[1]);
			ret = store_pwrite(st, buf, v[1], v[0]);
			goto done;
		}
		memset(buf, ~(int)v[2], v[1]);
		ret = store_pread(st, buf, v[1], v[0]);
		if (ret)
			goto done;
		for (i = 0; i < v[1]; i++)
			if (buf[i] != (uint8_t)v[2]) {
				fprintf(stderr, "store-io: %s: byte %llu: expected 0x%02x, got 0x%02x\n",
					s, (unsigned long long)(v[0] + i),
					(unsigned int)(uint8_t)v[2], buf[i]);
				return -1;
			}
		return 0;
	}
	if (!strncmp(s, "zero:", 5) || !strncmp(s, "trim:", 5)) {
		if (parse(s, "zero/trim", v, 2))
			return -1;
		ret = s[0] == 'z' ? store_zero(st, v[1], v[0]) :
				    store_trim(st, v[1], v[0]);
		goto done;
	}
	fprintf(stderr, "store-io: unknown step '%s'\n", s);
	return -1;
done:
	if (ret)
		fprintf(stderr, "store-io: %s: %s\n", s, strerror(-ret));
	return ret ? -1 : 0;
}

static void *run_steps(void *arg);

/* The rest of the steps on a session of their own, in a new thread. */
static int run_session(struct run *r, int from)
{
	struct run s = *r;
	char err[1024];
	pthread_t t;

	s.st = store_session(r->st, err, sizeof(err));
	if (!s.st) {
		fprintf(stderr, "store-io: session: %s\n", err);
		return -1;
	}
	s.steps = r->steps + from;
	s.nsteps = r->nsteps - from;
	if (pthread_create(&t, NULL, run_steps, &s))
		return -1;
	pthread_join(t, NULL);
	if (s.st != r->st)
		store_close(s.st);
	return s.ret;
}

static void *run_steps(void *arg)
{
	struct run *r = arg;
	int i;

	r->ret = 0;
	for (i = 0; i < r->nsteps; i++) {
		if (!strcmp(r->steps[i], "session")) {
			r->ret = run_session(r, i + 1);
			break;
		}
		if (step(r->st, r->steps[i], r->buf)) {
			r->ret = -1;
			break;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *dir = NULL, *store;
	uint64_t size = 0;
	uint32_t bs = 0;
	struct run r = { 0 };
	char err[2048], *spec = NULL, *sub, *cfg;
	int opt;

	while ((opt = getopt(argc, argv, "d:s:b:")) != -1) {
		switch (opt) {
		case 'd': dir = optarg; break;
		case 's': size = strtoull(optarg, NULL, 0); break;
		case 'b': bs = strtoul(optarg, NULL, 0); break;
		default: return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "usage: store-io [-d DIR] [-s SIZE] [-b BLOCK] nbd:URI|runner:SUBTYPE:CFG STEP...\n");
		return 2;
	}
	store = argv[optind];
	if (!strncmp(store, "nbd:", 4)) {
		r.st = nbd_store_open(store + 4, 10, err, sizeof(err));
	} else if (!strncmp(store, "runner:", 7)) {
		spec = strdup(store + 7);
		sub = spec;
		cfg = strchr(spec, ':');
		if (!cfg) {
			fprintf(stderr, "store-io: expected runner:SUBTYPE:CFG\n");
			return 2;
		}
		*cfg++ = '\0';
		r.st = runner_store_open(sub, dir, cfg, size, bs, err,
						sizeof(err));
	} else {
		fprintf(stderr, "store-io: expected nbd:URI or runner:SUBTYPE:CFG\n");
		return 2;
	}
	if (!r.st) {
		fprintf(stderr, "store-io: %s\n", err);
		free(spec);
		return 1;
	}
	r.buf = aligned_alloc(4096, 64u << 20);
	if (!r.buf)
		return 1;
	r.steps = argv + optind + 1;
	r.nsteps = argc - optind - 1;
	run_steps(&r);
	store_close(r.st);
	free(r.buf);
	free(spec);
	return r.ret ? 1 : 0;
}
