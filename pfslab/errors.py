"""The kit's one error base: anything wrong with input, labs, references or runs.

Each module raises its own subclass with a one-line message naming the bad value
and what is allowed; the command line prints that line and exits 2.
"""


class KitError(Exception):
    """A problem the user can fix; the message is one line."""
