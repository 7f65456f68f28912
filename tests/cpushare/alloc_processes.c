/* SPDX-License-Identifier: MIT */
/* The allocator across real ito processes (src/cpushare/agent.c, cpushare/revoke.c).
 *
 * This process computes on every vproc; other ito processes (this program,
 * started again in another role) arrive and leave:
 *   - a second computing process: each gets half the processors; ours that
 *     lost its processor reports VPROC_REMOVED and its threads go on
 *     elsewhere (all of them keep making progress);
 *   - that process killed with SIGKILL: its processors come back (within
 *     the agent's liveness period; the time is printed);
 *   - an idle process: it keeps no processor of its own;
 *   - a computing process of lower priority: we keep everything; after we
 *     lower our own priority below its, we keep one, and its kernel thread
 *     runs as SCHED_IDLE (where the process may undo that: cpushare/weight.c)
 *     until our priority is raised again;
 *   - a process with ITO_ALLOCATOR=0 stays out.
 * All of them meet in the test's own domain (ITO_ALLOC_DOMAIN, set by ctest).
 * The waits are for conditions, with a generous cap; no time is asserted. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cpushare/table.h"
#include "alloc_wait.h"
#include "common.h"

#define MAXV 64
static _Atomic uint64_t progress[MAXV];
static atomic_bool stop;
static atomic_int removed, added;

static void *compute(void *arg)
{
    int me = (int)(intptr_t)arg;
    volatile uint64_t x = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        for (int i = 0; i < 20000; i++)
            x += (uint64_t)i;
        atomic_fetch_add_explicit(&progress[me], 1, memory_order_relaxed);
#if defined(__SANITIZE_THREAD__)
        ito_yield();   /* TSan delivers the revoking signal only inside the C library */
#endif
    }
    return NULL;
}

static void hook(const ito_event_t *ev, void *arg)
{
    if (ev->kind == ITO_EVENT_VPROC_REMOVED)
        atomic_fetch_add(&removed, 1);
    else if (ev->kind == ITO_EVENT_VPROC_ADDED)
        atomic_fetch_add(&added, 1);
}

static char *self_path;

/* This program in another role, with extra environment settings. */
static pid_t start(const char *role, const char *env)
{
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (env)
            putenv((char *)env);
        execl(self_path, self_path, role, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static void finish(pid_t pid)
{
    kill(pid, SIGKILL);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
}

/* What process pid wants, as the table says (-1: not listed). Read
 * without the lock, as ito-ctl does. */
static int table_want(pid_t pid)
{
    static const struct ito__table *t;
    if (!t) {
        char path[192];
        ito__table_path(getenv("ITO_ALLOC_DOMAIN"), path, sizeof path);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        CHECK(fd >= 0);
        t = mmap(NULL, sizeof *t, PROT_READ, MAP_SHARED, fd, 0);
        CHECK(t != MAP_FAILED);
        close(fd);
    }
    for (int i = 0; i < ITO__ALLOC_SLOTS; i++) {
        const volatile struct ito__table_slot *s = &t->slot[i];
        if (s->state == ITO__SLOT_USED && s->pid == pid)
            return s->want;
    }
    return -1;
}

/* Where each vproc runs its threads (-1: not seen), once it has made enough
 * picks to have looked at its pinning again. */
static _Atomic int cpu_of[MAXV];

static void *where(void *arg)
{
    for (int i = 0; i < 200; i++)
        ito_yield();
    int v = ito_vproc_self();
    if (v >= 0 && v < MAXV)
        atomic_store(&cpu_of[v], sched_getcpu());
    return NULL;
}

/* Each vproc on a CPU of its own (n vprocs, n CPUs). */
static void check_spread(void)
{
    int n = ito_vproc_count();
    for (int k = 0; k < MAXV; k++)
        atomic_store(&cpu_of[k], -1);
    ito_thread_t t[4 * MAXV];
    int m = 0;
    for (int k = 0; k < 4 * n && k < 4 * MAXV; k++) {
        ito_attr_t a;
        OK(ito_attr_init(&a));
        OK(ito_attr_set_vproc(&a, k % n));
        OK(ito_spawn(&t[m++], &a, where, NULL));
    }
    for (int k = 0; k < m; k++)
        OK(ito_join(t[k], NULL));
    for (int k = 0; k < n && k < MAXV; k++)
        for (int j = 0; j < k; j++)
            if (atomic_load(&cpu_of[k]) >= 0 && atomic_load(&cpu_of[j]) >= 0 &&
                atomic_load(&cpu_of[k]) == atomic_load(&cpu_of[j])) {
                fprintf(stderr, "vprocs %d and %d both run on CPU %d\n", j, k, atomic_load(&cpu_of[k]));
                abort();
            }
}

/* The kernel threads of process pid that run as SCHED_IDLE. */
static int idle_weight_threads(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    CHECK(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && sched_getscheduler(atoi(e->d_name)) == SCHED_IDLE)
            n++;
    closedir(d);
    return n;
}

/* May a thread of this process leave SCHED_IDLE again? Tried on a thread
 * of its own. */
static void *try_idle_and_back(void *arg)
{
    struct sched_param p = { 0 };
    *(bool *)arg = sched_setscheduler(0, SCHED_IDLE, &p) == 0 && sched_setscheduler(0, SCHED_OTHER, &p) == 0;
    return NULL;
}

static bool idle_reversible(void)
{
    bool ok = false;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, try_idle_and_back, &ok) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    return ok;
}

static int affinity_count(void)
{
    cpu_set_t set;
    CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
    return CPU_COUNT(&set);
}

static int child(const char *role)
{
    /* Forked by a carrier pinned to one CPU, maybe SCHED_IDLE: the child
     * starts with the process's affinity and policy (runtime/fork.c). */
    if (getenv("ALLOC_TEST_CPUS")) {   /* started by main below, not by ito_ctl.sh */
        CHECK_EQ(affinity_count(), atoi(getenv("ALLOC_TEST_CPUS")));
        CHECK_EQ(sched_getscheduler(0), SCHED_OTHER);
    }
    OK(ito_init(NULL));
    if (!strcmp(role, "out")) {
        ito_alloc_info_t i = info();
        check_spread();   /* outside the allocator, still a CPU per vproc */
        return i.enabled ? 1 : 0;   /* ITO_ALLOCATOR=0: not taking part */
    }
    if (!strcmp(role, "compute")) {
        int n = ito_vproc_count();
        for (int k = 0; k < n; k++) {
            ito_thread_t t;
            OK(ito_spawn(&t, NULL, compute, (void *)(intptr_t)k));
        }
    }
    /* "idle", or main's part in "compute"; a failed test leaves none behind */
    pid_t parent = getppid();
    while (getppid() == parent)
        ito_sleep_ns(1000000000ull);
    return 0;
}

int main(int argc, char **argv)
{
    self_path = argv[0];
    if (argc > 1)
        return child(argv[1]);
    setvbuf(stdout, NULL, _IOLBF, 0);
    char cpus[16];
    snprintf(cpus, sizeof cpus, "%d", affinity_count());
    setenv("ALLOC_TEST_CPUS", cpus, 1);
    OK(ito_event_hook_set(hook, NULL));
    OK(ito_init(NULL));
    int n = ito_vproc_count();
    ito_alloc_info_t i = info();
    CHECK(i.enabled);
    CHECK_EQ(i.vprocs, n);
    /* Joining the table was a hint, with its time. */
    CHECK(i.hints >= 1);
    CHECK(i.hinted_ns > 0 && i.hinted_ns <= ito_now_ns());
    AWAIT(info().held == n && info().processes == 1);
    check_spread();
    for (int k = 0; k < n && k < MAXV; k++) {
        ito_thread_t t;
        OK(ito_spawn(&t, NULL, compute, (void *)(intptr_t)k));
    }

    /* Out of the allocator on request. */
    pid_t out = start("out", "ITO_ALLOCATOR=0");
    int st;
    CHECK(waitpid(out, &st, 0) == out && WIFEXITED(st) && WEXITSTATUS(st) == 0);

    if (n < 2) {
        printf("alloc_processes: 1 vproc: nothing to divide; joined alone\n");
        atomic_store(&stop, true);
        return 0;
    }

    /* A second computing process: half each. */
    pid_t b = start("compute", NULL);
    double ms = AWAIT(info().held == n / 2 && info().processes == 2);
    printf("alloc_processes: a second process arrived: %d of %d vprocs kept after %.1f ms\n", info().held, n, ms);
    AWAIT(atomic_load(&removed) >= n - n / 2);
    ito_stats_t s;
    OK(ito_stats_get(&s));
    CHECK(s.revocations >= (uint64_t)(n - n / 2));
    /* Every thread goes on, also those of the vprocs that lost theirs. */
    uint64_t before[MAXV];
    for (int k = 0; k < n && k < MAXV; k++)
        before[k] = atomic_load(&progress[k]);
    for (int k = 0; k < n && k < MAXV; k++)
        AWAIT(atomic_load(&progress[k]) > before[k] + 2);

    /* Killed: its processors come back. */
    int added0 = atomic_load(&added), held0 = info().held;
    printf("alloc_processes: before the kill: %d of %d vprocs held\n", held0, n);
    finish(b);
    /* Its processors: the process count may lag, since a dead process
     * that had declared itself idle holds nothing anyone wants (agent.c:
     * liveness is checked by a process that wants more than it holds). */
    ms = AWAIT(info().held == n);
    printf("alloc_processes: the other process killed: all %d vprocs back after %.1f ms\n", n, ms);
    /* Each processor it held comes back as "processor added". (Under TSan
     * and a loaded machine it was seen to have given them back already.) */
    AWAIT(atomic_load(&added) >= added0 + (n - held0));

    /* An idle process keeps no processor of its own (it asks for every
     * vproc at its start, and declares them idle after the hysteresis). */
    pid_t c = start("idle", NULL);
    AWAIT(table_want(c) == 0);
    ms = AWAIT(info().held == n && info().processes == 2);
    printf("alloc_processes: an idle process beside us: all %d vprocs kept (%.1f ms)\n", n, ms);

    /* Lower priority: we keep everything. */
    pid_t d = start("compute", "ITO_PRIORITY=-5");
    AWAIT(info().processes == 3);
    for (int k = 0; k < 50; k++) {   /* 100 ms of looking */
        ito_alloc_info_t x = info();
        if (x.held != n) {
            fprintf(stderr, "the lower-priority process took a processor: held %d of %d, want %d\n", x.held, n,
                    x.want);
            abort();
        }
        ito_sleep_ns(2000000);
    }
    /* Its one vproc shares a processor of ours: its kernel thread yields it
     * (SCHED_IDLE), where the process may undo that (weight.c). */
    bool reversible = idle_reversible();
    if (reversible) {
        ms = AWAIT(idle_weight_threads(d) >= 1);
        printf("alloc_processes: the lower process's shared processor runs SCHED_IDLE after %.1f ms\n", ms);
    } else {
        CHECK_EQ(idle_weight_threads(d), 0);
        printf("alloc_processes: SCHED_IDLE cannot be undone here: the shared processor keeps its weight\n");
    }
    /* Ours compute no more: below the other, our one vproc gets little. */
    atomic_store(&stop, true);
    /* Now below it: one left. The change is a hint of its own. */
    ito_alloc_info_t h0 = info();
    uint64_t t0 = ito_now_ns();
    CHECK_EQ(ito_alloc_set_priority(-10), 0);
    AWAIT(info().hints > h0.hints);
    CHECK(info().hinted_ns >= t0);
    ms = AWAIT(info().held == 1);
    printf("alloc_processes: priority lowered below the other's: 1 vproc kept after %.1f ms\n", ms);
    CHECK_EQ(info().priority, -10);
    /* The processor we keep is the other's too: ours yields it (weight.c).
     * (Whether the other's still does depends on where the idle process's
     * floor lies.) */
    if (reversible) {
        ms = AWAIT(idle_weight_threads(getpid()) >= 1);
        printf("alloc_processes: now ours is SCHED_IDLE, after %.1f ms\n", ms);
    }
    CHECK_EQ(ito_alloc_set_priority(21), EINVAL);
    CHECK_EQ(ito_alloc_set_priority(-21), EINVAL);
    CHECK_EQ(ito_alloc_info(NULL), EINVAL);
    CHECK_EQ(ito_alloc_set_priority(0), 0);
    AWAIT(idle_weight_threads(getpid()) == 0);   /* above the other again: our weight given back */
    finish(c);
    finish(d);
    ms = AWAIT(info().held == n);
    atomic_store(&stop, true);
    printf("alloc_processes: alone again after %.1f ms; %d removals, %d additions reported\n", ms,
           atomic_load(&removed), atomic_load(&added));
    return 0;
}
