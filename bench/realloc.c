/* SPDX-License-Identifier: MIT */
/*
 * realloc — how long the cross-process allocator takes to move a processor
 * ([SA §4.1]: "processor added" and "processor preempted").
 *
 *   realloc [--rounds R] [--phase-ms P]
 *
 * Process A computes on every CPU for the whole run (a thread per vproc,
 * each spinning). In each of R rounds a process B is started and, with a
 * thread per vproc too:
 *   arrive  B starts: its first hint (joining the table) asks for every
 *           CPU; A must give some up.
 *   idle    after P ms of computing, B's threads end and its main thread
 *           sleeps P ms: its vprocs declare themselves idle and B's want
 *           drops; A gets the processors back.
 *   more    B computes again for P ms: its want rises once a slice ends
 *           with a thread waiting; A gives processors up again.
 *   leave   B exits: A gets them back.
 * Times are the library's own, all CLOCK_MONOTONIC, compared across the two
 * processes: a hint's time is ito_alloc_info().hinted_ns, read in B by a
 * plain kernel thread that polls it every 0.5 ms (it has no vproc, so it
 * does not keep B busy; an arrival whose join it missed is not measured);
 * "leave" is timed just before B's exit.
 *   Taking processors from A (arrive, more): B's vprocs already run there,
 *   time-shared with A's, so a processor is B's once A no longer runs on
 *   it. A's threads log where they run (sched_getcpu intervals); the
 *   processors taken are those A ran on just before the hint and not at the
 *   end of the hint's window; the latency ends when A last ran on them (0:
 *   not again after the hint). A's VPROC_REMOVED (its vproc parked, on the
 *   processors A kept) is reported apart, as parked_*.
 *   Giving them to A (idle, leave): A's VPROC_ADDED, reported from the vproc
 *   running on the processor.
 * A hint after which nothing moved before the next hint counts as unmatched.
 *
 * Prints one JSON line: for each kind p50_us, p99_us, max_us and n, and
 * pooled over all kinds, p50_us / p90_us / p99_us / max_us / samples.
 * REALLOC_TRACE=1 prints every record and sample on stderr.
 */
#include "common.h"

#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

enum { K_ARRIVE, K_IDLE, K_MORE, K_LEAVE, K_KINDS };
static const char *const kind_name[K_KINDS] = { "arrive", "idle", "more", "leave" };

/* One thing that happened, in either process. */
enum rec_type { R_ADDED, R_REMOVED, R_HINT, R_LEAVE, R_PHASE, R_RAN };
struct rec {
    uint64_t t;
    int who;        /* 0: A; r + 1: B of round r */
    int type;
    int want;       /* R_HINT: the want posted */
    int first;      /* R_HINT: 1: B's join; 2: B's first hint seen, not its join */
    int cpu;        /* R_RAN: a thread of A ran on this CPU from t to end */
    uint64_t end;
};

#define MAX_RECS (1 << 16)
struct shared {
    _Atomic uint32_t n;
    _Atomic int stop;        /* A's threads and the poller stop */
    _Atomic int a_ready;     /* A holds its processors and computes */
    struct rec recs[MAX_RECS];
};
static struct shared *sh;
static int who;

static void log_rec(uint64_t t, int type, int want, int first)
{
    uint32_t i = atomic_fetch_add(&sh->n, 1);
    if (i < MAX_RECS)
        sh->recs[i] = (struct rec){ t, who, type, want, first, -1, 0 };
}

static void log_ran(int cpu, uint64_t from, uint64_t to)
{
    uint32_t i = atomic_fetch_add(&sh->n, 1);
    if (i < MAX_RECS)
        sh->recs[i] = (struct rec){ from, who, R_RAN, 0, 0, cpu, to };
}

/* Runs in ito's scheduler: records only. */
static void hook(const ito_event_t *e, void *arg)
{
    (void)arg;
    if (e->kind == ITO_EVENT_VPROC_ADDED)
        log_rec(e->time_ns, R_ADDED, 0, 0);
    else if (e->kind == ITO_EVENT_VPROC_REMOVED)
        log_rec(e->time_ns, R_REMOVED, 0, 0);
}

/* A's threads: compute, and log where they ran — an interval ends when the
 * thread moves to another CPU or was off the CPU for more than GAP_NS. */
#define GAP_NS 20000u
/* Where A ran just before a hint, and at the end of its window. */
#define LOOK_NS 10000000u
#define KEPT_NS 2000000u
static void *spin_until_stop(void *arg)
{
    (void)arg;
    volatile uint64_t x = 0;
    int cpu = -1;
    uint64_t from = 0, last = 0;
    while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
        for (int i = 0; i < 200; i++)
            x += (uint64_t)i;
        /* The CPU before and after the clock: a thread switched out in
         * between (by the kernel, or by ito onto another vproc) would pair
         * an old CPU with a new time. */
        int c = sched_getcpu();
        uint64_t now = bench_now_ns();
        if (sched_getcpu() != c)
            continue;
        if (c != cpu || now - last > GAP_NS) {
            if (cpu >= 0)
                log_ran(cpu, from, last);
            cpu = c;
            from = now;
        }
        last = now;
    }
    log_ran(cpu, from, last);
    return NULL;
}

static void *spin_until(void *arg)
{
    uint64_t end = *(uint64_t *)arg;
    volatile uint64_t x = 0;
    while (bench_now_ns() < end)
        for (int i = 0; i < 1000; i++)
            x += (uint64_t)i;
    return NULL;
}

static void compute(int threads, uint64_t ms)
{
    uint64_t end = bench_now_ns() + ms * 1000000u;
    ito_thread_t t[256];
    for (int i = 0; i < threads; i++)
        CHECK0(ito_spawn(&t[i], NULL, spin_until, &end));
    for (int i = 0; i < threads; i++)
        CHECK0(ito_join(t[i], NULL));
}

static _Atomic int poller_stop;

/* B's hints, as ito_alloc_info reports them. */
static void *poll_hints(void *arg)
{
    (void)arg;
    uint64_t seen = 0;
    while (!atomic_load(&poller_stop)) {
        ito_alloc_info_t a, b;
        CHECK0(ito_alloc_info(&a));
        CHECK0(ito_alloc_info(&b));
        if (a.hints == b.hints && a.hinted_ns == b.hinted_ns && a.hints != seen) {
            /* Two hints within a poll: the later is taken, with its own
             * time. The first seen is the join only if it is hint 1 (first
             * = 1); else the join was missed (first = 2: not measured). */
            log_rec(a.hinted_ns, R_HINT, a.want, seen == 0 ? (a.hints == 1 ? 1 : 2) : 0);
            seen = a.hints;
        }
        struct timespec ts = { 0, 500000 };
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static int process_a(void)
{
    who = 0;
    CHECK0(ito_event_hook_set(hook, NULL));
    ito_start(0);
    int n = ito_vproc_count();
    ito_alloc_info_t info;
    CHECK0(ito_alloc_info(&info));
    if (!info.enabled)
        bench_fail("the allocator is off in this process (ITO_ALLOCATOR=0, or more vprocs than CPUs)");
    ito_thread_t t[256];
    for (int i = 0; i < n; i++)
        CHECK0(ito_spawn(&t[i], NULL, spin_until_stop, NULL));
    atomic_store(&sh->a_ready, 1);
    for (int i = 0; i < n; i++)
        CHECK0(ito_join(t[i], NULL));
    return 0;
}

static int process_b(int round, int phase_ms)
{
    who = round + 1;
    CHECK0(ito_event_hook_set(hook, NULL));
    ito_start(0);
    int n = ito_vproc_count();
    pthread_t poller;
    CHECK0(pthread_create(&poller, NULL, poll_hints, NULL));
    compute(n, (uint64_t)phase_ms);
    log_rec(bench_now_ns(), R_PHASE, 0, 0);
    CHECK0(ito_sleep_ns((uint64_t)phase_ms * 1000000u));
    log_rec(bench_now_ns(), R_PHASE, 0, 0);
    compute(n, (uint64_t)phase_ms);
    atomic_store(&poller_stop, 1);
    CHECK0(pthread_join(poller, NULL));
    log_rec(bench_now_ns(), R_LEAVE, 0, 0);
    return 0;   /* exit leaves the table */
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_rec(const void *a, const void *b)
{
    const struct rec *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

static double pct(const uint64_t *v, int n, double p)
{
    if (n == 0)
        return 0;
    int i = (int)(p * (n - 1) + 0.5);
    return (double)v[i] / 1e3;
}

int main(int argc, char **argv)
{
    bench_exp = "realloc";
    bench_impl = "ito";
    int rounds = 30, phase_ms = 40;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--phase-ms") && i + 1 < argc)
            phase_ms = atoi(argv[++i]);
        else
            bench_fail("usage: realloc [--rounds R (1..1000)] [--phase-ms P (5..1000)]");
    }
    if (rounds < 1 || rounds > 1000 || phase_ms < 5 || phase_ms > 1000)
        bench_fail("usage: realloc [--rounds R (1..1000)] [--phase-ms P (5..1000)]");
    if (getenv("ITO_ALLOCATOR") && !strcmp(getenv("ITO_ALLOCATOR"), "0"))
        bench_fail("ITO_ALLOCATOR=0: there is no allocator to measure");
    int ncpu = cpus_usable();
    if (ncpu < 2)
        bench_fail("needs 2 CPUs or more (this process may use %d)", ncpu);
    bench_own_domain("realloc");
    sh = bench_shared(sizeof *sh);

    pid_t a = fork();
    if (a < 0)
        bench_fail("fork: %s", strerror(errno));
    if (a == 0)
        _exit(process_a());
    while (!atomic_load(&sh->a_ready))
        usleep(1000);
    usleep(50000);
    int failed = 0;
    for (int r = 0; r < rounds && !failed; r++) {
        pid_t b = fork();
        if (b < 0)
            bench_fail("fork: %s", strerror(errno));
        if (b == 0)
            exit(process_b(r, phase_ms));   /* exit, not _exit: it leaves the table at exit */
        int st;
        waitpid(b, &st, 0);
        failed = !WIFEXITED(st) || WEXITSTATUS(st) != 0;
        usleep((useconds_t)phase_ms * 1000u);   /* A takes everything back */
    }
    atomic_store(&sh->stop, 1);
    int st;
    waitpid(a, &st, 0);
    bench_own_domain_remove();
    if (failed)
        bench_fail("a process B failed");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        bench_fail("process A failed");
    uint32_t nrec = atomic_load(&sh->n);
    if (nrec > MAX_RECS)
        bench_fail("more than %d records", MAX_RECS);
    qsort(sh->recs, nrec, sizeof sh->recs[0], cmp_rec);
    if (getenv("REALLOC_TRACE"))
        fprintf(stderr, "t0 = %llu ns\n", (unsigned long long)sh->recs[0].t);
    if (getenv("REALLOC_TRACE"))
        for (uint32_t i = 0; i < nrec; i++)
            fprintf(stderr, "%12.3f ms  %s%-3d %s want=%d cpu=%d for %.3f ms\n",
                    (double)(sh->recs[i].t - sh->recs[0].t) / 1e6, sh->recs[i].who ? "B" : "A", sh->recs[i].who,
                    (const char *[]){ "ADDED", "REMOVED", "HINT", "LEAVE", "PHASE", "RAN" }[sh->recs[i].type], sh->recs[i].want, sh->recs[i].cpu,
                    sh->recs[i].end ? (double)(sh->recs[i].end - sh->recs[i].t) / 1e6 : 0.0);

    /* Match each of B's hints with what it caused, before B's next hint. */
    static uint64_t lat[K_KINDS][MAX_RECS], all[MAX_RECS], parked[MAX_RECS];
    int nlat[K_KINDS] = { 0 }, nall = 0, nparked = 0, unmatched = 0, missed = 0;
    static int prev_want[1001];
    for (uint32_t i = 0; i < nrec; i++) {
        const struct rec *h = &sh->recs[i];
        if (h->who == 0 || (h->type != R_HINT && h->type != R_LEAVE))
            continue;
        int kind;
        if (h->first == 2) {
            prev_want[h->who] = h->want;
            missed++;
            continue;
        }
        if (h->type == R_LEAVE)
            kind = K_LEAVE;
        else if (h->first)
            kind = K_ARRIVE;
        else if (h->want > prev_want[h->who])
            kind = K_MORE;
        else if (h->want < prev_want[h->who])
            kind = K_IDLE;
        else
            continue;   /* a priority change: none here */
        if (h->type == R_HINT)
            prev_want[h->who] = h->want;
        /* The window: until B's next hint (or the next B's first). */
        uint64_t w_end = UINT64_MAX, removed = 0, added_a = 0;
        for (uint32_t j = i + 1; j < nrec; j++) {
            const struct rec *e = &sh->recs[j];
            if (e->who != 0 && (e->type == R_HINT || e->type == R_LEAVE)) {
                w_end = e->t;
                break;
            }
            if (e->who == 0 && e->type == R_REMOVED && !removed)
                removed = e->t;
            if (e->who == 0 && e->type == R_ADDED && !added_a)
                added_a = e->t;
        }
        if (w_end == UINT64_MAX)
            w_end = sh->recs[nrec - 1].t;
        uint64_t done;
        if (kind == K_ARRIVE || kind == K_MORE) {
            /* Taking processors from A (B's vprocs already run on them,
             * time-shared): they are B's when A's threads last ran there —
             * on the CPUs A ran on just before the hint and no longer runs
             * on at the window's end. */
            uint64_t cpus_before = 0, cpus_kept = 0;
            for (uint32_t j = 0; j < nrec; j++) {
                const struct rec *e = &sh->recs[j];
                if (e->type != R_RAN || e->cpu < 0 || e->cpu >= 64)
                    continue;
                if (e->end + LOOK_NS >= h->t && e->t <= h->t)
                    cpus_before |= 1ull << e->cpu;
                if (e->end + KEPT_NS >= w_end && e->t <= w_end)
                    cpus_kept |= 1ull << e->cpu;
            }
            uint64_t given = cpus_before & ~cpus_kept;
            if (!given || !removed) {
                unmatched++;
                continue;
            }
            done = h->t;
            for (uint32_t j = 0; j < nrec; j++) {
                const struct rec *e = &sh->recs[j];
                if (e->type == R_RAN && e->cpu >= 0 && e->cpu < 64 && (given >> e->cpu & 1) && e->end > done &&
                    e->t < w_end)
                    done = e->end;
            }
            parked[nparked++] = removed > h->t ? removed - h->t : 0;
        } else {
            /* Giving them to A: its vproc runs there again. */
            if (!added_a) {
                unmatched++;
                continue;
            }
            done = added_a;
        }
        uint64_t d = done > h->t ? done - h->t : 0;
        if (getenv("REALLOC_TRACE"))
            fprintf(stderr, "sample %s at %.3f ms: %.3f ms\n", kind_name[kind], (double)(h->t - sh->recs[0].t) / 1e6,
                    (double)d / 1e6);
        lat[kind][nlat[kind]++] = d;
        all[nall++] = d;
    }
    json_begin("realloc", "ito");
    json_int("ncpu_usable", ncpu);
    json_int("cpus", ncpu);
    json_int("rounds", rounds);
    json_int("phase_ms", phase_ms);
    for (int k = 0; k < K_KINDS; k++) {
        qsort(lat[k], (size_t)nlat[k], sizeof(uint64_t), cmp_u64);
        char key[48];
        snprintf(key, sizeof key, "%s_n", kind_name[k]);
        json_int(key, nlat[k]);
        snprintf(key, sizeof key, "%s_p50_us", kind_name[k]);
        json_num(key, pct(lat[k], nlat[k], 0.5));
        snprintf(key, sizeof key, "%s_p99_us", kind_name[k]);
        json_num(key, pct(lat[k], nlat[k], 0.99));
        snprintf(key, sizeof key, "%s_max_us", kind_name[k]);
        json_num(key, pct(lat[k], nlat[k], 1.0));
    }
    qsort(all, (size_t)nall, sizeof(uint64_t), cmp_u64);
    if (nall == 0)
        bench_fail("no reallocation measured (%d hints unmatched)", unmatched);
    qsort(parked, (size_t)nparked, sizeof(uint64_t), cmp_u64);
    json_num("parked_p50_us", pct(parked, nparked, 0.5));
    json_num("parked_p99_us", pct(parked, nparked, 0.99));
    json_int("samples", nall);
    json_int("unmatched", unmatched);
    json_int("joins_missed", missed);
    json_num("p50_us", pct(all, nall, 0.5));
    json_num("p90_us", pct(all, nall, 0.9));
    json_num("p99_us", pct(all, nall, 0.99));
    json_num("max_us", pct(all, nall, 1.0));
    json_end();
    return 0;
}
