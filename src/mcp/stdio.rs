//! This process's stdin and stdout as async byte streams for the stdio transport.
//!
//! tokio's `stdin()` and `stdout()` hand every read and every write to a blocking-pool thread and
//! wait for it: two thread hand-offs per message, most of what a gated call costs over stdio. An MCP
//! client starts a server with pipes, and a pipe can be read and written by the runtime's own event
//! loop instead; anything else (a terminal, a file, a socket) keeps tokio's portable streams.

use tokio::io::{AsyncRead, AsyncWrite};

/// A byte stream read by the stdio transport.
pub(super) type Input = Box<dyn AsyncRead + Send + Unpin>;
/// A byte stream written by the stdio transport.
pub(super) type Output = Box<dyn AsyncWrite + Send + Unpin>;

/// stdin and stdout, each through the event loop when it is a pipe. Must run inside a tokio
/// runtime (a pipe is registered with its reactor).
pub(super) fn stdio() -> (Input, Output) {
    (input(), output())
}

/// A duplicate of `fd` (the same open file) for a tokio pipe to own: `from_file` makes it
/// non-blocking, and refuses anything that is not a FIFO.
#[cfg(unix)]
fn duplicate(fd: std::os::fd::BorrowedFd<'_>) -> std::io::Result<std::fs::File> {
    fd.try_clone_to_owned().map(std::fs::File::from)
}

#[cfg(unix)]
fn input() -> Input {
    use std::os::fd::AsFd as _;
    match duplicate(std::io::stdin().as_fd()).and_then(tokio::net::unix::pipe::Receiver::from_file)
    {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdin()),
    }
}

#[cfg(unix)]
fn output() -> Output {
    use std::os::fd::AsFd as _;
    match duplicate(std::io::stdout().as_fd()).and_then(tokio::net::unix::pipe::Sender::from_file) {
        Ok(pipe) => Box::new(pipe),
        Err(_) => Box::new(tokio::io::stdout()),
    }
}

#[cfg(not(unix))]
fn input() -> Input {
    Box::new(tokio::io::stdin())
}

#[cfg(not(unix))]
fn output() -> Output {
    Box::new(tokio::io::stdout())
}
