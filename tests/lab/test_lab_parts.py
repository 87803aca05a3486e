# SPDX-License-Identifier: MIT
"""The lab's parts that need no VM: kernel files, initramfs, requests refused, topology plan."""

import subprocess
import sys
from pathlib import Path

import pytest

from confucius.lab import topology as topo
from confucius.lab import vm

TRACES = vm.REPO.parent / "shared" / "traces"


@pytest.fixture(scope="module")
def kernel() -> vm.Kernel:
    return vm.detect_kernel()


def test_kernel_is_the_newest_installed_with_modules(kernel):
    assert kernel.image == Path("/boot") / f"vmlinuz-{kernel.version}"
    assert (kernel.modules / "modules.dep").is_file()


def test_module_dependencies_load_first(kernel):
    order = [path.name for path in vm.module_load_order(kernel.modules, ["9p", "9pnet_virtio"])]
    assert order.index("9pnet.ko") < order.index("9p.ko")
    assert order.index("virtio_ring.ko") < order.index("9pnet_virtio.ko")
    assert len(order) == len(set(order))
    with pytest.raises(vm.LabError, match="no_such_module"):
        vm.module_load_order(kernel.modules, ["no_such_module"])


def test_initramfs_holds_init_busybox_and_modules(kernel):
    archive = vm.initramfs(kernel)
    listing = subprocess.run(["busybox", "cpio", "-t"], stdin=archive.open("rb"),
                             capture_output=True, text=True, check=True).stdout.split()
    for entry in ("init", "bin/busybox", "dev/console", "modules/load-order", "modules/9p.ko",
                  "modules/overlay.ko"):
        assert entry in listing
    assert vm.initramfs(kernel) == archive  # cached: same inputs, same file


def test_kernel_is_uncompressed_for_a_pvh_boot(kernel):
    image = vm.vmlinux(kernel)
    assert image.read_bytes()[:4] == b"\x7fELF"
    notes = subprocess.run(["readelf", "-n", str(image)], capture_output=True, text=True).stdout
    assert "(0x00000012)" in notes  # XEN_ELFNOTE_PHYS32_ENTRY: the entry qemu's PVH boot uses


def test_a_kernel_of_our_build_needs_its_image_and_module_tree(tmp_path):
    with pytest.raises(vm.LabError, match="run `make debug-kernel-x86`"):
        vm.built_kernel(tmp_path, tmp_path / "vmlinux", "debug-kernel-x86")
    (tmp_path / "vmlinux").write_bytes(b"\x7fELF")
    tree = tmp_path / "modules" / "lib" / "modules" / "6.1.99"
    tree.mkdir(parents=True)
    (tree / "modules.dep").write_text("")
    assert vm.built_kernel(tmp_path, tmp_path / "vmlinux", "debug-kernel-x86") == \
        vm.Kernel("6.1.99", tmp_path / "vmlinux", tree)


def test_modules_built_into_the_kernel_stay_out_of_the_initramfs(tmp_path):
    """The debug kernel has 9p, virtio and overlay built in: stage 1 loads nothing."""
    (tmp_path / "modules.dep").write_text("overlay.ko:\n")
    (tmp_path / "overlay.ko").write_bytes(b"\x7fELF")
    (tmp_path / "modules.builtin").write_text(
        "kernel/drivers/virtio/virtio_pci.ko\nkernel/net/9p/9pnet_virtio.ko\nkernel/fs/9p/9p.ko\n")
    assert vm.builtin_modules(tmp_path) == {"virtio_pci", "9pnet_virtio", "9p"}
    archive = vm._initramfs_archive(vm.Kernel("6.1.99", tmp_path / "vmlinux", tmp_path))
    assert b"modules/overlay.ko" in archive and b"modules/9p.ko" not in archive


@pytest.mark.parametrize("change, message", [
    ({"timeout": 0}, "timeout must be positive"),
    ({"cpus": 0}, "cpus must be a positive integer"),
    ({"memory": "2 GB"}, "memory must be a size"),
    ({"env": {"BAD-NAME": "x"}}, "not a valid environment variable name"),
    ({"modules": ["/nonexistent/sch_x.ko"]}, "kernel module not found"),
    ({"script": Path("/nonexistent/script.sh")}, "no such script"),
    ({"accel": "hvf"}, "accel must be kvm or tcg"),
    ({"flavour": "nope"}, "unknown qemu kernel 'nope'"),
])
def test_bad_requests_are_refused_before_anything_happens(tmp_path, change, message):
    request = {"script": "true", "results_dir": tmp_path / "results", **change}
    with pytest.raises(vm.LabError, match=message):
        vm.run(**request)
    assert not (tmp_path / "results").exists()


def test_cli_wants_a_script_or_a_command():
    done = subprocess.run([sys.executable, "-m", "confucius", "lab", "vm", "run"],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert "give either a SCRIPT file or --command" in done.stderr


def test_topology_plan():
    script = topo.Topology(qdisc="fq_codel", rate="20mbit", rtt="40ms").script()
    # Propagation delay at both ends, half the RTT each; nothing but the test subject on
    # the bottleneck.
    assert "qdisc add dev srv-rtr root netem delay 20000us" in script
    assert "qdisc add dev cli-rtr root netem delay 20000us" in script
    assert "qdisc add dev rtr-cli root handle 1: htb default 1" in script
    assert "classid 1:1 htb rate 20000000bit burst 50000b" in script
    assert "qdisc add dev rtr-cli parent 1:1 handle 10: fq_codel" in script
    assert "rtr-srv" not in script.split("tc -n rtr")[1]  # reverse path unshaped
    assert "addr add 198.18.0.2/16 dev srv-rtr" in script
    assert "route add default via 198.19.0.1" in script


def test_self_shaping_qdisc_is_the_root_and_reverse_rate_shapes_the_uplink():
    script = topo.Topology(qdisc="cake bandwidth 20mbit", rate=None, reverse_rate="5mbit").script()
    assert "qdisc add dev rtr-cli root handle 1: cake bandwidth 20mbit" in script
    assert "htb" not in script.split("rtr-cli root handle 1: cake")[0].split("tc -n rtr")[1]
    assert "class add dev rtr-srv parent 1: classid 1:1 htb rate 5000000bit" in script


def test_a_bare_bottleneck_is_left_for_the_run_s_record():
    script = topo.Topology(qdisc=None, rate=None, rtt="40ms").script()
    assert "qdisc add dev rtr-cli" not in script and "class add dev rtr-cli" not in script
    assert "qdisc add dev cli-rtr root netem delay 20000us" in script
    # The bottleneck's lines are the same function's whether Topology or a run's record asks.
    assert topo.bottleneck_commands("fq_codel", "20mbit", 0.0) == [
        "qdisc add dev rtr-cli root handle 1: htb default 1",
        "class add dev rtr-cli parent 1: classid 1:1 htb rate 20000000bit burst 3028b cburst 3028b quantum 1514",
        "qdisc add dev rtr-cli parent 1:1 handle 10: fq_codel"]


def test_ingress_shaping_makes_the_ifb_and_shapes_there_only():
    script = topo.Topology(qdisc="cake bandwidth 20mbit ingress", rate=None, shaping="ingress").script()
    assert "link add rtr-ifb type ifb\nlink set rtr-ifb up" in script
    assert "qdisc add dev rtr-srv handle ffff: ingress" in script
    assert "matchall action mirred egress redirect dev rtr-ifb" in script
    assert "qdisc add dev rtr-ifb root handle 1: cake bandwidth 20mbit ingress" in script
    assert "dev rtr-cli" not in script.split("tc -n rtr")[1]  # the client-side egress unshaped
    assert "ifb" not in topo.Topology(qdisc=None, rate=None).script()


def test_rates_change_where_the_shaping_is():
    with pytest.raises(topo.TopologyError, match="shaping must be one of egress, ingress"):
        topo.set_rate("7mbit", "wan")


@pytest.mark.parametrize("kwargs, message", [
    ({"shaping": "wan"}, "shaping must be one of egress, ingress"),
    ({"rate": "0"}, "rate must be positive"),
    ({"qdisc": None, "rate": "20mbit"}, "bare bottleneck"),
    ({"rate": "fast"}, "cannot read rate"),
    ({"rtt": "soon"}, "cannot read time"),
    ({"qdisc": ""}, "must be a tc qdisc spec"),
    ({"qdisc": "fq_codel; reboot"}, "must be a tc qdisc spec"),
    ({"qdisc": "fq_codel 'unbalanced"}, "must be a tc qdisc spec"),
])
def test_bad_topologies_are_refused(kwargs, message):
    with pytest.raises(topo.TopologyError, match=message):
        topo.Topology(**kwargs)


def test_domain_addresses_fit_the_server_side():
    addresses = topo.domain_addresses(1000)
    assert addresses[0] == "198.18.128.1" and len(set(addresses)) == 1000
    with pytest.raises(topo.TopologyError, match="room for 32766"):
        topo.domain_addresses(40000)


@pytest.mark.parametrize("address", ["198.19.0.5", "10.0.0.1", "198.18.0.1", "not-an-address"])
def test_server_addresses_outside_the_plan_are_refused(address):
    with pytest.raises(topo.TopologyError):
        topo.add_server_addresses([address])


def test_trace_reading(tmp_path):
    trace = tmp_path / "trace.log"
    trace.write_text("100.5 20\n100.7 0.5\n\n101.0 0\n")
    times, rates = zip(*topo.read_trace(trace))
    assert times == pytest.approx((0.0, 0.2, 0.5))
    assert rates == pytest.approx((20e6, 0.5e6, 0.0))
    trace.write_text("1 20\n0.5 10\n")
    with pytest.raises(topo.TopologyError, match="time going back"):
        topo.read_trace(trace)
    trace.write_text("1 fast\n")
    with pytest.raises(topo.TopologyError, match="expected 'time_s Mbps'"):
        topo.read_trace(trace)


@pytest.mark.skipif(not TRACES.is_dir(), reason="the shared bandwidth traces are not beside the repo")
def test_shared_traces_are_readable():
    for path in sorted(TRACES.rglob("*.log"))[:20]:
        points = topo.read_trace(path)
        assert points[0][0] == 0.0 and all(bps >= 0 for _, bps in points)
