/* SPDX-License-Identifier: MIT */
/* The monitor's scheduling priority (upcall/monitor.c): where the process
 * may use real-time priorities, the monitor runs at SCHED_FIFO 1, so that it
 * runs as soon as it wakes (the doorbell too: upcall/doorbell.c); every
 * other kernel thread of ito's — the
 * activations the monitor starts for hand-offs included — keeps the policy
 * of the thread that started ito. With ITO_MONITOR_RT=0 the monitor keeps
 * it too (monitor_priority_off). Where the process may not (no privilege, no
 * RLIMIT_RTPRIO), the monitor keeps the normal policy and nothing fails.
 *
 * Blocking calls on both vprocs make the monitor start spares, which are
 * checked while they carry the vprocs. */
#include "common.h"

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

static _Atomic bool stop;

static void *blocker(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop)) {
        ito_blocking_begin();
        usleep(2000);
        ito_blocking_end();
    }
    return NULL;
}

/* The name of kernel thread tid, in name[32]. */
static bool thread_name(pid_t tid, char *name)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;   /* ended meanwhile */
    if (!fgets(name, 32, f))
        name[0] = 0;
    fclose(f);
    name[strcspn(name, "\n")] = 0;
    return true;
}

static int monitor_policy(void)
{
    DIR *d = opendir("/proc/self/task");
    CHECK(d);
    int pol = -1;
    struct dirent *e;
    char name[32];
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && thread_name((pid_t)atoi(e->d_name), name) && !strcmp(name, "ito-monitor"))
            pol = sched_getscheduler((pid_t)atoi(e->d_name));
    closedir(d);
    return pol;
}

/* Each kernel thread of the process: its name and its policy (sched_getscheduler). */
static int check_threads(bool monitor_rt)
{
    DIR *d = opendir("/proc/self/task");
    CHECK(d);
    int monitors = 0, activations = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        pid_t tid = (pid_t)atoi(e->d_name);
        char name[32];
        if (!thread_name(tid, name))
            continue;
        int pol = sched_getscheduler(tid);
        if (pol < 0)
            continue;
        /* A spare the monitor has just started bears its name until it
         * names itself, and runs under the normal policy. */
        if (!strcmp(name, "ito-monitor") && pol == (monitor_rt ? SCHED_FIFO : SCHED_OTHER)) {
            monitors++;
        } else if (!strcmp(name, "ito-doorbell")) {
            /* The doorbell (upcall/doorbell.c) raises itself likewise; it
             * may not have done so yet. */
            if (!monitor_rt && pol != SCHED_OTHER) {
                fprintf(stderr, "monitor_priority: %s (%d) runs under policy %d\n", name, tid, pol);
                abort();
            }
        } else {
            activations += !strcmp(name, "ito-activation");
            if (pol != SCHED_OTHER) {
                fprintf(stderr, "monitor_priority: %s (%d) runs under policy %d\n", name, tid, pol);
                abort();
            }
        }
    }
    closedir(d);
    if (monitors < 1) {
        fprintf(stderr, "monitor_priority: no monitor under policy %d\n", monitor_rt ? SCHED_FIFO : SCHED_OTHER);
        abort();
    }
    return activations;
}

int main(void)
{
    bool off = getenv("ITO_MONITOR_RT") && !strcmp(getenv("ITO_MONITOR_RT"), "0");
    /* May this process use SCHED_FIFO? Try it on a kernel thread of its own. */
    struct sched_param rt = { .sched_priority = 1 };
    bool may = pthread_setschedparam(pthread_self(), SCHED_FIFO, &rt) == 0;
    if (may) {
        struct sched_param normal = { .sched_priority = 0 };
        OK(pthread_setschedparam(pthread_self(), SCHED_OTHER, &normal));
    }
    ito_config_t c = ITO_CONFIG_INIT;
    c.vprocs = 2;
    OK(ito_init(&c));
    /* The monitor raises itself as it starts, which may be after ito_init
     * has returned: give it up to 2 s. */
    for (int i = 0; i < 200 && may && !off && monitor_policy() != SCHED_FIFO; i++)
        ito_sleep_ns(10000000);
    ito_thread_t t[4];
    for (int i = 0; i < 4; i++)
        OK(ito_spawn(&t[i], NULL, blocker, NULL));
    int most = 0;
    for (int i = 0; i < 20; i++) {   /* 200 ms: spares come and park */
        int a = check_threads(may && !off);
        most = a > most ? a : most;
        ito_sleep_ns(10000000);
    }
    atomic_store(&stop, true);
    for (int i = 0; i < 4; i++)
        OK(ito_join(t[i], NULL));
    CHECK(most > 2);   /* spares were started (by the monitor) and checked */
    printf("monitor_priority: ok: monitor %s, up to %d activations, all SCHED_OTHER\n",
           may && !off ? "SCHED_FIFO" : "SCHED_OTHER", most);
    return 0;
}
