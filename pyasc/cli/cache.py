"""`pyasc cache ...`: look into, explain, check, prune, clear and fill the disk cache."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from .commands import kernel_for
from .targets import parse_args, target_options


def store_or_fail() -> Any:
    from ..runtime.diskcache import DiskCache  # the runtime loads when a command runs, not for --help

    try:
        store = DiskCache.from_env()
    except ValueError as e:
        raise click.ClickException(str(e)) from None
    if store is None:
        raise click.ClickException("the disk cache is off (PYASC_CACHE=0)")
    from ..runtime.cachesecret import SecretUnavailable  # as above

    try:
        _ = store.secret  # entries are read only through it
    except SecretUnavailable as e:
        raise click.ClickException(f"cannot read the disk cache: {e}") from None
    return store


def human_size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover


def human_age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"


def size_param(text: str) -> int:
    from ..runtime.diskcache import parse_size  # the runtime loads when a command runs, not for --help

    try:
        return parse_size(text)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--max-size") from None


@click.group()
def cache() -> None:
    """The disk cache ($PYASC_CACHE_DIR, else the user cache folder)."""


@cache.command("list")
@click.option("--json", "as_json", is_flag=True, help="a JSON array of entries instead of a table")
def list_command(as_json: bool) -> None:
    """Every entry: key, kernel, signature, chip, size, age, hits (most recently used first)."""
    store = store_or_fail()
    infos = sorted(store.list(), key=lambda i: -i.last_used)
    now = time.time()
    if as_json:
        click.echo(json.dumps([{"key": i.key, "kernel": i.kernel, "qualname": i.manifest.get("qualname"),
                                "signature": i.signature, "chip": i.chip, "size": i.size, "created": i.created,
                                "last_used": i.last_used, "hits": i.hits, "path": str(i.path)} for i in infos],
                              indent=1))
        return
    rows = [("key", "kernel", "signature", "chip", "size", "age", "hits")]
    rows += [(i.key[:12], i.kernel, i.signature, i.chip, human_size(i.size), human_age(now - i.created), str(i.hits))
             for i in infos]
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    for r in rows:
        click.echo("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    click.echo(f"{len(infos)} entries, {human_size(sum(i.size for i in infos))} in {store.root}")


@cache.command("stats")
@click.option("--json", "as_json", is_flag=True, help="one JSON document instead of a table")
@click.option("--zero", is_flag=True, help="start the counts afresh (the entries are kept)")
def stats_command(as_json: bool, zero: bool) -> None:
    """Hits (in memory), disk hits, misses (compiles), hit rate, entries and size, per kernel and in total.

    Counted by every process that uses this cache folder, since the counts were last zeroed."""
    from ..runtime import cachestats  # the runtime loads when a command runs, not for --help

    store = store_or_fail()
    if zero:
        try:
            cachestats.zero(store.root)
        except OSError as e:
            raise click.ClickException(f"cannot write the statistics in {store.root}: {e}") from None
        click.echo(f"statistics zeroed in {store.root}")
        return
    report = cachestats.report(store.root, store.list())
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=1))
        return
    header = ("kernel", "hits", "disk hits", "misses", "hit rate", "entries", "size")
    rows = [header] + [_stats_row(k) for k in report.kernels] + [_stats_row(report.total)]
    widths = [max(len(r[c]) for r in rows) for c in range(len(header))]
    for n, r in enumerate(rows):
        if n == len(rows) - 1:
            click.echo("  ".join("-" * w for w in widths))
        click.echo("  ".join(v.ljust(w) if c == 0 else v.rjust(w) for c, (v, w) in enumerate(zip(r, widths))))
    since = time.ctime(report.since) if report.since else "never counted"
    click.echo(f"cache {report.root}; counted since {since}")


def _stats_row(k: Any) -> tuple[str, ...]:
    rate = f"{k.hit_rate:.1%}" if k.calls else "-"
    return (k.kernel, str(k.hits), str(k.disk_hits), str(k.misses), rate, str(k.entries), human_size(k.size))


@cache.command("dir")
def dir_command() -> None:
    """Print the cache folder ($PYASC_CACHE_DIR, else the user cache folder)."""
    click.echo(store_or_fail().root)


@cache.command("show")
@click.argument("key")
def show_command(key: str) -> None:
    """One entry's manifest and stage names (KEY: a key or a unique prefix of one)."""
    store = store_or_fail()
    found = store.find(key)
    if len(found) != 1:
        what = "no entry" if not found else f"{len(found)} entries"
        raise click.ClickException(f"{what} with a key starting {key!r}; `pyasc cache list` shows the keys")
    info = found[0]
    m = info.manifest
    click.echo(f"entry {info.key}\n  path: {info.path}")
    for field in ("kernel", "qualname", "signature", "chip"):
        click.echo(f"  {field}: {m.get(field)}")
    click.echo(f"  created: {time.ctime(info.created)}; last used: {time.ctime(info.last_used)}; hits: {info.hits}")
    click.echo(f"  size: {human_size(info.size)}; format {m.get('format')} v{m.get('version')}")
    click.echo("  components:")
    for name, value in m.get("components", {}).items():
        text = json.dumps(value)
        click.echo(f"    {name}: {text if len(text) <= 100 else text[:97] + '...'}")
    click.echo("  guards (what the kernel read):")
    for g in m.get("guards_text", []) or ["(none)"]:
        click.echo(f"    {g}")
    click.echo("  sections:")
    for name, meta in m.get("sections", {}).items():
        click.echo(f"    {name}  {meta.get('size')} B  sha256 {str(meta.get('sha256'))[:16]}")
    click.echo("  stages:")
    for i, name in enumerate(m.get("stages", [])):
        click.echo(f"    {i:02d} {name}")


@cache.command("explain")
@click.argument("target", metavar="FILE.py::func")
@target_options
def explain_command(target: str, args: tuple[str, ...], chip: str | None, opt_level: int | None) -> None:
    """The key's components for a call of FILE.py::func with these --arg arguments, and whether it hits.

    For a miss: which component differs from the nearest entry of the same kernel, or which value the
    kernel read differs from the entries with the same components."""
    from ..runtime.explain import explain  # the runtime loads when a command runs, not for --help

    store_or_fail()
    kernel = kernel_for(target, chip, opt_level)
    try:
        lines = explain(kernel, *parse_args(args))
    except (TypeError, ValueError) as e:
        raise click.BadParameter(f"{kernel.__name__}(): {e}", param_hint="--arg") from None
    click.echo("\n".join(lines))


@cache.command("clear")
@click.option("--tuning", is_flag=True, help="also delete the autotuning winners (`pyasc tune`)")
def clear_command(tuning: bool) -> None:
    """Delete every entry, the lock files no process holds and generated files (statistics and autotuning
    winners are kept unless --tuning)."""
    from ..runtime import tunestore  # the runtime loads when a command runs, not for --help

    store = store_or_fail()
    click.echo(f"removed {store.clear()} entries from {store.root}")
    if tuning:
        click.echo(f"removed {tunestore.remove_all(store.root)} tuning records")


@cache.command("prune")
@click.option("--max-size", required=True, metavar="SIZE", help="keep at most SIZE bytes (e.g. 200M, 1G)")
def prune_command(max_size: str) -> None:
    """Delete least recently used entries until the cache fits in SIZE."""
    store = store_or_fail()
    limit = size_param(max_size)
    removed = store.prune(limit)
    click.echo(f"removed {len(removed)} entries; {human_size(store.total_size())} left (limit {human_size(limit)})")


@cache.command("verify")
@click.option("--fix", is_flag=True, help="remove the bad entries")
def verify_command(fix: bool) -> None:
    """Authenticate every entry (manifest and section MACs) and decode it (exit 1 if a bad entry is left)."""
    from ..runtime.persist import check_entry  # the runtime loads when a command runs, not for --help

    store = store_or_fail()
    paths = list(store.iter_entries())
    bad = [(p, why) for p in paths if (why := store.verify(p, check_entry)) is not None]
    for path, why in bad:
        click.echo(f"bad: {path}: {why}" + ("  (removed)" if fix and store.remove(path) else ""))
    click.echo(f"{len(paths) - len(bad)} of {len(paths)} entries are sound")
    if bad and not fix:
        raise click.ClickException(f"{len(bad)} bad entries; `pyasc cache verify --fix` removes them")


def executor_options(f: Any) -> Any:
    """`--jobs N` (local worker processes) and `--ray ADDRESS` (a Ray cluster instead): where parallel work runs."""
    f = click.option("--ray", "ray_address", default=None, metavar="ADDRESS",
                     help="run on a Ray cluster instead: its address, `auto` for the one `ray start` runs here, "
                          "or `local` to start one for this run (needs the extra: pip install -e '.[ray]')")(f)
    return click.option("--jobs", "-j", type=click.IntRange(1), default=None,
                        help="local worker processes (default: the CPU count)")(f)


@cache.command("warm")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@executor_options
def warm_command(file: Path, jobs: int | None, ray_address: str | None) -> None:
    """Compile every kernel FILE.py lists in PYASC_WARM for its example signatures, in parallel.

    PYASC_WARM maps a kernel's name to a list of signatures, each a list of ARGSPECs, e.g.
    PYASC_WARM = {"softmax": [["f32[32,64]"], ["f16[8,128]"]]}. Workers import FILE by its path: on a
    cluster, it and the cache folder must be at the same paths on every node (a shared folder).
    """
    from ..runtime.executors import close  # the executor machinery loads only for this command
    from .warm import jobs_of, run_jobs  # (likewise)

    store_or_fail()
    work = jobs_of(file)
    executor = executor_or_fail(jobs, ray_address)
    try:
        results = run_jobs(file, work, executor)
    finally:
        close(executor)
    failed = [r for r in results if r.status == "failed"]
    for r in results:
        click.echo(f"{r.status:<9} {r.kernel}({', '.join(r.specs)})  {r.seconds * 1e3:.0f} ms"
                   + (f"  {r.error}" if r.error else ""))
    counts = {s: sum(r.status == s for r in results) for s in ("compiled", "cached", "failed")}
    click.echo(", ".join(f"{n} {s}" for s, n in counts.items()))
    if failed:
        raise click.ClickException(f"{len(failed)} of {len(results)} signatures failed to compile")


def executor_or_fail(jobs: int | None, ray_address: str | None) -> Any:
    """The process pool, or with --ray the Ray cluster (a clear error when Ray is missing or unreachable)."""
    from ..runtime.executors import make_executor  # the runtime loads when a command runs, not for --help

    try:
        return make_executor("ray" if ray_address else "process", jobs, ray_address)
    except ImportError as e:
        raise click.ClickException(str(e)) from None
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise click.ClickException(f"cannot reach the Ray cluster at {ray_address!r}: {e}") from None
