//! The `fleetyard` command: parse the command line, load configuration, start telemetry, run.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use fleetyard::config::Settings;
use fleetyard::startup::{self, Roles};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "fleetyard",
    version,
    about = "Container-infrastructure management (OpenStack Magnum v1 API)"
)]
struct Cli {
    /// Configuration file (INI); defaults to etc/fleetyard/fleetyard.conf when present.
    #[arg(long, global = true)]
    config_file: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// API, conductor and notification relay in one process (the embedded default).
    Serve,
    /// The HTTP API alone.
    Api,
    /// A conductor alone (any number may run against one PostgreSQL).
    Conductor,
    /// Database schema management.
    Db {
        #[command(subcommand)]
        action: DbAction,
    },
    /// Policy tools.
    Policy {
        #[command(subcommand)]
        action: PolicyAction,
    },
}

#[derive(Subcommand)]
enum DbAction {
    /// Apply pending migrations.
    Upgrade,
    /// Print the applied schema version.
    Version,
}

#[derive(Subcommand)]
enum PolicyAction {
    /// Print the default policy as commented YAML.
    Sample,
}

fn main() -> ExitCode {
    // Before any thread: it may run the process again with the allocator's settings.
    startup::apply_allocator_settings();
    run()
}

#[tokio::main]
async fn run() -> ExitCode {
    let cli = Cli::parse();
    if let Command::Policy {
        action: PolicyAction::Sample,
    } = cli.command
    {
        print!("{}", fleetyard::auth::policy::Enforcer::sample_yaml());
        return ExitCode::SUCCESS;
    }
    let settings = match startup::load_settings(cli.config_file.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fleetyard: {e}");
            return ExitCode::from(2);
        }
    };
    fleetyard::telemetry::init(
        settings.default.log_format,
        &settings.default.log_level,
        std::io::stderr,
    );
    let result = match cli.command {
        Command::Serve => {
            startup::run(
                settings,
                Roles {
                    api: true,
                    conductor: true,
                },
            )
            .await
        }
        Command::Api => {
            startup::run(
                settings,
                Roles {
                    api: true,
                    conductor: false,
                },
            )
            .await
        }
        Command::Conductor => {
            startup::run(
                settings,
                Roles {
                    api: false,
                    conductor: true,
                },
            )
            .await
        }
        Command::Db { action } => db(settings, action).await,
        Command::Policy { .. } => Ok(()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fleetyard: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn db(mut settings: Settings, action: DbAction) -> anyhow::Result<()> {
    settings.database.auto_migrate = false;
    let store = startup::open_store(&settings).await?;
    match action {
        DbAction::Upgrade => {
            store.migrate().await?;
            println!(
                "database schema is at version {}",
                store.schema_version().await?.unwrap_or(0)
            );
        }
        DbAction::Version => match store.schema_version().await? {
            Some(v) => println!("{v}"),
            None => println!("none (run `fleetyard db upgrade`)"),
        },
    }
    Ok(())
}
