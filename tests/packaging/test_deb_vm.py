# SPDX-License-Identifier: MIT
"""The packages on a router: inside the lab VM (Debian's kernel under qemu), dpkg installs
confucius-dkms and confucius-tc, DKMS builds and installs the module for the running
kernel, stock tc adds the qdisc and the kernel loads the module by itself, and dpkg
purges both without leaving a file behind. One boot runs guest_deb.py; each check below
reads its results.

Nothing reaches the host: the guest sees the host's root through a read-only 9p share,
and guest_deb.py puts an overlay with a tmpfs upper layer over /etc, /usr and /var
before dpkg runs; test_host_is_untouched checks the host's dpkg database and DKMS tree
all the same.

The cost, measured under TCG (no usable KVM here) on a 2-core machine shared with lab
runs: 5.3 and 7 minutes of wall time in two runs, about 4 minutes of qemu's CPU time.
Compiling the module is not what costs: building it on the host instead and letting the
postinst load the binaries (a DKMS tarball) took as much qemu CPU time (3m40 against 3m49
user; 8.4 minutes of wall time on a busier machine). depmod does, run by dkms install and
again by dkms remove over the kernel's 4023 modules (80 to 140 s each), with dpkg reading
its database over 9p (20 s per call). Both belong to installing and removing, which is
what this test is for, so it keeps the whole path; test_deb.py checks the packages and
the DKMS build on the host in seconds.
"""

import hashlib
import json
from pathlib import Path

import pytest

from confucius.lab import vm

pytestmark = pytest.mark.vm
GUEST = Path(__file__).with_name("guest_deb.py")
HOST_DPKG_STATUS = Path("/var/lib/dpkg/status")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def run(debs, tmp_path_factory):
    results = tmp_path_factory.mktemp("deb")
    before = digest(HOST_DPKG_STATUS)
    result = vm.run(GUEST, results_dir=results, timeout=1500, modules=[],
                    args=[str(debs.dkms), str(debs.tc), debs.version])
    found = json.loads((results / "packaging.json").read_text()) if result.returncode == 0 else None
    return result, found, before


@pytest.fixture(scope="module")
def found(run):
    assert run[0].returncode == 0, run[0].output[-3000:]
    return run[1]


def test_guest_ran_with_a_clean_kernel_log(run):
    result, steps, _ = run
    assert result.returncode == 0, result.output[-3000:]
    assert result.kernel_problems() == []
    print(json.dumps({"boot_s": result.boot_time, "guest_s": steps["seconds"],
                      "install_s": steps["install"]["seconds"],
                      "purge_s": steps.get("purge", {}).get("seconds")}))


def test_dpkg_wrote_only_to_overlays_over_tmpfs(found):
    tops = {line.split()[1]: line for line in found["overlays"]}
    assert set(tops) == {"/etc", "/usr", "/var"}
    assert all(line.startswith("overlay ") and "upperdir=/run/deb-test/" in line for line in tops.values())


def test_install_builds_and_installs_the_module_for_the_running_kernel(found, debs):
    assert found["before"]["module_files"] == [] and found["before"]["dpkg"]["rc"] != 0
    install = found["install"]
    assert install["rc"] == 0, install["stdout"] + install["stderr"]
    kernel = found["kernel"]
    assert found["dkms_status"]["stdout"].strip() == f"confucius/{debs.version}, {kernel}, x86_64: installed"
    assert found["module_files"] == [f"/lib/modules/{kernel}/updates/dkms/sch_confucius.ko"]
    assert found["modinfo_version"]["stdout"].strip() == debs.version


def test_stock_tc_autoloads_the_module_and_uses_the_plugin(found, debs):
    assert found["loaded_before_tc"] is False
    assert found["tc_add"]["rc"] == 0, found["tc_add"]["stderr"]
    assert found["loaded_version"] == debs.version
    # Only the plugin turns the options into text: without it tc prints the kind alone.
    assert "qdisc confucius " in found["tc_show"]["stdout"]
    assert " bandwidth 10Mbit " in found["tc_show"]["stdout"]
    assert f"\nconfucius {debs.version} (q_confucius.so" in found["tc_help"]["stderr"]
    assert any(path.endswith("/tc/q_confucius.so") for path in found["files"])


def test_purge_removes_both_packages_entirely(found):
    purge = found["purge"]
    assert purge["rc"] == 0, purge["stdout"] + purge["stderr"]
    after = found["after"]
    assert after["left"] == [], "files of the packages are still there"
    assert after["module_files"] == [] and after["dkms_tree"] is False
    assert "no packages found matching confucius-dkms" in after["dpkg"]["stderr"]
    assert "no packages found matching confucius-tc" in after["dpkg"]["stderr"]
    assert after["modprobe"]["rc"] != 0
    assert 'Unknown qdisc "confucius"' in after["tc_help"]["stderr"]
    assert "Specified qdisc kind is unknown" in after["tc_add_bare"]["stderr"]


def test_host_is_untouched(run, debs):
    _, _, before = run
    assert digest(HOST_DPKG_STATUS) == before
    assert not Path(f"/usr/src/confucius-{debs.version}").exists()
    assert not Path("/var/lib/dkms/confucius").exists()
