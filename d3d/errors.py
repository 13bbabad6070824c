"""User-facing errors.

`D3DError` is the one exception type the CLI turns into a one-line message and a non-zero exit
status. Raise it for bad input a user can fix (a missing model, an invalid sampling value, a
drafter that does not match the target); let programming errors raise as usual.
"""


class D3DError(Exception):
    """An error caused by user input, reported as one line without a traceback."""
