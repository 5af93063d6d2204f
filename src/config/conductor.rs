//! `[conductor]`'s retry options: how a job refused transiently is spaced and bounded
//! ([`crate::domain::job::retry::RetryPolicy`]).

use super::ConductorSection;
use crate::domain::job::retry::RetryPolicy;

/// The longest `operation_timeout`: a week.
const MAX_OPERATION_TIMEOUT: f64 = 7.0 * 24.0 * 3600.0;
/// The longest wait between two attempts: an hour.
const MAX_RETRY_DELAY: f64 = 3600.0;

fn duration(seconds: f64) -> chrono::Duration {
    chrono::Duration::milliseconds((seconds * 1000.0).round() as i64)
}

impl ConductorSection {
    /// The retry rule of this conductor's jobs.
    pub fn retry_policy(&self) -> RetryPolicy {
        RetryPolicy {
            first_delay: duration(self.retry_delay),
            max_delay: duration(self.retry_max_delay),
            operation_timeout: duration(self.operation_timeout),
        }
    }

    /// What is wrong with the retry options, as `option: why`.
    pub fn retry_problem(&self) -> Option<String> {
        let within = |s: f64, max: f64| s.is_finite() && (0.001..=max).contains(&s);
        if !within(self.operation_timeout, MAX_OPERATION_TIMEOUT) {
            return Some(format!(
                "operation_timeout: must be a number of seconds from 0.001 to {MAX_OPERATION_TIMEOUT}"
            ));
        }
        for (option, seconds) in [
            ("retry_delay", self.retry_delay),
            ("retry_max_delay", self.retry_max_delay),
        ] {
            if !within(seconds, MAX_RETRY_DELAY) {
                return Some(format!(
                    "{option}: must be a number of seconds from 0.001 to {MAX_RETRY_DELAY}"
                ));
            }
        }
        if self.retry_max_delay < self.retry_delay {
            return Some("retry_max_delay: must not be less than retry_delay".into());
        }
        if self.max_attempts < 0 {
            return Some("max_attempts: must be 0 (no limit) or more".into());
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_wait_one_second_doubling_to_a_minute_for_an_hour() {
        let s = ConductorSection::default();
        assert_eq!(s.retry_problem(), None);
        assert_eq!(s.retry_policy(), RetryPolicy::default());
    }

    #[test]
    fn retry_options_out_of_range_are_refused_with_the_option_named() {
        type Tweak = fn(&mut ConductorSection);
        let cases: [(Tweak, &str); 5] = [
            (|s| s.operation_timeout = 0.0, "operation_timeout: "),
            (|s| s.retry_delay = f64::NAN, "retry_delay: "),
            (|s| s.retry_max_delay = 7200.0, "retry_max_delay: "),
            (
                |s| s.retry_max_delay = 0.5,
                "retry_max_delay: must not be less",
            ),
            (|s| s.max_attempts = -1, "max_attempts: "),
        ];
        for (tweak, expected) in cases {
            let mut s = ConductorSection::default();
            tweak(&mut s);
            let problem = s.retry_problem().expect("refused");
            assert!(problem.starts_with(expected), "{problem}");
        }
    }
}
