//! The running service's admin socket: `<data-dir>/admin.sock`, mode 0600, one command per
//! line (`protocol`), commands run one at a time.
//!
//! The socket is bound inside a fresh 0700 directory, restricted to 0600, and only then
//! renamed to its place, so there is no moment at which another account could connect. The
//! service starts it after opening its store, whose lock it then holds: a socket file found
//! at that point belongs to a service that is gone, and is replaced. A clean shutdown removes
//! it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{watch, Mutex};
use tokio::task::{JoinHandle, JoinSet};

use super::protocol::{self, Response, MAX_LINE_BYTES};
use super::{Operator, SOCKET_FILE};
use crate::error::{Code, Error, Result};
use crate::state::AppState;

/// How long a clean shutdown waits for commands still running (a backup of a large store).
const DRAIN: Duration = Duration::from_secs(60);

/// The listening socket and its accept loop.
#[derive(Debug)]
pub struct AdminSocket {
    path: PathBuf,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl AdminSocket {
    /// Binds `<data-dir>/admin.sock` and serves commands against `state`. Call after the
    /// store is open (the store's lock is what makes an existing socket file stale).
    pub fn start(state: &AppState) -> Result<AdminSocket> {
        let operator = Operator::of_service(state);
        let path = state.config.data_dir.join(SOCKET_FILE);
        let listener = bind_private(&path)?;
        let (stop, stop_rx) = watch::channel(false);
        let task = tokio::spawn(accept_loop(listener, operator, stop_rx));
        tracing::info!(socket = %path.display(), "admin socket listening");
        Ok(AdminSocket { path, stop, task })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stops accepting, lets running commands finish (bounded), removes the socket file.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
        if let Err(e) = std::fs::remove_file(&self.path) {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(error = %e, "removing the admin socket");
            }
        }
    }
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::new(
        Code::Internal,
        format!("admin socket: {what} {}: {e}", path.display()),
    )
}

/// Binds a listener at `path` that only this account can connect to (see the module docs).
fn bind_private(path: &Path) -> Result<UnixListener> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let staging = dir.join(format!(".admin-sock-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let mut builder = std::fs::DirBuilder::new();
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder
        .create(&staging)
        .map_err(|e| io_error("creating", &staging, e))?;
    let staged = staging.join("s");
    let bound = (|| {
        let listener = UnixListener::bind(&staged).map_err(|e| io_error("binding", &staged, e))?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| io_error("restricting", &staged, e))?;
        match std::fs::remove_file(path) {
            Ok(()) => tracing::info!(socket = %path.display(), "replaced a stale admin socket"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error("removing the stale", path, e)),
        }
        std::fs::rename(&staged, path).map_err(|e| io_error("placing", path, e))?;
        Ok(listener)
    })();
    let _ = std::fs::remove_dir_all(&staging);
    bound
}

async fn accept_loop(listener: UnixListener, operator: Operator, mut stop: watch::Receiver<bool>) {
    // One command at a time: a backup never copies the key files in the middle of a rotation.
    let one_at_a_time = Arc::new(Mutex::new(()));
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let operator = operator.clone();
                    let lock = Arc::clone(&one_at_a_time);
                    connections.spawn(async move {
                        if let Err(e) = serve_connection(stream, &operator, &lock).await {
                            tracing::warn!(error = %e, "admin connection failed");
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "admin socket accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = stop.changed() => break,
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(DRAIN, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!("admin commands still running at shutdown were abandoned");
        connections.abort_all();
    }
}

/// Answers each request line of one connection until the client closes it.
async fn serve_connection(
    stream: UnixStream,
    operator: &Operator,
    one_at_a_time: &Mutex<()>,
) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read.take(u64::MAX));
    loop {
        let mut line = Vec::new();
        reader.get_mut().set_limit(MAX_LINE_BYTES as u64 + 1);
        if reader.read_until(b'\n', &mut line).await? == 0 {
            return Ok(());
        }
        let whole = line.len() <= MAX_LINE_BYTES && line.ends_with(b"\n");
        let response = if !whole {
            Response::from_result(Err(Error::invalid_input(format!(
                "admin requests are one line of at most {MAX_LINE_BYTES} bytes"
            ))))
        } else {
            let result = match protocol::decode_line(&line).and_then(protocol::parse_request) {
                Ok(request) => {
                    let _turn = one_at_a_time.lock().await;
                    tracing::info!(?request, "admin command");
                    operator.execute(request).await
                }
                Err(e) => Err(e),
            };
            Response::from_result(result)
        };
        write.write_all(&protocol::encode_line(&response)).await?;
        if !whole {
            return Ok(());
        }
    }
}
