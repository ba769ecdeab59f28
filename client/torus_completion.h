/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A completion: a finished request, handed on once, as it finishes, by
 * the layer that saw it finish, straight to whoever queued it. user is
 * the pointer the request was queued with; error is 0 or a positive
 * errno. The engine's glue passes its own function down, so a reply
 * parsed by client/nbd lands in the array fio's ->event reads.
 */
#ifndef TORUS_COMPLETION_H
#define TORUS_COMPLETION_H

typedef void torus_complete_fn(void *arg, void *user, int error);

/* Where completions go: set once, when the client is made. */
struct torus_completer {
	torus_complete_fn *fn;
	void *arg;
};

#endif /* TORUS_COMPLETION_H */
