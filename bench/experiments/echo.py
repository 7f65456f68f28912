# SPDX-License-Identifier: MIT
"""Echo server (ito's own target): one thread per connection under a closed-loop load."""
from harness.experiment import Experiment, first_data, run_notes
from harness.fmt import Table, cpu_label, fmt_cell, fmt_ratio, fmt_us
from harness.runner import Config
from harness.targets import Target, target_note
from experiments.kpingpong import relative


def rate(v):
    return "%.0fk" % (v / 1e3) if v >= 1e4 else "%.0f" % v


def rng(st, f):
    m, lo, hi = st
    return "%s (%s - %s)" % (f(m), f(lo), f(hi)) if m is not None else "-"


class Echo(Experiment):
    name = "echo"
    order = 150
    title = "Echo server: one thread per connection, closed-loop load"
    source = "ito's server target (thread per connection, 10,000 connections)"
    summary = ("echo server", "ito's target", "TCP echo server on loopback, one thread per connection, 100 / 1,000 / "
               "10,000 connections of a closed-loop client (a separate process, the same for both); throughput "
               "and p99 latency")
    programs = ("echo", "echoload")
    targets = (Target("echo_tput", "echo server, 10,000 connections: ito throughput >= 1.3x POSIX threads' "
                      "(ito/pthread)", ">=", 1.3, "x", key="echo/ito/10000",
                      value=relative("echo/ito/10000", "msgs_per_s"), show=">= 1.3x pthread"),
               Target("echo_p99", "echo server, 10,000 connections: ito p99 latency <= POSIX threads' (ito/pthread)",
                      "<=", 1.0, "x", key="echo/ito/10000", value=relative("echo/ito/10000", "p99_us"),
                      show="p99 <= pthread"))
    notes = ("bench/echo starts bench/echoload (one kernel thread, epoll, non-blocking sockets) as a child "
             "process and runs the server: an accept loop spawning one thread per connection (64 KiB stacks for "
             "both), each receiving until end of file and sending back what it got; ito threads use "
             "ito_accept/ito_recv/ito_send. The client connects in batches of 500 (each connection makes one "
             "round trip before the next batch), loops during the warm-up, then counts the round trips that "
             "complete in the window (throughput). Latency: every round trip under way at some moment of the "
             "window, including those still in flight at its end (they complete after it, with no new load), "
             "so a connection the server starves counts with the time it waited (log-linear histogram, < 3 % "
             "error); a starved connection's wait, hence p99, grows with the length of the run. Every echo is "
             "checked byte for byte, and the server's bytes echoed must equal the client's bytes sent. "
             "\"fairness\" is Jain's index of round trips per connection in the window (1: equal; "
             "1/connections: one got all), \"stalled\" the connections that completed none in it; in a closed "
             "loop the mean latency is connections / throughput whatever the server does. A point "
             "that a system limit (RLIMIT_NOFILE, ephemeral ports, RLIMIT_NPROC) does not allow is skipped "
             "and says so.")

    def configs(self, ctx):
        # the server on all CPUs but one, the load generator (one thread) on that one
        ncpu = ctx.ncpu
        srv = max(1, ncpu - 1)
        timing = (["--warmup-ms", 1000, "--duration-ms", 5000] if ctx.full
                  else ["--warmup-ms", 500, "--duration-ms", 1500])
        cs = []
        for conns in (100, 1000, 10000):
            pk = "echo/pthread/%d" % conns
            for impl in ("pthread", "ito"):
                cs.append(Config(self.name, "echo/%s/%d" % (impl, conns), impl, "%s connections" % format(conns, ","),
                                 "echo", ["--impl", impl, "--cpus", srv, "--conns", conns] + timing, srv,
                                 "msgs_per_s", "msg/s", ctx.R(3, 5), timeout=120, x=conns,
                                 pair=pk if impl == "ito" else None, load_cpus=min(ncpu, srv + 1)))
        return cs

    def tables(self, ctx):
        tput, lat, notes = [], [], []
        for conns in sorted({c.x for c in self.cfgs}):
            i, p = ctx.by_key.get("echo/ito/%d" % conns), ctx.by_key.get("echo/pthread/%d" % conns)
            iq, pq = i.field_stats("msgs_per_s"), p.field_stats("msgs_per_s")
            i99, p99 = i.field_stats("p99_us"), p.field_stats("p99_us")
            for c in (i, p):
                notes += run_notes(c)
                fair = c.field_stats("fairness")[0]
                if fair is not None:
                    notes.append("%s %s: fairness %.2f, stalled conns %d, setup %.2f s" % (
                        c.impl, c.label, fair, c.field_stats("stalled_conns")[0], c.field_stats("setup_s")[0]))
            tput.append([format(conns, ","), rng(iq, rate), rng(pq, rate),
                         fmt_ratio(iq[0] / pq[0]) if iq[0] and pq[0] else "-"])
            lat.append([format(conns, ","), fmt_us(i.field_stats("p50_us")[0]), fmt_us(p.field_stats("p50_us")[0]),
                        fmt_cell(*i99, "us"), fmt_cell(*p99, "us"),
                        fmt_ratio(i99[0] / p99[0]) if i99[0] and p99[0] else "-"])
        c = self.cfgs[0]
        d = first_data(self.cfgs)
        cap = ("64-byte messages, closed loop, %s warm-up + %s measured per run; server on %s, load generator "
               "on %s" % ("%g s" % d["warmup_s"] if d else "?", "%g s" % d["duration_s"] if d else "?",
                          cpu_label(c.cpus), "another CPU" if c.load_cpus > c.cpus else "the same CPUs"))
        return [Table(["connections", "ito msg/s (min-max)", "pthread msg/s (min-max)", "ito/pthread"], tput,
                      "Throughput: " + cap, [target_note(ctx.target("echo_tput"))]),
                Table(["connections", "ito p50", "pthread p50", "ito p99 (min-max)", "pthread p99 (min-max)",
                       "p99 ito/pthread"], lat, "Latency (medians over the runs)",
                      [target_note(ctx.target("echo_p99"))] + notes)]

    def plots(self, pl, ctx):
        ec = self.cfgs
        if not any(c.ok_runs() for c in ec):
            return
        fig, axs = pl.plt.subplots(1, 2, figsize=(11, 4.4))
        for impl, color, label in (("ito", "tab:blue", "ito"), ("pthread", "tab:orange", "POSIX threads")):
            pts = sorted([c for c in ec if c.impl == impl and c.ok_runs()], key=lambda c: c.x)
            for ax, field, scale in ((axs[0], "msgs_per_s", 1e-3), (axs[1], "p99_us", 1e-3)):
                st = [c.field_stats(field) for c in pts]
                ax.errorbar([c.x for c in pts], [m * scale for m, _, _ in st],
                            yerr=[[(m - lo) * scale for m, lo, _ in st], [(hi - m) * scale for m, _, hi in st]],
                            marker="o", capsize=3, color=color, label=label)
        srv = ec[0]
        for ax, ylabel in ((axs[0], "throughput (thousand messages/s)"), (axs[1], "p99 latency (ms, log scale)")):
            ax.set_xscale("log")
            ax.set_xticks([100, 1000, 10000])
            ax.set_xticklabels(["100", "1,000", "10,000"])
            ax.minorticks_off()
            ax.set_xlabel("concurrent connections (one thread each)")
            ax.set_ylabel(ylabel)
            ax.grid(alpha=0.3, which="both")
            ax.legend()
        axs[0].set_ylim(bottom=0)
        axs[1].set_yscale("log")
        fig.suptitle("TCP echo server on loopback, 64-byte messages, closed loop (median, min-max); server on %s, "
                     "load generator on %s\n%s" % (cpu_label(srv.cpus), "another CPU" if srv.load_cpus > srv.cpus
                                                    else "the same CPUs", pl.machine), fontsize=9)
        pl.save(fig, "echo.png")


EXPERIMENT = Echo()
