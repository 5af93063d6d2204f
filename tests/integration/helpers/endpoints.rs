//! Real local Kubernetes-like API endpoints for the health prober: HTTPS servers on loopback
//! addresses (all of 127.0.0.0/8 is loopback, so each endpoint can have an address of its
//! own and a certificate for that IP), signed by a cluster's CA; and listeners that accept
//! connections and never answer. Shared by the integration tests and
//! `examples/health_probe_bench.rs` (included there with `#[path]`).

#![allow(dead_code)]

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

/// A CA that signs endpoint certificates: a fresh one, or a cluster's (its PEM certificate and
/// private key in clear).
pub struct Ca {
    pub pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let key = KeyPair::generate().expect("CA key");
        let mut p = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        p.distinguished_name.push(DnType::CommonName, name);
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert = p.self_signed(&key).expect("CA certificate");
        Ca {
            pem: cert.pem(),
            issuer: Issuer::new(p, key),
        }
    }

    pub fn from_pem(certificate: &str, private_key: &str) -> Ca {
        let key = KeyPair::from_pem(private_key).expect("CA key");
        Ca {
            pem: certificate.to_string(),
            issuer: Issuer::from_ca_cert_pem(certificate, key).expect("CA certificate"),
        }
    }

    /// A certificate signed by this CA and its private key (both PEM): for a server at `ips`
    /// and `dns` names, or (`client`) a client named `name`.
    pub fn issue(
        &self,
        name: &str,
        ips: &[IpAddr],
        dns: &[&str],
        client: bool,
    ) -> (String, String) {
        let key = KeyPair::generate().expect("key");
        let mut p = CertificateParams::new(Vec::<String>::new()).expect("params");
        p.distinguished_name.push(DnType::CommonName, name);
        p.subject_alt_names = ips.iter().map(|ip| SanType::IpAddress(*ip)).collect();
        for d in dns {
            p.subject_alt_names
                .push(SanType::DnsName((*d).try_into().expect("a DNS name")));
        }
        p.extended_key_usages = vec![if client {
            ExtendedKeyUsagePurpose::ClientAuth
        } else {
            ExtendedKeyUsagePurpose::ServerAuth
        }];
        let cert = p.signed_by(&key, &self.issuer).expect("certificate");
        (cert.pem(), key.serialize_pem())
    }

    /// A TLS server configuration with a certificate for `ip` signed by this CA.
    pub fn server_config(&self, ip: IpAddr) -> Arc<ServerConfig> {
        let key = KeyPair::generate().expect("server key");
        let mut p = CertificateParams::new(Vec::<String>::new()).expect("server params");
        p.distinguished_name
            .push(DnType::CommonName, ip.to_string());
        p.subject_alt_names = vec![SanType::IpAddress(ip)];
        let cert = p.signed_by(&key, &self.issuer).expect("server certificate");
        let chain: Vec<CertificateDer<'static>> = vec![cert.der().clone()];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
        let config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("server configuration");
        Arc::new(config)
    }
}

/// How an endpoint behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `/readyz` answers 200.
    Ready,
    /// `/readyz` is 404 and `/healthz` answers 200 (an API server without `/readyz`).
    HealthzOnly,
    /// Every path answers 503.
    Unavailable,
    /// Accepts TCP connections and never says a word (no TLS handshake, no answer).
    Hanging,
    /// Nothing listens: connections are refused.
    Down,
}

/// One endpoint on its own address; `set` changes its behaviour at the same address.
pub struct Endpoint {
    pub addr: SocketAddr,
    config: Arc<ServerConfig>,
    task: Option<JoinHandle<()>>,
    pub mode: Mode,
    /// TCP connections accepted at this address, over every mode.
    accepted: Arc<AtomicUsize>,
}

impl Endpoint {
    /// Binds `ip` (port chosen by the system) and serves in `mode` with a certificate for `ip`
    /// signed by `ca`.
    pub async fn start(ip: IpAddr, ca: &Ca, mode: Mode) -> Endpoint {
        Self::start_named(ip, ip, ca, mode).await
    }

    /// Like [`Endpoint::start`], with a certificate for `cert_ip` instead of the address.
    pub async fn start_named(ip: IpAddr, cert_ip: IpAddr, ca: &Ca, mode: Mode) -> Endpoint {
        let listener = TcpListener::bind(SocketAddr::new(ip, 0))
            .await
            .expect("bind a loopback address");
        let addr = listener.local_addr().expect("address");
        let mut e = Endpoint {
            addr,
            config: ca.server_config(cert_ip),
            task: None,
            mode: Mode::Down,
            accepted: Arc::new(AtomicUsize::new(0)),
        };
        e.run(listener, mode);
        e
    }

    /// A listener that accepts and never answers, on `ip`.
    pub async fn hanging(ip: IpAddr) -> Endpoint {
        let listener = TcpListener::bind(SocketAddr::new(ip, 0))
            .await
            .expect("bind a loopback address");
        let addr = listener.local_addr().expect("address");
        let mut e = Endpoint {
            addr,
            config: Ca::new("unused").server_config(ip),
            task: None,
            mode: Mode::Down,
            accepted: Arc::new(AtomicUsize::new(0)),
        };
        e.run(listener, Mode::Hanging);
        e
    }

    /// `https://ip:port`.
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// How many TCP connections this endpoint has accepted so far.
    pub fn connections(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Switches to `mode` at the same address: the listener (and every open connection) is
    /// closed, then bound again unless the mode is `Down`.
    pub async fn set(&mut self, mode: Mode) {
        if let Some(t) = self.task.take() {
            t.abort();
            let _ = t.await;
        }
        self.mode = Mode::Down;
        if mode == Mode::Down {
            return;
        }
        let mut tries = 0;
        let listener = loop {
            match TcpListener::bind(self.addr).await {
                Ok(l) => break l,
                Err(e) if tries < 50 => {
                    tries += 1;
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("cannot bind {} again: {e}", self.addr),
            }
        };
        self.run(listener, mode);
    }

    fn run(&mut self, listener: TcpListener, mode: Mode) {
        self.mode = mode;
        let acceptor = TlsAcceptor::from(self.config.clone());
        let counter = self.accepted.clone();
        self.task = Some(tokio::spawn(async move {
            // Connections are tasks of this one (a JoinSet): aborting it closes them all.
            let mut conns = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        counter.fetch_add(1, Ordering::SeqCst);
                        let acceptor = acceptor.clone();
                        conns.spawn(async move { serve(stream, acceptor, mode).await });
                    }
                    Some(_) = conns.join_next(), if !conns.is_empty() => {}
                }
            }
        }));
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

async fn serve(mut stream: TcpStream, acceptor: TlsAcceptor, mode: Mode) {
    if mode == Mode::Hanging {
        // Read and drop whatever comes until the client gives up and closes.
        let mut sink = [0_u8; 1024];
        while let Ok(n) = stream.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
        return;
    }
    let Ok(Ok(mut tls)) =
        tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream)).await
    else {
        return;
    };
    let mut request = Vec::with_capacity(512);
    let mut buf = [0_u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 16 * 1024 {
        match tokio::time::timeout(Duration::from_secs(10), tls.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => request.extend_from_slice(&buf[..n]),
            _ => return,
        }
    }
    let line = String::from_utf8_lossy(&request);
    let path = line.split_whitespace().nth(1).unwrap_or("/");
    let status = match (mode, path) {
        (Mode::Ready, "/readyz" | "/healthz") => "200 OK",
        (Mode::HealthzOnly, "/healthz") => "200 OK",
        (Mode::Unavailable, _) => "503 Service Unavailable",
        _ => "404 Not Found",
    };
    let body = if status.starts_with("200") {
        "ok"
    } else {
        "no"
    };
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tls.write_all(response.as_bytes()).await;
    let _ = tls.shutdown().await;
}

/// The `n`-th loopback address of a block: `127.<block>.<n / 250>.<n % 250 + 1>`.
pub fn loopback(block: u8, n: usize) -> IpAddr {
    let hi = u8::try_from(n / 250).expect("fewer than 64,000 addresses");
    let lo = u8::try_from(n % 250 + 1).expect("in range");
    IpAddr::from([127, block, hi, lo])
}
