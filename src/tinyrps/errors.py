"""User-facing errors: the CLI prints the message on one line and exits with code 2."""


class UserError(Exception):
    """Bad input from the user: a missing file, a wrong option, a corrupted program."""
