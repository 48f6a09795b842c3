"""The one exception type whose message is shown to the user as a single line."""


class PearlError(Exception):
    """Bad input, params or environment: the message names the thing to fix."""
