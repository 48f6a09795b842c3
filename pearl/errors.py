"""The one exception type whose message is shown to the user as a single line."""


class PearlError(Exception):
    """Bad input, params or environment: the message names the thing to fix."""


def first_line(error: BaseException, limit: int = 200) -> str:
    """An exception's message cut to one line, for a PearlError that quotes it."""
    lines = str(error).strip().splitlines()
    return lines[0][:limit] if lines else type(error).__name__


class MissingModelError(PearlError):
    """A model's files are absent or unreadable: a folder lacks one, or an id is neither a local folder, a model
    shipped offline, nor reachable on the hub."""
