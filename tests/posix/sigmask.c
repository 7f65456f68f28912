/* SPDX-License-Identifier: MIT */
/* Per-thread signal masks and waiting for signals.
 *
 * "The pthread_sigmask() function shall examine or change (or both) the
 * calling thread's signal mask" (pthread_sigmask); "The signal mask shall be
 * inherited from the creating thread. The set of signals pending for the new
 * thread shall be empty." (pthread_create). A signal sent to a thread that
 * blocks it stays pending on that thread (sigpending shows it there, not on
 * the other threads) until it unblocks it, and then "at least one of those
 * signals shall be delivered before the call to pthread_sigmask() returns".
 * sigwait, sigwaitinfo and sigtimedwait take a pending signal of the set
 * without running its handler (pthread_sigqueue's value and SI_QUEUE come
 * with sigwaitinfo; real-time signals come lowest number first, each number
 * in the order sent), and a signal sent to one thread is not taken by
 * another thread waiting for it; sigsuspend waits with a mask of its own and
 * puts the old one back. "Signals generated for the process shall be
 * delivered to exactly one of those threads within the process which is in a
 * call to a sigwait() function selecting that signal or has not blocked
 * delivery of the signal" (2.4.1): a handler never runs on a thread that
 * blocks its signal. Also:
 * SIGKILL and SIGSTOP cannot be blocked and that is no error; an invalid how
 * is EINVAL, but "If set is a null pointer, the value of the argument how is
 * not significant"; glibc's sigprocmask acts on the calling thread (POSIX
 * leaves it unspecified with threads); pthread_attr_setsigmask_np (glibc >=
 * 2.32) gives a new thread its mask from its first instruction.
 *
 * No case is left out for a glibc deviation. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "conform.h"

#define MS 1000000ull
#define RT(n) (SIGRTMIN + (n))

static _Atomic pthread_t handled_on; /* pthread_self() in the last handler */
static atomic_int handled[NSIG];     /* handler runs, per signal */
static atomic_int wrong;             /* handler runs on a thread that blocks the signal */
static atomic_int reached;
static atomic_bool stop;
static struct sync step;

/* The signals of this program that each thread says it blocks: always a
 * subset of what it really blocks (mask_bits keeps it so), so that a handler
 * finding its signal here ran where it must not. */
#define B_USR1 1u
#define B_USR2 2u
#define B_RT2 4u
static _Thread_local volatile sig_atomic_t says_blocked;

static unsigned bit_of(int sig)
{
    return sig == SIGUSR1 ? B_USR1 : sig == SIGUSR2 ? B_USR2 : sig == RT(2) ? B_RT2 : 0;
}

static void on_sig(int sig)
{
    atomic_store(&handled_on, pthread_self());
    if ((unsigned)says_blocked & bit_of(sig))
        atomic_fetch_add(&wrong, 1);
    atomic_fetch_add(&handled[sig], 1);
}

static void install(int sig)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sig;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(sig, &sa, NULL), 0);
}

static sigset_t sigs_(const int *list)
{
    sigset_t s;
    sigemptyset(&s);
    for (; *list; list++)
        CHECK_EQ(sigaddset(&s, *list), 0);
    return s;
}
#define SIGS(...) sigs_((const int[]){ __VA_ARGS__, 0 })

/* pthread_sigmask(how) with the signals named by bits, keeping says_blocked
 * a subset of the mask before, during and after the change. */
static void mask_bits(int how, unsigned bits)
{
    unsigned was = (unsigned)says_blocked;
    unsigned now = how == SIG_BLOCK ? was | bits : how == SIG_UNBLOCK ? was & ~bits : bits;
    says_blocked = (sig_atomic_t)(was & now);
    atomic_signal_fence(memory_order_seq_cst);
    const int sig[3] = { SIGUSR1, SIGUSR2, RT(2) }; /* B_USR1, B_USR2, B_RT2 */
    sigset_t s = SIGS(0);
    for (int i = 0; i < 3; i++)
        if (bits & 1u << i)
            sigaddset(&s, sig[i]);
    OK(pthread_sigmask(how, &s, NULL));
    atomic_signal_fence(memory_order_seq_cst);
    says_blocked = (sig_atomic_t)now;
}

/* Does the calling thread block sig? Is sig pending for it? */
static int blocked(int sig)
{
    sigset_t m;
    OK(pthread_sigmask(SIG_BLOCK, NULL, &m));
    return sigismember(&m, sig);
}

static int pending(int sig)
{
    sigset_t p;
    CHECK_EQ(sigpending(&p), 0);
    return sigismember(&p, sig);
}

static void reset(void)
{
    for (int i = 0; i < NSIG; i++)
        atomic_store(&handled[i], 0);
    atomic_store(&wrong, 0);
    atomic_store(&reached, 0);
    atomic_store(&stop, false);
    atomic_store(&handled_on, (pthread_t)0);
    step.value = 0; /* no thread uses it between cases */
}

/* Computes (and now and then yields or sleeps) until `stop`, blocking what
 * it was created blocking. */
static void *computes(void *arg)
{
    mask_bits(SIG_BLOCK, (unsigned)(uintptr_t)arg); /* already blocked: says so */
    atomic_fetch_add(&reached, 1);
    volatile unsigned long x = 0;
    for (unsigned long n = 0; !atomic_load(&stop); n++) {
        x += n;
        if (n % 8192 == 0)
            conform_pause_us(50);
        else if (n % 4096 == 0)
            sched_yield();
    }
    return NULL;
}

/* ------------------------------------------------------------- cases */

static void *inherits_then_changes(void *arg)
{
    CHECK(blocked(SIGUSR1) && !blocked(SIGUSR2)); /* inherited */
    CHECK_EQ(pending(SIGUSR1), 0);                /* main's pending signal is not */
    sigset_t s = SIGS(SIGUSR1);
    OK(pthread_sigmask(SIG_UNBLOCK, &s, NULL));
    s = SIGS(SIGUSR2);
    OK(pthread_sigmask(SIG_BLOCK, &s, NULL));
    sync_add(&step, 1);
    sync_wait(&step, 2); /* main changed its own */
    CHECK(!blocked(SIGUSR1) && blocked(SIGUSR2) && !blocked(RT(2)));
    return NULL;
}

static void mask_is_per_thread(void)
{
    reset();
    mask_bits(SIG_BLOCK, B_USR1);
    OK(pthread_kill(pthread_self(), SIGUSR1)); /* pending on main */
    pthread_t t;
    OK(pthread_create(&t, NULL, inherits_then_changes, NULL));
    sync_wait(&step, 1);
    CHECK(blocked(SIGUSR1) && !blocked(SIGUSR2)); /* the thread's changes are its own */
    CHECK_EQ(atomic_load(&handled[SIGUSR1]), 0);
    mask_bits(SIG_UNBLOCK, B_USR1);
    CHECK_EQ(atomic_load(&handled[SIGUSR1]), 1);
    CHECK(pthread_equal(atomic_load(&handled_on), pthread_self()));
    mask_bits(SIG_BLOCK, B_RT2);
    sync_add(&step, 1);
    OK(pthread_join(t, NULL));
    CHECK(!blocked(SIGUSR1) && !blocked(SIGUSR2) && blocked(RT(2)));
    mask_bits(SIG_UNBLOCK, B_RT2);
}

static void *how_values(void *arg)
{
    sigset_t s, old, none = SIGS(0);
    OK(pthread_sigmask(SIG_SETMASK, &none, NULL));
    s = SIGS(SIGUSR1);
    OK(pthread_sigmask(SIG_BLOCK, &s, &old));
    CHECK_EQ(sigismember(&old, SIGUSR1), 0);
    s = SIGS(SIGUSR2);
    OK(pthread_sigmask(SIG_BLOCK, &s, &old)); /* union */
    CHECK(sigismember(&old, SIGUSR1) && !sigismember(&old, SIGUSR2));
    CHECK(blocked(SIGUSR1) && blocked(SIGUSR2));
    s = SIGS(SIGUSR1, RT(3)); /* RT(3) was not blocked: no matter */
    OK(pthread_sigmask(SIG_UNBLOCK, &s, &old));
    CHECK(sigismember(&old, SIGUSR1) && sigismember(&old, SIGUSR2) && !sigismember(&old, RT(3)));
    CHECK(!blocked(SIGUSR1) && blocked(SIGUSR2) && !blocked(RT(3)));
    s = SIGS(RT(2));
    OK(pthread_sigmask(SIG_SETMASK, &s, &old));
    CHECK(!sigismember(&old, SIGUSR1) && sigismember(&old, SIGUSR2));
    CHECK(!blocked(SIGUSR2) && blocked(RT(2)));

    /* A null set only reads, whatever how is. */
    OK(pthread_sigmask(SIG_UNBLOCK, NULL, &old));
    CHECK_EQ(sigismember(&old, RT(2)), 1);
    OK(pthread_sigmask(12345, NULL, &old));
    CHECK_EQ(sigprocmask(-1, NULL, &old), 0);
    OK(pthread_sigmask(SIG_BLOCK, NULL, NULL));
    CHECK(sigismember(&old, RT(2)) && blocked(RT(2)));

    /* An invalid how with a set: EINVAL, the mask unchanged. */
    s = SIGS(SIGUSR1);
    FAILS(pthread_sigmask(12345, &s, NULL), EINVAL);
    FAILS(pthread_sigmask(-1, &s, &old), EINVAL);
    FAILS_ERRNO(sigprocmask(12345, &s, NULL), EINVAL);
    CHECK(!blocked(SIGUSR1) && blocked(RT(2)));

    /* SIGKILL and SIGSTOP: left out of the mask without an error. */
    s = SIGS(SIGKILL, SIGSTOP, SIGUSR1);
    OK(pthread_sigmask(SIG_BLOCK, &s, NULL));
    CHECK(blocked(SIGUSR1) && !blocked(SIGKILL) && !blocked(SIGSTOP));
    sigfillset(&s);
    OK(pthread_sigmask(SIG_SETMASK, &s, NULL));
    CHECK(!blocked(SIGKILL) && !blocked(SIGSTOP));
    CHECK(blocked(SIGUSR2) && blocked(SIGTERM) && blocked(SIGRTMAX) && blocked(RT(5)));
    OK(pthread_sigmask(SIG_SETMASK, &none, NULL));
    CHECK(!blocked(SIGUSR1) && !blocked(SIGTERM) && !blocked(RT(2)));
    return NULL;
}

static void how_values_and_errors(void) { on_thread(how_values, NULL); }

static void *uses_sigprocmask(void *arg)
{
    sigset_t s = SIGS(SIGUSR1), old;
    CHECK_EQ(sigprocmask(SIG_BLOCK, &s, &old), 0);
    CHECK(!sigismember(&old, SIGUSR1) && blocked(SIGUSR1)); /* pthread_sigmask's mask */
    s = SIGS(SIGUSR2);
    OK(pthread_sigmask(SIG_BLOCK, &s, NULL));
    CHECK_EQ(sigprocmask(SIG_BLOCK, NULL, &old), 0);
    CHECK(sigismember(&old, SIGUSR1) && sigismember(&old, SIGUSR2));
    sync_add(&step, 1);
    sync_wait(&step, 2);
    CHECK_EQ(blocked(RT(2)), 0); /* main's sigprocmask was main's */
    s = SIGS(SIGUSR1);
    CHECK_EQ(sigprocmask(SIG_UNBLOCK, &s, NULL), 0);
    CHECK(!blocked(SIGUSR1) && blocked(SIGUSR2));
    return NULL;
}

static void sigprocmask_acts_on_thread(void)
{
    reset();
    pthread_t t;
    OK(pthread_create(&t, NULL, uses_sigprocmask, NULL));
    sync_wait(&step, 1);
    CHECK(!blocked(SIGUSR1) && !blocked(SIGUSR2));
    sigset_t s = SIGS(RT(2));
    CHECK_EQ(sigprocmask(SIG_BLOCK, &s, NULL), 0);
    sync_add(&step, 1);
    OK(pthread_join(t, NULL));
    CHECK(blocked(RT(2)) && !blocked(SIGUSR1) && !blocked(SIGUSR2));
    CHECK_EQ(sigprocmask(SIG_UNBLOCK, &s, NULL), 0);
}

static void *blocks_then_unblocks(void *arg)
{
    mask_bits(SIG_BLOCK, B_USR2);
    sync_add(&step, 1);
    sync_wait(&step, 2); /* main sent SIGUSR2 */
    WAIT_UNTIL(pending(SIGUSR2), 2000); /* generated: pending on us */
    conform_pause_us(20000);
    CHECK_EQ(atomic_load(&handled[SIGUSR2]), 0);
    sync_add(&step, 1);
    sync_wait(&step, 4); /* main looked at its own pending set */
    mask_bits(SIG_UNBLOCK, B_USR2);
    CHECK_EQ(atomic_load(&handled[SIGUSR2]), 1); /* before pthread_sigmask returned */
    CHECK(pthread_equal(atomic_load(&handled_on), pthread_self()));
    CHECK_EQ(pending(SIGUSR2), 0);
    return NULL;
}

static void kill_to_blocked_thread_stays_pending(void)
{
    reset();
    mask_bits(SIG_BLOCK, B_USR2); /* so that main's sigpending would show it */
    pthread_t t;
    OK(pthread_create(&t, NULL, blocks_then_unblocks, NULL));
    sync_wait(&step, 1);
    OK(pthread_kill(t, SIGUSR2));
    sync_add(&step, 1);
    sync_wait(&step, 3);
    CHECK_EQ(pending(SIGUSR2), 0); /* pending on t, not on main or the process */
    sync_add(&step, 1);
    OK(pthread_join(t, NULL));
    mask_bits(SIG_UNBLOCK, B_USR2);
    CHECK_EQ(atomic_load(&handled[SIGUSR2]), 1); /* once, and on t */
    CHECK_EQ(atomic_load(&wrong), 0);
}

static void *sigwaits(void *arg)
{
    sigset_t s = SIGS(SIGUSR1);
    mask_bits(SIG_BLOCK, B_USR1);
    sync_add(&step, 1);
    int sig = 0;
    OK(sigwait(&s, &sig));
    CHECK_EQ(sig, SIGUSR1);
    CHECK_EQ(pending(SIGUSR1), 0);
    return NULL;
}

static void *waits_in_vain(void *arg)
{
    sigset_t s = SIGS(SIGUSR1);
    mask_bits(SIG_BLOCK, B_USR1);
    sync_add(&step, 1);
    struct timespec ts = { 0, 200 * MS };
    FAILS_ERRNO(sigtimedwait(&s, NULL, &ts), EAGAIN);
    return NULL;
}

/* The signal is taken by the thread it was sent to, not by another thread
 * waiting for it too. */
static void sigwait_gets_thread_directed(void)
{
    reset();
    pthread_t t, u;
    OK(pthread_create(&u, NULL, waits_in_vain, NULL));
    OK(pthread_create(&t, NULL, sigwaits, NULL));
    sync_wait(&step, 2);
    OK(pthread_kill(t, SIGUSR1));
    OK(pthread_join(t, NULL));
    OK(pthread_join(u, NULL));
    CHECK_EQ(atomic_load(&handled[SIGUSR1]), 0);
}

static void *waits_for_info(void *arg)
{
    sigset_t s = SIGS(RT(1), RT(3));
    OK(pthread_sigmask(SIG_BLOCK, &s, NULL));
    sync_add(&step, 1);
    siginfo_t si;
    memset(&si, 0, sizeof si);
    CHECK_EQ(sigwaitinfo(&s, &si), RT(1));
    CHECK(si.si_signo == RT(1) && si.si_code == SI_QUEUE && si.si_value.sival_int == 42);
    CHECK(si.si_pid == getpid() && si.si_uid == getuid());
    sync_add(&step, 1);
    if (arg) {
        sync_wait(&step, 3); /* three more queued */
        static const int want[3][2] = { { 1, 1 }, { 1, 2 }, { 3, 3 } };
        for (int i = 0; i < 3; i++) {
            CHECK_EQ(sigwaitinfo(&s, &si), RT(want[i][0]));
            CHECK_EQ(si.si_value.sival_int, want[i][1]);
        }
    }
    return NULL;
}

static void waitinfo(bool queue)
{
    reset();
    pthread_t t;
    OK(pthread_create(&t, NULL, waits_for_info, queue ? &step : NULL));
    sync_wait(&step, 1);
    OK(pthread_sigqueue(t, RT(1), (union sigval){ .sival_int = 42 }));
    sync_wait(&step, 2);
    if (queue) {
        /* The lowest real-time signal first; one signal's values in order. */
        OK(pthread_sigqueue(t, RT(3), (union sigval){ .sival_int = 3 }));
        OK(pthread_sigqueue(t, RT(1), (union sigval){ .sival_int = 1 }));
        OK(pthread_sigqueue(t, RT(1), (union sigval){ .sival_int = 2 }));
        sync_add(&step, 1);
    }
    OK(pthread_join(t, NULL));
    CHECK_EQ(atomic_load(&handled[RT(1)]) + atomic_load(&handled[RT(3)]), 0);
}

static void sigwaitinfo_gets_value(void) { waitinfo(false); }

/* A real-time signal sent twice is queued twice, each with its value. */
static void realtime_signals_queue(void) { waitinfo(true); }

/* Queued instances each run the handler when unblocked, with their values
 * in the order sent (SA_SIGINFO). */
static atomic_int rt_values[8];
static atomic_int rt_runs;

static void on_rt_info(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    int i = atomic_fetch_add(&rt_runs, 1);
    if (i < 8)
        atomic_store(&rt_values[i], si->si_code == SI_QUEUE ? si->si_value.sival_int : -1);
}

static void *blocks_rt5(void *arg)
{
    sigset_t s = SIGS(RT(5));
    OK(pthread_sigmask(SIG_BLOCK, &s, NULL));
    sync_add(&step, 1);
    sync_wait(&step, 2); /* three sent meanwhile */
    sigset_t p;
    OK(sigpending(&p));
    CHECK(sigismember(&p, RT(5)));
    OK(pthread_sigmask(SIG_UNBLOCK, &s, NULL)); /* all three run before it returns */
    CHECK_EQ(atomic_load(&rt_runs), 3);
    return NULL;
}

static void realtime_signals_run_each(void)
{
    reset();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_rt_info;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    OK(sigaction(RT(5), &sa, NULL));
    atomic_store(&rt_runs, 0);
    pthread_t t;
    OK(pthread_create(&t, NULL, blocks_rt5, NULL));
    sync_wait(&step, 1);
    for (int v = 1; v <= 3; v++)
        OK(pthread_sigqueue(t, RT(5), (union sigval){ .sival_int = v }));
    sync_add(&step, 1);
    OK(pthread_join(t, NULL));
    CHECK_EQ(atomic_load(&rt_runs), 3);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(atomic_load(&rt_values[i]), i + 1);
    signal(RT(5), SIG_DFL);
}

static void *times_out(void *arg)
{
    sigset_t s = SIGS(RT(4));
    OK(pthread_sigmask(SIG_BLOCK, &s, NULL));
    struct timespec ts = { 0, 50 * MS };
    uint64_t t0 = conform_now(CLOCK_MONOTONIC);
    FAILS_ERRNO(sigtimedwait(&s, NULL, &ts), EAGAIN);
    uint64_t took = conform_now(CLOCK_MONOTONIC) - t0;
    CHECK(took >= 45 * MS && took < 3000 * MS);
    struct timespec zero = { 0, 0 };
    t0 = conform_now(CLOCK_MONOTONIC);
    FAILS_ERRNO(sigtimedwait(&s, NULL, &zero), EAGAIN); /* a poll */
    CHECK(conform_now(CLOCK_MONOTONIC) - t0 < 1000 * MS);
    OK(pthread_kill(pthread_self(), RT(4))); /* blocked: pending */
    siginfo_t si;
    CHECK_EQ(sigtimedwait(&s, &si, &zero), RT(4));
    CHECK_EQ(si.si_signo, RT(4)); /* a poll that finds one */
    FAILS_ERRNO(sigtimedwait(&s, NULL, &zero), EAGAIN);

    struct timespec bad = { 0, 1000000000L };
    FAILS_ERRNO(sigtimedwait(&s, NULL, &bad), EINVAL);
    bad.tv_nsec = -1;
    FAILS_ERRNO(sigtimedwait(&s, NULL, &bad), EINVAL);
    return NULL;
}

static void sigtimedwait_times_out(void) { on_thread(times_out, NULL); }

static atomic_int taken;

static void *signal_thread(void *arg)
{
    sigset_t s = SIGS(SIGUSR1, SIGUSR2);
    for (;;) {
        int sig = 0;
        OK(sigwait(&s, &sig));
        if (sig == SIGUSR2)
            return NULL;
        CHECK_EQ(sig, SIGUSR1);
        atomic_fetch_add(&taken, 1);
    }
}

/* The classic pattern: block before creating threads, one thread sigwaits. */
static void sigwait_gets_process_directed(void)
{
    reset();
    atomic_store(&taken, 0);
    mask_bits(SIG_BLOCK, B_USR1 | B_USR2);
    pthread_t w[3], s;
    for (int i = 0; i < 3; i++)
        OK(pthread_create(&w[i], NULL, computes, (void *)(uintptr_t)(B_USR1 | B_USR2)));
    OK(pthread_create(&s, NULL, signal_thread, NULL));
    WAIT_UNTIL(atomic_load(&reached) >= 3, 2000);
    for (int i = 1; i <= 20; i++) {
        CHECK_EQ(kill(getpid(), SIGUSR1), 0);
        WAIT_UNTIL(atomic_load(&taken) >= i, 2000);
    }
    CHECK_EQ(kill(getpid(), SIGUSR2), 0);
    OK(pthread_join(s, NULL));
    atomic_store(&stop, true);
    for (int i = 0; i < 3; i++)
        OK(pthread_join(w[i], NULL));
    CHECK_EQ(atomic_load(&taken), 20);
    CHECK_EQ(pending(SIGUSR1) + pending(SIGUSR2), 0);
    mask_bits(SIG_UNBLOCK, B_USR1 | B_USR2);
    CHECK_EQ(atomic_load(&handled[SIGUSR1]) + atomic_load(&handled[SIGUSR2]), 0);
}

static sem_t sem;

static void *receives(void *arg)
{
    mask_bits(SIG_UNBLOCK, B_USR2);
    atomic_fetch_add(&reached, 1);
    while (sem_wait(&sem) != 0)
        CHECK_EQ(errno, EINTR); /* the handler may interrupt it */
    return NULL;
}

static void *sends_then_waits(void *arg)
{
    mask_bits(SIG_BLOCK, B_USR2);
    conform_pause_us(20000);
    CHECK_EQ(kill(getpid(), SIGUSR2), 0);
    WAIT_UNTIL(atomic_load(&handled[SIGUSR2]) >= 1, 2000);
    return NULL;
}

/* The one thread that does not block the signal runs its handler, parked in
 * sem_wait while the others compute; then main parked in pthread_join. */
static void process_signal_goes_to_unblocking_thread(void)
{
    reset();
    OK(sem_init(&sem, 0, 0));
    mask_bits(SIG_BLOCK, B_USR2);
    pthread_t w[3], r;
    for (int i = 0; i < 3; i++)
        OK(pthread_create(&w[i], NULL, computes, (void *)(uintptr_t)B_USR2));
    OK(pthread_create(&r, NULL, receives, NULL));
    WAIT_UNTIL(atomic_load(&reached) >= 4, 2000);
    conform_pause_us(10000);
    CHECK_EQ(kill(getpid(), SIGUSR2), 0);
    WAIT_UNTIL(atomic_load(&handled[SIGUSR2]) >= 1, 2000);
    CHECK(pthread_equal(atomic_load(&handled_on), r));
    OK(sem_post(&sem));
    OK(pthread_join(r, NULL));
    CHECK_EQ(atomic_load(&handled[SIGUSR2]), 1);

    atomic_store(&handled[SIGUSR2], 0);
    pthread_t sender;
    OK(pthread_create(&sender, NULL, sends_then_waits, NULL)); /* blocks it too */
    mask_bits(SIG_UNBLOCK, B_USR2);
    OK(pthread_join(sender, NULL));
    CHECK_EQ(atomic_load(&handled[SIGUSR2]), 1);
    CHECK(pthread_equal(atomic_load(&handled_on), pthread_self()));
    atomic_store(&stop, true);
    for (int i = 0; i < 3; i++)
        OK(pthread_join(w[i], NULL));
    CHECK_EQ(atomic_load(&wrong), 0);
    OK(sem_destroy(&sem));
}

#ifdef PTHREAD_ATTR_NO_SIGMASK_NP
static void *starts_blocked(void *arg)
{
    /* The attribute's mask, not the creator's. */
    CHECK(blocked(SIGUSR2) && blocked(RT(2)) && !blocked(SIGUSR1));
    mask_bits(SIG_BLOCK, B_USR2 | B_RT2);
    sync_wait(&step, 1); /* main sent SIGUSR2 */
    WAIT_UNTIL(pending(SIGUSR2), 2000); /* generated: pending on us */
    CHECK_EQ(atomic_load(&handled[SIGUSR2]), 0);
    mask_bits(SIG_UNBLOCK, B_USR2);
    CHECK_EQ(atomic_load(&handled[SIGUSR2]), 1);
    CHECK(pthread_equal(atomic_load(&handled_on), pthread_self()));
    return NULL;
}
#endif

/* A signal sent as soon as pthread_create returns finds the mask in place. */
static void attr_sigmask_np(void)
{
#ifdef PTHREAD_ATTR_NO_SIGMASK_NP
    reset();
    mask_bits(SIG_BLOCK, B_USR1);
    pthread_attr_t attr;
    OK(pthread_attr_init(&attr));
    sigset_t s = SIGS(SIGUSR2, RT(2));
    OK(pthread_attr_setsigmask_np(&attr, &s));
    pthread_t t;
    OK(pthread_create(&t, &attr, starts_blocked, NULL));
    OK(pthread_kill(t, SIGUSR2));
    sync_add(&step, 1);
    OK(pthread_join(t, NULL));
    OK(pthread_attr_destroy(&attr));
    CHECK_EQ(blocked(SIGUSR1), 1);
    mask_bits(SIG_UNBLOCK, B_USR1);
    CHECK_EQ(atomic_load(&wrong), 0);
#else
    fprintf(stderr, "  (no pthread_attr_setsigmask_np in this C library)\n");
#endif
}

static void *suspends(void *arg)
{
    mask_bits(SIG_BLOCK, B_USR1 | B_USR2);
    sync_add(&step, 1);
    sigset_t during = SIGS(SIGUSR2); /* SIGUSR1 let in, SIGUSR2 still kept out */
    says_blocked = B_USR2;
    FAILS_ERRNO(sigsuspend(&during), EINTR);
    says_blocked = B_USR1 | B_USR2;
    CHECK_EQ(atomic_load(&handled[SIGUSR1]), 1);
    CHECK(pthread_equal(atomic_load(&handled_on), pthread_self()));
    CHECK(blocked(SIGUSR1) && blocked(SIGUSR2)); /* the mask put back */
    CHECK_EQ(atomic_load(&handled[SIGUSR2]), 0);
    WAIT_UNTIL(pending(SIGUSR2), 2000); /* generated: pending on us */
    sigset_t s = SIGS(SIGUSR2);
    int sig = 0;
    OK(sigwait(&s, &sig));
    CHECK_EQ(sig, SIGUSR2);
    return NULL;
}

static void sigsuspend_in_thread(void)
{
    reset();
    pthread_t t;
    OK(pthread_create(&t, NULL, suspends, NULL));
    sync_wait(&step, 1);
    OK(pthread_kill(t, SIGUSR2));
    OK(pthread_kill(t, SIGUSR1));
    OK(pthread_join(t, NULL));
    CHECK_EQ(atomic_load(&handled[SIGUSR2]), 0);
    CHECK_EQ(atomic_load(&wrong), 0);
}

#define NCHURN 200
static pthread_barrier_t start_line;

static void check_mask(unsigned bits)
{
    unsigned now = (blocked(SIGUSR1) ? B_USR1 : 0) | (blocked(SIGUSR2) ? B_USR2 : 0) |
                   (blocked(RT(2)) ? B_RT2 : 0);
    CHECK_EQ(now, bits);
    CHECK_EQ(blocked(RT(5)), 0);
}

static void *churns(void *arg)
{
    unsigned i = (unsigned)(uintptr_t)arg;
    int r = pthread_barrier_wait(&start_line);
    CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
    for (unsigned k = 0; k < 16; k++) {
        unsigned bits = (i + k) % 8;
        mask_bits(SIG_SETMASK, bits);
        check_mask(bits);
        if (k % 2)
            sched_yield();
        else
            conform_pause_us(20 + (i % 7) * 10);
        check_mask(bits);
        sched_yield();
        check_mask(bits);
    }
    return NULL;
}

/* 200 threads change their masks, yield and sleep (and so may move between
 * processors or kernel threads), each finding its own mask every time, while
 * process-directed SIGUSR1s run only where it is unblocked. */
static void many_threads_masks(void)
{
    reset();
    mask_bits(SIG_BLOCK, B_USR1); /* main is not a way out */
    static pthread_t t[NCHURN];
    OK(pthread_barrier_init(&start_line, NULL, NCHURN + 1));
    for (unsigned i = 0; i < NCHURN; i++)
        OK(pthread_create(&t[i], NULL, churns, (void *)(uintptr_t)i));
    int r = pthread_barrier_wait(&start_line);
    CHECK(r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);
    for (int n = 0; n < 50; n++) {
        CHECK_EQ(kill(getpid(), SIGUSR1), 0);
        conform_pause_us(200);
    }
    for (unsigned i = 0; i < NCHURN; i++)
        OK(pthread_join(t[i], NULL));
    OK(pthread_barrier_destroy(&start_line));
    mask_bits(SIG_UNBLOCK, B_USR1); /* one still pending comes to main now */
    CHECK(atomic_load(&handled[SIGUSR1]) >= 1);
    CHECK_EQ(atomic_load(&handled[SIGUSR2]) + atomic_load(&handled[RT(2)]), 0);
    CHECK_EQ(atomic_load(&wrong), 0);
}

int main(void)
{
    sigset_t none; /* whatever the parent left blocked */
    sigemptyset(&none);
    OK(pthread_sigmask(SIG_SETMASK, &none, NULL));
    sync_init(&step);
    const int caught[] = { SIGUSR1, SIGUSR2, RT(1), RT(2), RT(3), RT(4) };
    for (unsigned i = 0; i < sizeof caught / sizeof caught[0]; i++)
        install(caught[i]); /* a handler that runs when it must not is seen */
    RUN_CASE(mask_is_per_thread, 10);
    RUN_CASE(how_values_and_errors, 10);
    RUN_CASE(sigprocmask_acts_on_thread, 10);
    RUN_CASE(kill_to_blocked_thread_stays_pending, 10);
    RUN_CASE(sigwait_gets_thread_directed, 10);
    RUN_CASE(sigwaitinfo_gets_value, 10);
    RUN_CASE(realtime_signals_queue, 10);
    RUN_CASE(realtime_signals_run_each, 10);
    RUN_CASE(sigtimedwait_times_out, 10);
    RUN_CASE(sigwait_gets_process_directed, 20);
    RUN_CASE(process_signal_goes_to_unblocking_thread, 20);
    RUN_CASE(attr_sigmask_np, 10);
    RUN_CASE(sigsuspend_in_thread, 10);
    RUN_CASE(many_threads_masks, 30);
    return 0;
}
