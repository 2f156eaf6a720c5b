"""``python -m tfrecordkit.cli``: the ``tfrecordkit`` command."""

from . import run

run()
