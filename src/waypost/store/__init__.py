"""Systems of record and the repositories of derived structures. ``waypost.store.backend.open_backend``
opens one; ``waypost.store.protocols`` says what every backend guarantees. (Nothing is imported here:
``waypost.base`` re-exports the protocols, and the backends import ``waypost.base``.)"""
