"""Deployment of exported programs to (simulated) Arm hardware outside this machine's emulators.

`fvp`: ExecuTorch's bare-metal `arm_executor_runner` with an Ethos-U program baked
in, run on Arm's Corstone FVPs (Corstone-320 for the Ethos-U85).
"""
