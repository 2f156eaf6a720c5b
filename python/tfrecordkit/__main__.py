"""``python -m tfrecordkit``: the ``tfrecordkit`` command."""

from .cli import run

run()
