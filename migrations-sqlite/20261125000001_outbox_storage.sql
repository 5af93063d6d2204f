-- PostgreSQL's migration of the same version sets how the outbox stores its rows (message
-- compression, fillfactor); SQLite has neither setting. This keeps both schemas at the same
-- version.
SELECT 1;
