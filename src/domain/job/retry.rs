//! The retry rule of every job, and what a user sees while a job waits.
//!
//! A driver refuses an attempt transiently (a quota, an unreachable infrastructure API, a
//! conflict) or permanently. A permanent refusal fails the operation at once with the driver's
//! reason. A transient one is retried with a growing, capped backoff ([`RetryPolicy::delay`])
//! until the operation's deadline: the job's own (`deadline_at`: a cluster's
//! `create_timeout`, a federation create's bound) or, for every other operation,
//! `[conductor] operation_timeout` after the first refusal. Meanwhile the resource stays
//! `*_IN_PROGRESS` and its `status_reason` is one [`Blocked`] sentence (what it waits on,
//! since when, which attempt, when it tries again, when it gives up), rewritten on every
//! attempt. Past the deadline (or `max_attempts`, when a job has one), the operation fails
//! with the last refusal's reason: [`gave_up`].

use chrono::{DateTime, Duration, SecondsFormat, Utc};

use super::{Job, Operation};
use crate::domain::cluster::{Cluster, NodeGroup};

/// How the conductor spaces and bounds the attempts of a job refused transiently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The wait after the first refusal; doubled after each next one.
    pub first_delay: Duration,
    /// The longest wait between two attempts.
    pub max_delay: Duration,
    /// How long an operation without a deadline of its own may stay refused, from its first
    /// refusal (`[conductor] operation_timeout`).
    pub operation_timeout: Duration,
}

impl Default for RetryPolicy {
    /// 1, 2, 4, ... seconds, capped at 60; an hour of refusals at most.
    fn default() -> Self {
        RetryPolicy {
            first_delay: Duration::seconds(1),
            max_delay: Duration::seconds(60),
            operation_timeout: Duration::hours(1),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `attempts + 1`: `first_delay` doubled `attempts - 1` times,
    /// capped at `max_delay`.
    pub fn delay(&self, attempts: i32) -> Duration {
        let doublings = attempts.clamp(1, 31) - 1;
        let mut wait = self.first_delay;
        for _ in 0..doublings {
            if wait >= self.max_delay {
                break;
            }
            wait = wait + wait;
        }
        wait.min(self.max_delay).max(Duration::zero())
    }
}

/// How an attempt of a job failed, as its retry rule sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure<'a> {
    /// Worth another attempt (backend unreachable, quota, conflict, timeout).
    Transient(&'a str),
    /// Another attempt cannot help.
    Permanent(&'a str),
}

/// What a failed attempt leads to: [`Job::next_step`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NextStep {
    /// The job runs again at `blocked.next_attempt`; the resource shows `blocked` meanwhile.
    Retry { blocked: Blocked },
    /// The job fails for good; the resource goes `*_FAILED` with `reason`.
    Fail { reason: String },
}

/// A job waiting on a transient refusal, as its resource's `status_reason` tells it:
/// `Blocked since <first refusal> (attempt <n>[ of <max>] refused; next attempt at <time>;
/// gives up at <deadline>): <the driver's message>`, times in RFC 3339 (UTC, seconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    /// The first refusal of the job.
    pub since: DateTime<Utc>,
    /// The attempt just refused.
    pub attempt: i32,
    /// The job's `max_attempts`, when it has one.
    pub max_attempts: Option<i32>,
    pub next_attempt: DateTime<Utc>,
    /// The deadline past which the operation fails.
    pub gives_up_at: DateTime<Utc>,
    /// What the driver said: what the job waits on.
    pub message: String,
}

const BLOCKED_PREFIX: &str = "Blocked since ";

fn time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

impl Blocked {
    /// The `status_reason` sentence.
    pub fn reason(&self) -> String {
        let of = self
            .max_attempts
            .map(|m| format!(" of {m}"))
            .unwrap_or_default();
        format!(
            "{BLOCKED_PREFIX}{} (attempt {}{of} refused; next attempt at {}; gives up at {}): {}",
            time(self.since),
            self.attempt,
            time(self.next_attempt),
            time(self.gives_up_at),
            self.message
        )
    }

    /// The sentence [`Blocked::reason`] wrote (times to the second), or `None` for any other
    /// reason.
    pub fn parse(reason: &str) -> Option<Blocked> {
        let rest = reason.strip_prefix(BLOCKED_PREFIX)?;
        let (since, rest) = rest.split_once(" (attempt ")?;
        let (attempts, rest) = rest.split_once(" refused; next attempt at ")?;
        let (next, rest) = rest.split_once("; gives up at ")?;
        let (gives_up, message) = rest.split_once("): ")?;
        let (attempt, max_attempts) = match attempts.split_once(" of ") {
            Some((a, m)) => (a.parse().ok()?, Some(m.parse().ok()?)),
            None => (attempts.parse().ok()?, None),
        };
        Some(Blocked {
            since: parse_time(since)?,
            attempt,
            max_attempts,
            next_attempt: parse_time(next)?,
            gives_up_at: parse_time(gives_up)?,
            message: message.to_string(),
        })
    }

    /// Whether a `status_reason` is a blocked sentence (cleared once the job moves on).
    pub fn is_blocked_reason(reason: Option<&str>) -> bool {
        reason.is_some_and(|r| Blocked::parse(r).is_some())
    }
}

/// Shows `reason` on the cluster and its node groups that are in progress.
pub fn block(c: &mut Cluster, ngs: &mut [NodeGroup], reason: &str) {
    if c.status.is_in_progress() {
        c.status_reason = Some(reason.to_string());
    }
    for ng in ngs.iter_mut().filter(|n| n.status.is_in_progress()) {
        ng.status_reason = Some(reason.to_string());
    }
}

/// Clears a blocked sentence from the cluster and its node groups (other reasons stay).
pub fn unblock(c: &mut Cluster, ngs: &mut [NodeGroup]) {
    if Blocked::is_blocked_reason(c.status_reason.as_deref()) {
        c.status_reason = None;
    }
    for ng in ngs.iter_mut() {
        if Blocked::is_blocked_reason(ng.status_reason.as_deref()) {
            ng.status_reason = None;
        }
    }
}

/// What bounded an operation that gave up.
fn bound_name(job: &Job) -> &'static str {
    match (job.deadline_at.is_some(), job.operation) {
        (true, Operation::ClusterCreate) => "the cluster's create_timeout",
        (true, Operation::ClusterDelete) => "[conductor] delete_timeout",
        (true, _) => "the operation's deadline",
        (false, _) => "[conductor] operation_timeout",
    }
}

/// `1 attempt`, `2 attempts`.
fn attempts(n: i32) -> String {
    if n == 1 {
        "1 attempt".into()
    } else {
        format!("{n} attempts")
    }
}

/// The reason of an operation that gave up on a refusal: `Gave up after <n> attempts,
/// refused since <first refusal>, once <bound> passed at <deadline>: <last reason>`.
pub fn gave_up(
    job: &Job,
    tried: i32,
    since: DateTime<Utc>,
    deadline: DateTime<Utc>,
    message: &str,
) -> String {
    format!(
        "Gave up after {}, refused since {}, once {} passed at {}: {message}",
        attempts(tried),
        time(since),
        bound_name(job),
        time(deadline)
    )
}

impl Job {
    /// When a refusal first stopped this job, or `now` for the first one.
    fn first_refusal(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        self.blocked_since.unwrap_or(now)
    }

    /// The deadline of the job's operation when refused since `since`: the job's own, else
    /// `operation_timeout` after the first refusal.
    pub fn deadline(&self, since: DateTime<Utc>, policy: &RetryPolicy) -> DateTime<Utc> {
        self.deadline_at.unwrap_or(since + policy.operation_timeout)
    }

    /// Whether the job's own deadline (the cluster's `create_timeout`) has passed at `now`.
    pub fn deadline_passed(&self, now: DateTime<Utc>) -> bool {
        self.deadline_at.is_some_and(|d| now > d)
    }

    /// The reason of a job whose own deadline passed while it waited on a refusal: the
    /// last refusal's, with what bounded it (`None` if it was never refused).
    pub fn gave_up_waiting(&self) -> Option<String> {
        let (since, deadline, last) = (
            self.blocked_since?,
            self.deadline_at?,
            self.last_error.as_deref()?,
        );
        Some(gave_up(
            self,
            (self.attempts - 1).max(1),
            since,
            deadline,
            last,
        ))
    }

    /// The one retry rule of every job: a transient failure is retried after
    /// [`RetryPolicy::delay`] (never later than the deadline) while the deadline has not
    /// passed and attempts remain (`max_attempts` 0: no limit); anything else fails the job,
    /// a transient failure with [`gave_up`]'s reason, a permanent one with its own.
    pub fn next_step(
        &self,
        failure: Failure<'_>,
        now: DateTime<Utc>,
        policy: &RetryPolicy,
    ) -> NextStep {
        let message = match failure {
            Failure::Permanent(message) => {
                return NextStep::Fail {
                    reason: message.to_string(),
                }
            }
            Failure::Transient(message) => message,
        };
        let since = self.first_refusal(now);
        let deadline = self.deadline(since, policy);
        if now > deadline {
            return NextStep::Fail {
                reason: gave_up(self, self.attempts, since, deadline, message),
            };
        }
        let limited = self.max_attempts > 0;
        if limited && self.attempts >= self.max_attempts {
            return NextStep::Fail {
                reason: format!(
                    "Gave up after {} ([conductor] max_attempts), refused since {}: {message}",
                    attempts(self.attempts),
                    time(since)
                ),
            };
        }
        NextStep::Retry {
            blocked: Blocked {
                since,
                attempt: self.attempts,
                max_attempts: limited.then_some(self.max_attempts),
                next_attempt: (now + policy.delay(self.attempts)).min(deadline),
                gives_up_at: deadline,
                message: message.to_string(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::job::JobPayload;
    use crate::domain::{ClusterId, JobId};

    fn at(text: &str) -> DateTime<Utc> {
        parse_time(text).expect("a time")
    }

    fn job(attempts: i32, max_attempts: i32, deadline_at: Option<DateTime<Utc>>) -> Job {
        Job {
            id: 1,
            uuid: JobId::new(),
            operation: Operation::ClusterCreate,
            resource: ClusterId::new().into(),
            driver: "fake".into(),
            payload: JobPayload::ClusterCreate {},
            attempts,
            max_attempts,
            deadline_at,
            lease_owner: None,
            lease_expires_at: None,
            last_error: None,
            blocked_since: None,
            created_at: at("2026-11-27T12:00:00Z"),
        }
    }

    fn retried(step: NextStep) -> Blocked {
        match step {
            NextStep::Retry { blocked } => blocked,
            other => panic!("not retried: {other:?}"),
        }
    }

    #[test]
    fn the_wait_doubles_from_the_first_delay_up_to_the_cap() {
        let policy = RetryPolicy::default();
        for (attempts, wait) in [(0, 1), (1, 1), (2, 2), (3, 4), (6, 32), (7, 60), (40, 60)] {
            assert_eq!(
                policy.delay(attempts),
                Duration::seconds(wait),
                "{attempts}"
            );
        }
        let fast = RetryPolicy {
            first_delay: Duration::milliseconds(50),
            max_delay: Duration::milliseconds(120),
            operation_timeout: Duration::seconds(2),
        };
        assert_eq!(fast.delay(2), Duration::milliseconds(100));
        assert_eq!(fast.delay(3), Duration::milliseconds(120));
    }

    #[test]
    fn a_first_refusal_blocks_the_job_from_now_until_its_deadline() {
        let now = at("2026-11-27T12:05:00Z");
        let deadline = at("2026-11-27T13:00:00Z");
        let blocked = retried(job(1, 0, Some(deadline)).next_step(
            Failure::Transient("Quota exceeded for instances: requested 3, available 1."),
            now,
            &RetryPolicy::default(),
        ));
        assert_eq!(
            blocked,
            Blocked {
                since: now,
                attempt: 1,
                max_attempts: None,
                next_attempt: now + Duration::seconds(1),
                gives_up_at: deadline,
                message: "Quota exceeded for instances: requested 3, available 1.".into(),
            }
        );
        assert_eq!(
            blocked.reason(),
            "Blocked since 2026-11-27T12:05:00Z (attempt 1 refused; next attempt at \
             2026-11-27T12:05:01Z; gives up at 2026-11-27T13:00:00Z): Quota exceeded for \
             instances: requested 3, available 1."
        );
        assert_eq!(Blocked::parse(&blocked.reason()), Some(blocked));
    }

    #[test]
    fn later_refusals_keep_the_first_refusals_time_and_never_wait_past_the_deadline() {
        let mut j = job(7, 10, None);
        let since = at("2026-11-27T12:00:00Z");
        j.blocked_since = Some(since);
        let policy = RetryPolicy::default();
        let now = at("2026-11-27T12:59:30Z");
        let blocked = retried(j.next_step(Failure::Transient("busy"), now, &policy));
        assert_eq!(blocked.since, since);
        assert_eq!(blocked.gives_up_at, at("2026-11-27T13:00:00Z"));
        assert_eq!(blocked.next_attempt, blocked.gives_up_at, "not 60 s later");
        assert_eq!(
            blocked.reason(),
            "Blocked since 2026-11-27T12:00:00Z (attempt 7 of 10 refused; next attempt at \
             2026-11-27T13:00:00Z; gives up at 2026-11-27T13:00:00Z): busy"
        );
        assert_eq!(Blocked::parse(&blocked.reason()), Some(blocked));
    }

    #[test]
    fn a_refusal_past_the_deadline_fails_with_the_last_reason() {
        let mut j = job(12, 0, Some(at("2026-11-27T13:00:00Z")));
        j.blocked_since = Some(at("2026-11-27T12:00:00Z"));
        let step = j.next_step(
            Failure::Transient("Quota exceeded."),
            at("2026-11-27T13:00:01Z"),
            &RetryPolicy::default(),
        );
        assert_eq!(
            step,
            NextStep::Fail {
                reason: "Gave up after 12 attempts, refused since 2026-11-27T12:00:00Z, once \
                         the cluster's create_timeout passed at 2026-11-27T13:00:00Z: Quota \
                         exceeded."
                    .into()
            }
        );
        // Without a deadline of its own, operation_timeout bounds it from the first refusal.
        let mut resize = job(3, 0, None);
        resize.operation = Operation::ClusterResize;
        resize.blocked_since = Some(at("2026-11-27T12:00:00Z"));
        let step = resize.next_step(
            Failure::Transient("The API is unreachable."),
            at("2026-11-27T13:00:01Z"),
            &RetryPolicy::default(),
        );
        assert_eq!(
            step,
            NextStep::Fail {
                reason: "Gave up after 3 attempts, refused since 2026-11-27T12:00:00Z, once \
                         [conductor] operation_timeout passed at 2026-11-27T13:00:00Z: The API \
                         is unreachable."
                    .into()
            }
        );
    }

    #[test]
    fn a_deadline_that_passed_before_the_attempt_gives_up_with_the_last_refusal() {
        let mut j = job(4, 0, Some(at("2026-11-27T13:00:00Z")));
        assert_eq!(j.gave_up_waiting(), None, "never refused");
        j.blocked_since = Some(at("2026-11-27T12:00:00Z"));
        j.last_error = Some("Quota exceeded.".into());
        assert_eq!(
            j.gave_up_waiting().as_deref(),
            Some(
                "Gave up after 3 attempts, refused since 2026-11-27T12:00:00Z, once the \
                 cluster's create_timeout passed at 2026-11-27T13:00:00Z: Quota exceeded."
            )
        );
        assert!(j.deadline_passed(at("2026-11-27T13:00:01Z")));
        assert!(!j.deadline_passed(at("2026-11-27T13:00:00Z")));
    }

    #[test]
    fn max_attempts_still_bounds_a_job_that_has_it() {
        let step = job(5, 5, None).next_step(
            Failure::Transient("backend unreachable"),
            at("2026-11-27T12:00:00Z"),
            &RetryPolicy::default(),
        );
        assert_eq!(
            step,
            NextStep::Fail {
                reason: "Gave up after 5 attempts ([conductor] max_attempts), refused since \
                         2026-11-27T12:00:00Z: backend unreachable"
                    .into()
            }
        );
    }

    #[test]
    fn a_permanent_refusal_fails_at_once_with_the_drivers_reason() {
        assert_eq!(
            job(1, 0, None).next_step(
                Failure::Permanent("no such image"),
                Utc::now(),
                &RetryPolicy::default()
            ),
            NextStep::Fail {
                reason: "no such image".into()
            }
        );
    }

    #[test]
    fn only_a_blocked_sentence_parses() {
        for other in [
            "",
            "The fake driver simulated a failure of 'create'.",
            "Blocked since yesterday (attempt 1 refused; next attempt at x; gives up at y): z",
            "Blocked since 2026-11-27T12:00:00Z (attempt one refused; next attempt at \
             2026-11-27T12:00:00Z; gives up at 2026-11-27T12:00:00Z): z",
        ] {
            assert_eq!(Blocked::parse(other), None, "{other}");
            assert!(!Blocked::is_blocked_reason(Some(other)));
        }
        assert!(!Blocked::is_blocked_reason(None));
    }
}
