/* SPDX-License-Identifier: MIT */
/* Blocking that nobody bracketed (runtime/carrier.c), on ONE vproc.
 *
 * A thread sleeps in a plain usleep() and then reads an empty pipe with a
 * plain read(): no ito_blocking_begin. With activations on, a counting
 * thread on the same vproc keeps running meanwhile (the monitor took the
 * vproc from the sleeping kernel thread), the BLOCKED event names the
 * sleeper, and ito_stats_get counts the stalls. When its call returns, the
 * sleeper goes on on its old kernel thread only until it next calls ito —
 * or, with time slices on, until its slice ends while it computes — and
 * then resumes on the vproc's new carrier (gettid() changes).
 *
 * Last, the sleeper blocks for a second in a plain read() of an empty pipe
 * while a thousand threads (two hundred under ThreadSanitizer) spawned just
 * before on the same vproc must all finish (it prints how soon they did; the pipe's writer waits for them, up
 * to a minute).
 *
 * With ITO_ACTIVATIONS=0 (a second test) the sleeping kernel thread keeps
 * the vproc: the counter does not move while it sleeps, and none of the
 * finishers runs before the read returns. */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

static atomic_long count;
static atomic_bool stop;
static atomic_ulong blocked_id;   /* a BLOCKED event's thread */
static int pipefd[2];
static bool activations, slices;

static void hook(const ito_event_t *ev, void *arg)
{
    if (ev->kind == ITO_EVENT_BLOCKED)
        atomic_store(&blocked_id, ev->thread.id);
}

static void *counter(void *arg)
{
    while (!atomic_load(&stop)) {
        atomic_fetch_add(&count, 1);
        ito_yield();
    }
    return NULL;
}

static pid_t tid(void) { return (pid_t)syscall(SYS_gettid); }

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Compute for `ms` of this kernel thread's CPU time, calling nothing of ito's. */
static volatile uint64_t sink;
static void compute(unsigned ms)
{
    uint64_t end = cpu_ns() + ms * 1000000ull, x = 0;
    while (cpu_ns() < end)
        for (int i = 0; i < 100000; i++)
            x += (uint64_t)i * i;   /* a local: nothing a sanitizer instruments */
    sink = x;
}

/* Writes a byte to the pipe after *arg milliseconds. */
static void *writer(void *arg)
{
    usleep(*(unsigned *)arg * 1000u);
    CHECK(write(pipefd[1], "x", 1) == 1);
    return NULL;
}

/* A thousand; under ThreadSanitizer, whose every switch costs about half a
 * millisecond here (3,000 yields took 1.4-1.9 s alone, and a minute with
 * other sanitized tests beside it), two hundred. */
#if defined(__SANITIZE_THREAD__)
#define NFINISHERS 200
#else
#define NFINISHERS 1000
#endif
static atomic_int finished;
static _Atomic uint64_t first_run_ns, last_finish_ns;

/* Writes a byte to the pipe a second from now, and (with activations) not
 * before the finishers are all done or a minute has passed: the sanitizer
 * builds are slow to start a thousand threads. */
static void *late_writer(void *arg)
{
    uint64_t end = ito_now_ns() + 1000000000u, cap = end + 60000000000u;
    while (activations && atomic_load(&finished) < NFINISHERS && ito_now_ns() < cap)
        usleep(1000);
    while (ito_now_ns() < end)
        usleep(1000);
    CHECK(write(pipefd[1], "x", 1) == 1);
    return NULL;
}

static void *finisher(void *arg)
{
    uint64_t zero = 0;
    atomic_compare_exchange_strong(&first_run_ns, &zero, ito_now_ns());
    for (int i = 0; i < 3; i++)
        ito_yield();
    if (atomic_fetch_add(&finished, 1) + 1 == NFINISHERS)
        atomic_store(&last_finish_ns, ito_now_ns());
    return NULL;
}

static void *sleeper(void *arg)
{
    pid_t before = tid();

    /* 1. A plain sleep. */
    long c0 = atomic_load(&count);
    usleep(200 * 1000);
    long during = atomic_load(&count) - c0;
    printf("stall_handoff: counter moved %ld times during a 200 ms plain sleep\n", during);
    if (activations)
        CHECK(during > 100);
    else
        CHECK_EQ(during, 0);
    CHECK_EQ(tid(), before);   /* still on the kernel thread that slept */

    /* 2. It computes without calling ito: with slices, the tick moves it to
     * the vproc's carrier. */
    compute(60);
    pid_t after_compute = tid();
    printf("stall_handoff: after computing: %s kernel thread\n", after_compute == before ? "same" : "another");
    if (activations && slices)
        CHECK(after_compute != before);

    /* 3. Its next call into ito moves it in any case. */
    ito_yield();
    pid_t after_yield = tid();
    if (activations)
        CHECK(after_yield != before);
    else
        CHECK_EQ(after_yield, before);

    /* 4. A plain read of an empty pipe, written 150 ms later by a kernel
     * thread ito does not know. */
    pthread_t w;
    unsigned delay_ms = 150;
    CHECK_EQ(pthread_create(&w, NULL, writer, &delay_ms), 0);
    c0 = atomic_load(&count);
    char ch;
    CHECK(read(pipefd[0], &ch, 1) == 1);
    during = atomic_load(&count) - c0;
    printf("stall_handoff: counter moved %ld times during a 150 ms plain read\n", during);
    if (activations)
        CHECK(during > 100);
    else
        CHECK_EQ(during, 0);
    CHECK_EQ(pthread_join(w, NULL), 0);

    /* 5. A second in a plain read while the finishers run. */
    static ito_thread_t f[NFINISHERS];
    for (int i = 0; i < NFINISHERS; i++)
        OK(ito_spawn(&f[i], NULL, finisher, NULL));
    CHECK_EQ(pthread_create(&w, NULL, late_writer, NULL), 0);
    uint64_t t0 = ito_now_ns();
    CHECK(read(pipefd[0], &ch, 1) == 1);
    int done = atomic_load(&finished);
    uint64_t t1 = ito_now_ns();
    CHECK_EQ(pthread_join(w, NULL), 0);
    if (activations) {
        CHECK_EQ(done, NFINISHERS);
        printf("stall_handoff: %d threads began %.2f ms and finished %.2f ms into a %.0f ms plain read\n",
               NFINISHERS, (double)(atomic_load(&first_run_ns) - t0) / 1e6,
               (double)(atomic_load(&last_finish_ns) - t0) / 1e6, (double)(t1 - t0) / 1e6);
    } else {
        CHECK_EQ(done, 0);
    }
    for (int i = 0; i < NFINISHERS; i++)
        OK(ito_join(f[i], NULL));
    CHECK_EQ(atomic_load(&finished), NFINISHERS);
    return NULL;
}

int main(void)
{
    alarm(60);
    const char *a = getenv("ITO_ACTIVATIONS"), *ts = getenv("ITO_TIMESLICE_US");
    activations = !a || strcmp(a, "0") != 0;
    slices = activations && (!ts || strcmp(ts, "0") != 0);
    CHECK(pipe(pipefd) == 0);
    OK(ito_event_hook_set(hook, NULL));
    ito_thread_t c, s;
    OK(ito_spawn(&c, NULL, counter, NULL));
    OK(ito_spawn(&s, NULL, sleeper, NULL));
    OK(ito_join(s, NULL));
    atomic_store(&stop, true);
    OK(ito_join(c, NULL));
    OK(ito_event_hook_set(NULL, NULL));
    ito_stats_t st;
    OK(ito_stats_get(&st));
    printf("stall_handoff: %llu stalls, %llu bracketed hand-offs\n", (unsigned long long)st.stalls,
           (unsigned long long)st.handoffs);
    if (activations) {
        CHECK(st.stalls >= 3);
        CHECK_EQ(atomic_load(&blocked_id), s.id);
    } else {
        CHECK_EQ(st.stalls, 0);
    }
    return 0;
}
