/* SPDX-License-Identifier: MIT */
/*
 * ito-ctl — the processor allocation table, live (like top).
 *
 *   ito-ctl [--domain NAME] [--interval MS] [--once]
 *
 * Shows the ito processes of this user (in the default domain, or NAME's:
 * ITO_ALLOC_DOMAIN) sharing the machine: each one's pid, name, priority,
 * how many processors it wants and holds, and which; the reallocations per
 * second; lock takeovers (a process died holding the lock) and rebuilds (the
 * table was found damaged). Refreshes every --interval ms (default 1000);
 * --once prints one table and exits (2 if the table does not exist).
 *
 * It copies the table under its lock (src/cpushare/table.c), so what it shows
 * is one consistent moment, after dividing the processors again as any
 * process may: that drops the processes that have died.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cpushare/table.h"

static void usage(void)
{
    fprintf(stderr, "usage: ito-ctl [--domain NAME] [--interval MS] [--once]\n");
    exit(1);
}

/* "0-3,6" */
static void cpus_str(const ito__cpumask *m, char *out, size_t len)
{
    size_t k = 0;
    out[0] = '\0';
    for (int c = ito__cpumask_next(m, 0); c >= 0 && k + 16 < len;) {
        int e = c;
        while (ito__cpumask_has(m, e + 1))
            e++;
        k += (size_t)snprintf(out + k, len - k, "%s%d", k ? "," : "", c);
        if (e > c)
            k += (size_t)snprintf(out + k, len - k, "-%d", e);
        c = ito__cpumask_next(m, e + 1);
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    const char *domain = getenv("ITO_ALLOC_DOMAIN");
    long interval_ms = 1000;
    int once = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--once"))
            once = 1;
        else if (!strcmp(argv[i], "--domain") && i + 1 < argc)
            domain = argv[++i];
        else if (!strcmp(argv[i], "--interval") && i + 1 < argc && (interval_ms = atol(argv[++i])) > 0)
            ;
        else
            usage();
    }
    char name[160];
    ito__table_name(domain, name, sizeof name);
    int fd = shm_open(name, O_RDONLY, 0);
    if (fd < 0) {
        fprintf(stderr, "ito-ctl: no allocation table %s (%s): no ito process of this user has run %s\n", name,
                strerror(errno), domain ? "in this domain" : "yet");
        return 2;
    }
    close(fd);
    struct ito__table *t;
    int e = ito__table_open(name, &t);
    if (e) {
        fprintf(stderr, "ito-ctl: cannot open %s: %s\n", name, strerror(e));
        return 2;
    }
    static struct ito__table snap;
    uint64_t last_realloc = 0;
    double last_t = 0;
    for (;;) {
        ito__table_lock(t);
        ito__table_divide(t);   /* drops the dead: none of them is shown */
        memcpy(&snap, t, sizeof snap);
        ito__table_unlock(t);
        double now = now_s();
        double rate = last_t ? (double)(snap.h.reallocations - last_realloc) / (now - last_t) : 0;
        last_realloc = snap.h.reallocations;
        last_t = now;
        int procs = 0;
        for (int i = 0; i < ITO__ALLOC_SLOTS; i++)
            procs += snap.slot[i].state == ITO__SLOT_USED;
        char online[256];
        cpus_str(&snap.h.online, online, sizeof online);
        if (!once)
            printf("\033[H\033[2J");
        printf("ito-ctl %s: %d process%s; CPUs online %s; %llu reallocations (%.1f/s); %llu lock takeovers, "
               "%llu rebuilds\n",
               name, procs, procs == 1 ? "" : "es", online, (unsigned long long)snap.h.reallocations, rate,
               (unsigned long long)snap.h.takeovers, (unsigned long long)snap.h.rebuilds);
        printf("%8s  %-16s %5s %5s %5s  %s\n", "PID", "NAME", "PRIO", "WANT", "HELD", "CPUS");
        for (int i = 0; i < ITO__ALLOC_SLOTS; i++) {
            const struct ito__table_slot *s = &snap.slot[i];
            if (s->state != ITO__SLOT_USED)
                continue;
            char cpus[256];
            cpus_str(&s->grant, cpus, sizeof cpus);
            printf("%8d  %-16.16s %5d %5d %5d  %s\n", s->pid, s->name, s->priority, s->want, s->ngrant, cpus);
        }
        fflush(stdout);
        if (once)
            return 0;
        struct timespec ts = { interval_ms / 1000, (interval_ms % 1000) * 1000000 };
        nanosleep(&ts, NULL);
    }
}
