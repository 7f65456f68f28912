/* SPDX-License-Identifier: MIT */
/*
 * echo — a TCP echo server on loopback, one thread per connection, written in
 * plain blocking style (an accept loop; per connection: receive until end of
 * file, send back everything received), under a closed-loop load from
 * bench/echoload (a child process: both servers face the same client).
 *
 *   echo --impl ito|pthread --conns C [--cpus N] [--msg 64] [--warmup-ms W]
 *        [--duration-ms D] [--stack-kib 64]
 *
 * ito:     ito threads calling ito_accept / ito_recv / ito_send (the thread
 *          parks on its vproc's io_uring ring); N vprocs.
 * pthread: POSIX threads calling accept4 / recv / send, the process
 *          restricted to the first N usable CPUs.
 * Both: connection threads detached, with stacks of --stack-kib (64 KiB by
 * default, so that 10,000 POSIX threads fit); the listening socket is
 * blocking, with a backlog of 65535 (the kernel caps it at somaxconn).
 *
 * CPUs: the server uses the first N usable CPUs (default: all but one, at
 * least 1); the load generator is pinned to the last usable CPU when the
 * server leaves it free, else it shares the server's CPUs. The load
 * generator is started before the server's threads, so it never inherits
 * their pinning.
 *
 * Limits: every connection takes a descriptor on each side (the client is
 * another process). RLIMIT_NOFILE is raised to its hard limit; if that, the
 * ephemeral port range or (pthread) RLIMIT_NPROC cannot hold C connections,
 * the program prints {"skipped": true, "skip_reason": ...} and exits 0.
 *
 * Prints the load generator's measurements (msgs_per_s, p50_us, p99_us, ...:
 * see echoload.c) with the server's side: connections accepted, the most
 * connection threads alive at once, bytes echoed (must equal the bytes the
 * client sent), its CPU time (all phases; per message echoed) and
 * "server_verified" (every connection ended by end of file, bytes match; the
 * client's "verified": every echo was right).
 */
#include <fcntl.h>
#include <libgen.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "common.h"

extern char **environ;

static bool use_ito;
static size_t stack_bytes;
static int lfd;
static _Atomic long long accepted, alive, max_alive, echoed, finished;
static _Atomic int conn_errors;
static char first_error[256];

static void note_error(const char *what, int e)
{
    if (atomic_fetch_add(&conn_errors, 1) == 0)
        snprintf(first_error, sizeof first_error, "%s: %s", what, strerror(e));
}

/* One connection: receive until end of file, send back everything. */
static void *serve(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[2048];
    long long total = 0;
    for (;;) {
        ssize_t r = use_ito ? ito_recv(fd, buf, sizeof buf, 0) : recv(fd, buf, sizeof buf, 0);
        if (r == 0)
            break;
        if (r < 0) {
            note_error("recv", errno);
            break;
        }
        for (ssize_t off = 0; off < r;) {
            ssize_t w = use_ito ? ito_send(fd, buf + off, (size_t)(r - off), MSG_NOSIGNAL)
                                : send(fd, buf + off, (size_t)(r - off), MSG_NOSIGNAL);
            if (w < 0) {
                note_error("send", errno);
                goto out;
            }
            off += w;
        }
        total += r;
    }
out:
    if (use_ito)
        ito_close(fd);
    else
        close(fd);
    atomic_fetch_add(&echoed, total);
    atomic_fetch_add(&finished, 1);
    atomic_fetch_sub(&alive, 1);
    return NULL;
}

static void *acceptor(void *arg)
{
    for (;;) {
        int fd = use_ito ? ito_accept(lfd, NULL, NULL, SOCK_CLOEXEC) : accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            bench_fail("accept: %s", strerror(errno));
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        atomic_fetch_add(&accepted, 1);
        long long a = atomic_fetch_add(&alive, 1) + 1, m = atomic_load(&max_alive);
        while (a > m && !atomic_compare_exchange_weak(&max_alive, &m, a))
            ;
        if (use_ito) {
            ito_attr_t at;
            ito_thread_t t;
            CHECK0(ito_attr_init(&at));
            CHECK0(ito_attr_set_stack_size(&at, stack_bytes));
            CHECK0(ito_attr_set_detached(&at, true));
            CHECK0(ito_spawn(&t, &at, serve, (void *)(intptr_t)fd));
        } else {
            pthread_attr_t at;
            pthread_t t;
            CHECK0(pthread_attr_init(&at));
            CHECK0(pthread_attr_setstacksize(&at, stack_bytes));
            CHECK0(pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED));
            int e = pthread_create(&t, &at, serve, (void *)(intptr_t)fd);
            if (e)
                bench_fail("pthread_create (connection %lld): %s", atomic_load(&accepted), strerror(e));
            pthread_attr_destroy(&at);
        }
    }
    return NULL;
}

static __attribute__((noreturn, format(printf, 3, 4))) void skip(int cpus, int conns, const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    fprintf(stderr, "echo/%s: skipped: %s\n", bench_impl, why);
    json_begin(bench_exp, bench_impl);
    json_int("cpus", cpus);
    json_int("ncpu_usable", cpus_usable());
    json_int("conns", conns);
    json_bool("skipped", true);
    json_str("skip_reason", why);
    json_end();
    exit(0);
}

static void pause_ms(int ms)
{
    if (use_ito)
        ito_sleep_ns((uint64_t)ms * 1000000u);
    else
        nanosleep(&(struct timespec){ 0, ms * 1000000L }, NULL);
}

int main(int argc, char **argv)
{
    static const char *const known[] = { "--impl", "--conns", "--cpus", "--vprocs", "--msg", "--warmup-ms",
                                         "--duration-ms", "--stack-kib", NULL };
    bench_exp = "echo";
    bench_impl = arg_str(argc, argv, "--impl", "ito");
    args_check(argc, argv, known);
    use_ito = strcmp(bench_impl, "ito") == 0;
    if (!use_ito && strcmp(bench_impl, "pthread") != 0)
        bench_fail("--impl must be ito or pthread");
    int ncpu = cpus_usable();
    int cpus = (int)arg_int(argc, argv, "--cpus", arg_int(argc, argv, "--vprocs", ncpu > 1 ? ncpu - 1 : 1));
    if (cpus < 1 || cpus > ncpu)
        bench_fail("--cpus %d: between 1 and %d here", cpus, ncpu);
    int conns = (int)arg_int(argc, argv, "--conns", 100);
    long long kib = arg_int(argc, argv, "--stack-kib", 64);
    if (conns < 1 || kib < 16)
        bench_fail("--conns >= 1, --stack-kib >= 16");
    stack_bytes = (size_t)kib * 1024;
    int client_cpu = cpus < ncpu ? cpu_nth(ncpu - 1) : -1;

    /* limits: each side holds one descriptor per connection, plus a few */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        bench_fail("getrlimit: %s", strerror(errno));
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)conns + 64)
        skip(cpus, conns, "RLIMIT_NOFILE hard limit %llu < %d connections + 64 descriptors",
             (unsigned long long)rl.rlim_cur, conns);
    int plo = 0, phi = 0;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f && fscanf(f, "%d %d", &plo, &phi) == 2 && phi - plo + 1 < conns)
        skip(cpus, conns, "ephemeral port range %d-%d < %d connections", plo, phi, conns);
    if (f)
        fclose(f);
    struct rlimit np;
    if (!use_ito && getrlimit(RLIMIT_NPROC, &np) == 0 && np.rlim_cur != RLIM_INFINITY &&
        np.rlim_cur < (rlim_t)conns + 64)
        skip(cpus, conns, "RLIMIT_NPROC %llu < %d threads", (unsigned long long)np.rlim_cur, conns);

    lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lfd < 0)
        bench_fail("socket: %s", strerror(errno));
    struct sockaddr_in sa = { .sin_family = AF_INET };
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t salen = sizeof sa;
    if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, 65535) != 0 ||
        getsockname(lfd, (struct sockaddr *)&sa, &salen) != 0)
        bench_fail("bind/listen on 127.0.0.1: %s", strerror(errno));

    /* the load generator, next to this program; its stdout comes back here */
    char self[4096], client[4200];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl < 0)
        bench_fail("readlink /proc/self/exe: %s", strerror(errno));
    self[sl] = 0;
    snprintf(client, sizeof client, "%s/echoload", dirname(self));
    char a_port[16], a_conns[16], a_msg[16], a_warm[24], a_dur[24], a_cpu[16];
    snprintf(a_port, sizeof a_port, "%d", ntohs(sa.sin_port));
    snprintf(a_conns, sizeof a_conns, "%d", conns);
    snprintf(a_msg, sizeof a_msg, "%lld", arg_int(argc, argv, "--msg", 64));
    snprintf(a_warm, sizeof a_warm, "%lld", arg_int(argc, argv, "--warmup-ms", 500));
    snprintf(a_dur, sizeof a_dur, "%lld", arg_int(argc, argv, "--duration-ms", 2000));
    snprintf(a_cpu, sizeof a_cpu, "%d", client_cpu);
    char *cargv[] = { client, "--port", a_port, "--conns", a_conns, "--msg", a_msg, "--warmup-ms", a_warm,
                      "--duration-ms", a_dur, "--cpu", a_cpu, NULL };
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0)
        bench_fail("pipe2: %s", strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    pid_t pid;
    int e = posix_spawn(&pid, client, &fa, NULL, cargv, environ);
    if (e)
        bench_fail("posix_spawn %s: %s", client, strerror(e));
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);

    /* the server */
    ito_stats_t s0, s1;
    if (use_ito) {
        ito_start(cpus);
        ito_stats_get(&s0);
        ito_attr_t at;
        ito_thread_t t;
        CHECK0(ito_attr_init(&at));
        CHECK0(ito_attr_set_detached(&at, true));
        CHECK0(ito_spawn(&t, &at, acceptor, NULL));
    } else {
        restrict_to_cpus(cpus);
        pthread_t t;
        CHECK0(pthread_create(&t, NULL, acceptor, NULL));
    }

    /* wait for the client's report (ito: parks this thread, not vproc 0) */
    char line[8192];
    size_t len = 0;
    for (;;) {
        ssize_t r = use_ito ? ito_read(out[0], line + len, sizeof line - 1 - len)
                            : read(out[0], line + len, sizeof line - 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            bench_fail("reading the load generator's output: %s", strerror(errno));
        if (r == 0 || len + (size_t)r >= sizeof line - 1) {
            len += r > 0 ? (size_t)r : 0;
            break;
        }
        len += (size_t)r;
    }
    line[len] = 0;
    int status = 0;
    waitpid(pid, &status, 0);
    char *nl = strchr(line, '\n');
    if (nl)
        *nl = 0;
    char *err = strstr(line, "\"error\":\"");
    if (err || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char why[512] = "";
        if (err) {
            err += 9;
            size_t k = 0;
            while (err[k] && err[k] != '"' && k < sizeof why - 1)
                k++;
            memcpy(why, err, k);
            why[k] = 0;
        }
        bench_fail("load generator %s (status %d): %s%s%s", WIFSIGNALED(status) ? "killed" : "failed",
                   WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), why,
                   conn_errors ? "; server: " : "", conn_errors ? first_error : "");
    }
    /* the client closed every connection: each server thread reads end of
     * file and ends (up to 10 s) */
    uint64_t t_end = bench_now_ns();
    while (atomic_load(&finished) < conns && bench_now_ns() - t_end < 10000000000ull)
        pause_ms(2);
    double close_s = (double)(bench_now_ns() - t_end) / 1e9;
    if (use_ito)
        ito_stats_get(&s1);

    /* the client's fields, after its "exp" and "impl" */
    const char *body = strstr(line, "\"impl\":\"epoll\",");
    char *end = strrchr(line, '}');
    if (!body || !end)
        bench_fail("the load generator printed no result: '%.200s'", line);
    body += strlen("\"impl\":\"epoll\",");
    *end = 0;
    long long sent = -1;
    const char *bs = strstr(body, "\"bytes_sent\":");
    if (bs)
        sent = atoll(bs + strlen("\"bytes_sent\":"));
    bool ok = conn_errors == 0 && atomic_load(&finished) == conns && atomic_load(&echoed) == sent;

    json_begin(bench_exp, bench_impl);
    if (use_ito) {
        json_common_ito();
        json_ito_stats(&s0, &s1);
        json_bool("io_uring", ito_io_uring_active());
    } else {
        json_common_pthread(cpus);
    }
    json_int("stack_kib", kib);
    json_int("nofile_limit", (long long)rl.rlim_cur);
    json_sep();
    json_raw("%s", body);   /* "verified" among them: every echo was right (else it failed above) */
    json_int("server_accepted", atomic_load(&accepted));
    json_int("server_max_threads", atomic_load(&max_alive));
    json_int("server_finished", atomic_load(&finished));
    json_int("server_bytes_echoed", atomic_load(&echoed));
    json_num("server_close_s", close_s);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double sys_s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    double cpu_s = sys_s + (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
    json_num("server_cpu_s", cpu_s);
    json_num("server_sys_fraction", cpu_s > 0 ? sys_s / cpu_s : 0);
    if (sent > 0)
        json_num("server_cpu_us_per_msg", cpu_s * 1e6 / ((double)sent / (double)arg_int(argc, argv, "--msg", 64)));
    json_int("server_errors", atomic_load(&conn_errors));
    if (conn_errors)
        json_str("server_first_error", first_error);
    json_bool("server_verified", ok);
    if (!ok)
        json_str("error", conn_errors ? first_error
                 : atomic_load(&finished) != conns ? "connection threads still running 10 s after the client closed"
                 : "bytes echoed differ from the bytes the client sent");
    json_end();
    return ok ? 0 : 2;
}
