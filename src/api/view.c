/* SPDX-License-Identifier: MIT */
/*
 * The live view's server: ito-ctl asks, the process answers (view.h).
 *
 * Problem. ito-ctl shows, like top, every ito process's threads and vprocs;
 * those live in each process's private memory, and nothing in the kernel
 * shows them (top sees a few carriers).
 *
 * Approach. A kernel thread of its own ("ito-view") waits in accept on a
 * Unix socket in the abstract namespace, named with the user and pid: the
 * name needs no file (nothing is left behind when the process dies, and
 * there is nothing to clean), and ito-ctl finds every ito process of the
 * machine in /proc/net/unix. Each connection gets one snapshot, taken then
 * (snapshot.h). Nothing is added to any thread operation; a process nobody
 * watches has one more kernel thread asleep and one descriptor (close on
 * exec). ITO_VIEW=0 turns it off.
 *
 * Who may look. Another user could connect: the server answers only its own
 * user and root (SO_PEERCRED). Another user could also take the name first:
 * then this process warns and serves no view; ito-ctl checks that the
 * server it reached is the process the name says (the peer's pid and user).
 * A client that does not read cannot hold the server up for long: sends
 * time out after a second.
 */
#include "api/view.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <ito.h>

#include "api/snapshot.h"
#include "base/env.h"
#include "base/kthread.h"
#include "base/libc.h"
#include "base/panic.h"
#include "runtime/runtime.h"

static int listen_fd = -1;
static int answering_fd = -1;   /* the connection being answered (for the child of a fork) */
static char program[16];   /* the command name of the thread that started ito, as the allocator's */

/* A growing buffer of text. */
struct text {
    char *buf;
    size_t len, cap;
};

/* Append to it; false when out of memory. */
static bool add(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool add(struct text *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0)
            return false;
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return true;
        }
        size_t cap = t->cap * 2 + (size_t)n;
        char *b = realloc(t->buf, cap);
        if (!b)
            return false;
        t->buf = b;
        t->cap = cap;
    }
}

/* A thread's name on one line: no control characters. */
static void printable(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

static bool format(struct text *t, struct ito__snapshot *s)
{
    t->len = 0;
    bool ok = add(t, "ito-view %d\npid %d\nprogram %s\npolicy %s\ntaken_ns %llu\nalloc %d %d %d %d\n"
                     "activations %d %d\nthreads %d %d %d\n",
                  ITO__VIEW_VERSION, (int)getpid(), program, ito__rt.policy->name,
                  (unsigned long long)s->taken_ns, s->sharing, s->held, s->want, s->priority, s->activations,
                  s->spares, s->running, s->ready, s->blocked);
    for (int i = 0; ok && i < s->nvprocs; i++) {
        struct ito__snapshot_vproc *v = &s->vp[i];
        printable(v->name);
        ok = add(t, "vp %d %s %d %d %llu %llu %llu %llu %u %s\n", i, v->doing, v->cpu, v->queued,
                 (unsigned long long)v->switches, (unsigned long long)v->steals, (unsigned long long)v->handoffs,
                 (unsigned long long)v->slices, v->thread, v->name);
    }
    return ok && add(t, "end\n");
}

static void answer(int c, struct ito__snapshot *s, struct text *t)
{
    struct ucred cr;
    socklen_t len = sizeof cr;
    if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || (cr.uid != geteuid() && cr.uid != 0))
        return;   /* another user's: no answer */
    struct timeval tv = { 1, 0 };
    setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    ito__snapshot_take(s);
    if (!format(t, s))
        return;   /* out of memory: the client sees no "end" */
    for (size_t at = 0; at < t->len;) {
        ssize_t w = ito__libc_send(c, t->buf + at, t->len - at, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        at += (size_t)w;
    }
}

/* The server's snapshot and text, in globals: the child of a fork, where the
 * server thread is gone, reuses them for its own server (and a leak checker
 * sees them reachable there). */
static struct ito__snapshot *snap;
static struct text text;

static void *server(void *arg)
{
    int fd = (int)(intptr_t)arg;
    if (!snap)
        snap = ito__snapshot_new();
    if (!text.buf)
        text = (struct text){ malloc(4096), 0, 4096 };
    if (!snap || !text.buf) {
        ito__warn("ITO_VIEW: out of memory; ito-ctl will not see this process");
        return NULL;
    }
    for (;;) {
        int c = ito__libc_accept4(fd, NULL, NULL, SOCK_CLOEXEC);
        if (c >= 0) {
            answering_fd = c;
            answer(c, snap, &text);
            answering_fd = -1;
            close(c);
        } else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            struct timespec ts = { 0, 100 * 1000 * 1000 };   /* the connection waits in the backlog */
            ito__libc_nanosleep(&ts, NULL);
        } else if (errno != EINTR && errno != ECONNABORTED) {
            ito__warn("ITO_VIEW: the live view stops (accept: %s); ito-ctl will not see this process",
                      strerror(errno));
            return NULL;
        }
    }
}

void ito__view_start(void)
{
    if (!ito__env_int("ITO_VIEW", 1, 0, 1, false))
        return;
    prctl(PR_GET_NAME, program);
    printable(program);
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    int n = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, ITO__VIEW_NAME, (unsigned)geteuid(), (int)getpid());
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        ito__warn("ITO_VIEW: no socket for the live view (%s); ito-ctl will not see this process", strerror(errno));
        return;
    }
    if (bind(fd, (struct sockaddr *)&a, len) != 0 || listen(fd, 8) != 0) {
        ito__warn("ITO_VIEW: cannot listen on @%s (%s%s); ito-ctl will not see this process", a.sun_path + 1,
                  strerror(errno), errno == EADDRINUSE ? ": another process took the name" : "");
        close(fd);
        return;
    }
    int e = ito__kthread_start("ito-view", 64 * 1024, server, (void *)(intptr_t)fd, NULL);
    if (e) {
        ito__warn("ITO_VIEW: cannot start the live view (%s); ito-ctl will not see this process", strerror(e));
        close(fd);
        return;
    }
    listen_fd = fd;
}

void ito__view_forked(void)
{
    /* The parent's: its server is not here. */
    if (listen_fd >= 0)
        close(listen_fd);
    if (answering_fd >= 0)
        close(answering_fd);
    listen_fd = answering_fd = -1;
}
