//! Which rows a caller may see.

/// Which rows a caller may see.
#[derive(Debug, Clone)]
pub struct Scope {
    pub project_id: String,
    /// Admin cross-project mode.
    pub all_projects: bool,
}
