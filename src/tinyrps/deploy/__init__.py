"""Deployment of exported programs to (simulated) Arm hardware outside this machine's emulators.

`fvp`: ExecuTorch's bare-metal `arm_executor_runner` with an Ethos-U program, run on
Arm's Corstone FVPs (Corstone-320 for the Ethos-U85, Corstone-300 for the Ethos-U55):
with the program baked in, or through semihosting on image files. Its parts:
`prerequisites` (what is needed and how to get it), `runner_build` (the checkout's
build script), `simulate` (FVP command lines and runs), `runner_output` (logs and
output files).
"""
