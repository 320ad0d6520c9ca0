//! The one HTTP/1.1 server of loopx: the board, the Lark callback listener and the scripted
//! model and Lark servers all serve through it. And the one client configuration
//! ([`client::agent`]) the Lark API and the webhook call out with.
//!
//! # Theory of operation
//!
//! - **hyper reads and writes HTTP; this crate sets its limits.** A [`Server`] takes a bound
//!   `std::net::TcpListener` (callers bind, and print the port, as they choose) and serves it
//!   on a one-thread tokio runtime of its own. Each connection carries one request: every
//!   answer closes it.
//! - **A connection is judged before a byte is read.** [`Service::accept`] sees the socket (a
//!   peer check, a slot of the caller's own) on a blocking thread, one task per connection, so
//!   a slow check never holds up the next accept; its refusal is written at once. Past
//!   [`Limits::max_connections`] served at once a connection is answered 503 at once
//!   (refused, never queued); a refused connection never counts among them.
//! - **Limits, each with the caller's value** ([`Limits`]): the head within
//!   [`Limits::header_timeout`] (a slow client cannot hold a connection), the whole request
//!   within [`Limits::request_timeout`] of the connection (a trickled body neither) — past
//!   either the connection is closed unanswered; a head over [`Limits::max_head`] bytes or
//!   [`Limits::max_headers`] headers is 431; a body over [`Limits::max_body`] is 413 and never
//!   reaches the handler; a peer that reads none of the answer for [`Limits::write_timeout`]
//!   is cut. What hyper cannot read is answered by [`Service::refused`], in the service's own
//!   words and format.
//! - **Handlers block, the runtime does not.** [`Service::handle`] gets a plain [`Request`]
//!   (method, percent-decoded path and query, lowercased headers, the body read whole) on
//!   tokio's blocking pool, so a handler may call the kernel (redb) or wait; a streamed body
//!   ([`Response::stream`]) is written by a blocking producer through a one-chunk channel.
//! - **Graceful shutdown.** [`Server::shutdown`] (or dropping the server) stops accepting and
//!   frees the port, closes connections still waiting for their head, and lets requests being
//!   served finish within [`Limits::shutdown_grace`].

pub mod client;
mod conn;
mod message;

pub use message::{Body, Request, Response, Sender};

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::{Notify, watch};

/// The bounds a server holds every connection to: each caller sets every one, for what it
/// serves (no default fits a browser, the internet and a test client alike).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// A larger body is answered 413 and never reaches the handler.
    pub max_body: usize,
    /// The request line and headers together; 431 past it (at least 8 KiB, hyper's floor).
    pub max_head: usize,
    /// Headers a request may carry; 431 past it.
    pub max_headers: usize,
    /// The head must arrive whole within this long of connecting.
    pub header_timeout: Duration,
    /// The whole request, head and body, within this long of connecting.
    pub request_timeout: Duration,
    /// A peer that takes none of the answer for this long is cut.
    pub write_timeout: Duration,
    /// Connections served at once; more are answered 503.
    pub max_connections: usize,
    /// How long requests being served may take to finish at shutdown.
    pub shutdown_grace: Duration,
}

/// What a server does with its connections. Every method but [`Service::head`] and
/// [`Service::request_timeout`] runs on a blocking thread.
pub trait Service: Send + Sync + 'static {
    /// What the service keeps for one connection (dropped when it closes).
    type Conn: Send + Sync + 'static;

    /// A new connection, before anything is read from it: its state, or the answer that
    /// refuses it.
    fn accept(&self, stream: &TcpStream) -> Result<Self::Conn, Response>;

    /// How long this connection's whole request may take, if not [`Limits::request_timeout`].
    fn request_timeout(&self, _conn: &Self::Conn) -> Option<Duration> {
        None
    }

    /// The head is in and the body not yet read: the answer that refuses it, if any. Runs on
    /// the runtime's thread: look at the request, do not block.
    fn head(&self, _conn: &Self::Conn, _request: &Request) -> Result<(), Response> {
        Ok(())
    }

    /// The answer to a request read whole.
    fn handle(&self, conn: &Self::Conn, request: Request) -> Response;

    /// The answer to a request refused by the limits (`status` 400, 413, 431 or 503) and why.
    fn refused(&self, status: u16, why: &str) -> Response {
        Response::text(status, &format!("{why}\n"))
    }
}

/// A running server; dropping it shuts it down.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Serves `listener` on a thread of its own until shut down.
    pub fn start<S: Service>(
        listener: TcpListener,
        limits: Limits,
        service: S,
    ) -> std::io::Result<Server> {
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (stop, stopped) = watch::channel(false);
        let thread = std::thread::Builder::new()
            .name("loopx-http".into())
            .spawn(move || {
                runtime.block_on(accept_loop(listener, limits, Arc::new(service), stopped));
                // Producers of streams still running learn it on their next send.
                runtime.shutdown_background();
            })?;
        Ok(Server {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until the process ends.
    pub fn wait(mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }

    /// Stops accepting (the port is free when this returns) and lets the requests being
    /// served finish within [`Limits::shutdown_grace`].
    pub fn shutdown(self) {}
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Returns once the server is told to stop.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    // Its guard is not held across the caller's awaits.
    let _ = stop.wait_for(|stop| *stop).await;
}

/// Connections being served: counted against the cap, and waited for at shutdown.
#[derive(Debug, Default)]
struct Live {
    count: AtomicUsize,
    idle: Notify,
}

/// Connections accepted and still waiting for the caller's check, at most: a flood of them
/// costs file descriptors and tasks, not an unbounded queue.
const CHECKS_PENDING: usize = 1024;

/// One connection waiting for its check, counted until it is judged.
struct Pending(Arc<AtomicUsize>);

impl Pending {
    fn new(pending: &Arc<AtomicUsize>) -> Pending {
        pending.fetch_add(1, Ordering::SeqCst);
        Pending(Arc::clone(pending))
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A connection's place among those counted, given back however it ends.
struct Place(Arc<Live>);

impl Drop for Place {
    fn drop(&mut self) {
        self.0.count.fetch_sub(1, Ordering::SeqCst);
        self.0.idle.notify_waiters();
    }
}

async fn accept_loop<S: Service>(
    listener: TcpListener,
    limits: Limits,
    service: Arc<S>,
    mut stop: watch::Receiver<bool>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    let live = Arc::new(Live::default());
    let pending = Arc::new(AtomicUsize::new(0));
    let mut flooded = false;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stopped(&mut stop) => break,
        };
        let Ok((stream, _)) = accepted else {
            // Out of descriptors, say: wait a moment rather than spin.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let at = tokio::time::Instant::now();
        // The caller's check runs on a task of its own, so a check that takes a while (the
        // peer lookup scans the process table) never holds up accepting the next connection.
        // Connections waiting for theirs are bounded: past `CHECKS_PENDING` one is closed
        // unanswered at once. A connection counts against `max_connections` only once it is
        // accepted: what the check refuses (a slice's process) never takes a person's place.
        if pending.load(Ordering::SeqCst) >= CHECKS_PENDING {
            // Said once per flood (again only after the queue drained), not once per dropped
            // connection: a flood must not become a flood of the log as well.
            if !flooded {
                flooded = true;
                tracing::warn!(
                    waiting = CHECKS_PENDING,
                    "connections arrive faster than they can be checked: new ones are closed unanswered until the queue drains"
                );
            }
            drop(stream);
            continue;
        }
        flooded &= pending.load(Ordering::SeqCst) > 0;
        let checking = Pending::new(&pending);
        let (service, stop, live) = (Arc::clone(&service), stop.clone(), Arc::clone(&live));
        tokio::spawn(connection(
            stream, at, checking, service, limits, stop, live,
        ));
    }
    drop(listener);
    let drained = async {
        loop {
            let idle = live.idle.notified();
            if live.count.load(Ordering::SeqCst) == 0 {
                return;
            }
            idle.await;
        }
    };
    let _ = tokio::time::timeout(limits.shutdown_grace, drained).await;
}

/// One accepted connection: the caller's check (off the accept loop), then a place among
/// `max_connections` (or a 503), then its requests.
async fn connection<S: Service>(
    stream: tokio::net::TcpStream,
    at: tokio::time::Instant,
    checking: Pending,
    service: Arc<S>,
    limits: Limits,
    stop: watch::Receiver<bool>,
    live: Arc<Live>,
) {
    let write_timeout = limits.write_timeout;
    let Ok(stream) = stream.into_std() else {
        return;
    };
    let svc = Arc::clone(&service);
    let judged = tokio::task::spawn_blocking(move || {
        let verdict = svc.accept(&stream);
        (stream, verdict)
    });
    let Ok((stream, verdict)) = judged.await else {
        return;
    };
    drop(checking);
    let Ok(stream) = tokio::net::TcpStream::from_std(stream) else {
        return;
    };
    let conn = match verdict {
        Err(refusal) => return conn::write_whole(stream, refusal, write_timeout).await,
        Ok(conn) if live.count.fetch_add(1, Ordering::SeqCst) < limits.max_connections => conn,
        Ok(_) => {
            live.count.fetch_sub(1, Ordering::SeqCst);
            let busy =
                tokio::task::spawn_blocking(move || service.refused(503, "too many connections"));
            if let Ok(busy) = busy.await {
                conn::write_whole(stream, busy, write_timeout).await;
            }
            return;
        }
    };
    let place = Place(Arc::clone(&live));
    conn::serve(stream, conn, service, limits, at, stop).await;
    drop(place);
}
