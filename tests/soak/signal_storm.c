/* SPDX-License-Identifier: MIT */
/* A signal storm over parked threads (issue 22, item 7). While ito threads
 * spend their time parked in
 *   - ito_read on pipes (4 readers; a feeder writes numbered records),
 *   - ito_sleep_ns (4 sleepers of 0.2-3 ms),
 *   - ito_cond_timedwait (4 waiters with deadlines 0.2-3 ms ahead; a giver
 *     hands out tokens under the mutex),
 *   - ito_accept (2 acceptors on a listening Unix socket; a connector
 *     connects and sends a number),
 *   - ito_sem_wait (2 waiters; a poster posts),
 * a POSIX thread sends 10,000 signals (1,000 in sanitizer builds): in turn
 * SIGUSR1 to the process (handler without SA_RESTART), a queued real-time
 * signal with a value to the process (SA_RESTART), and a real-time signal
 * with a value to one of the process's kernel threads that does not block it
 * (a vproc's activation, parked or running). Each one must reach its handler
 * exactly once (the sender waits for it, at most 10 s: a signal lost fails
 * the test), with its value. And nothing a parked thread waits for may be
 * lost or disturbed: ito.h and ito/io.h document no EINTR for any of these
 * calls, so none may return it; every record read in order; no sleep short;
 * a timed wait that times out only after its deadline; every token, every
 * connection and every post taken exactly once.
 *
 * Settings: SOAK_SIGNALS (argv[1] overrides) the number of signals. Prints
 * "signal_storm: result=ok signals=... ..." with the counts. */
#include <fcntl.h>
#include <pthread.h>
#include <dirent.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>

#include "common.h"

static atomic_bool stop;
static atomic_int eintr;   /* EINTR from any ito call: none is allowed */

static void fail(const char *what, int err)
{
    fprintf(stderr, "signal_storm: %s: %s\n", what, strerror(err));
    abort();
}

/* ---- the handlers ---- */

static int rtsig;
static _Atomic uint64_t got_usr1, got_rt, got_rt_sum;

static void on_usr1(int sig)
{
    (void)sig;
    atomic_fetch_add(&got_usr1, 1);
}

static void on_rt(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    atomic_fetch_add(&got_rt, 1);
    atomic_fetch_add(&got_rt_sum, (uint64_t)(unsigned)si->si_value.sival_int);
}

/* ---- pipes: a feeder, 4 readers ---- */

enum { NREAD = 4 };
static int pfd[NREAD][2];
static uint64_t fed[NREAD], read_recs[NREAD];

static void *feeder(void *arg)
{
    (void)arg;
    uint64_t seed = 1;
    while (!atomic_load(&stop)) {
        int i = (int)(test_rand(&seed) % NREAD);
        uint64_t rec = fed[i]++;
        if (ito_write(pfd[i][1], &rec, sizeof rec) != sizeof rec)
            fail("feeder: ito_write", test_errno());
        OK(ito_sleep_ns(200000 + test_rand(&seed) % 800000));
    }
    for (int i = 0; i < NREAD; i++)
        OK(ito_close(pfd[i][1]));
    return NULL;
}

static void *reader(void *arg)
{
    int i = (int)(intptr_t)arg;
    for (;;) {
        uint64_t rec;
        size_t got = 0;
        while (got < sizeof rec) {
            ssize_t r = ito_read(pfd[i][0], (char *)&rec + got, sizeof rec - got);
            if (r < 0) {
                if (test_errno() == EINTR)
                    atomic_fetch_add(&eintr, 1);
                fail("reader: ito_read", test_errno());
            }
            if (r == 0) {
                CHECK_EQ(got, 0);
                OK(ito_close(pfd[i][0]));
                return NULL;
            }
            got += (size_t)r;
        }
        if (rec != read_recs[i]) {
            fprintf(stderr, "signal_storm: reader %d got record %llu, expected %llu\n", i, (unsigned long long)rec,
                    (unsigned long long)read_recs[i]);
            abort();
        }
        read_recs[i]++;
    }
}

/* ---- sleepers ---- */

enum { NSLEEP = 4 };
static uint64_t slept[NSLEEP];

static void *sleeper(void *arg)
{
    int i = (int)(intptr_t)arg;
    uint64_t seed = (uint64_t)i + 100;
    while (!atomic_load(&stop)) {
        uint64_t want = 200000 + test_rand(&seed) % 2800000;
        uint64_t t0 = ito_now_ns();
        int e = ito_sleep_ns(want);
        uint64_t took = ito_now_ns() - t0;
        if (e != 0)
            fail("sleeper: ito_sleep_ns", e);
        if (took < want) {
            fprintf(stderr, "signal_storm: sleeper %d asked %llu ns, slept %llu ns\n", i, (unsigned long long)want,
                    (unsigned long long)took);
            abort();
        }
        slept[i]++;
    }
    return NULL;
}

/* ---- timed condition waits ---- */

enum { NCOND = 4 };
static ito_mutex_t cm = ITO_MUTEX_INIT;
static ito_cond_t cc = ITO_COND_INIT;
static uint64_t tokens, tokens_given, tokens_taken[NCOND], timeouts[NCOND];   /* cm (the arrays: their own) */
static bool giver_done;                                                       /* cm */

static void *giver(void *arg)
{
    (void)arg;
    uint64_t seed = 7;
    while (!atomic_load(&stop)) {
        OK(ito_mutex_lock(&cm));
        tokens++;
        tokens_given++;
        OK(ito_cond_signal(&cc));
        OK(ito_mutex_unlock(&cm));
        OK(ito_sleep_ns(300000 + test_rand(&seed) % 2000000));
    }
    OK(ito_mutex_lock(&cm));
    giver_done = true;
    OK(ito_cond_broadcast(&cc));
    OK(ito_mutex_unlock(&cm));
    return NULL;
}

static void *cond_waiter(void *arg)
{
    int i = (int)(intptr_t)arg;
    uint64_t seed = (uint64_t)i + 200;
    OK(ito_mutex_lock(&cm));
    for (;;) {
        if (tokens > 0) {
            tokens--;
            tokens_taken[i]++;
            continue;
        }
        if (giver_done)
            break;
        uint64_t dl = ito_now_ns() + 200000 + test_rand(&seed) % 2800000;
        struct timespec ts = { (time_t)(dl / 1000000000u), (long)(dl % 1000000000u) };
        int e = ito_cond_timedwait(&cc, &cm, &ts);
        if (e == ETIMEDOUT) {
            if (ito_now_ns() < dl) {
                fprintf(stderr, "signal_storm: a timed wait returned ETIMEDOUT %llu ns before its deadline\n",
                        (unsigned long long)(dl - ito_now_ns()));
                abort();
            }
            timeouts[i]++;
        } else if (e != 0) {
            if (e == EINTR)
                atomic_fetch_add(&eintr, 1);
            fail("ito_cond_timedwait", e);
        }
    }
    OK(ito_mutex_unlock(&cm));
    return NULL;
}

/* ---- accept ---- */

enum { NACC = 2 };
static int lfd;
static struct sockaddr_un addr;
static socklen_t addrlen;
static uint64_t connected, accepted[NACC];
static atomic_uchar *conn_seen;
static size_t conn_cap;
static atomic_ullong conn_total;

static void *acceptor(void *arg)
{
    int i = (int)(intptr_t)arg;
    for (;;) {
        int c = ito_accept(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (test_errno() == EINTR)
                atomic_fetch_add(&eintr, 1);
            fail("ito_accept", test_errno());
        }
        uint32_t id;
        size_t got = 0;
        while (got < sizeof id) {
            ssize_t r = ito_read(c, (char *)&id + got, sizeof id - got);
            if (r <= 0)
                fail("acceptor: ito_read", r < 0 ? test_errno() : EPIPE);
            got += (size_t)r;
        }
        OK(ito_close(c));
        if (id == UINT32_MAX)   /* the connector's goodbye, one per acceptor */
            return NULL;
        CHECK(id < conn_cap);
        if (atomic_exchange(&conn_seen[id], 1)) {
            fprintf(stderr, "signal_storm: connection %u accepted twice\n", id);
            abort();
        }
        accepted[i]++;
        atomic_fetch_add(&conn_total, 1);
    }
}

static void connect_send(uint32_t id)
{
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(s >= 0);
    if (ito_connect(s, (struct sockaddr *)&addr, addrlen) != 0)
        fail("ito_connect", test_errno());
    if (ito_write(s, &id, sizeof id) != sizeof id)
        fail("connector: ito_write", test_errno());
    OK(ito_close(s));
}

static void *connector(void *arg)
{
    (void)arg;
    uint64_t seed = 11;
    while (!atomic_load(&stop) && connected < conn_cap) {
        connect_send((uint32_t)connected++);
        OK(ito_sleep_ns(500000 + test_rand(&seed) % 2000000));
    }
    /* Every connection accepted before the goodbyes (the backlog is FIFO,
     * but an acceptor might take a goodbye while the other still reads). */
    while (atomic_load(&conn_total) < connected)
        OK(ito_sleep_ns(1000000));
    for (int i = 0; i < NACC; i++)
        connect_send(UINT32_MAX);
    return NULL;
}

/* ---- semaphore ---- */

enum { NSEMW = 2 };
static ito_sem_t sem;
static uint64_t sem_taken[NSEMW];
static atomic_bool sem_end;   /* poster: the last posts are out; a waiter that sees it leaves */

static void *sem_waiter(void *arg)
{
    int i = (int)(intptr_t)arg;
    for (;;) {
        int e = ito_sem_wait(&sem);
        if (e != 0) {
            if (e == EINTR)
                atomic_fetch_add(&eintr, 1);
            fail("ito_sem_wait", e);
        }
        sem_taken[i]++;
        if (atomic_load(&sem_end))
            return NULL;
    }
}

/* Posts until the end, then one more per waiter; returns how many. Every
 * post is taken once or still counted in the semaphore at the end. */
static void *poster(void *arg)
{
    (void)arg;
    uint64_t seed = 13;
    uint64_t n = 0;
    while (!atomic_load(&stop)) {
        OK(ito_sem_post(&sem));
        n++;
        OK(ito_sleep_ns(300000 + test_rand(&seed) % 2000000));
    }
    atomic_store(&sem_end, true);
    for (int i = 0; i < NSEMW; i++) {
        OK(ito_sem_post(&sem));
        n++;
    }
    return (void *)(uintptr_t)n;
}

/* ---- the sender ---- */

static long nsignals;
static uint64_t sent_usr1, sent_rt, sent_rt_sum, sent_directed;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Wait (at most 10 s) until *counter reaches want. */
static void await_handled(_Atomic uint64_t *counter, uint64_t want, const char *what, long k)
{
    uint64_t t0 = mono_ns();
    while (atomic_load(counter) < want) {
        if (mono_ns() - t0 > 10000000000ull) {
            fprintf(stderr, "signal_storm: signal %ld (%s) not handled after 10 s: lost (handled %llu of %llu)\n", k,
                    what, (unsigned long long)atomic_load(counter), (unsigned long long)want);
            abort();
        }
        struct timespec ts = { 0, 20000 };
        nanosleep(&ts, NULL);
    }
}

/* A kernel thread of this process that does not block rtsig (not the
 * sender itself), or 0: read from /proc/self/task/TID/status. */
static pid_t pick_target(uint64_t *seed, pid_t self)
{
    pid_t cand[256];
    int nc = 0;
    DIR *d = opendir("/proc/self/task");
    CHECK(d);
    struct dirent *e;
    while ((e = readdir(d)) && nc < 256) {
        pid_t tid = (pid_t)atoi(e->d_name);
        if (tid <= 0 || tid == self)
            continue;
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        unsigned long long blk = ~0ull;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "SigBlk: %llx", &blk) == 1)
                break;
        fclose(f);
        if (!(blk & (1ull << (rtsig - 1))))
            cand[nc++] = tid;
    }
    closedir(d);
    return nc ? cand[test_rand(seed) % (uint64_t)nc] : 0;
}

static void *sender(void *arg)
{
    (void)arg;
    pid_t me = (pid_t)syscall(SYS_gettid), pid = getpid();
    uint64_t seed = 17;
    for (long k = 0; k < nsignals; k++) {
        switch (k % 3) {
        case 0:   /* a standard signal for the process: one at a time, or two would merge */
            sent_usr1++;
            CHECK_EQ(kill(pid, SIGUSR1), 0);
            await_handled(&got_usr1, sent_usr1, "SIGUSR1 to the process", k);
            break;
        case 1: {   /* a queued real-time signal for the process; up to 8 in flight */
            union sigval v = { .sival_int = (int)(k & 0xffff) };
            for (;;) {
                if (sigqueue(pid, rtsig, v) == 0)
                    break;
                CHECK(errno == EAGAIN);   /* the queue is full: let it drain */
                sched_yield();
            }
            sent_rt++;
            sent_rt_sum += (unsigned)v.sival_int;
            if (sent_rt > 8)
                await_handled(&got_rt, sent_rt - 8, "real-time signal to the process", k);
            break;
        }
        case 2: {   /* a real-time signal for one kernel thread */
            pid_t tid = pick_target(&seed, me);
            if (!tid) {   /* none takes it now: to the process instead */
                tid = 0;
            }
            siginfo_t si;
            memset(&si, 0, sizeof si);
            si.si_signo = rtsig;
            si.si_code = SI_QUEUE;
            si.si_pid = pid;
            si.si_uid = getuid();
            si.si_value.sival_int = (int)(k & 0xffff);
            long r = tid ? syscall(SYS_rt_tgsigqueueinfo, pid, tid, rtsig, &si)
                         : syscall(SYS_rt_sigqueueinfo, pid, rtsig, &si);
            if (r != 0) {
                /* The thread ended (ESRCH) or its queue is full: count it as not sent. */
                CHECK(errno == ESRCH || errno == EAGAIN);
                k--;
                sched_yield();
                continue;
            }
            sent_rt++;
            sent_directed++;
            sent_rt_sum += (unsigned)si.si_value.sival_int;
            /* A thread-directed signal waits for that thread: one at a time. */
            await_handled(&got_rt, sent_rt, "real-time signal to a kernel thread", k);
            break;
        }
        }
    }
    await_handled(&got_rt, sent_rt, "the last real-time signals", nsignals);
    return NULL;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *ns = argc > 1 ? argv[1] : getenv("SOAK_SIGNALS");
    nsignals = ns ? atol(ns) : test_scaled(10000);
    CHECK(nsignals >= 1);
    rtsig = SIGRTMIN + 2;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;   /* no SA_RESTART */
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_rt;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(rtsig, &sa, NULL) == 0);

    ito_config_t c = ITO_CONFIG_INIT;
    c.vprocs = 2;
    OK(ito_init(&c));

    for (int i = 0; i < NREAD; i++)
        CHECK(pipe2(pfd[i], O_CLOEXEC) == 0);
    lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(lfd >= 0);
    addr.sun_family = AF_UNIX;
    int len = snprintf(addr.sun_path + 1, sizeof addr.sun_path - 1, "ito-signal-storm-%d", (int)getpid());
    addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len);
    CHECK(bind(lfd, (struct sockaddr *)&addr, addrlen) == 0);
    CHECK(listen(lfd, 64) == 0);
    conn_cap = 1 << 20;
    conn_seen = calloc(conn_cap, 1);
    CHECK(conn_seen);
    OK(ito_sem_init(&sem, 0));

    ito_thread_t t[64];
    int n = 0;
    for (int i = 0; i < NREAD; i++)
        OK(ito_spawn(&t[n++], NULL, reader, (void *)(intptr_t)i));
    for (int i = 0; i < NSLEEP; i++)
        OK(ito_spawn(&t[n++], NULL, sleeper, (void *)(intptr_t)i));
    for (int i = 0; i < NCOND; i++)
        OK(ito_spawn(&t[n++], NULL, cond_waiter, (void *)(intptr_t)i));
    for (int i = 0; i < NACC; i++)
        OK(ito_spawn(&t[n++], NULL, acceptor, (void *)(intptr_t)i));
    for (int i = 0; i < NSEMW; i++)
        OK(ito_spawn(&t[n++], NULL, sem_waiter, (void *)(intptr_t)i));
    OK(ito_spawn(&t[n++], NULL, feeder, NULL));
    OK(ito_spawn(&t[n++], NULL, giver, NULL));
    OK(ito_spawn(&t[n++], NULL, connector, NULL));
    ito_thread_t post_t;
    OK(ito_spawn(&post_t, NULL, poster, NULL));

    OK(ito_sleep_ns(20000000));   /* everyone parked at least once */
    uint64_t t0 = ito_now_ns();
    pthread_t st;
    {
        sigset_t all, old;
        sigfillset(&all);
        CHECK(pthread_sigmask(SIG_BLOCK, &all, &old) == 0);   /* the sender takes none itself */
        CHECK(pthread_create(&st, NULL, sender, NULL) == 0);
        CHECK(pthread_sigmask(SIG_SETMASK, &old, NULL) == 0);
    }
    /* Main parks too, in sleeps. */
    while (pthread_tryjoin_np(st, NULL) == EBUSY)
        OK(ito_sleep_ns(1000000));
    double secs = (ito_now_ns() - t0) / 1e9;
    atomic_store(&stop, true);
    for (int i = 0; i < n; i++)
        OK(ito_join(t[i], NULL));
    void *posted_n;
    OK(ito_join(post_t, &posted_n));

    CHECK_EQ(atomic_load(&eintr), 0);
    CHECK_EQ(atomic_load(&got_usr1), sent_usr1);
    CHECK_EQ(atomic_load(&got_rt), sent_rt);
    CHECK_EQ(atomic_load(&got_rt_sum), sent_rt_sum);
    CHECK_EQ((long)(sent_usr1 + sent_rt), nsignals);
    uint64_t recs = 0, sl = 0, taken = 0, tmo = 0, acc = 0, semt = 0;
    for (int i = 0; i < NREAD; i++) {
        CHECK_EQ(read_recs[i], fed[i]);
        recs += read_recs[i];
    }
    for (int i = 0; i < NSLEEP; i++)
        sl += slept[i];
    for (int i = 0; i < NCOND; i++) {
        taken += tokens_taken[i];
        tmo += timeouts[i];
    }
    CHECK_EQ(taken, tokens_given);
    CHECK_EQ(tokens, 0);
    for (int i = 0; i < NACC; i++)
        acc += accepted[i];
    CHECK_EQ(acc, connected);
    for (int i = 0; i < NSEMW; i++)
        semt += sem_taken[i];
    unsigned v;
    OK(ito_sem_get_value(&sem, &v));
    CHECK_EQ(semt + v, (uint64_t)(uintptr_t)posted_n);
    close(lfd);
    printf("signal_storm: result=ok signals=%ld usr1=%llu rt_process=%llu rt_thread=%llu seconds=%.2f eintr=0 "
           "records_read=%llu sleeps=%llu cond_tokens=%llu cond_timeouts=%llu accepts=%llu sem_posts=%llu\n",
           nsignals, (unsigned long long)sent_usr1, (unsigned long long)(sent_rt - sent_directed),
           (unsigned long long)sent_directed, secs, (unsigned long long)recs, (unsigned long long)sl,
           (unsigned long long)taken, (unsigned long long)tmo, (unsigned long long)acc, (unsigned long long)semt);
    return 0;
}
