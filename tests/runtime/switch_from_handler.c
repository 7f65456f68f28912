/* SPDX-License-Identifier: MIT */
/* Misuse: a call that may switch, made from a signal handler that
 * interrupted its thread inside ito (issue 22, item 6). Going on would switch
 * a thread that is half switched already, or wait for ever on a lock the
 * interrupted code holds: ito aborts, naming the caller's mistake
 * (runtime/critical.h, ito__critical_none) — never a hang, never an
 * "internal error".
 *
 * Each case runs in a child process on one vproc: two threads call ito_yield
 * in a loop (nearly all their time is inside ito), while a kernel thread of
 * the C library's sends SIGUSR1 to the process every 20 us; the handler
 * makes the case's call. A handler that lands in the threads' own code runs
 * the call like a time slice's end; the first that lands inside ito must
 * abort the child with the message, within 20 s. Each case runs ROUNDS
 * times. */
#include "common.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

enum { ROUNDS = 10 };

static void *leaf(void *a) { return a; }

static ito_mutex_t mu = ITO_MUTEX_INIT;
static const char *call;

static void handler(int sig)
{
    (void)sig;
    int saved = errno;
    if (!strcmp(call, "yield")) {
        ito_yield();
    } else if (!strcmp(call, "spawn_join")) {
        ito_thread_t t;
        if (ito_spawn(&t, NULL, leaf, NULL) == 0)
            ito_join(t, NULL);
    } else if (!strcmp(call, "sleep")) {
        ito_sleep_ns(1000);
    } else if (!strcmp(call, "lock")) {
        ito_mutex_lock(&mu);   /* held by the threads now and then: contended */
        ito_mutex_unlock(&mu);
    }
    errno = saved;
}

static void *yielder(void *a)
{
    for (unsigned long i = 0;; i++) {
        ito_yield();
        if (i % 64 == 0) {
            ito_mutex_lock(&mu);
            ito_yield();
            ito_mutex_unlock(&mu);
        }
    }
    return a;
}

static void *sender(void *a)
{
    (void)a;
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &s, NULL);
    struct timespec gap = { 0, 20000 };
    for (;;) {
        kill(getpid(), SIGUSR1);
        nanosleep(&gap, NULL);
    }
    return NULL;
}

static void child(const char *what)
{
    call = what;
    ito_config_t c = ITO_CONFIG_INIT;
    c.vprocs = 1;
    OK(ito_init(&c));
    struct sigaction sa = { .sa_handler = handler, .sa_flags = SA_RESTART };
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    ito_thread_t t[2];
    for (int i = 0; i < 2; i++)
        OK(ito_spawn(&t[i], NULL, yielder, NULL));
    pthread_t p;
    CHECK(pthread_create(&p, NULL, sender, NULL) == 0);
    ito_sleep_ns(20 * 1000000000ull);   /* (the abort comes long before) */
    fprintf(stderr, "switch_from_handler: %s: no abort in 20 s\n", what);
    _exit(3);
}

static void run_case(const char *what)
{
    for (int r = 0; r < ROUNDS; r++) {
        char path[] = "/tmp/ito-switch-from-handler-XXXXXX";
        int fd = mkstemp(path);
        CHECK(fd >= 0);
        unlink(path);
        fflush(NULL);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            dup2(fd, 2);
            alarm(30);   /* a hang ends with SIGALRM, which the parent names */
            child(what);
        }
        int st;
        CHECK(waitpid(pid, &st, 0) == pid);
        char out[8192] = { 0 };
        CHECK(lseek(fd, 0, SEEK_SET) == 0);
        ssize_t n = read(fd, out, sizeof out - 1);
        close(fd);
        CHECK(n >= 0);
        char desc[128];
        bool aborted = WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
        if (!aborted || !strstr(out, "from a signal handler that interrupted it") || strstr(out, "internal error")) {
            fprintf(stderr, "switch_from_handler: %s, round %d: the child %s; its output:\n%s\n", what, r,
                    test_status_str(st, desc, sizeof desc), out);
            abort();
        }
    }
    printf("switch_from_handler: %s: %d aborts, each naming the caller's mistake\n", what, ROUNDS);
}

int main(void)
{
    run_case("yield");
    run_case("spawn_join");
    run_case("sleep");
    run_case("lock");
    return 0;
}
