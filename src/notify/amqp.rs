//! The AMQP publisher behind the `messagingv2` driver: what oslo.messaging's rabbit driver
//! would send, so existing notification listeners receive it unchanged.
//!
//! - `[DEFAULT] transport_url` is read the way oslo writes it (`rabbit://user:pass@host:port/vhost`,
//!   several hosts separated by commas; the first reachable one is used).
//! - Messages go to the topic exchange `[DEFAULT] control_exchange` with routing key
//!   `<topic>.<priority>` for every topic of `[oslo_messaging_notifications] topics`; the queue
//!   of that name is declared and bound like oslo's notifier does, so a message published while
//!   no listener runs waits for one.
//! - The channel is in confirm mode: a message counts as delivered only once the broker acks it.
//!
//! A broken connection is dropped; the relay reconnects with capped exponential backoff.

use std::collections::HashSet;
use std::fmt;
use std::time::Duration;

use lapin::options::{
    BasicPublishOptions, ConfirmSelectOptions, ExchangeDeclareOptions, QueueBindOptions,
    QueueDeclareOptions,
};
use lapin::types::FieldTable;
use lapin::uri::{AMQPAuthority, AMQPQueryString, AMQPScheme, AMQPUri, AMQPUserInfo};
use lapin::{
    BasicProperties, Channel, Confirmation, Connection, ConnectionProperties, ExchangeKind,
};

use lapin::PublisherConfirm;

use crate::store::OutboxEvent;

/// The broker's default port (oslo's too).
const DEFAULT_PORT: u16 = 5672;
/// How long one broker host may take to accept a connection and finish the AMQP handshake.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// `[DEFAULT] transport_url`, parsed.
#[derive(Clone, PartialEq, Eq)]
pub struct TransportUrl {
    /// One AMQP URI per broker host, in the order given.
    pub hosts: Vec<AMQPUri>,
    /// `?amqp_durable_queues=true` (an oslo option that may ride in the URL): declare the
    /// exchange and queues durable, to match a deployment whose listeners do the same.
    pub durable: bool,
    /// `?amqp_auto_delete=true`: declare them auto-delete, likewise.
    pub auto_delete: bool,
}

impl fmt::Debug for TransportUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TransportUrl")
            .field(
                "hosts",
                &self.hosts.iter().map(redacted).collect::<Vec<_>>(),
            )
            .field("durable", &self.durable)
            .field("auto_delete", &self.auto_delete)
            .finish()
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("[DEFAULT] transport_url: {0}")]
pub struct TransportUrlError(String);

/// Parses oslo's transport URL: `rabbit://[user[:pass]@]host[:port][,...]/[vhost][?options]`
/// (`amqp://` is accepted too). An empty vhost or `/` is the broker's default vhost `/`.
pub fn parse_transport_url(url: &str) -> Result<TransportUrl, TransportUrlError> {
    let err = |m: String| TransportUrlError(m);
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| err("expected rabbit://user:pass@host:port/vhost".into()))?;
    match scheme {
        "rabbit" | "amqp" => {}
        "amqps" => {
            return Err(err(
                "TLS (amqps://) is not supported; use a plain rabbit:// or amqp:// URL".into(),
            ))
        }
        other => {
            return Err(err(format!(
                "unsupported scheme '{other}' (expected rabbit:// or amqp://)"
            )))
        }
    }
    let (rest, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    let (netloc, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, ""),
    };
    let vhost = match percent_decode(path).map_err(err)? {
        v if v.is_empty() => "/".to_string(),
        v => v,
    };
    let (durable, auto_delete) = queue_options(query.unwrap_or("")).map_err(err)?;
    let hosts = netloc
        .split(',')
        .filter(|h| !h.is_empty())
        .map(|host| broker_uri(host, &vhost))
        .collect::<Result<Vec<_>, String>>()
        .map_err(err)?;
    if hosts.is_empty() {
        return Err(err("no broker host given".into()));
    }
    Ok(TransportUrl {
        hosts,
        durable,
        auto_delete,
    })
}

/// The query options that change what is declared: `amqp_durable_queues` and
/// `amqp_auto_delete`; `ssl=true` is refused.
fn queue_options(query: &str) -> Result<(bool, bool), String> {
    let mut durable = false;
    let mut auto_delete = false;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let truthy = || {
            matches!(
                value.to_ascii_lowercase().as_str(),
                "1" | "true" | "yes" | "on"
            )
        };
        match key {
            "amqp_durable_queues" => durable = truthy(),
            "amqp_auto_delete" => auto_delete = truthy(),
            "ssl" if truthy() => {
                return Err("TLS (ssl=true) is not supported; use a plain rabbit:// URL".into())
            }
            // oslo reads many more options from the URL; none of them changes what is sent.
            _ => {}
        }
    }
    Ok((durable, auto_delete))
}

/// One `[user[:pass]@]host[:port]` of the URL as lapin's URI.
fn broker_uri(host: &str, vhost: &str) -> Result<AMQPUri, String> {
    let (userinfo, hostport) = match host.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, host),
    };
    // Like kombu: a host without credentials logs in as guest/guest.
    let (username, password) = match userinfo {
        Some(u) => {
            let (user, pass) = u.split_once(':').unwrap_or((u, ""));
            (percent_decode(user)?, percent_decode(pass)?)
        }
        None => ("guest".to_string(), "guest".to_string()),
    };
    let (hostname, port) = split_host_port(hostport)?;
    if hostname.is_empty() {
        return Err(format!("no host name in '{hostport}'"));
    }
    Ok(AMQPUri {
        scheme: AMQPScheme::AMQP,
        authority: AMQPAuthority {
            userinfo: AMQPUserInfo { username, password },
            host: hostname,
            port: port.unwrap_or(DEFAULT_PORT),
        },
        vhost: vhost.to_string(),
        query: AMQPQueryString {
            connection_timeout: Some(CONNECT_TIMEOUT.as_millis() as u64),
            ..AMQPQueryString::default()
        },
    })
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`.
fn split_host_port(s: &str) -> Result<(String, Option<u16>), String> {
    let port = |p: &str| {
        p.parse::<u16>()
            .map_err(|_| format!("invalid port '{p}' in '{s}'"))
    };
    if let Some(v6) = s.strip_prefix('[') {
        let (addr, after) = v6
            .split_once(']')
            .ok_or_else(|| format!("unclosed '[' in '{s}'"))?;
        return match after {
            "" => Ok((addr.to_string(), None)),
            p => match p.strip_prefix(':') {
                Some(p) => Ok((addr.to_string(), Some(port(p)?))),
                None => Err(format!("unexpected '{p}' after ']' in '{s}'")),
            },
        };
    }
    match s.rsplit_once(':') {
        Some((h, p)) => Ok((h.to_string(), Some(port(p)?))),
        None => Ok((s.to_string(), None)),
    }
}

fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("invalid percent-encoding in '{s}'"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("'{s}' does not decode to UTF-8"))
}

/// The URI as an AMQP URI string without its password, for logs.
pub fn redacted(uri: &AMQPUri) -> String {
    let host = if uri.authority.host.contains(':') {
        format!("[{}]", uri.authority.host)
    } else {
        uri.authority.host.clone()
    };
    let vhost = if uri.vhost == "/" {
        "%2f".to_string()
    } else {
        uri.vhost.clone()
    };
    format!(
        "amqp://{}@{}:{}/{}",
        uri.authority.userinfo.username, host, uri.authority.port, vhost
    )
}

/// The priority part of a routing key: oslo's lower-case names (`WARNING` is `warn`).
pub fn routing_priority(priority: &str) -> String {
    match priority.to_ascii_lowercase().as_str() {
        "warning" => "warn".to_string(),
        p => p.to_string(),
    }
}

/// Where and how events are published.
#[derive(Debug, Clone)]
pub struct PublisherSettings {
    pub transport: TransportUrl,
    /// `[DEFAULT] control_exchange`.
    pub exchange: String,
    /// `[oslo_messaging_notifications] topics`.
    pub topics: Vec<String>,
    /// Shown as the connection name in RabbitMQ's management UI.
    pub connection_name: String,
    /// How long to wait for the broker to confirm a published message.
    pub confirm_timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum AmqpError {
    #[error("no broker reachable: {0}")]
    Unreachable(String),
    #[error("AMQP error: {0}")]
    Protocol(#[from] lapin::Error),
    #[error("the broker did not confirm within {0:?}")]
    ConfirmTimeout(Duration),
    #[error("not connected")]
    NotConnected,
}

/// An open connection with its confirm-mode channel.
struct Live {
    connection: Connection,
    channel: Channel,
    /// Routing keys whose queue this connection declared and bound.
    declared: HashSet<String>,
    broker: String,
}

/// What became of one event of a publish round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// The broker confirmed every copy (one per topic).
    Confirmed,
    /// Not delivered; the reason is for the log.
    Failed(String),
}

/// A lapin publisher that reconnects on demand.
pub struct AmqpPublisher {
    settings: PublisherSettings,
    live: Option<Live>,
}

impl AmqpPublisher {
    pub fn new(settings: PublisherSettings) -> AmqpPublisher {
        AmqpPublisher {
            settings,
            live: None,
        }
    }

    pub fn settings(&self) -> &PublisherSettings {
        &self.settings
    }

    /// Whether a connection is open (it may still turn out broken on the next publish).
    pub fn is_connected(&self) -> bool {
        self.live
            .as_ref()
            .is_some_and(|l| l.connection.status().connected() && l.channel.status().connected())
    }

    /// The broker of the open connection, password left out.
    pub fn broker(&self) -> Option<&str> {
        self.live.as_ref().map(|l| l.broker.as_str())
    }

    /// Opens a connection to the first reachable host (unless one is open), declares the
    /// exchange and puts a channel in confirm mode.
    pub async fn connect(&mut self) -> Result<(), AmqpError> {
        if self.is_connected() {
            return Ok(());
        }
        self.live = None;
        let mut errors = Vec::new();
        for uri in &self.settings.transport.hosts {
            match tokio::time::timeout(CONNECT_TIMEOUT, self.open(uri.clone())).await {
                Ok(Ok(live)) => {
                    tracing::info!(broker = %live.broker, exchange = %self.settings.exchange, "connected to the notification broker");
                    self.live = Some(live);
                    return Ok(());
                }
                Ok(Err(e)) => errors.push(format!("{}: {e}", redacted(uri))),
                Err(_) => errors.push(format!("{}: timed out", redacted(uri))),
            }
        }
        Err(AmqpError::Unreachable(errors.join("; ")))
    }

    async fn open(&self, uri: AMQPUri) -> Result<Live, AmqpError> {
        let broker = redacted(&uri);
        // Heartbeats: lapin takes the broker's proposal (60 s on RabbitMQ), so a dead peer is
        // noticed even between publishes. CONNECT_TIMEOUT bounds connect plus handshake.
        let properties = ConnectionProperties::default()
            // Lets operators tell this connection apart in `rabbitmqctl list_connections`.
            .with_connection_name(self.settings.connection_name.clone().into());
        // No lapin auto-recovery: the relay drops a broken connection and opens a new one,
        // and the outbox, not lapin's buffers, holds whatever was not confirmed.
        let connection = Connection::connect_uri(uri, properties).await?;
        let channel = connection.create_channel().await?;
        channel
            .exchange_declare(
                self.settings.exchange.as_str().into(),
                // oslo's notification exchange is a topic exchange keyed `<topic>.<priority>`.
                ExchangeKind::Topic,
                ExchangeDeclareOptions {
                    // Declare, don't just check: publishing to a missing exchange is an error.
                    passive: false,
                    // oslo's default (amqp_durable_queues=False); any other value makes the
                    // listener's own declaration fail with PRECONDITION_FAILED.
                    durable: self.settings.transport.durable,
                    // oslo's default (amqp_auto_delete=False), for the same reason.
                    auto_delete: self.settings.transport.auto_delete,
                    // A normal exchange that clients publish to.
                    internal: false,
                    // Wait for declare-ok so an argument mismatch surfaces here.
                    nowait: false,
                },
                // No exchange arguments, as oslo declares it.
                FieldTable::default(),
            )
            .await?;
        // Publisher confirms: the broker acks each message once it has routed it to its
        // queues (and written it, for persistent messages on durable queues); only then is
        // the outbox row marked sent.
        channel
            // Wait for select-ok: publishing before it would go unconfirmed.
            .confirm_select(ConfirmSelectOptions { nowait: false })
            .await?;
        Ok(Live {
            connection,
            channel,
            declared: HashSet::new(),
            broker,
        })
    }

    /// Drops the connection (the next [`AmqpPublisher::connect`] opens a new one).
    pub async fn disconnect(&mut self) {
        if let Some(live) = self.live.take() {
            // A partitioned broker never answers the close: give it as long as a confirm,
            // then drop the connection (its socket closes with it).
            let close = live
                .connection
                .close(200, "fleetyard relay stopping".into());
            let _ = tokio::time::timeout(self.settings.confirm_timeout, close).await;
        }
    }

    /// Declares the queue `key` like oslo's notifier and binds it to the exchange with the
    /// same routing key, once per connection.
    async fn ensure_queue(&mut self, key: &str) -> Result<(), AmqpError> {
        let Some(live) = self.live.as_mut() else {
            return Err(AmqpError::NotConnected);
        };
        if live.declared.contains(key) {
            return Ok(());
        }
        live.channel
            .queue_declare(
                key.into(),
                QueueDeclareOptions {
                    // Create it if missing: that is what keeps events for a later listener.
                    passive: false,
                    // oslo declares `<topic>.<priority>` non-durable (amqp_durable_queues=False).
                    durable: self.settings.transport.durable,
                    // Shared by every listener without a pool name: never exclusive.
                    exclusive: false,
                    // Kept when the last listener leaves, so events wait for the next one.
                    auto_delete: self.settings.transport.auto_delete,
                    // Wait for declare-ok so a mismatch with an existing queue surfaces here.
                    nowait: false,
                },
                // No x-arguments: oslo declares none, and any would make the declarations clash.
                FieldTable::default(),
            )
            .await?;
        live.channel
            .queue_bind(
                key.into(),
                self.settings.exchange.as_str().into(),
                // oslo binds the queue with its own name as the routing key.
                key.into(),
                // Wait for bind-ok: a publish right after must find the binding.
                QueueBindOptions { nowait: false },
                // No binding arguments (a topic exchange ignores them).
                FieldTable::default(),
            )
            .await?;
        live.declared.insert(key.to_string());
        Ok(())
    }

    /// The properties oslo.messaging's rabbit driver sets on a notification.
    fn properties() -> BasicProperties {
        BasicProperties::default()
            // Required: without it the oslo listener logs "Failed to process message" and
            // drops it.
            .with_content_type("application/json".into())
            // The body is UTF-8 JSON, as oslo declares it.
            .with_content_encoding("utf-8".into())
            // Persistent: kept across a broker restart where the queue is durable.
            .with_delivery_mode(2)
            // oslo sends priority 0 (no priority queues involved).
            .with_priority(0)
            // oslo sends an empty header table.
            .with_headers(FieldTable::default())
    }

    /// Publishes `events` (none of them ordered after another: the caller sends a resource's
    /// events in separate rounds) and waits for the broker's confirms. A connection or channel
    /// error fails every event not yet confirmed and drops the connection.
    pub async fn publish(&mut self, events: &[&OutboxEvent]) -> Vec<Delivery> {
        let mut results = vec![Delivery::Confirmed; events.len()];
        if let Err(e) = self.connect().await {
            let reason = e.to_string();
            return results
                .into_iter()
                .map(|_| Delivery::Failed(reason.clone()))
                .collect();
        }
        // Declaring and publishing wait on the broker too: in a partition they would wait for
        // ever, so they get the confirm timeout as well.
        let timeout = self.settings.confirm_timeout;
        let (confirms, mut broken) =
            match tokio::time::timeout(timeout, self.send_all(events, &mut results)).await {
                Ok(sent) => sent,
                Err(_) => (
                    Vec::new(),
                    Some(format!("publishing took longer than {timeout:?}")),
                ),
            };
        let mut confirmed = vec![false; events.len()];
        for i in self
            .await_confirms(confirms, &mut results, &mut broken)
            .await
        {
            confirmed[i] = true;
        }
        for (r, confirmed) in results.iter_mut().zip(confirmed) {
            if *r == Delivery::Confirmed && !confirmed {
                *r = Delivery::Failed(
                    broken
                        .clone()
                        .unwrap_or_else(|| "not published".to_string()),
                );
            }
        }
        if let Some(reason) = broken {
            tracing::warn!(reason = %reason, "notification broker connection dropped; reconnecting");
            self.disconnect().await;
        }
        results
    }

    /// Publishes every event to every topic's queue (declared first); returns the pending
    /// confirms (event index, routing key) and, when the connection broke, why. An event that
    /// cannot be serialised fails alone.
    async fn send_all(
        &mut self,
        events: &[&OutboxEvent],
        results: &mut [Delivery],
    ) -> (Vec<(usize, String, PublisherConfirm)>, Option<String>) {
        let mut confirms = Vec::with_capacity(events.len() * self.settings.topics.len());
        for (i, event) in events.iter().enumerate() {
            let body = match super::envelope::envelope_bytes(event) {
                Ok(b) => b,
                Err(e) => {
                    results[i] = Delivery::Failed(format!("cannot serialise: {e}"));
                    continue;
                }
            };
            let priority = routing_priority(&event.priority);
            for t in 0..self.settings.topics.len() {
                let key = format!("{}.{priority}", self.settings.topics[t]);
                if let Err(e) = self.ensure_queue(&key).await {
                    return (confirms, Some(format!("declaring queue {key}: {e}")));
                }
                let Some(live) = self.live.as_ref() else {
                    return (confirms, Some("not connected".into()));
                };
                let published = live
                    .channel
                    .basic_publish(
                        self.settings.exchange.as_str().into(),
                        key.as_str().into(),
                        BasicPublishOptions {
                            // Returned, not silently dropped, if nothing is bound to the key
                            // (someone deleted the queue): the event then stays pending.
                            mandatory: true,
                            // Deprecated in RabbitMQ; queueing for a later consumer is the point.
                            immediate: false,
                        },
                        &body,
                        Self::properties(),
                    )
                    .await;
                match published {
                    Ok(confirm) => confirms.push((i, key, confirm)),
                    Err(e) => return (confirms, Some(format!("publishing to {key}: {e}"))),
                }
            }
        }
        (confirms, None)
    }

    /// Waits (until `confirm_timeout` in all) for the broker's confirms; returns the indexes of
    /// events with at least one confirm, records every refusal in `results` and, when the
    /// channel is no longer usable, why in `broken`.
    async fn await_confirms(
        &mut self,
        confirms: Vec<(usize, String, PublisherConfirm)>,
        results: &mut [Delivery],
        broken: &mut Option<String>,
    ) -> Vec<usize> {
        let mut acked = Vec::with_capacity(confirms.len());
        let timeout = self.settings.confirm_timeout;
        let deadline = tokio::time::Instant::now() + timeout;
        for (i, key, confirm) in confirms {
            match tokio::time::timeout_at(deadline, confirm).await {
                Ok(Ok(Confirmation::Ack(None))) => acked.push(i),
                Ok(Ok(Confirmation::Ack(Some(returned)))) => {
                    results[i] = Delivery::Failed(format!(
                        "returned by the broker ({} {}): nothing is bound to {key}",
                        returned.reply_code, returned.reply_text
                    ));
                    // Declare and bind again before the next attempt.
                    if let Some(live) = self.live.as_mut() {
                        live.declared.remove(&key);
                    }
                }
                Ok(Ok(Confirmation::Nack(_))) => {
                    results[i] = Delivery::Failed(format!("nacked by the broker on {key}"));
                }
                Ok(Ok(Confirmation::NotRequested)) => {
                    results[i] = Delivery::Failed("the channel is not in confirm mode".to_string());
                    broken.get_or_insert_with(|| "confirm mode lost".into());
                }
                Ok(Err(e)) => {
                    results[i] = Delivery::Failed(format!("confirm on {key}: {e}"));
                    broken.get_or_insert_with(|| e.to_string());
                }
                Err(_) => {
                    results[i] = Delivery::Failed(AmqpError::ConfirmTimeout(timeout).to_string());
                    broken.get_or_insert_with(|| "confirm timeout".into());
                }
            }
        }
        acked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(t: &TransportUrl, i: usize) -> (&str, &str, &str, u16, &str) {
        let u = &t.hosts[i];
        (
            u.authority.userinfo.username.as_str(),
            u.authority.userinfo.password.as_str(),
            u.authority.host.as_str(),
            u.authority.port,
            u.vhost.as_str(),
        )
    }

    #[test]
    fn an_oslo_rabbit_url_with_a_trailing_slash_is_the_default_vhost() {
        let t = parse_transport_url("rabbit://guest:guest@127.0.0.1:5672/").expect("valid");
        assert_eq!(host(&t, 0), ("guest", "guest", "127.0.0.1", 5672, "/"));
        assert_eq!(
            t.hosts[0].to_string(),
            "amqp://guest:guest@127.0.0.1:5672/%2F?connection_timeout=10000"
        );
        assert_eq!(redacted(&t.hosts[0]), "amqp://guest@127.0.0.1:5672/%2f");
        assert!(!t.durable && !t.auto_delete);
    }

    #[test]
    fn amqp_urls_with_an_encoded_default_vhost_are_accepted() {
        let t = parse_transport_url("amqp://guest:guest@127.0.0.1:5672/%2f").expect("valid");
        assert_eq!(host(&t, 0), ("guest", "guest", "127.0.0.1", 5672, "/"));
        let t = parse_transport_url("amqp://u:p@broker").expect("valid");
        assert_eq!(host(&t, 0), ("u", "p", "broker", 5672, "/"));
    }

    #[test]
    fn a_named_vhost_and_encoded_credentials_are_decoded() {
        let t =
            parse_transport_url("rabbit://ma%40gnum:p%3Ass%2Fw@mq.example:5673/openstack%2Fprod")
                .expect("valid");
        assert_eq!(
            host(&t, 0),
            ("ma@gnum", "p:ss/w", "mq.example", 5673, "openstack/prod")
        );
        assert!(!redacted(&t.hosts[0]).contains("p:ss"));
        assert!(!format!("{t:?}").contains("p:ss"));
    }

    #[test]
    fn several_hosts_each_carry_their_credentials_in_order() {
        let t = parse_transport_url(
            "rabbit://a:1@mq1:5672,b:2@mq2:5673,mq3/vh?amqp_durable_queues=true&heartbeat_timeout_threshold=60",
        )
        .expect("valid");
        assert_eq!(t.hosts.len(), 3);
        assert_eq!(host(&t, 0), ("a", "1", "mq1", 5672, "vh"));
        assert_eq!(host(&t, 1), ("b", "2", "mq2", 5673, "vh"));
        assert_eq!(host(&t, 2), ("guest", "guest", "mq3", 5672, "vh"));
        assert!(t.durable);
    }

    #[test]
    fn ipv6_hosts_are_bracketed() {
        let t = parse_transport_url("rabbit://u:p@[::1]:5680/").expect("valid");
        assert_eq!(host(&t, 0), ("u", "p", "::1", 5680, "/"));
        assert_eq!(redacted(&t.hosts[0]), "amqp://u@[::1]:5680/%2f");
    }

    #[test]
    fn malformed_urls_name_the_option() {
        for (url, needle) in [
            ("kafka://h:9092/", "unsupported scheme 'kafka'"),
            ("amqps://h/", "TLS"),
            ("rabbit://h/?ssl=1", "TLS"),
            ("rabbit:///", "no broker host"),
            ("rabbit://u:p@h:notaport/", "invalid port"),
            ("rabbit://u:p@:5672/", "no host name"),
            ("127.0.0.1:5672", "expected rabbit://"),
            ("rabbit://h/%zz", "percent-encoding"),
        ] {
            let e = parse_transport_url(url).expect_err(url);
            let text = e.to_string();
            assert!(text.starts_with("[DEFAULT] transport_url: "), "{text}");
            assert!(text.contains(needle), "{url}: {text}");
        }
    }

    #[test]
    fn routing_priorities_are_oslos_lower_case_names() {
        assert_eq!(routing_priority("INFO"), "info");
        assert_eq!(routing_priority("ERROR"), "error");
        assert_eq!(routing_priority("WARNING"), "warn");
        assert_eq!(routing_priority("warn"), "warn");
    }

    #[test]
    fn the_message_properties_are_oslos() {
        let p = AmqpPublisher::properties();
        assert_eq!(
            p.content_type().as_ref().map(|s| s.as_str()),
            Some("application/json")
        );
        assert_eq!(
            p.content_encoding().as_ref().map(|s| s.as_str()),
            Some("utf-8")
        );
        assert_eq!(*p.delivery_mode(), Some(2));
        assert_eq!(*p.priority(), Some(0));
        assert_eq!(p.headers().as_ref().map(|h| h.inner().len()), Some(0));
    }
}
