//! The binary runs with the allocator's settings (`startup::ALLOCATOR_ENV`): mimalloc reads them
//! from the environment as the process starts, so `main` runs the process again with them. Read
//! back from mimalloc itself, which prints its options when `MIMALLOC_VERBOSE=1`.

use std::process::Command;

/// The value mimalloc reports for an option, from its verbose start-up lines
/// (`option 'purge_delay': 0 `), and what the command printed on stdout.
fn run_with(env: &[(&str, &str)], option: &str) -> (Option<i64>, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fleetyard"));
    command
        .args(["policy", "sample"])
        .env("MIMALLOC_VERBOSE", "1");
    for (name, _) in fleetyard::startup::ALLOCATOR_ENV {
        command.env_remove(name);
    }
    let out = command
        .envs(env.iter().copied())
        .output()
        .expect("the binary runs");
    assert!(out.status.success(), "{:?}", out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let prefix = format!("option '{option}': ");
    let value = stderr
        .lines()
        .filter_map(|l| {
            l.trim_start_matches("mimalloc: ")
                .strip_prefix(prefix.as_str())
        })
        .filter_map(|rest| rest.split_whitespace().next()?.parse().ok())
        .next_back();
    (value, String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn the_binary_runs_with_the_allocators_settings_and_its_own_arguments() {
    for (name, value) in fleetyard::startup::ALLOCATOR_ENV {
        let option = name.trim_start_matches("MIMALLOC_").to_ascii_lowercase();
        let (seen, stdout) = run_with(&[], &option);
        assert_eq!(seen, Some(value.parse().expect("a number")), "{option}");
        // The process run again kept its arguments: it did what `policy sample` does.
        assert_eq!(stdout, fleetyard::auth::policy::Enforcer::sample_yaml());
    }
}

#[test]
fn an_allocator_setting_from_the_operator_is_kept() {
    let (seen, _) = run_with(&[("MIMALLOC_PURGE_DELAY", "250")], "purge_delay");
    assert_eq!(seen, Some(250));
}
