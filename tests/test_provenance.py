# SPDX-License-Identifier: MIT
"""How runs name the programs that measured them: the digests each engine records, and the
programs a set of runs records with more than one digest."""

from confucius.provenance import mixed_programs, program_digest, programs_not_as_recorded, recorded_programs


def test_a_program_s_digest_is_its_sha256_prefix_or_none_when_not_built(tmp_path):
    program = tmp_path / "bottleneck"
    assert program_digest(program) is None
    program.write_bytes(b"abc")
    assert program_digest(program) == "ba7816bf8f01cfea"


def test_the_lab_s_and_the_simulator_s_records_are_read_alike():
    lab = {"git_commit": "c0ffee", "binaries_sha256": {"rtflow": "aa", "uml": None}}
    sim = {"ns3": "3.44", "bottleneck_sha256": "bb", "seed": 1}
    assert recorded_programs(lab) == {"rtflow": "aa", "uml": None}
    assert recorded_programs(sim) == {"bottleneck": "bb"}
    assert recorded_programs({}) == {}


def test_only_programs_recorded_with_two_digests_are_mixed():
    runs = [{"binaries_sha256": {"rtflow": "aa", "uml": "k"}}, {"binaries_sha256": {"rtflow": "bb", "uml": None}},
            {"bottleneck_sha256": "s1"}, {"bottleneck_sha256": "s1"}, {}]
    assert mixed_programs(runs) == {"rtflow": ["aa", "bb"]}
    assert mixed_programs([]) == {}


def test_programs_not_as_recorded_are_named_with_both_digests(tmp_path):
    built, missing = tmp_path / "rtflow", tmp_path / "uml"
    built.write_bytes(b"abc")
    paths = {"rtflow": built, "uml": missing}
    assert programs_not_as_recorded({"rtflow": "ba7816bf8f01cfea", "uml": None}, paths) == []
    assert programs_not_as_recorded({"rtflow": "0" * 16, "uml": "1" * 16}, paths) == [
        f"rtflow: ba7816bf8f01cfea here, {'0' * 16} recorded", f"uml: not built here, {'1' * 16} recorded"]
    assert programs_not_as_recorded({}, {"rtflow": built}) == ["rtflow: ba7816bf8f01cfea here, not built recorded"]
