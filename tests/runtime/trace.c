/* SPDX-License-Identifier: MIT */
/* The execution timeline (ITO_TRACE, runtime/trace.c). This program runs
 * itself again as a child with ITO_TRACE and ITO_VPROCS=2 set; the child
 * spawns named threads on each vproc, makes threads wait on a mutex and on
 * a semaphore, writes the trace once on purpose (ito__trace_write) and then
 * at its exit. tests/runtime/trace_check.py reads both files and checks
 * the metadata, the spawns, the runs on every vproc, the parks with their
 * reasons, the wakes with their flows and the exits. */
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

extern char **environ;

/* runtime/trace.h; hidden in libito.so, reachable from the static library. */
void ito__trace_write(void);

static ito_mutex_t m = ITO_MUTEX_INIT;
static ito_sem_t sem;

static void *yielder(void *a)
{
    for (int i = 0; i < 50; i++)
        ito_yield();
    return a;
}

static void *contender(void *a)
{
    OK(ito_mutex_lock(&m));   /* held by main: parks on the mutex */
    OK(ito_mutex_unlock(&m));
    return a;
}

static void *consumer(void *a)
{
    OK(ito_sem_wait(&sem));   /* nothing posted yet: parks on the semaphore */
    OK(ito_sem_wait(&sem));
    return a;
}

static ito_thread_t spawn_named(const char *name, int vproc, void *(*fn)(void *))
{
    ito_attr_t attr;
    OK(ito_attr_init(&attr));
    OK(ito_attr_set_name(&attr, name));
    if (vproc >= 0)
        OK(ito_attr_set_vproc(&attr, vproc));
    ito_thread_t t;
    OK(ito_spawn(&t, &attr, fn, NULL));
    return t;
}

static int child(const char *path)
{
    CHECK_EQ(ito_vproc_count(), 2);
    /* Runs on every vproc: threads that prefer each one. */
    ito_thread_t ys[8];
    for (int i = 0; i < 8; i++)
        ys[i] = spawn_named(i % 2 ? "yield-1" : "yield-0", i % 2, yielder);
    for (int i = 0; i < 8; i++)
        OK(ito_join(ys[i], NULL));

    /* Parks on a mutex that main holds for a while, and their wakes. */
    OK(ito_mutex_lock(&m));
    ito_thread_t cs[3];
    for (int i = 0; i < 3; i++)
        cs[i] = spawn_named("contender", -1, contender);
    OK(ito_sleep_ns(20 * 1000 * 1000));
    OK(ito_mutex_unlock(&m));
    for (int i = 0; i < 3; i++)
        OK(ito_join(cs[i], NULL));

    /* A park on a semaphore, woken by posts from main. */
    OK(ito_sem_init(&sem, 0));
    ito_thread_t c = spawn_named("consumer", -1, consumer);
    OK(ito_sleep_ns(10 * 1000 * 1000));
    OK(ito_sem_post(&sem));
    OK(ito_sleep_ns(10 * 1000 * 1000));
    OK(ito_sem_post(&sem));
    OK(ito_join(c, NULL));

    /* A write on demand: the file as it is now, kept aside; the exit
     * writes it again, with everything. */
    ito__trace_write();
    char mid[4096];
    snprintf(mid, sizeof mid, "%s.mid", path);
    CHECK(rename(path, mid) == 0);
    ito__trace_write();   /* and again: each write replaces the file whole */

    ito_thread_t late = spawn_named("late", -1, yielder);
    OK(ito_join(late, NULL));
    return 0;
}

static int run_and_wait(char *const argv[])
{
    pid_t pid;
    int e = posix_spawn(&pid, argv[0], NULL, NULL, argv, environ);
    if (e) {
        fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(e));
        return 1;
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    if (!WIFEXITED(st)) {
        fprintf(stderr, "%s ended by signal %d\n", argv[0], WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        return 1;
    }
    return WEXITSTATUS(st);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "child") == 0)
        return child(argv[2]);
    char path[4096], mid[4200];
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(path, sizeof path, "%s/ito-trace-test-%d.json", dir, (int)getpid());
    snprintf(mid, sizeof mid, "%s.mid", path);
    setenv("ITO_TRACE", path, 1);
    setenv("ITO_VPROCS", "2", 1);
    char *child_argv[] = { argv[0], "child", path, NULL };
    int st = run_and_wait(child_argv);
    if (st != 0) {
        fprintf(stderr, "the traced child failed (status %d)\n", st);
        return 1;
    }
    char *check_argv[] = { ITO_TEST_PYTHON, ITO_TRACE_CHECK, "json", path, mid, NULL };
    st = run_and_wait(check_argv);
    if (st == 0) {
        unlink(path);
        unlink(mid);
    } else {
        fprintf(stderr, "trace kept for inspection: %s and %s\n", path, mid);
    }
    return st;
}
