/* SPDX-License-Identifier: MIT */
/* Thread life cycle: pthread_create, pthread_join, pthread_detach,
 * pthread_exit, pthread_self/pthread_equal, the _np joins
 * (pthread_tryjoin_np, pthread_timedjoin_np, pthread_clockjoin_np), thread
 * names, pthread_getcpuclockid, sched_yield, the concurrency level, the
 * scheduling parameters of a thread (SCHED_OTHER only: nothing here needs
 * privileges), and per-thread errno and __thread variables.
 *
 * Left out on purpose:
 *   pthread_join on a detached, already joined or ended-and-reaped thread:
 *     undefined behaviour in POSIX.1-2017 (ESRCH and EINVAL are no longer
 *     listed errors), so it is not tested.
 * Left out because glibc 2.36 deviates from its documentation:
 *   pthread_timedjoin_np/pthread_clockjoin_np: the man page lists EINVAL for
 *     tv_nsec outside [0, 1e9); glibc ignores the bad value and waits until
 *     the thread ends, then returns 0.
 *   pthread_timedjoin_np/pthread_clockjoin_np: the man page lists EINVAL for
 *     tv_sec < 0; glibc returns ETIMEDOUT. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "conform.h"

#define MS 1000000ull

/* A thread that waits until its gate opens, then returns the gate. */
static void *wait_then_return(void *gate)
{
    sync_wait(gate, 1);
    return gate;
}

/* ---- pthread_create / pthread_join ---- */

struct args {
    int in;
    int out;
};

static void *double_it(void *p)
{
    struct args *a = p;
    a->out = a->in * 2;
    return NULL;
}

static void create_passes_argument(void)
{
    struct args a = { 21, 0 };
    pthread_t t;
    OK(pthread_create(&t, NULL, double_it, &a));
    OK(pthread_join(t, NULL));
    CHECK_EQ(a.out, 42);
}

static void *return_arg(void *p)
{
    return p;
}

static void join_returns_value(void)
{
    int x;
    void *res = NULL;
    pthread_t t;
    OK(pthread_create(&t, NULL, return_arg, &x));
    OK(pthread_join(t, &res));
    CHECK(res == &x);
}

static void join_null_value_ptr(void)
{
    pthread_t t;
    OK(pthread_create(&t, NULL, return_arg, (void *)1));
    OK(pthread_join(t, NULL));
}

#define MANY 200

static struct sync many_started, many_go;

static void *many_worker(void *p)
{
    intptr_t i = (intptr_t)p;
    sync_add(&many_started, 1);
    sync_wait(&many_go, 1);
    return (void *)(i * 3 + 1);
}

/* 200 threads alive at once, each with its own id and return value. */
static void create_many_at_once(void)
{
    static pthread_t t[MANY];
    sync_init(&many_started);
    sync_init(&many_go);
    for (intptr_t i = 0; i < MANY; i++)
        OK(pthread_create(&t[i], NULL, many_worker, (void *)i));
    sync_wait(&many_started, MANY);
    /* "the thread ID ... shall be unique" among live threads. */
    for (int i = 0; i < MANY; i++)
        for (int j = i + 1; j < MANY; j++)
            CHECK(!pthread_equal(t[i], t[j]));
    sync_add(&many_go, 1);
    for (intptr_t i = 0; i < MANY; i++) {
        void *res;
        OK(pthread_join(t[i], &res));
        CHECK_EQ((intptr_t)res, i * 3 + 1);
    }
    sync_destroy(&many_started);
    sync_destroy(&many_go);
}

/* An explicit SCHED_FIFO policy with priority 0, outside [1, 99]: glibc's
 * pthread_create(3) lists "EINVAL Invalid settings in attr". Without the
 * privilege for SCHED_FIFO, EPERM (a POSIX "shall fail") applies as well,
 * and either error may be reported. */
static void create_rejects_invalid_sched_attr(void)
{
    pthread_attr_t attr;
    pthread_t t;
    OK(pthread_attr_init(&attr));
    OK(pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED));
    struct sched_param sp = { .sched_priority = 0 };
    OK(pthread_attr_setschedparam(&attr, &sp)); /* valid for SCHED_OTHER */
    OK(pthread_attr_setschedpolicy(&attr, SCHED_FIFO));
    int rc = pthread_create(&t, &attr, return_arg, NULL);
    CHECK(rc == EINVAL || rc == EPERM);
    OK(pthread_attr_destroy(&attr));
}

static void *join_self(void *p)
{
    return (void *)(intptr_t)pthread_join(pthread_self(), NULL);
}

/* glibc's pthread_join(3): "EDEADLK ... thread specifies the calling thread". */
static void join_self_deadlock(void)
{
#ifdef __SANITIZE_THREAD__
    return; /* ThreadSanitizer's pthread_join aborts on a self-join */
#endif
    FAILS(pthread_join(pthread_self(), NULL), EDEADLK);
    pthread_t t;
    void *res;
    OK(pthread_create(&t, NULL, join_self, NULL));
    OK(pthread_join(t, &res));
    CHECK_EQ((intptr_t)res, EDEADLK);
}

/* ---- pthread_detach ---- */

struct detach_state {
    struct sync *gate;
    struct sync done;
};

static void *detached_worker(void *p)
{
    struct detach_state *d = p;
    sync_wait(d->gate, 1);
    sync_add(&d->done, 1);
    return NULL;
}

/* Detaching a running thread does not end it: it runs to completion. */
static void detach_running_thread(void)
{
    struct sync gate;
    static struct detach_state d;
    sync_init(&gate);
    sync_init(&d.done);
    d.gate = &gate;
    pthread_t t;
    OK(pthread_create(&t, NULL, detached_worker, &d));
    OK(pthread_detach(t));
    sync_add(&gate, 1);
    sync_wait(&d.done, 1);
    sync_destroy(&gate); /* the thread is done with it; d.done stays */
}

static void *detach_self_worker(void *p)
{
    struct detach_state *d = p;
    CHECK_EQ(pthread_detach(pthread_self()), 0);
    sync_add(&d->done, 1);
    return NULL;
}

static void detach_self(void)
{
    static struct detach_state d;
    sync_init(&d.done);
    pthread_t t;
    OK(pthread_create(&t, NULL, detach_self_worker, &d));
    sync_wait(&d.done, 1);
}

/* "If thread has not terminated, pthread_detach() shall not cause it to
 * terminate"; a thread that has terminated but is not yet joined may be
 * detached too (its storage is reclaimed). */
static void detach_after_exit(void)
{
    pthread_t t;
    OK(pthread_create(&t, NULL, return_arg, NULL));
    struct timespec pause = { 0, 50 * 1000000 };
    nanosleep(&pause, NULL);
    OK(pthread_detach(t));
}

/* ---- pthread_exit ---- */

static void *exit_with_value(void *p)
{
    pthread_exit(p);
    CHECK(!"pthread_exit returned");
    return NULL;
}

static void exit_value(void)
{
    int x;
    void *res = NULL;
    pthread_t t;
    OK(pthread_create(&t, NULL, exit_with_value, &x));
    OK(pthread_join(t, &res));
    CHECK(res == &x);
}

static int nested_reached_end;

static void nested_exit(int depth, void *value)
{
    if (depth < 0)
        return;
    if (depth == 0)
        pthread_exit(value);
    nested_exit(depth - 1, value);
    nested_reached_end = 1;
}

static void *exit_deep(void *p)
{
    nested_exit(10, p);
    nested_reached_end = 1;
    return NULL;
}

static void exit_from_nested_function(void)
{
    void *res = NULL;
    pthread_t t;
    OK(pthread_create(&t, NULL, exit_deep, (void *)0x1234));
    OK(pthread_join(t, &res));
    CHECK(res == (void *)0x1234);
    CHECK_EQ(nested_reached_end, 0);
}

/* What ran at thread exit, in order; written by the exiting thread only and
 * read after pthread_join. */
static int exit_log[8];
static int exit_log_len;
static pthread_key_t exit_key;

static void log_cleanup(void *p)
{
    exit_log[exit_log_len++] = (int)(intptr_t)p;
}

static void log_destructor(void *p)
{
    /* "the value of the key is set to NULL, and then the function pointed to
     * is called with the previously associated value" */
    CHECK(pthread_getspecific(exit_key) == NULL);
    exit_log[exit_log_len++] = (int)(intptr_t)p;
}

static void *exit_with_cleanup(void *p)
{
    OK(pthread_setspecific(exit_key, (void *)3));
    pthread_cleanup_push(log_cleanup, (void *)1);
    pthread_cleanup_push(log_cleanup, (void *)2);
    pthread_exit(NULL);
    pthread_cleanup_pop(0);
    pthread_cleanup_pop(0);
    return NULL;
}

/* pthread_exit: "Any cancellation cleanup handlers that have been pushed and
 * not yet popped shall be popped in the reverse order that they were pushed
 * and then executed. After all cancellation cleanup handlers have been
 * executed, if the thread has any thread-specific data, appropriate
 * destructor functions shall be called in an unspecified order." */
static void exit_runs_cleanup_then_destructors(void)
{
    exit_log_len = 0;
    OK(pthread_key_create(&exit_key, log_destructor));
    pthread_t t;
    OK(pthread_create(&t, NULL, exit_with_cleanup, NULL));
    OK(pthread_join(t, NULL));
    CHECK_EQ(exit_log_len, 3);
    CHECK_EQ(exit_log[0], 2);
    CHECK_EQ(exit_log[1], 1);
    CHECK_EQ(exit_log[2], 3);
    OK(pthread_key_delete(exit_key));
}

static void *return_with_key(void *p)
{
    OK(pthread_setspecific(exit_key, p));
    return NULL;
}

/* Returning from the start routine is an implicit pthread_exit(). */
static void return_runs_destructors(void)
{
    exit_log_len = 0;
    OK(pthread_key_create(&exit_key, log_destructor));
    pthread_t t;
    OK(pthread_create(&t, NULL, return_with_key, (void *)7));
    OK(pthread_join(t, NULL));
    CHECK_EQ(exit_log_len, 1);
    CHECK_EQ(exit_log[0], 7);
    OK(pthread_key_delete(exit_key));
}

/* ---- pthread_self / pthread_equal ---- */

struct self_report {
    struct sync reported, go;
    pthread_t self;
};

static void *report_self(void *p)
{
    struct self_report *r = p;
    r->self = pthread_self();
    sync_add(&r->reported, 1);
    sync_wait(&r->go, 1);
    return NULL;
}

/* Compared while the thread runs: a thread ID's lifetime ends at the join. */
static void self_matches_created_id(void)
{
    static struct self_report r;
    sync_init(&r.reported);
    sync_init(&r.go);
    pthread_t t;
    OK(pthread_create(&t, NULL, report_self, &r));
    sync_wait(&r.reported, 1);
    CHECK(pthread_equal(t, r.self));
    CHECK(!pthread_equal(t, pthread_self()));
    sync_add(&r.go, 1);
    OK(pthread_join(t, NULL));
    sync_destroy(&r.reported);
    sync_destroy(&r.go);
}

static void self_equal_in_main(void)
{
    pthread_t a = pthread_self(), b = pthread_self();
    CHECK(pthread_equal(a, a));
    CHECK(pthread_equal(a, b));
}

/* ---- the _np joins ---- */

static void tryjoin_busy_while_running(void)
{
    struct sync gate;
    sync_init(&gate);
    pthread_t t;
    OK(pthread_create(&t, NULL, wait_then_return, &gate));
    FAILS(pthread_tryjoin_np(t, NULL), EBUSY);
    sync_add(&gate, 1);
    /* Once it has ended, pthread_tryjoin_np joins it. */
    uint64_t give_up = conform_now(CLOCK_MONOTONIC) + 3000 * MS;
    void *res = NULL;
    int rc;
    while ((rc = pthread_tryjoin_np(t, &res)) == EBUSY) {
        CHECK(conform_now(CLOCK_MONOTONIC) < give_up);
        struct timespec pause = { 0, 1000000 };
        nanosleep(&pause, NULL);
    }
    CHECK_EQ(rc, 0);
    CHECK(res == &gate);
    sync_destroy(&gate);
}

static int64_t ts_minus(struct timespec a, struct timespec b)
{
    return ((int64_t)a.tv_sec - b.tv_sec) * 1000000000 + (a.tv_nsec - b.tv_nsec);
}

static struct timespec now_ts(clockid_t clock)
{
    struct timespec ts;
    OK(clock_gettime(clock, &ts));
    return ts;
}

enum timed_join { TIMEDJOIN, CLOCKJOIN_REALTIME, CLOCKJOIN_MONOTONIC };

static clockid_t clock_of(enum timed_join how)
{
    return how == CLOCKJOIN_MONOTONIC ? CLOCK_MONOTONIC : CLOCK_REALTIME;
}

static int timed_join(enum timed_join how, pthread_t t, void **res, const struct timespec *deadline)
{
    if (how == TIMEDJOIN)
        return pthread_timedjoin_np(t, res, deadline);
    return pthread_clockjoin_np(t, res, clock_of(how), deadline);
}

/* A timed join on a thread that does not end times out, not before the
 * deadline, and leaves the thread joinable. */
static void timed_join_times_out(enum timed_join how)
{
    struct sync gate;
    sync_init(&gate);
    pthread_t t;
    OK(pthread_create(&t, NULL, wait_then_return, &gate));
    struct timespec deadline = conform_deadline(clock_of(how), 100 * MS);
    FAILS(timed_join(how, t, NULL, &deadline), ETIMEDOUT);
    CHECK(ts_minus(now_ts(clock_of(how)), deadline) >= 0);
    sync_add(&gate, 1);
    void *res = NULL;
    OK(pthread_join(t, &res));
    CHECK(res == &gate);
    sync_destroy(&gate);
}

static void timedjoin_times_out_realtime(void)
{
    timed_join_times_out(TIMEDJOIN);
}

static void clockjoin_times_out_realtime(void)
{
    timed_join_times_out(CLOCKJOIN_REALTIME);
}

static void clockjoin_times_out_monotonic(void)
{
    timed_join_times_out(CLOCKJOIN_MONOTONIC);
}

/* A thread that ends before the deadline is joined with its value. */
static void timed_joins_return_value(void)
{
#ifdef __SANITIZE_THREAD__
    const enum timed_join last = TIMEDJOIN; /* TSan has no pthread_clockjoin_np */
#else
    const enum timed_join last = CLOCKJOIN_MONOTONIC;
#endif
    for (enum timed_join how = TIMEDJOIN; how <= last; how++) {
        struct sync gate;
        sync_init(&gate);
        pthread_t t;
        OK(pthread_create(&t, NULL, wait_then_return, &gate));
        sync_add(&gate, 1);
        struct timespec deadline = conform_deadline(clock_of(how), 5000 * MS);
        void *res = NULL;
        OK(timed_join(how, t, &res, &deadline));
        CHECK(res == &gate);
        sync_destroy(&gate);
    }
}

/* glibc manual: pthread_clockjoin_np's clockid "must be either
 * CLOCK_MONOTONIC or CLOCK_REALTIME"; another clock gives EINVAL and the
 * thread stays joinable. */
static void clockjoin_rejects_bad_clock(void)
{
    struct sync gate;
    sync_init(&gate);
    pthread_t t;
    OK(pthread_create(&t, NULL, wait_then_return, &gate));
    struct timespec deadline = conform_deadline(CLOCK_MONOTONIC, 5000 * MS);
    FAILS(pthread_clockjoin_np(t, NULL, CLOCK_PROCESS_CPUTIME_ID, &deadline), EINVAL);
    sync_add(&gate, 1);
    void *res = NULL;
    OK(pthread_join(t, &res));
    CHECK(res == &gate);
    sync_destroy(&gate);
}

/* ---- thread names ---- */

static void setname_getname_self(void)
{
    char saved[16], buf[32];
    pthread_t self = pthread_self();
    OK(pthread_getname_np(self, saved, sizeof saved));
    OK(pthread_setname_np(self, "conform-main"));
    OK(pthread_getname_np(self, buf, sizeof buf));
    CHECK(strcmp(buf, "conform-main") == 0);
    OK(pthread_setname_np(self, saved));
}

static void setname_getname_other_thread(void)
{
    struct sync gate;
    sync_init(&gate);
    pthread_t t;
    OK(pthread_create(&t, NULL, wait_then_return, &gate));
    char buf[16];
    OK(pthread_setname_np(t, "0123456789abcde")); /* 15 chars: the limit */
    OK(pthread_getname_np(t, buf, sizeof buf));
    CHECK(strcmp(buf, "0123456789abcde") == 0);
    sync_add(&gate, 1);
    OK(pthread_join(t, NULL));
    sync_destroy(&gate);
}

/* "restricted to 16 characters, including the terminating null byte":
 * ERANGE for a longer name, and for a buffer too small for the name. */
static void setname_getname_range(void)
{
    char saved[16], buf[15];
    pthread_t self = pthread_self();
    OK(pthread_getname_np(self, saved, sizeof saved));
    FAILS(pthread_setname_np(self, "0123456789abcdef"), ERANGE);
    OK(pthread_setname_np(self, "0123456789abcde"));
    FAILS(pthread_getname_np(self, buf, sizeof buf), ERANGE);
    OK(pthread_setname_np(self, saved));
}

/* ---- pthread_getcpuclockid ---- */

struct cpu_state {
    struct sync go, done, finish;
};

static void *burn_cpu(void *p)
{
    struct cpu_state *c = p;
    sync_wait(&c->go, 1);
    uint64_t start = conform_now(CLOCK_THREAD_CPUTIME_ID);
    uint64_t give_up = conform_now(CLOCK_MONOTONIC) + 3000 * MS;
    volatile unsigned sink = 0;
    while (conform_now(CLOCK_THREAD_CPUTIME_ID) - start < 20 * MS) {
        for (int i = 0; i < 10000; i++)
            sink += i;
        CHECK(conform_now(CLOCK_MONOTONIC) < give_up);
    }
    sync_add(&c->done, 1);
    sync_wait(&c->finish, 1);
    return NULL;
}

/* The thread's CPU-time clock, read from another thread, advances by the CPU
 * time the thread spends computing. */
static void getcpuclockid_advances(void)
{
    static struct cpu_state c;
    sync_init(&c.go);
    sync_init(&c.done);
    sync_init(&c.finish);
    pthread_t t;
    OK(pthread_create(&t, NULL, burn_cpu, &c));
    clockid_t clock;
    OK(pthread_getcpuclockid(t, &clock));
    struct timespec before = now_ts(clock);
    sync_add(&c.go, 1);
    sync_wait(&c.done, 1);
    struct timespec after = now_ts(clock);
    CHECK(ts_minus(after, before) >= (int64_t)(20 * MS));
    sync_add(&c.finish, 1);
    OK(pthread_join(t, NULL));
    sync_destroy(&c.go);
    sync_destroy(&c.done);
    sync_destroy(&c.finish);
}

/* ---- sched_yield, concurrency, scheduling parameters ---- */

static void sched_yield_returns_zero(void)
{
    for (int i = 0; i < 100; i++)
        OK(sched_yield());
}

/* "If the pthread_setconcurrency() function was not previously called, this
 * function shall return zero"; afterwards it returns the value set; a
 * negative level shall fail with EINVAL. Must run before any other use. */
static void concurrency_round_trip(void)
{
    CHECK_EQ(pthread_getconcurrency(), 0);
    OK(pthread_setconcurrency(4));
    CHECK_EQ(pthread_getconcurrency(), 4);
    FAILS(pthread_setconcurrency(-1), EINVAL);
    CHECK_EQ(pthread_getconcurrency(), 4);
    OK(pthread_setconcurrency(0));
    CHECK_EQ(pthread_getconcurrency(), 0);
}

static void check_sched_other(pthread_t t)
{
    struct sched_param sp = { .sched_priority = 0 };
    int policy = -1;
    OK(pthread_setschedparam(t, SCHED_OTHER, &sp));
    sp.sched_priority = -1;
    OK(pthread_getschedparam(t, &policy, &sp));
    CHECK_EQ(policy, SCHED_OTHER);
    CHECK_EQ(sp.sched_priority, 0);
}

static void schedparam_other_self(void)
{
    check_sched_other(pthread_self());
}

static void schedparam_other_thread(void)
{
    struct sync gate;
    sync_init(&gate);
    pthread_t t;
    OK(pthread_create(&t, NULL, wait_then_return, &gate));
    check_sched_other(t);
    sync_add(&gate, 1);
    OK(pthread_join(t, NULL));
    sync_destroy(&gate);
}

/* glibc's pthread_setschedparam(3): "EINVAL policy is not a recognized
 * policy, or param does not make sense for the policy" (SCHED_OTHER only
 * has priority 0). */
static void schedparam_rejects_invalid(void)
{
    struct sched_param sp = { .sched_priority = 0 };
    OK(pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp));
    FAILS(pthread_setschedparam(pthread_self(), 12345, &sp), EINVAL);
    sp.sched_priority = 1;
    FAILS(pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp), EINVAL);
    int policy;
    OK(pthread_getschedparam(pthread_self(), &policy, &sp));
    CHECK_EQ(policy, SCHED_OTHER);
    CHECK_EQ(sp.sched_priority, 0);
}

/* pthread_setschedprio "shall fail if: [EINVAL] The value of prio is invalid
 * for the scheduling policy of the specified thread." */
static void setschedprio_other(void)
{
    struct sched_param sp = { .sched_priority = 0 };
    OK(pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp));
    OK(pthread_setschedprio(pthread_self(), 0));
    FAILS(pthread_setschedprio(pthread_self(), 1), EINVAL);
    int policy;
    OK(pthread_getschedparam(pthread_self(), &policy, &sp));
    CHECK_EQ(policy, SCHED_OTHER);
    CHECK_EQ(sp.sched_priority, 0);
}

/* ---- per-thread errno and __thread ---- */

static atomic_int errno_set_by_thread, errno_set_by_main;
static uintptr_t thread_errno_addr;

static void wait_flag(atomic_int *flag)
{
    /* sched_yield only: a successful call has no reason to touch errno (the
     * mutex/condition variable paths may legitimately leave it changed). */
    while (!atomic_load(flag))
        sched_yield();
}

static void *errno_worker(void *p)
{
    thread_errno_addr = (uintptr_t)&errno;
    errno = 2222;
    atomic_store(&errno_set_by_thread, 1);
    wait_flag(&errno_set_by_main);
    CHECK_EQ(errno, 2222);
    return NULL;
}

/* "For each thread of a process, the value of errno shall not be affected by
 * function calls or assignments to errno by other threads." Both threads
 * store, then both check after seeing the other's store. */
static void errno_is_per_thread(void)
{
    pthread_t t;
    OK(pthread_create(&t, NULL, errno_worker, NULL));
    errno = 1111;
    atomic_store(&errno_set_by_main, 1);
    wait_flag(&errno_set_by_thread);
    CHECK_EQ(errno, 1111);
    CHECK(thread_errno_addr != (uintptr_t)&errno);
    OK(pthread_join(t, NULL));
}

static __thread int tls_int = 7;
static __thread char tls_str[8] = "initial";
static __thread long tls_zero;

#define TLS_THREADS 8

static struct sync tls_ready, tls_go;
static uintptr_t tls_addr[TLS_THREADS];

static void *tls_worker(void *p)
{
    int id = (int)(intptr_t)p;
    /* Each new thread starts with the initial values, whatever main did. */
    CHECK_EQ(tls_int, 7);
    CHECK(strcmp(tls_str, "initial") == 0);
    CHECK_EQ(tls_zero, 0);
    tls_int = 100 + id;
    snprintf(tls_str, sizeof tls_str, "t%d", id);
    tls_zero = id;
    tls_addr[id] = (uintptr_t)&tls_int;
    sync_add(&tls_ready, 1);
    sync_wait(&tls_go, 1);
    char want[8];
    snprintf(want, sizeof want, "t%d", id);
    CHECK_EQ(tls_int, 100 + id);
    CHECK(strcmp(tls_str, want) == 0);
    CHECK_EQ(tls_zero, id);
    return NULL;
}

static void tls_per_thread(void)
{
    tls_int = 99;
    strcpy(tls_str, "main");
    tls_zero = -1;
    sync_init(&tls_ready);
    sync_init(&tls_go);
    pthread_t t[TLS_THREADS];
    for (intptr_t i = 0; i < TLS_THREADS; i++)
        OK(pthread_create(&t[i], NULL, tls_worker, (void *)i));
    sync_wait(&tls_ready, TLS_THREADS);
    for (int i = 0; i < TLS_THREADS; i++) {
        CHECK(tls_addr[i] != (uintptr_t)&tls_int);
        for (int j = i + 1; j < TLS_THREADS; j++)
            CHECK(tls_addr[i] != tls_addr[j]);
    }
    sync_add(&tls_go, 1);
    for (int i = 0; i < TLS_THREADS; i++)
        OK(pthread_join(t[i], NULL));
    CHECK_EQ(tls_int, 99);
    CHECK(strcmp(tls_str, "main") == 0);
    CHECK_EQ(tls_zero, -1);
    sync_destroy(&tls_ready);
    sync_destroy(&tls_go);
}

int main(void)
{
    RUN_CASE(concurrency_round_trip, 10);
    RUN_CASE(create_passes_argument, 10);
    RUN_CASE(join_returns_value, 10);
    RUN_CASE(join_null_value_ptr, 10);
    RUN_CASE(create_many_at_once, 20);
    RUN_CASE(create_rejects_invalid_sched_attr, 10);
    RUN_CASE(join_self_deadlock, 10);
    RUN_CASE(detach_running_thread, 10);
    RUN_CASE(detach_self, 10);
    RUN_CASE(detach_after_exit, 10);
    RUN_CASE(exit_value, 10);
    RUN_CASE(exit_from_nested_function, 10);
    RUN_CASE(exit_runs_cleanup_then_destructors, 10);
    RUN_CASE(return_runs_destructors, 10);
    RUN_CASE(self_matches_created_id, 10);
    RUN_CASE(self_equal_in_main, 10);
    RUN_CASE(tryjoin_busy_while_running, 10);
    RUN_CASE(timedjoin_times_out_realtime, 10);
    RUN_CASE(clockjoin_times_out_realtime, 10);
    RUN_CASE(clockjoin_times_out_monotonic, 10);
    RUN_CASE(timed_joins_return_value, 10);
    RUN_CASE(clockjoin_rejects_bad_clock, 10);
    RUN_CASE(setname_getname_self, 10);
    RUN_CASE(setname_getname_other_thread, 10);
    RUN_CASE(setname_getname_range, 10);
    RUN_CASE(getcpuclockid_advances, 10);
    RUN_CASE(sched_yield_returns_zero, 10);
    RUN_CASE(schedparam_other_self, 10);
    RUN_CASE(schedparam_other_thread, 10);
    RUN_CASE(schedparam_rejects_invalid, 10);
    RUN_CASE(setschedprio_other, 10);
    RUN_CASE(errno_is_per_thread, 10);
    RUN_CASE(tls_per_thread, 10);
    return 0;
}
