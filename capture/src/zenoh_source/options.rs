//! [`ZenohOptions`]: a Zenoh session as zerocam opens one, secure by default.

#[cfg(test)]
use std::path::Path;
use std::path::PathBuf;

/// The endpoint zerocam's publisher listens on, and its subscribers
/// connect to, when the user names none: loopback only.
pub const DEFAULT_ENDPOINT: &str = "tcp/127.0.0.1:7447";

/// The largest sample zerocam's own configuration lets Zenoh reassemble
/// (Zenoh's default is 1 GiB): a 4K JPEG is a few MiB, a raw 4K RGB frame
/// 24 MiB.
pub const MAX_MESSAGE: usize = 32 << 20;

/// Which side of the topic a session is for: what it listens on and
/// connects to by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Listens on [`DEFAULT_ENDPOINT`], connects nowhere.
    Publisher,
    /// Listens nowhere, connects to [`DEFAULT_ENDPOINT`].
    Subscriber,
}

/// How to open a Zenoh session.
///
/// Without [`config_file`](Self::config_file), zerocam's defaults: peer
/// mode, multicast scouting and gossip off, and per [`Role`] one loopback
/// endpoint: nothing leaves the machine, nothing listens beyond loopback,
/// nothing is discovered. With a config file, the file rules (TLS, access
/// control, routers, scouting): zerocam changes nothing in it. In both
/// cases `connect` and `listen`, when not empty, replace the endpoints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ZenohOptions {
    /// A Zenoh configuration file (JSON5), passed through.
    pub config_file: Option<PathBuf>,
    /// Endpoints to connect to (`tcp/HOST:PORT`, `tls/HOST:PORT`…).
    pub connect: Vec<String>,
    /// Endpoints to listen on.
    pub listen: Vec<String>,
}

/// A `zenoh:` spec's key and the session parameters after its `?`, in
/// Zenoh's selector syntax: `KEY?connect=EP[;EP…]&listen=EP&config=FILE`
/// (as `rt/camera/jpeg?connect=tcp/192.168.1.20:7447`). Where a program has
/// no other way to pass them (the C API's spec string, a config file line),
/// the spec carries them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZenohSpec {
    /// The key expression.
    pub key: String,
    /// The parameters given (empty fields where none were).
    pub options: ZenohOptions,
}

/// A `zenoh:` spec parameter that is not `connect`, `listen` or `config`,
/// or one without a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("zenoh:{spec}: parameter {parameter:?} is not connect=, listen= or config= with a value")]
pub struct ZenohSpecError {
    /// The spec after `zenoh:`.
    pub spec: String,
    /// The parameter.
    pub parameter: String,
}

impl ZenohSpec {
    /// Parses what follows `zenoh:`.
    ///
    /// # Errors
    /// [`ZenohSpecError`] for an unknown parameter or one without a value.
    pub fn parse(spec: &str) -> Result<ZenohSpec, ZenohSpecError> {
        let (key, params) = spec.split_once('?').unwrap_or((spec, ""));
        let mut options = ZenohOptions::default();
        for p in params.split('&').filter(|p| !p.is_empty()) {
            let bad = || ZenohSpecError {
                spec: spec.to_owned(),
                parameter: p.to_owned(),
            };
            let (name, value) = p
                .split_once('=')
                .filter(|(_, v)| !v.is_empty())
                .ok_or_else(bad)?;
            let list = || {
                value
                    .split(';')
                    .filter(|e| !e.is_empty())
                    .map(str::to_owned)
            };
            match name {
                "connect" => options.connect.extend(list()),
                "listen" => options.listen.extend(list()),
                "config" => options.config_file = Some(PathBuf::from(value)),
                _ => return Err(bad()),
            }
        }
        Ok(ZenohSpec {
            key: key.to_owned(),
            options,
        })
    }

    /// `self`'s parameters over `base`'s (a parameter given replaces the
    /// same field of `base`).
    pub fn options_over(&self, base: &ZenohOptions) -> ZenohOptions {
        let pick = |mine: &Vec<String>, theirs: &Vec<String>| {
            if mine.is_empty() {
                theirs.clone()
            } else {
                mine.clone()
            }
        };
        ZenohOptions {
            config_file: self
                .options
                .config_file
                .clone()
                .or_else(|| base.config_file.clone()),
            connect: pick(&self.options.connect, &base.connect),
            listen: pick(&self.options.listen, &base.listen),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_spec_carries_its_session_in_selector_parameters() {
        let s = ZenohSpec::parse(
            "rt/cam/jpeg?connect=tcp/10.0.0.2:7447;tls/r:7447&config=/etc/z.json5",
        )
        .unwrap();
        assert_eq!(s.key, "rt/cam/jpeg");
        assert_eq!(s.options.connect, ["tcp/10.0.0.2:7447", "tls/r:7447"]);
        assert_eq!(
            s.options.config_file.as_deref(),
            Some(Path::new("/etc/z.json5"))
        );
        let base = ZenohOptions {
            connect: vec!["tcp/127.0.0.1:1".into()],
            listen: vec!["tcp/127.0.0.1:2".into()],
            config_file: None,
        };
        let merged = s.options_over(&base);
        assert_eq!(merged.connect, s.options.connect);
        assert_eq!(merged.listen, base.listen);
        assert_eq!(
            ZenohSpec::parse("rt/a").unwrap().options,
            ZenohOptions::default()
        );
    }

    #[test]
    fn unknown_or_empty_parameters_are_named() {
        for bad in ["k?mode=client", "k?connect=", "k?connect"] {
            let e = ZenohSpec::parse(bad).unwrap_err();
            assert!(
                e.to_string().contains(bad.split_once('?').unwrap().1),
                "{e}"
            );
        }
    }
}
