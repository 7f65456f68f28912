/* SPDX-License-Identifier: MIT */
/* A sharing peer killed at random (issue 22, item 7): this process (the
 * survivor) computes on every vproc; another ito process (this program in
 * the role "peer", computing on every vproc too) starts, shares the CPUs,
 * and is killed with SIGKILL at a random moment — a quarter of the time
 * within its first 15 ms (while it starts, maybe while it holds the
 * allocation table's lock), the rest 0-300 ms after the survivor has given
 * it CPUs. Each time the survivor must hold all its vprocs' CPUs again, alone
 * in the table (ito_alloc_info: held == vprocs, processes == 1); the time
 * from the kill to that is the recovery time. The survivor's threads must go
 * on computing through every round.
 *
 * The rounds are run by a POSIX thread, which polls ito_alloc_info every
 * 200 us (any kernel thread may call it), so that the times measured are the
 * allocator's, not the survivor's own scheduling of a waiting ito thread.
 *
 * The killed peer is reaped at once (waitpid), as its parent would on
 * SIGCHLD. With SOAK_PEER_UNREAPED=1 it is reaped only after the survivor
 * has recovered: a dead process that nobody has reaped yet (a zombie) must
 * lose its CPUs too (the table takes a process in state Z for ended:
 * cpushare/table.c).
 *
 * Settings: SOAK_KILLS (argv[1] overrides) the number of kills, 3 by
 * default; SOAK_SEED the random seed. A round that does not recover within
 * 20 s fails the test. Prints one line per kill and a summary line
 * "peer_kill: result=ok kills=... recovery_ms_min=... median=... max=...".
 * Needs 2 CPUs or more (exit 77 otherwise: skipped). */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>

#include "common.h"

extern char **environ;

#define MAXV 64
static _Atomic uint64_t work[MAXV];
static atomic_bool stop;

static void *compute(void *arg)
{
    int me = (int)(intptr_t)arg;
    volatile uint64_t x = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        for (int i = 0; i < 20000; i++)
            x += (uint64_t)i;
        atomic_fetch_add_explicit(&work[me], 1, memory_order_relaxed);
#if defined(__SANITIZE_THREAD__)
        ito_yield();   /* TSan delivers the revoking signal only inside the C library */
#endif
    }
    return NULL;
}

static int peer(void)
{
    OK(ito_init(NULL));
    int n = ito_vproc_count();
    for (int k = 0; k < n && k < MAXV; k++) {
        ito_thread_t t;
        OK(ito_spawn(&t, NULL, compute, (void *)(intptr_t)k));
    }
    pid_t parent = getppid();
    while (getppid() == parent)   /* a failed test leaves none behind */
        ito_sleep_ns(100000000);
    return 0;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void nap_us(long us)
{
    struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static ito_alloc_info_t info(void)
{
    ito_alloc_info_t i;
    OK(ito_alloc_info(&i));
    return i;
}

static const char *self_path;
static int kills, n;
static bool unreaped;   /* SOAK_PEER_UNREAPED=1: reap each peer only once the survivor has recovered */
static uint64_t seed;
static double *recovery_ms;
static bool *shared_at_kill;
static ito_sem_t done;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void *rounds(void *arg)
{
    (void)arg;
    for (int k = 0; k < kills; k++) {
        uint64_t before[MAXV];
        for (int v = 0; v < n; v++)
            before[v] = atomic_load(&work[v]);
        pid_t pid;
        char *argv[] = { (char *)self_path, (char *)"peer", NULL };
        CHECK_EQ(posix_spawn(&pid, self_path, NULL, NULL, argv, environ), 0);
        uint64_t t_start = mono_ns();
        bool early = test_rand(&seed) % 4 == 0;
        if (early) {
            nap_us((long)(test_rand(&seed) % 15000));
        } else {
            /* Until the survivor has given the peer some CPUs. */
            while (info().held == n) {
                if (mono_ns() - t_start > 20000000000ull) {
                    fprintf(stderr, "peer_kill: round %d: the peer never got a CPU (held %d of %d, %d processes)\n",
                            k, info().held, n, info().processes);
                    kill(pid, SIGKILL);
                    abort();
                }
                nap_us(200);
            }
            nap_us((long)(test_rand(&seed) % 300000));
        }
        ito_alloc_info_t at = info();
        shared_at_kill[k] = at.held < n || at.processes > 1;
        if (getenv("SOAK_VERBOSE"))
            fprintf(stderr, "peer_kill: killing peer %d (%s) %.1f ms after its start\n", (int)pid,
                    early ? "early" : "while sharing", (mono_ns() - t_start) / 1e6);
        CHECK_EQ(kill(pid, SIGKILL), 0);
        uint64_t t_kill = mono_ns();
        if (!unreaped) {   /* reaped at once, as a parent does on SIGCHLD */
            int st;
            CHECK(waitpid(pid, &st, 0) == pid);
            CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        }
        for (;;) {
            ito_alloc_info_t i = info();
            if (i.held == n && i.processes == 1)
                break;
            if (mono_ns() - t_kill > 20000000000ull) {
                fprintf(stderr, "peer_kill: round %d: not recovered 20 s after the kill: held %d of %d, %d processes\n",
                        k, i.held, n, i.processes);
                abort();
            }
            nap_us(200);
        }
        recovery_ms[k] = (mono_ns() - t_kill) / 1e6;
        if (unreaped) {
            int st;
            CHECK(waitpid(pid, &st, 0) == pid);
            CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
        }
        printf("peer_kill: kill %d: %s, %.0f ms after its start (held %d of %d, %d processes); all CPUs back after "
               "%.1f ms\n", k + 1, early ? "early" : "while sharing", (t_kill - t_start) / 1e6, at.held, n,
               at.processes, recovery_ms[k]);
        /* The survivor's threads go on. */
        for (int v = 0; v < n; v++) {
            uint64_t t0 = mono_ns();
            while (atomic_load(&work[v]) < before[v] + 2) {
                if (mono_ns() - t0 > 20000000000ull) {
                    fprintf(stderr, "peer_kill: round %d: the survivor's thread %d stopped computing\n", k, v);
                    abort();
                }
                nap_us(1000);
            }
        }
    }
    OK(ito_sem_post(&done));
    return NULL;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    self_path = argv[0];
    if (argc > 1 && !strcmp(argv[1], "peer"))
        return peer();
    const char *ks = argc > 1 ? argv[1] : getenv("SOAK_KILLS");
    kills = ks ? atoi(ks) : 3;
    unreaped = getenv("SOAK_PEER_UNREAPED") && atoi(getenv("SOAK_PEER_UNREAPED"));
    CHECK(kills >= 1);
    const char *ss = getenv("SOAK_SEED");
    seed = ss ? strtoull(ss, NULL, 0) : (uint64_t)getpid();
    cpu_set_t set;
    CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
    if (CPU_COUNT(&set) < 2) {
        printf("peer_kill: %d CPU: nothing to share; skipped\n", CPU_COUNT(&set));
        return 77;
    }
    OK(ito_init(NULL));
    n = ito_vproc_count();
    CHECK(n <= MAXV);
    if (!info().enabled) {
        printf("peer_kill: not sharing processors (ITO_ALLOCATOR=0 or the table cannot be used); skipped\n");
        return 77;
    }
    uint64_t t0 = mono_ns();
    while (!(info().held == n && info().processes == 1)) {
        CHECK(mono_ns() - t0 < 20000000000ull);
        OK(ito_sleep_ns(1000000));
    }
    ito_thread_t t[MAXV];
    for (int k = 0; k < n; k++)
        OK(ito_spawn(&t[k], NULL, compute, (void *)(intptr_t)k));

    recovery_ms = calloc((size_t)kills, sizeof *recovery_ms);
    shared_at_kill = calloc((size_t)kills, sizeof *shared_at_kill);
    CHECK(recovery_ms && shared_at_kill);
    OK(ito_sem_init(&done, 0));
    pthread_t r;
    CHECK(pthread_create(&r, NULL, rounds, NULL) == 0);
    OK(ito_sem_wait(&done));
    CHECK(pthread_join(r, NULL) == 0);
    atomic_store(&stop, true);
    for (int k = 0; k < n; k++)
        OK(ito_join(t[k], NULL));

    int shared = 0;
    double *s = calloc((size_t)kills, sizeof *s);
    CHECK(s);
    for (int k = 0; k < kills; k++)
        if (shared_at_kill[k])
            s[shared++] = recovery_ms[k];
    qsort(s, (size_t)shared, sizeof *s, cmp_double);
    ito_stats_t st;
    OK(ito_stats_get(&st));
    printf("peer_kill: result=ok vprocs=%d kills=%d survived=%d shared_at_kill=%d recovery_ms_min=%.1f "
           "recovery_ms_median=%.1f recovery_ms_max=%.1f revocations=%llu\n",
           n, kills, kills, shared, shared ? s[0] : 0.0, shared ? s[shared / 2] : 0.0, shared ? s[shared - 1] : 0.0,
           (unsigned long long)st.revocations);
    free(s);
    free(recovery_ms);
    free(shared_at_kill);
    return 0;
}
