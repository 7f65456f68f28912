/* SPDX-License-Identifier: MIT */
/* Running out of descriptors and kernel threads (issue 22, item 7). Each
 * part runs in a fresh child process, under a time limit (a hang fails):
 *
 *   nofile_after   ito running (2 vprocs), then RLIMIT_NOFILE lowered so
 *                  that no descriptor is free: ito_openat, ito_accept (of a
 *                  connection waiting in the backlog), pipe and socket fail
 *                  with EMFILE, cleanly, while threads go on spawning,
 *                  joining, sleeping, moving numbered words through a pipe
 *                  and making a blocking call that hands its vproc on; once
 *                  a descriptor is freed, ito_openat and ito_accept work
 *                  again (the connection was not lost).
 *   nofile_before  no descriptor free when ito starts: ito_init succeeds
 *                  (or fails with an error code, never an abort); with the
 *                  limit raised again, the program runs its workload.
 *   nproc          RLIMIT_NPROC at the kernel threads the user has now plus
 *                  0, 1, 2, 3: ito cannot start all of its kernel threads
 *                  (vprocs, monitor, spares). ito_init succeeds or returns
 *                  an error code; when it succeeds the workload runs to its
 *                  end. Root is not held to RLIMIT_NPROC: as root the part
 *                  runs as the user "nobody" (skipped where that user
 *                  cannot be taken); the allocator is off there
 *                  (ITO_ALLOCATOR=0), so that it leaves no table of that
 *                  user's behind.
 * (ulimit -v and vm.max_map_count: issue 22 item 2, tested with its fix.)
 *
 * Prints one line per part, "exhaust: part=... result=ok ...", with the
 * calls refused and what ito_init returned. */
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "common.h"

/* ---- a small workload, run under each limit ---- */

static void *leaf(void *a) { return (void *)((uintptr_t)a + 1); }

static int wpipe[2];
enum { WORDS = 1 << 16 };

static void *pipe_writer(void *a)
{
    (void)a;
    for (uint64_t i = 0; i < WORDS;) {
        uint64_t buf[64];
        int n = 0;
        for (; n < 64 && i < WORDS; n++)
            buf[n] = i++;
        const char *p = (const char *)buf;
        size_t left = (size_t)n * 8;
        while (left) {
            ssize_t w = ito_write(wpipe[1], p, left);
            CHECK(w > 0);
            p += w;
            left -= (size_t)w;
        }
    }
    return NULL;
}

static void *pipe_reader(void *a)
{
    (void)a;
    uint64_t expect = 0;
    unsigned char buf[1000];
    size_t have = 0;
    while (expect < WORDS) {
        ssize_t r = ito_read(wpipe[0], buf + have, sizeof buf - have);
        CHECK(r > 0);
        have += (size_t)r;
        size_t k = 0;
        for (; k + 8 <= have; k += 8) {
            uint64_t w;
            memcpy(&w, buf + k, 8);
            CHECK_EQ(w, expect);
            expect++;
        }
        memmove(buf, buf + k, have - k);
        have -= k;
    }
    return NULL;
}

static int bpipe[2];

static void *blocked_reader(void *a)
{
    (void)a;
    char c;
    ssize_t r = ITO_BLOCKING(read(bpipe[0], &c, 1));   /* blocks in the kernel: the vproc is handed on */
    CHECK_EQ(r, 1);
    CHECK_EQ(c, 'x');
    return NULL;
}

static void *late_writer(void *a)
{
    (void)a;
    OK(ito_sleep_ns(20000000));
    CHECK_EQ(write(bpipe[1], "x", 1), 1);
    return NULL;
}

/* Spawn and join, sleep, a pipe's worth of numbered words, one blocking
 * call: everything must end, and right. The pipes are made by the caller. */
static void workload(long spawns)
{
    for (long i = 0; i < spawns; i++) {
        ito_thread_t t;
        void *r;
        OK(ito_spawn(&t, NULL, leaf, (void *)(uintptr_t)i));
        OK(ito_join(t, &r));
        CHECK_EQ((uintptr_t)r, (uintptr_t)i + 1);
    }
    uint64_t t0 = ito_now_ns();
    OK(ito_sleep_ns(2000000));
    CHECK(ito_now_ns() - t0 >= 2000000);
    ito_thread_t w, r, b, l;
    OK(ito_spawn(&r, NULL, pipe_reader, NULL));
    OK(ito_spawn(&w, NULL, pipe_writer, NULL));
    OK(ito_spawn(&b, NULL, blocked_reader, NULL));
    OK(ito_spawn(&l, NULL, late_writer, NULL));
    OK(ito_join(w, NULL));
    OK(ito_join(r, NULL));
    OK(ito_join(l, NULL));
    OK(ito_join(b, NULL));
}

static void make_pipes(void)
{
    CHECK(pipe2(wpipe, O_CLOEXEC) == 0);
    CHECK(pipe2(bpipe, O_CLOEXEC) == 0);
}

/* ---- descriptors ---- */

static int highest_fd(void)
{
    DIR *d = opendir("/proc/self/fd");
    CHECK(d);
    int hi = -1, self = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            int fd = atoi(e->d_name);
            if (fd != self && fd > hi)
                hi = fd;
        }
    closedir(d);
    return hi;
}

static int fillers[4096], nfillers;

/* Lower the soft RLIMIT_NOFILE to the highest descriptor + 1 and fill the
 * holes below it: no descriptor is free. */
static void no_fd_left(void)
{
    struct rlimit rl;
    CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    rl.rlim_cur = (rlim_t)highest_fd() + 1;
    CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
    nfillers = 0;
    for (;;) {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            CHECK_EQ(errno, EMFILE);
            break;
        }
        CHECK(nfillers < 4096);
        fillers[nfillers++] = fd;
    }
}

static void raise_nofile(void)
{
    struct rlimit rl;
    CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    rl.rlim_cur = rl.rlim_max;
    CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
}

static int refused;   /* calls that failed with EMFILE, as they must */

#define EXPECT_EMFILE(call)                                                             \
    do {                                                                                \
        long r_ = (long)(call);                                                         \
        int e_ = test_errno();                                                          \
        if (r_ != -1 || e_ != EMFILE) {                                                 \
            fprintf(stderr, "%s:%d: %s returned %ld (%s), expected -1/EMFILE\n",        \
                    __FILE__, __LINE__, #call, r_, r_ < 0 ? strerror(e_) : "no error"); \
            abort();                                                                    \
        }                                                                               \
        refused++;                                                                      \
    } while (0)

static int lfd;
static struct sockaddr_un addr;
static socklen_t addrlen;

static void listen_and_connect(int *client)
{
    lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(lfd >= 0);
    addr.sun_family = AF_UNIX;
    int len = snprintf(addr.sun_path + 1, sizeof addr.sun_path - 1, "ito-exhaust-%d", (int)getpid());
    addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len);
    CHECK(bind(lfd, (struct sockaddr *)&addr, addrlen) == 0);
    CHECK(listen(lfd, 8) == 0);
    *client = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(*client >= 0);
    CHECK(ito_connect(*client, (struct sockaddr *)&addr, addrlen) == 0);
    CHECK_EQ(ito_write(*client, "hello", 5), 5);
}

static void *try_all(void *a)
{
    (void)a;
    int p[2];
    EXPECT_EMFILE(ito_openat(AT_FDCWD, "/dev/null", O_RDONLY, 0));
    EXPECT_EMFILE(ito_accept(lfd, NULL, NULL, SOCK_CLOEXEC));
    EXPECT_EMFILE(pipe2(p, O_CLOEXEC));
    EXPECT_EMFILE(socket(AF_UNIX, SOCK_STREAM, 0));
    EXPECT_EMFILE(dup(0));
    return NULL;
}

static void part_nofile_after(void)
{
    ito_config_t c = ITO_CONFIG_INIT;
    c.vprocs = 2;
    OK(ito_init(&c));
    make_pipes();
    int client;
    listen_and_connect(&client);
    workload(100);   /* every kernel thread and ring ito wants, started */

    no_fd_left();
    /* From main and from a spawned thread, while the workload runs. */
    try_all(NULL);
    ito_thread_t t;
    OK(ito_spawn(&t, NULL, try_all, NULL));
    OK(ito_join(t, NULL));
    workload(test_scaled(10000));
    try_all(NULL);

    /* One descriptor free again: what was refused now works. */
    close(fillers[--nfillers]);
    int fd = ito_openat(AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC, 0);
    CHECK(fd >= 0);
    OK(ito_close(fd));
    int s = ito_accept(lfd, NULL, NULL, SOCK_CLOEXEC);
    CHECK(s >= 0);   /* the connection waited in the backlog */
    char buf[8];
    CHECK_EQ(ito_read(s, buf, sizeof buf), 5);
    CHECK(!memcmp(buf, "hello", 5));
    OK(ito_close(s));
    printf("exhaust: part=nofile_after result=ok fds=%d refused=%d (EMFILE: ito_openat, ito_accept, pipe2, "
           "socket, dup) io_uring=%d\n", highest_fd() + 1, refused, ito_io_uring_active());
}

static void part_nofile_before(void)
{
    make_pipes();
    no_fd_left();
    int e = ito_init(NULL);
    if (e != 0) {
        CHECK(e == EMFILE || e == EAGAIN || e == ENOMEM);
        raise_nofile();
        printf("exhaust: part=nofile_before result=ok ito_init=%s (refused cleanly)\n", strerror(e));
        return;
    }
    bool ring = ito_io_uring_active();
    raise_nofile();
    workload(test_scaled(10000));
    printf("exhaust: part=nofile_before result=ok ito_init=0 vprocs=%d io_uring=%d\n", ito_vproc_count(), ring);
}

/* ---- kernel threads ---- */

/* Kernel threads (tasks) whose real user is uid. */
static int user_tasks(uid_t uid)
{
    DIR *d = opendir("/proc");
    CHECK(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int pid = atoi(e->d_name);
        if (pid <= 0)
            continue;
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/%d/status", pid);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        unsigned ruid = (unsigned)-1;
        int threads = 0;
        while (fgets(line, sizeof line, f)) {
            sscanf(line, "Uid: %u", &ruid);
            sscanf(line, "Threads: %d", &threads);
        }
        fclose(f);
        if (ruid == uid)
            n += threads;
    }
    closedir(d);
    return n;
}

static int nproc_extra;

static void part_nproc(void)
{
    if (geteuid() == 0) {
        struct passwd *pw = getpwnam("nobody");
        uid_t uid = pw ? pw->pw_uid : 65534;
        gid_t gid = pw ? pw->pw_gid : 65534;
        if (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0) {
            printf("exhaust: part=nproc result=skipped (cannot become the user nobody: %s)\n", strerror(errno));
            return;
        }
    }
    setenv("ITO_ALLOCATOR", "0", 1);
    int base = user_tasks(getuid());
    struct rlimit rl = { (rlim_t)(base + nproc_extra), (rlim_t)(base + nproc_extra) };
    CHECK(setrlimit(RLIMIT_NPROC, &rl) == 0);
    make_pipes();
    ito_config_t c = ITO_CONFIG_INIT;
    c.vprocs = 2;
    int e = ito_init(&c);
    if (e != 0) {
        CHECK(e == EAGAIN || e == ENOMEM);
        printf("exhaust: part=nproc extra_threads=%d result=ok ito_init=%s (refused cleanly)\n", nproc_extra,
               strerror(e));
        return;
    }
    workload(test_scaled(10000));
    printf("exhaust: part=nproc extra_threads=%d result=ok ito_init=0 vprocs=%d kernel_threads=%d\n", nproc_extra,
           ito_vproc_count(), user_tasks(getuid()) - base + 1);
}

/* ---- the parts, each in a child ---- */

static int run_child(const char *name, void (*fn)(void), int limit_s)
{
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        alarm((unsigned)limit_s);   /* a hang ends as SIGALRM */
        fn();
        fflush(stdout);
        _exit(0);
    }
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    char sb[128];
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "exhaust: part %s failed: %s%s\n", name, test_status_str(st, sb, sizeof sb),
                WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ? " (it hung)" : "");
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *only = argc > 1 ? argv[1] : NULL;
    int bad = 0;
    if (!only || !strcmp(only, "nofile_after"))
        bad += run_child("nofile_after", part_nofile_after, 60);
    if (!only || !strcmp(only, "nofile_before"))
        bad += run_child("nofile_before", part_nofile_before, 60);
    if (!only || !strcmp(only, "nproc")) {
        for (nproc_extra = 0; nproc_extra <= 3; nproc_extra++) {
            char name[32];
            snprintf(name, sizeof name, "nproc+%d", nproc_extra);
            bad += run_child(name, part_nproc, 60);
        }
    }
    return bad ? 1 : 0;
}
