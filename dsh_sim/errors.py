"""The one error every part of dsh-sim raises for bad input.

Bad input — an unreadable or refused file, an invalid scenario, a flag out of range — is one
line naming the file (or flag) and what is wrong; the command line prints it and exits 2,
with no traceback.  Library code raises :class:`InputError`; it never prints or exits.
"""

from __future__ import annotations


class InputError(Exception):
    """One clear line for the user: the input named in it cannot be used, and why."""
