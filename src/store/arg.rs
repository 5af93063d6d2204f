//! One argument of a shared read ([`super::db::Pool::read_shared`]), as its parameter's type.

/// One argument of a read, as its parameter's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Arg {
    Text(String),
    Int(i64),
}
