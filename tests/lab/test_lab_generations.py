# SPDX-License-Identifier: MIT
"""Both kernel generations under both engines: each boots the kernel it names, loads the
module built for it, and a confucius qdisc carries traffic and counts it."""

import os
import re

import pytest

from confucius.experiment import engines
from confucius.experiment.engines import GENERATIONS
from confucius.lab.engine import LabError

MAKE = {("qemu", "lab"): "kmod", ("qemu", "6.12"): "qemu-6.12 kmod-6.12",
        ("uml", "lab"): "uml kmod-uml", ("uml", "6.12"): "uml-6.12 kmod-uml-6.12"}
SCRIPT = """
set -e
uname -r
modprobe sch_confucius
ip link set lo up
tc qdisc add dev lo root confucius bandwidth 10mbit
ping -q -c 20 -i 0.05 127.0.0.1 >/dev/null
tc -s qdisc show dev lo
"""


def _built(engine: str, flavour: str) -> bool:
    module = engines.engine(engine).machine.modules_dir(flavour) / "sch_confucius.ko"
    try:
        engines.engine(engine).machine.kernel(flavour)
    except LabError:
        return False
    return module.is_file()


# UML 6.12 is built for `make test-long` (mk/python.mk); make test boots Debian's 6.12 under qemu.
COMBINATIONS = [pytest.param(generation, engine, marks=[pytest.mark.long] if (engine, generation) == ("uml", "6.12") else [])
                for generation in sorted(GENERATIONS) for engine in engines.VM_ENGINES]


@pytest.mark.vm
@pytest.mark.skipif(os.geteuid() != 0, reason="the guests write the host's files as root")
@pytest.mark.parametrize("generation, engine", COMBINATIONS)
def test_each_generation_boots_loads_the_module_and_shapes(tmp_path, engine, generation):
    flavour = GENERATIONS[generation]
    if not _built(engine, flavour):
        pytest.fail(f"{engine} {generation} is not built: run `make {MAKE[engine, flavour]}`")
    request = dict(results_dir=tmp_path, timeout=300, flavour=flavour)
    if engine == "uml":
        request["time_mode"] = "real"
    result = engines.engine(engine).boot(SCRIPT, **request)
    assert result.returncode == 0, result.output[-3000:]
    assert result.kernel.startswith(f"{generation}."), result.kernel
    assert not result.kernel_problems(), result.console[-3000:]
    sent = re.search(r"sent_packets (\d+)", result.output)
    # 20 echo requests and 20 replies leave through lo's root qdisc.
    assert sent and int(sent.group(1)) >= 40, result.output[-2000:]
