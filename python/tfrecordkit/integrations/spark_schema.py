"""The Spark side of ``format("tfrecord")``'s schemas: the Spark SQL type of each Arrow
type that :func:`tfrecordkit.read_arrow` gives, and the features to read for the columns
a Spark schema asks for.

As spark-tfrecord reads them, a feature of one value wherever it is present is a column of
that value, null in the rows whose Example lacks it; features present in every Example
of the inference sample are ``NOT NULL`` columns, read as required. A schema given with
``.schema("label long, ...")`` is read as it says, including features the inference
sample never saw: a scalar Spark type reads a feature of at most one value per Example,
null where it is missing unless the column is ``NOT NULL``, and an array type one of any
number.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ..errors import SchemaError
from ..schema.features import FixedLen, Schema, Spec, VarLen

__all__ = ["hint_nullable", "never_null", "read_features", "spark_struct", "spark_type"]


def spark_type(arrow_type: Any) -> Any:
    """The Spark SQL type of an Arrow type that :func:`tfrecordkit.read_arrow` gives."""
    import pyarrow as pa
    from pyspark.sql import types as T

    if pa.types.is_int64(arrow_type):
        return T.LongType()
    if pa.types.is_float32(arrow_type):
        return T.FloatType()
    if pa.types.is_float64(arrow_type):
        return T.DoubleType()
    if pa.types.is_large_binary(arrow_type) or pa.types.is_binary(arrow_type):
        return T.BinaryType()
    if pa.types.is_large_string(arrow_type) or pa.types.is_string(arrow_type):
        return T.StringType()
    if (
        pa.types.is_large_list(arrow_type)
        or pa.types.is_list(arrow_type)
        or pa.types.is_fixed_size_list(arrow_type)
    ):
        return T.ArrayType(spark_type(arrow_type.value_type), containsNull=False)
    if pa.types.is_struct(arrow_type):
        return T.StructType(
            [T.StructField(f.name, spark_type(f.type), f.nullable) for f in arrow_type]
        )
    raise TypeError(f"no Spark type for the Arrow type {arrow_type}")


def spark_struct(arrow_schema: Any) -> Any:
    """The Spark schema of batches of ``arrow_schema``, nullable where its fields are."""
    from pyspark.sql import types as T

    return T.StructType(
        [T.StructField(f.name, spark_type(f.type), nullable=f.nullable) for f in arrow_schema]
    )


def never_null(arrow_schema: Any, context: Schema, nullable: Collection[str]) -> Any:
    """``arrow_schema`` with the columns of features that are never null marked so: those
    not ``nullable``, a ``FixedLen`` one read as required (one missing is an error) and a
    ``VarLen`` one as empty where missing, as TensorFlow reads them."""
    import pyarrow as pa

    fields = []
    for f in arrow_schema:
        spec = context.get(f.name)
        never = isinstance(spec, FixedLen | VarLen) and f.name not in nullable
        fields.append(f.with_nullable(False) if never else f)
    return pa.schema(fields, metadata=arrow_schema.metadata)


def _kind(arrow_type: Any) -> str | None:
    """The feature type (int64, float32, bytes) holding values of ``arrow_type``."""
    import pyarrow as pa

    if pa.types.is_integer(arrow_type) or pa.types.is_boolean(arrow_type):
        return "int64"
    if pa.types.is_floating(arrow_type):
        return "float32"
    if pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type):
        return "bytes"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "bytes"
    return None


def _is_list(arrow_type: Any) -> bool:
    import pyarrow as pa

    t = arrow_type
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def _wanted(field: Any) -> Spec:
    """The feature that Spark column ``field`` (as Arrow has it) reads: ``FixedLen([])``
    for a scalar, ``VarLen`` for an array."""
    t = field.type
    is_list = _is_list(t)
    kind = _kind(t.value_type if is_list else t)
    if kind is None:
        raise TypeError(
            f"column {field.name!r}: a TFRecord feature holds int64, float32 or bytes values "
            f"(or arrays of them), not {t}"
        )
    return VarLen(kind) if is_list else FixedLen([], kind)


def read_features(
    context: Schema, nullable: set[str], target: Any, others: Collection[str]
) -> tuple[Schema, set[str]]:
    """The features to read for the columns of ``target`` (a ``pyarrow.Schema``), and the
    nullable ones among them, from those of the read plan (``context``, ``nullable``);
    ``others`` are columns that are no features (feature lists, partition columns).

    A column the plan does not read is read as its Spark type says; a scalar column of a
    feature the plan reads as a ``VarLen`` is read as one value. A column that Spark's
    schema lets be null is null where an Example lacks the feature. One it does not
    (``NOT NULL``) is, for a ``FixedLen`` feature, an error naming it, and for a
    ``VarLen`` one, empty."""
    specs = dict(context)
    nullable = set(nullable)
    for field in target:
        name = field.name
        spec = specs.get(name)
        if name in others:
            continue
        if spec is None:
            specs[name] = spec = _wanted(field)
        elif isinstance(spec, VarLen) and not _is_list(field.type):
            specs[name] = spec = FixedLen([], spec.dtype)
        if isinstance(spec, VarLen) or (isinstance(spec, FixedLen) and spec.default is None):
            (nullable.add if field.nullable else nullable.discard)(name)
    return Schema(specs), nullable


def hint_nullable(err: SchemaError, target: Any) -> None:
    """Tells, on an error for a feature missing from an Example, how to read it as null
    when its column is ``NOT NULL``."""
    key = err.key
    if key is None or "is required but could not be found" not in err.message:
        return
    if key not in target.names or target.field(key).nullable:
        return
    err.message += (
        f'; its column is NOT NULL: give .schema("{key} ...") with the column nullable '
        "to read null there"
    )
