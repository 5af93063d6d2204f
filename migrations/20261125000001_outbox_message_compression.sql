-- The outbox's messages are compressed with lz4 where the server has it.
--
-- A row over PostgreSQL's TOAST threshold (about 2 kB: a cluster's notification with its
-- labels and addresses) has its largest value compressed on every insert and every UPDATE of
-- the row. pglz, the default, keeps the compressed form only when it saves a quarter, which
-- these JSON messages often do not: the message then stays inline, uncompressed, and each of
-- the relay's two updates of an event (its claim, then "sent") compresses it again, in vain.
-- That was a sixth of PostgreSQL's CPU while the relay drained a backlog. lz4 keeps any
-- saving, so the message is compressed once, at the insert; the updates copy it as it is.
-- Existing rows keep their form; messages written from now on use lz4.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_settings
               WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        ALTER TABLE outbox ALTER COLUMN message SET COMPRESSION lz4;
    END IF;
END
$$;
