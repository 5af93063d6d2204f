-- PostgreSQL's migration of the same version sets the outbox message's TOAST compression;
-- SQLite stores values as they are. This keeps both schemas at the same version.
SELECT 1;
