// SPDX-License-Identifier: GPL-2.0-only
/*
 * The memory store: one anonymous mapping of the export's size. Pages are
 * only allocated when written; reads of untouched pages see the kernel's
 * zero page. Replies point straight into the mapping (peek).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "store.h"
#include "torus_util.h"

struct memory {
	struct store st;
	uint8_t *base;
	size_t page;
};

static struct memory *to_memory(struct store *st)
{
	return container_of(st, struct memory, st);
}

static int memory_pread(struct store *st, void *buf, size_t len,
			uint64_t off)
{
	memcpy(buf, to_memory(st)->base + off, len);
	return 0;
}

static int memory_pwrite(struct store *st, const void *buf, size_t len,
			 uint64_t off)
{
	memcpy(to_memory(st)->base + off, buf, len);
	return 0;
}

/* Whole pages are given back to the kernel; the edges are cleared. */
static int memory_zero(struct store *st, size_t len, uint64_t off)
{
	struct memory *m = to_memory(st);
	uint64_t first = (off + m->page - 1) & ~(uint64_t)(m->page - 1);
	uint64_t last = (off + len) & ~(uint64_t)(m->page - 1);

	if (first >= last) {
		memset(m->base + off, 0, len);
		return 0;
	}
	memset(m->base + off, 0, first - off);
	if (madvise(m->base + first, last - first, MADV_DONTNEED))
		memset(m->base + first, 0, last - first);
	memset(m->base + last, 0, off + len - last);
	return 0;
}

static int memory_flush(struct store *st)
{
	return 0;
}

static const void *memory_peek(struct store *st, size_t len, uint64_t off)
{
	return to_memory(st)->base + off;
}

static void memory_close(struct store *st)
{
	struct memory *m = to_memory(st);

	munmap(m->base, st->size);
	free(m);
}

static const struct store_ops memory_ops = {
	.name = "memory",
	.pread = memory_pread,
	.pwrite = memory_pwrite,
	.zero = memory_zero,
	.trim = memory_zero,
	.flush = memory_flush,
	.peek = memory_peek,
	.close = memory_close,
};

struct store *store_memory_open(uint64_t size, char *err, size_t errlen)
{
	struct memory *m;

	m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "memory store: out of memory");
		return NULL;
	}
	m->base = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m->base == MAP_FAILED) {
		snprintf(err, errlen, "memory store: cannot map %llu bytes: %s",
			 (unsigned long long)size, strerror(errno));
		free(m);
		return NULL;
	}
	m->page = sysconf(_SC_PAGESIZE);
	m->st.ops = &memory_ops;
	m->st.size = size;
	return &m->st;
}

/* The registry's entry (store.c): needs --size. */
static struct store *memory_store_open(const void *priv,
				       const struct store_params *p,
				       char *err, size_t errlen)
{
	return store_memory_open(p->size, err, errlen);
}

const struct store_type store_memory = {
	.name = "memory",
	.usage = "memory",
	.help = "an anonymous mapping (needs --size)",
	.flags = STORE_NEEDS_SIZE | STORE_TRIM_ZEROES | STORE_COPIES,
	.open = memory_store_open,
};
