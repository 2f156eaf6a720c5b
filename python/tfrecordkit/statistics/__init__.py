"""Statistics over TFRecord files of ``tf.train.Example`` records: :func:`stats`."""

from .report import STATS_FORMAT, StatsReport, split_of, stats

__all__ = ["STATS_FORMAT", "StatsReport", "split_of", "stats"]
