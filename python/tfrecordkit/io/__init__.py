"""Records and files: reading and writing TFRecord files (local, compressed, remote),
the options and reports of a read, checking and repairing files, and record indexes."""
