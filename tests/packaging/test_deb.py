# SPDX-License-Identifier: MIT
"""What `make deb` built, read on the host: names, version, files, dependencies. DKMS builds
the packaged source for the lab's kernel here too, in a private mount namespace
(dkms_build.sh), and tc loads the packaged plugin; nothing is installed."""

import gzip
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from confucius.lab import vm
from confucius.lab.engine import REPO

HERE = Path(__file__).parent
MODULE_SOURCES = ("VERSION", "core/confucius.h", "core/confucius_impl.h",
                  "kernel/Kbuild", "kernel/sch_confucius.c",
                  "kernel/include/uapi/linux/pkt_sched_confucius.h")
TC = "/usr/sbin/tc"


def run(*argv, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kwargs)


def field(deb: Path, name: str) -> str:
    return run("dpkg-deb", "-f", deb, name, check=True).stdout.strip()


def contents(deb: Path) -> set[str]:
    """The regular files in the package, as absolute paths."""
    listing = run("dpkg-deb", "-c", deb, check=True).stdout.splitlines()
    return {line.split()[5].removeprefix(".") for line in listing if line.startswith("-")}


@pytest.fixture(scope="module")
def unpacked(debs, tmp_path_factory):
    root = tmp_path_factory.mktemp("unpacked")
    for deb in (debs.dkms, debs.tc):
        run("dpkg-deb", "-x", deb, root, check=True)
    return root


def test_both_packages_carry_the_version(debs):
    assert field(debs.dkms, "Package") == "confucius-dkms"
    assert field(debs.tc, "Package") == "confucius-tc"
    assert field(debs.dkms, "Version") == debs.version
    assert field(debs.tc, "Version") == debs.version


def test_dkms_package_holds_the_module_source_of_this_tree(debs, unpacked):
    source = f"/usr/src/confucius-{debs.version}"
    expected = {f"{source}/{name}" for name in (*MODULE_SOURCES, "dkms.conf")}
    assert {p for p in contents(debs.dkms) if p.startswith("/usr/src/")} == expected
    for name in MODULE_SOURCES:
        assert (unpacked / source.lstrip("/") / name).read_bytes() == (REPO / name).read_bytes(), name
    conf = (unpacked / source.lstrip("/") / "dkms.conf").read_text()
    assert f'PACKAGE_VERSION="{debs.version}"' in conf
    assert 'BUILT_MODULE_NAME[0]="sch_confucius"' in conf


# The kernels Debian 12 can run (its 6.1, the archive's 6.12) and make test's newest (7.3)
# are in the declared range; those before 6.1 or after 7.3 are not.
@pytest.mark.parametrize("kernel, inside", [
    ("6.1.0-57-amd64", True), ("6.12.118+deb12-amd64", True), ("6.19.2", True),
    ("7.0.0-1-amd64", True), ("7.3.1", True),
    ("5.10.0-35-amd64", False), ("6.0.12", False), ("7.4.0-1-amd64", False), ("7.10.0", False),
    ("16.1.0", False),
])
def test_dkms_conf_declares_6_1_to_7_3(debs, unpacked, kernel, inside):
    conf = (unpacked / f"usr/src/confucius-{debs.version}/dkms.conf").read_text()
    pattern = re.search(r'^BUILD_EXCLUSIVE_KERNEL="(.*)"$', conf, re.MULTILINE)
    assert pattern, "the packaged dkms.conf declares no kernel range"
    # Matched as dkms matches it: bash's =~ on the kernel release.
    match = run("bash", "-c", '[[ $1 =~ $2 ]]', "match", kernel, pattern.group(1))
    assert (match.returncode == 0) == inside


def test_dkms_package_scripts_add_and_remove_this_version(debs, tmp_path):
    run("dpkg-deb", "-e", debs.dkms, tmp_path, check=True)
    for script in ("postinst", "prerm"):
        text = (tmp_path / script).read_text()
        assert "DKMS_NAME=confucius\n" in text and f"DKMS_VERSION={debs.version}\n" in text, script
    assert re.search(r"\bdkms\b", field(debs.dkms, "Depends"))


def test_tc_package_puts_the_plugin_where_debians_tc_looks(debs):
    plugins = [p for p in contents(debs.tc) if p.endswith("/q_confucius.so")]
    assert len(plugins) == 1
    # tc has its plugin directory compiled in (LIBDIR); TC_LIB_DIR only overrides it.
    directory = plugins[0].removesuffix("q_confucius.so").encode()
    assert directory in Path(TC).read_bytes(), f"{TC} does not look in {directory!r}"


def test_tc_package_ships_the_man_page_of_this_tree(debs, unpacked):
    page = "/usr/share/man/man8/tc-confucius.8.gz"
    assert page in contents(debs.tc)
    assert gzip.decompress((unpacked / page.lstrip("/")).read_bytes()) == (REPO / "tc" / "tc-confucius.8").read_bytes()


def test_tc_package_depends_on_the_iproute2_release_it_was_built_against(debs):
    installed = run("dpkg-query", "-W", "-f=${Version}", "iproute2", check=True).stdout
    release = installed.rsplit("-", 1)[0]
    depends = field(debs.tc, "Depends")
    assert f"iproute2 (>= {release})" in depends and f"iproute2 (<< {release}+~)" in depends
    assert run("dpkg", "--compare-versions", installed, "lt", f"{release}+~").returncode == 0


def test_packaged_plugin_loads_into_tc_and_names_the_version(debs, unpacked):
    plugin = next(unpacked.glob("usr/lib/*/tc/q_confucius.so"))
    # `help` stops in tc's parser: nothing reaches the kernel.
    usage = run(TC, "qdisc", "add", "dev", "lo", "root", "confucius", "help",
                env={"TC_LIB_DIR": str(plugin.parent), "LD_BIND_NOW": "1", "PATH": "/usr/bin:/bin"})
    assert usage.stderr.startswith("Usage: ... confucius "), usage.stderr
    assert f"\nconfucius {debs.version} (q_confucius.so" in usage.stderr


def test_dkms_builds_the_packaged_source_for_the_lab_kernel(debs, tmp_path):
    kernel = vm.detect_kernel().version
    built = run(HERE / "dkms_build.sh", debs.dkms, kernel, tmp_path / "dkms")
    assert built.returncode == 0, built.stderr
    module = tmp_path / "dkms" / "sch_confucius.ko"
    assert run("modinfo", "-F", "version", module).stdout.strip() == debs.version
    assert run("modinfo", "-F", "vermagic", module).stdout.split()[0] == kernel
    assert not Path("/var/lib/dkms/confucius").exists(), "DKMS wrote to the host's tree"


def test_a_bad_version_is_refused_before_anything_is_built(tmp_path):
    tree = tmp_path / "tree"
    (tree / "packaging").mkdir(parents=True)
    shutil.copy(REPO / "packaging" / "build-deb.sh", tree / "packaging")
    (tree / "VERSION").write_text("1.0-rc1\n")
    refused = run(tree / "packaging" / "build-deb.sh", tmp_path / "out")
    assert refused.returncode != 0
    assert 'VERSION "1.0-rc1" is not a valid package version' in refused.stderr
    assert not (tmp_path / "out").exists()
