"""SPADE's exception hierarchy: user errors end the CLI with one line, never a traceback."""


class SpadeError(Exception):
    """Base of every error SPADE raises on purpose."""

    exit_code = 1


class UserError(SpadeError):
    """Bad input from the user (file, key, value): printed as one line, exit code 2."""

    exit_code = 2


class ConfigError(UserError):
    """A config file is missing, malformed, or has an unknown key or bad value."""


class SandboxUnavailable(SpadeError):
    """The configured isolation tier cannot run on this host (no silent downgrade)."""


class ModelLoadError(UserError):
    """A model name or path cannot be resolved or loaded."""


class PrefectUnavailable(SpadeError):
    """No Prefect API to report to: the temporary server did not answer in time."""


class RewardError(SpadeError):
    """A reward or advantage was asked of inconsistent episode data (a caller's bug)."""


class TrainingError(SpadeError):
    """A training step or checkpoint cannot proceed (bad batch, missing checkpoint)."""


class BackendUnavailable(SpadeError):
    """The configured model backend's engine is not installed or cannot run here."""


class RegistryError(SpadeError):
    """A registry was misused by code (an entry without a name, a name taken twice)."""


class DuplicateName(RegistryError):
    """A name registered twice in one registry (a programming error, not bad input)."""


class UnknownName(UserError):
    """A name that no registry entry answers to (a typo in a config or on the command line)."""


class UnknownBackend(UnknownName):
    """A model backend name that is not registered."""


class UnknownSuite(UnknownName):
    """An evaluation suite name that is not registered."""


class UnknownDesignerReward(UnknownName, ConfigError):
    """A designer reward name that is not registered (it comes from the run's config)."""
