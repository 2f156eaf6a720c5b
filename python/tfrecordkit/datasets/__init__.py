"""Datasets of many shards: writing and committing them, their manifests, and random
access to their records."""
