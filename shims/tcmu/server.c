// SPDX-License-Identifier: GPL-2.0-only
/*
 * The socket: listening, one thread per client, clean shutdown. A client
 * with a ring of its own has it served in its thread; the device's shared
 * ring has one thread of its own (attach.c), and its submitters' threads
 * only wait for their sockets to close. Rings share the one store (each
 * takes its own session) and target.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"
#include "log.h"
#include "shim.h"

struct server;

struct conn {
	int fd;
	unsigned long id;
	struct server *srv;
	struct conn *next;
};

struct server {
	const struct shim_config *cfg;
	const struct scsi_target *t;
	struct store *st;
	int lfd;
	pthread_mutex_t lock;
	pthread_cond_t idle;
	struct conn *conns;
	unsigned int nconns;
	unsigned long nextid;
};

static int listen_unix(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	int fd;

	/* a socket left by a shim that died is replaced; nothing else */
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode)) {
			shim_err("--socket %s: the path exists and is not a socket",
				 path);
			return -1;
		}
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		shim_err("socket: %s", strerror(errno));
		return -1;
	}
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) ||
	    listen(fd, 128)) {
		shim_err("--socket %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static void conn_remove(struct server *s, struct conn *c)
{
	struct conn **pp;

	pthread_mutex_lock(&s->lock);
	for (pp = &s->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	/* closed under the lock, so shutdown never sees a reused fd */
	close(c->fd);
	s->nconns--;
	pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->lock);
}

/* An older ring whose client has closed its socket, still being torn down. */
static bool detaching(const struct conn *c, const struct conn *self)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLRDHUP };

	return c->id < self->id && poll(&pfd, 1, 0) == 1 &&
	       (pfd.revents & (POLLHUP | POLLRDHUP));
}

/*
 * A client that closed one ring and attaches the next expects the first
 * gone, its store session with it: a store taking one connection per
 * volume (NBD to torus) refuses the new ring's session while the old one
 * is open. So the older rings whose clients have left finish first
 * (within --timeout; only older ones, so two never wait on each other).
 */
static void wait_detached(struct server *s, struct conn *self)
{
	unsigned int timeout_s = s->cfg->timeout_s;
	struct timespec deadline;
	struct conn *c;
	bool busy;
	int ret = 0;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += timeout_s;
	pthread_mutex_lock(&s->lock);
	do {
		busy = false;
		for (c = s->conns; c && !busy; c = c->next)
			busy = detaching(c, self);
		if (!busy)
			break;
		if (timeout_s)
			ret = pthread_cond_timedwait(&s->idle, &s->lock,
						     &deadline);
		else
			pthread_cond_wait(&s->idle, &s->lock);
	} while (!ret);
	pthread_mutex_unlock(&s->lock);
	if (busy)
		shim_err("ring %lu: a detached ring is still being torn down after --timeout; attaching anyway",
			 self->id);
}

static void *conn_thread(void *arg)
{
	struct conn *c = arg;
	struct server *s = c->srv;

	wait_detached(s, c);
	attach_serve(c->fd, c->id, s->cfg, s->t, s->st);
	conn_remove(s, c);
	free(c);
	return NULL;
}

static void server_accept(struct server *s)
{
	pthread_attr_t attr;
	pthread_t thread;
	struct conn *c;
	int fd;

	fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno != EINTR && errno != EAGAIN)
			shim_err("accept: %s", strerror(errno));
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		shim_err("out of memory for a new client");
		close(fd);
		return;
	}
	c->fd = fd;
	c->srv = s;
	pthread_mutex_lock(&s->lock);
	c->id = ++s->nextid;
	c->next = s->conns;
	s->conns = c;
	s->nconns++;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&thread, &attr, conn_thread, c)) {
		shim_err("cannot start a thread for ring %lu", c->id);
		s->conns = c->next;
		s->nconns--;
		close(fd);
		free(c);
	}
	pthread_attr_destroy(&attr);
	pthread_mutex_unlock(&s->lock);
}

/* Every ring detached: their threads see the socket shut down. */
static void stop_all(struct server *s)
{
	struct conn *c;

	pthread_mutex_lock(&s->lock);
	for (c = s->conns; c; c = c->next)
		shutdown(c->fd, SHUT_RDWR);
	while (s->nconns)
		pthread_cond_wait(&s->idle, &s->lock);
	pthread_mutex_unlock(&s->lock);
}

int server_run(const struct shim_config *cfg, const struct scsi_target *t,
	       struct store *st, int sigfd)
{
	struct server s = { .cfg = cfg, .t = t, .st = st };
	struct signalfd_siginfo si;
	struct pollfd pfd[2];
	int ret = 0;

	s.lfd = listen_unix(cfg->socket_path);
	if (s.lfd < 0)
		return -1;
	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.idle, NULL);
	if (cfg->pidfile && write_pidfile(cfg->pidfile)) {
		ret = -1;
		goto out;
	}
	shim_info("listening on %s (%llu blocks of %u bytes, store %s)",
		  cfg->socket_path, (unsigned long long)t->nr_blocks,
		  t->block_size, cfg->store.arg);

	pfd[0] = (struct pollfd){ .fd = s.lfd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = sigfd, .events = POLLIN };
	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			shim_err("poll: %s", strerror(errno));
			ret = -1;
			break;
		}
		if (pfd[1].revents) {
			if (read(sigfd, &si, sizeof(si)) == sizeof(si))
				shim_info("%s: shutting down",
					  strsignal(si.ssi_signo));
			break;
		}
		if (pfd[0].revents)
			server_accept(&s);
	}
	stop_all(&s);
out:
	close(s.lfd);
	unlink(cfg->socket_path);
	pthread_cond_destroy(&s.idle);
	pthread_mutex_destroy(&s.lock);
	return ret;
}
