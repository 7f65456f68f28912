/* SPDX-License-Identifier: MIT */
/* fork() from a busy process (issue 22): 4 vprocs and 100 threads that
 * compute, yield, sleep, wait on sync objects or spawn, and a fork from main,
 * from one of the threads, or while threads are being spawned. The child must
 * be a working ito process (runtime/fork.c): it spawns and joins, sleeps,
 * shares a mutex, and exits 0. Each scenario runs in a fresh process
 * (test_run_self_watched) that forks several times; it waits for each child
 * for at most CHILD_LIMIT_S and kills one that is still running (a hang
 * fails the test instead of hanging it; ITO_TEST_KEEP_HUNG=1 leaves it for
 * gdb). */
#include "common.h"

#include <pthread.h>
#include <sys/syscall.h>

enum { THREADS = 100, CHILD_LIMIT_S = 20 };

static atomic_int stop;
static ito_mutex_t pm = ITO_MUTEX_INIT;   /* parked on: held by main around the forks */
static ito_mutex_t cm = ITO_MUTEX_INIT;
static ito_cond_t cc = ITO_COND_INIT;
static bool released;
static ito_sem_t sem;

static void *leaf(void *a)
{
    ito_yield();
    return a;
}

/* What each of the parent's threads does, by its index. */
static void *worker(void *a)
{
    uintptr_t i = (uintptr_t)a;
    volatile uint64_t x = 0;
    switch (i % 8) {
    case 0:   /* computes without a switch point: only a time slice moves it */
    case 1:
        while (!atomic_load_explicit(&stop, memory_order_relaxed))
            x++;
        break;
    case 2:
        while (!atomic_load(&stop))
            ito_yield();
        break;
    case 3:
        while (!atomic_load(&stop))
            ito_sleep_ns(50000 + (i % 7) * 10000);
        break;
    case 4:   /* parked on a mutex that main holds */
        ito_mutex_lock(&pm);
        ito_mutex_unlock(&pm);
        break;
    case 5:   /* parked on a condition variable */
        ito_mutex_lock(&cm);
        while (!released)
            ito_cond_wait(&cc, &cm);
        ito_mutex_unlock(&cm);
        break;
    case 6:
        ito_sem_wait(&sem);
        break;
    case 7:   /* spawning all along */
        while (!atomic_load(&stop)) {
            ito_thread_t t;
            if (ito_spawn(&t, NULL, leaf, NULL) == 0)
                ito_join(t, NULL);
        }
        break;
    }
    return NULL;
}

/* ---- the child ---- */

static ito_mutex_t child_m = ITO_MUTEX_INIT;
static long shared_count;

static void *child_adder(void *a)
{
    for (int i = 0; i < 1000; i++) {
        ito_mutex_lock(&child_m);
        shared_count++;
        if (i % 100 == 0)
            ito_yield();   /* with the mutex held: the others park on it */
        ito_mutex_unlock(&child_m);
    }
    return a;
}

static int child(void)
{
    for (uintptr_t i = 1; i <= 20; i++) {
        ito_thread_t t;
        void *r;
        if (ito_spawn(&t, NULL, leaf, (void *)i) || ito_join(t, &r) || r != (void *)i)
            return 1;
    }
    uint64_t t0 = ito_now_ns();
    if (ito_sleep_ns(1000000) || ito_now_ns() - t0 < 1000000)
        return 2;
    ito_thread_t t[4];
    for (int i = 0; i < 4; i++)
        if (ito_spawn(&t[i], NULL, child_adder, NULL))
            return 3;
    for (int i = 0; i < 4; i++)
        if (ito_join(t[i], NULL))
            return 4;
    return shared_count == 4000 ? 0 : 5;
}

static pid_t fork_child(void)
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(child());
    return pid;
}

/* Wait for the child for at most CHILD_LIMIT_S; 0 if it exited 0. One
 * blocking poll of its pidfd: the parent's busy threads may keep this thread
 * waiting for a processor, but not the child. */
static int reap(pid_t pid, const char *what)
{
    CHECK(pid > 0);
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    CHECK(fd >= 0);
    struct pollfd p = { .fd = fd, .events = POLLIN };
    int n;
    ito_blocking_begin();
    do
        n = poll(&p, 1, CHILD_LIMIT_S * 1000);
    while (n < 0 && errno == EINTR);
    ito_blocking_end();
    close(fd);
    int st = 0;
    if (n == 0) {
        fprintf(stderr, "%s: child %d still running after %d s (hung)\n", what, (int)pid, CHILD_LIMIT_S);
        if (getenv("ITO_TEST_KEEP_HUNG"))
            return 1;
        kill(pid, SIGKILL);
    }
    CHECK_EQ(waitpid(pid, &st, 0), pid);
    if (n > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    char sb[128];
    fprintf(stderr, "%s: child %s\n", what, test_status_str(st, sb, sizeof sb));
    return 1;
}

static void *fork_in_thread(void *a)
{
    (void)a;
    return (void *)(intptr_t)fork_child();
}

/* ---- one scenario: a process with the parent's threads, forking ---- */

static int scenario(const char *name)
{
    OK(ito_sem_init(&sem, 0));
    ito_mutex_lock(&pm);
    ito_thread_t w[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        OK(ito_spawn(&w[i], NULL, worker, (void *)i));
    ito_sleep_ns(10000000);   /* let them get going */
    int failed = 0;
    long rounds = test_scaled(4);
    for (long r = 0; r < rounds && !failed; r++) {
        pid_t pid;
        if (!strcmp(name, "main")) {
            pid = fork_child();
        } else if (!strcmp(name, "thread")) {
            ito_thread_t f;
            void *p;
            OK(ito_spawn(&f, NULL, fork_in_thread, NULL));
            OK(ito_join(f, &p));
            pid = (pid_t)(intptr_t)p;
        } else if (!strcmp(name, "spawning")) {
            /* Forks right after spawning a batch, some not started yet. */
            ito_thread_t s[16];
            for (int i = 0; i < 16; i++)
                OK(ito_spawn(&s[i], NULL, leaf, NULL));
            pid = fork_child();
            for (int i = 0; i < 16; i++)
                OK(ito_join(s[i], NULL));
        } else {
            fprintf(stderr, "unknown scenario %s\n", name);
            return 2;
        }
        failed = reap(pid, name);
    }
    atomic_store(&stop, 1);
    ito_mutex_unlock(&pm);
    ito_mutex_lock(&cm);
    released = true;
    ito_cond_broadcast(&cc);
    ito_mutex_unlock(&cm);
    for (int i = 0; i < THREADS; i++)
        OK(ito_sem_post(&sem));
    for (int i = 0; i < THREADS; i++)
        OK(ito_join(w[i], NULL));
    return failed;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        return scenario(argv[1]);
    static const char *const names[] = { "main", "thread", "spawning" };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char err[4096];
        int st = test_run_self_watched(names[i], err, sizeof err, 0, 0, NULL);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            char sb[128];
            fprintf(stderr, "fork_busy %s: %s\n%s", names[i], test_status_str(st, sb, sizeof sb), err);
            return 1;
        }
    }
    printf("fork_busy: ok\n");
    return 0;
}
