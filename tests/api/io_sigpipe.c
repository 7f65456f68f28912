/* SPDX-License-Identifier: MIT */
/* SIGPIPE as in the C library (ito/io.h): a write to a pipe or socket whose
 * reading end is closed raises SIGPIPE and fails with EPIPE, unless ito_send
 * is given MSG_NOSIGNAL. With SIGPIPE at its default disposition the process
 * dies of it, so each case runs in a child process, once with the libc call
 * and once with the ito call, from an ito thread: both children must end the
 * same way (killed by SIGPIPE, or alive with -1/EPIPE; for a write parked on
 * a full pipe, either that or a short write, as timing has it). With SIGPIPE ignored,
 * io_semantics_pipes.c checks the EPIPE itself.
 *
 * Cases: write/writev to a pipe (blocking and not), write/send to a stream
 * socket (with and without MSG_NOSIGNAL, blocking and not), and a blocking
 * write parked on a full pipe whose reader closes meanwhile. */
#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "common.h"

enum cs {
    C_WRITE,
    C_WRITE_NB,
    C_WRITEV,
    C_SEND,
    C_SEND_NB,
    C_SEND_NOSIG,
    C_SEND_NOSIG_NB,
    C_WRITE_SOCK,
    C_PARKED_WRITE,   /* blocked on a full pipe when the reader closes */
    NCASES
};
static const char *const names[NCASES] = {
    "write(pipe)",          "write(non-blocking pipe)",         "writev(pipe)",
    "send(socket)",         "send(non-blocking socket)",        "send(socket, MSG_NOSIGNAL)",
    "send(non-blocking socket, MSG_NOSIGNAL)", "write(socket)", "write(full pipe, reader closes meanwhile)"
};

struct run {
    int k;
    bool ito;
};

static void *closer(void *a)
{
    int fd = (int)(intptr_t)a;
    char buf[65536];
    ito_sleep_ns(30000000);
    /* Make some room, so that the writer is inside its write, then close. */
    CHECK(read(fd, buf, sizeof buf) > 0);
    ito_sleep_ns(30000000);
    CHECK(close(fd) == 0);
    return NULL;
}

static void *one_case(void *a)
{
    struct run *r = a;
    int k = r->k;
    int fd[2];
    bool sock = k == C_SEND || k == C_SEND_NB || k == C_SEND_NOSIG || k == C_SEND_NOSIG_NB || k == C_WRITE_SOCK;
    bool nb = k == C_WRITE_NB || k == C_SEND_NB || k == C_SEND_NOSIG_NB;
    if (sock)
        CHECK(socketpair(AF_UNIX, SOCK_STREAM | (nb ? SOCK_NONBLOCK : 0), 0, fd) == 0);
    else
        CHECK(pipe2(fd, nb ? O_NONBLOCK : 0) == 0);
    static char big[1 << 20];
    pthread_t cl;
    if (k == C_PARKED_WRITE)
        CHECK_EQ(pthread_create(&cl, NULL, closer, (void *)(intptr_t)fd[0]), 0);
    else
        CHECK(close(fd[0]) == 0);
    struct iovec v[2] = { { (void *)"ab", 2 }, { (void *)"cd", 2 } };
    test_set_errno(0);
    long res;
    switch (k) {
    case C_WRITEV:
        res = r->ito ? ito_writev(fd[1], v, 2) : writev(fd[1], v, 2);
        break;
    case C_SEND:
    case C_SEND_NB:
        res = r->ito ? ito_send(fd[1], "x", 1, 0) : send(fd[1], "x", 1, 0);
        break;
    case C_SEND_NOSIG:
    case C_SEND_NOSIG_NB:
        res = r->ito ? ito_send(fd[1], "x", 1, MSG_NOSIGNAL) : send(fd[1], "x", 1, MSG_NOSIGNAL);
        break;
    case C_PARKED_WRITE:
        res = r->ito ? ito_write(fd[1], big, sizeof big) : write(fd[1], big, sizeof big);
        break;
    default:
        res = r->ito ? ito_write(fd[1], "x", 1) : write(fd[1], "x", 1);
        break;
    }
    int e = test_errno();
    /* Still alive: SIGPIPE was not raised (or not fatal). */
    fprintf(stderr, "%s returned %ld, errno %s\n", names[k], res, strerrorname_np(e) ? strerrorname_np(e) : "0");
    if (k == C_PARKED_WRITE) {
        /* Alive: the call that saw the close had moved some bytes first, and
         * returns their count (a short write), as the kernel's write does. */
        CHECK(res > 0 && res < (long)sizeof big);
        CHECK_EQ(pthread_join(cl, NULL), 0);
    } else
        CHECK(res == -1 && e == EPIPE);
    return NULL;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_DFL);
    if (argc > 1) {
        alarm(30);
        struct run r = { atoi(argv[1]) / 2, atoi(argv[1]) % 2 == 1 };
        CHECK(r.k >= 0 && r.k < NCASES);
        ito_thread_t t;
        OK(ito_spawn(&t, NULL, one_case, &r));
        OK(ito_join(t, NULL));
        return 0;
    }
    printf("io_uring active: %s\n", ito_io_uring_active() ? "yes" : "no");
    fflush(stdout);
    int bad = 0;
    for (int k = 0; k < NCASES; k++) {
        int st[2];
        char err[2][4096], desc[2][128];
        for (int i = 0; i < 2; i++) {
            char arg[16];
            snprintf(arg, sizeof arg, "%d", 2 * k + i);
            st[i] = test_run_self(arg, err[i], sizeof err[i]);
            test_status_str(st[i], desc[i], sizeof desc[i]);
        }
        bool same = (WIFSIGNALED(st[0]) && WIFSIGNALED(st[1]) && WTERMSIG(st[0]) == WTERMSIG(st[1])) ||
                    (WIFEXITED(st[0]) && WIFEXITED(st[1]) && WEXITSTATUS(st[0]) == WEXITSTATUS(st[1]));
        bool ok = WIFEXITED(st[0]) ? WEXITSTATUS(st[0]) == 0 : WTERMSIG(st[0]) == SIGPIPE;
        if (k == C_PARKED_WRITE) {
            /* Whether the call that sees the close has moved bytes first
             * (then a short write, no signal) or not (SIGPIPE) is timing, for
             * the kernel's write as for ito's: each must be one of the two. */
            bool ito_ok = WIFEXITED(st[1]) ? WEXITSTATUS(st[1]) == 0 : WTERMSIG(st[1]) == SIGPIPE;
            same = ok && ito_ok;
        }
        printf("%-42s libc: %s; ito: %s\n", names[k], desc[0], desc[1]);
        if (!ok)
            fprintf(stderr, "  the libc child ended unexpectedly; its stderr:\n%s\n", err[0]);
        if (!same)
            fprintf(stderr, "  ito_%s differs from libc; the ito child's stderr:\n%s\n", names[k], err[1]);
        bad += !same || !ok;
    }
    if (bad) {
        fprintf(stderr, "io_sigpipe: %d of %d cases differ from the C library\n", bad, NCASES);
        return 1;
    }
    return 0;
}
