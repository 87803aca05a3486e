# SPDX-License-Identifier: MIT
"""Repeatable runs under the uml engine: a seed on the kernel's command line
(kernel/uml/patches/0001-random-seed.patch) makes every random number in the guest a
function of it, so in virtual time (inf-cpu) the same scenario and seed give the same
run, frame for frame, wherever its results folder lies (the guest sees it at a fixed
path); different seeds give independent runs. vm/README.md, "Repeatable
runs", has the causes this removes and the measurements. And a load's phase after its
warm-up, drawn from the scenario's seed (test_lab_warmup.py), is what the guest waits."""

import json
import os
import sqlite3
from pathlib import Path

import pytest

from confucius.experiment import keys, plan as planning, scenario as sc
from confucius.lab import runner, uml
from confucius.lab.engine import LabError

SCENARIO = """
name = "repeat"
engine = "uml"
repetitions = 2
[uml]
seed = 7
[link]
rate = "20mbit"
rtt = "40ms"
[schedulers]
names = ["fq_codel"]
[rt]
controllers = ["gcc"]
start_rate = "5mbit"
[warmup]
min = "2s"
max = "4s"
hold = "1s"
[web]
pages = ["flows-5-size-102400"]
settle = "2s"
"""

# The guest is root in its own kernel; on the host its files are written by this user.
needs_uml = pytest.mark.skipif(not uml.KERNEL_BINARY.is_file() or os.geteuid() != 0,
                               reason="needs the UML kernel (`make uml`) and root")


def load(tmp_path: Path, text: str = SCENARIO, engine: str | None = None) -> sc.Scenario:
    path = tmp_path / "repeat.toml"
    path.write_text(text)
    return sc.load(path, engine=engine)


def test_repetition_r_gets_the_scenario_s_seed_plus_r_and_its_key_names_it(tmp_path):
    scenario = load(tmp_path)
    first, second = (task.cell for task in runner.plan(scenario, None))
    assert [runner.run_seed(scenario, cell) for cell in (first, second)] == [7, 8]
    assert keys.conditions(scenario, second).key_input()["seed"] == 8
    other = load(tmp_path, SCENARIO.replace("seed = 7", "seed = 9"))
    assert keys.cell_key(other, first) != keys.cell_key(scenario, first)


def test_without_a_seed_each_uml_run_draws_one_and_the_key_is_as_before(tmp_path):
    unseeded = load(tmp_path, SCENARIO.replace("[uml]\nseed = 7\n", ""))
    cell = runner.plan(unseeded, None)[0].cell
    assert "seed" not in keys.conditions(unseeded, cell).key_input()
    seeds = {runner.run_seed(unseeded, cell) for _ in range(5)}
    assert len(seeds) == 5 and all(0 <= seed <= sc.UML_SEED_MAX for seed in seeds)


def test_a_scenario_can_name_any_seed_a_run_drew_and_its_last_repetition_s_seed_fits_the_engine(tmp_path):
    top = SCENARIO.replace("seed = 7", f"seed = {sc.UML_SEED_MAX}").replace("repetitions = 2",
                                                                             f"repetitions = {sc.MAX_REPETITIONS}")
    scenario = load(tmp_path, top)
    last = runner.plan(scenario, None)[-1].cell
    assert runner.run_seed(scenario, last) == uml.SEED_LIMIT - 1


def test_qemu_runs_have_no_seed_even_when_the_scenario_sets_one(tmp_path):
    scenario = load(tmp_path, engine="qemu")
    cell = runner.plan(scenario, None)[0].cell
    assert runner.run_seed(scenario, cell) is None
    assert "seed" not in keys.conditions(scenario, cell).key_input()


@pytest.mark.parametrize("value", ["-1", str(sc.UML_SEED_MAX + 1), "1.5", '"7"', "true"])
def test_a_seed_out_of_range_or_not_a_whole_number_is_refused(tmp_path, value):
    with pytest.raises(sc.ScenarioError, match=r"uml.*seed"):
        load(tmp_path, SCENARIO.replace("seed = 7", f"seed = {value}"))


def test_an_unknown_key_in_the_uml_table_is_refused(tmp_path):
    with pytest.raises(sc.ScenarioError, match="sede"):
        load(tmp_path, SCENARIO.replace("seed = 7", "sede = 7"))


def test_a_kernel_without_the_seed_option_is_refused_before_it_boots(tmp_path):
    with pytest.raises(LabError, match="no random.seed option.*make uml"):
        uml.check_seedable(Path("/bin/true"))
    with pytest.raises(LabError, match="cannot read the UML kernel"):
        uml.check_seedable(tmp_path / "missing")


@pytest.mark.parametrize("seed", [-1, 2**63, 1.0, True])
def test_a_seed_the_engine_cannot_pass_is_refused(tmp_path, seed):
    with pytest.raises(LabError, match="seed must be an integer"):
        uml.run("true", results_dir=tmp_path, seed=seed)


DRAWS = """
cat /proc/sys/kernel/random/boot_id
od -An -N16 -tx1 /dev/urandom
python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
date +%s
"""


def draws(results: Path, seed: int) -> list[str]:
    result = uml.run(DRAWS, results_dir=results, seed=seed, timeout=120)
    result.check()
    return [line.strip() for line in result.output.strip().splitlines()]


@needs_uml
def test_the_seed_decides_the_guest_s_random_numbers_and_its_clock_starts_at_a_fixed_instant(tmp_path):
    first, again, other = (draws(tmp_path / name, seed) for name, seed in (("a", 5), ("b", 5), ("c", 6)))
    print("seed 5:", first, "\nseed 6:", other)
    assert first == again
    # Another seed, other draws: the boot id and 16 bytes (the port may match by chance).
    assert first[0] != other[0] and first[1] != other[1]
    # The wall clock starts at the fixed instant, not at the host's time.
    assert 0 <= int(first[-1]) - uml.SEEDED_CLOCK_START_NS // 10**9 < 60


def measured(db: Path, run_id: int) -> dict:
    with sqlite3.connect(db) as conn:
        query = lambda sql: conn.execute(sql, (run_id,)).fetchall()
        return {
            "frames": query("SELECT f.capture_ns, f.last_arrival_ns, f.delay_ms, f.complete FROM frames f "
                            "JOIN flows w ON w.id = f.flow_id WHERE w.run_id = ? ORDER BY f.capture_ns"),
            "pages": query("SELECT load_start_ns, plt_s, stall_s, max_delay_ms FROM pages WHERE run_id = ?"),
            "ports": query("SELECT kind, port FROM flows WHERE run_id = ? ORDER BY kind, session, number"),
            "seed": query("SELECT seed FROM runs WHERE id = ?"),
        }


@needs_uml
def test_a_scenario_run_twice_with_one_seed_repeats_frame_for_frame_at_any_results_depth(tmp_path):
    scenario = load(tmp_path, SCENARIO.replace("repetitions = 2\n", ""))
    db = tmp_path / "lab.sqlite"
    runs = []
    # The second run's results lie two levels deeper: before the guest saw them at a fixed
    # path, each level moved every later event by 1024 ns (four clock reads).
    for root in (tmp_path / "runs", tmp_path / "deeper" / "still" / "runs"):
        report = runner.run_matrix(scenario, db_path=db, results_root=root,
                                   resume=False, attempts=1, max_failures=1, progress=False)
        assert report.failed == 0
        [run_id] = report.run_ids
        runs.append(measured(db, run_id))
    first, again = runs
    frames, [(_, plt, stall, max_delay)] = first["frames"], first["pages"]
    print(f"{len(frames)} frames, PLT {plt:.6f} s, stall {stall:.3f} s, max frame delay {max_delay:.3f} ms, "
          f"in both runs")
    assert len(frames) > 200 and plt > 0 and first["seed"] == [(7,)]
    assert first == again


# Machine code for RDTSC and RDTSCP, returning EDX:EAX as one 64-bit value (shl rdx, 32;
# or rax, rdx; ret), called through ctypes from an executable page.
TSC_READS = r"""
python3 - <<'PY'
import ctypes, mmap, time
RETURN_EDX_EAX = "48c1e220" "4809d0" "c3"
def instruction(opcode):
    page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(bytes.fromhex(opcode + RETURN_EDX_EAX))
    function = ctypes.CFUNCTYPE(ctypes.c_uint64)(ctypes.addressof(ctypes.c_char.from_buffer(page)))
    return function, page
rdtsc, _a = instruction("0f31")
rdtscp, _b = instruction("0f01f9")
before, t0 = rdtsc(), time.monotonic_ns()
time.sleep(0.01)
t1, after, later = time.monotonic_ns(), rdtscp(), rdtsc()
print(before, t0, t1, after, later)
PY
"""


def tsc_reads(results: Path, seed: int) -> list[int]:
    result = uml.run(TSC_READS, results_dir=results, seed=seed, timeout=120)
    result.check()
    return [int(word) for word in result.output.split()[-5:]]


@needs_uml
def test_a_guest_program_s_time_stamp_counter_is_the_guest_s_clock(tmp_path):
    # kernel/uml/patches/0002-tsc-in-virtual-time.patch: RDTSC and RDTSCP trap and read the
    # guest's clock in ns (the host's counter made Go's scheduler, and so irtt, differ).
    first = tsc_reads(tmp_path / "a", 5)
    print("rdtsc, monotonic before and after a 10 ms sleep, rdtscp, rdtsc:", first)
    before, t0, t1, after, later = first
    assert before <= t0 and t1 <= after < later      # one clock, read in order
    assert 10_000_000 <= after - before < 10_100_000  # the sleep, in the guest's ns
    assert before < 60 * 10**9                        # the guest's uptime, not the host's
    assert tsc_reads(tmp_path / "b", 5) == first      # and nothing from the host


# Guest ns spent by 100 calls failing on a file (a missing path, readlink on a file, a
# terminal's ioctl on a file) and by 100 receives on an empty non-blocking socket.
FAILED_CALLS = """python3 - <<'PY'
import fcntl, os, socket, termios, time
def cost(call):
    start = time.monotonic_ns()
    for _ in range(100):
        try:
            call()
        except OSError:
            pass
    return time.monotonic_ns() - start
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.setblocking(False)
files = [cost(lambda: os.stat("/no/such/file")), cost(lambda: os.readlink("/etc/passwd")),
         cost(lambda: fcntl.ioctl(0, termios.TCGETS, bytes(64)))]
print(*files, cost(lambda: sock.recv(1)))
PY
"""


@needs_uml
def test_a_call_failing_on_a_file_takes_no_guest_time_and_one_not_ready_still_does(tmp_path):
    # kernel/uml/patches/0003-file-errors-take-no-time.patch: how many calls fail on files
    # follows the host's files (a checkout's compiled Python, its path), so they must not
    # move the guest's clock; "not ready" keeps upstream's microsecond, against livelock.
    result = uml.run(FAILED_CALLS, results_dir=tmp_path, seed=5, timeout=120)
    result.check()
    *files, not_ready = (int(word) for word in result.output.split()[-4:])
    print("guest ns of 100 calls failing on files, and 100 EAGAIN:", files, not_ready)
    assert all(spent <= 256 for spent in files)   # the one clock read that ends the span
    assert 100_000 <= not_ready < 110_000


@needs_uml
def test_a_load_starts_its_drawn_phase_after_the_warm_up(tmp_path):
    scenario = load(tmp_path, SCENARIO.replace("repetitions = 2\n", "")
                    .replace('controllers = ["gcc"]', 'controllers = ["fixed-2mbit"]')
                    .replace('hold = "1s"', 'hold = "1s"\nphase = "3s"'))
    db = tmp_path / "lab.sqlite"
    report = runner.run_matrix(scenario, db_path=db, results_root=tmp_path / "runs",
                               resume=False, attempts=1, max_failures=1, progress=False)
    assert report.failed == 0
    phase = keys.load_phase_s(scenario, planning.cells(scenario)[0], scenario.web.pages[0])
    with sqlite3.connect(db) as conn:
        [(spec,)] = conn.execute("SELECT spec FROM runs").fetchall()
        [(load_start, warmup_s)] = conn.execute("SELECT load_start_ns, warmup_s FROM pages").fetchall()
        [(rt_start,)] = conn.execute("SELECT started_ns FROM flows WHERE kind = 'rt' AND session = 0").fetchall()
    waited = (load_start - rt_start) / 1e9 - warmup_s
    print(f"phase drawn {phase:.3f} s, waited {waited:.3f} s after a warm-up of {warmup_s:.3f} s")
    assert json.loads(spec)["pages"][0]["phase_s"] == phase > 0
    assert phase <= waited < phase + 0.1


@pytest.mark.parametrize("options", [{"workers": 2}, {"address": "tcp://127.0.0.1:8786"}])
def test_a_real_time_engine_refuses_vms_side_by_side_before_writing_anything(tmp_path, options):
    scenario = load(tmp_path, engine="qemu")
    with pytest.raises(runner.RunnerError, match="qemu runs in real time, one VM at a time"):
        runner.run_matrix(scenario, db_path=tmp_path / "lab.sqlite", results_root=tmp_path / "runs", **options)
    assert not (tmp_path / "lab.sqlite").exists() and not (tmp_path / "runs").exists()


@needs_uml
def test_two_vms_at_once_on_a_local_dask_cluster_measure_what_one_alone_measures(tmp_path):
    scenario = load(tmp_path, SCENARIO.replace("repetitions = 2\n", "")
                    .replace('names = ["fq_codel"]', 'names = ["fq_codel", "pfifo"]'))
    together, alone = tmp_path / "together.sqlite", tmp_path / "alone.sqlite"
    report = runner.run_matrix(scenario, db_path=together, results_root=tmp_path / "runs", resume=False,
                               attempts=1, max_failures=1, progress=False, workers=2)
    assert report.failed == 0 and len(report.run_ids) == 2
    [solo] = runner.run_matrix(scenario, db_path=alone, results_root=tmp_path / "runs", resume=False,
                               attempts=1, max_failures=1, progress=False, schedulers=["fq_codel"]).run_ids
    with sqlite3.connect(together) as conn:
        [(beside,)] = conn.execute("SELECT id FROM runs WHERE scheduler = 'fq_codel'").fetchall()
        overlap = conn.execute("SELECT MAX(started_unix) < MIN(started_unix + duration_s) FROM runs").fetchone()[0]
    assert overlap, "the two runs did not run at the same time"
    first, second = measured(together, beside), measured(alone, solo)
    print(f"{len(first['frames'])} frames, page {first['pages']} beside pfifo's run and alone")
    assert first == second
