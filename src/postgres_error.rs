//! How a PostgreSQL error is read, once for every PostgreSQL component (feature `postgres`): the
//! approval store's pool and the audit sink retry and reconnect by the same rule.

/// Whether `error` means the connection is gone (closed, reset, the server shutting down or the
/// backend terminated): such a connection is never reused, and an operation that never reached
/// its commit may be retried on a new one.
pub(crate) fn connection_lost(error: &postgres::Error) -> bool {
    if error.is_closed() {
        return true;
    }
    match error.code() {
        // Class 08: connection exception; 57P01-57P03: the server is shutting down, crashed, or
        // terminated this backend (`pg_terminate_backend`).
        Some(code) => code.code().starts_with("08") || code.code().starts_with("57P"),
        // Not a server error: an I/O error on the socket.
        None => error.as_db_error().is_none(),
    }
}
