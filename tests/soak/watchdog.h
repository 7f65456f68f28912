/* SPDX-License-Identifier: MIT */
/* The soak's parts and its watchdog (tests/soak/soak.c, its only includer,
 * which includes common.h and the system headers first): what each part has
 * done, the samples of the process's kernel threads, and the POSIX thread
 * that fails the run when a part stalls (soak.c's essay says how). Static:
 * one program. */
#ifndef ITO_TESTS_SOAK_WATCHDOG_H
#define ITO_TESTS_SOAK_WATCHDOG_H

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

/* "soak: KIND (policy P): <message>", then the figures so far. */
static void report(const char *kind, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void report(const char *kind, const char *fmt, va_list ap)
{
    fprintf(stderr, "soak: %s (policy %s): ", kind, ito_policy_name());
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    figures(stderr);
    fflush(stderr);
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report("FAILED", fmt, ap);
    va_end(ap);
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
    report("STALL", fmt, ap);
    va_end(ap);
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

#endif
