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

from ..datasets.index import count
from ..datasets.manifest import SHARD_GLOB, SHARD_RE, Manifest, ShardInfo, shard_name
from ..errors import SidecarError, TFRecordError
from ..io.paths import (
    StorageOptions,
    as_url,
    basename,
    contained,
    dirname,
    exists,
    file_size,
    filesystem,
    is_url,
    join,
    quote,
    remove,
    write_file,
)
from ..io.sidecars import read_sidecar
from ..schema.features import FixedLen, FixedLenSequence, Schema, Spec, VarLen
from ..schema.reading import infer_schema
from .tfds_features import read_feature

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
    targets = {join(directory, f): text for f, text in outputs.items()}
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
        where = dirname(path)
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
    files = [f for f in _glob(path, SHARD_GLOB, options) if SHARD_RE.match(basename(f))]
    if not files:
        raise FileNotFoundError(2, f"split {split!r}: no manifest and no shards", path)
    if any(not f.endswith(".tfrecord") for f in files):
        raise ValueError(f"split {split!r}: TFDS reads uncompressed TFRecord shards only")
    names = [basename(f) for f in files]
    if names != [basename(shard_name(path, i, len(files))) for i in range(len(files))]:
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
            files = [join(dirname(s.path), sh.file) for sh in s.shards]
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
    #: The channels of the ``Image`` features whose shape gives them (1 for MNIST).
    image_channels: dict[str, int] = field(default_factory=dict)
    supervised_keys: tuple[Any, ...] | None = None
    templates: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def splits(self) -> dict[str, int]:
        """Examples per split."""
        return {k: sum(v) for k, v in self.shard_lengths.items()}

    def counts(self, split: str) -> dict[str, int]:
        """The record count of each shard file of ``split``, by path."""
        return dict(zip(self.files(split), self.shard_lengths[split], strict=True))

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
        where = join(self.directory, INFO_FILE)
        try:
            files = [_shard_file(template, names, i, n) for i in range(n)]
        except ValueError as err:
            raise SidecarError(f"split {quote(split)}: {err}", path=where) from None
        entry = f"the shard file template of split {quote(split)}"
        return [contained(self.directory, f, sidecar=where, entry=entry) for f in files]


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
    info_path = join(directory, INFO_FILE)
    meta = _load_json(info_path, options, "no dataset_info.json: not a TFDS dataset")
    where = info_path
    try:
        if not isinstance(meta, Mapping):
            raise ValueError("not a JSON object")
        file_format = meta.get("fileFormat") or "tfrecord"
        if file_format != "tfrecord":
            raise ValueError(f"the dataset is stored as {quote(str(file_format))}, not tfrecord")
        features = meta.get("features")
        if not features:
            where = join(directory, FEATURES_FILE)
            features = _load_json(where, options, "no features.json")
        specs: dict[str, Spec] = {}
        kinds: dict[str, str] = {}
        channels: dict[str, int] = {}
        read_feature(features, "", (), specs, kinds, channels)
        parsed = Schema(specs)
        where = info_path
        splits = meta.get("splits", [])
        lengths: dict[str, list[int]] = {}
        templates: dict[str, str] = {}
        for s in splits:
            split, template = s["name"], s.get("filepathTemplate") or DEFAULT_TEMPLATE
            if not isinstance(split, str) or not isinstance(template, str):
                raise ValueError("a split's name and filepathTemplate are strings")
            lengths[split] = [_count(n) for n in s.get("shardLengths", [])]
            templates[split] = template
        keys = meta.get("supervisedKeys") or {}
        items = keys.get("tuple", {}).get("items", [])
        supervised = (keys["input"], keys["output"]) if keys.get("input") else None
        supervised = supervised or tuple(i.get("featureKey") for i in items) or None
        name, version = meta.get("name", ""), meta.get("version", "")
        if not isinstance(name, str) or not isinstance(version, str):
            raise ValueError("name and version are strings")
    except TFRecordError:
        raise
    except (
        ValueError,
        KeyError,
        TypeError,
        AttributeError,
        IndexError,
        OverflowError,
        RecursionError,
    ) as err:
        why = str(err) if type(err) is ValueError else f"malformed ({type(err).__name__})"
        raise SidecarError(why, path=where) from None
    found = Info(
        directory, name, version, parsed, kinds, lengths, {}, channels, supervised, templates
    )
    # Every file the metadata names is checked before any is opened.
    for split in lengths:
        found.files(split)
    label_files = {
        key: contained(
            directory,
            _labels_file(key),
            sidecar=join(directory, FEATURES_FILE),
            entry=f"ClassLabel feature {quote(key)}",
        )
        for key, kind in kinds.items()
        if kind == "ClassLabel"
    }
    within = None if is_url(directory) else directory
    for key, path in label_files.items():
        try:
            text = read_sidecar(path, options, within=within).decode("utf-8", errors="replace")
        except FileNotFoundError:
            continue
        found.labels[key] = [n.strip() for n in text.split("\n") if n.strip()]
    return found


def _load_json(path: str, options: StorageOptions, missing: str) -> Any:
    """A TFDS metadata file's JSON; ``missing`` is the error when it is not there."""
    try:
        data = read_sidecar(path, options)
    except FileNotFoundError:
        raise FileNotFoundError(2, missing, path) from None
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as err:  # bad JSON, bad UTF-8, nesting too deep
        raise SidecarError(f"not JSON ({type(err).__name__})", path=path) from None


def _count(n: Any) -> int:
    """A count from TFDS metadata (JSON writes int64 as strings): a non-negative int."""
    if isinstance(n, bool) or not isinstance(n, (int, str)):
        raise ValueError(f"a shard length is a count, not {quote(str(n))}")
    value = int(n)
    if not 0 <= value < 2**63:
        raise ValueError(f"a shard length is a count, not {quote(str(n))}")
    return value


def schema(directory: str | os.PathLike[str], *, storage_options: StorageOptions = None) -> Schema:
    """The :class:`tfrecordkit.Schema` of a TFDS-prepared directory's Examples (see
    :func:`info`).

    >>> tfr.tfds.schema("~/tensorflow_datasets/mnist/3.0.0")  # doctest: +SKIP
    Schema({'image': FixedLen(shape=(), dtype='bytes', default=None), 'label': ...})
    """
    return info(directory, storage_options=storage_options).schema


#: The fields of a TFDS shard file template (naming.py), the only ones filled in.
_TEMPLATE_FIELD = re.compile(r"\{([A-Z_]*)\}")


def _shard_file(template: str, names: Mapping[str, str], index: int, count: int) -> str:
    """A shard's file name from a TFDS template (naming.py: five digits or more). Only the
    known fields are substituted (``{DATASET}``, ``{SPLIT}``, ``{FILEFORMAT}``,
    ``{SHARD_INDEX}``, ``{NUM_SHARDS}``, ``{SHARD_X_OF_Y}``); the template is data, so
    anything else in braces is refused, never evaluated."""
    width = max(5, len(str(count)))
    values = {"FILEFORMAT": "tfrecord", **names}
    values["SHARD_INDEX"] = f"{index:0{width}d}"
    values["NUM_SHARDS"] = f"{count:0{width}d}"
    values["SHARD_X_OF_Y"] = f"{values['SHARD_INDEX']}-of-{values['NUM_SHARDS']}"
    parts = _TEMPLATE_FIELD.split(template)
    # parts alternate: text, field, text, field, ..., text
    for i, part in enumerate(parts):
        if i % 2 and part not in values:
            raise ValueError(f"shard file template {quote(template)}: unknown field {{{part}}}")
        if not i % 2 and ("{" in part or "}" in part):
            raise ValueError(f"shard file template {quote(template)}: a stray brace")
    return "".join(values[p] if i % 2 else p for i, p in enumerate(parts))


def _norm(directory: str) -> str:
    if is_url(directory):
        protocol, path = directory.split("://", 1)
        return f"{protocol}://{path.strip('/')}"
    return os.path.abspath(directory or ".")


def _dataset_name(directory: str) -> str:
    base = re.sub(r"\W+", "_", basename(directory.rstrip("/"))).strip("_")
    return base if _NAME.fullmatch(base) else "dataset"
