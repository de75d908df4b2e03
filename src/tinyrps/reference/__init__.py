"""References: what a program of each hardware family computes, worked out on the host.

A device runs a program; a reference says what it should have computed, from the same
program, with the arithmetic the family's backend defines: `cortex_m` replays a
Cortex-M .pte with ExecuTorch's Python operators (the firmware must match it bit for
bit), `ethos_u` runs an Ethos-U program's TOSA graph in Arm's TOSA reference model (what
the NPU computes). Devices and the evaluation use them; the export only checks, once,
that the Cortex-M replay agrees with the graph it lowered.

Each module's `evaluate(ctx)` is its family's check in an evaluation (tinyrps.hardware.families:
`Family.reference`).
"""
