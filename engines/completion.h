/* SPDX-License-Identifier: GPL-2.0-only */
/* A finished request, as every transport hands it back to the glue. */
#ifndef TORUS_COMPLETION_H
#define TORUS_COMPLETION_H

struct torus_completion {
	void *user;
	int error;			/* 0 or a positive errno */
};

#endif /* TORUS_COMPLETION_H */
