/* SPDX-License-Identifier: MIT */
/* wakeup's harness (bench/wakeup.c, its only includer, which includes
 * common.h and the system headers first): the run's settings and window,
 * the samples and their percentiles, threads and objects of either kind
 * (ito or POSIX), the end of a run (the watchdog that bounds it), and the
 * JSON head every mode writes. Static, like common.h: one program. */
#ifndef ITO_BENCH_WAKEUP_HARNESS_H
#define ITO_BENCH_WAKEUP_HARNESS_H

static bool use_ito;
static int ncpus;
static atomic_int stop;                 /* the threads wind down */
static atomic_int finishing;            /* finish() ran */
static _Atomic uint64_t t_stop;         /* when finish() ran (ns) */
static atomic_bool time_limited;              /* the watchdog ended the window */
static atomic_int all_done;             /* main has joined everything */
static uint64_t t_first;                /* samples count from here (after the warm-up) */
static uint64_t t_deadline;             /* the time limit */

enum { WARMUP_MS = 30, GRACE_S = 20, EXTEND_MS = 2000 };

/* ---------------------------------------------------------- samples */

static uint64_t *lat;
static long lat_cap;
static atomic_long nlat;
static atomic_long ncensored;
static _Atomic uint64_t censored_max;

static void finish(void);
static bool may_extend;                 /* urgent: the window may go on until the first sample */
static atomic_bool extended;            /* it does */
static atomic_long posted;              /* urgent: events made (written by the poster only) */
static atomic_long taken;               /* urgent: events taken (sampled or not) */
static atomic_long raced;               /* raise: the target turned out to be running */

static void record(uint64_t ns)
{
    long i = atomic_fetch_add(&nlat, 1);
    if (i < lat_cap)
        lat[i] = ns;
    if (i + 1 >= lat_cap || atomic_load(&extended))
        finish();
}

/* A wake-up still outstanding when the window closed: at least this long. */
static void record_censored(uint64_t ns)
{
    atomic_fetch_add(&ncensored, 1);
    uint64_t m = atomic_load(&censored_max);
    while (ns > m && !atomic_compare_exchange_weak(&censored_max, &m, ns))
        ;
    long i = atomic_fetch_add(&nlat, 1);
    if (i < lat_cap)
        lat[i] = ns;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The samples, sorted; their number. */
static long sort_samples(void)
{
    long n = atomic_load(&nlat);
    if (n > lat_cap)
        n = lat_cap;
    qsort(lat, (size_t)n, sizeof *lat, cmp_u64);
    return n;
}

/* samples, censored (and the largest, censored_max_us), p50_us, p99_us,
 * max_us, mean_us; the number of samples. */
static long json_percentiles(void)
{
    long n = sort_samples();
    json_int("samples", n);
    json_int("censored", atomic_load(&ncensored));
    json_num("censored_max_us", (double)atomic_load(&censored_max) / 1e3);
    if (n == 0 && !use_ito && may_extend) {
        /* the kernel gave the nice-19 poster no CPU time: not measurable now */
        json_begin("wakeup", bench_impl);
        json_bool("skipped", true);
        json_str("skip_reason", "no event made in the window: other processes kept the CPUs from the "
                                "nice-19 poster");
        json_int("samples", 0);
        json_end();
        exit(0);
    }
    if (n == 0)
        bench_fail("no sample in the %.3f s window (%ld events made, %ld found the thread running)",
                   (double)(atomic_load(&t_stop) - t_first) / 1e9, atomic_load(&posted), atomic_load(&raced));
    double sum = 0;
    for (long i = 0; i < n; i++)
        sum += (double)lat[i];
    json_num("p50_us", (double)lat[n / 2] / 1e3);
    json_num("p99_us", (double)lat[n * 99 / 100] / 1e3);
    json_num("max_us", (double)lat[n - 1] / 1e3);
    json_num("mean_us", sum / (double)n / 1e3);
    return n;
}

/* ------------------------------------------------ threads and objects */

/* A thread of either kind; POSIX threads get a nice value. */
typedef struct {
    ito_thread_t i;
    pthread_t p;
} xthread_t;

struct pstart {
    void *(*fn)(void *);
    void *arg;
    int nice;
};

static void *pstart(void *p)
{
    struct pstart s = *(struct pstart *)p;
    free(p);
    if (s.nice)
        setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), s.nice);
    return s.fn(s.arg);
}

/* ito: priority prio, preferred vproc vproc (-1: none). POSIX threads: nice
 * 19 for priority 0, else 0; pinned to the vproc-th CPU (-1: unpinned). */
static void xspawn(xthread_t *t, void *(*fn)(void *), void *arg, int prio, int vproc)
{
    if (use_ito) {
        ito_attr_t a;
        CHECK0(ito_attr_init(&a));
        CHECK0(ito_attr_set_priority(&a, prio));
        if (vproc >= 0)
            CHECK0(ito_attr_set_vproc(&a, vproc));
        CHECK0(ito_spawn(&t->i, &a, fn, arg));
    } else {
        struct pstart *s = xmalloc(sizeof *s);
        *s = (struct pstart){ fn, arg, prio == 0 ? 19 : 0 };
        pthread_attr_t a;
        if (vproc >= 0)
            attr_pinned(&a, cpu_nth(vproc));
        else
            CHECK0(pthread_attr_init(&a));
        CHECK0(pthread_create(&t->p, &a, pstart, s));
        pthread_attr_destroy(&a);
    }
}

static void xjoin(xthread_t *t)
{
    if (use_ito)
        CHECK0(ito_join(t->i, NULL));
    else
        CHECK0(pthread_join(t->p, NULL));
}

/* A kernel thread that ito did not create, allowed on the CPUs the run
 * uses (a pthread created by an ito thread would inherit its vproc's pin). */
static void foreign_spawn(pthread_t *t, void *(*fn)(void *), void *arg)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; i < ncpus; i++)
        CPU_SET(cpu_nth(i), &set);
    pthread_attr_t a;
    CHECK0(pthread_attr_init(&a));
    CHECK0(pthread_attr_setaffinity_np(&a, sizeof set, &set));
    CHECK0(pthread_create(t, &a, fn, arg));
    pthread_attr_destroy(&a);
}

typedef struct {
    ito_sem_t i;
    sem_t p;
} xsem_t;

static void xsem_init(xsem_t *s, unsigned v)
{
    if (use_ito)
        CHECK0(ito_sem_init(&s->i, v));
    else if (sem_init(&s->p, 0, v) != 0)
        bench_fail("sem_init: %s", strerror(errno));
}

static void xsem_post(xsem_t *s)
{
    if (use_ito)
        CHECK0(ito_sem_post(&s->i));
    else if (sem_post(&s->p) != 0)
        bench_fail("sem_post: %s", strerror(errno));
}

static void xsem_wait(xsem_t *s)
{
    if (use_ito)
        CHECK0(ito_sem_wait(&s->i));
    else
        while (sem_wait(&s->p) != 0)
            if (errno != EINTR)
                bench_fail("sem_wait: %s", strerror(errno));
}

static ito_mutex_t imx = ITO_MUTEX_INIT;
static ito_cond_t icv = ITO_COND_INIT;
static pthread_mutex_t pmx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pcv = PTHREAD_COND_INITIALIZER;

static void xlock(void) { CHECK0(use_ito ? ito_mutex_lock(&imx) : pthread_mutex_lock(&pmx)); }
static void xunlock(void) { CHECK0(use_ito ? ito_mutex_unlock(&imx) : pthread_mutex_unlock(&pmx)); }
static void xcond_wait(void) { CHECK0(use_ito ? ito_cond_wait(&icv, &imx) : pthread_cond_wait(&pcv, &pmx)); }
static void xcond_signal(void) { CHECK0(use_ito ? ito_cond_signal(&icv) : pthread_cond_signal(&pcv)); }
static void xcond_broadcast(void) { CHECK0(use_ito ? ito_cond_broadcast(&icv) : pthread_cond_broadcast(&pcv)); }

static void xyield(void)
{
    if (use_ito)
        ito_yield();
    else
        sched_yield();
}

/* Sleep for d ns from now; the deadline it aims at. */
static uint64_t xsleep(uint64_t d)
{
    uint64_t deadline = bench_now_ns() + d;
    if (use_ito) {
        CHECK0(ito_sleep_ns(d));
    } else {
        struct timespec ts = { (time_t)(deadline / 1000000000u), (long)(deadline % 1000000000u) };
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
    }
    return deadline;
}

static void sleep_until(uint64_t t)
{
    struct timespec ts = { (time_t)(t / 1000000000u), (long)(t % 1000000000u) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* Uniform in [lo, lo + span) ns. */
static uint64_t rnd(uint64_t *s, uint64_t lo, uint64_t span)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (*s >> 33) % span;
}

/* Compute for about us microseconds of wall time. */
static void burn_us(uint64_t us)
{
    uint64_t end = bench_now_ns() + us * 1000u;
    while (bench_now_ns() < end)
        for (volatile int k = 0; k < 50; k++)
            ;
}

/* -------------------------------------------------- the end of a run */

static xsem_t done;
static atomic_int started;              /* measuring threads that have begun */

/* Wait until n measuring threads have begun (before the busy threads start,
 * so that every one of them is asleep or waiting when the window closes). */
static void wait_started(int n)
{
    while (atomic_load(&started) < n) {
        if (use_ito)
            ito_sleep_ns(50000);
        else
            usleep(50);
    }
}

/* Close the window: stop the threads, wake main (once). */
static void finish(void)
{
    if (atomic_exchange(&finishing, 1))
        return;
    atomic_store(&t_stop, bench_now_ns());
    atomic_store(&stop, 1);
    xsem_post(&done);
}

/* urgent: no sample in the window (no event was made: its poster did not
 * run, a nice-19 POSIX thread on a CPU other processes keep busy or a starved
 * ito thread; or the one event made is still outstanding). */
static bool no_sample_yet(void)
{
    return may_extend && atomic_load(&nlat) == 0;
}

/* Ends the window at its time limit whatever the scheduler does (where no
 * sample was taken yet, at the first one or up to EXTEND_MS later), then
 * gives the run GRACE_S seconds to wind down. A pthread ito did not create. */
static void *watchdog(void *arg)
{
    (void)arg;
    sleep_until(t_deadline);
    if (no_sample_yet()) {
        atomic_store(&extended, true);   /* from now on the first sample ends the window */
        uint64_t end = t_deadline + EXTEND_MS * 1000000ull;
        if (atomic_load(&nlat) > 0)      /* one came in meanwhile */
            finish();
        for (uint64_t now; (now = bench_now_ns()) < end && !atomic_load(&finishing);)
            sleep_until(now + 1000000 < end ? now + 1000000 : end);
        t_deadline = end;
    }
    if (!atomic_load(&finishing)) {
        time_limited = true;
        finish();
    }
    sleep_until(t_deadline + (uint64_t)GRACE_S * 1000000000u);
    if (!atomic_load(&all_done)) {
        printf("{\"exp\":\"wakeup\",\"impl\":\"%s\",\"error\":\"did not end within %d s of its time limit "
               "(%ld samples taken)\"}\n", bench_impl, GRACE_S, atomic_load(&nlat));
        fflush(stdout);
        fprintf(stderr, "bench wakeup/%s: did not end within %d s of its time limit\n", bench_impl, GRACE_S);
        _exit(3);
    }
    return NULL;
}

static void start_watchdog(uint64_t window_ms)
{
    t_first = bench_now_ns() + WARMUP_MS * 1000000ull;
    t_deadline = t_first + window_ms * 1000000u;
    pthread_t w;
    foreign_spawn(&w, watchdog, NULL);
    CHECK0(pthread_detach(w));
}

static ito_stats_t st0;

static void stats_begin(void)
{
    if (use_ito)
        ito_stats_get(&st0);
}

static void json_head(const char *mode)
{
    json_begin("wakeup", bench_impl);
    json_str("mode", mode);
    if (use_ito) {
        json_common_ito();
        ito_stats_t s1;
        ito_stats_get(&s1);
        json_ito_stats(&st0, &s1);
        json_int("preemptions", (long long)(s1.preemptions - st0.preemptions));
        json_int("displacements", (long long)(s1.displacements - st0.displacements));
    } else {
        json_common_pthread(ncpus);
    }
    uint64_t ts = atomic_load(&t_stop);
    json_num("window_s", ts > t_first ? (double)(ts - t_first) / 1e9 : 0);
    json_bool("time_limited", time_limited);
    if (may_extend)
        json_bool("extended", extended);
}

#endif
