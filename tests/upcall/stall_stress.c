/* SPDX-License-Identifier: MIT */
/* Blocking that nobody bracketed, under load (runtime/carrier.c), on 2 vprocs
 * with 1 ms time slices.
 *
 * Threads sleep in plain usleep() and read pipes with plain read() between
 * ito calls of every kind (mutex, yield, spawn and join, condition
 * variables), while others compute through their slices: vprocs are taken
 * from sleeping kernel threads and given back over and over, and kernel
 * threads wake up to find their vproc gone at any of their next ito calls or
 * ticks. Nothing may be lost: every increment counted under the mutex, every
 * child joined, every byte read. Then many threads sleep at once: their
 * sleeps overlap. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "common.h"

enum { SLEEPY = 16 };
static long rounds;
static ito_mutex_t mu;
static ito_cond_t cv;
static long counter, signals;
static atomic_bool stop;
static int pipes[SLEEPY][2];
static atomic_long bytes;

static void *child(void *arg) { return (void *)((intptr_t)arg + 1); }

static void *sleepy(void *arg)
{
    int me = (int)(intptr_t)arg;
    uint64_t seed = (uint64_t)me * 7919 + 1;
    for (long i = 0; i < rounds; i++) {
        switch (test_rand(&seed) % 4) {
        case 0:
            usleep((useconds_t)(test_rand(&seed) % 3000));   /* plain: no bracket */
            break;
        case 1: {
            char c;
            CHECK(read(pipes[me][0], &c, 1) == 1);   /* plain; a foreign writer feeds it */
            CHECK_EQ(c, 'x');
            atomic_fetch_add(&bytes, 1);
            break;
        }
        case 2: {
            ito_thread_t t;
            void *r;
            OK(ito_spawn(&t, NULL, child, (void *)(intptr_t)i));
            OK(ito_join(t, &r));
            CHECK(r == (void *)(intptr_t)(i + 1));
            break;
        }
        default:
            ito_yield();
        }
        OK(ito_mutex_lock(&mu));
        counter++;
        if (counter % 7 == 0) {
            signals++;
            OK(ito_cond_broadcast(&cv));
        }
        OK(ito_mutex_unlock(&mu));
    }
    return NULL;
}

/* Waits on the condition variable now and then, between plain sleeps. */
static void *waiter(void *arg)
{
    OK(ito_mutex_lock(&mu));
    while (!atomic_load(&stop)) {
        struct timespec dl = test_deadline_in(5 * 1000000u);
        int r = ito_cond_timedwait(&cv, &mu, &dl);
        CHECK(r == 0 || r == ETIMEDOUT);
        OK(ito_mutex_unlock(&mu));
        usleep(500);
        OK(ito_mutex_lock(&mu));
    }
    OK(ito_mutex_unlock(&mu));
    return NULL;
}

static void *computer(void *arg)
{
    volatile uint64_t x = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        for (int i = 0; i < 10000; i++)
            x += (uint64_t)i;
#if defined(__SANITIZE_THREAD__)
        /* TSan delivers the tick's signal only inside the C library, so
         * this loop would never be preempted there (tests/CMakeLists.txt,
         * NOTSAN): both vprocs could end up computing for ever. */
        ito_yield();
#endif
    }
    return NULL;
}

/* A kernel thread ito does not know, writing a byte into every pipe now and
 * then; it writes more than the readers need (the rest stays in the pipes). */
static void *feeder(void *arg)
{
    while (!atomic_load(&stop)) {
        for (int i = 0; i < SLEEPY; i++)
            CHECK(write(pipes[i][1], "x", 1) == 1 || errno == EAGAIN);   /* full: enough there */
        usleep(1000);
    }
    return NULL;
}

static void *short_sleeper(void *arg)
{
    usleep(30 * 1000);
    return NULL;
}

int main(void)
{
    alarm(240);
    rounds = test_scaled(400);
    OK(ito_mutex_init(&mu));
    OK(ito_cond_init(&cv));
    for (int i = 0; i < SLEEPY; i++) {
        CHECK(pipe(pipes[i]) == 0);
        CHECK(fcntl(pipes[i][1], F_SETFL, O_NONBLOCK) == 0);
    }
    pthread_t f;
    CHECK_EQ(pthread_create(&f, NULL, feeder, NULL), 0);
    ito_thread_t s[SLEEPY], w, c[2];
    OK(ito_spawn(&w, NULL, waiter, NULL));
    for (int i = 0; i < 2; i++)
        OK(ito_spawn(&c[i], NULL, computer, NULL));
    for (int i = 0; i < SLEEPY; i++)
        OK(ito_spawn(&s[i], NULL, sleepy, (void *)(intptr_t)i));
    for (int i = 0; i < SLEEPY; i++)
        OK(ito_join(s[i], NULL));
    atomic_store(&stop, true);
    OK(ito_join(w, NULL));
    for (int i = 0; i < 2; i++)
        OK(ito_join(c[i], NULL));
    CHECK_EQ(pthread_join(f, NULL), 0);
    CHECK_EQ(counter, SLEEPY * rounds);
    CHECK_EQ(signals, counter / 7);

    /* Many at once: 64 plain sleeps of 30 ms overlap. */
    enum { M = 64 };
    ito_thread_t m[M];
    uint64_t t0 = ito_now_ns();
    for (int i = 0; i < M; i++)
        OK(ito_spawn(&m[i], NULL, short_sleeper, NULL));
    for (int i = 0; i < M; i++)
        OK(ito_join(m[i], NULL));
    uint64_t ms = (ito_now_ns() - t0) / 1000000u;

    ito_stats_t st;
    OK(ito_stats_get(&st));
    printf("stall_stress: %ld rounds x %d threads, %ld bytes read; %d plain sleeps of 30 ms took %llu ms "
           "(one after another on 2 vprocs: %d ms); %llu stalls, %llu preemptions\n",
           rounds, SLEEPY, atomic_load(&bytes), M, (unsigned long long)ms, M * 30 / 2,
           (unsigned long long)st.stalls, (unsigned long long)st.preemptions);
    CHECK(st.stalls > 0);
    return 0;
}
