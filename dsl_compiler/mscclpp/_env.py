"""The package's own environment switches, parsed as the runtime parses its parameters.

An empty value is unset; booleans are 1/0, true/false, yes/no or on/off in any case. Anything else
raises InvalidArgumentError where the switch is read, worded as the runtime words it
(``NAME='value' is not valid: expected ... (default ...)``, docs/environment.md): never a guess."""
import os

from .errors import InvalidArgumentError

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def env_bool(name, default):
    """The boolean value of environment variable ``name``, ``default`` when it is unset or empty."""
    text = os.environ.get(name, "")
    if not text:
        return default
    if text.strip().lower() in _TRUE:
        return True
    if text.strip().lower() in _FALSE:
        return False
    raise InvalidArgumentError(f"{name}='{text}' is not valid: expected a boolean (1/0, true/false, yes/no, on/off) "
                               f"(default {int(default)})")
