"""Input pipelines: :class:`~tfrecordkit.Dataset`, its plan, and the stages that run in
Python around the native engine."""
