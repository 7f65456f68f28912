/* SPDX-License-Identifier: MIT */
/* The deadlock report (runtime/deadlock.c), each case in a fresh process:
 * two threads that take two mutexes in opposite orders while main joins
 * them end the process with status 2 and a report naming every thread, what
 * it waits on, the owner, and a backtrace through the program's functions;
 * ITO_DEADLOCK=abort aborts; ITO_DEADLOCK=off lets it hang. And never a
 * report where a thread could still run: a timed wait, a sleep, I/O in
 * flight, a foreign kernel thread that posts later, a signal handler that
 * posts, a thread in a plain blocking system call. (The backtraces' first
 * frames are ito's own where ito is linked statically, as here: only a
 * shared libito is told from the program by its module.) */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include <ito/io.h>

#include "common.h"

static ito_mutex_t a = ITO_MUTEX_INIT, b = ITO_MUTEX_INIT;
static ito_sem_t both_hold, go;

/* noinline: each shows in the backtrace by name. */
__attribute__((noinline)) static void *take_a_then_b(void *arg)
{
    (void)arg;
    OK(ito_mutex_lock(&a));
    OK(ito_sem_post(&both_hold));
    OK(ito_sem_wait(&go));
    OK(ito_mutex_lock(&b));
    return NULL;
}

__attribute__((noinline)) static void *take_b_then_a(void *arg)
{
    (void)arg;
    OK(ito_mutex_lock(&b));
    OK(ito_sem_post(&both_hold));
    OK(ito_sem_wait(&go));
    OK(ito_mutex_lock(&a));
    return NULL;
}

static void case_lock_order(void)
{
    OK(ito_sem_init(&both_hold, 0));
    OK(ito_sem_init(&go, 0));
    ito_thread_t t1 = test_spawn_named("first", take_a_then_b);
    ito_thread_t t2 = test_spawn_named("second", take_b_then_a);
    OK(ito_sem_wait(&both_hold));
    OK(ito_sem_wait(&both_hold));
    OK(ito_sem_post(&go));
    OK(ito_sem_post(&go));
    OK(ito_join(t1, NULL));
    OK(ito_join(t2, NULL));
    fprintf(stderr, "case lock_order: joined both\n");
}

/* One thread alone, on a semaphore nobody posts. */
__attribute__((noinline)) static void wait_forever(void)
{
    ito_sem_t s;
    OK(ito_sem_init(&s, 0));
    OK(ito_sem_wait(&s));
}

static void case_alone(void) { wait_forever(); }

/* ---- no report: a thread could still run ---- */

static ito_sem_t later;

static void case_timed_wait(void)
{
    OK(ito_sem_init(&later, 0));
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += 1;
    CHECK_EQ(ito_sem_timedwait(&later, &ts), ETIMEDOUT);
}

static void *post_after_sleep(void *arg)
{
    (void)arg;
    OK(ito_sleep_ns(400 * 1000 * 1000));
    OK(ito_sem_post(&later));
    return NULL;
}

static void case_sleeper(void)
{
    OK(ito_sem_init(&later, 0));
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, post_after_sleep, NULL));
    OK(ito_sem_wait(&later));
    OK(ito_join(t, NULL));
}

static int pipefd[2];

static void *read_pipe(void *arg)
{
    (void)arg;
    char c;
    CHECK_EQ(ito_read(pipefd[0], &c, 1), 1);
    OK(ito_sem_post(&later));
    return NULL;
}

static void case_io(void)
{
    OK(ito_sem_init(&later, 0));
    CHECK(pipe(pipefd) == 0);
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, read_pipe, NULL));
    /* The writer is a foreign kernel thread made after the reader parks:
     * the I/O in flight alone must hold the report back. */
    OK(ito_sleep_ns(50 * 1000 * 1000));
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        usleep(400 * 1000);
        CHECK_EQ(write(pipefd[1], "x", 1), 1);
        _exit(0);
    }
    OK(ito_sem_wait(&later));
    OK(ito_join(t, NULL));
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
}

static void *foreign_post(void *arg)
{
    (void)arg;
    usleep(400 * 1000);
    OK(ito_sem_post(&later));
    return NULL;
}

static void case_foreign_thread(void)
{
    OK(ito_sem_init(&later, 0));
    pthread_t p;
    OK(pthread_create(&p, NULL, foreign_post, NULL));
    OK(ito_sem_wait(&later));
    OK(pthread_join(p, NULL));
}

static void on_usr1(int sig)
{
    (void)sig;
    ito_sem_post(&later);
}

static void case_signal_handler(void)
{
    OK(ito_sem_init(&later, 0));
    signal(SIGUSR1, on_usr1);
    pid_t parent = getpid();
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        usleep(400 * 1000);
        kill(parent, SIGUSR1);
        _exit(0);
    }
    while (ito_sem_wait(&later) == EINTR)
        ;
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
}

static void *blocking_call(void *arg)
{
    (void)arg;
    usleep(400 * 1000);   /* a plain system call, not ito's */
    OK(ito_sem_post(&later));
    return NULL;
}

static void case_kernel_call(void)
{
    OK(ito_sem_init(&later, 0));
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, blocking_call, NULL));
    OK(ito_sem_wait(&later));
    OK(ito_join(t, NULL));
}

static const struct {
    const char *name;
    void (*fn)(void);
    const char *env;   /* ITO_DEADLOCK, or NULL */
} cases[] = {
    { "lock_order", case_lock_order, NULL },
    { "alone", case_alone, NULL },
    { "abort", case_alone, "abort" },
    { "off", case_alone, "off" },
    { "timed_wait", case_timed_wait, NULL },
    { "sleeper", case_sleeper, NULL },
    { "io", case_io, NULL },
    { "foreign_thread", case_foreign_thread, NULL },
    { "signal_handler", case_signal_handler, NULL },
    { "kernel_call", case_kernel_call, NULL },
};
enum { NCASES = sizeof cases / sizeof cases[0] };

/* Run case i in a child, killed after `limit_s`; its stderr in err. */
static int run_case(int i, char *err, size_t errlen, int limit_s)
{
    if (cases[i].env)
        setenv("ITO_DEADLOCK", cases[i].env, 1);
    else
        unsetenv("ITO_DEADLOCK");
    return test_run_self_watched(cases[i].name, err, errlen, limit_s * 1000, 0, NULL);
}

static int failed;

static void expect(bool ok, const char *name, int st, const char *err, const char *what)
{
    if (ok)
        return;
    char sb[128];
    fprintf(stderr, "case %s: %s (%s); stderr:\n%s\n", name, what, test_status_str(st, sb, sizeof sb), err);
    failed++;
}

int main(int argc, char **argv)
{
    if (argc == 2) {
        for (int i = 0; i < NCASES; i++)
            if (strcmp(argv[1], cases[i].name) == 0) {
                cases[i].fn();
                return 0;
            }
        return 3;
    }
    static char err[65536];
    for (int i = 0; i < NCASES; i++) {
        const char *name = cases[i].name;
        int st = run_case(i, err, sizeof err, strcmp(name, "off") == 0 ? 2 : 20);
        if (strcmp(name, "lock_order") == 0) {
            expect(WIFEXITED(st) && WEXITSTATUS(st) == 2, name, st, err, "status is not 2");
            expect(strstr(err, "ito: deadlock: all 3 threads are asleep\n") != NULL, name, st, err, "no count line");
            expect(strstr(err, "\"first\" blocked on mutex") && strstr(err, "\"second\" blocked on mutex"), name,
                   st, err, "no mutex lines");
            expect(strstr(err, "held by thread") != NULL, name, st, err, "no owner");
            expect(strstr(err, "blocked in join of thread") != NULL, name, st, err, "no join line");
            expect(strstr(err, "take_a_then_b") && strstr(err, "take_b_then_a") && strstr(err, "case_lock_order"),
                   name, st, err, "backtraces lack the program's functions");
            expect(strstr(err, "joined both") == NULL, name, st, err, "it went on");
        } else if (strcmp(name, "alone") == 0) {
            expect(WIFEXITED(st) && WEXITSTATUS(st) == 2, name, st, err, "status is not 2");
            expect(strstr(err, "ito: deadlock: all 1 thread is asleep\n") && strstr(err, "blocked on semaphore") &&
                       strstr(err, "wait_forever"),
                   name, st, err, "no report");
        } else if (strcmp(name, "abort") == 0) {
            expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT && strstr(err, "ito: deadlock:"), name, st, err,
                   "did not abort with the report");
        } else if (strcmp(name, "off") == 0) {
            expect(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL && !strstr(err, "deadlock"), name, st, err,
                   "did not hang quietly");
        } else {
            expect(WIFEXITED(st) && WEXITSTATUS(st) == 0 && !strstr(err, "deadlock"), name, st, err,
                   "a thread could still run, yet it did not end well");
        }
    }
    CHECK_EQ(failed, 0);
    return 0;
}
