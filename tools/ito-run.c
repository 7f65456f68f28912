/* SPDX-License-Identifier: MIT */
/*
 * ito-run [--vprocs N] [--policy P] PROGRAM [ARGS...]
 *
 * Runs an unmodified, dynamically linked program with its POSIX threads on
 * ito: puts libito-pthread in front of the C library (LD_PRELOAD, ahead of
 * any preload already asked for), sets ITO_VPROCS and ITO_POLICY if given,
 * and executes the program in place. The library is looked up next to this
 * executable first (a build tree: build/ito-run beside
 * build/libito-pthread.so), then in the library folder it was installed to.
 * A statically linked program cannot take a preloaded library: ito-run says
 * so instead of running it on the C library's threads unnoticed.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: ito-run [--vprocs N] [--policy P] PROGRAM [ARGS...]\n"
               "Run a dynamically linked pthread program on ito threads (libito-pthread).\n"
               "  --vprocs N   processors to use (ITO_VPROCS; default: every CPU allowed)\n"
               "  --policy P   scheduling policy: ws, fifo, prio, prio-shared, affinity (ITO_POLICY)\n");
}

/* PROGRAM as execvp would find it. */
static bool resolve(const char *prog, char *out, size_t len)
{
    if (strchr(prog, '/')) {
        snprintf(out, len, "%s", prog);
        return access(out, X_OK) == 0;
    }
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *end = strchr(path, ':');
        size_t n = end ? (size_t)(end - path) : strlen(path);
        snprintf(out, len, "%.*s/%s", (int)n, n ? path : ".", prog);
        if (access(out, X_OK) == 0)
            return true;
        path += n + (end ? 1 : 0);
    }
    return false;
}

/* An ELF executable without an interpreter (PT_INTERP) is static. Scripts
 * and anything else are left to the kernel. */
static bool is_static_elf(const char *file)
{
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    Elf64_Ehdr eh;
    bool statik = false;
    if (read(fd, &eh, sizeof eh) == (ssize_t)sizeof eh && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
        eh.e_ident[EI_CLASS] == ELFCLASS64 && (eh.e_type == ET_EXEC || eh.e_type == ET_DYN)) {
        statik = true;
        for (int i = 0; i < eh.e_phnum; i++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) != (ssize_t)sizeof ph)
                break;
            if (ph.p_type == PT_INTERP) {
                statik = false;
                break;
            }
        }
    }
    close(fd);
    return statik;
}

static bool find_library(char *out, size_t len)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = 0;
            if (snprintf(out, len, "%s/%s", self, ITO_RUN_LIBNAME) < (int)len && access(out, R_OK) == 0)
                return true;
            if (snprintf(out, len, "%s/../lib/%s", self, ITO_RUN_LIBNAME) < (int)len && access(out, R_OK) == 0)
                return true;
        }
    }
    snprintf(out, len, "%s/%s", ITO_RUN_LIBDIR, ITO_RUN_LIBNAME);
    return access(out, R_OK) == 0;
}

int main(int argc, char **argv)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if ((!strcmp(argv[i], "--vprocs") || !strcmp(argv[i], "--policy")) && i + 1 < argc) {
            if (!strcmp(argv[i], "--vprocs")) {
                char *end;
                long v = strtol(argv[i + 1], &end, 10);
                if (*end || v < 1 || v > 4096) {
                    fprintf(stderr, "ito-run: --vprocs wants a number from 1 to 4096, not '%s'\n", argv[i + 1]);
                    return 2;
                }
                setenv("ITO_VPROCS", argv[i + 1], 1);
            } else {
                setenv("ITO_POLICY", argv[i + 1], 1);
            }
            i++;
        } else {
            fprintf(stderr, "ito-run: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (i >= argc) {
        usage(stderr);
        return 2;
    }
    char prog[PATH_MAX], lib[PATH_MAX];
    if (!resolve(argv[i], prog, sizeof prog)) {
        fprintf(stderr, "ito-run: %s: command not found\n", argv[i]);
        return 127;
    }
    if (is_static_elf(prog)) {
        fprintf(stderr, "ito-run: %s is statically linked: its threads are the C library's own and "
                        "cannot be replaced at run time. Link it dynamically, or link it with "
                        "-lito-pthread.\n", prog);
        return 126;
    }
    if (!find_library(lib, sizeof lib)) {
        fprintf(stderr, "ito-run: %s not found next to ito-run or in %s; is ito installed?\n",
                ITO_RUN_LIBNAME, ITO_RUN_LIBDIR);
        return 127;
    }
    const char *old = getenv("LD_PRELOAD");
    size_t n = strlen(lib) + (old ? strlen(old) + 1 : 0) + 1;
    char *preload = malloc(n);
    if (!preload)
        return 1;
    snprintf(preload, n, "%s%s%s", lib, old && *old ? ":" : "", old ? old : "");
    setenv("LD_PRELOAD", preload, 1);
    execv(prog, argv + i);
    fprintf(stderr, "ito-run: cannot execute %s: %s\n", prog, strerror(errno));
    return 126;
}
