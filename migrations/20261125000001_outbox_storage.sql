-- How the outbox stores its rows, for the relay's two updates of every event: its claim
-- (claimed_by, claim_expires_at) and then "sent" (sent_at).
--
-- Messages are compressed with lz4 where the server has it. A row over PostgreSQL's TOAST
-- threshold (about 2 kB: a cluster's notification with its labels and addresses) has its
-- largest value compressed on insert and on every UPDATE of the row. pglz, the default, keeps
-- the compressed form only when it saves a quarter, which these JSON messages often do not:
-- the message then stays uncompressed and each update compresses it again, in vain. That was
-- a sixth of PostgreSQL's CPU while the relay drained a backlog. lz4 keeps any saving, so the
-- message is compressed once, at the insert, and the updates copy it as it is. Existing rows
-- keep their form.
--
-- Half of each page is left free (fillfactor 50), so that the claim, which changes no indexed
-- column, is a heap-only update on the row's own page rather than a new row version elsewhere
-- with an entry in each of the three indexes. The outbox takes twice the space for the same
-- events; sent events leave it after [oslo_messaging_notifications] retention_days.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_settings
               WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
        ALTER TABLE outbox ALTER COLUMN message SET COMPRESSION lz4;
    END IF;
END
$$;
ALTER TABLE outbox SET (fillfactor = 50);
