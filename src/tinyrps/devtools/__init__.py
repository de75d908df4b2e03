"""Developer tools the tests and scripts use, not shipped in the wheel: the zoo of published networks
and the account of what a lowering produces."""
