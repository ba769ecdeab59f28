/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Starting a transport's embedded default server: a child process on a
 * private Unix socket in its own temporary directory, ready once it has
 * written its pid file, stopped when the fio process that started it
 * exits. One per transport per fio process, shared by its jobs (so a
 * verify job sees what a write job wrote).
 */
#ifndef TORUS_EMBEDDED_H
#define TORUS_EMBEDDED_H

#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

struct embedded {
	const char *what;		/* for messages: "nbdkit memory" */
	/* For embedded_get(): */
	const char *scheme;		/* the URI's: "nbd+unix" */
	const char *who;		/* "the embedded default server" */
	const char *instead;		/* "start a server yourself" */
	/* Starts it for size bytes (setting size): 0 or -1 with a message. */
	int (*start)(uint64_t size, char *err, size_t errlen);
	pthread_mutex_t lock;		/* PTHREAD_MUTEX_INITIALIZER */
	pid_t pid;			/* 0: not running */
	pid_t owner;			/* the process that started it */
	uint64_t size;
	char dir[64];
	char sock[96];			/* dir/<sock_name> */
	char pidfile[96];		/* dir/server.pid */
};

/* Is prog an executable in $PATH? */
bool embedded_in_path(const char *prog);

/* Makes the private directory and the socket and pid file names. */
int embedded_prepare(struct embedded *e, const char *sock_name, char *err,
		     size_t errlen);

/*
 * Runs argv (argv[0] is looked up in $PATH unless it has a '/') and waits
 * until the pid file is written. hint says how to see why it failed.
 * 0, or -1 with a message; e->dir is removed on failure.
 */
int embedded_start(struct embedded *e, char *const argv[], const char *hint,
		   char *err, size_t errlen);

/*
 * The server for a job of size bytes, as a URI: started by e->start on
 * first use; after that it must be at least that big. 0, or -1 with a
 * message.
 */
int embedded_get(struct embedded *e, uint64_t size, char *uri, size_t urilen,
		 char *err, size_t errlen);

/* Stops it, if this process started it, and removes its files. */
void embedded_stop(struct embedded *e);

#endif /* TORUS_EMBEDDED_H */
