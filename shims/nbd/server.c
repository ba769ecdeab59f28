// SPDX-License-Identifier: GPL-2.0-only
/*
 * Listening, accepting, one thread per connection, clean shutdown; see
 * server.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "config.h"
#include "peer.h"
#include "log.h"
#include "profile.h"
#include "server.h"
#include "stamps.h"

struct peer_node {
	struct peer conn;
	struct peer_node *next;
	pthread_t thread;
};

static int listen_unix(struct server *s, const char *path, char *err,
		       size_t errlen)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	int fd;

	/* a socket left by a server that died is replaced; nothing else */
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(err, errlen,
				 "--listen unix:%s: the path exists and is not a socket",
				 path);
			return -1;
		}
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	strcpy(sun.sun_path, path);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) ||
	    listen(fd, 128)) {
		snprintf(err, errlen, "--listen unix:%s: %s", path,
			 strerror(errno));
		close(fd);
		return -1;
	}
	snprintf(s->where, sizeof(s->where), "unix:%s", path);
	return fd;
}

static int listen_tcp(struct server *s, const struct listen_addr *a,
		      char *err, size_t errlen)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_PASSIVE | AI_NUMERICSERV,
	};
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct addrinfo *ai;
	char port[8], host[64], serv[16];
	int fd, one = 1, ret;

	snprintf(port, sizeof(port), "%d", a->port);
	ret = getaddrinfo(a->host, port, &hints, &ai);
	if (ret) {
		snprintf(err, errlen, "--listen tcp:%s:%d: %s", a->host,
			 a->port, gai_strerror(ret));
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		freeaddrinfo(ai);
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 128)) {
		snprintf(err, errlen, "--listen tcp:%s:%d: %s", a->host,
			 a->port, strerror(errno));
		freeaddrinfo(ai);
		close(fd);
		return -1;
	}
	freeaddrinfo(ai);
	/* port 0 picks a free port: report the real one */
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), serv,
		    sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV);
	snprintf(s->where, sizeof(s->where),
		 strchr(host, ':') ? "tcp:[%s]:%s" : "tcp:%s:%s", host, serv);
	return fd;
}

int server_init(struct server *s, const struct shim_config *cfg,
		char *err, size_t errlen)
{
	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	s->prof = cfg->profile;
	s->lfd = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->idle, NULL);
	shaper_init(&s->shaper, cfg->latency_us, cfg->bandwidth);
	if (export_open(&s->exp, cfg, &s->shaper, err, errlen))
		return -1;
	if (cfg->listen.is_unix)
		s->lfd = listen_unix(s, cfg->listen.path, err, errlen);
	else
		s->lfd = listen_tcp(s, &cfg->listen, err, errlen);
	return s->lfd < 0 ? -1 : 0;
}

static void peer_name(struct peer *c, unsigned long id,
		      const struct sockaddr_storage *ss)
{
	char host[64], serv[16];

	if (ss->ss_family == AF_UNIX ||
	    getnameinfo((const struct sockaddr *)ss, sizeof(*ss), host,
			sizeof(host), serv, sizeof(serv),
			NI_NUMERICHOST | NI_NUMERICSERV))
		snprintf(c->peer, sizeof(c->peer), "connection %lu", id);
	else
		snprintf(c->peer, sizeof(c->peer), "connection %lu (%s:%s)",
			 id, host, serv);
}

static void server_remove(struct server *s, struct peer_node *n)
{
	struct peer_node **pp;

	pthread_mutex_lock(&s->lock);
	for (pp = &s->conns; *pp; pp = &(*pp)->next) {
		if (*pp == n) {
			*pp = n->next;
			break;
		}
	}
	/* closed under the lock, so shutdown never sees a reused fd */
	close(n->conn.fd);
	s->nconns--;
	pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->lock);
}

/*
 * The connection's own store (zeroos over Redis: its block map) goes
 * with it, unflushed as 0-Disk's, unless the server is stopping: 0-Disk
 * flushes every vdisk on SIGTERM.
 */
static void peer_detach(struct server *s, struct peer *c)
{
	bool stopping;

	pthread_mutex_lock(&s->lock);
	stopping = s->stopping;
	pthread_mutex_unlock(&s->lock);
	if (stopping && store_flush(c->st))
		shim_err("%s: flushing on shutdown failed", c->peer);
	store_close(c->st);
	c->st = NULL;
}

static void *peer_thread(void *arg)
{
	struct peer_node *n = arg;
	struct peer *c = &n->conn;
	struct server *s = c->srv;

	shim_debug("%s: connected", c->peer);
	stamps_open(c);
	if (!s->prof->negotiate(c)) {
		shim_debug("%s: transmission", c->peer);
		transmit(c);
	}
	if (c->holds_export)
		export_unlock(&s->exp);
	if (c->st && c->st != s->exp.st)
		peer_detach(s, c);
	shim_debug("%s: closed", c->peer);
	stamps_close(c);
	peer_free(c);
	server_remove(s, n);
	free(n);
	return NULL;
}

static void server_accept(struct server *s)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct peer_node *n;
	pthread_attr_t attr;
	int fd, one = 1;

	fd = accept4(s->lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno != EINTR && errno != EAGAIN)
			shim_err("accept: %s", strerror(errno));
		return;
	}
	if (ss.ss_family != AF_UNIX)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	n = calloc(1, sizeof(*n));
	if (!n || peer_init(&n->conn, fd, s)) {
		shim_err("out of memory for a new connection");
		free(n);
		close(fd);
		return;
	}
	n->conn.exp = &s->exp;
	n->conn.prof = s->prof;
	pthread_mutex_lock(&s->lock);
	n->conn.id = ++s->nextid;
	peer_name(&n->conn, n->conn.id, &ss);
	n->next = s->conns;
	s->conns = n;
	s->nconns++;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&n->thread, &attr, peer_thread, n)) {
		shim_err("cannot start a connection thread");
		s->conns = n->next;
		s->nconns--;
		close(fd);
		peer_free(&n->conn);
		free(n);
	}
	pthread_attr_destroy(&attr);
	pthread_mutex_unlock(&s->lock);
}

int server_run(struct server *s, int sigfd)
{
	struct pollfd pfd[2] = {
		{ .fd = s->lfd, .events = POLLIN },
		{ .fd = sigfd, .events = POLLIN },
	};
	struct signalfd_siginfo si;
	struct peer_node *n;

	shim_info("listening on %s (profile %s, export \"%s\", %llu bytes)",
		  s->where, s->prof->name, s->exp.name,
		  (unsigned long long)s->exp.size);
	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			shim_err("poll: %s", strerror(errno));
			break;
		}
		if (pfd[1].revents) {
			if (read(sigfd, &si, sizeof(si)) == sizeof(si))
				shim_info("%s: shutting down",
					  strsignal(si.ssi_signo));
			break;
		}
		if (pfd[0].revents)
			server_accept(s);
	}

	close(s->lfd);
	s->lfd = -1;
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	for (n = s->conns; n; n = n->next)
		shutdown(n->conn.fd, SHUT_RDWR);
	while (s->nconns)
		pthread_cond_wait(&s->idle, &s->lock);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

void server_fini(struct server *s)
{
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->cfg->listen.is_unix && s->where[0])
		unlink(s->cfg->listen.path);
	export_close(&s->exp);
	shaper_destroy(&s->shaper);
	pthread_cond_destroy(&s->idle);
	pthread_mutex_destroy(&s->lock);
}
