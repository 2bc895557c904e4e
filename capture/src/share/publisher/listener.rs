//! The publisher's listening socket: bound at a path with a mode, a stale
//! socket file of a dead publisher replaced (a live one is an error), accepted
//! without waiting, and its file removed when the publisher drops — or a
//! listening socket someone else bound (systemd's socket activation), checked
//! to be one and whose file is left to its owner.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use nix::sys::socket::{getsockname, getsockopt, sockopt, SockType, SockaddrLike, SockaddrStorage};

use super::PublishError;

/// A non-blocking listening socket at a path.
#[derive(Debug)]
pub(super) struct Listener {
    listener: UnixListener,
    path: PathBuf,
    /// Whether the socket file is ours to remove (we bound it).
    owns_file: bool,
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
            owns_file: true,
        })
    }

    /// A socket bound and listening already (passed by systemd): checked to
    /// be a listening `AF_UNIX` stream socket, made non-blocking and
    /// close-on-exec. Its path (empty when unnamed or abstract) is given
    /// with it; its file is not removed when the publisher drops.
    pub fn from_fd(fd: OwnedFd) -> Result<(Listener, PathBuf), PublishError> {
        let raw = fd.as_raw_fd();
        let not = |why: String| PublishError::NotAListener { fd: raw, why };
        let kind = getsockopt(&fd, sockopt::SockType).map_err(|e| not(format!("SO_TYPE: {e}")))?;
        if kind != SockType::Stream {
            return Err(not(format!("a {kind:?} socket")));
        }
        let addr: SockaddrStorage =
            getsockname(raw).map_err(|e| not(format!("getsockname: {e}")))?;
        let Some(unix) = addr.as_unix_addr() else {
            return Err(not(format!("address family {:?}", addr.family())));
        };
        let path = unix.path().map(Path::to_owned).unwrap_or_default();
        let listening =
            getsockopt(&fd, sockopt::AcceptConn).map_err(|e| not(format!("SO_ACCEPTCONN: {e}")))?;
        if !listening {
            return Err(not("not listening".to_owned()));
        }
        nix::fcntl::fcntl(
            fd.as_fd(),
            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
        )
        .map_err(|e| not(format!("F_SETFD: {e}")))?;
        let listener = UnixListener::from(fd);
        listener
            .set_nonblocking(true)
            .map_err(|e| not(format!("O_NONBLOCK: {e}")))?;
        Ok((
            Listener {
                listener,
                path: path.clone(),
                owns_file: false,
            },
            path,
        ))
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

    /// Whether the socket file is ours (we bound it).
    pub fn owns_file(&self) -> bool {
        self.owns_file
    }

    /// Removes the socket file (the publisher is going away) when it bound
    /// it; a socket passed by systemd keeps its file.
    pub fn remove_file(&self) {
        if self.owns_file {
            let _ = std::fs::remove_file(&self.path);
        }
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
