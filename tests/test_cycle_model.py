"""The cycle estimate's model (tinyrps.measure.cycles), checked against loops counted by hand: no
emulator needed. The estimate on the boards is tests/firmware/test_cycle_estimate.py."""
from __future__ import annotations

import pytest

from tinyrps.measure.cycles import TIMINGS, classify, estimate, layer_estimates, register_count, traced_blocks

M55, M4 = TIMINGS["cortex-m55"], TIMINGS["cortex-m4"]
LOAD, MAC = ("vldrw.u32", "q0, [r0], #16"), ("vmladava.s8", "r2, q0, q1")


@pytest.mark.parametrize("mnemonic, operands, cls", [
    ("vldrw.u32", "q0, [r0]", "mve_ls"), ("vstrbt.8", "q1, [r2]", "mve_ls"), ("vmladava.s8", "r0, q1, q2", "mve_mac"),
    ("vqrdmulh.s32", "q0, q0, r3", "mve_mac"), ("vadd.i32", "q0, q0, q1", "mve_alu"), ("vaddv.s32", "r0, q1", "mve_alu"),
    ("vpst", "", "mve_control"), ("vctp.8", "r1", "mve_control"), ("vldr", "s0, [r1, #4]", "fp_load"),
    ("vadd.f32", "s0, s0, s1", "fp"), ("vdiv.f32", "s0, s1, s2", "fp_slow"), ("vpush", "{d8-d15}", "fp_multiple"),
    ("movge", "r0, r1", "alu"), ("adds.w", "r0, r0, #1", "alu"), ("teq", "r0, r1", "alu"), ("ite", "ge", "alu"),
    ("smlal", "r0, r1, r2, r3", "mul"), ("mls", "r0, r1, r2, r3", "mul"), ("sdivgt", "r0, r1, r2", "div"),
    ("ldrsb.w", "r0, [r1, #1]", "load"), ("ldrd", "r0, r1, [r2]", "load_pair"), ("strbne.w", "r0, [r1]", "store"),
    ("pop", "{r4, r5, pc}", "multiple"), ("bls.n", "100", "branch"), ("bl", "200", "branch"), ("cbz", "r0, 10", "branch"),
    ("le", "lr, 100", "loop_end"), ("dls", "lr, r2", "loop_start"), ("frobnicate", "r0", "unknown")])
def test_instructions_are_classed_by_mnemonic_and_operands(mnemonic, operands, cls):
    assert classify(mnemonic, operands) == cls


def test_register_lists_are_counted():
    assert register_count("{r4, r5, r6, lr}") == 4 and register_count("{r4-r11, lr}") == 9
    assert register_count("{d8-d15}") == 8 and register_count("r0, [r1]") == 1


def test_a_helium_loop_of_loads_then_macs_costs_what_a_hand_count_gives():
    """5 loads then 6 multiply-accumulates and the loop end: the loads share a pipe (2 cycles each), the
    first MAC overlaps the last load (1), the other five share the MAC pipe (2 each), LE is free: 21."""
    loop = [LOAD] * 5 + [MAC] * 6 + [("le", "lr, 0x100", True)]
    assert estimate(loop, M55) == 21
    # interleaved, each instruction but the first and the last MAC overlaps the one before it: 2 + 9 + 2 = 13
    interleaved = [LOAD, MAC] * 5 + [MAC, ("le", "lr, 0x100", True)]
    assert estimate(interleaved, M55) == 13
    # predication passes the overlap on: VPST between a load and a MAC costs its cycle, the MAC still overlaps
    assert estimate([LOAD, ("vpst", ""), MAC], M55) == 2 + 1 + 1


def test_a_dsp_loop_costs_what_a_hand_count_gives_on_the_m4():
    """Two loads (2, then 1 pipelined), two SXTB16 and two SMLAD (1 each), the counter (1) and a taken branch
    (1, and a refill of 2 when taken): 2 + 1 + 4 + 1 + 1 + 2 = 11; not taken, 9."""
    body = [("ldr", "r4, [r0], #4"), ("ldr", "r5, [r1], #4"), ("sxtb16", "r6, r4"), ("sxtb16", "r7, r5"),
            ("smlad", "r8, r6, r7, r8"), ("smlad", "r9, r6, r7, r9"), ("subs", "r2, #1")]
    assert estimate(body + [("bne.n", "0x100", True)], M4) == 11
    assert estimate(body + [("bne.n", "0x100", False)], M4) == 9
    # on the M4 there is no Helium: a pop of pc is a branch; an MVE mnemonic never reaches its table
    assert estimate([("pop", "{r4, r5, pc}")], M4) == 1 + 3 + 2


LOG = """----------------
IN: f
0x00000100:  b508       push     {r3, lr}
0x00000102:  f000 f83f  bl       #0x200

Trace 0: 0x7f0000000100 [0080044a/00000100/00000150/ff020200] f
----------------
IN: g
0x00000200:  2100       movs     r1, #0
0x00000202:  4770       bx       lr

Trace 0: 0x7f0000000300 [0080044a/00000200/00000150/ff020200] g
Trace 0: 0x7f0000000100 [0080044a/00000100/00000150/ff020200] f
"""


def test_the_trace_gives_each_block_run_with_its_extent():
    blocks = list(traced_blocks(LOG.splitlines(keepends=True)))
    assert [(pc, first, last) for _, pc, first, last in blocks] == [(0x100, 0x100, 0x102), (0x200, 0x200, 0x202),
                                                                    (0x100, 0x100, 0x102)]


def test_the_kernel_calls_are_the_counter_reads_that_match_the_firmwares_counts():
    reference = [{"instructions": 100}, {"instructions": 5000}]
    chain = [{"instructions": 101, "cycles": 1}, {"instructions": 5002, "cycles": 2}, {"instructions": 9, "cycles": 3}]
    assert layer_estimates(chain, reference) == chain[:2]
    pairs = [{"instructions": 99, "cycles": 1}, {"instructions": 7, "cycles": 0}, {"instructions": 4999, "cycles": 2},
             {"instructions": 7, "cycles": 0}]
    assert layer_estimates(pairs, reference) == [pairs[0], pairs[2]]
    from tinyrps.infra.errors import UserError
    with pytest.raises(UserError, match="rebuild the firmware"):
        layer_estimates(chain[:1], reference)
