//! One connection: hyper reads its one request under the limits, the handler answers on a
//! blocking thread, and a request hyper could not read is answered by the service's words.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::{Instant, Sleep};

use crate::message::{OutBody, Request, Response};
use crate::{Limits, Service};

/// Serves the one request of `stream`, accepted at `accepted`.
pub(crate) async fn serve<S: Service>(
    stream: TcpStream,
    conn: S::Conn,
    service: Arc<S>,
    limits: Limits,
    accepted: Instant,
    mut stop: watch::Receiver<bool>,
) {
    let conn = Arc::new(conn);
    let whole = service
        .request_timeout(&conn)
        .unwrap_or(limits.request_timeout);
    let deadline = accepted + whole;
    let mut io = Io {
        inner: TokioIo::new(stream),
        started: Arc::new(AtomicBool::new(false)),
        write_timeout: limits.write_timeout,
        stalled: None,
    };
    let started = Arc::clone(&io.started);
    let (svc, shared) = (Arc::clone(&service), Arc::clone(&conn));
    let handler = hyper::service::service_fn(move |request| {
        started.store(true, Ordering::SeqCst);
        answer(
            Arc::clone(&svc),
            Arc::clone(&shared),
            limits,
            deadline,
            request,
        )
    });
    let result = {
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_timeout.min(whole))
            // One request per connection: every answer closes it.
            .keep_alive(false)
            .max_buf_size(limits.max_head.max(8192))
            .max_headers(limits.max_headers);
        let connection = builder.serve_connection(&mut io, handler);
        tokio::pin!(connection);
        tokio::select! {
            result = connection.as_mut() => result,
            () = crate::stopped(&mut stop) => {
                // A connection waiting for its head is closed; a request being served ends.
                connection.as_mut().graceful_shutdown();
                connection.await
            }
        }
    };
    // Hyper's own answer to a head it could not read was held back (no body, no words):
    // the service's is sent instead.
    if let Err(e) = result
        && e.is_parse()
        && !io.started.load(Ordering::SeqCst)
    {
        let (status, why) = match e.is_parse_too_large() {
            true => (431, "request head too large".to_owned()),
            false => (400, format!("malformed request: {e}")),
        };
        let refused = tokio::task::spawn_blocking(move || service.refused(status, &why)).await;
        if let Ok(response) = refused {
            write_whole(io.inner.into_inner(), response, limits.write_timeout).await;
        }
    }
}

/// A connection's answer: the head checked, the body read whole under the limits, then the
/// handler on a blocking thread. `Err` closes the connection unanswered (a deadline passed,
/// the peer went away).
async fn answer<S: Service>(
    service: Arc<S>,
    conn: Arc<S::Conn>,
    limits: Limits,
    deadline: Instant,
    request: hyper::Request<Incoming>,
) -> Result<hyper::Response<OutBody>, Box<dyn std::error::Error + Send + Sync>> {
    let (parts, body) = request.into_parts();
    let mut request = Request::of(&parts);
    let refused = |status, why: &str| Ok(service.refused(status, why).into_hyper());
    if let Err(refusal) = service.head(&conn, &request) {
        return Ok(refusal.into_hyper());
    }
    // A body declared larger than the limit is refused before any of it is read: the peer
    // learns at once, rather than when its bytes pass the limit or its deadline.
    if hyper::body::Body::size_hint(&body)
        .exact()
        .is_some_and(|len| len > limits.max_body as u64)
    {
        return refused(413, "body too large");
    }
    let collected =
        tokio::time::timeout_at(deadline, Limited::new(body, limits.max_body).collect());
    match collected.await {
        Err(elapsed) => return Err(elapsed.into()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            return refused(413, "body too large");
        }
        Ok(Err(e)) => return Err(e),
        Ok(Ok(collected)) => request.body = collected.to_bytes().to_vec(),
    }
    let response = tokio::task::spawn_blocking(move || service.handle(&conn, request)).await?;
    Ok(response.into_hyper())
}

/// Writes `response` whole to a connection hyper does not hold, then closes it.
pub(crate) async fn write_whole(mut stream: TcpStream, response: Response, within: Duration) {
    let bytes = response.to_bytes();
    let write = async {
        stream.write_all(&bytes).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(within, write).await;
}

/// The connection as hyper sees it. Writes are dropped and the socket is not shut until a
/// request reaches the service (so hyper's bodiless answer to a head it could not read is not
/// sent, and the service's can be), and a write that
/// cannot proceed for `write_timeout` fails (a peer that stopped reading).
struct Io {
    inner: TokioIo<TcpStream>,
    started: Arc<AtomicBool>,
    write_timeout: Duration,
    stalled: Option<Pin<Box<Sleep>>>,
}

impl Io {
    /// `poll` with the write deadline: armed when the socket first pushes back, cleared when
    /// it moves.
    fn timed<T>(
        &mut self,
        cx: &mut Context<'_>,
        poll: impl FnOnce(Pin<&mut TokioIo<TcpStream>>, &mut Context<'_>) -> Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        if let Poll::Ready(done) = poll(Pin::new(&mut self.inner), cx) {
            self.stalled = None;
            return Poll::Ready(done);
        }
        let timeout = self.write_timeout;
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        ready!(stalled.as_mut().poll(cx));
        Poll::Ready(Err(std::io::ErrorKind::TimedOut.into()))
    }
}

impl hyper::rt::Read for Io {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for Io {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if !self.started.load(Ordering::SeqCst) {
            return Poll::Ready(Ok(buf.len()));
        }
        self.timed(cx, |inner, cx| inner.poll_write(cx, buf))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.timed(cx, |inner, cx| inner.poll_flush(cx))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        // Hyper ends a connection it could not read: the service's answer is still to go.
        if !self.started.load(Ordering::SeqCst) {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
