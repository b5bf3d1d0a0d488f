-- The BBG store, schema version 2 (PRAGMA user_version = 2; version 1 lacked the ledger).
--
-- Applied once, inside the creating transaction, by migrate.store.layout.create_store.
-- PRAGMA application_id and user_version are set by that code, not here, so that this
-- script is only DDL.
--
-- The five application tables mirror cell.redb's `&[u8] -> &[u8]` tables byte for byte
-- (keys of at most 64 bytes).  SQLite compares BLOB keys with memcmp and then by length,
-- which is the order redb uses for &[u8] keys, so `ORDER BY key` is the key order of the
-- archive digest.
-- WITHOUT ROWID stores each row in its primary-key B-tree: one lookup, no rowid index.

CREATE TABLE application_content (         -- content id[32] -> codec byte || payload
    key   BLOB PRIMARY KEY NOT NULL,
    value BLOB NOT NULL
) WITHOUT ROWID;

CREATE TABLE application_heads (           -- namespace[32] -> index u64 LE || commit[32]
    key   BLOB PRIMARY KEY NOT NULL,
    value BLOB NOT NULL
) WITHOUT ROWID;

CREATE TABLE application_history (         -- namespace[32] || index u64 BE -> commit[32]
    key   BLOB PRIMARY KEY NOT NULL,
    value BLOB NOT NULL
) WITHOUT ROWID;

CREATE TABLE application_requests (        -- namespace[32] || request[32] -> fingerprint[32] || head(40)
    key   BLOB PRIMARY KEY NOT NULL,
    value BLOB NOT NULL
) WITHOUT ROWID;

CREATE TABLE application_unique_claims (   -- claim key[32] -> claim value[32]
    key   BLOB PRIMARY KEY NOT NULL,
    value BLOB NOT NULL
) WITHOUT ROWID;

-- Storage identity: exactly one row.  last_transaction counts committed write transactions.
-- bbg_last_transaction: bbg's change id of the last transaction that changed bbg's tables
-- (migrate/store/bbg_changes.py): 32 bytes; empty = none yet; NULL = unknown (a restored
-- store).  Stores made before it lack the column (unknown); their next such write adds it.
CREATE TABLE bbg_storage_v1 (
    id               INTEGER PRIMARY KEY CHECK (id = 1),
    store_id         TEXT NOT NULL,
    hash_suite       TEXT NOT NULL,
    last_transaction INTEGER NOT NULL,
    bbg_last_transaction BLOB
);

-- The status marker: no row = marker absent (original generation).
-- status is what readers check; generation is the highest reader generation ever promoted
-- to (monotonic), kept apart so a transitional status such as 'copying' can be cleared back.
CREATE TABLE bbg_import_v1 (
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    status         TEXT NOT NULL,
    generation     TEXT NOT NULL,
    transaction_no INTEGER NOT NULL          -- the write transaction that set it
);

-- One row per import (a migration into this store), keyed by the pipeline's import id.
-- state: 'staging' (rows may be staged), 'active' (published), 'discarded'.
CREATE TABLE bbg_import_v1_imports (
    import_id TEXT PRIMARY KEY NOT NULL,
    state     TEXT NOT NULL CHECK (state IN ('staging', 'active', 'discarded')),
    created_transaction INTEGER NOT NULL
) WITHOUT ROWID;

-- Seal records: the source fingerprint taken before copying (canonical JSON text).
CREATE TABLE bbg_import_v1_seals (
    import_id TEXT PRIMARY KEY NOT NULL REFERENCES bbg_import_v1_imports (import_id),
    seal      TEXT NOT NULL
) WITHOUT ROWID;

-- Resumable copy cursors, one per (import, stream), committed with each staged page.
CREATE TABLE bbg_import_v1_cursors (
    import_id TEXT NOT NULL REFERENCES bbg_import_v1_imports (import_id),
    stream    TEXT NOT NULL,
    cursor    BLOB NOT NULL,
    rows      INTEGER NOT NULL,
    PRIMARY KEY (import_id, stream)
) WITHOUT ROWID;

-- Inert staging: rows destined for the five tables (tbl = archive ordinal 0..4:
-- content, claims, requests, history, heads), invisible to readers of those tables.
CREATE TABLE bbg_import_v1_staged (
    import_id TEXT NOT NULL,
    tbl       INTEGER NOT NULL CHECK (tbl BETWEEN 0 AND 4),
    key       BLOB NOT NULL,
    value     BLOB NOT NULL,
    PRIMARY KEY (import_id, tbl, key)
) WITHOUT ROWID;

-- Namespaces being imported: GraphPort writes to them are refused until activation.
CREATE TABLE bbg_import_v1_staged_namespaces (
    namespace BLOB PRIMARY KEY NOT NULL,
    import_id TEXT NOT NULL
) WITHOUT ROWID;

-- Fences: a fenced namespace refuses every new write, forever.
CREATE TABLE bbg_import_v1_fences (
    namespace BLOB PRIMARY KEY NOT NULL,
    import_id TEXT NOT NULL,
    reason    TEXT NOT NULL,
    transaction_no INTEGER NOT NULL
) WITHOUT ROWID;

-- Receipts of activated imports (canonical JSON text); an exact rerun reads it back.
CREATE TABLE bbg_import_v1_receipts (
    import_id TEXT PRIMARY KEY NOT NULL REFERENCES bbg_import_v1_imports (import_id),
    receipt   TEXT NOT NULL
) WITHOUT ROWID;

-- The pipeline's journal: one row per completed stage of an import, written in the same
-- transaction as the stage's effect (so a rerun knows what is done).
CREATE TABLE bbg_import_v1_journal (
    import_id TEXT NOT NULL REFERENCES bbg_import_v1_imports (import_id),
    stage     TEXT NOT NULL,
    detail    TEXT NOT NULL,
    transaction_no INTEGER NOT NULL,
    PRIMARY KEY (import_id, stage)
) WITHOUT ROWID;

-- Run nonces: a nonce names exactly one import; the same nonce with other inputs is a Conflict.
CREATE TABLE bbg_import_v1_nonces (
    nonce     TEXT PRIMARY KEY NOT NULL,
    import_id TEXT NOT NULL
) WITHOUT ROWID;

-- The export seal of a store sealed as the source of a transfer (status 'export-v1';
-- migrate/transfer): bbg's 128-byte seal (target || nonce || prior || manifest) as four
-- columns, and the facts an operator needs (canonical JSON: the target store, the pinned
-- heads).  Written once, in the transaction that sets 'export-v1'.  Optional: stores
-- created before transfers existed lack it, and the sealing transaction creates it.
CREATE TABLE IF NOT EXISTS bbg_import_v1_export (
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    target         BLOB NOT NULL,
    nonce          BLOB NOT NULL,
    prior          BLOB NOT NULL,
    manifest       BLOB NOT NULL,
    detail         TEXT NOT NULL,
    transaction_no INTEGER NOT NULL
);

-- ---------------------------------------------------------------------------------------------
-- Schema version 2: the transaction ledger and retention records (`bbg-migrate upgrade` adds
-- them to a version-1 store, once).  IF NOT EXISTS: the upgrade runs exactly these statements.

-- The ledger: one row per ledger transaction, appended inside the SQLite transaction that
-- made the change (migrate.store.ledger).  tx is the store's only global order: it equals
-- bbg_storage_v1.last_transaction after the change and never renumbers.  at: local wall time,
-- UTC microseconds, strictly increasing.  kind: what the transaction did (create, upgrade,
-- commit, commit_once, stage, activate, transfer-seal, apply, fence, promote, nohistory,
-- excise, write).  ref: the import or request it belongs to.  origin_tx/origin_at: for a
-- transaction written by `apply`, the source transaction it reproduces (imported_at).
-- detail: canonical JSON {"events": [...]}: the fence, generation, import and retention
-- events of the transaction, in the order they happened.
CREATE TABLE IF NOT EXISTS bbg_ledger_v1 (
    tx        INTEGER PRIMARY KEY,
    at        INTEGER NOT NULL,
    kind      TEXT NOT NULL,
    ref       TEXT,
    origin_tx INTEGER,
    origin_at INTEGER,
    detail    TEXT NOT NULL
);

-- Heads a ledger transaction moved: before (NULL: the namespace had no head) and after
-- (40-byte head values); request: the request of the last commit when it was one commit.
CREATE TABLE IF NOT EXISTS bbg_ledger_v1_heads (
    tx        INTEGER NOT NULL,
    namespace BLOB NOT NULL,
    before    BLOB,
    after     BLOB NOT NULL,
    request   BLOB,
    PRIMARY KEY (tx, namespace)
) WITHOUT ROWID;

-- Content and claim rows a ledger transaction added that are not the commit of a history
-- entry it added (tbl: archive ordinal, 0 content, 1 claims).
CREATE TABLE IF NOT EXISTS bbg_ledger_v1_rows (
    tx  INTEGER NOT NULL,
    tbl INTEGER NOT NULL CHECK (tbl IN (0, 1)),
    key BLOB NOT NULL,
    PRIMARY KEY (tx, tbl, key)
) WITHOUT ROWID;

-- Retained history boundaries (`nohistory`): history below first_index was dropped; prev is
-- the 40-byte head just below it (what the first retained entry retracts).
CREATE TABLE IF NOT EXISTS bbg_retention_v1_boundaries (
    namespace   BLOB PRIMARY KEY NOT NULL,
    first_index INTEGER NOT NULL,
    prev        BLOB NOT NULL,
    tx          INTEGER NOT NULL
) WITHOUT ROWID;

-- Excised ids (`excise`): content ids and namespaces removed for good, with the ledger
-- transaction that removed them (the ids, never the bytes).
CREATE TABLE IF NOT EXISTS bbg_retention_v1_excised (
    what TEXT NOT NULL CHECK (what IN ('content', 'namespace')),
    id   BLOB NOT NULL,
    tx   INTEGER NOT NULL,
    PRIMARY KEY (what, id)
) WITHOUT ROWID;
