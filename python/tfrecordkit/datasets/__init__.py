"""Datasets of many shards: writing and committing them, their manifests, record index
sidecars, checking and repairing files, and random access to their records."""
