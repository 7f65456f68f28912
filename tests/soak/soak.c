/* SPDX-License-Identifier: MIT */
/* The soak (issue 22, item 7): a mixed workload at one priority, on 2 or
 * more vprocs, for a given time, with exact accounting and a watchdog.
 *
 *   queue     6 producers and 6 consumers on a bounded queue under a mutex
 *             and two condition variables. Every item is (producer, number);
 *             each producer's items must leave the queue in order, each
 *             exactly once (checked under the queue's mutex), and the sums
 *             of what was produced and consumed must agree.
 *   spawn     4 threads spawning 1-4 children and joining them: every child
 *             joined, each returning its argument + 1.
 *   sem       8 threads through a semaphore of 3 (a pool of 3): never more
 *             than 3 inside; the value is 3 again at the end.
 *   pingpong  two threads passing the turn through two semaphores: as many
 *             pongs as pings.
 *   sleep     4 sleepers of 50 us - 2 ms (ito_sleep_ns): none returns early
 *             (CLOCK_MONOTONIC, ito_now_ns); lateness is reported.
 *   pipe      4 writer/reader pairs over pipes (ito_write, ito_read) moving
 *             64-bit sequence numbers in random-sized pieces: every byte
 *             arrives in order, and the reader gets what the writer wrote.
 *   main      main's own sleep to the end of the run.
 *
 * A watchdog (a POSIX thread: it must not depend on ito's scheduling; it
 * runs SCHED_FIFO where it may) looks at every part's count each 20 ms. A
 * part fails the run (exit 1, naming it) when its count has not moved
 *   - starved: while the process ran the stall time's worth of CPU time on
 *     each vproc (CLOCK_PROCESS_CPUTIME_ID: 2 x 1.5 s on 2 vprocs in make
 *     test) — the process computed, the part did not; a machine busy with
 *     other work only makes this take longer in wall time;
 *   - stuck: for the stall time of wall time, less the time the machine held
 *     the process back — the time its kernel threads spent ready but
 *     waiting for a CPU (run_delay in /proc/self/task/TID/schedstat, summed
 *     over them, sampled every 100 ms), and any tick of the watchdog itself
 *     more than 250 ms late (the process stopped, the machine swamped). This
 *     finds a part that waits for what never comes, which uses no CPU time.
 *     SOAK_CREDIT=vproc credits the waiting divided by the vprocs, and finds
 *     more (a vproc that sleeps while another is kept off its CPU, see
 *     docs/reliability.md); SOAK_CREDIT=none credits nothing.
 * An end (from the stop to the last join) longer than SOAK_END_S fails the
 * run too. Before it exits the watchdog prints what the process and each of
 * its kernel threads got meanwhile, and asks ito for a thread dump
 * (ITO_DUMP_SIGNAL, SIGQUIT unless the environment names another). The
 * figures give each part's longest time without progress, both ways
 * (longest_gap_ms, less the credits; longest_cpu_gap_ms, CPU time per vproc;
 * to the watchdog's 20 ms), and the time credited (cpu_wait_ms,
 * watchdog_late_ms).
 *
 * Settings (argv[1] overrides SOAK_SECONDS):
 *   SOAK_SECONDS  how long the workload runs (3 s; 2 s in sanitizer builds)
 *   SOAK_STALL_S  how long a part may make no progress: 5 s, or half the
 *                 run when that is shorter (1.5 s in `make test`, 1 s in
 *                 its sanitizer builds)
 *   SOAK_END_S    how long the end may take, from the stop to the last
 *                 join (10 s): every part finishes its work in hand (the
 *                 consumers empty the queue, the readers their pipes)
 *   SOAK_CREDIT   all (the default), vproc or none: the credit of "stuck"
 *   SOAK_SEED     the random seed (the process ID)
 * At the end one line of figures per part (key=value), then one summary
 * line "soak: result=ok ..." that scripts/soak.sh reads. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include "common.h"

/* ---- parts and the watchdog ---- */

enum { P_QUEUE, P_SPAWN, P_SEM, P_PINGPONG, P_SLEEP, P_PIPE, P_MAIN, NPARTS };
static const char *const part_name[NPARTS] = { "queue", "spawn", "sem", "pingpong", "sleep", "pipe", "main" };

static _Atomic uint64_t progress[NPARTS];   /* what each part has done */
static atomic_int running[NPARTS];          /* its threads not yet returned */
static atomic_bool stop;                    /* main: the run is over, finish */
static atomic_int phase;                    /* 0 running, 1 ending (joins), 2 done */
static uint64_t stall_ns, end_ns;
static _Atomic uint64_t longest_gap_ns[NPARTS];   /* watchdog: the longest time each part made no progress */
static _Atomic uint64_t longest_cpu_gap_ns[NPARTS];   /* the same in the process's CPU time per vproc */
static _Atomic uint64_t unseen_ns;   /* watchdog: the time it woke late, counted as no one's stall */
enum { TICK_NS = 20 * 1000 * 1000 };   /* watchdog: how often it looks */
enum { LATE_NS = 250 * 1000 * 1000 };  /* a tick this long: the watchdog did not see it */
static bool watchdog_rt;                /* the watchdog runs SCHED_FIFO */
static _Atomic uint64_t waited_ns;      /* watchdog: time credited for waiting for a CPU */
static uint64_t credit_div = 1;         /* SOAK_CREDIT: 1 (all), the vprocs (vproc), or 0 (none) */
static int dump_sig;
static uint64_t seed0;   /* SOAK_SEED: mixed into every thread's own seed */

static void figures(FILE *f);

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "soak: FAILED (policy %s): ", ito_policy_name());
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    figures(stderr);
    fflush(stderr);
    abort();
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void stalled(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void stalled(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "soak: STALL (policy %s): ", ito_policy_name());
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    figures(stderr);
    fflush(stderr);
    if (dump_sig) {   /* where every thread is, then give the dump a second */
        kill(getpid(), dump_sig);
        struct timespec one = { 1, 0 };
        nanosleep(&one, NULL);
    }
    fflush(stderr);
    _exit(1);
}

/* What the process got from the machine: its CPU time, and per kernel
 * thread its CPU time and the time it spent ready but waiting for a CPU
 * (the first two fields of /proc/self/task/TID/schedstat); sampled every
 * 100 ms. */
enum { MAXTASKS = 128 };
struct task_sample {
    int tid;
    char state;   /* from /proc/self/task/TID/stat: R running or ready, S asleep... */
    uint64_t run_ns, wait_ns;
};
struct sample {
    uint64_t t, cpu_ns, wait_ns;   /* wait_ns: summed over the kernel threads */
    int ntasks;
    struct task_sample task[MAXTASKS];
};
enum { NSAMPLES = 256 };
static struct sample samples[NSAMPLES];
static int nsamples;   /* watchdog */
static int self_tid;   /* the watchdog's own kernel thread, left out */

static void take_sample(struct sample *x, uint64_t now)
{
    x->t = now;
    x->wait_ns = 0;
    x->ntasks = 0;
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    x->cpu_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], buf[512];
        int tid = atoi(e->d_name);
        if (tid == self_tid)
            continue;
        char state = '?';
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (f) {
            if (fgets(buf, sizeof buf, f) && strrchr(buf, ')'))
                state = strrchr(buf, ')')[2];
            fclose(f);
        }
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
        f = fopen(path, "r");
        if (!f)
            continue;
        unsigned long long run, wait;
        if (fscanf(f, "%llu %llu", &run, &wait) == 2) {
            x->wait_ns += wait;
            if (x->ntasks < MAXTASKS)
                x->task[x->ntasks++] = (struct task_sample){ tid, state, run, wait };
        }
        fclose(f);
    }
    closedir(d);
}

/* How long the process's kernel threads waited for a CPU between samples
 * a and b, summed over them. The kernel adds a wait to run_delay only when
 * it ends (the thread gets the CPU), so a thread ready (R) at both samples
 * that ran for less than the interval counts as waiting for the rest. */
static uint64_t waited_between(const struct sample *a, const struct sample *b)
{
    uint64_t sum = 0, dt = b->t - a->t;
    for (int i = 0; i < b->ntasks; i++) {
        const struct task_sample *y = &b->task[i], *x = NULL;
        for (int j = 0; j < a->ntasks && !x; j++)
            if (a->task[j].tid == y->tid)
                x = &a->task[j];
        if (!x)
            continue;   /* new: its waits so far are before it ran at all */
        uint64_t w = y->wait_ns - x->wait_ns, r = y->run_ns - x->run_ns;
        if (x->state == 'R' && y->state == 'R' && r + w < dt)
            w = dt - r;
        sum += w;
    }
    return sum;
}

/* The sample taken at or just before t (the oldest kept if none). */
static const struct sample *sample_at(uint64_t t)
{
    int n = nsamples < NSAMPLES ? nsamples : NSAMPLES;
    const struct sample *best = NULL;
    for (int k = 0; k < n; k++) {
        const struct sample *x = &samples[(nsamples - 1 - k) % NSAMPLES];
        best = x;
        if (x->t <= t)
            break;
    }
    return best;
}

/* What the process and each of its kernel threads got since t, for a
 * stall's message. */
static void describe_since(uint64_t t, FILE *f)
{
    const struct sample *a = sample_at(t);
    static struct sample b;
    take_sample(&b, mono_ns());
    if (!a)
        return;
    fprintf(f, "soak: in the last %.2f s the process ran %.2f s of CPU time on %d vprocs, and its kernel threads "
            "waited %.2f s in all for a CPU; per kernel thread (CPU time, waiting for a CPU, state then and now):\n",
            (b.t - a->t) / 1e9, (b.cpu_ns - a->cpu_ns) / 1e9, ito_vproc_count(), waited_between(a, &b) / 1e9);
    for (int i = 0; i < b.ntasks; i++) {
        const struct task_sample *y = &b.task[i], *x = NULL;
        for (int j = 0; j < a->ntasks && !x; j++)
            if (a->task[j].tid == y->tid)
                x = &a->task[j];
        char path[64], comm[32] = "?";
        snprintf(path, sizeof path, "/proc/self/task/%d/comm", y->tid);
        FILE *c = fopen(path, "r");
        if (c) {
            if (fgets(comm, sizeof comm, c))
                comm[strcspn(comm, "\n")] = 0;
            fclose(c);
        }
        uint64_t w = y->wait_ns - (x ? x->wait_ns : 0), r = y->run_ns - (x ? x->run_ns : 0);
        if (x && x->state == 'R' && y->state == 'R' && r + w < b.t - a->t)
            w = b.t - a->t - r;
        fprintf(f, "soak:   %d %-16s %7.3f s %7.3f s %c %c%s\n", y->tid, comm, r / 1e9, w / 1e9, x ? x->state : '-',
                y->state, x ? "" : " (new)");
    }
}

static uint64_t process_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *watchdog(void *arg)
{
    (void)arg;
    self_tid = (int)syscall(SYS_gettid);
    /* Real-time where allowed (root, or RLIMIT_RTPRIO), so that busy threads
     * do not keep it waiting; it runs for microseconds every 20 ms, and
     * reads /proc/self/task every 100 ms. */
    struct sched_param sp = { .sched_priority = 1 };
    watchdog_rt = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
    /* Per part: its count when last seen to move; since when (wall time,
     * and wall time less the credits); the process's CPU time then. */
    uint64_t last[NPARTS], since[NPARTS], moved[NPARTS], cpu_since[NPARTS];
    uint64_t now = mono_ns(), end_began = 0, ticks = 0, cpu = process_cpu_ns();
    uint64_t nv = (uint64_t)ito_vproc_count();
    take_sample(&samples[nsamples++], now);
    for (int p = 0; p < NPARTS; p++) {
        last[p] = atomic_load(&progress[p]);
        since[p] = moved[p] = now;
        cpu_since[p] = cpu;
    }
    for (;;) {
        struct timespec tick = { 0, TICK_NS };
        uint64_t before = mono_ns();
        nanosleep(&tick, NULL);
        now = mono_ns();
        /* Woken very late (the process stopped, the machine swamped by
         * other work): what happened while the watchdog itself did not run
         * was not seen, and the process's own threads were most likely kept
         * off the CPUs just as long: that time counts as no one's stall.
         * (Lateness of the usual sort, tens of milliseconds behind busy
         * threads, counts: the process's own threads may be what keeps the
         * watchdog waiting.) */
        uint64_t late = now - before > LATE_NS ? now - before - TICK_NS : 0;
        if (late) {
            atomic_fetch_add(&unseen_ns, late);
            for (int p = 0; p < NPARTS; p++)
                since[p] = since[p] + late < now ? since[p] + late : now;
            if (end_began)
                end_began = end_began + late < now ? end_began + late : now;
        }
        int ph = atomic_load(&phase);
        if (ph == 2)
            return NULL;
        if (ph == 1) {
            if (!end_began)
                end_began = now;
            if (now - end_began > end_ns) {
                char who[256] = "";
                for (int p = 0; p < NPARTS; p++)
                    if (atomic_load(&running[p]) > 0)
                        snprintf(who + strlen(who), sizeof who - strlen(who), " %s (%d threads)", part_name[p],
                                 atomic_load(&running[p]));
                describe_since(end_began, stderr);
                stalled("the end of the run took more than %.1f s; not finished:%s", end_ns / 1e9, who);
            }
            continue;
        }
        if (++ticks % 5 == 0) {
            /* Time the process's kernel threads spent waiting for a CPU
             * that the machine gave to other work is not the process's
             * stall: per vproc, it is credited to every part. */
            const struct sample *prev = &samples[(nsamples - 1) % NSAMPLES];
            struct sample *x = &samples[nsamples % NSAMPLES];
            take_sample(x, now);
            nsamples++;
            uint64_t credit = waited_between(prev, x) / (credit_div ? credit_div : 1);
            if (!credit_div)
                credit = 0;
            if (credit > x->t - prev->t)
                credit = x->t - prev->t;
            atomic_fetch_add(&waited_ns, credit);
            for (int p = 0; p < NPARTS; p++)
                since[p] = since[p] + credit < now ? since[p] + credit : now;
            if (end_began)
                end_began = end_began + credit < now ? end_began + credit : now;
        }
        cpu = process_cpu_ns();
        for (int p = 0; p < NPARTS; p++) {
            uint64_t v = atomic_load(&progress[p]);
            if (now - since[p] > atomic_load(&longest_gap_ns[p]))
                atomic_store(&longest_gap_ns[p], now - since[p]);
            if ((cpu - cpu_since[p]) / nv > atomic_load(&longest_cpu_gap_ns[p]))
                atomic_store(&longest_cpu_gap_ns[p], (cpu - cpu_since[p]) / nv);
            if (v != last[p]) {
                last[p] = v;
                since[p] = moved[p] = now;
                cpu_since[p] = cpu;
            } else if (cpu - cpu_since[p] > stall_ns * nv) {
                /* Starved: the process computed, the part did not move. */
                describe_since(moved[p], stderr);
                stalled("part '%s' made no progress while the process ran %.1f s of CPU time on its %d vprocs "
                        "(%.1f s of wall time; count %llu)", part_name[p], (cpu - cpu_since[p]) / 1e9, (int)nv,
                        (now - moved[p]) / 1e9, (unsigned long long)v);
            } else if (now - since[p] > stall_ns) {
                /* Stuck: no progress for the stall time, less the time the
                 * machine held the process back (a part that waits for
                 * nothing that will come uses no CPU time). */
                describe_since(moved[p], stderr);
                stalled("part '%s' made no progress for %.1f s (%.1f s less the time the machine held the process "
                        "back; count %llu)", part_name[p], (now - moved[p]) / 1e9, (now - since[p]) / 1e9,
                        (unsigned long long)v);
            }
        }
    }
}

static ito_thread_t spawn(void *(*fn)(void *), void *arg, const char *name)
{
    ito_attr_t a;
    OK(ito_attr_init(&a));
    OK(ito_attr_set_name(&a, name));
    ito_thread_t t;
    OK(ito_spawn(&t, &a, fn, arg));
    return t;
}

/* ---- queue: 6 producers, 6 consumers ---- */

enum { NPROD = 6, NCONS = 6, QCAP = 64 };
static ito_mutex_t qm = ITO_MUTEX_INIT;
static ito_cond_t q_not_full = ITO_COND_INIT, q_not_empty = ITO_COND_INIT;
static uint64_t qbuf[QCAP];
static int qhead, qcount;              /* qm */
static int producers_left = NPROD;     /* qm */
static uint64_t q_next[NPROD];         /* qm: the number each producer's next item must carry */
static uint64_t produced[NPROD], produced_sum[NPROD];   /* each producer's own */
static uint64_t consumed[NCONS], consumed_sum[NCONS];   /* each consumer's own */

static void *producer(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t seed = seed0 ^ ((uint64_t)id * 7919 + 1);
    uint64_t i = 0, sum = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        uint64_t item = ((uint64_t)id << 48) | i;
        OK(ito_mutex_lock(&qm));
        while (qcount == QCAP)
            OK(ito_cond_wait(&q_not_full, &qm));
        qbuf[(qhead + qcount) % QCAP] = item;
        qcount++;
        OK(ito_cond_signal(&q_not_empty));
        OK(ito_mutex_unlock(&qm));
        sum += item;
        i++;
        if (test_rand(&seed) % 64 == 0)
            ito_yield();
    }
    produced[id] = i;
    produced_sum[id] = sum;
    OK(ito_mutex_lock(&qm));
    if (--producers_left == 0)
        OK(ito_cond_broadcast(&q_not_empty));
    OK(ito_mutex_unlock(&qm));
    atomic_fetch_sub(&running[P_QUEUE], 1);
    return NULL;
}

static void *consumer(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t n = 0, sum = 0;
    for (;;) {
        OK(ito_mutex_lock(&qm));
        while (qcount == 0 && producers_left > 0)
            OK(ito_cond_wait(&q_not_empty, &qm));
        if (qcount == 0) {   /* every producer done and the queue empty */
            OK(ito_mutex_unlock(&qm));
            break;
        }
        uint64_t item = qbuf[qhead];
        qhead = (qhead + 1) % QCAP;
        qcount--;
        int p = (int)(item >> 48);
        uint64_t k = item & ((1ull << 48) - 1);
        if (p >= NPROD || k != q_next[p])
            fail("queue: consumer %d took item %llu of producer %d, expected item %llu: lost, duplicated or "
                 "out of order", id, (unsigned long long)k, p, p < NPROD ? (unsigned long long)q_next[p] : 0ull);
        q_next[p]++;
        OK(ito_cond_signal(&q_not_full));
        OK(ito_mutex_unlock(&qm));
        sum += item;
        n++;
        atomic_fetch_add_explicit(&progress[P_QUEUE], 1, memory_order_relaxed);
    }
    consumed[id] = n;
    consumed_sum[id] = sum;
    atomic_fetch_sub(&running[P_QUEUE], 1);
    return NULL;
}

/* ---- spawn: 4 threads spawning and joining ---- */

enum { NSPAWNERS = 4 };
static _Atomic uint64_t children_ran;
static uint64_t spawned[NSPAWNERS], joined[NSPAWNERS];

static void *child(void *arg)
{
    atomic_fetch_add_explicit(&children_ran, 1, memory_order_relaxed);
    if ((uintptr_t)arg % 5 == 0)
        ito_yield();
    return (void *)((uintptr_t)arg + 1);
}

static void *spawner(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t seed = seed0 ^ ((uint64_t)id * 104729 + 3);
    uint64_t s = 0, j = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        ito_thread_t t[4];
        int n = 1 + (int)(test_rand(&seed) % 4);
        for (int k = 0; k < n; k++) {
            OK(ito_spawn(&t[k], NULL, child, (void *)(uintptr_t)(s + k)));
        }
        for (int k = 0; k < n; k++) {
            void *r;
            OK(ito_join(t[k], &r));
            if ((uintptr_t)r != s + k + 1)
                fail("spawn: child %llu of spawner %d returned %llu", (unsigned long long)(s + k), id,
                     (unsigned long long)(uintptr_t)r);
            j++;
        }
        s += (uint64_t)n;
        atomic_fetch_add_explicit(&progress[P_SPAWN], (uint64_t)n, memory_order_relaxed);
    }
    spawned[id] = s;
    joined[id] = j;
    atomic_fetch_sub(&running[P_SPAWN], 1);
    return NULL;
}

/* ---- sem: 8 threads through a semaphore of 3 ---- */

enum { NSEM = 8, SEM_POOL = 3 };
static ito_sem_t pool;
static atomic_int inside, inside_max;
static uint64_t sem_ops[NSEM];

static void *sem_user(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t seed = seed0 ^ ((uint64_t)id * 15485863 + 5);
    uint64_t n = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        OK(ito_sem_wait(&pool));
        int in = atomic_fetch_add(&inside, 1) + 1;
        if (in > SEM_POOL)
            fail("sem: %d threads inside a semaphore of %d", in, SEM_POOL);
        int m = atomic_load(&inside_max);
        while (in > m && !atomic_compare_exchange_weak(&inside_max, &m, in))
            ;
        if (test_rand(&seed) % 4 == 0)
            ito_yield();   /* hold it a while */
        atomic_fetch_sub(&inside, 1);
        OK(ito_sem_post(&pool));
        n++;
        atomic_fetch_add_explicit(&progress[P_SEM], 1, memory_order_relaxed);
    }
    sem_ops[id] = n;
    atomic_fetch_sub(&running[P_SEM], 1);
    return NULL;
}

/* ---- pingpong: two threads, two semaphores ---- */

static ito_sem_t ping_sem, pong_sem;
static uint64_t pings, pongs;
static atomic_bool pong_quit;

static void *pinger(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        OK(ito_sem_post(&ping_sem));
        OK(ito_sem_wait(&pong_sem));
        pings++;
        atomic_fetch_add_explicit(&progress[P_PINGPONG], 1, memory_order_relaxed);
    }
    atomic_store(&pong_quit, true);
    OK(ito_sem_post(&ping_sem));   /* the last one: the ponger sees pong_quit */
    atomic_fetch_sub(&running[P_PINGPONG], 1);
    return NULL;
}

static void *ponger(void *arg)
{
    (void)arg;
    for (;;) {
        OK(ito_sem_wait(&ping_sem));
        if (atomic_load(&pong_quit))
            break;
        pongs++;
        OK(ito_sem_post(&pong_sem));
    }
    atomic_fetch_sub(&running[P_PINGPONG], 1);
    return NULL;
}

/* ---- sleep: 4 sleepers ---- */

enum { NSLEEP = 4 };
static uint64_t sleeps[NSLEEP], late_sum_ns[NSLEEP], late_max_ns[NSLEEP];

static void *sleeper(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t seed = seed0 ^ ((uint64_t)id * 32452843 + 7);
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        uint64_t want = 50000 + test_rand(&seed) % 1950000;   /* 50 us .. 2 ms */
        uint64_t t0 = mono_ns();
        OK(ito_sleep_ns(want));
        uint64_t got = mono_ns() - t0;
        if (got < want)
            fail("sleep: sleeper %d asked for %llu ns and slept %llu ns (short sleep)", id,
                 (unsigned long long)want, (unsigned long long)got);
        uint64_t late = got - want;
        late_sum_ns[id] += late;
        if (late > late_max_ns[id])
            late_max_ns[id] = late;
        sleeps[id]++;
        atomic_fetch_add_explicit(&progress[P_SLEEP], 1, memory_order_relaxed);
    }
    atomic_fetch_sub(&running[P_SLEEP], 1);
    return NULL;
}

/* ---- pipe: 4 writer/reader pairs ---- */

enum { NPIPES = 4, PIPE_CHUNK_WORDS = 512 };
struct pipe_pair {
    int fd[2];
    uint64_t written;    /* writer: bytes */
    uint64_t read;       /* reader: bytes */
    uint64_t reads, writes;
};
static struct pipe_pair pipes[NPIPES];

static void *pipe_writer(void *arg)
{
    struct pipe_pair *pp = arg;
    int id = (int)(pp - pipes);
    uint64_t seed = seed0 ^ ((uint64_t)id * 49979687 + 11);
    uint64_t words[PIPE_CHUNK_WORDS], seq = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        size_t n = 1 + test_rand(&seed) % PIPE_CHUNK_WORDS;
        for (size_t k = 0; k < n; k++)
            words[k] = seq++;
        const char *p = (const char *)words;
        size_t left = n * sizeof words[0];
        while (left > 0) {
            ssize_t w = ito_write(pp->fd[1], p, left);
            if (w <= 0)
                fail("pipe %d: ito_write returned %zd (%s)", id, w, w < 0 ? strerror(test_errno()) : "nothing");
            p += w;
            left -= (size_t)w;
            pp->written += (uint64_t)w;
            pp->writes++;
        }
    }
    if (ito_close(pp->fd[1]) != 0)
        fail("pipe %d: ito_close of the writing end: %s", id, strerror(test_errno()));
    atomic_fetch_sub(&running[P_PIPE], 1);
    return NULL;
}

static void *pipe_reader(void *arg)
{
    struct pipe_pair *pp = arg;
    int id = (int)(pp - pipes);
    uint64_t seed = seed0 ^ ((uint64_t)id * 86028121 + 13);
    unsigned char buf[4096];
    uint64_t off = 0;   /* bytes of the stream checked */
    for (;;) {
        size_t want = 1 + test_rand(&seed) % sizeof buf;
        ssize_t r = ito_read(pp->fd[0], buf, want);
        if (r < 0)
            fail("pipe %d: ito_read: %s", id, strerror(test_errno()));
        if (r == 0)
            break;
        pp->reads++;
        for (ssize_t k = 0; k < r; k++, off++) {
            uint64_t seq = off / 8;
            unsigned char expect = ((const unsigned char *)&seq)[off % 8];
            if (buf[k] != expect)
                fail("pipe %d: byte %llu of the stream is 0x%02x, expected 0x%02x (word %llu): a byte lost, "
                     "doubled or out of order", id, (unsigned long long)off, buf[k], expect,
                     (unsigned long long)seq);
        }
        atomic_fetch_add_explicit(&progress[P_PIPE], (uint64_t)r, memory_order_relaxed);
    }
    pp->read = off;
    OK(ito_close(pp->fd[0]));
    atomic_fetch_sub(&running[P_PIPE], 1);
    return NULL;
}

/* ---- figures and the end ---- */

static uint64_t sum_of(const uint64_t *a, int n)
{
    uint64_t s = 0;
    for (int i = 0; i < n; i++)
        s += a[i];
    return s;
}

static uint64_t min_of(const uint64_t *a, int n)
{
    uint64_t m = UINT64_MAX;
    for (int i = 0; i < n; i++)
        if (a[i] < m)
            m = a[i];
    return m;
}

static double seconds_run;

/* The running counts (the watchdog's view: figures(stderr) on a failure),
 * or, after the end, the exact ones. */
static void figures(FILE *f)
{
    fprintf(f, "soak: longest_gap_ms");
    for (int p = 0; p < NPARTS; p++)
        fprintf(f, " %s=%.0f", part_name[p], atomic_load(&longest_gap_ns[p]) / 1e6);
    fprintf(f, "\nsoak: longest_cpu_gap_ms");
    for (int p = 0; p < NPARTS; p++)
        fprintf(f, " %s=%.0f", part_name[p], atomic_load(&longest_cpu_gap_ns[p]) / 1e6);
    fprintf(f, "\n");
    if (atomic_load(&phase) < 2) {
        fprintf(f, "soak: counts so far:");
        for (int p = 0; p < NPARTS; p++)
            fprintf(f, " %s=%llu", part_name[p], (unsigned long long)atomic_load(&progress[p]));
        fprintf(f, "\n");
        return;
    }
    uint64_t items = sum_of(consumed, NCONS), sp = sum_of(spawned, NSPAWNERS), so = sum_of(sem_ops, NSEM);
    uint64_t sl = sum_of(sleeps, NSLEEP), pb = 0, pr = 0, pw = 0, late_max = 0;
    for (int i = 0; i < NPIPES; i++) {
        pb += pipes[i].read;
        pr += pipes[i].reads;
        pw += pipes[i].writes;
    }
    for (int i = 0; i < NSLEEP; i++)
        if (late_max_ns[i] > late_max)
            late_max = late_max_ns[i];
    fprintf(f, "soak: part=queue items=%llu producers=%d consumers=%d min_per_producer=%llu min_per_consumer=%llu\n",
            (unsigned long long)items, NPROD, NCONS, (unsigned long long)min_of(produced, NPROD),
            (unsigned long long)min_of(consumed, NCONS));
    fprintf(f, "soak: part=spawn joined=%llu spawners=%d min_per_spawner=%llu\n", (unsigned long long)sp, NSPAWNERS,
            (unsigned long long)min_of(joined, NSPAWNERS));
    fprintf(f, "soak: part=sem ops=%llu threads=%d pool=%d max_inside=%d min_per_thread=%llu\n",
            (unsigned long long)so, NSEM, SEM_POOL, atomic_load(&inside_max), (unsigned long long)min_of(sem_ops, NSEM));
    fprintf(f, "soak: part=pingpong round_trips=%llu\n", (unsigned long long)pings);
    fprintf(f, "soak: part=sleep sleeps=%llu sleepers=%d late_mean_us=%.1f late_max_us=%.1f min_per_sleeper=%llu\n",
            (unsigned long long)sl, NSLEEP, sl ? sum_of(late_sum_ns, NSLEEP) / 1e3 / (double)sl : 0.0,
            late_max / 1e3, (unsigned long long)min_of(sleeps, NSLEEP));
    fprintf(f, "soak: part=pipe bytes=%llu words=%llu pairs=%d reads=%llu writes=%llu\n", (unsigned long long)pb,
            (unsigned long long)(pb / 8), NPIPES, (unsigned long long)pr, (unsigned long long)pw);
    uint64_t gap = 0, cgap = 0;
    for (int p = 0; p < NPARTS; p++) {
        if (atomic_load(&longest_gap_ns[p]) > gap)
            gap = atomic_load(&longest_gap_ns[p]);
        if (atomic_load(&longest_cpu_gap_ns[p]) > cgap)
            cgap = atomic_load(&longest_cpu_gap_ns[p]);
    }
    fprintf(f,
            "soak: result=ok policy=%s vprocs=%d seed=%llu seconds=%.2f queue_items=%llu spawn_joins=%llu sem_ops=%llu "
            "pingpong=%llu sleeps=%llu sleep_late_max_us=%.0f pipe_words=%llu longest_gap_ms=%.0f longest_cpu_gap_ms=%.0f watchdog=%s watchdog_late_ms=%.0f cpu_wait_ms=%.0f\n",
            ito_policy_name(), ito_vproc_count(), (unsigned long long)seed0, seconds_run, (unsigned long long)items, (unsigned long long)sp,
            (unsigned long long)so, (unsigned long long)pings, (unsigned long long)sl, late_max / 1e3,
            (unsigned long long)(pb / 8), gap / 1e6, cgap / 1e6, watchdog_rt ? "fifo" : "other", atomic_load(&unseen_ns) / 1e6,
            atomic_load(&waited_ns) / 1e6);
}

static void check_accounting(void)
{
    for (int p = 0; p < NPROD; p++)
        if (q_next[p] != produced[p])
            fail("queue: producer %d made %llu items, %llu were consumed", p, (unsigned long long)produced[p],
                 (unsigned long long)q_next[p]);
    CHECK_EQ(sum_of(produced, NPROD), sum_of(consumed, NCONS));
    CHECK_EQ(sum_of(produced_sum, NPROD), sum_of(consumed_sum, NCONS));
    CHECK_EQ(qcount, 0);
    CHECK_EQ(producers_left, 0);

    uint64_t sp = sum_of(spawned, NSPAWNERS);
    CHECK_EQ(sp, sum_of(joined, NSPAWNERS));
    CHECK_EQ(sp, atomic_load(&children_ran));

    unsigned v;
    OK(ito_sem_get_value(&pool, &v));
    CHECK_EQ(v, SEM_POOL);
    CHECK_EQ(atomic_load(&inside), 0);
    CHECK(atomic_load(&inside_max) <= SEM_POOL);

    CHECK_EQ(pings, pongs);
    OK(ito_sem_get_value(&ping_sem, &v));
    CHECK_EQ(v, 0);
    OK(ito_sem_get_value(&pong_sem, &v));
    CHECK_EQ(v, 0);

    for (int i = 0; i < NPIPES; i++) {
        if (pipes[i].read != pipes[i].written)
            fail("pipe %d: %llu bytes written, %llu read", i, (unsigned long long)pipes[i].written,
                 (unsigned long long)pipes[i].read);
        CHECK_EQ(pipes[i].read % 8, 0);
    }
    for (int p = 0; p < NPARTS; p++)
        CHECK_EQ(atomic_load(&running[p]), 0);
    /* Every part did something (the watchdog saw to it while the run went
     * on; this also covers a run shorter than the stall time). */
    for (int p = 0; p < NPARTS; p++)
        if (atomic_load(&progress[p]) == 0)
            fail("part '%s' did nothing in the whole run", part_name[p]);
}

static double env_seconds(const char *name, double dflt)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    char *end;
    double v = strtod(s, &end);
    if (*end || !(v > 0)) {
        fprintf(stderr, "soak: %s=%s is not a positive number of seconds\n", name, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    double seconds = env_seconds("SOAK_SECONDS", TEST_SANITIZED ? 2 : 3);
    if (argc > 1) {
        char *end;
        seconds = strtod(argv[1], &end);
        if (*end || !(seconds > 0)) {
            fprintf(stderr, "usage: %s [SECONDS]\n", argv[0]);
            return 2;
        }
    }
    stall_ns = (uint64_t)(env_seconds("SOAK_STALL_S", seconds / 2 < 5 ? seconds / 2 : 5) * 1e9);
    end_ns = (uint64_t)(env_seconds("SOAK_END_S", 10) * 1e9);
    const char *cr = getenv("SOAK_CREDIT");
    if (cr && !strcmp(cr, "none"))
        credit_div = 0;
    else if (cr && !strcmp(cr, "vproc"))
        credit_div = 0;   /* set below, once the vprocs are known */
    else if (cr && strcmp(cr, "all")) {
        fprintf(stderr, "soak: SOAK_CREDIT=%s: all, vproc or none\n", cr);
        return 2;
    }
    const char *ss = getenv("SOAK_SEED");
    seed0 = ss && *ss ? strtoull(ss, NULL, 0) : (uint64_t)getpid();

    /* On a stall, a thread dump (runtime/dump_signal.c). */
    if (!getenv("ITO_DUMP_SIGNAL"))
        setenv("ITO_DUMP_SIGNAL", "SIGQUIT", 1);
    const char *ds = getenv("ITO_DUMP_SIGNAL");
    dump_sig = !strcmp(ds, "SIGQUIT") ? SIGQUIT : 0;

    ito_config_t c = ITO_CONFIG_INIT;
    if (!getenv("ITO_VPROCS")) {
        cpu_set_t set;
        CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
        if (CPU_COUNT(&set) < 2)
            c.vprocs = 2;   /* the workload is for 2 or more */
    }
    OK(ito_init(&c));
    CHECK(ito_vproc_count() >= 2 || getenv("ITO_VPROCS"));
    if (cr && !strcmp(cr, "vproc"))
        credit_div = (uint64_t)ito_vproc_count();

    pthread_t wd;
    {
        /* The watchdog must take no signal of ito's (it is not an ito thread). */
        sigset_t all, old;
        sigfillset(&all);
        CHECK(pthread_sigmask(SIG_BLOCK, &all, &old) == 0);
        CHECK(pthread_create(&wd, NULL, watchdog, NULL) == 0);
        CHECK(pthread_sigmask(SIG_SETMASK, &old, NULL) == 0);
    }

    OK(ito_sem_init(&pool, SEM_POOL));
    OK(ito_sem_init(&ping_sem, 0));
    OK(ito_sem_init(&pong_sem, 0));
    for (int i = 0; i < NPIPES; i++)
        CHECK(pipe2(pipes[i].fd, O_CLOEXEC) == 0);

    enum { NT = NPROD + NCONS + NSPAWNERS + NSEM + 2 + NSLEEP + 2 * NPIPES };
    ito_thread_t t[NT];
    int n = 0;
    atomic_store(&running[P_QUEUE], NPROD + NCONS);
    atomic_store(&running[P_SPAWN], NSPAWNERS);
    atomic_store(&running[P_SEM], NSEM);
    atomic_store(&running[P_PINGPONG], 2);
    atomic_store(&running[P_SLEEP], NSLEEP);
    atomic_store(&running[P_PIPE], 2 * NPIPES);
    atomic_store(&running[P_MAIN], 1);
    for (int i = 0; i < NCONS; i++)
        t[n++] = spawn(consumer, (void *)(intptr_t)i, "consumer");
    for (int i = 0; i < NPROD; i++)
        t[n++] = spawn(producer, (void *)(intptr_t)i, "producer");
    for (int i = 0; i < NSPAWNERS; i++)
        t[n++] = spawn(spawner, (void *)(intptr_t)i, "spawner");
    for (int i = 0; i < NSEM; i++)
        t[n++] = spawn(sem_user, (void *)(intptr_t)i, "sem");
    t[n++] = spawn(ponger, NULL, "ponger");
    t[n++] = spawn(pinger, NULL, "pinger");
    for (int i = 0; i < NSLEEP; i++)
        t[n++] = spawn(sleeper, (void *)(intptr_t)i, "sleeper");
    for (int i = 0; i < NPIPES; i++) {
        t[n++] = spawn(pipe_reader, &pipes[i], "pipe-reader");
        t[n++] = spawn(pipe_writer, &pipes[i], "pipe-writer");
    }
    CHECK_EQ(n, NT);

    /* Main's own part: sleep to the end in 50 ms steps. */
    uint64_t t0 = mono_ns(), end = t0 + (uint64_t)(seconds * 1e9);
    for (uint64_t now; (now = mono_ns()) < end;) {
        uint64_t d = end - now < 50000000 ? end - now : 50000000;
        OK(ito_sleep_ns(d));
        atomic_fetch_add(&progress[P_MAIN], 1);
    }
    seconds_run = (mono_ns() - t0) / 1e9;
    atomic_store(&phase, 1);
    atomic_store(&stop, true);
    atomic_fetch_sub(&running[P_MAIN], 1);
    for (int i = 0; i < n; i++)
        OK(ito_join(t[i], NULL));
    atomic_store(&phase, 2);
    CHECK(pthread_join(wd, NULL) == 0);

    check_accounting();
    figures(stdout);
    return 0;
}
