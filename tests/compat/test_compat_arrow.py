"""``tfr.read_arrow`` and ``Dataset.to_arrow`` columns against what ``tf.io.parse_example``
and ``tf.io.parse_sequence_example`` give for the same records (written by TensorFlow,
split over several files): every kind of feature, missing and empty ones included."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import pyarrow as pa
import pytest
import tensorflow as tf
import tfrecordkit as tfr

F = tf.train.Feature
R = tf.io.RaggedFeature


def ints(*v: int) -> F:
    return F(int64_list=tf.train.Int64List(value=v))


def floats(*v: float) -> F:
    return F(float_list=tf.train.FloatList(value=v))


def strings(*v: bytes) -> F:
    return F(bytes_list=tf.train.BytesList(value=v))


def example(features: dict[str, F]) -> bytes:
    return tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString()


def sequence(context: dict[str, F], lists: dict[str, list[F]]) -> bytes:
    return tf.train.SequenceExample(
        context=tf.train.Features(feature=context),
        feature_lists=tf.train.FeatureLists(
            feature_list={k: tf.train.FeatureList(feature=v) for k, v in lists.items()}
        ),
    ).SerializeToString()


WORDS = [b"", b"a", "h\u00e9llo".encode(), "\u65e5\u672c".encode(), b"x" * 40]


def random_example(i: int, rng: np.random.Generator) -> bytes:
    """Example ``i``: every feature of ``EXAMPLE_SPECS`` present, empty or missing."""
    f: dict[str, F] = {
        "id": ints(i),
        "name": strings(WORDS[i % len(WORDS)] + str(i).encode()),
        "vec": floats(*rng.random(4).astype(np.float32).tolist()),
    }
    if i % 5:
        f["tok"] = strings(*[WORDS[k] for k in rng.integers(0, len(WORDS), i % 4)])
    # Ragged: values split by row lengths, and pairs split by row splits.
    lengths = rng.integers(0, 4, size=int(rng.integers(0, 4)))
    if i % 7 != 3:
        f["rv"] = ints(*rng.integers(-(2**62), 2**62, size=int(lengths.sum())).tolist())
        f["rl"] = ints(*lengths.tolist())
    pair_rows = rng.integers(0, 3, size=int(rng.integers(0, 3)))
    f["fv"] = floats(*rng.random(2 * int(pair_rows.sum())).astype(np.float32).tolist())
    f["fs"] = ints(0, *np.cumsum(pair_rows).tolist())
    # Sparse: unsorted entries in a [5, 4] tensor, and bytes in a [5] one.
    nnz = int(rng.integers(0, 5)) if i % 6 else 0
    if i % 6 != 1:
        cells = rng.choice(20, size=nnz, replace=False)
        f["si"] = ints(*(cells // 4).tolist())
        f["sj"] = ints(*(cells % 4).tolist())
        f["sval"] = floats(*rng.random(nnz).astype(np.float32).tolist())
        f["sbytes"] = strings(*[WORDS[k] for k in rng.integers(0, len(WORDS), nnz)])
    # FixedLenSequence: pairs, some Examples without any, or with an empty list.
    if i % 4 == 1:
        f["pairs"] = ints()
    elif i % 4:
        f["pairs"] = ints(*rng.integers(0, 100, size=2 * int(rng.integers(1, 4))).tolist())
    return example(f)


EXAMPLE_SPECS = {
    "id": tf.io.FixedLenFeature([], tf.int64),
    "name": tf.io.FixedLenFeature([], tf.string),
    "vec": tf.io.FixedLenFeature([2, 2], tf.float32),
    "tok": tf.io.VarLenFeature(tf.string),
    "lengths": R(tf.int64, "rv", [R.RowLengths("rl")], row_splits_dtype=tf.int64),
    "pairs_of": R(tf.float32, "fv", [R.RowSplits("fs"), R.UniformRowLength(2)]),
    "flat": R(tf.float32, "fv"),
    "grid": tf.io.SparseFeature(["si", "sj"], "sval", tf.float32, [5, 4]),
    "labels": tf.io.SparseFeature("si", "sbytes", tf.string, 5),
    "pairs": tf.io.FixedLenSequenceFeature([2], tf.int64, allow_missing=True),
}


@pytest.fixture(scope="module")
def shards(tmp_path_factory, tf_write):
    """40 Examples written by TensorFlow over four files (one of them empty)."""
    rng = np.random.default_rng(7)
    records = [random_example(i, rng) for i in range(40)]
    root = tmp_path_factory.mktemp("arrow")
    sizes = [13, 0, 18, 9]
    paths, start = [], 0
    for n, size in enumerate(sizes):
        paths.append(tf_write(root / f"part-{n}.tfrecord", records[start : start + size]))
        start += size
    return paths, records


def sparse_rows(theirs: tf.SparseTensor, rows: int, names: list[str]) -> list[dict]:
    """A batched SparseTensor as one dict of per-dimension indices and values per row."""
    out = [{name: [] for name in names} for _ in range(rows)]
    indices, values = theirs.indices.numpy().tolist(), theirs.values.numpy().tolist()
    for index, value in zip(indices, values, strict=True):
        row = out[index[0]]
        for name, i in zip(names[:-1], index[1:], strict=True):
            row[name].append(i)
        row[names[-1]].append(value)
    return out


def var_len_rows(theirs: tf.SparseTensor, rows: int) -> list[list]:
    """A VarLenFeature's SparseTensor as each row's values."""
    return [row["values"] for row in sparse_rows(theirs, rows, ["position", "values"])]


def expected_column(key: str, spec, theirs, records: list[bytes]) -> list:
    """What TensorFlow's parse of ``records`` gives for ``key``, as Arrow's to_pylist."""
    n = len(records)
    value = theirs[key]
    if isinstance(spec, tf.io.SparseFeature):
        names = ["indices"] if isinstance(spec.size, int) else ["indices_0", "indices_1"]
        return sparse_rows(value, n, [*names, "values"])
    if isinstance(spec, tf.io.VarLenFeature):
        return var_len_rows(value, n)
    if isinstance(spec, tf.io.FixedLenSequenceFeature):
        # TensorFlow pads to the longest; the count of each row's values says its own.
        counts = tf.io.parse_example(records, {key: tf.io.VarLenFeature(spec.dtype)})[key]
        per_row = np.bincount(counts.indices.numpy()[:, 0], minlength=n) // 2
        return [row[:k] for row, k in zip(value.numpy().tolist(), per_row, strict=True)]
    if isinstance(value, tf.RaggedTensor):
        return value.to_list()
    return value.numpy().tolist()


def test_read_arrow_gives_what_tensorflow_parses(shards):
    paths, records = shards
    theirs = tf.io.parse_example(records, EXAMPLE_SPECS)
    reader = tfr.read_arrow(paths, EXAMPLE_SPECS, batch_size=7)
    batches = list(reader)
    # Batches run across files, the empty one included.
    assert [b.num_rows for b in batches] == [7] * 5 + [5]
    table = pa.Table.from_batches(batches, reader.schema)
    for key, spec in EXAMPLE_SPECS.items():
        expected = expected_column(key, spec, theirs, records)
        assert table.column(key).to_pylist() == expected, key


def test_read_arrow_strings_decode_bytes_at_every_level(shards):
    paths, records = shards
    specs = {k: EXAMPLE_SPECS[k] for k in ("name", "tok", "labels")}
    theirs = tf.io.parse_example(records, specs)
    table = tfr.read_table(paths, specs, strings=True, batch_size=11)

    def text(value):
        if isinstance(value, bytes):
            return value.decode()
        if isinstance(value, dict):
            return {k: text(v) for k, v in value.items()}
        return [text(v) for v in value] if isinstance(value, list) else value

    for key, spec in specs.items():
        expected = text(expected_column(key, spec, theirs, records))
        assert table.column(key).to_pylist() == expected, key


def test_a_pipeline_to_arrow_gives_what_tensorflow_parses_batch_by_batch(shards):
    paths, records = shards
    dataset = tfr.Dataset.from_files(paths).parse(EXAMPLE_SPECS).batch(6)
    batches = list(dataset.to_arrow())
    assert sum(b.num_rows for b in batches) == len(records)
    for n, batch in enumerate(batches):
        chunk = records[6 * n : 6 * n + 6]
        theirs = tf.io.parse_example(chunk, EXAMPLE_SPECS)
        for key, spec in EXAMPLE_SPECS.items():
            got = batch.column(key).to_pylist()
            if isinstance(spec, tf.io.FixedLenSequenceFeature):
                # A pipeline's batches are padded as TensorFlow pads them.
                assert got == theirs[key].numpy().tolist(), key
            else:
                assert got == expected_column(key, spec, theirs, chunk), key


SEQUENCE_CONTEXT = {
    "id": tf.io.FixedLenFeature([], tf.int64),
    "tags": tf.io.VarLenFeature(tf.string),
}
SEQUENCE_LISTS = {
    "frames": tf.io.FixedLenSequenceFeature([2], tf.float32),
    "labels": tf.io.FixedLenSequenceFeature([], tf.string, allow_missing=True),
    "words": tf.io.VarLenFeature(tf.int64),
    "spans": R(tf.int64, "span_values", [R.RowLengths("span_lengths")]),
}


def random_sequence(i: int, rng: np.random.Generator) -> bytes:
    steps = int(rng.integers(0, 4))
    context = {"id": ints(i)}
    if i % 3:
        context["tags"] = strings(*WORDS[: i % 4])
    lists: dict[str, list[F]] = {
        "frames": [floats(*rng.random(2).astype(np.float32).tolist()) for _ in range(steps)],
        "words": [ints(*range(int(rng.integers(0, 3)))) for _ in range(steps)],
    }
    if i % 4:
        lists["labels"] = [strings(WORDS[(i + t) % len(WORDS)]) for t in range(steps)]
    lengths = [rng.integers(0, 3, size=int(rng.integers(0, 3))) for _ in range(steps)]
    lists["span_lengths"] = [ints(*row.tolist()) for row in lengths]
    lists["span_values"] = [ints(*range(int(row.sum()))) for row in lengths]
    if i % 5 == 2:
        lists["words"].append(F())  # a step that holds nothing
        lists["frames"].append(floats(0.5, 1.5))
        lists["span_lengths"].append(ints())
        lists["span_values"].append(ints())
        if "labels" in lists:
            lists["labels"].append(strings(b"end"))
    return sequence(context, lists)


def test_read_arrow_of_sequence_examples_gives_what_tensorflow_parses(tmp_path, tf_write):
    rng = np.random.default_rng(3)
    records = [random_sequence(i, rng) for i in range(25)]
    paths = [
        tf_write(tmp_path / "a.tfrecord", records[:10]),
        tf_write(tmp_path / "b.tfrecord", records[10:]),
    ]
    oracle = {**SEQUENCE_LISTS, "words": R(tf.int64)}
    context, lists, lengths = tf.io.parse_sequence_example(records, SEQUENCE_CONTEXT, oracle)
    reader = tfr.read_arrow(paths, SEQUENCE_CONTEXT, sequence_schema=SEQUENCE_LISTS, batch_size=4)
    table = reader.read_all()
    assert table.column_names == [*SEQUENCE_CONTEXT, *SEQUENCE_LISTS]
    n = len(records)
    assert table.column("id").to_pylist() == context["id"].numpy().tolist()
    assert table.column("tags").to_pylist() == var_len_rows(context["tags"], n)
    for key in ("frames", "labels"):
        padded = lists[key].numpy().tolist()
        steps = lengths[key].numpy().tolist()
        expected = [row[:k] for row, k in zip(padded, steps, strict=True)]
        assert table.column(key).to_pylist() == expected, key
    for key in ("words", "spans"):
        assert table.column(key).to_pylist() == lists[key].to_list(), key


def test_a_missing_required_feature_list_is_refused_as_tensorflow_refuses_it(tmp_path, tf_write):
    good = sequence({}, {"frames": [floats(1, 2)]})
    bad = sequence({}, {})
    path = tf_write(tmp_path / "s.tfrecord", [good, good, bad])
    lists = {"frames": SEQUENCE_LISTS["frames"]}
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.io.parse_sequence_example([good, bad], None, lists)
    with pytest.raises(tfr.SchemaError, match=r'feature list "frames".*required') as info:
        tfr.read_table(path, sequence_schema=lists)
    assert (info.value.path, info.value.record_index, info.value.key) == (path, 2, "frames")
