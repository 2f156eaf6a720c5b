"""tfrecordkit and other libraries: Apache Arrow, PyTorch, JAX, TensorFlow, Ray,
TensorFlow Datasets and Apache Beam. Each imports its library only when used; the
training adapters (``torch``, ``jax``, ``tf``) use only the public ``Dataset`` methods."""
