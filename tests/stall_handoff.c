/* Blocking that nobody bracketed (kernel/stall.c), on ONE vproc.
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
 * With ITO_ACTIVATIONS=0 (a second test) the sleeping kernel thread keeps
 * the vproc: the counter does not move while it sleeps. */
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

static void *writer(void *arg)
{
    usleep(150 * 1000);
    CHECK(write(pipefd[1], "x", 1) == 1);
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
    CHECK_EQ(pthread_create(&w, NULL, writer, NULL), 0);
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
        CHECK(st.stalls >= 2);
        CHECK_EQ(atomic_load(&blocked_id), s.id);
    } else {
        CHECK_EQ(st.stalls, 0);
    }
    return 0;
}
