/* SPDX-License-Identifier: MIT */
/*
 * CPU affinity of threads: pthread_setaffinity_np(3), pthread_getaffinity_np,
 * sched_setaffinity(2) and sched_getaffinity on the caller, the affinity
 * attribute of pthread_create (pthread_attr_setaffinity_np(3)) and what
 * pthread_getattr_np reports.
 *
 * sched_setaffinity(2): "A thread's CPU affinity mask determines the set of
 * CPUs on which it is eligible to run"; "If pid is zero, then the calling
 * thread is used"; "A child created via fork(2) inherits its parent's CPU
 * affinity mask" (and a thread its creator's: clone(2) copies it);
 * EINVAL: "The affinity bit mask mask contains no processors that are
 * currently physically on the system and permitted to the thread";
 * EINVAL (sched_getaffinity): "cpusetsize is smaller than the size of the
 * affinity mask used by the kernel" (and, in the kernel, not a multiple of
 * a long); EFAULT: "A supplied memory address was invalid."
 *
 * A thread held to a CPU is checked where it runs (sched_getcpu) after every
 * way it can leave and regain a processor: yields, sleeps, waits on a mutex
 * and a condition variable that other threads signal, and the start of a
 * thread; with threads held to every CPU and threads held to none at once,
 * all of which must make progress.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "conform.h"

static cpu_set_t process_set;   /* main's, before any thread */
/* AFFINITY_ONE_VPROC (ito with ITO_VPROCS=1, tests/posix/CMakeLists.txt):
 * no vproc runs on most CPUs, so threads held there run elsewhere; only
 * that they run, and what they report, is checked. */
static bool one_vproc;
static int cpus[CPU_SETSIZE], ncpus;

#define CHECK_CPU(cpu)                                                                  \
    do {                                                                                \
        if (!one_vproc)                                                                 \
            CHECK_EQ(sched_getcpu(), (cpu));                                            \
    } while (0)

static void one_cpu(cpu_set_t *s, int cpu)
{
    CPU_ZERO(s);
    CPU_SET(cpu, s);
}

static void check_set(const cpu_set_t *want)
{
    cpu_set_t got;
    OK(pthread_getaffinity_np(pthread_self(), sizeof got, &got));
    CHECK(CPU_EQUAL(&got, want));
    CPU_ZERO(&got);
    CHECK_EQ(sched_getaffinity(0, sizeof got, &got), 0);
    CHECK(CPU_EQUAL(&got, want));
    pthread_attr_t attr;
    OK(pthread_getattr_np(pthread_self(), &attr));
    CPU_ZERO(&got);
    OK(pthread_attr_getaffinity_np(&attr, sizeof got, &got));
    CHECK(CPU_EQUAL(&got, want));
    OK(pthread_attr_destroy(&attr));
}

/* --------------------------------------------------------------- cases */

static void *report_default(void *arg)
{
    check_set(&process_set);
    return arg;
}

/* Every thread may run on every CPU of the process unless told otherwise. */
static void default_set_is_the_processes(void)
{
    check_set(&process_set);
    CHECK_EQ(on_thread(report_default, NULL), 0);
    check_set(&process_set);
}

/* Leaves and regains its processor every way there is, checking its CPU. */
static pthread_mutex_t churn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t churn_cv = PTHREAD_COND_INITIALIZER;
static long churn_ticks;

static void churn(int cpu, int rounds)
{
    for (int i = 0; i < rounds; i++) {
        CHECK_CPU(cpu);
        switch (i % 4) {
        case 0:
            sched_yield();
            break;
        case 1: {
            struct timespec ts = { 0, 20000 };
            nanosleep(&ts, NULL);
            break;
        }
        case 2:
            OK(pthread_mutex_lock(&churn_lock));
            churn_ticks++;
            OK(pthread_cond_broadcast(&churn_cv));
            OK(pthread_mutex_unlock(&churn_lock));
            break;
        default: {
            OK(pthread_mutex_lock(&churn_lock));
            struct timespec dl = conform_deadline(CLOCK_REALTIME, 100000);
            int e = pthread_cond_timedwait(&churn_cv, &churn_lock, &dl);
            CHECK(e == 0 || e == ETIMEDOUT);
            OK(pthread_mutex_unlock(&churn_lock));
            break;
        }
        }
    }
    CHECK_CPU(cpu);
}

static void *hold_self(void *arg)
{
    int cpu = (int)(intptr_t)arg;
    cpu_set_t s;
    one_cpu(&s, cpu);
    OK(pthread_setaffinity_np(pthread_self(), sizeof s, &s));
    CHECK_CPU(cpu);   /* at once */
    check_set(&s);
    churn(cpu, 400);
    /* All the CPUs again. */
    OK(pthread_setaffinity_np(pthread_self(), sizeof process_set, &process_set));
    check_set(&process_set);
    return NULL;
}

static void thread_holds_itself_to_each_cpu(void)
{
    for (int i = 0; i < ncpus; i++)
        CHECK_EQ(on_thread(hold_self, (void *)(intptr_t)cpus[i]), 0);
}

static void *hold_self_sched(void *arg)
{
    int cpu = (int)(intptr_t)arg;
    cpu_set_t s;
    one_cpu(&s, cpu);
    CHECK_EQ(sched_setaffinity(0, sizeof s, &s), 0);
    CHECK_CPU(cpu);
    check_set(&s);
    churn(cpu, 200);
    CHECK_EQ(sched_setaffinity(0, sizeof process_set, &process_set), 0);
    check_set(&process_set);
    return NULL;
}

static void sched_setaffinity_on_the_caller(void)
{
    for (int i = 0; i < ncpus; i++)
        CHECK_EQ(on_thread(hold_self_sched, (void *)(intptr_t)cpus[i]), 0);
}

/* Another thread's set: it moves at once (the kernel migrates it) or at the
 * latest when it next gives up its processor; after that it stays. */
static _Atomic int moved;
static void *spin_then_check(void *arg)
{
    int cpu = (int)(intptr_t)arg;
    while (!atomic_load(&moved))
        sched_yield();
    churn(cpu, 200);
    cpu_set_t s;
    one_cpu(&s, cpu);
    check_set(&s);
    return NULL;
}

static void set_another_threads(void)
{
    for (int i = 0; i < ncpus; i++) {
        atomic_store(&moved, 0);
        pthread_t t;
        OK(pthread_create(&t, NULL, spin_then_check, (void *)(intptr_t)cpus[i]));
        cpu_set_t s;
        one_cpu(&s, cpus[i]);
        OK(pthread_setaffinity_np(t, sizeof s, &s));
        cpu_set_t got;
        OK(pthread_getaffinity_np(t, sizeof got, &got));
        CHECK(CPU_EQUAL(&got, &s));
        conform_pause_us(2000);   /* it yields meanwhile: it has moved */
        atomic_store(&moved, 1);
        OK(pthread_join(t, NULL));
    }
}

static void *started_held(void *arg)
{
    int cpu = (int)(intptr_t)arg;
    CHECK_CPU(cpu);   /* from its first instruction */
    cpu_set_t s;
    one_cpu(&s, cpu);
    check_set(&s);
    churn(cpu, 100);
    return NULL;
}

static void *creates_child(void *arg)
{
    pthread_t t;
    OK(pthread_create(&t, NULL, started_held, arg));   /* inherits its creator's set */
    OK(pthread_join(t, NULL));
    return NULL;
}

static void attribute_and_inheritance(void)
{
    for (int i = 0; i < ncpus; i++) {
        cpu_set_t s;
        one_cpu(&s, cpus[i]);
        pthread_attr_t attr;
        OK(pthread_attr_init(&attr));
        OK(pthread_attr_setaffinity_np(&attr, sizeof s, &s));
        pthread_t t;
        OK(pthread_create(&t, &attr, started_held, (void *)(intptr_t)cpus[i]));
        OK(pthread_join(t, NULL));
        OK(pthread_create(&t, &attr, creates_child, (void *)(intptr_t)cpus[i]));
        OK(pthread_join(t, NULL));
        OK(pthread_attr_destroy(&attr));
    }
    check_set(&process_set);   /* the creator's own is unchanged */
}

/* Threads held to each CPU and threads held to none, all at once, all
 * passing the same mutex and condition variable: each held one stays on its
 * CPU and every thread finishes. */
#define PER_CPU 6
#define FREE 6
static void *free_churn(void *arg)
{
    for (int i = 0; i < 400; i++) {
        if (i % 2) {
            sched_yield();
        } else {
            OK(pthread_mutex_lock(&churn_lock));
            churn_ticks++;
            OK(pthread_cond_broadcast(&churn_cv));
            OK(pthread_mutex_unlock(&churn_lock));
        }
    }
    return arg;
}

static void *held_churn(void *arg)
{
    churn((int)(intptr_t)arg, 400);
    return NULL;
}

static void held_and_free_threads_together(void)
{
    pthread_t t[CPU_SETSIZE > 64 ? 64 * PER_CPU + FREE : 1];
    int n = 0, m = ncpus < 64 ? ncpus : 64;
    for (int i = 0; i < m; i++) {
        cpu_set_t s;
        one_cpu(&s, cpus[i]);
        pthread_attr_t attr;
        OK(pthread_attr_init(&attr));
        OK(pthread_attr_setaffinity_np(&attr, sizeof s, &s));
        for (int k = 0; k < PER_CPU; k++)
            OK(pthread_create(&t[n++], &attr, held_churn, (void *)(intptr_t)cpus[i]));
        OK(pthread_attr_destroy(&attr));
    }
    for (int k = 0; k < FREE; k++)
        OK(pthread_create(&t[n++], NULL, free_churn, NULL));
    for (int i = 0; i < n; i++)
        OK(pthread_join(t[i], NULL));
}

/* A thread held to a CPU runs while another held there waits in a call
 * that blocks its kernel thread: system(), whose child waits for a byte
 * that only the other thread writes (a deadlock if the other never runs). */
static int relay[2];
static void *write_relay(void *arg)
{
    CHECK_CPU((int)(intptr_t)arg);
    CHECK_EQ(write(relay[1], "r", 1), 1);
    return NULL;
}

static void *system_while_held(void *arg)
{
    int cpu = (int)(intptr_t)arg;
    cpu_set_t s;
    one_cpu(&s, cpu);
    OK(pthread_setaffinity_np(pthread_self(), sizeof s, &s));
    pthread_t t;
    OK(pthread_create(&t, NULL, write_relay, arg));   /* held to the same CPU */
    char cmd[64];
    snprintf(cmd, sizeof cmd, "head -c 1 /dev/fd/%d >/dev/null", relay[0]);
    CHECK_EQ(system(cmd), 0);
    OK(pthread_join(t, NULL));
    return NULL;
}

static void held_thread_runs_beside_a_blocked_one(void)
{
    for (int i = 0; i < ncpus; i++) {
        CHECK_EQ(pipe(relay), 0);
        CHECK_EQ(on_thread(system_while_held, (void *)(intptr_t)cpus[i]), 0);
        close(relay[0]);
        close(relay[1]);
    }
}

/* A thread held to a CPU spins until a thread it created, held there too,
 * has run: the kernel shares the CPU between them (and ito, with its time
 * slices or, without, another vproc on that CPU). */
static _Atomic int ran;
static void *mark_ran(void *arg)
{
    CHECK_CPU((int)(intptr_t)arg);
    atomic_store(&ran, 1);
    return NULL;
}

static void *spin_for_child(void *arg)
{
    int cpu = (int)(intptr_t)arg;
    cpu_set_t s;
    one_cpu(&s, cpu);
    OK(pthread_setaffinity_np(pthread_self(), sizeof s, &s));
    atomic_store(&ran, 0);
    pthread_t t;
    OK(pthread_create(&t, NULL, mark_ran, arg));
    while (!atomic_load(&ran))
        CHECK_CPU(cpu);
    OK(pthread_join(t, NULL));
    return NULL;
}

static void held_threads_share_their_cpu(void)
{
    for (int i = 0; i < ncpus; i++)
        CHECK_EQ(on_thread(spin_for_child, (void *)(intptr_t)cpus[i]), 0);
}

/* The process's ID names the initial thread, also when another thread
 * asks. */
static void *set_the_initial_threads(void *arg)
{
    cpu_set_t s, got;
    one_cpu(&s, cpus[0]);
    CHECK_EQ(sched_setaffinity(getpid(), sizeof s, &s), 0);
    CHECK_EQ(sched_getaffinity(getpid(), sizeof got, &got), 0);
    CHECK(CPU_EQUAL(&got, &s));
    check_set(&process_set);   /* its own is unchanged */
    return arg;
}

static void process_id_names_the_initial_thread(void)
{
    CHECK_EQ(on_thread(set_the_initial_threads, NULL), 0);
    cpu_set_t s, got;
    one_cpu(&s, cpus[0]);
    OK(pthread_getaffinity_np(pthread_self(), sizeof got, &got));
    CHECK(CPU_EQUAL(&got, &s));
    OK(pthread_setaffinity_np(pthread_self(), sizeof process_set, &process_set));
    check_set(&process_set);
}

static void errors(void)
{
    cpu_set_t none, got;
    CPU_ZERO(&none);
    FAILS(pthread_setaffinity_np(pthread_self(), sizeof none, &none), EINVAL);
    FAILS_ERRNO(sched_setaffinity(0, sizeof none, &none), EINVAL);
    /* Only CPUs the process may not use. */
    cpu_set_t outside;
    CPU_ZERO(&outside);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (!CPU_ISSET(c, &process_set))
            CPU_SET(c, &outside);
    if (CPU_COUNT(&outside))
        FAILS(pthread_setaffinity_np(pthread_self(), sizeof outside, &outside), EINVAL);
    /* A buffer that is not a whole number of longs. */
    FAILS(pthread_getaffinity_np(pthread_self(), 4, &got), EINVAL);
    FAILS_ERRNO(sched_getaffinity(0, 4, &got), EINVAL);
    check_set(&process_set);   /* failed calls changed nothing */
}

int main(void)
{
    one_vproc = getenv("AFFINITY_ONE_VPROC") != NULL;
    CHECK_EQ(sched_getaffinity(0, sizeof process_set, &process_set), 0);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &process_set))
            cpus[ncpus++] = c;
    RUN_CASE(default_set_is_the_processes, 10);
    RUN_CASE(thread_holds_itself_to_each_cpu, 30);
    RUN_CASE(sched_setaffinity_on_the_caller, 30);
    RUN_CASE(set_another_threads, 30);
    RUN_CASE(attribute_and_inheritance, 30);
    RUN_CASE(held_and_free_threads_together, 60);
    RUN_CASE(held_thread_runs_beside_a_blocked_one, 30);
    RUN_CASE(held_threads_share_their_cpu, 30);
    RUN_CASE(process_id_names_the_initial_thread, 10);
    RUN_CASE(errors, 10);
    return 0;
}
