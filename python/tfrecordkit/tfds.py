"""TensorFlow Datasets interop, both ways, without TensorFlow Datasets installed.

Writing: :func:`write_metadata` describes the splits in a directory (shards written by
:func:`tfrecordkit.write_dataset` or :func:`tfrecordkit.convert`) with TFDS's own metadata,
``dataset_info.json``, ``features.json`` and ``{feature}.labels.txt``, so that
``tfds.builder_from_directory(directory)`` loads them. The shards keep their names: each
split's ``filepathTemplate`` names them as they are (``train-00000-of-00004.tfrecord``).

Reading: :func:`info` and :func:`schema` turn a TFDS-prepared directory (``.../mnist/3.0.0``)
into a :class:`tfrecordkit.Schema` and the shard files of each split; ``tfr.load(directory,
split)`` reads it as a parsed :class:`tfrecordkit.Dataset`.
"""

from __future__ import annotations

import errno
import glob
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._paths import (
    StorageOptions,
    as_url,
    exists,
    file_size,
    filesystem,
    is_url,
    read_bytes,
    remove,
    write_file,
)
from .manifest import SHARD_GLOB, SHARD_RE, Manifest, ShardInfo, shard_name
from .records import count, infer_schema
from .schema import (
    FixedLen,
    FixedLenSequence,
    RaggedFeature,
    RowLengths,
    Schema,
    Spec,
    UniformRowLength,
    VarLen,
)

__all__ = ["ClassLabel", "Image", "Info", "Text", "info", "schema", "write_metadata"]

INFO_FILE = "dataset_info.json"
FEATURES_FILE = "features.json"
#: How TFDS names shards when a split gives no template of its own.
DEFAULT_TEMPLATE = "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"
_CLASSES = "tensorflow_datasets.core.features."
_NAME = re.compile(r"[a-zA-Z]\w*")
_VERSION = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")
_SPLIT = re.compile(r"[\w-]*[a-zA-Z0-9][\w-]*")
_PREFIX = re.compile(r"[\w.-]+")
_WIRE = {"int64": "int64", "float32": "float32", "bytes": "string"}


@dataclass(frozen=True)
class ClassLabel:
    """An int64 label with class ``names`` (or only ``num_classes``), as
    ``tfds.features.ClassLabel``: TFDS maps the integers to names with ``int2str``.

    >>> tfr.tfds.ClassLabel(names=["cat", "dog"])  # doctest: +SKIP
    """

    names: Sequence[str] | None = None
    num_classes: int | None = None

    def __post_init__(self) -> None:
        if self.names is None and self.num_classes is None:
            raise ValueError("ClassLabel needs names or num_classes")
        if self.names is None:
            return
        names = tuple(str(n) for n in self.names)
        if self.num_classes is not None and self.num_classes != len(names):
            raise ValueError(f"ClassLabel: {len(names)} names, num_classes={self.num_classes}")
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "num_classes", len(names))


@dataclass(frozen=True)
class Text:
    """UTF-8 text in a bytes feature, as ``tfds.features.Text``."""


@dataclass(frozen=True)
class Image:
    """Encoded images (PNG, JPEG...) in a bytes feature, as ``tfds.features.Image``:
    TFDS decodes them to ``dtype`` arrays of ``shape`` (height, width, channels; None where
    they vary). ``encoding_format`` ("png" or "jpeg") is a hint for TFDS's decoder.

    >>> tfr.tfds.Image(shape=(28, 28, 1))  # doctest: +SKIP
    """

    shape: tuple[int | None, int | None, int | None] = (None, None, 3)
    dtype: str = "uint8"
    encoding_format: str | None = None

    def __post_init__(self) -> None:
        shape = tuple(None if d is None else int(d) for d in self.shape)
        if len(shape) != 3 or shape[2] not in (None, 1, 2, 3, 4):
            raise ValueError(f"Image shape is (height, width, channels), not {self.shape!r}")
        object.__setattr__(self, "shape", shape)
        if self.dtype not in ("uint8", "uint16", "float32"):
            raise ValueError(f'Image dtype: "uint8", "uint16" or "float32", not {self.dtype!r}')
        if self.encoding_format not in (None, "png", "jpeg"):
            raise ValueError(f'Image encoding_format: "png" or "jpeg", not {self.encoding_format}')


Feature = ClassLabel | Text | Image


def write_metadata(
    directory: str | os.PathLike[str],
    splits: Mapping[str, Manifest | str | os.PathLike[str]] | Iterable[Manifest] | None = None,
    *,
    features: Mapping[str, Feature] | None = None,
    schema: Schema | Mapping[str, Any] | None = None,
    name: str | None = None,
    version: str = "1.0.0",
    description: str = "",
    homepage: str = "",
    citation: str = "",
    supervised_keys: tuple[str, ...] | None = None,
    overwrite: bool = False,
    storage_options: StorageOptions = None,
) -> list[str]:
    """Writes TFDS metadata for the splits in ``directory``, so that
    ``tfds.builder_from_directory(directory)`` loads them; returns the files written.

    ``splits`` maps split names to :class:`Manifest` s or dataset prefixes (a prefix with
    no manifest has its shards counted); by default every manifest in ``directory`` is a
    split named by its prefix (``train.manifest.json`` → ``"train"``). The shards must be
    uncompressed and in ``directory``. The features are the manifests' schema (or
    ``schema``): ``FixedLen`` → ``Tensor`` of its shape, ``VarLen`` → ``Tensor`` of shape
    ``(None,)``, ``FixedLenSequence`` → ``(None, *shape)``; a name ``"a/b"`` is feature ``b``
    of the dict ``a``. ``features`` describes some of them further: :class:`ClassLabel`
    for int64 labels, :class:`Text` and :class:`Image` for bytes (a ``VarLen`` or a
    ``FixedLen([n])`` of them becomes a ``Sequence``). ``supervised_keys`` such as
    ``("image", "label")`` serve ``as_supervised=True``. Existing metadata is refused unless
    ``overwrite=True``; ``directory`` may be a URL.

    >>> tfr.write_dataset(train, "out/train")  # doctest: +SKIP
    >>> tfr.write_dataset(test, "out/test")  # doctest: +SKIP
    >>> tfr.tfds.write_metadata("out", features={"label": tfr.tfds.ClassLabel(names)})
    ... # doctest: +SKIP
    >>> tfds.builder_from_directory("out").as_dataset(split="test")  # doctest: +SKIP
    """
    directory = os.fspath(directory).rstrip("/") or "/"
    options = storage_options
    name = _dataset_name(directory) if name is None else name
    if not _NAME.fullmatch(name):
        raise ValueError(f"dataset name {name!r}: letters, digits and _, a letter first")
    if not _VERSION.fullmatch(version):
        raise ValueError(f"version {version!r}: use MAJOR.MINOR.PATCH such as '1.0.0'")
    described = _splits(directory, splits, options)
    if not described:
        raise ValueError(f"no split to describe in {directory}: it holds no dataset manifest")
    schema = _split_schema(described, schema, options)
    overrides = dict(features or {})
    for key, feature in overrides.items():
        if key not in schema:
            raise ValueError(f"features: {key!r} is not a feature of the dataset ({list(schema)})")
        if not isinstance(feature, (ClassLabel, Text, Image)):
            raise TypeError(
                f"feature {key!r}: describe it as tfr.tfds.ClassLabel, Text or Image, "
                f"not {type(feature).__name__}"
            )
    tree: dict[str, Any] = {}
    labels: dict[str, str] = {}
    for key, spec in schema.items():
        described_as = overrides.get(key)
        _insert(tree, key, _feature_json(key, spec, described_as))
        if isinstance(described_as, ClassLabel) and described_as.names is not None:
            names = _checked_names(key, described_as)
            labels[_labels_file(key)] = "".join(n + "\n" for n in names)
    if supervised_keys is not None:
        supervised_keys = tuple(supervised_keys)
        if len(supervised_keys) not in (2, 3) or any(k not in tree for k in supervised_keys):
            raise ValueError(
                f"supervised_keys: 2 or 3 top-level features of {list(tree)}, not {supervised_keys}"
            )
    info = _info_json(name, version, described, description, homepage, citation, supervised_keys)
    # dataset_info.json last: TFDS sees a dataset once it exists.
    outputs = {**labels, FEATURES_FILE: _json(_dict_json(tree)), INFO_FILE: _json(info)}
    targets = {_join(directory, f): text for f, text in outputs.items()}
    if not overwrite:
        for path in targets:
            if exists(path, options):
                raise FileExistsError(
                    errno.EEXIST, "TFDS metadata is here; pass overwrite=True to replace it", path
                )
    written: list[str] = []
    try:
        for path, text in targets.items():
            write_file(path, text, options, replace=overwrite)
            written.append(path)
    except BaseException:
        for path in written:
            remove(path, options)
        raise
    return written


@dataclass
class _Split:
    name: str
    #: The split's prefix path, and its last part (the shards' names start with it).
    path: str
    prefix: str
    shards: list[ShardInfo]
    schema: Schema | None
    #: Whether the shards were counted, having no manifest.
    counted: bool = False


def _splits(directory: str, splits: Any, options: StorageOptions) -> list[_Split]:
    if splits is None:
        found: list[tuple[str | None, Any]] = [(None, m) for m in _manifests(directory, options)]
    elif isinstance(splits, Mapping):
        found = [(str(k), v) for k, v in splits.items()]
    else:
        found = [(None, m) for m in splits]
    out: list[_Split] = []
    for split, item in found:
        manifest: Manifest | None = item if isinstance(item, Manifest) else None
        if manifest is not None:
            path = manifest.path.removesuffix(".manifest.json")
        else:
            path = os.fspath(item)
            try:
                manifest = Manifest.load(path, storage_options=options)
            except FileNotFoundError:
                pass
        where = _dirname(path)
        prefix = path[len(where) :].lstrip("/\\")
        split = prefix if split is None else split
        if not _SPLIT.fullmatch(split):
            raise ValueError(f"split name {split!r}: use letters, digits, _ and -")
        if _norm(where) != _norm(directory):
            raise ValueError(
                f"split {split!r}: its shards are in {where or '.'}, not in {directory}; TFDS "
                "reads a dataset's shards from its own directory"
            )
        if not _PREFIX.fullmatch(prefix):
            raise ValueError(f"split {split!r}: prefix {prefix!r} has characters TFDS cannot name")
        if manifest is None:
            shards = _counted(path, split, options)
            out.append(_Split(split, path, prefix, shards, None, counted=True))
            continue
        if manifest.compression is not None:
            raise ValueError(
                f"split {split!r} ({manifest.path}) is {manifest.compression}-compressed; "
                "TFDS reads uncompressed TFRecord shards only"
            )
        n, template = len(manifest.shards), f"{prefix}-{{SHARD_X_OF_Y}}.{{FILEFORMAT}}"
        if [s.file for s in manifest.shards] != [_shard_file(template, {}, i, n) for i in range(n)]:
            raise ValueError(f"split {split!r}: its shards are not named as TFDS names {n} shards")
        out.append(_Split(split, path, prefix, list(manifest.shards), manifest.schema))
    names = [s.name for s in out]
    if len(set(names)) != len(names):
        raise ValueError(f"split names repeat: {names}")
    return out


def _manifests(directory: str, options: StorageOptions) -> list[Manifest]:
    paths = _glob(directory, "/*.manifest.json", options)
    return [Manifest.load(p, storage_options=options) for p in paths]


def _glob(path: str, pattern: str, options: StorageOptions) -> list[str]:
    """The files whose names are ``path`` (taken literally) then ``pattern``, sorted."""
    if not is_url(path):
        return sorted(glob.glob(glob.escape(path) + pattern))
    fs, inner = filesystem(path, storage_options=options)
    return [as_url(path, p) for p in sorted(fs.glob(glob.escape(inner) + pattern))]


def _counted(path: str, split: str, options: StorageOptions) -> list[ShardInfo]:
    """The shards of a prefix that has no manifest, each counted (from its index sidecar
    when it has one, else by reading it)."""
    files = [f for f in _glob(path, SHARD_GLOB, options) if SHARD_RE.match(_basename(f))]
    if not files:
        raise FileNotFoundError(2, f"split {split!r}: no manifest and no shards", path)
    if any(not f.endswith(".tfrecord") for f in files):
        raise ValueError(f"split {split!r}: TFDS reads uncompressed TFRecord shards only")
    names = [_basename(f) for f in files]
    if names != [_basename(shard_name(path, i, len(files))) for i in range(len(files))]:
        raise ValueError(f"split {split!r}: the shards of {path} are not all there")
    return [
        ShardInfo(n, count(f, storage_options=options), file_size(f, options), "")
        for f, n in zip(files, names, strict=True)
    ]


def _split_schema(splits: list[_Split], given: Any, options: StorageOptions) -> Schema:
    if given is not None:
        return given if isinstance(given, Schema) else Schema(given)
    for s in splits:
        if s.schema is None and s.counted:
            # No manifest: the schema is guessed from the Examples.
            files = [_join(_dirname(s.path), sh.file) for sh in s.shards]
            s.schema = infer_schema(files, storage_options=options)
        if s.schema is None:
            raise ValueError(
                f"split {s.name!r}: its manifest records no schema (the data was written as "
                "serialized records); pass schema="
            )
    first = splits[0]
    for other in splits[1:]:
        a: Mapping[str, Spec] = first.schema or {}
        b: Mapping[str, Spec] = other.schema or {}
        if a != b:
            key = next(k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k))
            raise ValueError(
                f"splits {first.name!r} and {other.name!r} differ in feature {key!r} "
                f"({a.get(key)} and {b.get(key)}); pass schema="
            )
    assert first.schema is not None
    return first.schema


def _feature_json(key: str, spec: Spec, feature: Feature | None) -> dict[str, Any]:
    """The TFDS feature of one schema entry."""
    if isinstance(spec, (FixedLen, FixedLenSequence)) and spec.default is not None:
        raise ValueError(
            f"feature {key!r}: TFDS features have no default value, so Examples without "
            "the feature would not load; describe it without default="
        )
    if isinstance(spec, VarLen):
        outer: tuple[int | None, ...] = (None,)
    elif isinstance(spec, FixedLenSequence):
        outer = (None, *spec.shape)
    elif isinstance(spec, FixedLen):
        outer = tuple(spec.shape)
    else:
        raise ValueError(
            f"feature {key!r}: a {type(spec).__name__} spans several Example features and "
            "has no TFDS feature; describe the features it reads instead"
        )
    if feature is None:
        return _tensor_json(outer, _WIRE[spec.dtype])
    kind = type(feature).__name__
    wants = "int64" if isinstance(feature, ClassLabel) else "bytes"
    if spec.dtype != wants:
        raise ValueError(f"feature {key!r}: a {kind} holds {wants} values, not {spec.dtype}")
    if len(outer) > 1 or isinstance(spec, FixedLenSequence):
        raise ValueError(f"feature {key!r}: a {kind} is one value or a list, not shape {outer}")
    if isinstance(feature, ClassLabel):
        leaf = _entry(
            "class_label_feature.ClassLabel", "classLabel", {"numClasses": str(feature.num_classes)}
        )
    elif isinstance(feature, Text):
        leaf = _entry("text_feature.Text", "text", {})
    else:
        image = {"shape": _shape_json(feature.shape), "dtype": feature.dtype}
        if feature.encoding_format is not None:
            image["encodingFormat"] = feature.encoding_format
        leaf = _entry("image_feature.Image", "image", image)
    if not outer:
        return leaf
    length = str(-1 if outer[0] is None else outer[0])
    return _entry("sequence_feature.Sequence", "sequence", {"feature": leaf, "length": length})


def _entry(cls: str, kind: str, content: Any) -> dict[str, Any]:
    """A feature of features.json: its class, and its content under the proto field ``kind``."""
    return {"pythonClassName": _CLASSES + cls, kind: content}


def _tensor_json(shape: tuple[int | None, ...], dtype: str) -> dict[str, Any]:
    tensor = {"shape": _shape_json(shape), "dtype": dtype, "encoding": "none"}
    return _entry("tensor_feature.Tensor", "tensor", tensor)


def _shape_json(shape: Sequence[int | None]) -> dict[str, Any]:
    return {"dimensions": [str(-1 if d is None else d) for d in shape]} if shape else {}


class _Node(dict):
    """A nested FeaturesDict while the tree is built."""


def _dict_json(tree: Mapping[str, Any]) -> dict[str, Any]:
    features = {k: _dict_json(v) if isinstance(v, _Node) else v for k, v in sorted(tree.items())}
    return _entry("features_dict.FeaturesDict", "featuresDict", {"features": features})


def _insert(tree: dict[str, Any], key: str, leaf: dict[str, Any]) -> None:
    """Puts feature ``a/b/c`` at ``tree[a][b][c]``: TFDS names nested features so."""
    parts = key.split("/")
    if not all(parts):
        raise ValueError(f"feature {key!r}: an empty name between slashes")
    node = tree
    for i, part in enumerate(parts[:-1]):
        child = node.setdefault(part, _Node())
        if not isinstance(child, _Node):
            raise ValueError(f"feature {key!r}: {'/'.join(parts[: i + 1])!r} is a feature itself")
        node = child
    if parts[-1] in node:
        raise ValueError(f"feature {key!r}: it is also the name of a dict of features")
    node[parts[-1]] = leaf


def _checked_names(key: str, label: ClassLabel) -> tuple[str, ...]:
    names = tuple(label.names or ())
    for n in names:
        if not n or n != n.strip() or "\n" in n:
            raise ValueError(
                f"feature {key!r}: class name {n!r} would not survive TFDS's labels file "
                "(one name a line, without surrounding spaces)"
            )
    if len(set(names)) != len(names):
        raise ValueError(f"feature {key!r}: class names repeat")
    return names


def _labels_file(key: str) -> str:
    # As TFDS names it: the names of nested features joined by "-".
    return key.replace("/", "-") + ".labels.txt"


def _info_json(
    name: str,
    version: str,
    splits: list[_Split],
    description: str,
    homepage: str,
    citation: str,
    supervised_keys: tuple[str, ...] | None,
) -> dict[str, Any]:
    info: dict[str, Any] = {"name": name, "version": version, "fileFormat": "tfrecord"}
    info |= {k: v for k, v in (("description", description), ("citation", citation)) if v}
    if homepage:
        info["location"] = {"urls": [homepage]}
    if supervised_keys:
        info["supervisedKeys"] = {"tuple": {"items": [{"featureKey": k} for k in supervised_keys]}}
    info["splits"] = [
        {
            "name": s.name,
            "filepathTemplate": ("{SPLIT}" if s.prefix == s.name else s.prefix)
            + "-{SHARD_X_OF_Y}.{FILEFORMAT}",
            "numBytes": str(sum(sh.bytes for sh in s.shards)),
            "shardLengths": [str(sh.records) for sh in s.shards],
        }
        for s in splits
    ]
    return info


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True) + "\n"


@dataclass
class Info:
    """A TFDS dataset directory as tfrecordkit reads it (see :func:`info`)."""

    directory: str
    name: str
    version: str
    #: The Examples' features, one per TFDS tensor; nested ones named ``"a/b"``.
    schema: Schema
    #: The TFDS feature behind each schema entry: ``"ClassLabel"``, ``"Image"``, ``"Text"``...
    features: dict[str, str]
    #: Records per shard, per split.
    shard_lengths: dict[str, list[int]]
    #: Class names of the ``ClassLabel`` features that have them.
    labels: dict[str, list[str]] = field(default_factory=dict)
    supervised_keys: tuple[Any, ...] | None = None
    templates: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def splits(self) -> dict[str, int]:
        """Examples per split."""
        return {k: sum(v) for k, v in self.shard_lengths.items()}

    def files(self, split: str) -> list[str]:
        """The shard files of ``split``, in order."""
        if split not in self.shard_lengths:
            raise ValueError(
                f"{self.directory} has no split {split!r}; its splits are "
                f"{list(self.shard_lengths)}"
            )
        n = len(self.shard_lengths[split])
        template = self.templates.get(split) or DEFAULT_TEMPLATE
        names = {"DATASET": self.name, "SPLIT": split}
        return [_join(self.directory, _shard_file(template, names, i, n)) for i in range(n)]


def info(directory: str | os.PathLike[str], *, storage_options: StorageOptions = None) -> Info:
    """Reads a TFDS-prepared directory (the one holding ``dataset_info.json``, such as
    ``~/tensorflow_datasets/mnist/3.0.0``, or a URL): its schema, splits, shard files and
    class names. Features with a plain Example form map to specs: ``Tensor``, ``Scalar``,
    ``ClassLabel``, ``Text``, ``Image`` (its encoded bytes) and ``BBoxFeature``, in
    ``Sequence`` s (nested ones as a ``RaggedFeature``) and dicts; others (encoded tensors,
    video, audio) raise a ``ValueError`` naming the feature.

    >>> tfr.tfds.info("~/tensorflow_datasets/mnist/3.0.0").splits  # doctest: +SKIP
    {'test': 10000, 'train': 60000}
    """
    directory = os.path.expanduser(os.fspath(directory)).rstrip("/") or "/"
    options = storage_options
    info_path = _join(directory, INFO_FILE)
    try:
        meta = json.loads(read_bytes(info_path, options))
    except FileNotFoundError:
        raise FileNotFoundError(2, "no dataset_info.json: not a TFDS dataset", info_path) from None
    except ValueError as err:
        raise ValueError(f"{info_path}: not JSON ({err})") from None
    file_format = meta.get("fileFormat") or "tfrecord"
    if file_format != "tfrecord":
        raise ValueError(f"{info_path}: the dataset is stored as {file_format}, not tfrecord")
    features = meta.get("features")
    if not features:
        path = _join(directory, FEATURES_FILE)
        try:
            features = json.loads(read_bytes(path, options))
        except FileNotFoundError:
            raise FileNotFoundError(2, "no features.json", path) from None
    specs: dict[str, Spec] = {}
    kinds: dict[str, str] = {}
    _read_feature(features, "", (), specs, kinds)
    labels: dict[str, list[str]] = {}
    for key in (k for k, kind in kinds.items() if kind == "ClassLabel"):
        try:
            text = read_bytes(_join(directory, _labels_file(key)), options).decode("utf-8")
        except FileNotFoundError:
            continue
        labels[key] = [n.strip() for n in text.split("\n") if n.strip()]
    splits = meta.get("splits", [])
    lengths = {s["name"]: [int(n) for n in s.get("shardLengths", [])] for s in splits}
    templates = {s["name"]: s.get("filepathTemplate") or DEFAULT_TEMPLATE for s in splits}
    keys = meta.get("supervisedKeys") or {}
    items = keys.get("tuple", {}).get("items", [])
    supervised = (keys["input"], keys["output"]) if keys.get("input") else None
    supervised = supervised or tuple(i.get("featureKey") for i in items) or None
    name, version = meta.get("name", ""), meta.get("version", "")
    parsed = Schema(specs)
    return Info(directory, name, version, parsed, kinds, lengths, labels, supervised, templates)


def schema(directory: str | os.PathLike[str], *, storage_options: StorageOptions = None) -> Schema:
    """The :class:`tfrecordkit.Schema` of a TFDS-prepared directory's Examples (see
    :func:`info`).

    >>> tfr.tfds.schema("~/tensorflow_datasets/mnist/3.0.0")  # doctest: +SKIP
    Schema({'image': FixedLen(shape=(), dtype='bytes', default=None), 'label': ...})
    """
    return info(directory, storage_options=storage_options).schema


def _wire_dtype(key: str, dtype: str) -> str:
    """The Example type of a TFDS dtype: int64, float32 or bytes, as TFDS stores them."""
    if dtype in ("string", "str", "object", "bytes"):
        return "bytes"
    if dtype == "bool" or re.fullmatch(r"u?int(8|16|32|64)", dtype):
        return "int64"
    if re.fullmatch(r"b?float(16|32|64)", dtype):
        return "float32"
    raise ValueError(f"feature {key!r}: dtype {dtype!r} has no Example representation")


def _read_feature(
    feature: Mapping[str, Any],
    key: str,
    outer: tuple[int | None, ...],
    specs: dict[str, Spec],
    kinds: dict[str, str],
) -> None:
    """Adds the specs of one TFDS feature inside ``len(outer)`` sequences of ``outer``
    lengths (None where they vary)."""
    cls = str(feature.get("pythonClassName", "")).rsplit(".", 1)[-1] or "feature"
    name = key or "the features"
    if "featuresDict" in feature:
        for child, sub in sorted(feature["featuresDict"].get("features", {}).items()):
            _read_feature(sub, f"{key}/{child}" if key else child, outer, specs, kinds)
        return
    if "sequence" in feature:
        length = int(feature["sequence"].get("length", -1))
        inner = feature["sequence"]["feature"]
        _read_feature(inner, key, (*outer, None if length < 0 else length), specs, kinds)
        return
    default: Any = None
    shape: tuple[int | None, ...] = ()
    if "tensor" in feature or "boundingBox" in feature:
        content = feature.get("tensor") or feature.get("boundingBox") or {}
        encoding = content.get("encoding") or "none"
        if encoding != "none":
            raise ValueError(
                f"feature {name!r}: a {cls} stored {encoding}-encoded has no plain Example "
                "form tfrecordkit parses"
            )
        dims = (content.get("shape") or {}).get("dimensions", [])
        shape = tuple(None if int(d) < 0 else int(d) for d in dims)
        dtype = str(content.get("dtype", ""))
        wire = _wire_dtype(name, dtype)
        if content.get("optional"):
            default = _missing_value(dtype)
    elif "classLabel" in feature:
        wire = "int64"
    elif "text" in feature and not feature["text"]:
        wire = "bytes"
    elif "image" in feature:
        wire = "bytes"
    else:
        raise ValueError(
            f"feature {name!r}: {cls} has no plain Example form tfrecordkit maps "
            "(Tensor, ClassLabel, Text, Image, Sequence and dicts of them do)"
        )
    specs[key] = _spec(name, (*outer, *shape), wire, len(outer), default)
    kinds[key] = cls


def _missing_value(dtype: str) -> Any:
    """What TFDS parses for a missing optional tensor."""
    if dtype in ("string", "str", "object", "bytes"):
        return b""
    if dtype == "bool":
        return 0
    if "int" in dtype:
        return int(np.iinfo(np.dtype(dtype)).min)
    return float(np.finfo(np.dtype("float32" if "bfloat" in dtype else dtype)).min)


def _spec(key: str, shape: tuple[int | None, ...], dtype: str, rank: int, default: Any) -> Spec:
    """The spec TFDS's own parser uses for a tensor of ``shape`` inside ``rank`` sequences."""
    unknown = shape.count(None)
    if unknown == 0:
        return FixedLen(shape, dtype, default)
    if unknown == 1 and shape[0] is None:
        if len(shape) == 1 and default is None:
            return VarLen(dtype)
        return FixedLenSequence(shape[1:], dtype, allow_missing=True, default=default)
    if rank > 1 and None not in shape[rank:]:
        # Nested sequences: TFDS stores the flat values and each level's row lengths.
        parts: list[Any] = [RowLengths(f"{key}/ragged_row_lengths_{i}") for i in range(rank - 1)]
        parts += [UniformRowLength(int(d)) for d in shape[rank:] if d is not None]
        return RaggedFeature(dtype, f"{key}/ragged_flat_values", parts)
    shown = tuple(-1 if d is None else d for d in shape)
    raise ValueError(f"feature {key!r}: TFDS itself parses no Example feature of shape {shown}")


def _shard_file(template: str, names: Mapping[str, str], index: int, count: int) -> str:
    """A shard's file name from a TFDS template (naming.py: five digits or more)."""
    width = max(5, len(str(count)))
    values = {"FILEFORMAT": "tfrecord", **names}
    values["SHARD_INDEX"] = f"{index:0{width}d}"
    values["NUM_SHARDS"] = f"{count:0{width}d}"
    values["SHARD_X_OF_Y"] = f"{values['SHARD_INDEX']}-of-{values['NUM_SHARDS']}"
    try:
        return template.format(**values)
    except (KeyError, IndexError, ValueError):
        raise ValueError(f"cannot read the shard file template {template!r}") from None


def _join(directory: str, name: str) -> str:
    return f"{directory.rstrip('/')}/{name}" if is_url(directory) else os.path.join(directory, name)


def _dirname(path: str) -> str:
    return path.rsplit("/", 1)[0] if is_url(path) else os.path.dirname(path)


def _basename(path: str) -> str:
    return path.rsplit("/", 1)[-1] if is_url(path) else os.path.basename(path)


def _norm(directory: str) -> str:
    if is_url(directory):
        protocol, path = directory.split("://", 1)
        return f"{protocol}://{path.strip('/')}"
    return os.path.abspath(directory or ".")


def _dataset_name(directory: str) -> str:
    base = re.sub(r"\W+", "_", _basename(directory.rstrip("/"))).strip("_")
    return base if _NAME.fullmatch(base) else "dataset"
