/* SPDX-License-Identifier: MIT */
/* Threads made ready while others compute run soon, under every policy
 * (issue: a woken thread waited behind busy threads' whole slices):
 *   - a due timer: with slices of 2 s and a thread that computes without
 *     calling ito, a thread that sleeps 5 ms ten times is done long before
 *     the computing thread's first slice would end (the monitor asks the
 *     busy vproc to look at its timers: upcall/monitor.c, ito__vproc_look);
 *   - a wake-up from a kernel thread ito did not create (the global queue,
 *     or the woken thread's preferred vproc): the same;
 *   - a read on a vproc's ring completed by a kernel thread ito did not
 *     create: the same;
 *   - a semaphore ping-pong beside a thread that computes, on one vproc:
 *     the pair keeps the vproc for a slice;
 *   - sleepers woken by one look beside threads that used whole slices:
 *     each runs before those threads' next slices;
 *   - a mixed load on two vprocs — a semaphore ping-pong, sleepers, and
 *     pipe writers and readers whose I/O rarely parks — moves every part:
 *     the threads that use whole slices are charged for them and queue
 *     behind the ones that only wake (ito_policy_node_slices).
 * The bounds are a slice, or a tenth of what an unstarved part does: they
 * say whether a mechanism works, not how fast it is (bench/wakeup does).
 * Each part runs in a child process (the settings are read at start). */
#include "common.h"

#include <ito/io.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

static atomic_bool stop;
static ito_sem_t ping_sem, pong_sem;
static atomic_long pings, sleeps, words;
static atomic_bool pong_quit;   /* the pinger decides when the pair ends */

static void *compute(void *arg)
{
    (void)arg;
    volatile uint64_t x = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        x++;
    return NULL;
}

/* Yields once first: a thread spawned beside it starts first. */
static void *compute_after_yield(void *arg)
{
    ito_yield();
    return compute(arg);
}

/* ----------------------------------------------------- a due timer */

static void part_timer(void)
{
    ito_thread_t busy;
    OK(ito_spawn(&busy, NULL, compute, NULL));
    OK(ito_sleep_ns(1000000));   /* let it start computing (a yield, under "prio", waits for an epoch) */
    uint64_t t0 = ito_now_ns();
    for (int i = 0; i < 10; i++)
        OK(ito_sleep_ns(5000000));
    uint64_t took = ito_now_ns() - t0;
    atomic_store(&stop, true);
    OK(ito_join(busy, NULL));
    printf("wakeups: 10 sleeps of 5 ms beside a computing thread took %.1f ms (slices of 2 s)\n", took / 1e6);
    CHECK(took < 2000000000u);
}

/* ------------------------------------------- a wake-up from outside */

static ito_sem_t sem;
static _Atomic uint64_t posted_ns;

static void *poster(void *arg)
{
    (void)arg;
    for (int i = 0; i < 5; i++) {
        usleep(10000);
        atomic_store(&posted_ns, ito_now_ns());
        OK(ito_sem_post(&sem));
    }
    return NULL;
}

static uint64_t waiter_worst;

static void *waiter(void *arg)
{
    (void)arg;
    for (int i = 0; i < 5; i++) {
        OK(ito_sem_wait(&sem));
        uint64_t late = ito_now_ns() - atomic_load(&posted_ns);
        if (late > waiter_worst)
            waiter_worst = late;
    }
    return NULL;
}

/* The waiter has a preferred vproc (`home`): its wake-ups go to that vproc's
 * inbox; without one, to the global queue. */
static void foreign_wakes(bool home)
{
    OK(ito_sem_init(&sem, 0));
    ito_attr_t a;
    OK(ito_attr_init(&a));
    if (home)
        OK(ito_attr_set_vproc(&a, 0));
    ito_thread_t busy, w;
    OK(ito_spawn(&w, &a, waiter, NULL));
    OK(ito_spawn(&busy, NULL, compute, NULL));
    pthread_t p;
    OK(pthread_create(&p, NULL, poster, NULL));
    OK(ito_join(w, NULL));
    OK(pthread_join(p, NULL));   /* done posting: no wait in the kernel */
    atomic_store(&stop, true);
    OK(ito_join(busy, NULL));
    printf("wakeups: 5 posts from a kernel thread beside a computing thread (%s): worst %.2f ms (slices of 2 s)\n",
           home ? "its home's inbox" : "the global queue", waiter_worst / 1e6);
    CHECK(waiter_worst < 2000000000u);
    OK(ito_sem_destroy(&sem));
}

/* ------------------------------------------- an I/O completion */

static int io_pipe[2];
static _Atomic uint64_t written_ns;

static void *io_writer(void *arg)
{
    (void)arg;
    for (int i = 0; i < 5; i++) {
        usleep(10000);
        atomic_store(&written_ns, ito_now_ns());
        CHECK_EQ(write(io_pipe[1], "x", 1), 1);
    }
    return NULL;
}

static void *io_reader(void *arg)
{
    (void)arg;
    for (int i = 0; i < 5; i++) {
        char c;
        CHECK_EQ(ito_read(io_pipe[0], &c, 1), 1);   /* parks on the vproc's ring */
        uint64_t late = ito_now_ns() - atomic_load(&written_ns);
        if (late > waiter_worst)
            waiter_worst = late;
    }
    return NULL;
}

/* A thread parked in ito_read, its data written by a kernel thread ito did
 * not create, beside a thread that computes on the only vproc: the monitor
 * watches the ring of a vproc that hardly picks while threads wait there. */
static void part_io(void)
{
    CHECK_EQ(pipe(io_pipe), 0);
    ito_thread_t busy, r;
    OK(ito_spawn(&r, NULL, io_reader, NULL));
    OK(ito_spawn(&busy, NULL, compute_after_yield, NULL));
    pthread_t p;
    OK(pthread_create(&p, NULL, io_writer, NULL));
    OK(ito_join(r, NULL));
    OK(pthread_join(p, NULL));
    atomic_store(&stop, true);
    OK(ito_join(busy, NULL));
    printf("wakeups: 5 reads completed beside a computing thread: worst %.2f ms (slices of 2 s)\n",
           waiter_worst / 1e6);
    CHECK(waiter_worst < 1000000000u);
    close(io_pipe[0]);
    close(io_pipe[1]);
}

static void part_foreign(void) { foreign_wakes(false); }
static void part_foreign_home(void) { foreign_wakes(true); }

/* ------------------------------- a ping-pong beside a computing thread */

static void *pinger(void *arg);
static void *ponger(void *arg);

/* A pair that wakes each other keeps the vproc for a slice, then the
 * computing thread gets its turn: with slices of 2 s, it keeps it for the
 * whole second. (ws once let the computing thread in after 8 picks from
 * its next slot whether slices were on or not: it read the slice length
 * before ito had set it. The pair made 8 round trips a slice.) */
static void part_pair(void)
{
    OK(ito_sem_init(&ping_sem, 0));
    OK(ito_sem_init(&pong_sem, 0));
    ito_thread_t a, b, busy;
    OK(ito_spawn(&a, NULL, pinger, NULL));
    OK(ito_spawn(&b, NULL, ponger, NULL));
    OK(ito_spawn(&busy, NULL, compute_after_yield, NULL));
    OK(ito_sleep_ns(1000000000u));
    atomic_store(&stop, true);
    long p = atomic_load(&pings);
    OK(ito_join(a, NULL));
    OK(ito_join(b, NULL));
    OK(ito_join(busy, NULL));
    printf("wakeups: a ping-pong beside a computing thread, 1 s on 1 vproc: %ld round trips\n", p);
    CHECK(p >= 10000);   /* a round trip takes well under a microsecond */
}

/* ---------------------------------------------------- a mixed load */


static void *pinger(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        OK(ito_sem_post(&ping_sem));
        OK(ito_sem_wait(&pong_sem));
        atomic_fetch_add(&pings, 1);
    }
    atomic_store(&pong_quit, true);
    OK(ito_sem_post(&ping_sem));   /* the ponger's last wait */
    return NULL;
}

static void *ponger(void *arg)
{
    (void)arg;
    for (;;) {
        OK(ito_sem_wait(&ping_sem));
        if (atomic_load(&pong_quit))
            return NULL;
        OK(ito_sem_post(&pong_sem));
    }
}

static void *sleeper(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        OK(ito_sleep_ns(1000000));
        atomic_fetch_add(&sleeps, 1);
    }
    return NULL;
}

static void *writer(void *arg)
{
    int fd = (int)(intptr_t)arg;
    uint64_t v = 0;
    while (!atomic_load(&stop) && ito_write(fd, &v, sizeof v) == (ssize_t)sizeof v)
        v++;
    close(fd);   /* the reader's read then ends */
    return NULL;
}

static void *reader(void *arg)
{
    int fd = (int)(intptr_t)arg;
    uint64_t v, expect = 0;
    while (ito_read(fd, &v, sizeof v) == (ssize_t)sizeof v) {
        CHECK_EQ(v, expect);   /* every word, in order */
        expect++;
        atomic_fetch_add(&words, 1);
    }
    return NULL;
}

static void part_mixed(void)
{
    enum { PIPES = 4, SLEEPERS = 4 };
    OK(ito_sem_init(&ping_sem, 0));
    OK(ito_sem_init(&pong_sem, 0));
    ito_thread_t t[2 + SLEEPERS + 2 * PIPES];
    int n = 0, fds[PIPES][2];
    /* Under "affinity", which keeps each thread on the vproc it last ran
     * on, the pair shares one vproc with pipe threads: split over two, a
     * round trip may wait for a pipe thread to park on each side (about
     * 9 ms: docs/guide.md). Elsewhere the pair may go where it likes: a
     * thread with a preferred vproc that another one took is sent back
     * through an inbox at each wake-up. */
    ito_attr_t a;
    OK(ito_attr_init(&a));
    const char *policy = getenv("ITO_POLICY");
    if (policy && !strcmp(policy, "affinity"))
        OK(ito_attr_set_vproc(&a, 0));
    OK(ito_spawn(&t[n++], &a, pinger, NULL));
    OK(ito_spawn(&t[n++], &a, ponger, NULL));
    for (int i = 0; i < SLEEPERS; i++)
        OK(ito_spawn(&t[n++], NULL, sleeper, NULL));
    for (int i = 0; i < PIPES; i++) {
        CHECK_EQ(pipe(fds[i]), 0);
        OK(ito_spawn(&t[n++], NULL, writer, (void *)(intptr_t)fds[i][1]));
        OK(ito_spawn(&t[n++], NULL, reader, (void *)(intptr_t)fds[i][0]));
    }
    OK(ito_sleep_ns(1500000000u));
    atomic_store(&stop, true);
    long p = atomic_load(&pings), s = atomic_load(&sleeps), w = atomic_load(&words);
    for (int i = 0; i < n; i++)
        OK(ito_join(t[i], NULL));
    for (int i = 0; i < PIPES; i++)
        close(fds[i][0]);
    printf("wakeups: mixed load, 1.5 s on 2 vprocs: %ld round trips, %ld sleeps of 1 ms, %ld pipe words\n", p, s,
           w);
    fflush(stdout);
    /* Unstarved, a round trip takes microseconds and 4 sleepers make
     * about 6,000 sleeps; starved, the ping-pong made a few dozen. */
    CHECK(p >= 2000);
    CHECK(s >= 300);
    CHECK(w >= 1000);
}

/* ------------------------------ sleepers woken together beside spinners */

enum { TOGETHER = 4, TOGETHER_ROUNDS = 10 };
static _Atomic uint64_t together_deadline[TOGETHER_ROUNDS];
static _Atomic uint64_t together_late;   /* the most any sleeper woke after its deadline */

static void *together_sleeper(void *arg)
{
    (void)arg;
    for (int k = 0; k < TOGETHER_ROUNDS; k++) {
        uint64_t d = atomic_load(&together_deadline[k]), now = ito_now_ns();
        if (d > now)
            OK(ito_sleep_ns(d - now));
        uint64_t late = ito_now_ns() - d;
        for (uint64_t m = atomic_load(&together_late); late > m;)
            if (atomic_compare_exchange_weak(&together_late, &m, late))
                break;
    }
    return NULL;
}

/* Computes in registers, looking at `stop` once a millisecond or so: a
 * sanitizer's runtime, which a time slice's end must not interrupt (it is
 * deferred, upcall/preempt.c), is almost never where a tick finds it. */
static void *compute_in_registers(void *arg)
{
    (void)arg;
    uint64_t x = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        for (int k = 0; k < (1 << 20); k++)
            __asm__ __volatile__("" : "+r"(x));
    return NULL;
}

/* 4 sleepers with the same deadlines, beside 3 threads that have each
 * computed a whole slice (50 ms) and wait for the next one: one look of the
 * vproc ends all four sleeps, and each must run before the computing
 * threads' next slices. (Under ws the thread that a wake-up pushed out of
 * the next slot used to queue behind them: up to 3 slices late.) */
static void part_together(void)
{
    ito_thread_t busy[3], s[TOGETHER];
    for (int i = 0; i < 3; i++)
        OK(ito_spawn(&busy[i], NULL, compute_in_registers, NULL));
    test_sleep_cpu_time(200);   /* each has run a slice or more */
    uint64_t t0 = ito_now_ns() + 20000000;
    for (int k = 0; k < TOGETHER_ROUNDS; k++)
        atomic_store(&together_deadline[k], t0 + (uint64_t)k * 30000000);
    for (int i = 0; i < TOGETHER; i++)
        OK(ito_spawn(&s[i], NULL, together_sleeper, NULL));
    for (int i = 0; i < TOGETHER; i++)
        OK(ito_join(s[i], NULL));
    atomic_store(&stop, true);
    for (int i = 0; i < 3; i++)
        OK(ito_join(busy[i], NULL));
    uint64_t late = atomic_load(&together_late);
    printf("wakeups: %d sleepers woken together beside 3 computing threads: %.2f ms late at most "
           "(bound: a slice, 50 ms)\n", TOGETHER, late / 1e6);
    fflush(stdout);
    CHECK(late < 50000000);
}

int main(void)
{
    const char *const slow[] = { "ITO_TIMESLICE_US", "2000000", NULL };
    test_run_part("wakeups", "a due timer", part_timer, 1, slow);
    test_run_part("wakeups", "a wake-up from outside", part_foreign, 1, slow);
    test_run_part("wakeups", "a wake-up from outside, to a home vproc", part_foreign_home, 1, slow);
    test_run_part("wakeups", "an I/O completion", part_io, 1, slow);
    test_run_part("wakeups", "a ping-pong beside a computing thread", part_pair, 1, slow);
    test_run_part("wakeups", "a mixed load", part_mixed, 2, NULL);
#ifndef __SANITIZE_ADDRESS__
    /* Not under ASan: there the look at the due timers itself came 24-114 ms
     * late in this part (all four sleepers together, whatever the order),
     * which is not what it checks; why is not known yet. */
    const char *const slices50[] = { "ITO_TIMESLICE_US", "50000", NULL };
    test_run_part("wakeups", "sleepers woken together", part_together, 1, slices50);
#endif
    return 0;
}
