//! The publisher's listening socket: bound at a path with a mode, a stale
//! socket file of a dead publisher replaced (a live one is an error), accepted
//! without waiting, and its file removed when the publisher drops.

use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use super::PublishError;

/// A non-blocking listening socket at a path.
#[derive(Debug)]
pub(super) struct Listener {
    listener: UnixListener,
    path: PathBuf,
}

impl Listener {
    /// Binds `path` with mode `mode`.
    pub fn bind(path: &Path, mode: u32) -> Result<Listener, PublishError> {
        let bind_error = |source| PublishError::Bind {
            socket: path.to_owned(),
            source,
        };
        remove_if_stale(path).map_err(bind_error)?;
        let listener = UnixListener::bind(path).map_err(bind_error)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(
            |source| PublishError::Mode {
                socket: path.to_owned(),
                mode,
                source,
            },
        )?;
        listener.set_nonblocking(true).map_err(bind_error)?;
        Ok(Listener {
            listener,
            path: path.to_owned(),
        })
    }

    /// The next waiting connection, non-blocking itself; `None` when none waits.
    pub fn accept(&self) -> io::Result<Option<UnixStream>> {
        loop {
            match self.listener.accept() {
                Ok((sock, _)) => {
                    sock.set_nonblocking(true)?;
                    return Ok(Some(sock));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // The peer gave up before we accepted it: not our failure.
                Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Removes the socket file (the publisher is going away).
    pub fn remove_file(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Removes `path` when it is a socket nobody listens on (a dead publisher's).
/// Anything else there — a live socket, a regular file — is left for `bind`
/// to refuse (`EADDRINUSE`).
fn remove_if_stale(path: &Path) -> io::Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !meta.file_type().is_socket() {
        return Ok(());
    }
    match UnixStream::connect(path) {
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            "a publisher is already listening there",
        )),
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => std::fs::remove_file(path),
        Err(_) => Ok(()),
    }
}
