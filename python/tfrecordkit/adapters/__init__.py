"""Adapters from a :class:`tfrecordkit.Dataset` to the frameworks that train on it:
``torch`` (an ``IterableDataset``), ``jax`` (arrays on a device) and ``tf`` (a
``tf.data.Dataset``). Each imports its framework only when used, and uses only the
public ``Dataset`` methods."""
