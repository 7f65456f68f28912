/* SPDX-License-Identifier: MIT */
/*
 * ito-ctl — the ito processes of this machine, live (like top).
 *
 *   ito-ctl [--pid PID] [--domain NAME] [--interval MS] [--once]
 *
 * For each ito process of this user (every user's, for root): its pid,
 * program and policy; the processors it holds and wants, and its priority
 * in the cross-process allocation; its threads: alive, running, ready and
 * blocked; its switches per second. Under it, one line per vproc: the CPU it
 * is on, what it does (run, idle, sleep, kernel: its carrier is in a
 * blocking call, off: its processor is another process's), the thread it
 * runs, its queue, and its switches, steals, hand-offs and ended time slices
 * per second. The header shows the processor allocation table: the CPUs it
 * divides, reallocations per second, lock takeovers (a process died holding
 * the lock) and rebuilds (the table was found damaged).
 *
 * The figures come from each process (src/api/view.c: a socket that answers
 * with a snapshot); a process that runs with ITO_VIEW=0, or does not answer
 * within half a second (stopped, or starved of CPU), is shown from the
 * allocation table alone, with "-" for the rest. --domain NAME shows the
 * processes of that allocation domain only (ITO_ALLOC_DOMAIN); --pid, one
 * process. Refreshes every --interval ms (default 1000), redrawing the
 * screen when the output is a terminal and printing plain lines otherwise;
 * --once prints one table (rates over 200 ms) and exits, with status 2 if
 * there was no process to show.
 *
 * The allocation table is copied under its lock (src/cpushare/table.c), so
 * what it shows is one consistent moment, after dividing the processors
 * again as any process may: that drops the processes that have died.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "api/view.h"
#include "cpushare/table.h"

#define ANSWER_MS 500   /* how long a process has to answer */
#define MAX_PROCS 4096

static void usage(FILE *f, int status)
{
    fprintf(f, "usage: ito-ctl [--pid PID] [--domain NAME] [--interval MS] [--once]\n"
               "  the ito processes of this user, live: processors, threads, and what each vproc runs\n"
               "  --pid PID       that process only\n"
               "  --domain NAME   the processes of one allocation domain (ITO_ALLOC_DOMAIN)\n"
               "  --interval MS   refresh every MS milliseconds (default 1000)\n"
               "  --once          one table (rates over 200 ms); exit status 2 if no process was found\n");
    exit(status);
}

/* ---- What one process told us ---- */

struct vp_view {
    char doing[8];
    int cpu, queued;
    uint64_t switches, steals, handoffs, slices;
    unsigned thread;
    char name[40];
};

struct proc {
    pid_t pid;
    /* From the process itself (answered). */
    bool answered;
    char program[40], policy[40];
    uint64_t taken_ns;
    int sharing, held, want, priority, activations, spares, running, ready, blocked;
    int nvp;
    struct vp_view *vp;
    /* From the allocation table (in_table). */
    bool in_table;
    char tname[ITO__ALLOC_NAME_LEN + 1];
    int tpriority, twant, theld;
    ito__cpumask grant;
    /* The same process's last answer, for rates (NULL: none). */
    const struct proc *prev;
    /* The connection while asking. */
    int fd;
    char *buf;
    size_t len, cap;
};

static void proc_free(struct proc *p)
{
    free(p->vp);
    free(p->buf);
    if (p->fd >= 0)
        close(p->fd);
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

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Parse an answer (src/api/view.h); false if it is not a whole one. */
static bool parse(struct proc *p)
{
    if (!p->buf || p->len < 6 || strncmp(p->buf, "ito-view ", 9) != 0 || atoi(p->buf + 9) != ITO__VIEW_VERSION)
        return false;
    p->buf[p->len - 1] = '\0';   /* the last '\n' */
    bool end = false;
    int vps = 0;
    for (char *l = p->buf; l && !end; ) {
        char *next = strchr(l, '\n');
        if (next)
            *next++ = '\0';
        if (!strcmp(l, "end"))
            end = true;
        else if (!strncmp(l, "vp ", 3))
            vps++;
        l = next;
    }
    if (!end || !(p->vp = calloc((size_t)vps + 1, sizeof *p->vp)))
        return false;
    int got = 0;
    for (char *l = p->buf; l < p->buf + p->len; l += strlen(l) + 1) {
        long long pid;
        unsigned long long a, b, c, d;
        struct vp_view *v = &p->vp[p->nvp];
        int idx, name_at = -1;
        if (sscanf(l, "pid %lld", &pid) == 1)
            got |= (pid == p->pid) << 0;
        else if (!strncmp(l, "program ", 8))
            snprintf(p->program, sizeof p->program, "%s", l + 8);
        else if (!strncmp(l, "policy ", 7))
            snprintf(p->policy, sizeof p->policy, "%s", l + 7);
        else if (sscanf(l, "taken_ns %llu", &a) == 1)
            p->taken_ns = a, got |= 1 << 1;
        else if (sscanf(l, "alloc %d %d %d %d", &p->sharing, &p->held, &p->want, &p->priority) == 4)
            got |= 1 << 2;
        else if (sscanf(l, "activations %d %d", &p->activations, &p->spares) == 2)
            got |= 1 << 3;
        else if (sscanf(l, "threads %d %d %d", &p->running, &p->ready, &p->blocked) == 3)
            got |= 1 << 4;
        else if (p->nvp < vps && sscanf(l, "vp %d %7s %d %d %llu %llu %llu %llu %u %n", &idx, v->doing, &v->cpu,
                                        &v->queued, &a, &b, &c, &d, &v->thread, &name_at) >= 9 &&
                 idx == p->nvp) {
            v->switches = a, v->steals = b, v->handoffs = c, v->slices = d;
            if (name_at > 0)
                snprintf(v->name, sizeof v->name, "%s", l + name_at);
            p->nvp++;
        }
    }
    return got == 0x1f && p->nvp == vps && vps > 0;
}

/* Connect to every ito process whose socket is listed in /proc/net/unix
 * (only_pid: that one), then read the answers together, for at most
 * ANSWER_MS. */
static int ask_all(struct proc *ps, int max, pid_t only_pid)
{
    FILE *f = fopen("/proc/net/unix", "r");
    if (!f)
        return 0;
    int n = 0;
    uid_t me = geteuid();
    char line[512];
    while (n < max && fgets(line, sizeof line, f)) {
        char *at = strstr(line, " @ito-view-v");
        unsigned uid;
        int pid, end = 0;
        if (!at || sscanf(at + 2, ITO__VIEW_NAME "%n", &uid, &pid, &end) != 2 || (at[2 + end] != '\n' && at[2 + end]))
            continue;
        if ((me != 0 && uid != me) || (only_pid > 0 && pid != only_pid))
            continue;
        bool seen = false;
        for (int i = 0; i < n; i++)
            seen |= ps[i].pid == pid;
        if (seen)
            continue;
        struct proc *p = &ps[n++];
        memset(p, 0, sizeof *p);
        p->pid = pid;
        p->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        int k = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, ITO__VIEW_NAME, uid, pid);
        struct ucred cr;
        socklen_t crlen = sizeof cr;
        /* The peer must be the process the name says: another user may have
         * taken a name. */
        if (p->fd < 0 ||
            connect(p->fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)k)) != 0 ||
            getsockopt(p->fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) != 0 || cr.pid != pid || cr.uid != uid) {
            if (p->fd >= 0)
                close(p->fd);
            p->fd = -1;
        }
    }
    fclose(f);
    uint64_t deadline = now_ns() + ANSWER_MS * 1000000ull;
    struct pollfd pf[MAX_PROCS];
    for (;;) {
        int np = 0;
        for (int i = 0; i < n; i++)
            if (ps[i].fd >= 0)
                pf[np++] = (struct pollfd){ .fd = ps[i].fd, .events = POLLIN };
        uint64_t now = now_ns();
        if (!np || now >= deadline)
            break;
        if (poll(pf, (nfds_t)np, (int)((deadline - now) / 1000000u) + 1) < 0 && errno != EINTR)
            break;
        for (int j = 0; j < np; j++) {
            if (!pf[j].revents)
                continue;
            struct proc *p = NULL;
            for (int i = 0; i < n; i++)
                if (ps[i].fd == pf[j].fd)
                    p = &ps[i];
            if (p->len + 4096 > p->cap) {
                size_t cap = p->cap * 2 + 8192;
                char *b = realloc(p->buf, cap);
                if (!b) {
                    close(p->fd), p->fd = -1;
                    continue;
                }
                p->buf = b, p->cap = cap;
            }
            ssize_t r = read(p->fd, p->buf + p->len, p->cap - p->len - 1);
            if (r > 0) {
                p->len += (size_t)r;
                p->buf[p->len] = '\0';
                if (p->len < 4 || strcmp(p->buf + p->len - 4, "end\n") != 0)
                    continue;   /* more to come */
            } else if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
                continue;
            }
            close(p->fd);
            p->fd = -1;
        }
    }
    for (int i = 0; i < n; i++) {
        if (ps[i].fd >= 0)
            close(ps[i].fd);
        ps[i].fd = -1;
        ps[i].answered = parse(&ps[i]);
    }
    return n;
}

/* ---- The allocation table ---- */

struct table_copy {
    bool present;
    char name[192];   /* its path */
    struct ito__table t;
};

static struct ito__table *table_open(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);   /* do not create it */
    if (fd < 0)
        return NULL;
    close(fd);
    struct ito__table *t;
    return ito__table_open(path, &t) == 0 ? t : NULL;
}

static void table_read(struct ito__table **t, struct table_copy *out)
{
    if (!*t)
        *t = table_open(out->name);
    out->present = *t != NULL;
    if (!*t)
        return;
    ito__table_lock(*t);
    ito__table_divide(*t);   /* drops the dead: none of them is shown */
    memcpy(&out->t, *t, sizeof out->t);
    ito__table_unlock(*t);
}

/* ---- The screen ---- */

static char *screen;
static size_t screen_len, screen_cap;

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(screen + screen_len, screen_cap - screen_len, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if ((size_t)n < screen_cap - screen_len) {
            screen_len += (size_t)n;
            return;
        }
        size_t cap = screen_cap * 2 + (size_t)n + 4096;
        char *s = realloc(screen, cap);
        if (!s)
            return;
        screen = s, screen_cap = cap;
    }
}

static double rate(uint64_t now, uint64_t before, uint64_t dt_ns)
{
    return dt_ns ? (double)(now - before) * 1e9 / (double)dt_ns : 0;
}

static void show_proc(const struct proc *p)
{
    char cpus[256] = "-";
    if (p->in_table) {
        cpus_str(&p->grant, cpus, sizeof cpus);
    } else if (p->answered) {
        ito__cpumask m;
        memset(&m, 0, sizeof m);
        bool any = false;
        for (int i = 0; i < p->nvp; i++)
            if (p->vp[i].cpu >= 0 && p->vp[i].cpu < ITO__ALLOC_MAX_CPUS && strcmp(p->vp[i].doing, "off") != 0)
                ito__cpumask_set(&m, p->vp[i].cpu), any = true;
        if (any)
            cpus_str(&m, cpus, sizeof cpus);
    }
    if (!p->answered) {
        out("%8d  %-16.16s %-8s %4d %4d %4d  %-9s %7s %5s %5s %7s %9s  (%s)\n", p->pid, p->tname, "-",
            p->tpriority, p->theld, p->twant, cpus, "-", "-", "-", "-", "-",
            "no view: ITO_VIEW=0, or not answering");
        return;
    }
    const struct proc *q = p->prev;
    uint64_t dt = q ? p->taken_ns - q->taken_ns : 0;
    char sw[32] = "-";
    if (q) {
        double r = 0;
        for (int i = 0; i < p->nvp; i++)
            r += rate(p->vp[i].switches, q->vp[i].switches, dt);
        snprintf(sw, sizeof sw, "%.0f", r);
    }
    char held[16], want[16], prio[16];
    snprintf(held, sizeof held, "%d", p->held);
    snprintf(want, sizeof want, "%d", p->want);
    snprintf(prio, sizeof prio, "%d", p->priority);
    out("%8d  %-16.16s %-8.8s %4s %4s %4s  %-9s %7d %5d %5d %7d %9s\n", p->pid, p->program, p->policy,
        p->sharing ? prio : "-", held, want, cpus, p->running + p->ready + p->blocked, p->running, p->ready,
        p->blocked, sw);
    out("%10s %4s %4s %-6s %-24s %5s %9s %8s %10s %8s\n", "", "VP", "CPU", "STATE", "THREAD", "QUEUE", "SWITCH/S",
        "STEAL/S", "HANDOFF/S", "SLICE/S");
    for (int i = 0; i < p->nvp; i++) {
        const struct vp_view *v = &p->vp[i];
        char th[64] = "", cpu[16] = "-", r[4][24];
        if (v->thread)
            snprintf(th, sizeof th, v->name[0] ? "t%u \"%.16s\"" : "t%u", v->thread, v->name);
        if (v->cpu >= 0 && strcmp(v->doing, "off") != 0)
            snprintf(cpu, sizeof cpu, "%d", v->cpu);
        const struct vp_view *w = q ? &q->vp[i] : NULL;
        uint64_t now[4] = { v->switches, v->steals, v->handoffs, v->slices };
        uint64_t then[4] = { w ? w->switches : 0, w ? w->steals : 0, w ? w->handoffs : 0, w ? w->slices : 0 };
        for (int k = 0; k < 4; k++) {
            if (w)
                snprintf(r[k], sizeof r[k], "%.0f", rate(now[k], then[k], dt));
            else
                snprintf(r[k], sizeof r[k], "-");
        }
        out("%10s %4d %4s %-6s %-24.24s %5d %9s %8s %10s %8s\n", "", i, cpu, v->doing, th, v->queued, r[0], r[1],
            r[2], r[3]);
    }
}

static int by_pid(const void *a, const void *b)
{
    const struct proc *x = a, *y = b;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* One refresh: ask, read the table, join them by pid. Returns how many
 * processes it found. */
static int sample(struct proc *ps, struct ito__table **t, struct table_copy *tc, const char *domain,
                  pid_t only_pid)
{
    int n = ask_all(ps, MAX_PROCS, only_pid);
    table_read(t, tc);
    if (tc->present) {
        for (int s = 0; s < ITO__ALLOC_SLOTS; s++) {
            const struct ito__table_slot *sl = &tc->t.slot[s];
            if (sl->state != ITO__SLOT_USED || (only_pid > 0 && sl->pid != only_pid))
                continue;
            struct proc *p = NULL;
            for (int i = 0; i < n; i++)
                if (ps[i].pid == sl->pid)
                    p = &ps[i];
            if (!p) {
                if (n == MAX_PROCS)
                    continue;
                p = &ps[n++];
                memset(p, 0, sizeof *p);
                p->fd = -1;
                p->pid = sl->pid;
            }
            p->in_table = true;
            memcpy(p->tname, sl->name, ITO__ALLOC_NAME_LEN);
            p->tname[ITO__ALLOC_NAME_LEN] = '\0';
            p->tpriority = sl->priority;
            p->twant = sl->want;
            p->theld = sl->ngrant;
            p->grant = sl->grant;
        }
    }
    if (domain) {
        /* Only the domain's processes. */
        int k = 0;
        for (int i = 0; i < n; i++) {
            if (ps[i].in_table)
                ps[k++] = ps[i];
            else
                proc_free(&ps[i]);
        }
        n = k;
    }
    qsort(ps, (size_t)n, sizeof *ps, by_pid);
    return n;
}

static void link_prev(struct proc *ps, int n, const struct proc *old, int nold)
{
    for (int i = 0; i < n; i++) {
        ps[i].prev = NULL;
        for (int j = 0; j < nold && ps[i].answered; j++)
            if (old[j].pid == ps[i].pid && old[j].answered && old[j].nvp == ps[i].nvp &&
                old[j].taken_ns < ps[i].taken_ns)
                ps[i].prev = &old[j];
    }
}

static void show(const struct proc *ps, int n, const struct table_copy *tc, double reallocs_per_s)
{
    time_t wall = time(NULL);
    struct tm tm;
    localtime_r(&wall, &tm);
    int viewed = 0;
    for (int i = 0; i < n; i++)
        viewed += ps[i].answered;
    out("ito-ctl %02d:%02d:%02d: %d ito process%s (%d answered)\n", tm.tm_hour, tm.tm_min, tm.tm_sec, n,
        n == 1 ? "" : "es", viewed);
    if (tc->present) {
        int sharing = 0;
        for (int s = 0; s < ITO__ALLOC_SLOTS; s++)
            sharing += tc->t.slot[s].state == ITO__SLOT_USED;
        char online[256];
        cpus_str(&tc->t.h.online, online, sizeof online);
        out("allocation %s: %d process%s sharing CPUs %s; %llu reallocations (%.1f/s); %llu lock takeovers, "
            "%llu rebuilds\n",
            tc->name, sharing, sharing == 1 ? "" : "es", online, (unsigned long long)tc->t.h.reallocations,
            reallocs_per_s, (unsigned long long)tc->t.h.takeovers, (unsigned long long)tc->t.h.rebuilds);
    } else {
        out("allocation %s: no table (no ito process of this user has shared processors there)\n", tc->name);
    }
    out("\n%8s  %-16s %-8s %4s %4s %4s  %-9s %7s %5s %5s %7s %9s\n", "PID", "PROGRAM", "POLICY", "PRIO", "HELD",
        "WANT", "CPUS", "THREADS", "RUN", "READY", "BLOCKED", "SWITCH/S");
    for (int i = 0; i < n; i++)
        show_proc(&ps[i]);
}

/* Write the screen: on a terminal, from the top, at most its height. */
static void flush_screen(bool tty)
{
    if (tty) {
        struct winsize ws;
        size_t end = screen_len;
        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 1) {
            int lines = 0;
            for (size_t i = 0; i < screen_len; i++)
                if (screen[i] == '\n' && ++lines == ws.ws_row - 1) {
                    end = i + 1;
                    break;
                }
        }
        fputs("\033[H\033[2J", stdout);
        fwrite(screen, 1, end, stdout);
    } else {
        fwrite(screen, 1, screen_len, stdout);
    }
    fflush(stdout);
    screen_len = 0;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

int main(int argc, char **argv)
{
    const char *domain = NULL;
    long interval_ms = 1000;
    pid_t only_pid = 0;
    int once = 0;
    for (int i = 1; i < argc; i++) {
        char *end;
        if (!strcmp(argv[i], "--once"))
            once = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            usage(stdout, 0);
        else if (!strcmp(argv[i], "--domain") && i + 1 < argc)
            domain = argv[++i];
        else if (!strcmp(argv[i], "--interval") && i + 1 < argc &&
                 (interval_ms = strtol(argv[++i], &end, 10)) > 0 && !*end && interval_ms <= 3600000)
            ;
        else if (!strcmp(argv[i], "--pid") && i + 1 < argc && (only_pid = (pid_t)strtol(argv[++i], &end, 10)) > 0 &&
                 !*end)
            ;
        else
            usage(stderr, 1);
    }
    const char *env_domain = getenv("ITO_ALLOC_DOMAIN");
    if (domain && !ito__table_domain_ok(domain)) {
        fprintf(stderr, "ito-ctl: '%s' is not a domain name: 1 to %d letters, digits, '-' and '_'\n", domain,
                ITO__ALLOC_DOMAIN_MAX);
        return 1;
    }
    if (!domain && env_domain && *env_domain && !ito__table_domain_ok(env_domain))
        env_domain = NULL;   /* as the processes do: no domain */
    static struct table_copy tc;
    ito__table_path(domain ? domain : env_domain && *env_domain ? env_domain : NULL, tc.name, sizeof tc.name);
    struct ito__table *t = NULL;
    if (domain && !(t = table_open(tc.name))) {
        fprintf(stderr, "ito-ctl: no allocation table %s: no ito process of this user has run in domain %s\n",
                tc.name, domain);
        return 2;
    }
    bool tty = !once && isatty(STDOUT_FILENO);
    static struct proc a[MAX_PROCS], b[MAX_PROCS];
    struct proc *cur = a, *old = b;
    int nold = 0;
    uint64_t last_reallocs = 0, last_t = 0;
    for (int round = 0;; round++) {
        int n = sample(cur, &t, &tc, domain, only_pid);
        link_prev(cur, n, old, nold);
        uint64_t now = now_ns();
        double rr = last_t && tc.present ? rate(tc.t.h.reallocations, last_reallocs, now - last_t) : 0;
        last_reallocs = tc.present ? tc.t.h.reallocations : 0;
        last_t = now;
        if (!once || round == 1) {
            show(cur, n, &tc, rr);
            if (!tty && !once)
                out("\n");
            flush_screen(tty);
            if (once)
                return n ? 0 : 2;
        }
        for (int i = 0; i < nold; i++)
            proc_free(&old[i]);
        struct proc *x = old;
        old = cur, nold = n, cur = x;
        sleep_ms(once ? 200 : interval_ms);
    }
}
