"""Errors a user can act on."""


class WaypostError(Exception):
    """Base class for every error waypost raises on purpose."""


class ModelMismatchError(WaypostError):
    """A collection was built with one embedding model and used with another."""


class FilterError(WaypostError):
    """A metadata filter is malformed or names an unknown field."""


class LoaderError(WaypostError):
    """A file could not be turned into documents."""


class CollectionNotFoundError(WaypostError):
    """The named collection does not exist in the store."""


class InvalidInputError(WaypostError):
    """An argument of a public call has the wrong type or an impossible value (the message names it)."""


class InvalidDocumentError(InvalidInputError):
    """One document cannot be stored as given; the message names its id and field. Ingest skips it, the rest goes on."""


class StoreUnavailableError(WaypostError):
    """The store's database could not be reached, or went away mid-transaction, within the retry budget:
    nothing is wrong with the request; it may succeed when retried later."""
