"""Apache Spark: ``spark.read.format("tfrecord")`` and ``df.write.format("tfrecord")``, as a
Spark 4 Python data source that exchanges Arrow record batches, with no jar.

Reading is :func:`tfrecordkit.read_arrow` in Spark's tasks, cast to the Arrow types Spark
expects. Small files are grouped into partitions of about ``partitionBytes`` (64 MiB), and
a larger file is shared among partitions by the record offsets of its ``.idx`` sidecar
(:func:`tfrecordkit.byte_ranges`). Writing encodes each task's Arrow batches natively into one
part; the driver commits the parts once every task has finished, as
:func:`tfrecordkit.write_dataset` commits its shards: ``-SSSSS-of-NNNNN`` names, index
sidecars and a manifest, all or nothing.

>>> tfr.spark.register(spark)                                    # doctest: +SKIP
>>> df = spark.read.format("tfrecord").load("data/train-*.tfrecord")  # doctest: +SKIP
>>> df.write.format("tfrecord").mode("overwrite").save("out/train")  # doctest: +SKIP
>>> df.write.format("tfrecord").partitionBy("lang").save("out/by-lang")  # doctest: +SKIP

With ``partitionBy`` the path is a directory, as in Spark: ``out/by-lang/lang=en/`` holds
the committed dataset ``part-SSSSS-of-NNNNN.tfrecord`` of the rows whose ``lang`` is
``en``, without that column (see ``tfrecordkit.integrations.spark_partitions``).

Option names follow spark-tfrecord's where they mean the same thing (``recordType``,
``codec``), so that its users can switch by changing the format name.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

try:
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceArrowWriter,
        DataSourceReader,
        InputPartition,
        WriterCommitMessage,
    )
except ImportError as err:  # pragma: no cover - the [spark] extra installs it
    raise ImportError(
        "tfrecordkit.spark needs PySpark 4: pip install 'tfrecordkit[spark]'"
    ) from err

from ..datasets.commit import DatasetCommit
from ..datasets.manifest import manifest_path
from ..datasets.writer import parse_size
from ..errors import SchemaError
from ..io.options import DEFAULT_BATCH_BYTES
from ..io.paths import (
    GLOB_CHARS,
    exists,
    expand_paths,
    file_size,
    filesystem,
    is_url,
    remote_errors,
)
from ..io.ranges import ByteRange, cut, span_bytes
from ..schema.columns import as_table
from ..schema.features import Schema
from ..schema.reading import infer_schema
from .arrow import arrow_columns, nullable_features, read_arrow
from .spark_errors import spark_errors, teach_reader_errors
from .spark_partitions import (
    PartitionedWriter,
    datasets_under,
    partition_values,
    partitioned_files,
    prepare,
)
from .spark_schema import hint_nullable, never_null, read_features, spark_struct

__all__ = ["TFRecordDataSource", "register"]

#: Spark's format name for TFRecords.
FORMAT = "tfrecord"
#: A file is split among partitions in pieces of at least this many bytes.
MIN_SPLIT_BYTES = 256 << 10
_RECORD_TYPES = ("example", "sequenceexample", "bytearray")
_MODES = {"error": "errorifexists", "errorifexists": "errorifexists", "default": "errorifexists"}


def register(spark: Any) -> None:
    """Makes ``format("tfrecord")`` read and write TFRecords in the SparkSession ``spark``.

    Python data sources take only Spark's ``append`` and ``overwrite`` save modes, and
    no ``partitionBy``; this teaches ``DataFrameWriter`` the others for ``tfrecord``:
    ``errorifexists`` (the default) and ``ignore`` look for a dataset at the prefix first
    (with ``partitionBy``, for any dataset under the directory), and the commit checks
    again; and ``partitionBy`` (on the writer or ``save``'s argument) writes a dataset
    per value under ``path/name=value/``, in one job.
    """
    _require_java()
    spark.dataSource.register(TFRecordDataSource)
    _teach_save_modes()
    teach_reader_errors(FORMAT)


def _require_java() -> None:
    import shutil

    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        raise RuntimeError("Spark needs Java (17 or later): install it, or set JAVA_HOME")


def _storage_options(options: dict[str, str]) -> dict[str, Any] | None:
    text = options.get("storage_options") or options.get("storageoptions")
    return json.loads(text) if text else None


def _paths(options: dict[str, str]) -> list[str]:
    if options.get("paths"):
        paths = json.loads(options["paths"])
    elif options.get("path"):
        paths = [options["path"]]
    else:
        raise ValueError("no path to read: load(path) or load([paths])")
    files: list[str] = []
    so = _storage_options(options)
    for p in paths:
        if _is_directory(p, so):
            # A directory's files, and those of its name=value partition directories.
            found = partitioned_files(p, so)
            if not found:
                raise FileNotFoundError(2, "no data files in the directory", p)
            files += found
        else:
            files += expand_paths(p, storage_options=so)
    # Executors elsewhere (a cluster's workers) read from directories of their own.
    return [f if is_url(f) else os.path.abspath(f) for f in files]


def _is_directory(path: str, storage_options: dict[str, Any] | None) -> bool:
    """Whether ``path`` (not a glob) names a directory, locally or under a URL."""
    if not is_url(path):
        return os.path.isdir(path)
    if GLOB_CHARS & set(path):
        return False
    fs, inner = filesystem(path, storage_options=storage_options)
    with remote_errors(path):
        return bool(fs.isdir(inner))


def _compression(options: dict[str, str]) -> str | None:
    value = (options.get("compression") or options.get("codec") or "auto").lower()
    aliases = {"none": None, "uncompressed": None, "gzip": "gzip", "zlib": "zlib", "auto": "auto"}
    if value.rsplit(".", 1)[-1] == "gzipcodec":  # spark-tfrecord's Hadoop codec class name
        return "gzip"
    if value not in aliases:
        raise ValueError(f"compression must be none, gzip or zlib, not {value!r}")
    return aliases[value]


@dataclass
class _ReadPlan:
    files: list[str]
    record_type: str
    context: Schema | None
    lists: Schema | None
    arrow_schema: Any
    strings: bool | list[str]
    compression: str | None
    storage_options: dict[str, Any] | None
    on_error: str
    resync: bool = False
    partition_bytes: int = 64 << 20
    batch_size: int = 65_536
    batch_bytes: int = DEFAULT_BATCH_BYTES
    #: Features read as null where an Example lacks them: scalars the inference sample
    #: found missing from some Examples.
    nullable: set[str] = field(default_factory=set)
    #: Partition columns found in the files' name=value directories, and each file's values.
    partition_columns: list[str] = field(default_factory=list)
    partition_values: list[tuple[str | None, ...]] = field(default_factory=list)


def _flag(options: dict[str, str], name: str, default: bool) -> bool:
    """A true/false option (its name in lower case in ``options``); anything else is a
    ``ValueError`` naming it, never read as false."""
    value = options.get(name)
    if value is None:
        return default
    if str(value).strip().lower() not in ("true", "false"):
        raise ValueError(f"option {name} must be true or false, not {value!r}")
    return str(value).strip().lower() == "true"


def _whole_option(options: dict[str, str], name: str, default: int) -> int:
    """A whole-number option (``options`` keyed in lower case); anything else is a
    ``ValueError`` naming it."""
    value = options.get(name.lower())
    if value is None:
        return default
    try:
        return int(str(value).strip())
    except ValueError:
        raise ValueError(f"option {name} must be a whole number, not {value!r}") from None


def _plan(options: dict[str, str]) -> _ReadPlan:
    import pyarrow as pa

    options = {k.lower(): v for k, v in options.items()}
    record_type = options.get("recordtype", "Example").lower()
    if record_type not in _RECORD_TYPES:
        raise ValueError(
            f"recordType must be Example, SequenceExample or ByteArray, not {record_type!r}"
        )
    files = _paths(options)
    bases = json.loads(options["paths"]) if options.get("paths") else [options["path"]]
    partition_columns, values = partition_values(files, bases)
    so = _storage_options(options)
    compression = _compression(options)
    strings_opt = options.get("strings", "false")
    strings: bool | list[str] = (
        strings_opt.lower() == "true"
        if strings_opt.lower() in ("true", "false")
        else [s.strip() for s in strings_opt.split(",") if s.strip()]
    )
    on_error = options.get("onerror", "raise").lower()
    if on_error not in ("raise", "skip"):
        raise ValueError(f"onError must be raise or skip, not {on_error!r}")
    resync = _flag(options, "resync", False)
    partition_bytes = parse_size(options.get("partitionbytes", 64 << 20))
    batch_size = _whole_option(options, "batchSize", 65_536)
    batch_bytes = parse_size(options.get("batchbytes", DEFAULT_BATCH_BYTES))
    if batch_size < 1 or batch_bytes < 1:
        raise ValueError("batchSize and batchBytes must be positive")
    context: Schema | None = None
    lists: Schema | None = None
    nullable: set[str] = set()
    given = options.get("schema")
    if record_type == "bytearray":
        arrow_schema = pa.schema([("byteArray", pa.binary())])
        strings = False
    else:
        if given and given.lstrip().startswith("{"):
            context = Schema.from_json(given)
            if options.get("sequenceschema"):
                lists = Schema.from_json(options["sequenceschema"])
        else:
            # Spark's columns are nullable: a feature is null where an Example lacks it,
            # whether the sample saw it missing or not (an array is empty where empty).
            # A feature of one value wherever present is a scalar column.
            inferred = infer_schema(
                files,
                nullable=True,
                compression=compression,
                storage_options=so,
                on_error=on_error,
                resync=resync,
            )
            context = inferred
            lists = inferred.sequence if record_type == "sequenceexample" else None
            nullable = nullable_features(inferred, True)
        context, lists, arrow_schema = arrow_columns(context, lists, None, strings)
        arrow_schema = never_null(arrow_schema, context, nullable)
    clash = [c for c in partition_columns if c in arrow_schema.names]
    if clash:
        raise ValueError(f"partition columns {clash} are features of the records too")
    for c in partition_columns:
        arrow_schema = arrow_schema.append(pa.field(c, pa.string()))
    return _ReadPlan(
        files=files,
        record_type=record_type,
        context=context,
        lists=lists,
        arrow_schema=arrow_schema,
        strings=strings,
        compression=compression,
        storage_options=so,
        on_error=on_error,
        resync=resync,
        nullable=nullable,
        partition_bytes=partition_bytes,
        batch_size=batch_size,
        batch_bytes=batch_bytes,
        partition_columns=partition_columns,
        partition_values=values,
    )


class TFRecordDataSource(DataSource):
    """``format("tfrecord")``: reads TFRecord files of Examples (or SequenceExamples, or
    raw records) as rows, and writes rows as a committed dataset of shards.

    Read options: ``schema`` (a tfrecordkit schema's ``to_json()``; a Spark DDL string goes
    to ``.schema(...)``), ``sequenceSchema``, ``recordType`` (``Example``,
    ``SequenceExample``, ``ByteArray``), ``compression`` (or ``codec``; detected by
    default), ``strings`` (``true``, or the features to read as StringType), ``onError``
    (``raise`` or ``skip``), ``storage_options`` (JSON, for ``s3://`` and other URLs),
    ``partitionBytes`` (bytes per partition, 64 MiB by default; a larger indexed file is
    split among partitions), ``batchSize`` and ``batchBytes`` (an Arrow batch handed to
    Spark ends at 65,536 rows, or sooner once its records hold 4 MiB; sizes such as
    ``"16MiB"`` are taken).
    Write options: ``compression``, ``index`` (``false`` for no ``.idx`` sidecars),
    ``storage_options``, ``partitionOverwriteMode`` (with ``partitionBy`` and
    ``overwrite``: ``static`` replaces every dataset under the path, ``dynamic`` only the
    partitions written; the SparkSession's ``spark.sql.sources.partitionOverwriteMode`` by
    default).
    """

    @classmethod
    def name(cls) -> str:
        return FORMAT

    @functools.cached_property
    def _read_plan(self) -> _ReadPlan:
        """The files and schema to read: computed once where Spark asks this instance for
        both its schema and its reader."""
        return _plan(dict(self.options))

    def schema(self) -> Any:
        return spark_struct(self._read_plan.arrow_schema)

    def reader(self, schema: Any) -> DataSourceReader:
        return _Reader(self._read_plan, schema)

    def writer(self, schema: Any, overwrite: bool) -> DataSourceArrowWriter:
        options = {k.lower(): v for k, v in self.options.items()}
        if options.get("tfrecordkit_partitionby"):
            return _partitioned_writer(options, overwrite)
        return _Writer(options, overwrite)


class _Files(InputPartition):
    def __init__(self, paths: list[str | ByteRange], values: tuple[str | None, ...] = ()) -> None:
        super().__init__(paths)
        self.paths = paths
        self.values = values


def _groups(
    files: list[str | ByteRange], sizes: list[int], target: int
) -> list[list[str | ByteRange]]:
    """Consecutive files (and byte ranges of large ones) in groups of about ``target``
    bytes: each task's fixed cost is spent on enough data."""
    groups: list[list[str | ByteRange]] = []
    current: list[str | ByteRange] = []
    held = 0
    for path, size in zip(files, sizes, strict=True):
        if current and held + size > target:
            groups.append(current)
            current, held = [], 0
        current.append(path)
        held += size
    if current:
        groups.append(current)
    return groups


class _Reader(DataSourceReader):
    def __init__(self, plan: _ReadPlan, schema: Any) -> None:
        from pyspark.sql.pandas.types import to_arrow_schema

        self.plan = plan
        self.target = to_arrow_schema(schema)
        if plan.record_type == "bytearray":
            names = [f.name for f in plan.arrow_schema]
            missing = [n for n in self.target.names if n not in names]
            if missing:
                raise ValueError(f"columns {missing} are not in the records, only {names}")
            self.context, self.nullable = None, set()
            return
        # Features the given schema names are read as it says, seen by the inference or not.
        self.context, self.nullable = read_features(
            plan.context or Schema({}),
            plan.nullable,
            self.target,
            [*plan.partition_columns, *(plan.lists or ())],
        )

    def partitions(self) -> list[InputPartition]:
        p = self.plan
        out: list[InputPartition] = []
        values = p.partition_values or [()] * len(p.files)
        # A task reads one partition directory's files: its rows share the values.
        pairs = zip(p.files, values, strict=True)
        for value, run in itertools.groupby(pairs, key=lambda fv: fv[1]):
            items: list[str | ByteRange] = []
            sizes: list[int] = []
            for f, _ in run:
                size = file_size(f, p.storage_options)
                # A file larger than a partition is shared, by the record offsets of its
                # index, in pieces big enough to be worth a task.
                target = max(p.partition_bytes, MIN_SPLIT_BYTES)
                pieces = cut(f, size, target, p.compression, p.storage_options)
                items += pieces
                sizes += [span_bytes(piece, size) for piece in pieces]
            out += [_Files(g, value) for g in _groups(items, sizes, p.partition_bytes)]
        return out

    def read(self, partition: InputPartition) -> Iterator[Any]:
        import pyarrow as pa

        p = self.plan
        paths = partition.value  # type: ignore[attr-defined]
        if p.record_type == "bytearray":
            from ..io.records import read_batches

            for batch in read_batches(
                paths,
                p.batch_size,
                compression=p.compression,
                storage_options=p.storage_options,
                batch_bytes=p.batch_bytes,
                on_error=p.on_error,  # type: ignore[arg-type]
                resync=p.resync,
            ):
                raw = pa.RecordBatch.from_arrays([pa.array(batch, pa.binary())], ["byteArray"])
                yield _with_values(raw, p, partition).select(self.target.names)
            return
        reader = read_arrow(
            paths,
            self.context,
            nullable=sorted(self.nullable),
            sequence_schema=p.lists,
            strings=p.strings,
            compression=p.compression,
            storage_options=p.storage_options,
            on_error=p.on_error,  # type: ignore[arg-type]
            resync=p.resync,
            batch_size=p.batch_size,
            batch_bytes=p.batch_bytes,
        )
        names = self.target.names
        try:
            for batch in reader:
                yield _cast(_with_values(batch, p, partition).select(names), self.target)
        except SchemaError as err:
            hint_nullable(err, self.target)
            raise


def _cast(batch: Any, target: Any) -> Any:
    """``batch`` as the schema Spark asked for; a column whose values do not fit the type
    given for it is a ``SchemaError`` naming it."""
    import pyarrow as pa

    if not target.names:
        return batch  # cast() would lose the row count of a batch of no columns
    try:
        return batch.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        for field in target:
            column = batch.column(field.name)
            try:
                column.cast(field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
                raise SchemaError(
                    f"column {field.name!r}: the schema gives {field.type}, and the records "
                    f"hold {column.type}: "
                    f"{str(err).splitlines()[0]}",
                    key=field.name,
                ) from None
        raise


def _with_values(batch: Any, plan: _ReadPlan, partition: InputPartition) -> Any:
    """``batch`` with its partition's values as string columns."""
    import pyarrow as pa

    values = getattr(partition, "values", ())
    if not plan.partition_columns:
        return batch
    arrays = [pa.repeat(pa.scalar(v, pa.string()), batch.num_rows) for v in values]
    return pa.RecordBatch.from_arrays(
        [*batch.columns, *arrays], names=[*batch.schema.names, *plan.partition_columns]
    )


@dataclass
class _Part(WriterCommitMessage):
    task: int
    info: dict[str, Any]
    schema: str | None


def _write_settings(options: dict[str, str], overwrite: bool) -> tuple[str, str | None, bool, str]:
    """A write's prefix (or directory), compression, index sidecars and save mode."""
    prefix = options.get("path")
    if not prefix:
        raise ValueError("no prefix to write to: save(prefix)")
    compression = _compression(options)
    if compression == "auto":
        compression = None
    mode = options.get("tfrecordkit_mode", "overwrite" if overwrite else "errorifexists")
    index = _flag(options, "index", True) and compression is None
    return (prefix if is_url(prefix) else os.path.abspath(prefix)), compression, index, mode


def _partitioned_writer(options: dict[str, str], overwrite: bool) -> PartitionedWriter:
    root, compression, index, mode = _write_settings(options, overwrite)
    replace = options.get("partitionoverwritemode", "static").lower()
    if replace not in ("static", "dynamic"):
        raise ValueError(f"partitionOverwriteMode must be static or dynamic, not {replace!r}")
    return PartitionedWriter(
        root,
        json.loads(options["tfrecordkit_partitionby"]),
        compression=compression,
        index=index,
        mode=mode,
        dynamic=replace == "dynamic",
        storage_options=_storage_options(options),
    )


class _Writer(DataSourceArrowWriter):
    def __init__(self, options: dict[str, str], overwrite: bool) -> None:
        prefix, compression, self.index, mode = _write_settings(options, overwrite)
        self.commit_ = DatasetCommit(
            prefix,
            compression=compression,
            index=self.index,
            overwrite=mode == "overwrite",
            storage_options=_storage_options(options),
        )
        self.commit_.begin()

    def write(self, iterator: Iterator[Any]) -> _Part:
        import pyarrow as pa
        from pyspark import TaskContext

        ctx = TaskContext.get()
        task = ctx.partitionId() if ctx else 0
        attempt = ctx.attemptNumber() if ctx else 0
        schema: str | None = None

        def fill(writer: Any) -> None:
            nonlocal schema
            for batch in iterator:
                table = as_table(pa.Table.from_batches([batch]))
                if schema is None:
                    schema = table.schema().to_json()
                writer.write_columns(table.native())

        info = self.commit_.write_part(f"{task:05d}-{attempt}", fill)
        return _Part(task, info, schema)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        # Only the parts the tasks reported: a lost task's retry may have left another.
        parts = sorted((m for m in messages if isinstance(m, _Part)), key=lambda m: m.task)
        kept = [m for m in parts if m.info["records"]] or parts[:1]
        self.commit_.abort([m.info for m in parts if m not in kept])
        try:
            if not kept:  # no rows and no tasks: the dataset is one empty shard
                kept = [self.write(iter(()))]
            schemas = {m.schema for m in kept if m.schema is not None}
            schema = Schema.from_json(schemas.pop()) if len(schemas) == 1 else None
            self.commit_.commit([m.info for m in kept], schema)
        finally:
            self.commit_.clean_parts()
            self.commit_.release()

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self.commit_.abort([m.info for m in messages if isinstance(m, _Part)])
        self.commit_.clean_parts()
        self.commit_.release()
        self.commit_.remove_made()


def _teach_save_modes() -> None:
    """``DataFrameWriter`` learns ``errorifexists`` and ``ignore``, and ``partitionBy``,
    for ``tfrecord``."""
    from pyspark.sql.readwriter import DataFrameWriter

    if getattr(DataFrameWriter, "_tfrecordkit_modes", False):
        return
    names = ("format", "mode", "option", "options", "partitionBy", "save")
    original = {n: getattr(DataFrameWriter, n) for n in names}

    def format(self: Any, source: str) -> Any:
        self._tfr_format = source
        return original["format"](self, source)

    def mode(self: Any, save_mode: str | None) -> Any:
        self._tfr_mode = save_mode
        return original["mode"](self, save_mode)

    def option(self: Any, key: str, value: Any) -> Any:
        self.__dict__.setdefault("_tfr_options", {})[key.lower()] = str(value)
        return original["option"](self, key, value)

    def options(self: Any, **values: Any) -> Any:
        recorded = self.__dict__.setdefault("_tfr_options", {})
        recorded.update((k.lower(), str(v)) for k, v in values.items())
        return original["options"](self, **values)

    def partitionBy(self: Any, *cols: Any) -> Any:
        self._tfr_partition_by = _column_names(cols)
        return original["partitionBy"](self, *cols)

    def save(
        self: Any,
        path: str | None = None,
        format: str | None = None,
        mode: str | None = None,
        partitionBy: Any = None,
        **options: Any,
    ) -> None:
        """Saves as Spark does; for ``tfrecord``, a committed dataset at the prefix
        ``path`` or, with ``partitionBy``, one under ``path/name=value/part`` (``path`` a
        directory, as Spark lays out partitioned output) for each partition value."""
        fmt = format or getattr(self, "_tfr_format", None)
        if fmt != FORMAT:
            return original["save"](self, path, format, mode, partitionBy, **options)
        wanted = (mode or getattr(self, "_tfr_mode", None) or "errorifexists").lower()
        wanted = _MODES.get(wanted, wanted)
        if wanted not in ("errorifexists", "ignore", "overwrite"):
            raise ValueError(
                f"save mode {wanted!r} is not supported for tfrecord (errorifexists, ignore "
                "or overwrite): appending would renumber the shards of a committed dataset"
            )
        given = {**getattr(self, "_tfr_options", {}), **{k.lower(): v for k, v in options.items()}}
        if path is None:
            path = given.get("path")
        if path and not is_url(path) and not os.path.isabs(path):
            # Relative to the driver JVM's working directory, as Spark takes paths.
            here = self._spark._jvm.java.lang.System.getProperty("user.dir")
            path = os.path.join(here, path)
        so = _storage_options(given)
        spark_mode = "overwrite" if wanted == "overwrite" else "append"
        columns = _column_names([partitionBy]) if partitionBy else None
        columns = columns or getattr(self, "_tfr_partition_by", None)
        if columns:
            if wanted != "overwrite" and path and datasets_under(path, so):
                if wanted == "ignore":
                    return None
                raise FileExistsError(
                    f"a dataset already exists under {path}; use mode('overwrite')"
                )
            if "partitionoverwritemode" not in given:
                conf = "spark.sql.sources.partitionOverwriteMode"
                given["partitionoverwritemode"] = self._spark.conf.get(conf, "static")
            # A writer of its own: this one's JVM side holds partitionBy, which Spark
            # refuses for Python data sources.
            df, columns = prepare(self._df, columns)
            writer = df.write
            original["mode"](writer, spark_mode)
            given.pop("path", None)
            given.update(tfrecordkit_mode=wanted, tfrecordkit_partitionby=json.dumps(columns))
            with spark_errors():
                return original["save"](writer, path, fmt, None, None, **given)
        if wanted != "overwrite" and path and _dataset_at(path, so):
            if wanted == "ignore":
                return None
            raise FileExistsError(f"a dataset already exists at {path}; use mode('overwrite')")
        original["mode"](self, spark_mode)
        with spark_errors():
            return original["save"](self, path, fmt, None, None, tfrecordkit_mode=wanted, **options)

    DataFrameWriter.format = format  # type: ignore[method-assign]
    DataFrameWriter.mode = mode  # type: ignore[method-assign, assignment]
    DataFrameWriter.option = option  # type: ignore[method-assign]
    DataFrameWriter.options = options  # type: ignore[method-assign]
    DataFrameWriter.partitionBy = partitionBy  # type: ignore[method-assign]
    DataFrameWriter.save = save  # type: ignore[method-assign]
    DataFrameWriter._tfrecordkit_modes = True  # type: ignore[attr-defined]


def _column_names(cols: Any) -> list[Any]:
    """``partitionBy``'s columns, given one by one or as one list, as a list."""
    if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
        cols = cols[0]
    return list(cols)


def _dataset_at(prefix: str, storage_options: dict[str, Any] | None) -> bool:
    """Whether a committed dataset (its manifest) is at ``prefix``."""
    return exists(manifest_path(prefix), storage_options)
