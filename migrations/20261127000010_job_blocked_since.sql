-- When a transient driver refusal first stopped a pending job: the start of the "blocked"
-- wait its resource's status_reason tells, and of [conductor] operation_timeout for
-- operations without a deadline of their own. NULL until a refusal.
ALTER TABLE job ADD COLUMN blocked_since TIMESTAMPTZ;
