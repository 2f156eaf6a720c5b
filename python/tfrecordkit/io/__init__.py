"""Records and files: reading and writing TFRecord files (local, compressed, remote),
paths, globs and URLs, and the options and reports of a read."""
