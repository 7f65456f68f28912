/* SPDX-License-Identifier: MIT */
/*
 * A revocation leaves a plain system call alone (cpushare/agent.c,
 * carrier_computes): a kernel thread asleep in the kernel uses no
 * processor, and the time-slice signal that stops a computing one would end
 * nanosleep, pause and the like early with EINTR, which SA_RESTART does not
 * undo for them.
 *
 * This process allows no more kernel threads than vprocs
 * (ITO_MAX_ACTIVATIONS), so that the monitor cannot hand a blocked vproc
 * on: the sleeping kernel thread is still its vproc's carrier when the
 * revocation comes, and time slices (hence the signal) are on. A thread per vproc
 * sleeps in a plain nanosleep; meanwhile a computing process arrives and
 * takes processors away. Every nanosleep must sleep its whole time, and the
 * revocation must have come while they all slept.
 * Run in the test's own domain (ITO_ALLOC_DOMAIN, set by ctest).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc_wait.h"
#include "common.h"

#define SLEEP_NS 3000000000ull
#define MAXV 64

static atomic_int returned;
static int result[MAXV];

static void *sleeper(void *arg)
{
    int k = (int)(intptr_t)arg;
    struct timespec ts = { (time_t)(SLEEP_NS / 1000000000u), (long)(SLEEP_NS % 1000000000u) };
    uint64_t t0 = ito_now_ns();
    result[k] = nanosleep(&ts, NULL) == 0 ? 0 : errno;
    if (!result[k] && ito_now_ns() - t0 < SLEEP_NS)
        result[k] = -1;   /* returned early without saying so */
    atomic_fetch_add(&returned, 1);
    return NULL;
}

/* The other process: a computing thread per vproc, until the test is gone. */
static void *hog(void *arg)
{
    (void)arg;
    volatile uint64_t x = 0;
    for (;;) {
        for (int i = 0; i < 100000; i++)
            x += (uint64_t)i;
        ito_yield();
    }
    return NULL;
}

static int child(void)
{
    OK(ito_init(NULL));
    for (int k = 0; k < ito_vproc_count(); k++) {
        ito_thread_t t;
        OK(ito_spawn(&t, NULL, hog, NULL));
    }
    pid_t parent = getppid();
    while (getppid() == parent)
        ito_sleep_ns(100000000ull);
    return 0;
}

static char *self_path;
static pid_t other;
static atomic_bool revoked_asleep;

/* A plain kernel thread, since every vproc is taken by a sleeper: start the
 * other process, and watch for a revocation while the sleepers sleep. */
static void *orchestrate(void *arg)
{
    (void)arg;
    usleep(100000);   /* the sleepers are in nanosleep */
    other = fork();
    CHECK(other >= 0);
    if (other == 0) {
        execl(self_path, self_path, "other", (char *)NULL);
        _exit(127);
    }
    while (atomic_load(&returned) == 0) {
        if (info().held < ito_vproc_count()) {
            atomic_store(&revoked_asleep, atomic_load(&returned) == 0);
            break;
        }
        usleep(1000);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    self_path = argv[0];
    if (argc > 1)
        return child();
    setvbuf(stdout, NULL, _IOLBF, 0);
    cpu_set_t cpus;
    CHECK(sched_getaffinity(0, sizeof cpus, &cpus) == 0);
    char cap[16];
    snprintf(cap, sizeof cap, "%d", CPU_COUNT(&cpus));
    setenv("ITO_MAX_ACTIVATIONS", cap, 1);   /* a vproc per CPU, a kernel thread per vproc */
    OK(ito_init(NULL));
    int n = ito_vproc_count();
    if (n < 2 || !info().enabled) {
        printf("alloc_asleep: %d vproc(s), allocator %s: nothing to revoke\n", n,
               info().enabled ? "on" : "off");
        return 0;
    }
    AWAIT(info().held == n && info().processes == 1);
    ito_thread_t t[MAXV];
    for (int k = 0; k < n && k < MAXV; k++) {
        ito_attr_t a;
        OK(ito_attr_init(&a));
        OK(ito_attr_set_vproc(&a, k));
        OK(ito_spawn(&t[k], &a, sleeper, (void *)(intptr_t)k));
    }
    pthread_t o;
    CHECK(pthread_create(&o, NULL, orchestrate, NULL) == 0);
    for (int k = 0; k < n && k < MAXV; k++)
        OK(ito_join(t[k], NULL));
    CHECK(pthread_join(o, NULL) == 0);
    for (int k = 0; k < n && k < MAXV; k++)
        if (result[k]) {
            fprintf(stderr, "the sleeper on vproc %d: %s\n", k,
                    result[k] < 0 ? "returned early" : strerror(result[k]));
            abort();
        }
    if (!atomic_load(&revoked_asleep)) {
        fprintf(stderr, "no processor was taken away while the sleepers slept\n");
        abort();
    }
    /* The revoked vprocs park once their sleepers are done. */
    double ms = AWAIT(info().held <= n - n / 2);
    printf("alloc_asleep: %d sleepers slept their whole time through a revocation; held %d of %d after %.1f ms\n",
           n, info().held, n, ms);
    kill(other, SIGKILL);
    int st;
    CHECK(waitpid(other, &st, 0) == other);
    return 0;
}
