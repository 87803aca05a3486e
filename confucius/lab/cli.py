# SPDX-License-Identifier: MIT
"""`confucius lab`: the VM (`vm run`, `vm shell`, `vm info`) and, inside it, the topology."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path
from typing import List, Optional

import typer

app = typer.Typer(no_args_is_help=True, add_completion=False,
                  help="Real-kernel laboratory: Debian's kernel under qemu, namespace topologies.")
vm_app = typer.Typer(no_args_is_help=True, add_completion=False,
                     help="Run scripts as root inside Debian's kernel under qemu.")
topology_app = typer.Typer(no_args_is_help=True, add_completion=False,
                           help="Server - router - client namespaces (run inside the VM).")
app.add_typer(vm_app, name="vm")
app.add_typer(topology_app, name="topology")

# Exit statuses of `vm run` when the script gave none, as timeout(1) and env(1) use them.
TIMED_OUT, DIED = 124, 125


def _fail(message: str) -> None:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(2)


def _env(pairs: List[str]) -> dict:
    env = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            _fail(f"--env takes NAME=VALUE, got {pair!r}")
        env[name] = value
    return env


def _default_results() -> Path:
    return Path("results") / "lab" / time.strftime("%Y%m%d-%H%M%S")


@vm_app.command("run")
def run_command(
    script: Optional[Path] = typer.Argument(None, help="Script file to run (bash unless it has a #! line)."),
    args: Optional[List[str]] = typer.Argument(None, help="Arguments for the script (after --)."),
    command: Optional[str] = typer.Option(None, "--command", "-c", help="Shell commands to run instead of a file."),
    results: Optional[Path] = typer.Option(None, help="Writable results folder ($RESULTS inside) "
                                           "(default: results/lab/<time>)."),
    timeout: float = typer.Option(600.0, help="Seconds before the VM is killed (boot included)."),
    cpus: int = typer.Option(2, help="Virtual CPUs."),
    memory: str = typer.Option("2G", help="Guest memory (e.g. 512M, 2G)."),
    env: List[str] = typer.Option([], "--env", "-e", help="NAME=VALUE for the script (repeatable)."),
    module: Optional[List[Path]] = typer.Option(None, "--module", "-m",
                                                help="Kernel module to make loadable "
                                                "(repeatable; default: build/kernel/*.ko)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Do not print the console as it runs."),
):
    """Boot the VM, run SCRIPT as root inside, exit with its exit status."""
    from confucius.lab import vm

    if (script is None) == (command is None):
        _fail("give either a SCRIPT file or --command")
    try:
        result = vm.run(command if command is not None else script, args=args or [],
                        results_dir=results or _default_results(), timeout=timeout, cpus=cpus,
                        memory=memory, env=_env(env), modules=module, echo=not quiet)
    except vm.LabError as err:
        _fail(str(err))
    if quiet:
        typer.echo(result.output)
    _summarise(result)
    raise typer.Exit(TIMED_OUT if result.timed_out else DIED if result.returncode is None
                     else result.returncode)


def _summarise(result) -> None:
    boot = f"{result.boot_time:.1f} s" if result.boot_time is not None else "did not finish"
    status = ("timed out" if result.timed_out else "died (no exit status)"
              if result.returncode is None else f"exit {result.returncode}")
    typer.echo(f"lab: kernel {result.kernel or '?'}, boot {boot}, {status} after "
               f"{result.duration:.1f} s; results in {result.results_dir}", err=True)
    for line in result.kernel_problems()[:10]:
        typer.secho(f"lab: kernel: {line}", fg=typer.colors.YELLOW, err=True)


@vm_app.command("shell")
def shell_command(
    results: Optional[Path] = typer.Option(None, help="Writable results folder ($RESULTS inside)."),
    timeout: float = typer.Option(3600.0, help="Seconds before the VM is killed."),
    cpus: int = typer.Option(2, help="Virtual CPUs."),
    memory: str = typer.Option("2G", help="Guest memory (e.g. 512M, 2G)."),
    module: Optional[List[Path]] = typer.Option(None, "--module", "-m", help="Kernel module to make loadable."),
):
    """An interactive root shell inside the VM (exit the shell to stop it; Ctrl-A x kills it)."""
    from confucius.lab import vm

    if not sys.stdin.isatty():
        _fail("vm shell needs a terminal; use `vm run` for scripts")
    size = shutil.get_terminal_size()  # a serial console cannot tell the guest its size
    try:
        vm.run(f"stty rows {size.lines} cols {size.columns}; exec bash -i", results_dir=results or _default_results(), timeout=timeout,
               cpus=cpus, memory=memory, modules=module, interactive=True)
    except vm.LabError as err:
        _fail(str(err))


@vm_app.command("info")
def info_command():
    """Build what the VM needs (cached in build/lab/) and show the kernel and accelerator."""
    from confucius.lab import vm

    try:
        vm.ensure_packages()
        kernel = vm.detect_kernel()
        typer.echo(f"kernel       {kernel.version} ({kernel.image})")
        typer.echo(f"vmlinux      {vm.vmlinux(kernel)}")
        typer.echo(f"initramfs    {vm.initramfs(kernel)}")
        typer.echo(f"accelerator  {vm.accelerator()}")
    except vm.LabError as err:
        _fail(str(err))


def _optional_rate(text: str) -> Optional[str]:
    return None if text.lower() == "none" else text


@topology_app.command("up")
def topology_up(
    qdisc: str = typer.Option("fq_codel", help="The qdisc under test, as a tc spec "
                              "(e.g. 'confucius bandwidth 20mbit')."),
    rate: str = typer.Option("20mbit", help="Bottleneck rate: an HTB class with the qdisc as "
                             "leaf; 'none' if the qdisc shapes by itself."),
    rtt: str = typer.Option("40ms", help="Round-trip propagation delay (netem, half each way)."),
    reverse_rate: Optional[str] = typer.Option(None, help="Client-to-server rate (default: unshaped)."),
    show: bool = typer.Option(False, help="Only print the commands (a shell script)."),
):
    """Build srv - rtr - cli with the qdisc under test on the router's egress to the client."""
    from confucius.lab import topology

    try:
        topo = topology.Topology(qdisc=qdisc, rate=_optional_rate(rate), rtt=rtt,
                                 reverse_rate=reverse_rate)
        if show:
            typer.echo(topo.script(), nl=False)
        else:
            topo.up()
    except topology.TopologyError as err:
        _fail(str(err))


@topology_app.command("down")
def topology_down():
    """Remove the namespaces."""
    from confucius.lab import topology

    topology.down()


@topology_app.command("rate")
def topology_rate(rate: str = typer.Argument(..., help="New bottleneck rate, e.g. 10mbit.")):
    """Change the bottleneck's rate now."""
    from confucius.lab import topology

    try:
        topology.set_rate(rate)
    except topology.TopologyError as err:
        _fail(str(err))


@topology_app.command("trace")
def topology_trace(
    trace: Path = typer.Argument(..., help="Bandwidth trace: 'time_s Mbps' per line."),
    duration: Optional[float] = typer.Option(None, help="Seconds to follow (default: all of it)."),
    scale: float = typer.Option(1.0, help="Multiply the trace's rates by this."),
):
    """Follow a bandwidth trace with the bottleneck's rate (runs until the trace ends)."""
    from confucius.lab import topology

    try:
        changes = topology.follow_trace(trace, duration=duration, scale=scale)
    except (topology.TopologyError, OSError) as err:
        _fail(str(err))
    typer.echo(f"{changes} rate changes", err=True)


@topology_app.command("addresses")
def topology_addresses(count: int = typer.Argument(..., help="How many domain addresses.")):
    """Give the server COUNT more addresses (one per Web domain) and print them."""
    from confucius.lab import topology

    try:
        addresses = topology.domain_addresses(count)
        topology.add_server_addresses(addresses)
    except topology.TopologyError as err:
        _fail(str(err))
    typer.echo("\n".join(addresses))
