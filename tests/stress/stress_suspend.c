/* SPDX-License-Identifier: MIT */
/* Stress: random ito_suspend / ito_resume / ito_set_entry on threads that are
 * running, ready, blocked on a mutex, a semaphore or a sleep, from a
 * controller thread and from main at once. The program must finish and the
 * counters stay consistent:
 *   - lockers increment a plain counter under a mutex, sometimes switching
 *     while holding it, and count their own increments: the shared counter
 *     must equal the sum;
 *   - restartable workers (no locks held across switch points) are restarted
 *     with ito_set_entry now and then; their increments are atomic pairs
 *     (own, total) with no switch point in between, so total == sum of own
 *     whatever frames were dropped — less at most one per restart, for a
 *     thread interrupted between the two (ito_suspend interrupts one that
 *     comes to no switch point within a millisecond);
 *   - a producer/consumer pair over a semaphore loses no unit: every post is
 *     consumed (units taken by a consumer that is then restarted are counted
 *     at the moment they are taken). */
#include "common.h"

enum { NLOCK = 6, NRESTART = 6, NTOTAL = NLOCK + NRESTART + 2 };

static atomic_int stop;
static ito_mutex_t m = ITO_MUTEX_INIT;
static long shared;                    /* m */
static atomic_long own[NTOTAL];
static atomic_long total_restartable;
static atomic_long restarts;
static ito_sem_t units;
static atomic_long posted, taken;

static void *locker(void *a)
{
    int i = (int)(intptr_t)a;
    uint64_t seed = (uint64_t)i + 1;
    while (!atomic_load(&stop)) {
        OK(ito_mutex_lock(&m));
        long v = shared;
        if (test_rand(&seed) % 8 == 0)
            ito_yield();   /* holding the mutex across a switch */
        shared = v + 1;
        atomic_fetch_add(&own[i], 1);
        OK(ito_mutex_unlock(&m));
        if (test_rand(&seed) % 16 == 0)
            ito_sleep_ns(1000);
        else
            ito_yield();
    }
    return NULL;
}

static void *restartable(void *a)
{
    int i = (int)(intptr_t)a;
    uint64_t seed = (uint64_t)i * 31 + 7;
    while (!atomic_load(&stop)) {
        atomic_fetch_add(&own[i], 1);
        atomic_fetch_add(&total_restartable, 1);
        switch (test_rand(&seed) % 4) {
        case 0:
            ito_sleep_ns(2000);
            break;
        default:
            ito_yield();
            break;
        }
    }
    return (void *)(intptr_t)i;
}

static void *restarted(void *a)
{
    atomic_fetch_add(&restarts, 1);
    return restartable(a);
}

static void *producer(void *a)
{
    while (!atomic_load(&stop)) {
        OK(ito_sem_post(&units));
        atomic_fetch_add(&posted, 1);
        ito_yield();
    }
    return NULL;
}

static void *consumer(void *a)
{
    for (;;) {
        struct timespec dl = test_deadline_in(1000000);
        int e = ito_sem_timedwait(&units, &dl);
        if (e == 0)
            atomic_fetch_add(&taken, 1);
        else
            CHECK_EQ(e, ETIMEDOUT);
        if (atomic_load(&stop) == 2)
            return NULL;
        ito_yield();   /* no preemption: let the others of this vproc run */
    }
}

static ito_thread_t ts[NTOTAL];

static void chaos(uint64_t seed, long ops)
{
    for (long k = 0; k < ops; k++) {
        int i = (int)(test_rand(&seed) % NTOTAL);
        ito_thread_t t = ts[i];
        switch (test_rand(&seed) % 6) {
        case 0:
        case 1:
            OK(ito_suspend(t));
            if (test_rand(&seed) % 2)
                ito_yield();
            OK(ito_resume(t));
            break;
        case 2:
            OK(ito_suspend(t));
            OK(ito_suspend(t));
            ito_sleep_ns(test_rand(&seed) % 20000);
            OK(ito_resume(t));
            break;
        case 3:
            OK(ito_resume(t));   /* maybe not suspended: fine */
            break;
        case 4:
            if (i >= NLOCK && i < NLOCK + NRESTART) {
                /* Restart a restartable worker. It may still be on its way
                 * to stopping (running or in a sleep): EBUSY, retry. */
                OK(ito_suspend(t));
                int e;
                uint64_t end = ito_now_ns() + 30000000000ull;
                while ((e = ito_set_entry(t, restarted, (void *)(intptr_t)i)) == EBUSY) {
                    CHECK(ito_now_ns() < end);
                    ito_yield();
                }
                /* EINVAL: someone (the other chaos source) resumed it in
                 * between; then it simply goes on. */
                CHECK(e == 0 || e == EINVAL);
                OK(ito_resume(t));
            }
            break;
        default:
            ito_yield();
            break;
        }
    }
}

static void *controller(void *a)
{
    chaos(0xabcdef, (long)(intptr_t)a);
    return NULL;
}

int main(void)
{
    OK(ito_sem_init(&units, 0));
    for (int i = 0; i < NLOCK; i++)
        OK(ito_spawn(&ts[i], NULL, locker, (void *)(intptr_t)i));
    for (int i = NLOCK; i < NLOCK + NRESTART; i++)
        OK(ito_spawn(&ts[i], NULL, restartable, (void *)(intptr_t)i));
    OK(ito_spawn(&ts[NTOTAL - 2], NULL, producer, NULL));
    OK(ito_spawn(&ts[NTOTAL - 1], NULL, consumer, NULL));

    long ops = test_scaled(20000);
    ito_thread_t ctl;
    OK(ito_spawn(&ctl, NULL, controller, (void *)(intptr_t)ops));
    chaos(12345, ops);
    OK(ito_join(ctl, NULL));

    /* Resume everyone (a suspension may be pending from either source). */
    for (int i = 0; i < NTOTAL; i++)
        OK(ito_resume(ts[i]));
    /* Everyone still makes progress. */
    long before[NTOTAL];
    for (int i = 0; i < NTOTAL - 2; i++)
        before[i] = atomic_load(&own[i]);
    for (int i = 0; i < NTOTAL - 2; i++)
        WAIT_UNTIL(atomic_load(&own[i]) > before[i], 60);
    atomic_store(&stop, 1);
    for (int i = 0; i < NTOTAL - 1; i++)
        OK(ito_join(ts[i], NULL));
    atomic_store(&stop, 2);
    OK(ito_join(ts[NTOTAL - 1], NULL));

    long sum_lock = 0, sum_restart = 0;
    for (int i = 0; i < NLOCK; i++)
        sum_lock += atomic_load(&own[i]);
    for (int i = NLOCK; i < NLOCK + NRESTART; i++)
        sum_restart += atomic_load(&own[i]);
    CHECK_EQ(shared, sum_lock);
    /* A thread that has not come to a switch point within a millisecond of
     * its suspension is interrupted wherever it is (ito_suspend), so a
     * restart may drop the second half of one pair: at most one step per
     * restart. */
    long lost = sum_restart - atomic_load(&total_restartable);
    CHECK(lost >= 0 && lost <= atomic_load(&restarts));
    /* Units: those left in the semaphore plus those taken are all posted. */
    unsigned left;
    OK(ito_sem_get_value(&units, &left));
    CHECK_EQ(atomic_load(&taken) + (long)left, atomic_load(&posted));
    printf("stress_suspend: %ld locked increments, %ld restartable steps, %ld restarts, %ld units\n",
           sum_lock, sum_restart, atomic_load(&restarts), atomic_load(&posted));
    return 0;
}
