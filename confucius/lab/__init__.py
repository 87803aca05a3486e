# SPDX-License-Identifier: MIT
"""The laboratory of real kernels (README.md): the engines qemu (Debian's kernel, real
time) and UML (the project's User-Mode Linux kernel, virtual time), and all the code that
runs inside their VMs.

    runner.py      the engines as the registry names them (QEMU, UML): a planned task to
                   one VM boot, its spec, its folder read back, its row; the matrix
    vm.py, uml.py  booting each engine's kernels; engine.py what they share; kernels.py,
                   xsave.py, soak.py the kernels the kernel checks boot, the host's XSAVE
                   check, the debug kernel's soak
    contract.py    the typed host-guest contract: RunSpec, GuestEvents, GUEST_TIMING
    guest/         everything that runs inside the VM (a lab run, a per-CCA run, the
                   shaping-fidelity probe); nothing outside it imports it
    topology.py    the dumbbell the guest builds; rtnl.py rtnetlink (the flows, raw requests)
    run_folder.py  a run's results folder read back; flent_files.py Flent's data files
    cli.py         `confucius lab`

Scenarios, keys, the planner, results and the database are confucius/experiment's.
"""
