//! Rebuilds when a migration is added: `sqlx::migrate!` embeds the directories' files at
//! compile time, and cargo tracks only the files it already saw.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
    println!("cargo:rerun-if-changed=migrations-sqlite");
}
