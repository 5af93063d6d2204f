//! A TCP proxy of the tests' own in front of PostgreSQL, to drill database outages without
//! touching the machine's server: it forwards, refuses connections (its port closed, existing
//! connections cut), or partitions the network (bytes held in both directions, none lost,
//! delivered when the partition heals, as TCP retransmission would) — at once, or from the
//! moment a client sends `COMMIT`; or it cuts the one connection that sends `COMMIT`, before
//! or after passing it on, so that the COMMIT's answer is lost while the network works.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What the network between the service and PostgreSQL does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// Bytes flow.
    Up,
    /// The port is closed (connections are refused) and open connections are cut.
    Refused,
    /// Nothing flows; connections are accepted and held, bytes wait for the heal.
    Partitioned,
    /// Bytes flow until a client sends `COMMIT`, which is the first byte held: the partition
    /// starts between a transaction's last statement and its commit.
    PartitionAtCommit,
    /// The first connection that sends `COMMIT` is cut without passing it on (the server rolls
    /// the transaction back when it sees the connection go); then the link is `Up` again.
    CutBeforeCommit,
    /// The first connection that sends `COMMIT` passes it on and is cut before the answer
    /// comes back (the server commits; the client never hears); then the link is `Up` again.
    CutAfterCommit,
}

impl Link {
    fn flows(self) -> bool {
        matches!(
            self,
            Link::Up | Link::PartitionAtCommit | Link::CutBeforeCommit | Link::CutAfterCommit
        )
    }
}

pub struct DbProxy {
    pub port: u16,
    link: watch::Sender<Link>,
    task: JoinHandle<()>,
}

impl Drop for DbProxy {
    fn drop(&mut self) {
        self.link.send_replace(Link::Refused);
        self.task.abort();
    }
}

impl DbProxy {
    /// A proxy on a free local port forwarding to `upstream` (`host:port`).
    pub async fn start(upstream: &str) -> DbProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("proxy binds");
        let port = listener.local_addr().expect("address").port();
        let (link, _) = watch::channel(Link::Up);
        let task = tokio::spawn(serve(listener, port, upstream.to_string(), link.clone()));
        DbProxy { port, link, task }
    }

    pub fn set(&self, link: Link) {
        self.link.send_replace(link);
    }

    pub fn link(&self) -> Link {
        *self.link.borrow()
    }

    /// `url` (a PostgreSQL URL on `host:port`) through this proxy.
    pub fn url_for(&self, url: &str, upstream: &str) -> String {
        url.replacen(upstream, &format!("127.0.0.1:{}", self.port), 1)
    }
}

/// Waits until `wanted` holds of the link; false if the proxy is gone.
async fn until(link: &watch::Sender<Link>, wanted: impl Fn(Link) -> bool) -> bool {
    link.subscribe().wait_for(|l| wanted(*l)).await.is_ok()
}

async fn serve(first: TcpListener, port: u16, upstream: String, link: watch::Sender<Link>) {
    let mut listener = Some(first);
    loop {
        let current = match listener.take() {
            Some(l) => l,
            None => {
                if !until(&link, |l| l != Link::Refused).await {
                    return;
                }
                match rebind(port).await {
                    Some(l) => l,
                    None => return,
                }
            }
        };
        loop {
            tokio::select! {
                accepted = current.accept() => {
                    if let Ok((client, _)) = accepted {
                        tokio::spawn(pipe(client, upstream.clone(), link.clone()));
                    }
                }
                _ = until(&link, |l| l == Link::Refused) => break,
            }
        }
        // Dropping the listener closes the port: connecting is refused until the heal.
        drop(current);
    }
}

async fn rebind(port: u16) -> Option<TcpListener> {
    for _ in 0..50 {
        let socket = TcpSocket::new_v4().ok()?;
        let _ = socket.set_reuseaddr(true);
        let bound = socket
            .bind(([127, 0, 0, 1], port).into())
            .and_then(|()| socket.listen(128));
        if let Ok(l) = bound {
            return Some(l);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

async fn pipe(client: TcpStream, upstream: String, link: watch::Sender<Link>) {
    let cut = until(&link, |l| l == Link::Refused);
    let work = async {
        // A partitioned network completes no handshake: connect upstream once bytes flow.
        if !until(&link, Link::flows).await {
            return;
        }
        let Ok(server) = TcpStream::connect(&upstream).await else {
            return;
        };
        let (client_read, client_write) = client.into_split();
        let (server_read, server_write) = server.into_split();
        // This connection's own cut: set by the client side's pump, it stops both.
        let (this_cut, _) = watch::channel(false);
        tokio::select! {
            _ = async {
                tokio::join!(
                    pump(client_read, server_write, &link, &this_cut, true),
                    pump(server_read, client_write, &link, &this_cut, false),
                )
            } => {}
            _ = async {
                let mut cut = this_cut.subscribe();
                let _ = cut.wait_for(|c| *c).await;
            } => {}
        }
    };
    // Refused cuts the connection: both sockets are dropped.
    tokio::select! {
        _ = work => {}
        _ = cut => {}
    }
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    link: &watch::Sender<Link>,
    this_cut: &watch::Sender<bool>,
    from_client: bool,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => {
                let _ = to.shutdown().await;
                return;
            }
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        let commit = from_client && chunk.windows(6).any(|w| w == b"COMMIT");
        let now = *link.borrow();
        if commit && now == Link::PartitionAtCommit {
            link.send_replace(Link::Partitioned);
        }
        if commit && now == Link::CutBeforeCommit {
            link.send_replace(Link::Up);
            this_cut.send_replace(true);
            return;
        }
        if commit && now == Link::CutAfterCommit {
            // Nothing more reaches the client from here: the answer is lost.
            this_cut.send_replace(true);
            link.send_replace(Link::Up);
            let _ = to.write_all(chunk).await;
            let _ = to.flush().await;
            return;
        }
        if *this_cut.borrow() {
            return;
        }
        if !until(link, Link::flows).await {
            return;
        }
        if to.write_all(chunk).await.is_err() {
            return;
        }
    }
}
