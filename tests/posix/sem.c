/* SPDX-License-Identifier: MIT */
/* POSIX conformance: semaphores. Unnamed ones (sem_init, sem_post, sem_wait,
 * sem_trywait, sem_getvalue, sem_destroy, sem_timedwait and sem_clockwait,
 * wake-ups, producers and consumers with exact counts) and named ones
 * (sem_open with O_CREAT and O_EXCL, sem_close, sem_unlink).
 *
 * Left out because glibc deviates from POSIX: none known.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>

#include "conform.h"

static int value_of(sem_t *s)
{
    int v = -1;
    CHECK_EQ(sem_getvalue(s, &v), 0);
    return v;
}

/* ---- unnamed semaphores ---- */

static void sem_basic(void)
{
    sem_t s;
    CHECK_EQ(sem_init(&s, 0, 2), 0);
    CHECK_EQ(value_of(&s), 2);
    CHECK_EQ(sem_wait(&s), 0);
    CHECK_EQ(sem_trywait(&s), 0);
    CHECK_EQ(value_of(&s), 0);
    /* trywait "shall fail [EAGAIN] The semaphore was already locked" */
    FAILS_ERRNO(sem_trywait(&s), EAGAIN);
    CHECK_EQ(sem_post(&s), 0);
    CHECK_EQ(value_of(&s), 1);
    CHECK_EQ(sem_trywait(&s), 0);
    CHECK_EQ(sem_destroy(&s), 0);
}

/* sem_init "shall fail [EINVAL] The value argument exceeds SEM_VALUE_MAX." */
static void sem_init_above_max(void)
{
    sem_t s;
    FAILS_ERRNO(sem_init(&s, 0, (unsigned)SEM_VALUE_MAX + 1u), EINVAL);
    CHECK_EQ(sem_init(&s, 0, SEM_VALUE_MAX), 0);
    CHECK_EQ(value_of(&s), SEM_VALUE_MAX);
    /* sem_post(3): "EOVERFLOW The maximum allowable value for a semaphore
     * would be exceeded." (documented and implemented by glibc) */
    FAILS_ERRNO(sem_post(&s), EOVERFLOW);
    CHECK_EQ(value_of(&s), SEM_VALUE_MAX);
    CHECK_EQ(sem_destroy(&s), 0);
}

static void *do_wait(void *s)
{
    CHECK_EQ(sem_wait(s), 0);
    return NULL;
}

/* "If the value of the semaphore resulting from this operation is zero, then
 * one of the threads blocked waiting for the semaphore shall be allowed to
 * return successfully from its call to sem_wait()." */
static void sem_post_wakes_waiter(void)
{
    enum { WAITERS = 3 };
    sem_t s;
    pthread_t t[WAITERS];
    CHECK_EQ(sem_init(&s, 0, 0), 0);
    for (int i = 0; i < WAITERS; i++)
        OK(pthread_create(&t[i], NULL, do_wait, &s));
    usleep(20000); /* let them block (they pass either way) */
    for (int i = 0; i < WAITERS; i++)
        CHECK_EQ(sem_post(&s), 0);
    for (int i = 0; i < WAITERS; i++)
        OK(pthread_join(t[i], NULL));
    CHECK_EQ(value_of(&s), 0);
    CHECK_EQ(sem_destroy(&s), 0);
}

/* ---- timed waits ---- */

/* sem_clockwait when clock >= 0, else sem_timedwait (CLOCK_REALTIME). */
static int timed_wait(sem_t *s, clockid_t clock, const struct timespec *deadline)
{
    return clock >= 0 ? sem_clockwait(s, clock, deadline) : sem_timedwait(s, deadline);
}

/* "[ETIMEDOUT] The semaphore could not be locked before the specified
 * timeout expired." -- and not before. */
static void expect_timeout(sem_t *s, clockid_t clock)
{
    clockid_t on = clock >= 0 ? clock : CLOCK_REALTIME;
    struct timespec deadline = conform_deadline(on, 50000000);
    FAILS_ERRNO(timed_wait(s, clock, &deadline), ETIMEDOUT);
    CHECK(conform_now(on) >= ns_of(deadline));
}

static void sem_timedwait_timeout(void)
{
    sem_t s;
    CHECK_EQ(sem_init(&s, 0, 0), 0);
    expect_timeout(&s, -1);
    CHECK_EQ(sem_destroy(&s), 0);
}

static void sem_clockwait_timeout(void)
{
    sem_t s;
    CHECK_EQ(sem_init(&s, 0, 0), 0);
    expect_timeout(&s, CLOCK_REALTIME);
    expect_timeout(&s, CLOCK_MONOTONIC);
    CHECK_EQ(sem_destroy(&s), 0);
}

/* "Under no circumstance shall the function fail with a timeout if the
 * semaphore can be locked immediately." */
static void sem_timedwait_available_past_deadline(void)
{
    sem_t s;
    struct timespec past = { 0, 0 };
    CHECK_EQ(sem_init(&s, 0, 2), 0);
    CHECK_EQ(sem_timedwait(&s, &past), 0);
    CHECK_EQ(sem_clockwait(&s, CLOCK_MONOTONIC, &past), 0);
    CHECK_EQ(value_of(&s), 0);
    CHECK_EQ(sem_destroy(&s), 0);
}

/* "[EINVAL] The process or thread would have blocked, and the abstime
 * parameter specified a nanoseconds field value less than zero or greater
 * than or equal to 1000 million." */
static void sem_timedwait_bad_nsec(void)
{
    static const long bad[] = { -1, 1000000000 };
    sem_t s;
    CHECK_EQ(sem_init(&s, 0, 0), 0);
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct timespec deadline = conform_deadline(CLOCK_REALTIME, 50000000);
        deadline.tv_nsec = bad[i];
        FAILS_ERRNO(sem_timedwait(&s, &deadline), EINVAL);
        FAILS_ERRNO(sem_clockwait(&s, CLOCK_MONOTONIC, &deadline), EINVAL);
    }
    CHECK_EQ(sem_destroy(&s), 0);
}

/* glibc: sem_clockwait's clockid must be CLOCK_REALTIME or CLOCK_MONOTONIC,
 * else EINVAL. Asked while the call would block. */
static void sem_clockwait_bad_clock(void)
{
    static const clockid_t bad[] = { CLOCK_PROCESS_CPUTIME_ID, BAD_CLOCK };
    sem_t s;
    CHECK_EQ(sem_init(&s, 0, 0), 0);
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct timespec deadline = conform_deadline(CLOCK_REALTIME, 50000000);
        FAILS_ERRNO(sem_clockwait(&s, bad[i], &deadline), EINVAL);
    }
    CHECK_EQ(sem_destroy(&s), 0);
}

static void *do_timed_waits(void *s)
{
    struct timespec rt = conform_deadline(CLOCK_REALTIME, 3000000000ull);
    struct timespec mono = conform_deadline(CLOCK_MONOTONIC, 3000000000ull);
    CHECK_EQ(sem_timedwait(s, &rt), 0);
    CHECK_EQ(sem_clockwait(s, CLOCK_MONOTONIC, &mono), 0);
    return NULL;
}

/* A timed wait woken by sem_post returns 0, well before its deadline. */
static void sem_timedwait_woken(void)
{
    sem_t s;
    pthread_t t;
    CHECK_EQ(sem_init(&s, 0, 0), 0);
    OK(pthread_create(&t, NULL, do_timed_waits, &s));
    usleep(20000);
    CHECK_EQ(sem_post(&s), 0);
    usleep(20000);
    CHECK_EQ(sem_post(&s), 0);
    OK(pthread_join(t, NULL));
    CHECK_EQ(value_of(&s), 0);
    CHECK_EQ(sem_destroy(&s), 0);
}

/* ---- producers and consumers ---- */

enum { PRODUCERS = 4, CONSUMERS = 4, ITEMS = 100000, SLOTS = 32 };

struct buffer {
    sem_t slots, items, lock; /* lock: a binary semaphore guarding the ring */
    long ring[SLOTS];
    int head, tail;
};

struct consumed {
    struct buffer *b;
    long sum;
};

static void *producer(void *arg)
{
    struct buffer *b = arg;
    for (int i = 0; i < ITEMS / PRODUCERS; i++) {
        CHECK_EQ(sem_wait(&b->slots), 0);
        CHECK_EQ(sem_wait(&b->lock), 0);
        b->ring[b->tail] = i + 1;
        b->tail = (b->tail + 1) % SLOTS;
        CHECK_EQ(sem_post(&b->lock), 0);
        CHECK_EQ(sem_post(&b->items), 0);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    struct consumed *c = arg;
    struct buffer *b = c->b;
    for (int i = 0; i < ITEMS / CONSUMERS; i++) {
        CHECK_EQ(sem_wait(&b->items), 0);
        CHECK_EQ(sem_wait(&b->lock), 0);
        c->sum += b->ring[b->head];
        b->head = (b->head + 1) % SLOTS;
        CHECK_EQ(sem_post(&b->lock), 0);
        CHECK_EQ(sem_post(&b->slots), 0);
    }
    return NULL;
}

static void producers_consumers(void)
{
    static struct buffer b;
    struct consumed got[CONSUMERS];
    pthread_t p[PRODUCERS], c[CONSUMERS];
    long per = ITEMS / PRODUCERS, sum = 0;
    b.head = b.tail = 0;
    CHECK_EQ(sem_init(&b.slots, 0, SLOTS), 0);
    CHECK_EQ(sem_init(&b.items, 0, 0), 0);
    CHECK_EQ(sem_init(&b.lock, 0, 1), 0);
    for (int i = 0; i < CONSUMERS; i++) {
        got[i] = (struct consumed){ &b, 0 };
        OK(pthread_create(&c[i], NULL, consumer, &got[i]));
    }
    for (int i = 0; i < PRODUCERS; i++)
        OK(pthread_create(&p[i], NULL, producer, &b));
    for (int i = 0; i < PRODUCERS; i++)
        OK(pthread_join(p[i], NULL));
    for (int i = 0; i < CONSUMERS; i++) {
        OK(pthread_join(c[i], NULL));
        sum += got[i].sum;
    }
    CHECK_EQ(sum, PRODUCERS * (per * (per + 1) / 2)); /* each produced 1..per */
    CHECK_EQ(value_of(&b.slots), SLOTS);
    CHECK_EQ(value_of(&b.items), 0);
    CHECK_EQ(value_of(&b.lock), 1);
    CHECK_EQ(sem_destroy(&b.lock), 0);
    CHECK_EQ(sem_destroy(&b.items), 0);
    CHECK_EQ(sem_destroy(&b.slots), 0);
}

/* ---- named semaphores ---- */

static char sem_name[64]; /* unique to this process; see unlink_on_signal */

/* A failed CHECK aborts and a hung case ends by SIGALRM: remove the name on
 * the way out either way, then die of the signal. */
static void unlink_on_signal(int sig)
{
    sem_unlink(sem_name);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void open_fails(int oflag, unsigned value, int err)
{
    errno = 0;
    CHECK(sem_open(sem_name, oflag, 0600, value) == SEM_FAILED);
    CHECK_EQ(errno, err);
}

/* "[EEXIST] O_CREAT and O_EXCL are set and the named semaphore already
 * exists." "If O_CREAT is set and the semaphore already exists, then O_CREAT
 * has no effect". */
/* sem_post is async-signal-safe: a handler posts while the process's
 * threads hammer the same semaphore (its lock is often held where the
 * signal lands). Every post arrives: the units left at the end are exactly
 * the handler's. */
static sem_t hammered;
static atomic_int hammering, handler_posts;

static void post_from_handler(int sig)
{
    int saved = errno;
    CHECK_EQ(sem_post(&hammered), 0);
    atomic_fetch_add(&handler_posts, 1);
    errno = saved;
}

static void *hammer(void *arg)
{
    while (atomic_load(&hammering)) {
        CHECK_EQ(sem_post(&hammered), 0);
        while (sem_wait(&hammered) != 0)
            CHECK_EQ(errno, EINTR);
    }
    return NULL;
}

static void sem_post_in_signal_handler(void)
{
    CHECK_EQ(sem_init(&hammered, 0, 0), 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = post_from_handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGUSR2, &sa, NULL), 0);
    atomic_store(&handler_posts, 0);
    atomic_store(&hammering, 1);
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        OK(pthread_create(&t[i], NULL, hammer, NULL));
    /* A signal to the process every 50 us for half a second. */
    timer_t timer = conform_signal_timer(SIGUSR2, 50000u, 50000u);
    conform_pause_us(500000);
    CHECK_EQ(timer_delete(timer), 0);
    atomic_store(&hammering, 0);
    for (int i = 0; i < 3; i++)
        OK(pthread_join(t[i], NULL));
    int posts = atomic_load(&handler_posts);
    fprintf(stderr, "  %d posts from the handler\n", posts);
    CHECK(posts > 0);
    for (int i = 0; i < posts; i++) {
        struct timespec d = conform_deadline(CLOCK_REALTIME, 5000000000ull);
        while (sem_timedwait(&hammered, &d) != 0)
            CHECK_EQ(errno, EINTR);   /* (a signal still pending when the timer was deleted) */
    }
    FAILS_ERRNO(sem_trywait(&hammered), EAGAIN);
    CHECK_EQ(sem_destroy(&hammered), 0);
    signal(SIGUSR2, SIG_DFL);
}

static void named_create_exclusive(void)
{
    sem_t *s = sem_open(sem_name, O_CREAT | O_EXCL, 0600, 3);
    CHECK(s != SEM_FAILED);
    CHECK_EQ(value_of(s), 3);
    open_fails(O_CREAT | O_EXCL, 0, EEXIST);
    sem_t *again = sem_open(sem_name, O_CREAT, 0600, 7);
    CHECK(again != SEM_FAILED);
    CHECK_EQ(value_of(again), 3);
    CHECK_EQ(sem_close(again), 0);
    CHECK_EQ(sem_close(s), 0);
    CHECK_EQ(sem_unlink(sem_name), 0);
}

/* "If a process makes multiple successful calls to sem_open() with the same
 * value for name, the same semaphore address shall be returned for each such
 * successful call, provided that there have been no calls to sem_unlink()
 * for this semaphore, and at least one previous successful sem_open() call
 * for this semaphore has not been matched with a sem_close() call." */
static void named_two_handles(void)
{
    sem_t *a = sem_open(sem_name, O_CREAT | O_EXCL, 0600, 0);
    CHECK(a != SEM_FAILED);
    sem_t *b = sem_open(sem_name, 0);
    CHECK(b != SEM_FAILED);
    CHECK(a == b);
    CHECK_EQ(sem_post(a), 0);
    CHECK_EQ(value_of(b), 1);
    CHECK_EQ(sem_trywait(b), 0);
    FAILS_ERRNO(sem_trywait(a), EAGAIN);
    CHECK_EQ(sem_close(a), 0);
    CHECK_EQ(value_of(b), 0); /* b is still open */
    CHECK_EQ(sem_post(b), 0);
    CHECK_EQ(sem_close(b), 0);
    b = sem_open(sem_name, 0); /* the semaphore outlives its handles */
    CHECK(b != SEM_FAILED);
    CHECK_EQ(value_of(b), 1);
    CHECK_EQ(sem_close(b), 0);
    CHECK_EQ(sem_unlink(sem_name), 0);
}

/* After sem_unlink the name is gone ("[ENOENT] O_CREAT is not set and the
 * named semaphore does not exist"; sem_unlink "shall fail [ENOENT] The named
 * semaphore does not exist"), but "destruction of the semaphore shall be
 * postponed until all references to the semaphore have been destroyed", and
 * "Calls to sem_open() to recreate ... refer to a new semaphore". */
static void named_unlink(void)
{
    sem_t *s = sem_open(sem_name, O_CREAT | O_EXCL, 0600, 1);
    CHECK(s != SEM_FAILED);
    CHECK_EQ(sem_unlink(sem_name), 0);
    open_fails(0, 0, ENOENT);
    FAILS_ERRNO(sem_unlink(sem_name), ENOENT);
    CHECK_EQ(sem_trywait(s), 0); /* still usable */
    CHECK_EQ(sem_post(s), 0);
    CHECK_EQ(sem_post(s), 0);
    sem_t *fresh = sem_open(sem_name, O_CREAT | O_EXCL, 0600, 5);
    CHECK(fresh != SEM_FAILED);
    CHECK(fresh != s);
    CHECK_EQ(value_of(fresh), 5);
    CHECK_EQ(value_of(s), 2);
    CHECK_EQ(sem_close(fresh), 0);
    CHECK_EQ(sem_unlink(sem_name), 0);
    CHECK_EQ(sem_close(s), 0);
}

/* sem_open "shall fail [EINVAL] ... O_CREAT was specified in oflag and value
 * was greater than {SEM_VALUE_MAX}." */
static void named_value_above_max(void)
{
    open_fails(O_CREAT | O_EXCL, (unsigned)SEM_VALUE_MAX + 1u, EINVAL);
    open_fails(0, 0, ENOENT); /* and nothing was created */
}

int main(void)
{
    snprintf(sem_name, sizeof sem_name, "/ito-conform-sem-%ld", (long)getpid());
    signal(SIGABRT, unlink_on_signal);
    signal(SIGALRM, unlink_on_signal);

    RUN_CASE(sem_basic, 10);
    RUN_CASE(sem_init_above_max, 10);
    RUN_CASE(sem_post_wakes_waiter, 10);
    RUN_CASE(sem_timedwait_timeout, 10);
    RUN_CASE(sem_clockwait_timeout, 10);
    RUN_CASE(sem_timedwait_available_past_deadline, 10);
    RUN_CASE(sem_timedwait_bad_nsec, 10);
    RUN_CASE(sem_clockwait_bad_clock, 10);
    RUN_CASE(sem_timedwait_woken, 10);
    RUN_CASE(producers_consumers, 30);
    RUN_CASE(sem_post_in_signal_handler, 30);
    RUN_CASE(named_create_exclusive, 10);
    RUN_CASE(named_two_handles, 10);
    RUN_CASE(named_unlink, 10);
    RUN_CASE(named_value_above_max, 10);
    return 0;
}
