/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A request sent on as pieces of at most some maximum each (a device's
 * largest transfer, a server's largest request), which waits in a FIFO,
 * in order, while the layer below has no room for its next piece: the
 * TCMU transport's requests (engines/tcmu) and the nbd store's
 * (bridges/). It finishes when every piece went and the last one is back.
 * Knows no protocol and allocates nothing: the caller embeds a
 * torus_split in its request and a torus_fifo in its session. (No
 * torus_util.h: the engine has fio's container_of.)
 */
#ifndef TORUS_SPLIT_H
#define TORUS_SPLIT_H

#include <stdbool.h>
#include <stdint.h>

struct torus_split {
	struct torus_split *next;	/* in a torus_fifo */
	uint64_t len;			/* 0: one empty piece (a flush) */
	uint64_t sent;			/* bytes in the pieces queued */
	uint32_t pieces;		/* queued so far */
	uint32_t out;			/* queued, not back */
	int error;			/* the first, in the caller's sign */
};

static inline void split_init(struct torus_split *s, uint64_t len)
{
	*s = (struct torus_split){ .len = len };
}

/* The next piece's length: what is left, at most max. */
static inline uint64_t split_next(const struct torus_split *s, uint64_t max)
{
	uint64_t left = s->len - s->sent;

	return left < max ? left : max;
}

static inline void split_queued(struct torus_split *s, uint64_t len)
{
	s->sent += len;
	s->pieces++;
	s->out++;
}

static inline bool split_all_sent(const struct torus_split *s)
{
	return s->pieces && s->sent == s->len;
}

/* A piece is back: true when it was the request's last. */
static inline bool split_back(struct torus_split *s, int error)
{
	if (error && !s->error)
		s->error = error;
	return !--s->out && split_all_sent(s);
}

/* No more pieces go: true when none is out, so that it finishes now. */
static inline bool split_stop(struct torus_split *s, int error)
{
	if (!s->error)
		s->error = error;
	s->sent = s->len;
	s->pieces = s->pieces ? s->pieces : 1;
	return !s->out;
}

struct torus_fifo {
	struct torus_split *head, **tail;
};

static inline void fifo_init(struct torus_fifo *f)
{
	f->head = NULL;
	f->tail = &f->head;
}

static inline void fifo_push(struct torus_fifo *f, struct torus_split *s)
{
	s->next = NULL;
	*f->tail = s;
	f->tail = &s->next;
}

static inline struct torus_split *fifo_pop(struct torus_fifo *f)
{
	struct torus_split *s = f->head;

	if (s) {
		f->head = s->next;
		if (!f->head)
			f->tail = &f->head;
		s->next = NULL;
	}
	return s;
}

#endif /* TORUS_SPLIT_H */
