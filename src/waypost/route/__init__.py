"""The routing brain: route -> plan -> retrieve -> judge and retry, with a cache and telemetry."""
