//! The `svcd admin` side: ask the running service through its admin socket, or, when no
//! service runs on the directory, open it directly.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::protocol::{self, Request, Response};
use super::{ConfiguredKeys, Operator, SOCKET_FILE};
use svc_core::error::{Code, Error, Result};

/// How long the client waits for an answer (a backup copies the whole store).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// Which way a command went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// Answered by the running service.
    Socket,
    /// No service ran: the directory was opened directly.
    Direct,
}

/// Runs `request` against `data_dir`: through the socket of a running service, else on the
/// directory itself. A directory whose store is locked by a service whose socket does not
/// answer is refused (`unavailable`), never opened twice.
pub fn run(data_dir: &Path, request: Request, keys: ConfiguredKeys) -> Result<(Value, Route)> {
    if let Some(answer) = ask_socket(&data_dir.join(SOCKET_FILE), &request)? {
        return Ok((answer?, Route::Socket));
    }
    let operator = Operator::open(data_dir, keys)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::new(Code::Internal, format!("starting a runtime: {e}")))?;
    let result = runtime.block_on(operator.execute(request));
    operator.close();
    Ok((result?, Route::Direct))
}

/// The service's answer, or `None` when no service listens on `socket` (no file, or a stale
/// one nobody accepts on).
fn ask_socket(socket: &Path, request: &Request) -> Result<Option<Result<Value>>> {
    let stream = match UnixStream::connect(socket) {
        Ok(s) => s,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
            ) =>
        {
            return Ok(None)
        }
        Err(e) => {
            return Err(Error::new(
                Code::Unavailable,
                format!(
                    "cannot connect to the admin socket {}: {e}",
                    socket.display()
                ),
            ))
        }
    };
    let failed = |e: std::io::Error| {
        Error::new(
            Code::Unavailable,
            format!("admin socket {}: {e}", socket.display()),
        )
    };
    stream
        .set_read_timeout(Some(ANSWER_TIMEOUT))
        .map_err(failed)?;
    (&stream)
        .write_all(&protocol::encode_line(request))
        .map_err(failed)?;
    let mut line = String::new();
    BufReader::new(&stream)
        .read_line(&mut line)
        .map_err(failed)?;
    if line.is_empty() {
        return Err(Error::new(
            Code::Unavailable,
            format!(
                "the service closed the admin socket {} without answering",
                socket.display()
            ),
        ));
    }
    let response: Response = serde_json::from_str(&line).map_err(|e| {
        Error::new(
            Code::Internal,
            format!("the admin socket answered something that is not a response: {e}"),
        )
    })?;
    Ok(Some(response.into_result()))
}
