//! Logging: readable lines by default, JSON lines by option (`[DEFAULT] log_format = json`).
//! Each request runs in a root span carrying its request id.

use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Installs the global subscriber writing to `sink`. `RUST_LOG`, when set, overrides `level`.
pub fn init<W>(format: LogFormat, level: &str, sink: W)
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(sink);
    let result = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .try_init(),
    };
    // A second initialisation (tests) keeps the first subscriber.
    let _ = result;
}
