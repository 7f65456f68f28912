/* SPDX-License-Identifier: MIT */
/*
 * A child started from an ito thread by posix_spawn, posix_spawnp, system
 * or popen gets the process's CPUs, not the one its caller's kernel thread
 * is pinned to (runtime/spawn.c); the caller stays pinned. The child is this
 * program again: it reports how many CPUs it may use, as its exit status
 * (posix_spawn, system) or on its output (popen).
 */
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

extern char **environ;

static int cpu_count(void)
{
    cpu_set_t set;
    CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
    return CPU_COUNT(&set) > 255 ? 255 : CPU_COUNT(&set);   /* an exit status */
}

static char *self_path;
static int process_cpus;

static int waited(pid_t pid)
{
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static void *starter(void *arg)
{
    (void)arg;
    int pinned = cpu_count();
    char *argv[] = { self_path, "child", NULL };
    pid_t pid;
    OK(posix_spawn(&pid, self_path, NULL, NULL, argv, environ));
    CHECK_EQ(waited(pid), process_cpus);
    OK(posix_spawnp(&pid, self_path, NULL, NULL, argv, environ));
    CHECK_EQ(waited(pid), process_cpus);
    /* A bad path: the error, and the pinning back. */
    CHECK_EQ(posix_spawn(&pid, "/nonexistent/ito-spawn-test", NULL, NULL, argv, environ) != 0, 1);
    CHECK_EQ(cpu_count(), pinned);

    char cmd[4200];
    snprintf(cmd, sizeof cmd, "'%s' child", self_path);
    int st = system(cmd);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WEXITSTATUS(st), process_cpus);
    CHECK_EQ(cpu_count(), pinned);

    snprintf(cmd, sizeof cmd, "'%s' child-print", self_path);
    FILE *f = popen(cmd, "r");
    CHECK(f != NULL);
    int n = -1;
    CHECK_EQ(fscanf(f, "%d", &n), 1);
    CHECK_EQ(pclose(f), 0);
    CHECK_EQ(n, process_cpus);
    CHECK_EQ(cpu_count(), pinned);
    printf("spawn_cpus: children saw %d CPUs; the caller's kernel thread kept %d\n", n, pinned);
    return NULL;
}

static void *foreign(void *arg)
{
    (void)arg;
    char *argv[] = { self_path, "child", NULL };
    pid_t pid;
    OK(posix_spawn(&pid, self_path, NULL, NULL, argv, environ));
    CHECK_EQ(waited(pid), cpu_count());   /* this thread's own (pthread_create copied main's) */
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "child"))
        return cpu_count();
    if (argc > 1 && !strcmp(argv[1], "child-print")) {
        printf("%d\n", cpu_count());
        return 0;
    }
    self_path = argv[0];
    process_cpus = cpu_count();
    OK(ito_init(NULL));
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, starter, NULL));
    OK(ito_join(t, NULL));
    /* From a kernel thread ito does not run: passed on untouched. */
    pthread_t p;
    CHECK(pthread_create(&p, NULL, foreign, NULL) == 0);
    CHECK(pthread_join(p, NULL) == 0);
    return 0;
}
