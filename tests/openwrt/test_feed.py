# SPDX-License-Identifier: MIT
"""The OpenWrt feed in openwrt/ (openwrt/README.md): each package's definition read from its
Makefile, and the Makefiles' own recipes run by GNU make where this machine can run them:
the kmod's prepare and compile against the OpenWrt ath79 kernel tree of mk/cross.mk, the tc
package's patch step on Debian's iproute2 tree, the sqm package's install. OpenWrt's build
system is not here; in its place the tests define only what those recipes name from it
(KERNEL_MAKE, INSTALL_*, PKG_BUILD_DIR), each as OpenWrt defines it."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from confucius.lab.engine import REPO

FEED = REPO / "openwrt"
VERSION = (REPO / "VERSION").read_text().strip()
PACKAGES = {"kmod-sched-confucius": "KernelPackage", "tc-confucius": "BuildPackage",
            "sqm-scripts-confucius": "BuildPackage"}
OPENWRT_TREE = REPO / "build/cross/linux-openwrt-ath79"


def makefile(package: str) -> str:
    return (FEED / package / "Makefile").read_text()


def block(text: str, name: str) -> str:
    """The body of `define NAME ... endef`."""
    match = re.search(rf"^define {re.escape(name)}\n(.*?)^endef$", text, re.M | re.S)
    assert match, f"no define {name}"
    return match.group(1)


def field(body: str, name: str) -> str:
    """NAME:=value in a package definition, continuation lines joined."""
    match = re.search(rf"^\s*{name}:=((?:.*\\\n)*.*)$", body, re.M)
    assert match, f"no {name}"
    return " ".join(match.group(1).replace("\\\n", " ").split())


def assignment(text: str, name: str) -> str:
    """The line (with its continuations) that sets NAME at the top level."""
    match = re.search(rf"^{name} ?:?=(?:.*\\\n)*.*$", text, re.M)
    assert match, f"no {name}"
    return match.group(0)


def run_make(package: str, text: str, target: str = "run") -> subprocess.CompletedProcess:
    """GNU make on TEXT in the package's folder, so that $(CURDIR) is what OpenWrt's is."""
    return subprocess.run(["make", "-s", "-C", str(FEED / package), "-f", "-", target], input=text,
                          capture_output=True, text=True)


@pytest.mark.parametrize("package", PACKAGES)
def test_package_is_defined_and_evaluated(package):
    text = makefile(package)
    name = package.removeprefix("kmod-") if PACKAGES[package] == "KernelPackage" else package
    assert f"$(eval $(call {PACKAGES[package]},{name}))" in text
    block(text, f"{PACKAGES[package].replace('Build', '')}/{name}")
    assert text.startswith("# SPDX-License-Identifier: MIT\n")


@pytest.mark.parametrize("package", PACKAGES)
def test_version_is_the_repository_s(package):
    text = makefile(package)
    result = run_make(package, "\n".join([assignment(text, "CONFUCIUS_ROOT"), assignment(text, "PKG_VERSION"),
                                          "run:\n\t@echo $(CONFUCIUS_ROOT) $(PKG_VERSION)\n"]))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(REPO), VERSION]


def test_kmod_definition():
    body = block(makefile("kmod-sched-confucius"), "KernelPackage/sched-confucius")
    assert field(body, "FILES") == "$(PKG_BUILD_DIR)/kernel/sch_confucius.ko"
    assert re.fullmatch(r"\$\(call Auto(Probe|Load),(\d+,)?sch_confucius\)", field(body, "AUTOLOAD"))
    assert "+kmod-sched-core" in field(body, "DEPENDS").split()


def quoted_includes(path: Path) -> set[str]:
    return set(re.findall(r'^#include "([^"]+)"', path.read_text(), re.M))


def test_kmod_copies_every_source_the_module_includes():
    files = assignment(makefile("kmod-sched-confucius"), "CONFUCIUS_KMOD_FILES").split(":=")[1]
    files = set(files.replace("\\\n", " ").split())
    for name in files:
        assert (REPO / name).is_file(), name
    # The module's own includes, found where kernel/Kbuild's -I options look.
    search = [REPO / "kernel", REPO / "core", REPO / "kernel/include/uapi/linux"]
    todo, seen = [REPO / "kernel/sch_confucius.c"], set()
    while todo:
        source = todo.pop()
        seen.add(source.relative_to(REPO).as_posix())
        for include in quoted_includes(source):
            found = [d / include for d in search if (d / include).is_file()]
            assert found, f"{source}: {include} not found"
            if found[0].relative_to(REPO).as_posix() not in seen:
                todo.append(found[0])
    assert seen | {"VERSION", "kernel/Kbuild", "LICENSES/GPL-2.0-only.txt"} == files


def test_kmod_recipe_builds_the_module_against_the_openwrt_ath79_tree(tmp_path):
    """Build/Prepare and Build/Compile as written, with KERNEL_MAKE as OpenWrt's kernel.mk
    makes it (make -C LINUX_DIR ARCH= CROSS_COMPILE=) for the ath79 tree of mk/cross.mk."""
    if not (OPENWRT_TREE / ".prepared").exists():
        pytest.skip(f"{OPENWRT_TREE} is not prepared (make cross-kmods)")
    text = makefile("kmod-sched-confucius")
    build = tmp_path / "build"
    # The tree has no Module.symvers (mk/cross.mk): modpost's unresolved symbols are warnings.
    kernel_make = f"$(MAKE) -C {OPENWRT_TREE} ARCH=mips CROSS_COMPILE=mips-linux-gnu- KBUILD_MODPOST_WARN=1"
    result = run_make("kmod-sched-confucius", "\n".join([
        assignment(text, "CONFUCIUS_ROOT"), assignment(text, "CONFUCIUS_KMOD_FILES"),
        f"PKG_BUILD_DIR := {build}", f"KERNEL_MAKE := {kernel_make}",
        "define Build/Prepare", block(text, "Build/Prepare") + "endef",
        "define Build/Compile", block(text, "Build/Compile") + "endef",
        "run:\n\t$(Build/Prepare)\n\t$(Build/Compile)\n"]))
    assert result.returncode == 0, result.stdout + result.stderr
    module = build / "kernel/sch_confucius.ko"
    info = subprocess.run(["modinfo", "-F", "version", module], capture_output=True, text=True, check=True)
    assert info.stdout.strip() == VERSION
    assert "ELF 32-bit MSB" in subprocess.run(["file", "-b", module], capture_output=True, text=True).stdout


def test_tc_definition():
    text = makefile("tc-confucius")
    body = block(text, "Package/tc-confucius")
    assert field(body, "PROVIDES") == "tc"
    priority, link, target = field(body, "ALTERNATIVES").split(":")
    # Above OpenWrt's tc-tiny (200), tc-bpf (300) and tc-full (400).
    assert int(priority) > 400 and link == "/sbin/tc"
    assert f"$(INSTALL_BIN) $(PKG_BUILD_DIR)/tc/tc $(1){target}" in block(text, "Package/tc-confucius/install")
    assert {"+kmod-sched-confucius", "+libmnl"} <= set(field(body, "DEPENDS").split())


def test_tc_recipe_patches_an_iproute2_tree(tmp_path):
    """Build/Prepare after OpenWrt's unpack (Build/Prepare/Default), on a copy of the
    iproute2 tree make tc fetched: the patch is written for that tree and applies."""
    trees = sorted((REPO / "build/tc/src").glob("iproute2-*/tc/Makefile"))
    if not trees:
        pytest.skip("no iproute2 tree (make tc)")
    tree = tmp_path / "iproute2"
    shutil.copytree(trees[-1].parent.parent, tree, symlinks=True)
    text = makefile("tc-confucius")
    prepare = block(text, "Build/Prepare").replace("\t$(call Build/Prepare/Default)\n", "")
    result = run_make("tc-confucius", "\n".join([
        assignment(text, "CONFUCIUS_ROOT"), f"PKG_BUILD_DIR := {tree}",
        "define Build/Prepare", prepare + "endef", "run:\n\t$(Build/Prepare)\n"]))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "TCMODULES += q_confucius.o" in (tree / "tc/Makefile").read_text()
    assert (tree / "tc/q_confucius.c").is_file()
    assert (tree / "include/uapi/linux/pkt_sched_confucius.h").is_file()


def test_sqm_package_installs_the_recipe(tmp_path):
    text = makefile("sqm-scripts-confucius")
    body = block(text, "Package/sqm-scripts-confucius")
    assert {"+sqm-scripts", "+kmod-sched-confucius", "+tc-confucius", "+kmod-ifb"} <= set(field(body, "DEPENDS").split())
    # OpenWrt's INSTALL_* (rules.mk).
    result = run_make("sqm-scripts-confucius", "\n".join([
        assignment(text, "CONFUCIUS_ROOT"),
        "INSTALL_DIR := install -d -m0755", "INSTALL_BIN := install -m0755", "INSTALL_DATA := install -m0644",
        "define install", block(text, "Package/sqm-scripts-confucius/install") + "endef",
        f"run:\n\t$(call install,{tmp_path})\n"]))
    assert result.returncode == 0, result.stdout + result.stderr
    for name, mode in (("confucius.qos", 0o755), ("confucius.qos.help", 0o644)):
        installed = tmp_path / "usr/lib/sqm" / name
        assert installed.read_bytes() == (REPO / "router" / name).read_bytes()
        assert installed.stat().st_mode & 0o777 == mode


def test_feed_depends_only_on_its_own_packages_or_openwrt_s():
    """A +kmod-…confucius or +…confucius dependency names a package of this feed."""
    for package in PACKAGES:
        for depend in re.findall(r"\+([\w-]*confucius[\w-]*)", makefile(package)):
            assert depend in PACKAGES, f"{package} depends on {depend}, which the feed lacks"


def test_readme_names_every_package():
    readme = (FEED / "README.md").read_text()
    for package in PACKAGES:
        assert f"`{package}`" in readme
    assert "src-link confucius" in readme
