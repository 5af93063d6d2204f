//! Notifications: events are built here ([`events`]), written to the outbox in the transaction
//! of the change they report, and delivered by the relay ([`relay`]) to the configured sink:
//! the AMQP publisher ([`amqp`], driver `messagingv2`), the service log (`log`) or nowhere
//! (`noop`).

pub mod amqp;
pub mod envelope;
pub mod events;
pub mod relay;

#[cfg(test)]
mod fixtures;
