/* SPDX-License-Identifier: MIT */
/* Revocations under load (cpushare/revoke.c): two processes of one allocation
 * domain flip their priorities every couple of milliseconds, so that
 * processors go back and forth between them, while their threads spawn and
 * join, lock a shared mutex, yield, sleep and compute. Every count must come
 * out exact, the main thread must stay itself (a join of itself is
 * EDEADLK), and both must end. ALLOC_STRESS_SECONDS (default 3). */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define WORKERS 6
static ito_mutex_t mu;
static long counter;
static _Atomic long expected, children;
static atomic_bool stop;

static void *child(void *arg)
{
    atomic_fetch_add(&children, 1);
    return arg;
}

static void *worker(void *arg)
{
    uint64_t seed = (uint64_t)(intptr_t)arg * 7919 + 1;
    while (!atomic_load(&stop)) {
        switch (test_rand(&seed) % 5) {
        case 0: {
            ito_thread_t t;
            void *r;
            OK(ito_spawn(&t, NULL, child, arg));
            OK(ito_join(t, &r));
            CHECK(r == arg);
            break;
        }
        case 1:
            OK(ito_mutex_lock(&mu));
            counter++;
            OK(ito_mutex_unlock(&mu));
            atomic_fetch_add(&expected, 1);
            break;
        case 2:
            ito_yield();
            break;
        case 3:
            ito_sleep_ns(test_rand(&seed) % 200000);
            break;
        default: {
            volatile uint64_t x = 0;
            for (int i = 0; i < 20000; i++)
                x += (uint64_t)i;
        }
        }
    }
    return NULL;
}

static int run(int seconds, int flip)
{
    OK(ito_init(NULL));
    OK(ito_mutex_init(&mu));
    ito_thread_t w[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        OK(ito_spawn(&w[i], NULL, worker, (void *)(intptr_t)(i + 1)));
    uint64_t end = ito_now_ns() + (uint64_t)seconds * 1000000000u;
    for (int k = 0; ito_now_ns() < end; k++) {
        OK(ito_alloc_set_priority((k & 1) ? flip : -flip));
        CHECK_EQ(ito_join(ito_self(), NULL), EDEADLK);
        ito_sleep_ns(2000000);
    }
    atomic_store(&stop, true);
    for (int i = 0; i < WORKERS; i++)
        OK(ito_join(w[i], NULL));
    CHECK_EQ(counter, atomic_load(&expected));
    ito_stats_t st;
    OK(ito_stats_get(&st));
    printf("alloc_stress (pid %d): %ld increments, %ld children, %llu revocations\n", (int)getpid(), counter,
           atomic_load(&children), (unsigned long long)st.revocations);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *s = getenv("ALLOC_STRESS_SECONDS");
    int seconds = s ? atoi(s) : 3;
    if (argc > 1)
        return run(seconds, -1);   /* the partner: the opposite phase */
    pid_t p = fork();
    CHECK(p >= 0);
    if (p == 0) {
        execl(argv[0], argv[0], "partner", (char *)NULL);
        _exit(127);
    }
    int r = run(seconds, 1);
    int st;
    CHECK(waitpid(p, &st, 0) == p);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return r;
}
