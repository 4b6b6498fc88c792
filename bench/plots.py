"""The pictures of the in-vitro benchmarks (issue 7): one function per benchmark, JSON result in, PNG out.

Role: drawing only. Each benchmark module measures and writes its JSON; the function of the
same name here draws that result with matplotlib (the ``bench`` extra, Agg backend: no
display) next to ``bench/RESULTS.md``. Medians are lines, single runs are dots, so the noise
of the shared machine stays visible.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

Result = dict[str, Any]


def _save(fig: Figure, path: Path) -> None:
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"wrote {path}")


def _runs(ax: Axes, xs: list[float], runs: list[list[dict[str, float]]], key: str, color: str) -> None:
    """Each run of each point as a faint dot."""
    for x, rs in zip(xs, runs, strict=True):
        ax.scatter([x] * len(rs), [r[key] for r in rs], color=color, alpha=0.35, s=14, zorder=3)


def fetchers_sweep(result: Result, path: Path) -> None:
    points = result["points"]
    params = result["parameters"]
    xs = [p["fetchers"] for p in points]
    runs = [result["runs"][str(x)] for x in xs]
    fig, (speed, wire) = plt.subplots(2, 1, figsize=(7, 6.5), sharex=True)
    speed.plot(xs, [p["pages_per_second"] for p in points], marker="o", label="pages/s (median, warm)")
    _runs(speed, xs, runs, "pages_per_second", "tab:blue")
    top = max(p["pages_per_second"] for p in points) * 1.3
    speed.plot(xs, [x / params["latency"] for x in xs], linestyle=":", color="grey",
               label=f"N / latency ({params['latency']:g} s)")
    speed.set_ylim(0, top)
    speed.set_ylabel("pages/s")
    speed.legend(loc="upper left", fontsize="small")
    speed.set_title("Fetchers sweep: no politeness delay, bandwidth-capped in-vitro web")
    wire.plot(xs, [p["mb_per_second"] for p in points], marker="o", color="tab:purple", label="MB/s received")
    _runs(wire, xs, runs, "mb_per_second", "tab:purple")
    wire.axhline(params["bandwidth"] / 1e6, linestyle="--", color="tab:red", label="the web's bandwidth cap")
    wire.plot(xs, [p["crawler_cpu_share"] for p in points], marker=".", linestyle="-.", color="tab:green",
              label="crawler CPU (cores)")
    wire.set_ylim(0, max(1.0, params["bandwidth"] / 1e6) * 1.4)
    wire.set_ylabel("MB/s; CPU cores")
    wire.set_xscale("log", base=2)
    wire.set_xticks(xs, [str(x) for x in xs])
    wire.set_xlabel("fetch coroutines")
    wire.legend(loc="upper left", fontsize="small")
    _save(fig, path)


def politeness_sweep(result: Result, path: Path) -> None:
    points = result["points"]
    xs = [p["ip_delay"] for p in points]
    runs = [result["runs"][str(x)] for x in xs]
    fig, (front, speed, cpu) = plt.subplots(3, 1, figsize=(7, 9), sharex=True)
    front.plot(xs, [p["front"] for p in points], marker="o", label="front: IPs with work (mean, warm)")
    front.plot(xs, [p["required_front"] for p in points], marker="s", linestyle="--", label="required front")
    front.plot(xs, [p["littles_law_front"] for p in points], marker="^", linestyle=":",
               label="IPs busy by Little's law: pages/s × (IP delay + fetch time)")
    _runs(front, xs, runs, "front", "tab:blue")
    front.axhline(result["web_ips"], color="grey", linewidth=0.8, label="IPs of the web")
    front.set_ylabel("IPs")
    front.legend(fontsize="small")
    speed.plot(xs, [p["pages_per_second"] for p in points], marker="o", color="tab:orange", label="pages/s (warm)")
    _runs(speed, xs, runs, "pages_per_second", "tab:orange")
    speed.set_ylim(bottom=0)
    speed.set_ylabel("pages/s")
    speed.legend(fontsize="small")
    cpu.plot(xs, [p["crawler_cpu_share"] for p in points], marker="o", color="tab:green", label="crawler CPU (cores)")
    cpu.plot(xs, [p["server_cpu_share"] for p in points], marker=".", color="grey", label="in-vitro server CPU")
    _runs(cpu, xs, runs, "crawler_cpu_share", "tab:green")
    cpu.set_ylim(0, 2)
    cpu.set_ylabel("CPU share (cores)")
    cpu.set_xscale("log", base=2)
    cpu.set_xticks(xs, [f"{x:g}" for x in xs])
    cpu.set_xlabel("IP delay (s); host delay = 8 × IP delay")
    cpu.legend(fontsize="small")
    front.set_title("Politeness sweep: front, throughput and CPU against the delay")
    _save(fig, path)


def raw_speed(result: Result, path: Path) -> None:
    fig, (speed, memory) = plt.subplots(2, 1, figsize=(7, 6.5), sharex=True)
    for i, run in enumerate(result["timelines"]):
        t = [s["t"] for s in run]
        rates = [(b["pages"] - a["pages"]) / (b["t"] - a["t"]) for a, b in zip(run, run[1:], strict=False)]
        speed.plot(t[1:], rates, linewidth=1, label=f"run {i + 1}")
        memory.plot(t, [s["rss"] / 2**20 for s in run], linewidth=1, label=f"run {i + 1}")
    speed.set_ylabel("pages/s (per second)")
    speed.set_ylim(bottom=0)
    speed.legend(fontsize="small")
    memory.set_ylabel("resident memory (MiB)")
    memory.set_ylim(bottom=0)
    memory.set_xlabel("seconds since the crawl started")
    s = result["settings"]
    speed.set_title(f"Raw speed: IP delay {s['ip_delay']:g} s, host delay {s['host_delay']:g} s, "
                    f"{s['fetchers']} fetchers, {result['hosts']:,} hosts")
    _save(fig, path)


def engine_overhead(result: Result, path: Path) -> None:
    stages = sorted(result["stages"].items(), key=lambda kv: kv[1]["us_per_page"])
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(stages) + 1.5))
    ax.barh([name for name, _ in stages], [v["us_per_page"] for _, v in stages], color="tab:blue")
    for i, (_, v) in enumerate(stages):
        ax.text(v["us_per_page"], i, f" {v['us_per_page']:.0f} µs ({100 * v['share']:.0f}%)", va="center",
                fontsize="small")
    ax.set_xlabel("CPU µs per page")
    ax.set_xlim(0, max(v["us_per_page"] for _, v in stages) * 1.35)
    ax.set_title(f"CPU per page by stage, network replaced\n(engine alone: "
                 f"{result['median']['engine_pages_per_cpu_second']:.0f} pages per CPU-second)")
    _save(fig, path)


def scrapy_side(result: Result, path: Path) -> None:
    names = ("crawl", "scrapy")
    fig, axes = plt.subplots(1, 2, figsize=(8, 4))
    for ax, key, label in zip(axes, ("pages_per_second", "pages_per_cpu_second"),
                              ("pages/s", "pages per CPU-second"), strict=True):
        medians = [result["median"][n][key] for n in names]
        ax.bar(names, medians, color=["tab:blue", "tab:orange"])
        for i, n in enumerate(names):
            ax.scatter([i] * len(result["runs"][n]), [r[key] for r in result["runs"][n]], color="black", s=12, zorder=3)
            ax.text(i, medians[i], f"{medians[i]:.0f}", ha="center", va="bottom")
        ax.set_ylabel(label)
        ax.set_title(f"{label}: ratio {result['ratios'][key]:.1f}x")
    fig.suptitle(f"The same in-vitro web through the same proxy, host delay {result['host_delay']:g} s")
    _save(fig, path)


def clustergraph_eval(result: Result, path: Path) -> None:
    """Valuable downloads against downloads, per site and budget, one line per method (d, dg, gd)."""
    panels = [(site, budget, scored) for site in result["sites"] for budget, scored in site["budgets"].items()]
    columns = min(4, len(panels))
    rows = (len(panels) + columns - 1) // columns
    fig, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.4 * rows), squeeze=False)
    styles = {"d": ("tab:gray", "-"), "dg": ("tab:blue", "--"), "gd": ("tab:orange", ":")}
    for ax, (site, budget, scored) in zip(axes.flat, panels, strict=False):
        for method, s in scored.items():
            curve = s["curve"]
            color, line = styles.get(method, ("black", "-"))
            ax.plot(range(1, len(curve) + 1), curve, color=color, linestyle=line,
                    label=f"{method}: {s['valuable_share']:.2f}")
        ax.plot([0, int(budget)], [0, int(budget)], color="black", linewidth=0.5, alpha=0.3)
        ax.set_title(f"{site['label']}, budget {budget}", fontsize=9)
        ax.set_xlabel("downloads")
        ax.set_ylabel("valuable new downloads")
        ax.legend(fontsize=8, title="valuable share", title_fontsize=8)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    _save(fig, path)


def source_eval(result: Result, path: Path) -> None:
    """Harvest rate (VR or HR) against downloads: a row per site, a panel per task, a line per method."""
    rows = []
    for site in result["sites"]:
        panels = [("UCC", site["ucc"])] if "ucc" in site else []
        rows.append(panels + [(f"{role}: {task['type']}", task) for role, task in site.get("target", {}).items()])
    columns = max((len(row) for row in rows), default=1) or 1
    fig, axes = plt.subplots(len(rows) or 1, columns, figsize=(4.2 * columns, 3.2 * max(1, len(rows))),
                             squeeze=False)
    styles = {"bfs": ("tab:gray", "-"), "source": ("tab:green", "-"), "clustergraph": ("tab:orange", ":")}
    for ax in axes.flat:
        ax.set_visible(False)
    for panels, site, line_axes in zip(rows, result["sites"], axes, strict=False):
        for ax, (name, task) in zip(line_axes, panels, strict=False):
            ax.set_visible(True)
            for method, s in task["methods"].items():
                color, line = styles.get(method, ("black", "-"))
                ax.plot([n for n, _ in s["curve"]], [h / n for n, h in s["curve"]], color=color, linestyle=line,
                        label=f"{method}: {s['ratio']:.2f}")
            ax.set_ylim(0, 1.02)
            ax.set_title(f"{site['label']}, {name}, budget {task['budget']}", fontsize=9)
            ax.set_xlabel("downloads")
            ax.set_ylabel(f"harvest rate ({task['ratio_name']})")
            ax.legend(fontsize=8, title=task["ratio_name"], title_fontsize=8)
    _save(fig, path)


def freshness_eval(result: Result, path: Path) -> None:
    """Messages collected and freshness against crawls, one column per population, one line per method."""
    populations = result["populations"]
    fig, axes = plt.subplots(2, len(populations), figsize=(4.5 * len(populations), 7), squeeze=False)
    for column, pop in enumerate(populations):
        methods = next(iter(pop["recrawl"].values())).keys()
        for name in methods:
            rows = [pop["recrawl"][r][name]["overall"] for r in pop["recrawl"]]
            crawls = [m["crawls"] for m in rows]
            axes[0][column].plot(crawls, [m["collected"] for m in rows], marker="o", label=name)
            axes[1][column].plot(crawls, [m["freshness"] for m in rows], marker="o", label=name)
        axes[0][column].set_title(pop["label"])
        axes[0][column].set_ylabel("messages collected")
        axes[1][column].set_ylabel("freshness (share of users up to date)")
        axes[1][column].set_xlabel("crawls (API calls)")
        axes[0][column].legend(fontsize="small")
    _save(fig, path)


def soak(result: Result, path: Path) -> None:
    mib = 2**20
    samples, timeline = result["samples"], result["timeline"]
    fig, (memory, rate, frontier) = plt.subplots(3, 1, figsize=(8, 9), sharex=True)
    minutes = [s["t"] / 60 for s in samples]
    memory.plot(minutes, [s["total"] / mib for s in samples], color="black", label="all processes")
    memory.plot(minutes, [s["anon"] / mib for s in samples], color="black", linestyle=":", label="all, anonymous (heap)")
    for name in sorted({n for s in samples for n in s["rss"]}):
        memory.plot(minutes, [s["rss"].get(name, 0) / mib for s in samples], linewidth=0.8, label=name)
    memory.plot([p["t"] / 60 for p in timeline], [(p["rss"] - p.get("workbench_bytes", 0)) / mib for p in timeline],
                linestyle="--", color="grey", label="all, less the workbench's bytes")
    end = samples[-1]["t"] / 60
    memory.axvspan(end - result["rss"]["window_seconds"] / 60, end, color="tab:green", alpha=0.08,
                   label="window: RSS within +5%")
    memory.set_ylabel("resident memory (MiB)")
    memory.set_ylim(bottom=0)
    memory.legend(fontsize="small", loc="lower right")
    memory.set_title(f"Soak: {result['parameters']['hosts']:,} hosts, defaults, {result['pages']:,} pages")
    t = [p["t"] / 60 for p in timeline]
    rates = [(b["pages"] - a["pages"]) / (b["t"] - a["t"]) if b["t"] > a["t"] else 0.0
             for a, b in zip(timeline, timeline[1:])]
    rate.plot(t[1:], rates, color="tab:orange", label="pages/s")
    rate.set_ylabel("pages/s")
    rate.set_ylim(bottom=0)
    rate.legend(fontsize="small")
    frontier.plot(t, [p["front"] for p in timeline], label="front (IPs with work)")
    frontier.set_ylabel("IPs")
    bytes_axis = frontier.twinx()
    bytes_axis.plot(t, [p.get("workbench_bytes", 0) / mib for p in timeline], color="tab:purple", label="workbench (MiB)")
    bytes_axis.axhline(result["workbench_budget_bytes"] / mib, color="tab:purple", linestyle=":", label="its budget")
    bytes_axis.set_ylabel("MiB")
    frontier.set_xlabel("minutes")
    frontier.legend(fontsize="small", loc="upper left")
    bytes_axis.legend(fontsize="small", loc="lower right")
    _save(fig, path)
