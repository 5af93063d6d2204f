//! PostgreSQL's own machinery: the connection pool ([`pool`]) and the shared single-row reads
//! over it ([`batched`]), whose queues the store holds beside the pool.

pub(crate) mod batched;
pub(crate) mod pool;
