/* SPDX-License-Identifier: MIT */
/* POSIX conformance: pthread_cond_* and pthread_condattr_*. The static
 * initializer, signal and broadcast wake-ups, the mutex reacquired on
 * return, timedwait and clockwait (timeouts, clocks, bad arguments), EPERM
 * for an errorcheck mutex not owned, the attribute getters and setters, and
 * a producer/consumer queue with exact counts.
 *
 * Left out because glibc deviates from POSIX: none known.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>

#include "conform.h"

/* TSan reports the deliberate misuse whose error wait_errorcheck_not_owner
 * checks (a wait that would unlock a mutex the caller does not hold): that
 * case skips it (UNDER_TSAN, conform.h). */

static void init_errorcheck(pthread_mutex_t *m)
{
    pthread_mutexattr_t a;
    OK(pthread_mutexattr_init(&a));
    OK(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK));
    OK(pthread_mutex_init(m, &a));
    OK(pthread_mutexattr_destroy(&a));
}

/* Waiters and the main thread meet here. `changed` tells main that a waiter
 * moved (started waiting or woke); `cond` is the one under test. */
enum { WAITERS = 6 };

struct gate {
    pthread_mutex_t m;
    pthread_cond_t cond;
    pthread_cond_t changed;
    int waiting, woken; /* all guarded by m */
    int tokens;         /* token_waiter: wake-ups handed out */
    int go;             /* go_waiter: all may go */
};

static void gate_init(struct gate *g)
{
    memset(g, 0, sizeof *g);
    OK(pthread_mutex_init(&g->m, NULL));
    OK(pthread_cond_init(&g->cond, NULL));
    OK(pthread_cond_init(&g->changed, NULL));
}

static void gate_destroy(struct gate *g)
{
    OK(pthread_cond_destroy(&g->changed));
    OK(pthread_cond_destroy(&g->cond));
    OK(pthread_mutex_destroy(&g->m));
}

/* With g->m held: wait until every waiter is blocked in pthread_cond_wait
 * (each counts itself under the mutex that the wait then releases). */
static void gate_await(struct gate *g, int *field, int n)
{
    while (*field < n)
        OK(pthread_cond_wait(&g->changed, &g->m));
}

static void *token_waiter(void *arg)
{
    struct gate *g = arg;
    OK(pthread_mutex_lock(&g->m));
    g->waiting++;
    OK(pthread_cond_signal(&g->changed));
    while (g->tokens == 0)
        OK(pthread_cond_wait(&g->cond, &g->m));
    g->tokens--;
    g->woken++;
    OK(pthread_cond_signal(&g->changed));
    OK(pthread_mutex_unlock(&g->m));
    return NULL;
}

static void *go_waiter(void *arg)
{
    struct gate *g = arg;
    OK(pthread_mutex_lock(&g->m));
    g->waiting++;
    OK(pthread_cond_signal(&g->changed));
    while (!g->go)
        OK(pthread_cond_wait(&g->cond, &g->m));
    g->woken++;
    OK(pthread_mutex_unlock(&g->m));
    return NULL;
}

/* ---- wake-ups ---- */

/* "The pthread_cond_signal() function shall unblock at least one of the
 * threads that are blocked on the specified condition variable". */
static void signal_wakes_one(void)
{
    struct gate g;
    pthread_t t[WAITERS];
    gate_init(&g);
    for (int i = 0; i < WAITERS; i++)
        OK(pthread_create(&t[i], NULL, token_waiter, &g));
    OK(pthread_mutex_lock(&g.m));
    gate_await(&g, &g.waiting, WAITERS);
    for (int round = 1; round <= WAITERS; round++) {
        g.tokens++;
        OK(pthread_cond_signal(&g.cond));
        gate_await(&g, &g.woken, round);
        CHECK_EQ(g.woken, round);
    }
    OK(pthread_mutex_unlock(&g.m));
    for (int i = 0; i < WAITERS; i++)
        OK(pthread_join(t[i], NULL));
    gate_destroy(&g);
}

/* "The pthread_cond_broadcast() function shall unblock all threads currently
 * blocked on the specified condition variable". One call, all wake. */
static void broadcast_wakes_all(void)
{
    struct gate g;
    pthread_t t[WAITERS];
    gate_init(&g);
    for (int i = 0; i < WAITERS; i++)
        OK(pthread_create(&t[i], NULL, go_waiter, &g));
    OK(pthread_mutex_lock(&g.m));
    gate_await(&g, &g.waiting, WAITERS);
    g.go = 1;
    OK(pthread_cond_broadcast(&g.cond));
    OK(pthread_mutex_unlock(&g.m));
    for (int i = 0; i < WAITERS; i++)
        OK(pthread_join(t[i], NULL));
    CHECK_EQ(g.woken, WAITERS);
    gate_destroy(&g);
}

/* "These functions shall have no effect if there are no threads currently
 * blocked on cond." */
static void signal_without_waiters(void)
{
    pthread_cond_t c;
    OK(pthread_cond_init(&c, NULL));
    OK(pthread_cond_signal(&c));
    OK(pthread_cond_broadcast(&c));
    OK(pthread_cond_destroy(&c));
}

static pthread_mutex_t static_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t static_c = PTHREAD_COND_INITIALIZER;
static int static_ready, static_go; /* guarded by static_m */

/* Both sides wait on static_c for their own predicate, so wake with
 * broadcast. */
static void *static_waiter(void *arg)
{
    OK(pthread_mutex_lock(&static_m));
    static_ready = 1;
    OK(pthread_cond_broadcast(&static_c));
    while (!static_go)
        OK(pthread_cond_wait(&static_c, &static_m));
    OK(pthread_mutex_unlock(&static_m));
    return NULL;
}

static void static_initializer(void)
{
    pthread_t t;
    OK(pthread_create(&t, NULL, static_waiter, NULL));
    OK(pthread_mutex_lock(&static_m));
    while (!static_ready)
        OK(pthread_cond_wait(&static_c, &static_m));
    static_go = 1;
    OK(pthread_cond_broadcast(&static_c));
    OK(pthread_mutex_unlock(&static_m));
    OK(pthread_join(t, NULL));
    OK(pthread_cond_destroy(&static_c));
    OK(pthread_mutex_destroy(&static_m));
}

/* "Upon successful return, the mutex shall have been locked and shall be
 * owned by the calling thread" -- so a woken waiter cannot return while the
 * signaller still holds the mutex. */
struct handover {
    pthread_mutex_t m; /* errorcheck: unlock proves ownership */
    pthread_cond_t cond, changed;
    int ready, go, signaller_holds;
};

static void *handover_waiter(void *arg)
{
    struct handover *h = arg;
    OK(pthread_mutex_lock(&h->m));
    h->ready = 1;
    OK(pthread_cond_signal(&h->changed));
    while (!h->go)
        OK(pthread_cond_wait(&h->cond, &h->m));
    CHECK_EQ(h->signaller_holds, 0);
    OK(pthread_mutex_unlock(&h->m));
    return NULL;
}

static void waiter_reacquires_mutex(void)
{
    struct handover h = { .ready = 0 };
    pthread_t t;
    init_errorcheck(&h.m);
    OK(pthread_cond_init(&h.cond, NULL));
    OK(pthread_cond_init(&h.changed, NULL));
    OK(pthread_create(&t, NULL, handover_waiter, &h));
    OK(pthread_mutex_lock(&h.m));
    while (!h.ready)
        OK(pthread_cond_wait(&h.changed, &h.m));
    h.go = 1;
    h.signaller_holds = 1;
    OK(pthread_cond_signal(&h.cond));
    usleep(20000); /* give a wrongly early return time to happen */
    h.signaller_holds = 0;
    OK(pthread_mutex_unlock(&h.m));
    OK(pthread_join(t, NULL));
    OK(pthread_cond_destroy(&h.changed));
    OK(pthread_cond_destroy(&h.cond));
    OK(pthread_mutex_destroy(&h.m));
}

/* ---- timed waits ---- */

static void *do_trylock(void *m)
{
    int r = pthread_mutex_trylock(m);
    if (r == 0)
        OK(pthread_mutex_unlock(m));
    return (void *)(intptr_t)r;
}

/* The mutex is an errorcheck one held by the caller: it is still held (by
 * the caller) after a timed wait returned. */
static void check_held(pthread_mutex_t *m)
{
    pthread_t t;
    void *r;
    OK(pthread_create(&t, NULL, do_trylock, m));
    OK(pthread_join(t, &r));
    CHECK_EQ((intptr_t)r, EBUSY);
    OK(pthread_mutex_unlock(m)); /* EPERM if the caller did not own it */
}

/* clockwait when clock >= 0, else timedwait on the cond's own clock. */
static void expect_timeout(pthread_cond_t *c, clockid_t cond_clock, clockid_t clock)
{
    pthread_mutex_t m;
    clockid_t on = clock >= 0 ? clock : cond_clock;
    init_errorcheck(&m);
    OK(pthread_mutex_lock(&m));
    struct timespec deadline = conform_deadline(on, 50000000);
    if (clock >= 0)
        FAILS(pthread_cond_clockwait(c, &m, clock, &deadline), ETIMEDOUT);
    else
        FAILS(pthread_cond_timedwait(c, &m, &deadline), ETIMEDOUT);
    CHECK(conform_now(on) >= ns_of(deadline));
    check_held(&m);
    OK(pthread_mutex_destroy(&m));
}

static void timedwait_timeout(void)
{
    pthread_cond_t c;
    OK(pthread_cond_init(&c, NULL));
    expect_timeout(&c, CLOCK_REALTIME, -1);
    OK(pthread_cond_destroy(&c));
}

/* "[ETIMEDOUT] The time specified by abstime to pthread_cond_timedwait() has
 * passed." -- also when it had passed before the call. */
static void timedwait_past_deadline(void)
{
    pthread_mutex_t m;
    pthread_cond_t c;
    struct timespec past = { 0, 0 };
    init_errorcheck(&m);
    OK(pthread_cond_init(&c, NULL));
    OK(pthread_mutex_lock(&m));
    FAILS(pthread_cond_timedwait(&c, &m, &past), ETIMEDOUT);
    FAILS(pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &past), ETIMEDOUT);
    check_held(&m);
    OK(pthread_cond_destroy(&c));
    OK(pthread_mutex_destroy(&m));
}

/* A cond made with the clock attribute CLOCK_MONOTONIC: timedwait measures
 * abstime on that clock. */
static void timedwait_monotonic(void)
{
    pthread_condattr_t a;
    pthread_cond_t c;
    OK(pthread_condattr_init(&a));
    OK(pthread_condattr_setclock(&a, CLOCK_MONOTONIC));
    OK(pthread_cond_init(&c, &a));
    OK(pthread_condattr_destroy(&a));
    expect_timeout(&c, CLOCK_MONOTONIC, -1);
    OK(pthread_cond_destroy(&c));
}

static void clockwait_timeout(void)
{
    pthread_cond_t c;
    OK(pthread_cond_init(&c, NULL));
    expect_timeout(&c, CLOCK_REALTIME, CLOCK_REALTIME);
    expect_timeout(&c, CLOCK_REALTIME, CLOCK_MONOTONIC);
    OK(pthread_cond_destroy(&c));
}

/* Like go_waiter, but a timed wait with a far deadline: woken by the
 * broadcast it returns 0, not ETIMEDOUT. */
static void *timed_go_waiter(void *arg)
{
    struct gate *g = arg;
    struct timespec rt = conform_deadline(CLOCK_REALTIME, 3000000000ull);
    struct timespec mono = conform_deadline(CLOCK_MONOTONIC, 3000000000ull);
    OK(pthread_mutex_lock(&g->m));
    int clockwait = g->waiting++ % 2;
    OK(pthread_cond_signal(&g->changed));
    while (!g->go) {
        if (clockwait)
            OK(pthread_cond_clockwait(&g->cond, &g->m, CLOCK_MONOTONIC, &mono));
        else
            OK(pthread_cond_timedwait(&g->cond, &g->m, &rt));
    }
    g->woken++;
    OK(pthread_mutex_unlock(&g->m));
    return NULL;
}

static void timedwait_woken(void)
{
    struct gate g;
    pthread_t t[2];
    gate_init(&g);
    for (int i = 0; i < 2; i++)
        OK(pthread_create(&t[i], NULL, timed_go_waiter, &g));
    OK(pthread_mutex_lock(&g.m));
    gate_await(&g, &g.waiting, 2);
    g.go = 1;
    OK(pthread_cond_broadcast(&g.cond));
    OK(pthread_mutex_unlock(&g.m));
    for (int i = 0; i < 2; i++)
        OK(pthread_join(t[i], NULL));
    CHECK_EQ(g.woken, 2);
    gate_destroy(&g);
}

/* glibc: clockwait's clockid must be CLOCK_REALTIME or CLOCK_MONOTONIC,
 * else EINVAL. */
static void clockwait_bad_clock(void)
{
    static const clockid_t bad[] = { CLOCK_PROCESS_CPUTIME_ID, BAD_CLOCK };
    pthread_mutex_t m;
    pthread_cond_t c;
    init_errorcheck(&m);
    OK(pthread_cond_init(&c, NULL));
    OK(pthread_mutex_lock(&m));
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct timespec deadline = conform_deadline(CLOCK_REALTIME, 50000000);
        FAILS(pthread_cond_clockwait(&c, &m, bad[i], &deadline), EINVAL);
    }
    check_held(&m);
    OK(pthread_cond_destroy(&c));
    OK(pthread_mutex_destroy(&m));
}

/* EINVAL for an abstime whose tv_nsec is below 0 or at least 1000 million
 * (POSIX "may fail"; glibc checks it on every call). */
static void timedwait_bad_nsec(void)
{
    static const long bad[] = { -1, 1000000000 };
    pthread_mutex_t m;
    pthread_cond_t c;
    init_errorcheck(&m);
    OK(pthread_cond_init(&c, NULL));
    OK(pthread_mutex_lock(&m));
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct timespec deadline = conform_deadline(CLOCK_REALTIME, 50000000);
        deadline.tv_nsec = bad[i];
        FAILS(pthread_cond_timedwait(&c, &m, &deadline), EINVAL);
        FAILS(pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &deadline), EINVAL);
    }
    check_held(&m);
    OK(pthread_cond_destroy(&c));
    OK(pthread_mutex_destroy(&m));
}

/* "[EPERM] The mutex type is PTHREAD_MUTEX_ERRORCHECK or the mutex is a
 * robust mutex, and the current thread does not own the mutex." */
static void wait_errorcheck_not_owner(void)
{
    pthread_mutex_t m;
    pthread_cond_t c;
    init_errorcheck(&m);
    OK(pthread_cond_init(&c, NULL));
    FAILS(pthread_cond_wait(&c, &m), EPERM);
    struct timespec deadline = conform_deadline(CLOCK_REALTIME, 50000000);
    FAILS(pthread_cond_timedwait(&c, &m, &deadline), EPERM);
    OK(pthread_cond_destroy(&c));
    OK(pthread_mutex_destroy(&m));
}

/* ---- attributes ---- */

/* "The default value of the clock attribute shall refer to the system
 * clock"; pshared defaults to PTHREAD_PROCESS_PRIVATE. */
static void condattr_defaults(void)
{
    pthread_condattr_t a;
    clockid_t clock = -1;
    int pshared = -1;
    OK(pthread_condattr_init(&a));
    OK(pthread_condattr_getclock(&a, &clock));
    CHECK_EQ(clock, CLOCK_REALTIME);
    OK(pthread_condattr_getpshared(&a, &pshared));
    CHECK_EQ(pshared, PTHREAD_PROCESS_PRIVATE);
    OK(pthread_condattr_destroy(&a));
}

/* setclock "may fail [EINVAL] The value specified by clock_id does not refer
 * to a known clock, or is a CPU-time clock." glibc implements it. */
static void condattr_clock(void)
{
    pthread_condattr_t a;
    clockid_t clock = -1;
    OK(pthread_condattr_init(&a));
    OK(pthread_condattr_setclock(&a, CLOCK_MONOTONIC));
    OK(pthread_condattr_getclock(&a, &clock));
    CHECK_EQ(clock, CLOCK_MONOTONIC);
    OK(pthread_condattr_setclock(&a, CLOCK_REALTIME));
    OK(pthread_condattr_getclock(&a, &clock));
    CHECK_EQ(clock, CLOCK_REALTIME);
    OK(pthread_condattr_setclock(&a, CLOCK_MONOTONIC));
    FAILS(pthread_condattr_setclock(&a, CLOCK_PROCESS_CPUTIME_ID), EINVAL);
    FAILS(pthread_condattr_setclock(&a, CLOCK_THREAD_CPUTIME_ID), EINVAL);
    FAILS(pthread_condattr_setclock(&a, BAD_CLOCK), EINVAL);
    OK(pthread_condattr_getclock(&a, &clock));
    CHECK_EQ(clock, CLOCK_MONOTONIC);
    OK(pthread_condattr_destroy(&a));
}

static void condattr_pshared(void)
{
    pthread_condattr_t a;
    int pshared = -1;
    OK(pthread_condattr_init(&a));
    OK(pthread_condattr_setpshared(&a, PTHREAD_PROCESS_SHARED));
    OK(pthread_condattr_getpshared(&a, &pshared));
    CHECK_EQ(pshared, PTHREAD_PROCESS_SHARED);
    OK(pthread_condattr_setpshared(&a, PTHREAD_PROCESS_PRIVATE));
    OK(pthread_condattr_getpshared(&a, &pshared));
    CHECK_EQ(pshared, PTHREAD_PROCESS_PRIVATE);
    OK(pthread_condattr_destroy(&a));
}

/* ---- producer/consumer ---- */

enum { PRODUCERS = 4, CONSUMERS = 4, ITEMS = 100000, SLOTS = 64 };

struct queue {
    pthread_mutex_t m;
    pthread_cond_t not_full, not_empty;
    long slot[SLOTS];
    int head, count; /* guarded by m */
};

struct consumed {
    struct queue *q;
    long sum;
};

static void *producer(void *arg)
{
    struct queue *q = arg;
    for (int i = 0; i < ITEMS / PRODUCERS; i++) {
        OK(pthread_mutex_lock(&q->m));
        while (q->count == SLOTS)
            OK(pthread_cond_wait(&q->not_full, &q->m));
        q->slot[(q->head + q->count) % SLOTS] = i + 1;
        q->count++;
        OK(pthread_cond_signal(&q->not_empty));
        OK(pthread_mutex_unlock(&q->m));
    }
    return NULL;
}

static void *consumer(void *arg)
{
    struct consumed *c = arg;
    struct queue *q = c->q;
    for (int i = 0; i < ITEMS / CONSUMERS; i++) {
        OK(pthread_mutex_lock(&q->m));
        while (q->count == 0)
            OK(pthread_cond_wait(&q->not_empty, &q->m));
        c->sum += q->slot[q->head];
        q->head = (q->head + 1) % SLOTS;
        q->count--;
        OK(pthread_cond_signal(&q->not_full));
        OK(pthread_mutex_unlock(&q->m));
    }
    return NULL;
}

static void producer_consumer(void)
{
    static struct queue q;
    struct consumed got[CONSUMERS];
    pthread_t p[PRODUCERS], c[CONSUMERS];
    long per = ITEMS / PRODUCERS, sum = 0;
    OK(pthread_mutex_init(&q.m, NULL));
    OK(pthread_cond_init(&q.not_full, NULL));
    OK(pthread_cond_init(&q.not_empty, NULL));
    q.head = q.count = 0;
    for (int i = 0; i < CONSUMERS; i++) {
        got[i] = (struct consumed){ &q, 0 };
        OK(pthread_create(&c[i], NULL, consumer, &got[i]));
    }
    for (int i = 0; i < PRODUCERS; i++)
        OK(pthread_create(&p[i], NULL, producer, &q));
    for (int i = 0; i < PRODUCERS; i++)
        OK(pthread_join(p[i], NULL));
    for (int i = 0; i < CONSUMERS; i++) {
        OK(pthread_join(c[i], NULL));
        sum += got[i].sum;
    }
    CHECK_EQ(q.count, 0);
    CHECK_EQ(sum, PRODUCERS * (per * (per + 1) / 2)); /* each produced 1..per */
    OK(pthread_cond_destroy(&q.not_empty));
    OK(pthread_cond_destroy(&q.not_full));
    OK(pthread_mutex_destroy(&q.m));
}

int main(void)
{
    RUN_CASE(static_initializer, 10);
    RUN_CASE(signal_wakes_one, 10);
    RUN_CASE(broadcast_wakes_all, 10);
    RUN_CASE(signal_without_waiters, 10);
    RUN_CASE(waiter_reacquires_mutex, 10);
    RUN_CASE(timedwait_timeout, 10);
    RUN_CASE(timedwait_past_deadline, 10);
    RUN_CASE(timedwait_monotonic, 10);
    RUN_CASE(clockwait_timeout, 10);
    RUN_CASE(timedwait_woken, 10);
    RUN_CASE(clockwait_bad_clock, 10);
    RUN_CASE(timedwait_bad_nsec, 10);
    RUN_CASE(condattr_defaults, 10);
    RUN_CASE(condattr_clock, 10);
    RUN_CASE(condattr_pshared, 10);
    RUN_CASE(producer_consumer, 30);
    if (!UNDER_TSAN)
        RUN_CASE(wait_errorcheck_not_owner, 10);
    return 0;
}
