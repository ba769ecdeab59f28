// SPDX-License-Identifier: GPL-2.0-only
/*
 * alloc-count.so: an LD_PRELOAD library that counts a process's calls to
 * malloc, calloc, realloc, free (and posix_memalign, aligned_alloc,
 * memalign, valloc, pvalloc, counted as allocations) in every thread, and
 * where they came from, so a test can show that an I/O path allocates
 * nothing per I/O: run the same job for N and 10*N I/Os and compare.
 *
 *   ALLOC_COUNT_OUT=FILE LD_PRELOAD=.../alloc-count.so PROGRAM ...
 *
 * When the process exits normally (exit() or a return from main: not
 * _exit(), so run fio with --thread), one block is appended to FILE
 * (stderr when ALLOC_COUNT_OUT is unset):
 *
 *   alloc-count pid PID comm NAME
 *   allocs N            (malloc + calloc + realloc of NULL + the aligned ones)
 *   malloc N
 *   calloc N
 *   realloc N
 *   aligned N
 *   free N              (of non-NULL pointers)
 *   site COUNT MODULE+0xOFFSET [SYMBOL]   the 16 busiest call sites
 *   end
 *
 * A site is the caller's return address (MODULE+0xOFFSET: give it to
 * `addr2line -f -e MODULE`); SYMBOL is the nearest exported one, if any.
 * The counters are atomic; the site table is a fixed array (no allocation).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);

enum { C_MALLOC, C_CALLOC, C_REALLOC, C_ALIGNED, C_FREE, C_N };
static unsigned long long counts[C_N];

/* Call sites: open addressing over return addresses. */
#define NSITES 4096
static struct site {
	uintptr_t addr;
	unsigned long long n;
} sites[NSITES];
static unsigned long long sites_lost;

/* dlsym may calloc before real_calloc is known: served from here. */
static char boot_buf[8192] __attribute__((aligned(16)));
static size_t boot_used;
static int resolving;

static int is_boot(const void *p)
{
	return (const char *)p >= boot_buf &&
	       (const char *)p < boot_buf + sizeof(boot_buf);
}

static void *boot_alloc(size_t n)
{
	size_t at = __atomic_fetch_add(&boot_used, (n + 15) & ~(size_t)15,
				       __ATOMIC_RELAXED);

	if (at + n > sizeof(boot_buf))
		return NULL;
	return boot_buf + at;
}

static void resolve(void)
{
	if (real_free || resolving)
		return;
	resolving = 1;
	real_malloc = dlsym(RTLD_NEXT, "malloc");
	real_calloc = dlsym(RTLD_NEXT, "calloc");
	real_realloc = dlsym(RTLD_NEXT, "realloc");
	real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
	real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
	real_memalign = dlsym(RTLD_NEXT, "memalign");
	real_valloc = dlsym(RTLD_NEXT, "valloc");
	real_pvalloc = dlsym(RTLD_NEXT, "pvalloc");
	real_free = dlsym(RTLD_NEXT, "free");
	resolving = 0;
}

static void count(int kind, void *ret_addr)
{
	uintptr_t a = (uintptr_t)ret_addr;
	unsigned int i, h;

	__atomic_fetch_add(&counts[kind], 1, __ATOMIC_RELAXED);
	if (kind == C_FREE)
		return;
	h = (unsigned int)((a * 0x9e3779b97f4a7c15ull) >> 52) % NSITES;
	for (i = 0; i < NSITES; i++) {
		struct site *s = &sites[(h + i) % NSITES];
		uintptr_t cur = __atomic_load_n(&s->addr, __ATOMIC_ACQUIRE);

		if (!cur && __atomic_compare_exchange_n(&s->addr, &cur, a, 0,
							 __ATOMIC_ACQ_REL,
							 __ATOMIC_ACQUIRE))
			cur = a;
		if (cur == a) {
			__atomic_fetch_add(&s->n, 1, __ATOMIC_RELAXED);
			return;
		}
	}
	__atomic_fetch_add(&sites_lost, 1, __ATOMIC_RELAXED);
}

void *malloc(size_t n)
{
	resolve();
	if (!real_malloc)
		return boot_alloc(n);
	count(C_MALLOC, __builtin_return_address(0));
	return real_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	resolve();
	if (!real_calloc)
		return boot_alloc(n * m);	/* static: already zero */
	count(C_CALLOC, __builtin_return_address(0));
	return real_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	resolve();
	if (is_boot(p)) {
		void *q = malloc(n);

		if (q)
			memcpy(q, p, n);	/* boot blocks are small and early */
		return q;
	}
	count(p ? C_REALLOC : C_MALLOC, __builtin_return_address(0));
	return real_realloc(p, n);
}

void free(void *p)
{
	if (!p || is_boot(p))
		return;
	resolve();
	count(C_FREE, NULL);
	real_free(p);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	resolve();
	count(C_ALIGNED, __builtin_return_address(0));
	return real_posix_memalign(out, align, n);
}

void *aligned_alloc(size_t align, size_t n)
{
	resolve();
	count(C_ALIGNED, __builtin_return_address(0));
	return real_aligned_alloc(align, n);
}

void *memalign(size_t align, size_t n)
{
	resolve();
	count(C_ALIGNED, __builtin_return_address(0));
	return real_memalign(align, n);
}

void *valloc(size_t n)
{
	resolve();
	count(C_ALIGNED, __builtin_return_address(0));
	return real_valloc(n);
}

void *pvalloc(size_t n)
{
	resolve();
	count(C_ALIGNED, __builtin_return_address(0));
	return real_pvalloc(n);
}

/* ---- the report: formatted into a stack buffer, one write ---- */

static char out_buf[16384];
static size_t out_len;

static void say(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out_buf + out_len, sizeof(out_buf) - out_len, fmt, ap);
	va_end(ap);
	if (n > 0)
		out_len += (size_t)n < sizeof(out_buf) - out_len ?
			   (size_t)n : sizeof(out_buf) - out_len - 1;
}

static int by_count(const void *a, const void *b)
{
	const struct site *x = a, *y = b;

	return x->n < y->n ? 1 : x->n > y->n ? -1 : 0;
}

__attribute__((destructor)) static void report(void)
{
	unsigned long long c[C_N];
	static struct site top[NSITES];
	char comm[64] = "?";
	const char *path = getenv("ALLOC_COUNT_OUT");
	unsigned int i, n = 0;
	int fd, cfd;
	ssize_t len;

	/* what follows may allocate (dladdr, stdio): not counted */
	for (i = 0; i < C_N; i++)
		c[i] = __atomic_load_n(&counts[i], __ATOMIC_RELAXED);
	for (i = 0; i < NSITES; i++)
		if (sites[i].addr)
			top[n++] = sites[i];
	qsort(top, n, sizeof(top[0]), by_count);

	cfd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	if (cfd >= 0) {
		len = read(cfd, comm, sizeof(comm) - 1);
		comm[len > 0 ? len : 0] = 0;
		comm[strcspn(comm, "\n")] = 0;
		close(cfd);
	}
	say("alloc-count pid %d comm %s\n", (int)getpid(), comm);
	say("allocs %llu\n", c[C_MALLOC] + c[C_CALLOC] + c[C_ALIGNED]);
	say("malloc %llu\ncalloc %llu\nrealloc %llu\naligned %llu\nfree %llu\n",
	    c[C_MALLOC], c[C_CALLOC], c[C_REALLOC], c[C_ALIGNED], c[C_FREE]);
	if (sites_lost)
		say("sites-lost %llu\n", sites_lost);
	for (i = 0; i < n && i < 16; i++) {
		Dl_info info;
		const char *mod = "?", *sym = "";
		uintptr_t base = 0;

		if (dladdr((void *)top[i].addr, &info)) {
			mod = info.dli_fname ? info.dli_fname : "?";
			base = (uintptr_t)info.dli_fbase;
			sym = info.dli_sname ? info.dli_sname : "";
		}
		say("site %llu %s+0x%lx %s\n", top[i].n, mod,
		    (unsigned long)(top[i].addr - base), sym);
	}
	say("end\n");

	fd = path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) :
		    dup(2);
	if (fd < 0)
		return;
	len = write(fd, out_buf, out_len);
	(void)len;
	close(fd);
}
