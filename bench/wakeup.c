/* SPDX-License-Identifier: MIT */
/*
 * wakeup — how soon a thread made ready runs while other threads compute:
 * urgent threads under the priority policies, sleep timers and semaphore
 * wake-ups under every policy, round robin among equals (issue 22, item 1).
 *
 *   wakeup --mode urgent --path P --impl ito|pthread [--samples S] [--ms D] [--cpus C]
 *       Every CPU runs a least-urgent thread that computes and never calls
 *       ito (priority 0, preferred vproc i; POSIX threads: nice 19, pinned
 *       one per CPU). A most-urgent thread (ITO_PRIO_MAX; nice 0, unpinned)
 *       is made ready about every millisecond (0.5-1.5 ms after the previous
 *       sample was taken) by path P, and notes when it runs:
 *         sem      ito_sem_post from the computing thread of the first vproc
 *                  (an ito thread at priority 0, as prio --mode wake does)
 *         cond     ito_cond_signal from that thread (the mutex released first)
 *         timer    the urgent thread's own ito_sleep_ns (0.5-1.5 ms) ends;
 *                  the latency is the wake time minus the deadline
 *         io       ito_read of one byte on a pipe completes; a pthread that
 *                  ito did not create writes the byte
 *         foreign  ito_sem_post from a pthread that ito did not create
 *         spawn    the first vproc's computing thread spawns a (detached)
 *                  urgent thread; from the spawn to its first instruction
 *         raise    a thread at priority 0 that computes beside the others
 *                  (V + 1 of them on V vprocs: one always waits in a ready
 *                  queue after its slice) is given ito_set_priority(
 *                  ITO_PRIO_MAX) by the first vproc's computing thread while
 *                  it waits (its heartbeat is 200 us old); from the call to
 *                  the first instruction it runs after it
 *         raise-foreign  the same call from a pthread ito did not create
 *       The policy is ITO_POLICY's (the priority promise is prio's and
 *       prio-shared's). POSIX threads: sem, cond, timer (clock_nanosleep),
 *       io (read) and foreign (sem_post from a separate pthread).
 *       `samples`, `p50_us`, `p99_us`, `max_us`, `mean_us`; raise: `raced`
 *       (raises that found the thread running after all: not samples).
 *   wakeup --mode timer --impl ito|pthread [--busy B] [--busy-kind spin|yield|park]
 *          [--sleepers S] [--sleep-us U] [--ms D] [--cpus C]
 *       B busy threads (default 2 x CPUs; 0: none) at the default priority:
 *       `spin` compute and never call ito; `yield` compute 20 us, then
 *       ito_yield (sched_yield); `park` pass V+1 tokens round a ring of
 *       semaphores, computing 50 us with each (V: CPUs), so they park and
 *       wake all the time. S sleepers (default 4) sleep 0.5-1.5 x U us (U
 *       default 1000; ito_sleep_ns, clock_nanosleep) in a loop: lateness =
 *       wake time - deadline. `p50_us`, `p99_us`, `max_us`, `mean_us` of the
 *       lateness, `sleeps_per_s` (all sleepers) beside `ideal_sleeps_per_s`.
 *   wakeup --mode wake --impl ito|pthread [--busy B] [--busy-kind K] [--ms D] [--cpus C]
 *       A semaphore ping-pong pair (default priority) beside B busy threads
 *       (as in timer; default 2 x CPUs, warmed up for 30 ms so that they have
 *       run whole slices): `p50_us`, `p99_us`, `max_us` of the round trips,
 *       `round_trips_per_s`.
 *   wakeup --mode rr --impl ito|pthread [--threads N] [--prio P] [--ms D]
 *       N threads (default 4) of one priority (default ITO_PRIO_DEFAULT)
 *       compute on one vproc (POSIX threads: pinned to one CPU, nice 0) and
 *       note every gap of more than 50 us in their own progress: `max_gap_ms`,
 *       `p50_gap_ms`, `p99_gap_ms`, against `slice_ms` (ITO_TIMESLICE_US;
 *       POSIX threads: 0) and `bound_ms` = N x slice ("round robin within one
 *       slice per ready thread"); `min_share` / `max_share`: the least and
 *       most CPU time one thread got, as fractions of the whole;
 *       `cpu_timer_tick_ms`: how often the kernel looks at CPU-time timers
 *       (its tick; ito's slices are whole ticks), measured before the run.
 *
 * Every mode measures for D ms (default 500; urgent: or until S samples,
 * default 200) after a warm-up of 30 ms, then stops the busy threads. The end
 * does not depend on the scheduler delivering anything: a watchdog pthread
 * ends the window at its time limit (`time_limited`: true, when the sample
 * count was not reached; urgent: where no sample was taken yet, at the
 * first one or 2 s later), and a wake-up still outstanding then counts as a
 * sample of the time it had waited so far (`censored`: how many, lower
 * bounds; `censored_max_us`: the largest). A run that does not wind down
 * within 20 s of its time limit prints an error and exits 3; a POSIX-threads
 * urgent run whose nice-19 poster made no event (other processes kept the
 * CPUs) says `skipped`. ito runs add the counters' deltas: `switches`,
 * `steals`, `preemptions`, `displacements`.
 *
 * ito runs in an allocation domain of its own (ITO_ALLOC_DOMAIN=wakeup-PID
 * unless set): what is measured is the scheduler inside one process, and
 * other ito processes of the user would otherwise take its processors
 * (another session's tests on a shared machine left its vprocs without a
 * processor for seconds).
 */
#include "common.h"

#include <semaphore.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "cpu_timer_tick.h"
#include "wakeup_harness.h"

/* -------------------------------------------------------- mode urgent */

enum path { P_SEM, P_COND, P_TIMER, P_IO, P_FOREIGN, P_SPAWN, P_RAISE, P_RAISE_FOREIGN, NPATHS };
static const char *const path_name[NPATHS] = { "sem", "cond", "timer", "io", "foreign", "spawn", "raise",
                                               "raise-foreign" };
static int path;
static _Atomic uint64_t posted_at;      /* when the last event was made */
static _Atomic uint64_t next_fire;      /* the poster's next event (0: not planned yet) */
static uint64_t poster_rng = 777;
static xsem_t usem;
static int cflag, carmed;               /* cond: under imx / pmx */
static int pfd[2];
static atomic_long live_children;       /* spawn: urgent threads not yet ended */
static ito_attr_t child_attr;
static ito_thread_t target;             /* raise: the waiting thread */
enum { R_IDLE, R_RAISING, R_RAISED };
static atomic_int rstate;               /* raise: the raiser's progress (the target resets it) */
static _Atomic uint64_t t_heartbeat;    /* raise: when the target last ran */
enum { STALE_NS = 200000, GAP_NS = 50000 };   /* not running for 200 us: waiting; a gap: 50 us */

static void *child(void *arg)
{
    (void)arg;
    uint64_t t = bench_now_ns();
    if (!atomic_load(&stop)) {
        record(t - atomic_load(&posted_at));
        atomic_fetch_add(&taken, 1);
    }
    atomic_fetch_sub(&live_children, 1);
    return NULL;
}

/* Make the urgent thread ready by the path measured; false if it was not
 * waiting yet (cond: not in its wait; raise: running). */
static bool fire(void)
{
    switch (path) {
    case P_SEM:
    case P_FOREIGN:
        atomic_store(&posted_at, bench_now_ns());
        xsem_post(&usem);
        return true;
    case P_COND:
        xlock();
        if (!carmed) {
            xunlock();
            return false;
        }
        carmed = 0;
        cflag = 1;
        atomic_store(&posted_at, bench_now_ns());
        xunlock();
        xcond_signal();
        return true;
    case P_IO:
        atomic_store(&posted_at, bench_now_ns());
        if (write(pfd[1], "x", 1) != 1)
            bench_fail("write to the pipe: %s", strerror(errno));
        return true;
    case P_SPAWN:
        atomic_fetch_add(&live_children, 1);
        atomic_store(&posted_at, bench_now_ns());
        CHECK0(ito_spawn(NULL, &child_attr, child, NULL));
        return true;
    case P_RAISE:
    case P_RAISE_FOREIGN: {
        uint64_t now = bench_now_ns();
        if (atomic_load(&rstate) != R_IDLE || atomic_load(&t_heartbeat) + STALE_NS > now)
            return false;   /* it is running: try again soon */
        atomic_store(&posted_at, now);
        atomic_store(&rstate, R_RAISING);
        CHECK0(ito_set_priority(target, ITO_PRIO_MAX));
        atomic_store(&rstate, R_RAISED);
        return true;
    }
    }
    return false;
}

/* One look of the poster: the next event 0.5-1.5 ms after the previous one
 * was taken (never two outstanding). */
static void poster_step(void)
{
    uint64_t now = bench_now_ns();
    if (atomic_load_explicit(&stop, memory_order_relaxed) || now < t_first)
        return;
    if (atomic_load(&taken) < atomic_load(&posted)) {
        atomic_store(&next_fire, 0);
        return;
    }
    uint64_t nf = atomic_load(&next_fire);
    if (!nf) {
        atomic_store(&next_fire, rnd(&poster_rng, now + 500000, 1000000));
        return;
    }
    if (now < nf)
        return;
    if (fire()) {
        atomic_fetch_add(&posted, 1);
        atomic_store(&next_fire, 0);
    } else {
        atomic_store(&next_fire, now + 50000);   /* not waiting yet: look again in 50 us */
    }
}

static bool poster_is_spinner(void)
{
    return path == P_SEM || path == P_COND || path == P_SPAWN || path == P_RAISE;
}

/* A least-urgent thread that computes; the first one makes the events of the
 * paths whose poster is an ito thread. */
static void *spinner(void *arg)
{
    bool poster = (intptr_t)arg == 0 && poster_is_spinner();
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        for (volatile int k = 0; k < 200; k++)
            ;
        if (poster)
            poster_step();
    }
    return NULL;
}

/* The poster of the io, foreign and raise-foreign paths: a pthread that
 * sleeps until its next event. */
static void *foreign_poster(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        poster_step();
        uint64_t nf = atomic_load(&next_fire), now = bench_now_ns();
        if (!nf || nf > now)
            sleep_until(nf && nf - now < 2000000 ? nf : now + 100000);
    }
    return NULL;
}

/* The most urgent thread of the sem, cond, timer, io and foreign paths. */
static void *urgent(void *arg)
{
    (void)arg;
    uint64_t rng = 4242;
    atomic_fetch_add(&started, 1);
    for (;;) {
        uint64_t t, base = 0;
        switch (path) {
        case P_SEM:
        case P_FOREIGN:
            xsem_wait(&usem);
            t = bench_now_ns();
            base = atomic_load(&posted_at);
            break;
        case P_COND:
            xlock();
            carmed = 1;
            while (!cflag && !atomic_load(&stop))
                xcond_wait();
            t = bench_now_ns();
            cflag = carmed = 0;
            base = atomic_load(&posted_at);
            xunlock();
            break;
        case P_IO: {
            char c;
            ssize_t n = use_ito ? ito_read(pfd[0], &c, 1) : read(pfd[0], &c, 1);
            t = bench_now_ns();
            if (n != 1)
                bench_fail("read from the pipe: %zd (%s)", n, strerror(errno));
            base = atomic_load(&posted_at);
            break;
        }
        case P_TIMER:
            base = xsleep(rnd(&rng, 500000, 1000000));
            t = bench_now_ns();
            if (atomic_load(&stop)) {
                uint64_t ts = atomic_load(&t_stop);
                if (base < ts)
                    record_censored(ts - base);
            }
            break;
        default:
            return NULL;
        }
        if (atomic_load(&stop))
            break;
        if (path != P_TIMER || base >= t_first)
            record(t - base);
        atomic_fetch_add(&taken, 1);
    }
    return NULL;
}

/* raise: a thread at priority 0 that computes beside the V spinners on V
 * vprocs, so that it waits in a ready queue whenever a slice has sent it
 * there. Its heartbeat tells the raiser when it is not running; it notes
 * when it resumes (a gap in its own progress) and whether that was after
 * the raise. */
static void *raised(void *arg)
{
    (void)arg;
    atomic_fetch_add(&started, 1);
    uint64_t last = bench_now_ns(), resumed_at = last;
    atomic_store(&t_heartbeat, last);
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        for (volatile int k = 0; k < 20; k++)
            ;
        uint64_t t = bench_now_ns();
        if (t - last > GAP_NS)
            resumed_at = t;                        /* it had not run since `last` */
        last = t;
        atomic_store_explicit(&t_heartbeat, t, memory_order_relaxed);
        if (atomic_load(&rstate) == R_IDLE)
            continue;
        uint64_t r = resumed_at;                   /* raised: since when has it been running? */
        while (atomic_load(&rstate) != R_RAISED && !atomic_load(&stop))
            ito_yield();                           /* let the raiser finish its call */
        uint64_t base = atomic_load(&posted_at);
        if (atomic_load(&stop)) {                  /* the window has closed */
            uint64_t ts = atomic_load(&t_stop);
            if (r >= base && r <= ts) {            /* it ran before: a sample */
                record(r - base);
                atomic_fetch_add(&taken, 1);
            }                                      /* else main counts it as outstanding */
            break;
        }
        if (r < base) {                            /* it was running when raised (the check raced) */
            if (r >= t_first)
                atomic_fetch_add(&raced, 1);
        } else {
            record(r - base);
        }
        atomic_fetch_add(&taken, 1);
        CHECK0(ito_set_priority(ito_self(), 0));
        last = bench_now_ns();
        atomic_store(&rstate, R_IDLE);
    }
    return NULL;
}

static void mode_urgent(int argc, char **argv)
{
    const char *p = arg_str(argc, argv, "--path", "sem");
    path = -1;
    for (int i = 0; i < NPATHS; i++)
        if (!strcmp(p, path_name[i]))
            path = i;
    if (path < 0)
        bench_fail("--path must be sem, cond, timer, io, foreign, spawn, raise or raise-foreign");
    if (!use_ito && (path == P_SPAWN || path == P_RAISE || path == P_RAISE_FOREIGN))
        bench_fail("--path %s measures ito only", p);
    lat_cap = (long)arg_int(argc, argv, "--samples", 200);
    long ms = (long)arg_int(argc, argv, "--ms", 500);
    if (lat_cap < 1 || ms < 1)
        bench_fail("--samples and --ms must be positive");
    lat = xmalloc((size_t)lat_cap * sizeof *lat);
    may_extend = true;
    if (path == P_IO && pipe(pfd) != 0)
        bench_fail("pipe: %s", strerror(errno));
    if (use_ito)
        ito_start(ncpus);
    else
        restrict_to_cpus(ncpus);
    xsem_init(&done, 0);
    xsem_init(&usem, 0);
    if (path == P_SPAWN) {
        CHECK0(ito_attr_init(&child_attr));
        CHECK0(ito_attr_set_priority(&child_attr, ITO_PRIO_MAX));
        CHECK0(ito_attr_set_detached(&child_attr, true));
    }
    start_watchdog((uint64_t)ms);
    stats_begin();
    xthread_t u, *s = xmalloc((size_t)ncpus * sizeof *s);
    bool has_u = path != P_SPAWN;
    if (path == P_RAISE || path == P_RAISE_FOREIGN) {
        xspawn(&u, raised, NULL, 0, -1);
        target = u.i;
    } else if (has_u) {
        xspawn(&u, urgent, NULL, ITO_PRIO_MAX, -1);
    }
    if (has_u)
        wait_started(1);
    for (int i = 0; i < ncpus; i++)
        xspawn(&s[i], spinner, (void *)(intptr_t)i, 0, i);
    pthread_t fp;
    bool has_fp = !poster_is_spinner() && path != P_TIMER;
    if (has_fp)
        foreign_spawn(&fp, foreign_poster, NULL);

    xsem_wait(&done);
    /* wake whatever still waits; it sees `stop` and ends */
    if (path == P_SEM || path == P_FOREIGN)
        xsem_post(&usem);
    else if (path == P_COND) {
        xlock();
        xunlock();
        xcond_broadcast();
    } else if (path == P_IO && write(pfd[1], "x", 1) != 1)
        bench_fail("write to the pipe: %s", strerror(errno));
    if (has_u)
        xjoin(&u);
    /* POSIX threads: the nice-19 spinners are not joined (the process exits
     * after the output): beside other processes' nice-0 threads they may
     * take seconds to see `stop`. */
    for (int i = 0; i < ncpus && use_ito; i++)
        xjoin(&s[i]);
    if (has_fp)
        CHECK0(pthread_join(fp, NULL));
    while (atomic_load(&live_children) > 0)
        ito_sleep_ns(100000);
    /* an event made and not yet taken when the window closed */
    uint64_t ts = atomic_load(&t_stop);
    if (path != P_TIMER && atomic_load(&taken) < atomic_load(&posted) && ts > atomic_load(&posted_at))
        record_censored(ts - atomic_load(&posted_at));
    atomic_store(&all_done, 1);

    json_head("urgent");
    json_str("path", path_name[path]);
    json_int("events", path == P_TIMER ? atomic_load(&nlat) : atomic_load(&posted));
    if (path == P_RAISE || path == P_RAISE_FOREIGN)
        json_int("raced", atomic_load(&raced));
    json_percentiles();
    json_end();
}

/* ------------------------------------------------- busy threads (timer, wake) */

enum kind { K_SPIN, K_YIELD, K_PARK };
static int busy_kind, nbusy;
static xsem_t *ring;

static void *busy(void *arg)
{
    int i = (int)(intptr_t)arg;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        switch (busy_kind) {
        case K_SPIN:
            for (volatile int k = 0; k < 1000; k++)
                ;
            break;
        case K_YIELD:
            burn_us(20);
            xyield();
            break;
        case K_PARK:
            xsem_wait(&ring[i]);
            if (atomic_load(&stop))
                return NULL;
            burn_us(50);
            xsem_post(&ring[(i + 1) % nbusy]);
            break;
        }
    }
    return NULL;
}

static xthread_t *start_busy(int argc, char **argv)
{
    nbusy = (int)arg_int(argc, argv, "--busy", 2 * ncpus);
    const char *k = arg_str(argc, argv, "--busy-kind", "spin");
    if (!strcmp(k, "spin"))
        busy_kind = K_SPIN;
    else if (!strcmp(k, "yield"))
        busy_kind = K_YIELD;
    else if (!strcmp(k, "park"))
        busy_kind = K_PARK;
    else
        bench_fail("--busy-kind must be spin, yield or park");
    if (nbusy < 0)
        bench_fail("--busy must be 0 or more");
    xthread_t *b = xmalloc((size_t)(nbusy + 1) * sizeof *b);
    if (busy_kind == K_PARK) {
        ring = xmalloc((size_t)(nbusy + 1) * sizeof *ring);
        for (int i = 0; i < nbusy; i++)   /* V+1 tokens: every CPU busy, the rest park */
            xsem_init(&ring[i], i < ncpus + 1 ? 1 : 0);
    }
    for (int i = 0; i < nbusy; i++)
        xspawn(&b[i], busy, (void *)(intptr_t)i, ITO_PRIO_DEFAULT, -1);
    return b;
}

static void stop_busy(xthread_t *b)
{
    if (busy_kind == K_PARK)
        for (int i = 0; i < nbusy; i++)
            xsem_post(&ring[i]);
    for (int i = 0; i < nbusy; i++)
        xjoin(&b[i]);
}

static void json_busy(void)
{
    static const char *const kn[] = { "spin", "yield", "park" };
    json_int("busy", nbusy);
    json_str("busy_kind", nbusy ? kn[busy_kind] : "none");
}

/* --------------------------------------------------------- mode timer */

static uint64_t sleep_ns;

static void *sleeper(void *arg)
{
    uint64_t rng = 1000 + (uint64_t)(intptr_t)arg;
    atomic_fetch_add(&started, 1);
    while (!atomic_load(&stop)) {
        uint64_t base = xsleep(rnd(&rng, sleep_ns / 2, sleep_ns));
        uint64_t t = bench_now_ns();
        if (atomic_load(&stop)) {
            uint64_t ts = atomic_load(&t_stop);
            if (base < ts)
                record_censored(ts - base);
            break;
        }
        if (base >= t_first)
            record(t - base);
    }
    return NULL;
}

static void mode_timer(int argc, char **argv)
{
    int nsl = (int)arg_int(argc, argv, "--sleepers", 4);
    sleep_ns = (uint64_t)arg_int(argc, argv, "--sleep-us", 1000) * 1000u;
    long ms = (long)arg_int(argc, argv, "--ms", 500);
    lat_cap = (long)arg_int(argc, argv, "--samples", 1000000);
    if (nsl < 1 || sleep_ns < 2000 || ms < 1 || lat_cap < 1)
        bench_fail("--sleepers, --sleep-us (>= 2), --ms and --samples must be positive");
    lat = xmalloc((size_t)lat_cap * sizeof *lat);
    if (use_ito)
        ito_start(ncpus);
    else
        restrict_to_cpus(ncpus);
    xsem_init(&done, 0);
    start_watchdog((uint64_t)ms);
    stats_begin();
    xthread_t *s = xmalloc((size_t)nsl * sizeof *s);
    for (int i = 0; i < nsl; i++)
        xspawn(&s[i], sleeper, (void *)(intptr_t)i, ITO_PRIO_DEFAULT, -1);
    wait_started(nsl);
    xthread_t *b = start_busy(argc, argv);
    xsem_wait(&done);
    stop_busy(b);
    for (int i = 0; i < nsl; i++)
        xjoin(&s[i]);
    atomic_store(&all_done, 1);

    json_head("timer");
    json_busy();
    json_int("sleepers", nsl);
    json_num("sleep_us", (double)sleep_ns / 1e3);
    long n = json_percentiles();
    uint64_t ts = atomic_load(&t_stop);
    json_num("sleeps_per_s",
             ts > t_first ? (double)(n - atomic_load(&ncensored)) / ((double)(ts - t_first) / 1e9) : 0);
    json_num("ideal_sleeps_per_s", (double)nsl * 1e9 / (double)sleep_ns);
    json_end();
}

/* ---------------------------------------------------------- mode wake */

static xsem_t ping, pong;

static void *pinger(void *arg)
{
    (void)arg;
    atomic_fetch_add(&started, 1);
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        uint64_t t0 = bench_now_ns();
        xsem_post(&ping);
        xsem_wait(&pong);
        uint64_t t = bench_now_ns();
        if (atomic_load(&stop)) {
            uint64_t ts = atomic_load(&t_stop);
            if (t0 < ts)
                record_censored(ts - t0);
            break;
        }
        if (t0 >= t_first)
            record(t - t0);
    }
    return NULL;
}

static void *ponger(void *arg)
{
    (void)arg;
    atomic_fetch_add(&started, 1);
    for (;;) {
        xsem_wait(&ping);
        if (atomic_load(&stop))
            break;
        xsem_post(&pong);
    }
    return NULL;
}

static void mode_wake(int argc, char **argv)
{
    long ms = (long)arg_int(argc, argv, "--ms", 500);
    lat_cap = (long)arg_int(argc, argv, "--samples", 2000000);
    if (ms < 1 || lat_cap < 1)
        bench_fail("--ms and --samples must be positive");
    lat = xmalloc((size_t)lat_cap * sizeof *lat);
    if (use_ito)
        ito_start(ncpus);
    else
        restrict_to_cpus(ncpus);
    xsem_init(&done, 0);
    xsem_init(&ping, 0);
    xsem_init(&pong, 0);
    start_watchdog((uint64_t)ms);
    stats_begin();
    xthread_t a, c;
    xspawn(&c, ponger, NULL, ITO_PRIO_DEFAULT, -1);
    xspawn(&a, pinger, NULL, ITO_PRIO_DEFAULT, -1);
    wait_started(2);
    xthread_t *b = start_busy(argc, argv);
    xsem_wait(&done);
    xsem_post(&ping);
    xsem_post(&pong);
    xjoin(&a);
    xjoin(&c);
    stop_busy(b);
    atomic_store(&all_done, 1);

    json_head("wake");
    json_busy();
    long n = json_percentiles();
    uint64_t ts = atomic_load(&t_stop);
    json_num("round_trips_per_s",
             ts > t_first ? (double)(n - atomic_load(&ncensored)) / ((double)(ts - t_first) / 1e9) : 0);
    json_end();
}

/* ------------------------------------------------------------ mode rr */

static _Atomic uint64_t *cpu_ns;        /* per thread: time it ran in the window */

static void *rr_thread(void *arg)
{
    int i = (int)(intptr_t)arg;
    uint64_t last = bench_now_ns(), ran = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        for (volatile int k = 0; k < 20; k++)
            ;
        uint64_t t = bench_now_ns();
        if (t - last > GAP_NS) {                  /* it did not run from last to t */
            uint64_t ts = atomic_load(&t_stop), end = t;
            if (atomic_load(&stop) && ts && ts < t)
                end = ts;                         /* the window closed meanwhile: a lower bound */
            if (last >= t_first && end > last) {
                if (end < t)
                    record_censored(end - last);
                else
                    record(end - last);
            }
        } else if (last >= t_first) {
            ran += t - last;
        }
        last = t;
    }
    atomic_store(&cpu_ns[i], ran);
    return NULL;
}

static void mode_rr(int argc, char **argv)
{
    int n = (int)arg_int(argc, argv, "--threads", 4);
    int prio = (int)arg_int(argc, argv, "--prio", ITO_PRIO_DEFAULT);
    long ms = (long)arg_int(argc, argv, "--ms", 500);
    if (n < 2 || ms < 1)
        bench_fail("--threads must be at least 2, --ms positive");
    lat_cap = 1000000;
    lat = xmalloc((size_t)lat_cap * sizeof *lat);
    cpu_ns = xmalloc((size_t)n * sizeof *cpu_ns);
    double tick_ms = cpu_timer_tick_ms(50);
    ncpus = 1;
    if (use_ito)
        ito_start(1);
    else
        restrict_to_cpus(1);
    xsem_init(&done, 0);
    start_watchdog((uint64_t)ms);
    stats_begin();
    xthread_t *t = xmalloc((size_t)n * sizeof *t);
    for (int i = 0; i < n; i++)
        xspawn(&t[i], rr_thread, (void *)(intptr_t)i, use_ito ? prio : ITO_PRIO_DEFAULT, use_ito ? -1 : 0);
    xsem_wait(&done);
    for (int i = 0; i < n; i++)
        xjoin(&t[i]);
    atomic_store(&all_done, 1);

    double slice_ms = 0;
    if (use_ito) {
        const char *e = getenv("ITO_TIMESLICE_US");
        slice_ms = (e && *e ? atof(e) : 10000) / 1e3;
    }
    uint64_t tot = 0, lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < n; i++) {
        uint64_t c = atomic_load(&cpu_ns[i]);
        tot += c;
        lo = c < lo ? c : lo;
        hi = c > hi ? c : hi;
    }
    json_head("rr");
    json_int("threads", n);
    if (use_ito)
        json_int("prio", prio);
    long g = sort_samples();
    json_int("gaps", g);
    json_int("censored", atomic_load(&ncensored));
    json_num("censored_max_us", (double)atomic_load(&censored_max) / 1e3);
    json_num("max_gap_ms", g ? (double)lat[g - 1] / 1e6 : 0);
    json_num("p50_gap_ms", g ? (double)lat[g / 2] / 1e6 : 0);
    json_num("p99_gap_ms", g ? (double)lat[g * 99 / 100] / 1e6 : 0);
    json_num("slice_ms", slice_ms);
    json_num("cpu_timer_tick_ms", tick_ms);
    json_num("bound_ms", slice_ms * n);
    json_num("gap_over_bound", slice_ms > 0 && g > 0 ? (double)lat[g - 1] / 1e6 / (slice_ms * n) : 0);
    json_num("min_share", tot ? (double)lo / (double)tot : 0);
    json_num("max_share", tot ? (double)hi / (double)tot : 0);
    json_end();
}

int main(int argc, char **argv)
{
    static const char *const known[] = { "--impl", "--mode", "--path", "--samples", "--ms", "--cpus", "--vprocs",
                                         "--busy", "--busy-kind", "--sleepers", "--sleep-us", "--threads",
                                         "--prio", NULL };
    bench_exp = "wakeup";
    bench_impl = arg_str(argc, argv, "--impl", "ito");
    args_check(argc, argv, known);
    use_ito = strcmp(bench_impl, "ito") == 0;
    if (!use_ito && strcmp(bench_impl, "pthread") != 0)
        bench_fail("--impl must be ito or pthread");
    ncpus = arg_cpus(argc, argv);   /* reads the affinity mask before anything is pinned */
    if (use_ito && !getenv("ITO_ALLOC_DOMAIN")) {
        /* measured: the scheduler in one process; other ito processes of the
         * user (another session's tests) would take its processors */
        bench_own_domain("wakeup");
        atexit(bench_own_domain_remove);
    }
    const char *mode = arg_str(argc, argv, "--mode", "urgent");
    if (!strcmp(mode, "urgent"))
        mode_urgent(argc, argv);
    else if (!strcmp(mode, "timer"))
        mode_timer(argc, argv);
    else if (!strcmp(mode, "wake"))
        mode_wake(argc, argv);
    else if (!strcmp(mode, "rr"))
        mode_rr(argc, argv);
    else
        bench_fail("--mode must be urgent, timer, wake or rr");
    return 0;
}
