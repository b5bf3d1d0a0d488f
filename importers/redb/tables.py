"""The table tree (name -> definition) and the tables it points to, normal and multimap.

Facts from redb ``src/tree_store/table_tree.rs`` (format 1) and ``table_tree_base.rs``
(formats 2 and 3).  The table tree is a B-tree keyed by the table name (``&str``) whose values
are serialized definitions::

    format 1: u8 kind (1 normal, 2 multimap), u8 root non-null, u64 root page,
              u128 root checksum
    format 2+: u8 kind (3 normal, 4 multimap), u64 table length, u8 root non-null,
              BtreeHeader (u64 page, u128 checksum, u64 length)
    then:     u8 fixed key non-null, u32 key width, u8 fixed value non-null, u32 value width,
              u32 key alignment, u32 value alignment, u32 key type-name length,
              key type name, value type name (a type name is a classification byte + UTF-8)

A multimap table is a B-tree from key to a "dynamic collection" (``multimap_table.rs``): byte 1
then an inline leaf whose keys are the values (and whose values are ``()``), or byte 3 (format
2+; byte 2 in format 1) then the header of a sub-tree keyed by the values.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

from importers.redb.btree import Budget, PageReader, Pair, Tree, iter_leaf
from importers.redb.header import BtreeRoot, parse_btree_header

NORMAL_KINDS = {1: "table", 2: "multimap"}  # format 1
KINDS = {3: "table", 4: "multimap"}  # formats 2 and 3
INLINE = 1
SUBTREE_V1 = 2
SUBTREE_V2 = 3


@dataclass(frozen=True)
class TableInfo:
    """One table as defined in the table tree.

    ``root_page`` is the stored u64 page number of the table's root (None for an empty
    table); ``length`` is what redb's ``len()`` returns (pairs, for multimap tables).
    """

    name: str
    kind: str
    key_type: str
    value_type: str
    key_width: int | None
    value_width: int | None
    root_page: int | None
    length: int
    root_checksum: int | None = None
    key_type_class: int = 1
    value_type_class: int = 1
    key_alignment: int = 1
    value_alignment: int = 1
    stored_length: int | None = None
    root_length: int | None = None


class DefinitionError(ValueError):
    """A table definition that cannot be parsed; the caller adds file/page context."""


def _type_name(data: bytes, what: str) -> tuple[int, str]:
    if not data:
        raise DefinitionError(f"empty {what} type name")
    if data[0] not in (1, 2, 3, 4):
        raise DefinitionError(f"unknown {what} type-name classification {data[0]}")
    try:
        return data[0], data[1:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DefinitionError(f"{what} type name is not UTF-8") from exc


def parse_definition(name: str, data: bytes, fmt: int) -> TableInfo:
    """Decode one stored table definition (raises :class:`DefinitionError`)."""
    try:
        kind_byte = data[0]
        if fmt == 1:
            kind = NORMAL_KINDS.get(kind_byte)
            at = 1
            stored_length = None
            root: BtreeRoot | None = None
            if data[at]:
                (page,) = struct.unpack_from("<Q", data, at + 1)
                root = BtreeRoot(page, int.from_bytes(data[at + 9 : at + 25], "little"), None)
            at += 25
        else:
            kind = KINDS.get(kind_byte)
            (stored_length,) = struct.unpack_from("<Q", data, 1)
            at = 9
            if len(data) < at + 33:
                raise DefinitionError("table definition is truncated")
            root = parse_btree_header(data, at + 1) if data[at] else None
            at += 33
        if kind is None:
            raise DefinitionError(f"unknown table kind byte {kind_byte}")
        key_nn, key_w, val_nn, val_w, key_align, val_align, key_len = struct.unpack_from(
            "<BIBIIII", data, at
        )
        at += 22
        if at + key_len > len(data):
            raise DefinitionError("key type name runs past the definition")
        key_class, key_type = _type_name(data[at : at + key_len], "key")
        value_class, value_type = _type_name(data[at + key_len :], "value")
    except (IndexError, struct.error) as exc:
        raise DefinitionError("table definition is truncated") from exc
    if kind == "table":
        length = root.length if root is not None and root.length is not None else 0
    else:
        length = stored_length or 0
    return TableInfo(
        name=name,
        kind=kind,
        key_type=key_type,
        value_type=value_type,
        key_width=key_w if key_nn else None,
        value_width=val_w if val_nn else None,
        root_page=root.page if root is not None else None,
        length=length,
        root_checksum=root.checksum if root is not None else None,
        key_type_class=key_class,
        value_type_class=value_class,
        key_alignment=key_align,
        value_alignment=val_align,
        stored_length=stored_length,
        root_length=root.length if root is not None else None,
    )


def multimap_batches(reader: PageReader, info: TableInfo, fmt: int) -> Iterator[list[Pair]]:
    """Every (key, value) pair of a multimap table, by key, then by value, in batches."""
    if info.root_page is None or info.root_checksum is None:
        return
    budget = Budget(reader.layout.data_pages + 1)  # shared by the outer tree and sub-trees
    outer = Tree(
        reader, info.root_page, info.root_checksum, info.key_width, None, info.name, budget
    )
    vw = info.value_width
    for key, collection in outer:
        if not collection:
            raise reader.corrupt("empty multimap value collection", table=info.name)
        tag = collection[0]
        if tag == INLINE:
            pairs = iter_leaf(collection, 1, len(collection) - 1, vw, 0)
            if isinstance(pairs, str):
                raise reader.corrupt(f"inline multimap values: {pairs}", table=info.name)
            if pairs:
                yield [(key, value) for value, _ in pairs]
        elif (tag == SUBTREE_V2 and fmt >= 2) or (tag == SUBTREE_V1 and fmt == 1):
            if fmt == 1:
                if len(collection) < 25:
                    raise reader.corrupt("truncated multimap sub-tree header", table=info.name)
                (page,) = struct.unpack_from("<Q", collection, 1)
                sub = BtreeRoot(page, int.from_bytes(collection[9:25], "little"), None)
            else:
                if len(collection) < 33:
                    raise reader.corrupt("truncated multimap sub-tree header", table=info.name)
                sub = parse_btree_header(collection, 1)
            count = 0
            for batch in Tree(reader, sub.page, sub.checksum, vw, 0, info.name, budget).batches():
                count += len(batch)
                yield [(key, value) for value, _ in batch]
            if sub.length is not None and count != sub.length:
                raise reader.corrupt(
                    f"multimap sub-tree holds {count} values, its header says {sub.length}",
                    table=info.name,
                    page=sub.page,
                )
        else:
            raise reader.corrupt(f"unknown multimap collection type {tag}", table=info.name)


def orders_bytewise(type_name: str) -> bool:
    """Whether redb orders keys of this built-in type as plain bytes (so seeking by bytes is
    exact): ``&[u8]``, ``[u8;N]``, ``&str`` and ``String``."""
    if type_name in ("&[u8]", "&str", "String"):
        return True
    return type_name.startswith("[u8;") and type_name.endswith("]")
