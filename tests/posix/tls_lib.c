/* SPDX-License-Identifier: MIT */
/* A library with thread-local variables in both models a shared library
 * uses, loaded with dlopen by identity.c after threads exist: general
 * dynamic (the DTV, allocated per thread on first use) and initial exec
 * (the static TLS surplus, which the C library fills in every thread it
 * knows of at dlopen). */
static __thread long dynamic_model = 1000;
static __thread long initial_exec __attribute__((tls_model("initial-exec"))) = 1001;

__attribute__((visibility("default"))) long tls_lib_get(int model)
{
    return model == 0 ? dynamic_model : initial_exec;
}

__attribute__((visibility("default"))) void tls_lib_set(int model, long v)
{
    if (model == 0)
        dynamic_model = v;
    else
        initial_exec = v;
}
