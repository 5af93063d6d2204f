//! Stand-ins for the services the app talks to (Keystone, a Kubernetes API server): one HTTP
//! server on a free loopback port whose every request goes to one handler.

use std::net::TcpListener;

use actix_web::dev::ServerHandle;
use actix_web::{web, App, FromRequest, Handler, HttpServer, Responder};

/// Starts a one-worker server on `127.0.0.1:0` that answers every request with `handler`,
/// `data` in its app data (for the handler's `web::Data` extractor); its port and handle.
pub fn stub_server<D, F, Args>(data: web::Data<D>, handler: F) -> (u16, ServerHandle)
where
    D: 'static + Send + Sync,
    F: Handler<Args> + Clone + Send + 'static,
    Args: FromRequest + 'static,
    F::Output: Responder + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a port");
    let port = listener.local_addr().expect("address").port();
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .default_service(web::to(handler.clone()))
    })
    .workers(1)
    .disable_signals()
    .listen(listener)
    .expect("listen")
    .run();
    let handle = server.handle();
    tokio::spawn(server);
    (port, handle)
}
